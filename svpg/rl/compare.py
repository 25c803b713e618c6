"""Compare RL runs paired by seed: the RL side of ``python -m svpg.compare``.

A run folder of ``train.py`` (also those of ``python -m svpg.studies.experiments`` and the ablation) trains
one seed of one configuration; runs whose configurations differ only in the seed (and in how they were
run: folder, threads, device, checkpoints) form one *arm*, named by the options in which the arms
differ (``s2vgd``, or ``method=svgd, estimator=a2c``). Every run is read at its last finished iteration
(``progress.csv``). Runs of ``python -m svpg.studies.benchmark`` (``<out>/<task>/<agent>__seed<s>/``) are read
from their ``result.json``, one arm per agent. Every arm is paired with the reference arm on the seeds
both have; runs of another environment, or of another length, are refused.
"""

from __future__ import annotations

import math
from pathlib import Path

from svpg.comparing import CompareError, SameSettings, is_benchmark_run, reference_first, rl_runs_in
from svpg.runs import CONFIG_FILE, read_json_object
from svpg.stats import mean_se, paired_difference

#: config.json entries that say how a run was run, not what it is: ignored when runs are grouped into arms
RUN_ONLY = (
    "seed",
    "num_seeds",
    "run_name",
    "log_dir",
    "progress",
    "threads",
    "device",
    "eval_episodes",
    "checkpoint_every",
    "keep_checkpoints",
    "iterations",
    "total_steps",
)
#: (progress.csv column, table column) of the final returns; the first is the one counted in "higher on"
METRICS = (
    ("rollout/ep_rew_mean", "final return, mean over particles"),
    ("rollout/ep_rew_max", "final return, max over particles"),
)
#: the same of a benchmark run's result.json: the evaluation return of the particle chosen on training returns
BENCHMARK_METRICS = (("final", "final evaluation return"),)


def expand(paths: list[str | Path]) -> list[Path]:
    """Run folders; a folder of run folders (an experiments, ablation or benchmark ``--out``) stands for its runs."""
    runs = []
    for path in map(Path, paths):
        inner = rl_runs_in(path)
        if not inner:
            raise CompareError(
                f"{path} is not an RL run folder (no config.json of train.py) and holds none: pass "
                "runs/<run-name> or the --out folder of python -m svpg.studies.experiments or benchmark"
            )
        runs += inner
    return runs


def _last_row(run: Path) -> dict:
    from svpg.rl.checkpoints import PROGRESS_FILE, ProgressCSV

    rows = ProgressCSV.read(run / PROGRESS_FILE)
    if not rows:
        raise CompareError(
            f"{run} has no finished iteration yet: train it, or continue it with python train.py --resume {run}"
        )
    return rows[-1]


def load_runs(paths: list[str | Path]) -> tuple[dict, dict[str, dict[int, dict]]]:
    """(what the runs share: ``env_id``, ``length`` (words) and ``metrics``; {arm: {seed: final metrics}}),
    after the checks above."""
    runs = expand(paths)
    benchmark = [is_benchmark_run(run) for run in runs]
    if all(benchmark):
        return _load_benchmark_runs(runs)
    if any(benchmark):
        raise CompareError(
            f"{runs[benchmark.index(True)]} is a run of python -m svpg.studies.benchmark and "
            f"{runs[benchmark.index(False)]} one of train.py: compare runs of one command"
        )
    records = []
    for run in runs:
        config = read_json_object(run / CONFIG_FILE, "run config")
        row = _last_row(run)
        records.append((run, config, row))
    first_run, first, first_row = records[0]
    for run, config, row in records[1:]:
        if config.get("env_id") != first.get("env_id"):
            raise CompareError(
                f"{run} and {first_run} train on different environments ({config.get('env_id')} and "
                f"{first.get('env_id')}): compare runs of one environment"
            )
        if int(row["iteration"]) != int(first_row["iteration"]):
            raise CompareError(
                f"{run} stopped at iteration {row['iteration']} and {first_run} at {first_row['iteration']}: "
                f"compare runs of one length (continue the shorter with python train.py --resume RUN "
                f"--iterations N)"
            )
    keys = [{k: v for k, v in config.items() if k not in RUN_ONLY} for _, config, _ in records]
    differing = [k for k in keys[0] if any(key.get(k) != keys[0].get(k) for key in keys)]
    differing += [k for key in keys for k in key if k not in keys[0] and k not in differing]

    def label(key: dict) -> str:
        if not differing:
            return str(key.get("method"))
        if len(differing) == 1:
            return str(key.get(differing[0]))
        return ", ".join(f"{k}={key.get(k)}" for k in differing)

    table: dict[str, dict[int, dict]] = {}
    where: dict[tuple[str, int], Path] = {}
    for (run, config, row), key in zip(records, keys):
        arm, seed = label(key), int(config["seed"])
        if (arm, seed) in where:
            raise CompareError(f"{run} and {where[arm, seed]} are both seed {seed} of {arm}: pass each run once")
        where[arm, seed] = run
        table.setdefault(arm, {})[seed] = {m: float(row[m]) for m, _ in METRICS}
    length = f"iteration {first_row['iteration']} ({int(float(first_row['total_steps']))} steps)"
    return {"env_id": first.get("env_id"), "length": length, "metrics": METRICS}, table


