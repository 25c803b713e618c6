"""The cells of the structure ablation (:mod:`svpg.studies.ablation`): their names, the settings they stand
for, the controls, and where a cell's timing file lies; shared by the harness and its analysis
(:mod:`svpg.studies.ablation_analysis`)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from svpg.rl.config import POLICY_METHODS

CONTROLS = ("svgd", "svgd-star")
PRIOR_NAMES = ("flat", "mvg")  # svpg.core.priors.PRIORS; fixed here so that cell names parse the same everywhere


def format_alpha(alpha: float) -> str:
    """α as written in a cell name: ``1000``, ``0.5``; exact, so that the name parses back to the same α."""
    return str(int(alpha)) if float(alpha).is_integer() and abs(alpha) < 1e15 else repr(float(alpha))


_METHOD = "|".join(re.escape(m) for m in sorted(POLICY_METHODS, key=len, reverse=True))  # svgd-star before svgd
_CELL = re.compile(
    rf"^(?P<method>{_METHOD})(?:-K(?P<k>\d+))?(?:-(?P<prior>{'|'.join(PRIOR_NAMES)}))?"
    r"(?:-a(?P<alpha>[0-9][0-9.e+\-]*))?$"
)
CELL_FORM = "<method>[-K<k>][-flat|-mvg][-a<alpha>], e.g. s2vgd-K2-mvg-a1000, svgd or svgd-star"


@dataclass(frozen=True)
class Cell:
    """One setting of the ablation; None takes the preset's value (K: the config's default, 1)."""

    method: str
    householder: int | None = None  # K of eqs. 10–13, s2vgd only
    prior: str | None = None  # flat | mvg (eq. 14)
    alpha: float | None = None  # temperature α of eq. 18

    def __post_init__(self):
        if self.method not in POLICY_METHODS:
            raise ValueError(f"unknown method {self.method!r} (choose from {', '.join(POLICY_METHODS)})")
        if self.householder is not None and (self.method != "s2vgd" or self.householder < 0):
            raise ValueError(f"-K{self.householder}: K is a number ≥ 0 of Householder reflections, for s2vgd only")
        if self.prior is not None and self.prior not in PRIOR_NAMES:
            raise ValueError(f"unknown prior {self.prior!r} (choose from {', '.join(PRIOR_NAMES)})")
        if self.alpha is not None and not (math.isfinite(self.alpha) and self.alpha > 0):
            raise ValueError(f"α must be a positive number, got {self.alpha}")

    @property
    def name(self) -> str:
        parts = [self.method]
        if self.householder is not None:
            parts.append(f"K{self.householder}")
        if self.prior is not None:
            parts.append(self.prior)
        if self.alpha is not None:
            parts.append(f"a{format_alpha(self.alpha)}")
        return "-".join(parts)

    @classmethod
    def parse(cls, text: str) -> Cell:
        """The cell of a name (:data:`CELL_FORM`); a ValueError says what is wrong."""
        m = _CELL.match(text.strip())
        if not m:
            raise ValueError(f"{text!r} is not a cell name: expected {CELL_FORM}")
        try:
            alpha = None if m["alpha"] is None else float(m["alpha"])
        except ValueError:
            raise ValueError(f"{text!r}: α {m['alpha']!r} is not a number") from None
        try:
            return cls(m["method"], None if m["k"] is None else int(m["k"]), m["prior"], alpha)
        except ValueError as e:
            raise ValueError(f"{text!r}: {e}") from None

    def settings(self) -> dict:
        """The config fields this cell sets (the method is the job's own key)."""
        fields = {"householder": self.householder, "prior": self.prior, "alpha": self.alpha}
        return {k: v for k, v in fields.items() if v is not None}


def timing_file(out: Path, cell: str, estimator: str) -> Path:
    return Path(out) / "timing" / f"{cell}__{estimator}.jsonl"
