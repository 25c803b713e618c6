"""The package's one statistics convention, and the Markdown tables that report it.

Every table that reports over seeds (RL, bandits) or splits (supervised) shows **mean ± standard error**
(the sample standard deviation, ddof = 1, over √n) and sets two methods side by side as the **paired
difference** over the seeds or splits both have, with a **95 % Student-t interval** (scipy.stats), so a
difference is read against the seed-to-seed noise it must beat. Each table names the convention in its
header (:func:`convention`); :func:`markdown_table` writes the tables.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

#: the confidence level of every interval the package reports
LEVEL = 0.95
#: what a "±" means in every table (the header sentence of :func:`convention` names it)
SPREAD = "mean ± s.e."


def t_quantile(p: float, df: int) -> float:
    """The p-quantile of Student's t with df degrees of freedom."""
    from scipy.stats import t as student_t

    return float(student_t.ppf(p, df))


def mean_se(values) -> tuple[float, float]:
    """Mean and standard error (sample std / √n) of the finite values; NaN where undefined."""
    x = [float(v) for v in values if math.isfinite(v)]
    if not x:
        return math.nan, math.nan
    mean = sum(x) / len(x)
    if len(x) < 2:
        return mean, math.nan
    return mean, math.sqrt(sum((v - mean) ** 2 for v in x) / (len(x) - 1) / len(x))


def mean_se_rows(array, axis: int = 0):
    """NumPy :func:`mean_se` along ``axis`` (curves over seeds): (mean, s.e.), s.e. 0 for a single row."""
    import numpy as np

    a = np.asarray(array, dtype=np.float64)
    n = a.shape[axis]
    mean = a.mean(axis)
    se = a.std(axis, ddof=1) / np.sqrt(n) if n > 1 else np.zeros_like(mean)
    return mean, se


def paired_difference(a: dict, b: dict) -> tuple[int, float, float, float]:
    """a − b over the keys (seeds, splits) both have with finite values: (pairs, mean, 95 % t-interval
    low, high) from ``scipy.stats.ttest_rel``; the interval is NaN below two pairs."""
    keys = [k for k in sorted(set(a) & set(b)) if math.isfinite(a[k]) and math.isfinite(b[k])]
    mean, _ = mean_se([a[k] - b[k] for k in keys])
    if len(keys) < 2:
        return len(keys), mean, math.nan, math.nan
    import warnings

    from scipy.stats import ttest_rel

    with warnings.catch_warnings():  # identical differences: a zero-width interval, which scipy warns about
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = ttest_rel([a[k] for k in keys], [b[k] for k in keys]).confidence_interval(LEVEL)
    return len(keys), mean, float(low), float(high)


def decimals(values: Iterable[float], least: int, significant: int = 3) -> int:
    """Decimals for a column: at least ``least``, and enough that its smallest nonzero magnitude keeps
    ``significant`` significant digits (Naval's RMSE of 0.000127 is not written 0.000)."""
    sizes = [abs(v) for v in values if math.isfinite(v) and v != 0]
    if not sizes:
        return least
    return max(least, significant - 1 - math.floor(math.log10(min(sizes))))


def format_mean_se(mean: float, se: float, digits: int = 1) -> str:
    """A table cell: ``mean ± se``; the mean alone when the s.e. is undefined (one seed), ``–`` without a mean."""
    if not math.isfinite(mean):
        return "–"
    return f"{mean:.{digits}f}" + (f" ± {se:.{digits}f}" if math.isfinite(se) else "")


def cell(values: Iterable[float], digits: int = 1) -> str:
    """:func:`format_mean_se` of :func:`mean_se` of ``values``."""
    return format_mean_se(*mean_se(values), digits=digits)


def format_difference(pairs: int, mean: float, low: float, high: float, digits: int = 1) -> str:
    """A table cell of :func:`paired_difference`: ``+d [low, high] (n=pairs)``; without the interval below
    two pairs, ``–`` without pairs."""
    if not pairs or not math.isfinite(mean):
        return "–"
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"{mean:+.{digits}f} (n={pairs})"
    return f"{mean:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}] (n={pairs})"


def convention(unit: str, n: int | Sequence | None = None, paired: str | None = None) -> str:
    """The header sentence that names the convention, e.g. ``mean ± s.e. over 5 seeds; paired difference
    to ppo by seed with a 95 % t-interval``.

    :param unit: what the values are over, plural (``seeds``, ``splits``, ``runs``).
    :param n: how many (or the list of them); ``None`` leaves the count out.
    :param paired: the method every other is paired with (``None``: the table has no differences).
    """
    if n is not None and not isinstance(n, int):
        n = len(n)
    text = f"{SPREAD} over {'' if n is None else f'{n} '}{unit.rstrip('s') if n == 1 else unit}"
    if paired is not None:
        text += f"; paired difference to {paired} by {unit.rstrip('s')} with a {LEVEL * 100:g} % t-interval"
    return text


def counted(count: int, noun: str) -> str:
    """``1 run``, ``2 runs``: a count and its noun, plural unless the count is one."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence], align: str | None = None) -> str:
    """A GitHub Markdown table (``pandas.DataFrame.to_markdown``); cells are shown as given (strings stay
    strings: no number is reformatted).

    :param align: one letter per column, ``l`` (left) or ``r`` (right); default: the first column left,
        the others right. Returns the table with a final newline."""
    import pandas as pd

    rows = [[str(v) for v in row] for row in rows]
    align = align or "l" + "r" * (len(header) - 1)
    if len(align) != len(header) or set(align) - {"l", "r"}:
        raise ValueError(f"align {align!r}: give one letter l or r per column ({len(header)} columns)")
    frame = pd.DataFrame(rows, columns=list(header))
    text = frame.to_markdown(
        index=False, tablefmt="pipe", disable_numparse=True, colalign=[{"l": "left", "r": "right"}[a] for a in align]
    )
    return text + "\n"


def parse_range_list(text: str, option: str = "--seeds") -> list[int]:
    """``100-104`` → [100, …, 104]; ranges and single numbers may be joined by commas (``0-4,7``).
    Raises ValueError naming ``option`` for anything else."""
    values: list[int] = []
    for part in text.replace(" ", "").split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m or (m[2] is not None and int(m[2]) < int(m[1])):
            raise ValueError(
                f"{option} {text!r}: expected a range of numbers ≥ 0 such as 100-104, or a list such as 0-4,7"
            )
        values += range(int(m[1]), int(m[2] or m[1]) + 1)
    if len(set(values)) != len(values):
        raise ValueError(f"{option} {text!r} names a number twice: give each once")
    return values
