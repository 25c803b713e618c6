"""Reproduce the S²VGD paper's RL comparison (§5.4, Figure 4) on one task, resumably.

    python -m svpg.experiments.rl --task swingup --seeds 5
    python -m svpg.experiments.rl --task pendulum --seeds 5 --jobs 2 --out runs/repro-pendulum
    python -m svpg.experiments.rl --task swingup --alpha 1 --anneal-lr true   # any train.py option overrides the preset

Runs {s2vgd, svgd, svgd-star, independent} × {reinforce, a2c} × seeds with the task's paper preset,
one run folder each under ``--out``. Every training option of ``train.py`` (``--alpha``, ``--lr``,
``--iterations``, ...) may be given to override the preset for all runs. Finished runs are skipped and interrupted ones resume from
their last checkpoint, so re-running the command continues where it stopped. Writes to ``--out``:

* ``curves.csv``  per-iteration mean / max / min over particles of every run,
* ``curves.png``  learning curves: mean over seeds (dark) ± std (light), as the paper's Figure 4,
* ``results.md``  final and peak returns (mean-over-particles and max-over-particles).
"""
from __future__ import annotations

import argparse
import csv
import json
import multiprocessing as mp
import shutil
import signal
import sys
import time
from pathlib import Path

METHODS = ("s2vgd", "svgd", "svgd-star", "independent")
ESTIMATORS = ("reinforce", "a2c")
TASKS = {"swingup": "swingup", "pendulum": "pendulum", "balance": "balance"}
#: config fields the harness sets per run (not overridable)
HARNESS_FIELDS = ("method", "estimator", "seed", "log_dir", "run_name", "progress", "eval_episodes", "threads")
OWN_OPTIONS = {"task", "seeds", "methods", "estimators", "jobs", "out", "report_only"}


def run_folder(out: Path, method: str, estimator: str, seed: int) -> Path:
    return out / f"{method}__{estimator}__seed{seed}"


def finished_iterations(path: Path) -> int:
    """The iteration of the run's newest checkpoint (0: none)."""
    from svpg.rl.checkpoints import listed

    found = listed(path)
    return found[0][0] if found else 0


def train_one(job: tuple) -> tuple[str, float]:
    """One (method, estimator, seed) run; resumes from its folder if it has a checkpoint."""
    out, task, method, estimator, seed, overrides = job
    from svpg.rl.config import SVPGConfig, load_preset
    from svpg.rl.trainer import SVPGTrainer

    path = run_folder(Path(out), method, estimator, seed)
    t0 = time.perf_counter()
    if any((path / "checkpoints").glob("iter_*.safetensors")):
        length = {k: overrides[k] for k in ("iterations", "total_steps") if k in overrides}
        trainer = SVPGTrainer.resume(path, progress=False, **length)
    else:
        if path.exists():  # interrupted before its first checkpoint: nothing to keep
            shutil.rmtree(path)
        fields = load_preset(task) | overrides
        trainer = SVPGTrainer(SVPGConfig(**fields, method=method, estimator=estimator, seed=seed, log_dir=str(out),
                                         run_name=path.name, progress=False, eval_episodes=0, threads=1))
    if not trainer.finished:
        trainer.train()
    return path.name, time.perf_counter() - t0


def collect(out: Path, jobs: list[tuple]) -> list[dict]:
    rows = []
    for _, _, method, estimator, seed, _ in jobs:
        path = run_folder(out, method, estimator, seed)
        if not (path / "progress.csv").exists():
            continue
        with open(path / "progress.csv", newline="") as f:
            for r in csv.DictReader(f):
                rows.append({
                    "method": method, "estimator": estimator, "seed": seed, "iteration": int(r["iteration"]),
                    "total_steps": int(float(r["total_steps"])), "mean": float(r["rollout/ep_rew_mean"]),
                    "max": float(r["rollout/ep_rew_max"]), "min": float(r["rollout/ep_rew_min"]),
                })
    return rows


def summarise(rows: list[dict]) -> dict:
    """(method, estimator) → per-metric (iterations, seeds) arrays truncated to the shortest seed."""
    import numpy as np

    groups: dict = {}
    for r in rows:
        groups.setdefault((r["method"], r["estimator"]), {}).setdefault(r["seed"], []).append(r)
    out = {}
    for key, seeds in groups.items():
        n = min(len(v) for v in seeds.values())
        out[key] = {m: np.array([[row[m] for row in sorted(v, key=lambda x: x["iteration"])[:n]] for v in seeds.values()]).T
                    for m in ("mean", "max", "min")}
    return out


