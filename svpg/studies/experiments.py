"""Reproduce the S²VGD paper's RL comparison (§5.4, Figure 4) on one task, resumably.

    python -m svpg.studies.experiments --task swingup --num-seeds 5 --estimators reinforce,a2c   # the paper's grid
    python -m svpg.studies.experiments --task double-pendulum --num-seeds 5 --jobs 2 --out runs/repro-double-pendulum
    python -m svpg.studies.experiments --task swingup --alpha 1 --anneal-lr true   # any train.py option overrides the preset
    python -m svpg.studies.experiments --task double-pendulum --num-seeds 5 --backend ray      # Ray Tune trials (RAY_ADDRESS: a cluster)

Runs {s2vgd, svgd, svgd-star, independent} × the on-policy estimators (reinforce, a2c, ppo; the paper's
are reinforce and a2c) × seeds with the task's paper preset, one run folder each under ``--out``
(``<method>__<estimator>__seed<s>``). The seeds of each (method,
estimator) train as one seed-batched computation (``train.py --num-seeds``), one job per batch, on
``--jobs`` local processes or as Ray Tune trials (:mod:`svpg.grid`). Every training option of
``train.py`` (``--alpha``, ``--lr``, ``--iterations``, ...) may be given to override the preset for all
runs. Finished runs are skipped and interrupted ones resume from their last checkpoint, so re-running
the command continues where it stopped. Writes to ``--out``:

* ``curves.csv``  per-iteration mean / max / min over particles of every run,
* ``curves.png``  learning curves: mean over seeds (dark) ± standard error (light), laid out as the paper's Figure 4,
* ``results.md``  final and peak returns (mean-over-particles and max-over-particles), mean ± standard error
  over seeds (:mod:`svpg.stats`).
"""

from __future__ import annotations

import csv
import json
import signal
import sys
import time
from pathlib import Path

from svpg.grid import add_backend_arguments, gpus_per_job, run_jobs
from svpg.io import atomic_write, write_csv
from svpg.rl.config import ESTIMATORS, ON_POLICY_ESTIMATORS, PAPER_TASKS, POLICY_METHODS
from svpg.stats import counted

#: config fields the harness sets per run (not overridable)
HARNESS_FIELDS = (
    "method",
    "estimator",
    "seed",
    "num_seeds",
    "log_dir",
    "run_name",
    "progress",
    "eval_episodes",
    "threads",
)
OWN_OPTIONS = {"task", "seeds", "methods", "estimators", "jobs", "out", "report_only", "backend", "gpus_per_job"}


def run_folder(out: Path, label: str, estimator: str, seed: int) -> Path:
    """A run's folder: ``<label>__<estimator>__seed<s>``; the label is the method here, a cell in the ablation."""
    return out / f"{label}__{estimator}__seed{seed}"


def job_label(job: dict) -> str:
    """The label of a job's run folders: its ablation cell (:mod:`svpg.studies.ablation`), else its method."""
    return job.get("cell", job["method"])


def finished_iterations(path: Path) -> int:
    """The iteration of the run's newest checkpoint (0: none)."""
    from svpg.rl.checkpoints import listed

    found = listed(path)
    return found[0][0] if found else 0


def plan(out: Path, task: str, methods, estimators, seeds: int, overrides: dict) -> list[dict]:
    """One job per (method, estimator): its seeds as one seed batch. The list depends only on the
    command line, so a restarted grid is the same grid (Ray restores its experiment by this identity).
    ``out`` is made absolute: Ray Tune starts each trial in a folder of its own."""
    out_dir = str(Path(out).resolve())
    jobs = [
        {"out": out_dir, "task": task, "method": m, "estimator": e, "seeds": list(range(seeds)), "overrides": overrides}
        for e in estimators
        for m in methods
    ]
    return a2c_first(jobs)


def a2c_first(jobs: list[dict]) -> list[dict]:
    # A2C runs take ~2× a REINFORCE run (critic fitting): start them first so no worker idles at the end
    return sorted(jobs, key=lambda j: j["estimator"] != "a2c")


def target_iterations(job: dict) -> int:
    from svpg.rl.config import load_preset

    return job["overrides"].get("iterations") or load_preset(job["task"])["iterations"]


def unfinished(job: dict) -> dict[tuple[bool, int], list[int]]:
    """The job's unfinished seeds, grouped so that each group continues together: new runs, or
    existing ones at the same checkpoint."""
    groups: dict = {}
    for seed in job["seeds"]:
        path = run_folder(Path(job["out"]), job_label(job), job["estimator"], seed)
        at = finished_iterations(path)
        if at < target_iterations(job):
            groups.setdefault((path.exists(), at), []).append(seed)
    return dict(sorted(groups.items()))


