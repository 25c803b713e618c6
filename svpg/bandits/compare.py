"""The bandit runs of ``python -m svpg.compare``: agents of several finished runs on one problem, paired by seed.

Runs of ``train.py bandit`` with the same problem options and rounds play the same pre-drawn table
for a given seed, whatever agents they hold (every agent draws from its own streams), so their
per-seed results can be set side by side. :func:`load_runs` reads each run's finished seeds
(``seeds/``; a run still playing contributes the seeds it has finished), refuses runs whose problem
differs and checks that an agent present in two runs gave the same numbers there; :func:`compare_table`
prints normalised regret (uniform = 100) and reward / optimal reward, mean ± standard error (or ± std)
over seeds, and each agent's paired difference to the reference (mean and 95 % Student-t interval over
the seeds both have, and the number of seeds on which the agent is lower).

``python -m svpg.bandits.compare`` is the former command, kept as a deprecated alias of
``python -m svpg.compare`` for bandit runs.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

from svpg.comparing import CompareError, SameSettings, reference_first, run_command
from svpg.stats import mean_se, paired_difference

#: config entries that must agree for two runs to play the same tables
PROBLEM_KEYS = (
    "problem",
    "rounds",
    "seed",
    "delta",
    "wheel_sigma",
    "data_path",
    "reward_no_eat",
    "reward_eat_edible",
    "reward_eat_poisonous_bad",
    "reward_eat_poisonous_good",
    "prob_poisonous_bad",
    "problem_description",
)
METRICS = ("normalised_regret", "reward_ratio", "cumulative_regret", "seconds")


def load_runs(run_dirs: list[str | Path]) -> tuple[dict, dict[tuple[str, int], dict]]:
    """(the shared problem config, {(agent, seed): metrics}) of the runs' finished seeds, after the checks above."""
    from svpg.bandits.results import per_seed_frame
    from svpg.bandits.runfolder import finished_seeds, load_results

    same = SameSettings("play different problems", "compare runs of one problem")
    table: dict[tuple[str, int], dict] = {}
    for run_dir in map(Path, run_dirs):
        config_path = run_dir / "config.json"
        if not config_path.exists():
            raise CompareError(
                f"{run_dir} is not a bandit run folder (no config.json): pass folders written by train.py bandit"
            )
        seeds = finished_seeds(run_dir)
        if not seeds:
            raise CompareError(
                f"{run_dir} has no finished seed yet: play it with python train.py bandit --resume {run_dir}"
            )
        config = json.loads(config_path.read_text())
        same.check(run_dir, {k: config.get(k) for k in PROBLEM_KEYS})
        results = load_results(run_dir, config["problem_description"], config["rounds"], seeds, config["agent_names"])
        for row in per_seed_frame(results).to_dict("records"):
            key = (row["agent"], int(row["seed"]))
            values = {m: float(row[m]) for m in METRICS}
            if key in table and any(not math.isclose(table[key][m], values[m]) for m in METRICS if m != "seconds"):
                raise CompareError(
                    f"agent {key[0]} seed {key[1]} gave different results in two runs: "
                    "they did not play the same table (different code or options)"
                )
            table.setdefault(key, values)
    if same.settings is None:
        raise CompareError("no run folder given: pass the runs to compare")
    return same.settings, table


SPREADS = ("std", "se")


def _std(v: np.ndarray) -> float:
    return float(v.std(ddof=1)) if len(v) > 1 else 0.0


def _spread(v: np.ndarray, spread: str) -> float:
    if spread == "se":
        return mean_se(v)[1] if len(v) > 1 else 0.0
    return _std(v)


def spread_cell(values, spread: str, digits: int) -> str:
    """``mean ± spread`` of ``values`` (``spread``: ``"std"`` or ``"se"``) with ``digits`` decimals."""
    v = np.asarray(list(values), dtype=np.float64)
    return f"{v.mean():.{digits}f} ± {_spread(v, spread):.{digits}f}"


def agent_cells(
    table: dict[tuple[str, int], dict], agent: str, reference: str, seeds: list[int], spread: str = "std"
) -> list[str] | None:
    """One agent's cells of :func:`compare_table` (seeds, normalised regret, reward / optimal reward, paired
    difference to ``reference``, lower on, median seconds per run) over ``seeds``; None if it has none."""
    own = {s: table[(agent, s)] for s in seeds if (agent, s) in table}
    if not own:
        return None
    ref = {s: table[(reference, s)] for s in seeds if (reference, s) in table}
    secs = np.median([v["seconds"] for v in own.values()])
    paired = sorted(set(own) & set(ref))
    if agent == reference or not paired:
        diff, lower = "", ""
    else:
        a = {s: own[s]["normalised_regret"] for s in paired}
        b = {s: ref[s]["normalised_regret"] for s in paired}
        _, mean, lo, hi = paired_difference(a, b)
        diff = f"{mean:+.2f} [{lo:+.2f}, {hi:+.2f}]" if math.isfinite(lo) else f"{mean:+.2f}"
        lower = f"{sum(a[s] < b[s] for s in paired)}/{len(paired)}"
    return [
        str(len(own)),
        spread_cell([v["normalised_regret"] for v in own.values()], spread, 2),
        spread_cell([v["reward_ratio"] for v in own.values()], spread, 3),
        diff,
        lower,
        f"{secs:.0f}",
    ]


def compare_table(
    table: dict[tuple[str, int], dict], reference: str, seeds: list[int] | None = None, spread: str = "std"
) -> str:
    """The Markdown comparison (see the module docstring); ``spread``: ``"std"`` or ``"se"`` (standard error)."""
    if spread not in SPREADS:
        raise CompareError(f"--spread {spread!r}: choose std (standard deviation) or se (standard error)")
    agents = list(dict.fromkeys(agent for agent, _ in table))
    if reference not in agents:
        raise CompareError(f"--reference {reference!r} is in none of the runs: choose one of {', '.join(agents)}")
    if seeds is None:
        seeds = sorted({seed for _, seed in table})
    lines = [
        f"| agent | seeds | normalised regret (uniform = 100) | reward / optimal reward | minus {reference}: mean [95 % CI] | lower on | s per run |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    rows = []
    for agent in agents:
        cells = agent_cells(table, agent, reference, seeds, spread)
        if cells is None:
            continue
        mean = float(np.mean([table[(agent, s)]["normalised_regret"] for s in seeds if (agent, s) in table]))
        rows.append((agent, mean, f"| {agent} | {' | '.join(cells)} |"))
    lines += reference_first(rows, reference, higher_is_better=False)
    return "\n".join(lines) + "\n"


def report(args, keys: list[int] | None, spread: str) -> str:
    """The header and table of ``python -m svpg.compare`` for bandit runs (``spread``: the spread in words)."""
    config, table = load_runs(args.runs)
    reference = args.reference or "s2vgd"
    text = compare_table(table, reference, keys, args.spread)
    return (
        f"**{config['problem']}**, {config['rounds']} rounds; mean ± {spread} over seeds; paired differences of "
        f"the normalised regret to {reference} over the seeds both have, with 95 % t-intervals (negative: lower "
        f"regret).\n\n" + text
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m svpg.compare`` for bandit runs only (the former command)."""
    return run_command(argv, {"bandit": report}, kind="bandit", prog="python -m svpg.bandits.compare")


if __name__ == "__main__":
    print("python -m svpg.bandits.compare is deprecated: use python -m svpg.compare", file=sys.stderr)
    sys.exit(main())