def _load_benchmark_runs(runs: list[Path]) -> tuple[dict, dict[str, dict[int, dict]]]:
    table: dict[str, dict[int, dict]] = {}
    same = SameSettings("are runs of different benchmarks", "compare runs of one task and budget")
    for run in runs:
        result = read_json_object(run / "result.json", "benchmark result")
        job = read_json_object(run / "job.json", "benchmark job")
        same.check(run, {k: job.get(k) for k in ("task", "total_steps", "eval_episodes")})
        arm, seed = str(job.get("agent")), int(job.get("seed", -1))
        if seed in table.get(arm, {}):
            raise CompareError(f"{run} is seed {seed} of {arm} a second time: pass each run once")
        table.setdefault(arm, {})[seed] = {m: float(result[m]) for m, _ in BENCHMARK_METRICS}
    first = same.settings or {}
    length = f"{first['total_steps']} environment steps, {first['eval_episodes']} evaluation episodes"
    return {"env_id": first["task"], "length": length, "metrics": BENCHMARK_METRICS}, table


def compare_table(
    table: dict[str, dict[int, dict]],
    reference: str,
    seeds: list[int] | None = None,
    spread: str = "se",
    metrics=METRICS,
) -> str:
    """The Markdown comparison: every arm's final returns as mean ± standard error (``spread="std"``: ± the
    sample standard deviation) over seeds, and its paired differences to ``reference`` with 95 % t-intervals."""
    if reference not in table:
        raise CompareError(f"--reference {reference!r} is in none of the runs: choose one of {', '.join(table)}")
    short = {"rollout/ep_rew_mean": "mean", "rollout/ep_rew_max": "max", "final": "return"}
    head = [
        "runs",
        "seeds",
        *[name for _, name in metrics],
        *[f"{short[m]} − {reference} [95 % CI]" for m, _ in metrics],
        "higher on",
    ]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    ref = table[reference]
    rows = []
    for arm, by_seed in table.items():
        own = {s: v for s, v in by_seed.items() if seeds is None or s in seeds}
        if not own:
            continue
        cells, means = [arm, str(len(own))], []
        for key, _ in metrics:
            values = [v[key] for v in own.values()]
            mean, se = mean_se(values)
            means.append(mean)
            spread_value = se if spread == "se" else se * math.sqrt(len(values))
            cells.append(f"{mean:.1f} ± {spread_value:.1f}" if math.isfinite(spread_value) else f"{mean:.1f}")
        higher = ""
        for i, (key, _) in enumerate(metrics):
            if arm == reference:
                cells.append("")
                continue
            a = {s: v[key] for s, v in own.items()}
            b = {s: v[key] for s, v in ref.items() if s in a}
            pairs, mean, lo, hi = paired_difference(a, b)
            cells.append(
                f"{mean:+.1f} [{lo:+.1f}, {hi:+.1f}]" if math.isfinite(lo) else (f"{mean:+.1f}" if pairs else "")
            )
            if i == 0 and pairs:
                higher = f"{sum(a[s] > b[s] for s in b)}/{pairs}"
        cells.append(higher)
        rows.append((arm, means[0], "| " + " | ".join(cells) + " |"))
    lines += reference_first(rows, reference, higher_is_better=True)
    return "\n".join(lines) + "\n"


def report(args, keys: list[int] | None, spread: str) -> str:
    """The header and table of ``python -m svpg.compare`` for RL runs (``spread``: the spread in words)."""
    shared, table = load_runs(args.runs)
    reference = args.reference or ("s2vgd" if "s2vgd" in table else next(iter(table)))
    text = compare_table(table, reference, keys, args.spread, shared["metrics"])
    return (
        f"**{shared['env_id']}**, {shared['length']}; mean ± {spread} over seeds; paired differences to {reference} "
        f"over the seeds both have, with 95 % t-intervals (positive: higher return); *higher on*: seeds where the "
        f"{shared['metrics'][0][1]} is higher.\n\n" + text
    )