def train_batch(job: dict, report=None) -> dict:
    """One job of :func:`plan`: its unfinished seeds, each group as one seed-batched run, new or resumed."""
    from svpg.allocator import keep_freed_memory
    from svpg.rl.config import SVPGConfig, load_preset
    from svpg.rl.trainer import SVPGTrainer

    keep_freed_memory()  # a worker process is an entry point too: the critic fit's large activations

    out, method, estimator, overrides = Path(job["out"]), job["method"], job["estimator"], job["overrides"]
    label = job_label(job)
    t0 = time.perf_counter()

    from svpg.rl.callbacks import BaseCallback

    class Forward(BaseCallback):
        """Each iteration's mean return over seeds to ``report`` (Ray Tune's)."""

        def _on_step(self) -> bool:
            per_seed = self.model.scalars
            report(
                {
                    "iteration": self.model.iteration,
                    "ep_rew_mean": sum(v["rollout/ep_rew_mean"] for v in per_seed) / len(per_seed),
                }
            )
            return True

    for (exists, _), seeds in unfinished(job).items():
        if exists:
            length = {k: overrides[k] for k in ("iterations", "total_steps") if k in overrides}
            trainer = SVPGTrainer.resume(
                [run_folder(out, label, estimator, s) for s in seeds], progress=False, **length
            )
        else:
            name = f"{label}__{estimator}" if len(seeds) > 1 else run_folder(out, label, estimator, seeds[0]).name
            config = SVPGConfig(
                **(
                    load_preset(job["task"])
                    | overrides
                    | dict(
                        method=method,
                        estimator=estimator,
                        seed=seeds[0],
                        num_seeds=len(seeds),
                        log_dir=str(out),
                        run_name=name,
                        progress=False,
                        eval_episodes=0,
                        threads=1,
                    )
                )
            )
            trainer = SVPGTrainer(config, seeds=seeds)
        if not trainer.finished:
            trainer.train(callback=Forward() if report else None)
    return {"seconds": time.perf_counter() - t0}


def collect(out: Path, keys: list[tuple], label: str = "method") -> list[dict]:
    """Every finished iteration of every (method, estimator, seed) run, from its progress.csv; the first
    key names the run folder and fills the column ``label`` (the ablation's cells)."""
    rows = []
    for name, estimator, seed in keys:
        path = run_folder(out, name, estimator, seed)
        if not (path / "progress.csv").exists():
            continue
        with open(path / "progress.csv", newline="") as f:
            for r in csv.DictReader(f):
                rows.append(
                    {
                        label: name,
                        "estimator": estimator,
                        "seed": seed,
                        "iteration": int(r["iteration"]),
                        "total_steps": int(float(r["total_steps"])),
                        "mean": float(r["rollout/ep_rew_mean"]),
                        "max": float(r["rollout/ep_rew_max"]),
                        "min": float(r["rollout/ep_rew_min"]),
                    }
                )
    return rows


def summarise(rows: list[dict], label: str = "method", metrics=("mean", "max", "min")) -> dict:
    """(method, estimator) → per-metric (iterations, seeds) arrays truncated to the shortest seed; seeds
    in their order of appearance (``label``: the column that names a row's method or cell; ``metrics``: the
    columns of a row that hold its returns)."""
    import numpy as np

    groups: dict = {}
    for r in rows:
        groups.setdefault((r[label], r["estimator"]), {}).setdefault(r["seed"], []).append(r)
    out = {}
    for key, seeds in groups.items():
        n = min(len(v) for v in seeds.values())
        out[key] = {
            m: np.array([[row[m] for row in sorted(v, key=lambda x: x["iteration"])[:n]] for v in seeds.values()]).T
            for m in metrics
        }
    return out


def grid_cells(mean, mx) -> list[str]:
    """A (method, estimator)'s returns as ``results.md`` prints them, from its (iterations, seeds) curves of the
    mean and the max over particles: final mean, final max (mean ± standard error over seeds of the last
    iteration), peak mean, peak max (the best iteration of the seed-averaged curve)."""
    from svpg.stats import cell

    return [cell(mean[-1]), cell(mx[-1]), f"{mean.mean(1).max():.1f}", f"{mx.mean(1).max():.1f}"]


