"""Does structure help policy search? An ablation of S²VGD's structural weight uncertainty against SVGD.

    python -m svpg.studies.ablation --task swingup --seeds 100-104                  # tuning stage: the whole grid
    python -m svpg.studies.ablation --task swingup --seeds 100-104 --select         # prints the winning cell
    python -m svpg.studies.ablation --task swingup --seeds 0-9 --cells <winner>,svgd,svgd-star   # report stage

S²VGD (Zhang, Li, Chen, Carin, AISTATS 2018, https://proceedings.mlr.press/v84/zhang18a.html, §5.4 and
Figure 4) reports that structural weight uncertainty, W = P Λ1 C Λ2 Qᵀ with K Householder reflections per
side (eqs. 10–13) under the matrix-variate Gaussian prior of eq. 14, converges faster and higher than plain
SVGD in Stein variational policy gradient (eqs. 17–19). This harness trains a grid of *cells* on one task's
preset, each with the paper's two estimators (REINFORCE and A2C; ``--estimators`` chooses others), and
compares every cell with plain SVGD seed by seed:

* ``s2vgd-K<k>-<prior>-a<α>`` for K in ``--householders``, prior in ``--priors`` (``flat``, or ``mvg``: eq. 14
  with Inv-Gamma hyperpriors) and the temperature α of eq. 18 in ``--alphas``;
* the controls ``svgd`` (plain dense layers, SVPG) and ``svgd-star`` (dense layers widened to the parameter
  count of S²VGD with K = 4, the paper's SVGD*), at the preset's prior and α.

A cell name is ``<method>[-K<k>][-flat|-mvg][-a<α>]``; a part left out takes the preset's value, so
``svgd-mvg-a1000`` is a control under the eq. 14 prior. ``--cells`` runs exactly the cells named instead of
the grid. The seeds of a (cell, estimator) train as one seed batch (``train.py --num-seeds``), one job
each, on ``--jobs`` local processes or as Ray Tune trials (:mod:`svpg.grid`); run folders are
``<cell>__<estimator>__seed<s>`` under ``--out``, finished runs are skipped and interrupted ones resume
from their last checkpoint, exactly as in :mod:`svpg.studies.experiments`. Every training option of
``train.py`` except the cell's own (``--householder``, ``--prior``, ``--alpha``) overrides the preset for
all runs. Writes to ``--out``:

* ``results.md``  returns, convergence, diversity and cost per cell × estimator, and paired differences
  to ``--reference`` (plain ``svgd``) with 95 % t-intervals,
* ``cells.csv``   the same numbers, one row per cell × estimator; ``seeds.csv``: one row per run,
* ``curves.csv``  per-iteration returns of every run; ``curves.png``: the best structural cell against
  the controls, mean ± std over seeds, as the paper's Figure 4,
* ``timing/``     wall-clock of every training call (seconds and iterations per seed batch).

This module trains; :mod:`svpg.studies.ablation_analysis` turns the run folders into those tables and figures;
the cells and the files of a cell are :mod:`svpg.studies.ablation_cells`.

Definitions (also in docs/rl.md, "Structure ablation"), per run, on the curves smoothed by a trailing
``--window``-iteration mean: *best* = max over particles of each particle's average episode return (the
SVPG paper's metric), *mean* = mean over particles; *peak* = the highest smoothed value, *final* = the
mean of the last ``--window`` iterations; *iterations to τ* = the first iteration whose smoothed best
return is ≥ τ (``--threshold``); *θ distance* = mean pairwise Euclidean distance of the particles' θ;
*action KL* = mean over particle pairs and a fixed set of states of the symmetrised KL
½[KL(π_i‖π_j) + KL(π_j‖π_i)] between their action distributions; *action-mean distance* = the same mean
of ‖μ_i(s) − μ_j(s)‖ between the Gaussian action means.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

from svpg.grid import add_backend_arguments
from svpg.io import atomic_write
from svpg.rl.config import ESTIMATORS, PAPER_ESTIMATORS, PAPER_TASKS
from svpg.stats import parse_range_list
from svpg.studies import experiments
from svpg.studies.ablation_analysis import THRESHOLD, WINDOW
from svpg.studies.ablation_cells import CELL_FORM, CONTROLS, PRIOR_NAMES, Cell, timing_file
from svpg.studies.experiments import finished_iterations, job_label, run_folder, unfinished

#: config fields a cell sets; typed as training options they are refused with the grid flag to use instead
CELL_FIELDS = {
    "householder": "--householders or --cells",
    "prior": "--priors or --cells",
    "alpha": "--alphas or --cells",
    "method": "--cells",
    "estimator": "--estimators",
    "seed": "--seeds",
    "num_seeds": "--seeds",
}
OWN_OPTIONS = {
    "task",
    "seeds",
    "cells",
    "householders",
    "priors",
    "alphas",
    "estimators",
    "reference",
    "window",
    "threshold",
    "select",
    "report_only",
    "jobs",
    "out",
    "backend",
    "gpus_per_job",
}
ALPHA_FACTORS = (0.3, 1.0, 3.0)  # the default --alphas: the preset's α times these


# -- cells ---------------------------------------------------------------------------------------
def grid_cells(householders, priors, alphas) -> list[Cell]:
    """The tuning grid: every s2vgd (K, prior, α), then the controls at the preset's prior and α."""
    structural = [Cell("s2vgd", k, p, float(a)) for k in householders for p in priors for a in alphas]
    return structural + [Cell(c) for c in CONTROLS]