def write_table(summary: dict, path: Path, task: str, wall: float | None) -> str:
    lines = [
        f"# {task}: final and peak returns",
        "",
        "Mean ± std over seeds. *max* = max over particles of each particle's average episode return (the SVPG",
        "paper's metric); *mean* = mean over particles. *peak* = the best iteration of the seed-averaged curve.",
        "",
        "| method | estimator | seeds | iterations | final mean | final max | peak mean | peak max |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for (method, estimator), s in sorted(summary.items(), key=lambda kv: (kv[0][1], METHODS.index(kv[0][0]))):
        mean, mx = s["mean"], s["max"]
        lines.append(
            f"| {method} | {estimator} | {mean.shape[1]} | {mean.shape[0]} | "
            f"{mean[-1].mean():.1f} ± {mean[-1].std():.1f} | {mx[-1].mean():.1f} ± {mx[-1].std():.1f} | "
            f"{mean.mean(1).max():.1f} | {mx.mean(1).max():.1f} |"
        )
    if wall is not None:
        lines += ["", f"Wall-clock of this invocation: {wall / 60:.1f} min."]
    text = "\n".join(lines) + "\n"
    path.write_text(text)
    return text


def plot(summary: dict, path: Path, task: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    estimators = sorted({e for _, e in summary}, key=ESTIMATORS.index)
    fig, axes = plt.subplots(2, len(estimators), figsize=(6 * len(estimators), 8), squeeze=False)
    for col, est in enumerate(estimators):
        for row, metric in enumerate(("max", "mean")):
            ax = axes[row][col]
            for method in METHODS:
                if (method, est) not in summary:
                    continue
                y = summary[(method, est)][metric]
                x = range(1, y.shape[0] + 1)
                mu, sd = y.mean(1), y.std(1)
                (line,) = ax.plot(x, mu, label=method, lw=1.5)
                ax.fill_between(x, mu - sd, mu + sd, color=line.get_color(), alpha=0.2, lw=0)
            ax.set_title(f"{task}, {est}: {metric} over particles")
            ax.set_xlabel("iteration")
            ax.set_ylabel("average return")
            ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=sorted(TASKS), required=True)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--estimators", default=",".join(ESTIMATORS))
    p.add_argument("--jobs", type=int, default=2, help="runs in parallel, one torch thread each (default: 2)")
    p.add_argument("--out", default=None, help="output folder (default: runs/repro-<task>)")
    p.add_argument("--report-only", action="store_true", help="only rebuild the CSV, PNG and table")
    from svpg.cli import add_dataclass_arguments, explicit_options
    from svpg.rl.config import SVPGConfig

    overridable = p.add_argument_group("training options overriding the preset (as in train.py)")
    add_dataclass_arguments(overridable, SVPGConfig, skip=HARNESS_FIELDS)
    argv = sys.argv[1:] if argv is None else argv
    args = p.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    estimators = [e for e in args.estimators.split(",") if e]
    bad = [m for m in methods if m not in METHODS] + [e for e in estimators if e not in ESTIMATORS]
    if bad:
        print(f"unknown method/estimator {bad}: choose from {METHODS} and {ESTIMATORS}", file=sys.stderr)
        return 2
    out = Path(args.out or f"runs/repro-{args.task}")
    out.mkdir(parents=True, exist_ok=True)
    overrides = {name: getattr(args, name) for name in explicit_options(p, argv) if name not in OWN_OPTIONS}
    jobs = [(str(out), args.task, m, e, s, overrides) for e in estimators for m in methods for s in range(args.seeds)]
    t0 = time.perf_counter()
    if not args.report_only:
        from svpg.rl.config import load_preset

        target = overrides.get("iterations") or load_preset(args.task)["iterations"]
        todo = [j for j in jobs if finished_iterations(run_folder(out, j[2], j[3], j[4])) < target]
        # A2C runs take ~2× a REINFORCE run (critic fitting): start them first so no job idles at the end
        todo.sort(key=lambda j: j[3] != "a2c")
        print(f"{len(jobs)} runs, {len(jobs) - len(todo)} already finished; running {len(todo)} with {args.jobs} jobs")
        from tqdm import tqdm

        # `kill` (SIGTERM) must not orphan the workers: exiting through the `with` terminates the pool, and every
        # run resumes from its last checkpoint next time
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        with mp.get_context("spawn").Pool(args.jobs) as pool, tqdm(total=len(todo), unit="run") as bar:
            for name, secs in pool.imap_unordered(train_one, todo):
                bar.write(f"{name}: {secs:.0f} s")
                bar.update(1)
    wall = time.perf_counter() - t0
    rows = collect(out, jobs)
    if not rows:
        print("no finished iterations to report yet", file=sys.stderr)
        return 1
    with open(out / "curves.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    summary = summarise(rows)
    plot(summary, out / "curves.png", args.task)
    print(write_table(summary, out / "results.md", args.task, None if args.report_only else wall))
    (out / "invocation.json").write_text(json.dumps({"argv": sys.argv, "wall_clock_s": wall}, indent=2))
    print(f"wrote {out / 'curves.csv'}, {out / 'curves.png'}, {out / 'results.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