def write_table(summary: dict, path: Path, task: str, wall: float | None) -> str:
    """``results.md``: final returns as mean ± standard error over seeds, peak returns of the seed-averaged curve."""
    from svpg.stats import convention, markdown_table

    rows = []
    for (method, estimator), s in sorted(
        summary.items(), key=lambda kv: (kv[0][1], list(POLICY_METHODS).index(kv[0][0]))
    ):
        mean, mx = s["mean"], s["max"]
        rows.append([method, estimator, mean.shape[1], mean.shape[0], *grid_cells(mean, mx)])
    seeds = sorted({s["mean"].shape[1] for s in summary.values()})
    text = (
        "\n".join(
            [
                f"# {task}: final and peak returns",
                "",
                f"Final returns: {convention('seeds', seeds[0] if len(seeds) == 1 else None)}; *peak* = the best iteration of the",
                "seed-averaged curve. *max* = max over particles of each particle's average episode return (the SVPG paper's",
                "metric); *mean* = mean over particles.",
                "",
            ]
        )
        + "\n"
        + markdown_table(
            ["method", "estimator", "seeds", "iterations", "final mean", "final max", "peak mean", "peak max"],
            rows,
            align="llrrrrrr",
        )
    )
    if wall is not None:
        text += f"\nWall-clock of this invocation: {wall / 60:.1f} min.\n"
    atomic_write(path, lambda tmp: Path(tmp).write_text(text))
    return text