def default_alphas(preset_alpha: float) -> list[float]:
    """A 3-value grid around the preset's α (× 0.3, 1, 3), rounded to 4 significant digits."""
    return [float(f"{preset_alpha * f:.4g}") for f in ALPHA_FACTORS]


# -- command-line values -------------------------------------------------------------------------
def parse_seeds(text: str) -> list[int]:
    """``100-104`` → [100, …, 104]; ranges and single seeds may be joined by commas (``0-4,7``)."""
    return parse_range_list(text, "--seeds")


def parse_cells(text: str) -> list[Cell]:
    names = [n for n in text.replace(" ", "").split(",") if n]
    if not names:
        raise ValueError(f"--cells {text!r} names no cell: expected {CELL_FORM}")
    cells = []
    for name in names:
        try:
            cell = Cell.parse(name)
        except ValueError as e:
            raise ValueError(f"--cells: {e}") from None
        if cell not in cells:
            cells.append(cell)
    return cells


def _list(flag: str, text: str, convert, allowed=None) -> list:
    values = []
    for item in (v for v in text.replace(" ", "").split(",") if v):
        try:
            value = convert(item)
        except ValueError:
            value = None
        if value is None or (allowed is not None and value not in allowed):
            hint = (
                f"choose from {', '.join(map(str, allowed))}"
                if allowed is not None
                else "expected a comma-separated list"
            )
            raise ValueError(f"{flag} {text!r}: {item!r} is not valid ({hint})")
        values.append(value)
    if not values:
        raise ValueError(f"{flag} {text!r} is empty")
    return values


def _positive_float(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) and value > 0 else None


def _count(text: str) -> int | None:
    value = int(text)
    return value if value >= 0 else None


def parse_threshold(text: str) -> tuple[str, float]:
    """``90%`` → ("fraction", 0.9); ``400`` → ("return", 400.0)."""
    try:
        if text.endswith("%"):
            value = float(text[:-1]) / 100
            if 0 < value <= 1:
                return "fraction", value
        else:
            value = float(text)
            if math.isfinite(value):
                return "return", value
    except ValueError:
        pass
    raise ValueError(f"--threshold {text!r}: give a return such as 400, or a percentage in (0, 100] such as 90%")


# -- the plan and the jobs ------------------------------------------------------------------------
def plan(out: Path, task: str, cells: list[Cell], estimators, seeds: list[int], overrides: dict) -> list[dict]:
    """One job per (cell, estimator): its seeds as one seed batch, A2C first (as :func:`experiments.plan`).
    A job is the experiments harness's job with the cell's name (its run folders' label) and settings.
    ``out`` is made absolute: Ray Tune starts each trial in a folder of its own."""
    out_dir = str(Path(out).resolve())
    jobs = [
        {
            "out": out_dir,
            "task": task,
            "method": c.method,
            "cell": c.name,
            "estimator": e,
            "seeds": list(seeds),
            "overrides": overrides | c.settings(),
        }
        for e in estimators
        for c in cells
    ]
    return experiments.a2c_first(jobs)


