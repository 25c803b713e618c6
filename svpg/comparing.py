"""What every comparison of finished runs shares, below the front ends: the one-line error
(:class:`CompareError`), the row order (:func:`reference_first`), the check that runs were made with the
same settings (:class:`SameSettings`), which command wrote a run folder (:func:`run_kind`) and the command
line of ``python -m svpg.compare`` (:func:`run_command`), given the tables of the kinds it may print.

The front ends' compare modules (:mod:`svpg.rl.compare`, :mod:`svpg.bandits.compare`,
:mod:`svpg.supervised.compare`) build on this module and :mod:`svpg.compare` dispatches to them; this
module imports none of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

from svpg.runs import CONFIG_FILE

KINDS = {"bandit": "train.py bandit", "supervised": "train.py supervised", "rl": "train.py"}
SPREADS = ("se", "std")

#: the help text of ``python -m svpg.compare``
DESCRIPTION = """``python -m svpg.compare RUN RUN …``: finished runs of one kind side by side, paired by seed or split.

    python -m svpg.compare runs/mushroom runs/mushroom-variational --reference s2vgd       # bandit runs
    python -m svpg.compare runs/boston-a runs/boston-b --splits 0-9 --out boston.md      # supervised runs
    python -m svpg.compare runs/repro-swingup                                            # an RL experiments --out
    python -m svpg.compare runs/swingup__s2vgd__* runs/swingup__svgd__* --reference s2vgd   # train.py runs