def plot(
    summary: dict, path: Path, task: str, labels=tuple(POLICY_METHODS), metadata: dict[str, str] | None = None
) -> None:
    """Figure 4's layout: best particle (top) and mean over particles (bottom) per estimator, mean over
    seeds ± standard error, one line per label (method or cell) in ``labels``' order; ``metadata``: the
    PNG's text entries."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from svpg.stats import mean_se_rows

    estimators = sorted({e for _, e in summary}, key=ESTIMATORS.index)
    fig, axes = plt.subplots(2, len(estimators), figsize=(6 * len(estimators), 8), squeeze=False)
    for col, est in enumerate(estimators):
        for row, metric in enumerate(("max", "mean")):
            ax = axes[row][col]
            for name in labels:
                if (name, est) not in summary:
                    continue
                y = summary[(name, est)][metric]
                x = range(1, y.shape[0] + 1)
                mu, se = mean_se_rows(y, axis=1)
                (line,) = ax.plot(x, mu, label=f"{name}, {y.shape[1]} seeds", lw=1.5)
                ax.fill_between(x, mu - se, mu + se, color=line.get_color(), alpha=0.2, lw=0)
            ax.set_title(f"{task}, {est}: {metric} over particles (mean ± s.e. over seeds)")
            ax.set_xlabel("iteration")
            ax.set_ylabel("average return")
            ax.legend()
    fig.tight_layout()
    try:
        atomic_write(Path(path), lambda tmp: fig.savefig(tmp, format="png", dpi=110, metadata=metadata))
    finally:
        plt.close(fig)


def add_training_options(parser, skip: tuple[str, ...] = HARNESS_FIELDS) -> None:
    """Every option of ``train.py`` except ``skip`` (which the harness sets per run), to override the preset."""
    from svpg.cli import add_dataclass_arguments
    from svpg.rl.config import SVPGConfig

    overridable = parser.add_argument_group(
        "training options overriding the preset (as in train.py; the defaults shown are train.py's, the preset's "
        "values apply to every option not given)"
    )
    add_dataclass_arguments(overridable, SVPGConfig, skip=skip)


def typed_overrides(parser, argv: list[str], args, own: set[str]) -> dict:
    """The training options typed on the command line (not the harness's own ``own``), JSON-like for Ray."""
    from svpg.cli import explicit_options

    overrides = {name: getattr(args, name) for name in explicit_options(parser, argv) if name not in own}
    return {k: list(v) if isinstance(v, tuple) else v for k, v in overrides.items()}


def run_grid(
    prog: str,
    jobs: list[dict],
    out: Path,
    backend: str,
    workers: int,
    fn: str = "svpg.studies.experiments:train_batch",
    gpus: float | None = None,
) -> int:
    """Validate every job's configuration, then train the unfinished seeds of every job (one seed batch
    each) with :func:`svpg.grid.run_jobs`; 0, or 2 after a one-line error.

    :param gpus: GPUs per Ray trial (``--gpus-per-job``; default: one if the runs train on CUDA)."""
    from svpg.rl.config import SVPGConfig, load_preset

    devices = set()
    try:
        for job in jobs:
            config = SVPGConfig(**(load_preset(job["task"]) | job["overrides"] | {"method": job["method"]})).validate()
            devices.add(config.device)
        out.mkdir(parents=True, exist_ok=True)
        from svpg.runs import RunLock

        lock = RunLock(out).acquire()  # one grid driver per output folder
    except (ValueError, OSError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    try:
        return _run_locked(prog, jobs, out, backend, workers, fn, devices, gpus)
    finally:
        lock.release()


def _run_locked(prog, jobs, out, backend, workers, fn, devices, gpus) -> int:
    pending = {id(j): sum(map(len, unfinished(j).values())) for j in jobs}
    runs, todo = sum(len(j["seeds"]) for j in jobs), sum(pending.values())
    if backend == "local":  # Ray restores its experiment from the full grid and skips finished trials itself
        jobs = [j for j in jobs if pending[id(j)]]
    print(
        f"{counted(runs, 'run')}, {runs - todo} already finished; running {todo} in seed batches on "
        f"{counted(workers, f'{backend} worker')}"
    )
    # `kill` (SIGTERM) must not orphan the workers: exiting through the `with` stops them, and every run
    # resumes from its last checkpoint next time
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return _run_with_bar(prog, jobs, out, backend, workers, fn, devices, gpus)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run_with_bar(prog, jobs, out, backend, workers, fn, devices, gpus) -> int:
    from tqdm import tqdm

    with tqdm(total=len(jobs), unit="batch") as bar:

        def done(job: dict, result: dict) -> None:
            bar.write(f"{job_label(job)} {job['estimator']} seeds {job['seeds']}: {result.get('seconds', 0):.0f} s")
            bar.update(1)

        try:
            run_jobs(
                fn,
                jobs,
                backend=backend,
                workers=workers,
                storage=out / ".ray",
                on_done=done,
                gpus_per_job=max((gpus_per_job(gpus, d) for d in devices), default=0.0),
            )
        except ValueError as e:
            print(f"{prog}: error: {e}", file=sys.stderr)
            return 2
        except (KeyboardInterrupt, SystemExit) as e:  # Ctrl-C, SIGTERM (workers signalled too save and leave)
            bar.close()
            print(
                f"{prog}: interrupted; every run keeps its last checkpoint, and the same command resumes the grid",
                file=sys.stderr,
            )
            if not isinstance(e, SystemExit):
                return 130
            if isinstance(e.code, int):  # our SIGTERM handler's 143
                return e.code
            # as the interpreter ends on SystemExit: None is success, a message is printed and ends with 1
            if e.code is not None:
                print(e.code, file=sys.stderr)
            return 0 if e.code is None else 1
    return 0


def main(argv: list[str] | None = None) -> int:
    from svpg.cli import Parser

    p = Parser(prog="python -m svpg.studies.experiments", description=__doc__)
    p.add_argument("--task", choices=PAPER_TASKS, required=True)
    p.add_argument(
        "--num-seeds",
        deprecated=("--seeds",),
        dest="seeds",
        type=int,
        default=5,
        help="seeds 0 … N−1 of every (method, estimator) (default: 5)",
    )
    p.add_argument("--methods", default=",".join(POLICY_METHODS))
    p.add_argument("--estimators", default=",".join(ON_POLICY_ESTIMATORS))
    add_backend_arguments(p, "seed batches", shared="--out", default="local")
    p.add_argument("--out", default=None, help="output folder (default: runs/repro-<task>)")
    p.add_argument("--report-only", action="store_true", help="only rebuild the CSV, PNG and table")
    add_training_options(p)
    argv = sys.argv[1:] if argv is None else argv
    args = p.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    estimators = [e for e in args.estimators.split(",") if e]
    bad = [m for m in methods if m not in POLICY_METHODS] + [e for e in estimators if e not in ESTIMATORS]
    if bad or args.seeds < 1:
        print(
            f"{p.prog}: error: unknown method/estimator {bad} (choose from {', '.join(POLICY_METHODS)} and "
            f"{', '.join(ESTIMATORS)}), or --num-seeds below 1",
            file=sys.stderr,
        )
        return 2
    out = Path(args.out or f"runs/repro-{args.task}")
    overrides = typed_overrides(p, argv, args, OWN_OPTIONS)
    t0 = time.perf_counter()
    if not args.report_only:
        status = run_grid(
            p.prog,
            plan(out, args.task, methods, estimators, args.seeds, overrides),
            out,
            args.backend,
            args.jobs,
            gpus=args.gpus_per_job,
        )
        if status:
            return status
    wall = time.perf_counter() - t0
    keys = [(m, e, s) for e in estimators for m in methods for s in range(args.seeds)]
    rows = collect(out, keys)
    if not rows:
        print("no finished iterations to report yet", file=sys.stderr)
        return 1
    write_csv(out / "curves.csv", rows)
    summary = summarise(rows)
    plot(summary, out / "curves.png", args.task)
    print(write_table(summary, out / "results.md", args.task, None if args.report_only else wall))
    atomic_write(
        out / "invocation.json",
        lambda tmp: Path(tmp).write_text(json.dumps({"argv": sys.argv, "wall_clock_s": wall}, indent=2)),
    )
    print(f"wrote {out / 'curves.csv'}, {out / 'curves.png'}, {out / 'results.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