def train_cell(job: dict, report=None) -> dict:
    """:func:`experiments.train_batch`, timed: appends {seeds, iterations, seconds} of the training it did
    to the job's timing file (one job per file, so concurrent workers never share one)."""
    out, cell, estimator = Path(job["out"]), job_label(job), job["estimator"]
    groups = unfinished(job)
    result = experiments.train_batch(job, report)
    # seed groups resumed from different checkpoints train one after another: count each group's iterations
    done = sum(
        finished_iterations(run_folder(out, cell, estimator, seeds[0])) - at for (_, at), seeds in groups.items()
    )
    if done > 0:  # appended by rewriting the file atomically: a kill never leaves a torn line
        path = timing_file(out, cell, estimator)
        before = path.read_text() if path.exists() else ""
        line = json.dumps({"seeds": job["seeds"], "iterations": done, "seconds": result["seconds"]}) + "\n"
        atomic_write(path, lambda tmp: Path(tmp).write_text(before + line))
    return {**result, "iterations": done}


# -- the command line -------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    from svpg.cli import Parser
    from svpg.rl.config import load_preset
    from svpg.studies import ablation_analysis as analysis

    p = Parser(prog="python -m svpg.studies.ablation", description=__doc__, allow_abbrev=False)
    p.add_argument("--task", choices=PAPER_TASKS, required=True)
    p.add_argument(
        "--seeds",
        required=True,
        help="the seeds of every cell, as one seed batch per cell and estimator: "
        "a range such as 100-104 (tuning) or 0-9 (report), or a list such as 0-4,7",
    )
    p.add_argument(
        "--cells", default=None, help=f"run exactly these comma-separated cells instead of the grid ({CELL_FORM})"
    )
    p.add_argument("--householders", default="1,2,4", help="the grid's K values (default: 1,2,4)")
    p.add_argument(
        "--priors", default=",".join(PRIOR_NAMES), help="the grid's priors: flat, mvg (eq. 14) (default: flat,mvg)"
    )
    p.add_argument("--alphas", default=None, help="the grid's temperatures α (default: the preset's α × 0.3, 1, 3)")
    p.add_argument(
        "--estimators",
        default=",".join(PAPER_ESTIMATORS),
        help=f"comma-separated, from {', '.join(ESTIMATORS)} (default: the paper's, %(default)s)",
    )
    p.add_argument(
        "--reference", default="svgd", help="the cell every other is compared with, seed by seed (default: svgd)"
    )
    p.add_argument(
        "--window",
        type=int,
        default=WINDOW,
        help="iterations of the trailing mean that smooths every curve (default: 10)",
    )
    p.add_argument(
        "--threshold",
        default=THRESHOLD,
        help="τ of 'iterations to τ': a return, or a percentage f: f of the way "
        "from the first iteration to the peak of the best control's seed-averaged best-particle curve, per "
        "estimator (default: 90%%)",
    )
    p.add_argument(
        "--select",
        action="store_true",
        help="train nothing; print the s2vgd cell with the highest peak "
        "best-particle return (mean over seeds, averaged over the estimators) once every run has finished",
    )
    p.add_argument("--report-only", action="store_true", help="train nothing; rebuild the tables and the figure")
    add_backend_arguments(p, "seed batches", shared="--out", default="local")
    p.add_argument("--out", default=None, help="output folder (default: runs/ablation-<task>)")
    experiments.add_training_options(p, skip=experiments.HARNESS_FIELDS + tuple(CELL_FIELDS))
    argv = sys.argv[1:] if argv is None else argv

    def fail(message: str) -> int:
        print(f"{p.prog}: error: {message}", file=sys.stderr)
        return 2

    for arg in argv:  # a cell's own options would be ambiguous: say which flag sets them
        field = arg.split("=", 1)[0][2:].replace("-", "_") if arg.startswith("--") else None
        if field in CELL_FIELDS:
            return fail(f"{arg.split('=', 1)[0]} is set per cell here: use {CELL_FIELDS[field]}")
    args = p.parse_args(argv)
    try:
        preset = load_preset(args.task)
        seeds = parse_seeds(args.seeds)
        estimators = _list("--estimators", args.estimators, str, ESTIMATORS)
        if args.cells is not None:
            cells = parse_cells(args.cells)
        else:
            alphas = _list("--alphas", args.alphas, _positive_float) if args.alphas else default_alphas(preset["alpha"])
            cells = grid_cells(
                _list("--householders", args.householders, _count),
                _list("--priors", args.priors, str, PRIOR_NAMES),
                alphas,
            )
        Cell.parse(args.reference)
        threshold = parse_threshold(args.threshold)
        if args.window < 1:
            raise ValueError(f"--window must be ≥ 1, got {args.window}")
    except ValueError as e:
        return fail(str(e))
    out = Path(args.out or f"runs/ablation-{args.task}")
    overrides = experiments.typed_overrides(p, argv, args, OWN_OPTIONS)
    if args.select:
        return select(
            p.prog, out, args.task, cells, estimators, seeds, overrides, args.window, threshold, args.reference
        )
    t0 = time.perf_counter()
    if not args.report_only:
        jobs = plan(out, args.task, cells, estimators, seeds, overrides)
        print(
            f"{len(cells)} cells × {len(estimators)} estimators × {len(seeds)} seeds: {', '.join(c.name for c in cells)}"
        )
        status = experiments.run_grid(
            p.prog, jobs, out, args.backend, args.jobs, fn="svpg.studies.ablation:train_cell", gpus=args.gpus_per_job
        )
        if status:
            return status
    wall = time.perf_counter() - t0
    result = analysis.analyse(
        out, args.task, cells, estimators, seeds, overrides, args.window, threshold, args.reference
    )
    if result is None:
        print(f"no finished iterations in {out} to report yet", file=sys.stderr)
        return 1
    print(
        analysis.write_report(
            result,
            out,
            args.task,
            cells,
            seeds,
            estimators,
            args.reference,
            args.window,
            overrides,
            None if args.report_only else wall,
        )
    )
    invocation = json.dumps({"argv": sys.argv, "wall_clock_s": wall}, indent=2)
    atomic_write(out / "invocation.json", lambda tmp: Path(tmp).write_text(invocation))
    print(
        f"wrote {out / 'results.md'}, {out / 'cells.csv'}, {out / 'seeds.csv'}, {out / 'curves.csv'}, {out / 'curves.png'}"
    )
    return 0


