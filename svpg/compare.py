"""``python -m svpg.compare RUN RUN …``: finished runs of one kind side by side, paired by seed or split.

    python -m svpg.compare runs/mushroom runs/mushroom-variational --reference s2vgd       # bandit runs
    python -m svpg.compare runs/boston-a runs/boston-b --splits 0-9 --out boston.md      # supervised runs
    python -m svpg.compare runs/repro-swingup                                            # an RL experiments --out
    python -m svpg.compare runs/swingup__s2vgd__* runs/swingup__svgd__* --reference s2vgd   # train.py runs

The kind of every run comes from its config.json: a run of ``train.py bandit`` (agents paired by seed:
normalised regret and reward / optimal reward), of ``train.py supervised`` (methods paired by split:
test RMSE and log-likelihood, or error, NLL and ECE), or of ``train.py`` (one seed per run folder; a
folder of run folders, such as the ``--out`` of ``python -m svpg.rl.experiments``, stands for its runs;
runs that differ only in the seed form one arm: final returns, mean and max over particles; the runs of
``python -m svpg.rl.benchmark``, ``<out>/<task>/``, give one arm per agent: the final evaluation return). Runs of
different kinds, or that did not play the same problem, data and splits, or environment and length,
are refused with a one-line error. Every table shows mean ± standard error over seeds or splits and
each row's paired difference to ``--reference`` with its 95 % Student-t interval over the seeds or
splits both have. The reference's row comes first, the others follow best first by the table's first
metric.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from svpg.runs import CONFIG_FILE

KINDS = {"bandit": "train.py bandit", "supervised": "train.py supervised", "rl": "train.py"}
SPREADS = ("se", "std")


class CompareError(ValueError):
    """Runs that cannot be compared (one line naming the problem and the fix)."""


def reference_first(rows: list[tuple[str, float, str]], reference: str, higher_is_better: bool) -> list[str]:
    """The table lines of ``rows`` (name, first metric's mean, line): the reference's first, then the
    others best first (ties keep their order), as every difference is taken to the reference."""
    ranked = sorted((r for r in rows if r[0] != reference), key=lambda r: -r[1] if higher_is_better else r[1])
    return [line for name, _, line in rows if name == reference] + [line for _, _, line in ranked]


def run_kind(path: str | Path) -> str | None:
    """``"bandit"``, ``"supervised"`` or ``"rl"`` from a run folder's config.json (a folder of RL run
    folders is ``"rl"``); None if it is none of them."""
    from svpg.rl.compare import holds_runs, is_run

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
        if is_run(path):
            return "rl"
        return None
    return "rl" if holds_runs(path) else None


def _kind_of_runs(runs: list[str], expected: str | None) -> str:
    """The one kind of every run; a ValueError for a folder of no kind or runs of two kinds."""
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


def build_parser(prog: str = "python -m svpg.compare"):
    from svpg.cli import Parser

    p = Parser(prog=prog, description=__doc__)
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


def main(argv: list[str] | None = None, *, kind: str | None = None, prog: str = "python -m svpg.compare") -> int:
    """The command line; ``kind`` restricts it to runs of one kind (the deprecated per-kind commands)."""
    from svpg.cli import emit_markdown
    from svpg.stats import parse_range_list

    p = build_parser(prog)
    args = p.parse_args(argv)
    try:
        if args.seeds and args.splits:
            raise ValueError("--seeds and --splits name the same thing: give one of them")
        option, keys = ("--splits", args.splits) if args.splits else ("--seeds", args.seeds)
        kind = _kind_of_runs(args.runs, kind)
        keys = parse_range_list(keys, option) if keys else None
        text = _compare(kind, args, keys)
    except ValueError as e:  # the kinds' CompareError, a bad --seeds, an unreadable config.json
        p.error(str(e))
    emit_markdown(text, args.out)
    return 0


def _compare(kind: str, args, keys: list[int] | None) -> str:
    """The header and table of ``kind``'s runs."""
    spread = "standard error" if args.spread == "se" else "standard deviation"
    return {"bandit": _bandit_table, "supervised": _supervised_table, "rl": _rl_table}[kind](args, keys, spread)


def _bandit_table(args, keys: list[int] | None, spread: str) -> str:
    from svpg.bandits import compare as bandit

    config, table = bandit.load_runs(args.runs)
    reference = args.reference or "s2vgd"
    text = bandit.compare_table(table, reference, keys, args.spread)
    return (
        f"**{config['problem']}**, {config['rounds']} rounds; mean ± {spread} over seeds; paired differences of "
        f"the normalised regret to {reference} over the seeds both have, with 95 % t-intervals (negative: lower "
        f"regret).\n\n" + text
    )


def _supervised_table(args, keys: list[int] | None, spread: str) -> str:
    from svpg.supervised import compare as supervised

    if args.spread != "se":
        raise ValueError("--spread std: supervised tables show the standard error over splits only")
    shared, table, labels = supervised.load_runs(args.runs)
    reference = args.reference or "s2vgd"
    text = supervised.compare_table(table, reference, keys, labels)
    metrics = "RMSE and log-likelihood" if supervised.table_task(table) == "regression" else "error and NLL"
    return (
        f"**{shared['dataset']}**, --protocol {shared['protocol']}, --seed {shared['seed']}; mean ± standard error "
        f"over splits; paired differences of the {metrics} to {reference} over the splits both have, with 95 % "
        f"t-intervals; *better on*: splits where the method is better on each.\n\n" + text
    )


def _rl_table(args, keys: list[int] | None, spread: str) -> str:
    from svpg.rl import compare as rl

    shared, table = rl.load_runs(args.runs)
    reference = args.reference or ("s2vgd" if "s2vgd" in table else next(iter(table)))
    text = rl.compare_table(table, reference, keys, args.spread, shared["metrics"])
    return (
        f"**{shared['env_id']}**, {shared['length']}; mean ± {spread} over seeds; paired differences to {reference} "
        f"over the seeds both have, with 95 % t-intervals (positive: higher return); *higher on*: seeds where the "
        f"{shared['metrics'][0][1]} is higher.\n\n" + text
    )


if __name__ == "__main__":
    sys.exit(main())