The kind of every run comes from its config.json: a run of ``train.py bandit`` (agents paired by seed:
normalised regret and reward / optimal reward), of ``train.py supervised`` (methods paired by split:
test RMSE and log-likelihood, or error, NLL and ECE), or of ``train.py`` (one seed per run folder; a
folder of run folders, such as the ``--out`` of ``python -m svpg.studies.experiments``, stands for its runs;
runs that differ only in the seed form one arm: final returns, mean and max over particles; the runs of
``python -m svpg.studies.benchmark``, ``<out>/<task>/``, give one arm per agent: the final evaluation return). Runs of
different kinds, or that did not play the same problem, data and splits, or environment and length,
are refused with a one-line error. Every table shows mean ± standard error over seeds or splits and
each row's paired difference to ``--reference`` with its 95 % Student-t interval over the seeds or
splits both have. The reference's row comes first, the others follow best first by the table's first
metric.
"""

#: a kind's table for the command line: (parsed arguments, the seeds or splits to keep or None, the spread's
#: name in words) -> the header and table in Markdown
Table = Callable[..., str]


class CompareError(ValueError):
    """Runs that cannot be compared (one line naming the problem and the fix)."""


def reference_first(rows: list[tuple[str, float, str]], reference: str, higher_is_better: bool) -> list[str]:
    """The table lines of ``rows`` (name, first metric's mean, line): the reference's first, then the
    others best first (ties keep their order), as every difference is taken to the reference."""
    ranked = sorted((r for r in rows if r[0] != reference), key=lambda r: -r[1] if higher_is_better else r[1])
    return [line for name, _, line in rows if name == reference] + [line for _, _, line in ranked]


class SameSettings:
    """The settings the first run was made with; :meth:`check` refuses a later run whose settings differ,
    in one line: ``<run> and <first run> <differ> (<the keys that differ> differ): <fix>``.

    :param differ: what differing settings mean, e.g. ``"play different problems"``.
    :param fix: what to do instead, e.g. ``"compare runs of one problem"``.
    """

    def __init__(self, differ: str, fix: str):
        self.differ, self.fix = differ, fix
        self.settings: dict | None = None
        self.run: Path | None = None

    def check(self, run: Path, settings: dict) -> None:
        if self.settings is None:
            self.settings, self.run = settings, run
        elif settings != self.settings:
            differs = ", ".join(k for k in settings if settings[k] != self.settings.get(k))
            raise CompareError(f"{run} and {self.run} {self.differ} ({differs} differ): {self.fix}")


# ----------------------------------------------------------------------------- which command wrote a run folder
def is_rl_run(path: Path) -> bool:
    """A ``train.py`` run folder: its config.json names an environment and a method."""
    try:
        config = json.loads((Path(path) / CONFIG_FILE).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and "env_id" in config and "method" in config


def is_benchmark_run(path: Path) -> bool:
    """A finished run of ``python -m svpg.studies.benchmark``."""
    return (Path(path) / "result.json").is_file() and (Path(path) / "job.json").is_file()


def rl_runs_in(path: Path, depth: int = 2) -> list[Path]:
    """The RL runs in ``path`` and, to ``depth`` levels, in its sub-folders (a benchmark's ``<out>/<task>/``)."""
    if is_rl_run(path) or is_benchmark_run(path):
        return [path]
    if depth == 0 or not path.is_dir():
        return []
    return [run for p in sorted(path.iterdir()) if p.is_dir() for run in rl_runs_in(p, depth - 1)]


def holds_rl_runs(path: str | Path) -> bool:
    return bool(rl_runs_in(Path(path)))


def run_kind(path: str | Path) -> str | None:
    """``"bandit"``, ``"supervised"`` or ``"rl"`` from a run folder's config.json (a folder of RL run
    folders is ``"rl"``); None if it is none of them."""
    path = Path(path)
    try:
        config = json.loads((path / CONFIG_FILE).read_text())
    except (OSError, ValueError):
        config = None
    if isinstance(config, dict):
        if "agent_names" in config and "problem_description" in config:
            return "bandit"
        if "resolved" in config and "data" in config:
            return "supervised"
        if is_rl_run(path):
            return "rl"
        return None
    return "rl" if holds_rl_runs(path) else None


def kind_of_runs(runs: list[str], expected: str | None) -> str:
    """The one kind of every run; a CompareError for a folder of no kind or runs of two kinds."""
    found: dict[str, str] = {}
    for run in runs:
        kind = run_kind(run)
        if kind is None:
            if expected == "bandit":
                raise CompareError(
                    f"{run} is not a bandit run folder (no config.json): pass folders written by train.py bandit"
                )
            if expected == "supervised":
                raise CompareError(
                    f"{run} is not a supervised run folder (no {CONFIG_FILE}): "
                    "pass folders written by train.py supervised"
                )
            raise CompareError(
                f"{run} is not a run folder of {', '.join(KINDS.values())} (no config.json of theirs): "
                "pass runs/<run-name> folders"
            )
        found.setdefault(kind, run)
    if expected is not None and set(found) != {expected}:
        other = next(k for k in found if k != expected)
        raise CompareError(
            f"{found[other]} is a run of {KINDS[other]}, not of {KINDS[expected]}: compare it with "
            f"python -m svpg.compare"
        )
    if len(found) > 1:
        (a, run_a), (b, run_b) = list(found.items())[:2]
        raise CompareError(f"{run_a} is a run of {KINDS[a]} and {run_b} one of {KINDS[b]}: compare runs of one kind")
    return next(iter(found))


# ----------------------------------------------------------------------------- the command line
def build_parser(prog: str = "python -m svpg.compare"):
    from svpg.cli import Parser

    p = Parser(prog=prog, description=DESCRIPTION)
    p.add_argument("runs", nargs="+", help="run folders (runs/<run-name>) of one kind, or folders of RL run folders")
    p.add_argument(
        "--reference",
        default=None,
        help="the agent, method or RL arm every other is paired with (default: s2vgd, or for RL runs "
        "without an s2vgd arm the first arm)",
    )
    p.add_argument("--seeds", default=None, help="only these seeds, e.g. 0-9 or 0,2 (default: every one any run has)")
    p.add_argument("--splits", default=None, help="supervised runs: only these splits, e.g. 0-9 (default: every one)")
    p.add_argument(
        "--spread",
        default="se",
        choices=SPREADS,
        help="after ±: se, the standard error of the mean, or std, the sample standard deviation over "
        "seeds (bandit and RL runs) (default: se)",
    )
    p.add_argument("--out", default=None, help="also write the table to this Markdown file")
    return p


def run_command(
    argv: list[str] | None,
    tables: Mapping[str, Table],
    *,
    kind: str | None = None,
    prog: str = "python -m svpg.compare",
) -> int:
    """The command line over ``tables`` ({kind: its table}); ``kind`` restricts it to runs of one kind."""
    from svpg.cli import emit_markdown
    from svpg.stats import parse_range_list

    p = build_parser(prog)
    args = p.parse_args(argv)
    try:
        if args.seeds and args.splits:
            raise ValueError("--seeds and --splits name the same thing: give one of them")
        option, keys = ("--splits", args.splits) if args.splits else ("--seeds", args.seeds)
        kind = kind_of_runs(args.runs, kind)
        keys = parse_range_list(keys, option) if keys else None
        spread = "standard error" if args.spread == "se" else "standard deviation"
        text = tables[kind](args, keys, spread)
    except ValueError as e:  # the kinds' CompareError, a bad --seeds, an unreadable config.json
        p.error(str(e))
    emit_markdown(text, args.out)
    return 0