def select(prog: str, out: Path, task: str, cells, estimators, seeds, overrides, window, threshold, reference) -> int:
    """Print the winning s2vgd cell (stdout: its name only, for the report stage's --cells) and the
    ranking (stderr); refuses while any run of the plan is unfinished."""
    from svpg.studies.ablation_analysis import analyse, seeds_text

    jobs = plan(out, task, cells, estimators, seeds, overrides)
    missing = sum(len(s) for j in jobs for s in unfinished(j).values())
    if missing:
        print(
            f"{prog}: error: {missing} of {len(cells) * len(estimators) * len(seeds)} runs in {out} are unfinished: "
            f"run the same command without --select first",
            file=sys.stderr,
        )
        return 1
    result = analyse(out, task, cells, estimators, seeds, overrides, window, threshold, reference)
    scores: dict[str, float] = result["scores"] if result else {}
    if not scores:
        print(f"{prog}: error: no s2vgd cell among --cells / the grid to select from", file=sys.stderr)
        return 2
    ranked = sorted(scores, key=scores.__getitem__, reverse=True)
    print(
        f"peak best-particle return, mean over seeds {seeds_text(seeds)}, averaged over {', '.join(estimators)}:",
        file=sys.stderr,
    )
    for name in ranked:
        print(f"  {name:28s} {scores[name]:10.1f}", file=sys.stderr)
    print(ranked[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
