"""Does structure help policy search? An ablation of S²VGD's structural weight uncertainty against SVGD.

    python -m svpg.rl.ablation --task swingup --seeds 100-104                  # tuning stage: the whole grid
    python -m svpg.rl.ablation --task swingup --seeds 100-104 --select         # prints the winning cell
    python -m svpg.rl.ablation --task swingup --seeds 0-9 --cells <winner>,svgd,svgd-star   # report stage

S²VGD (Zhang, Li, Chen, Carin, AISTATS 2018, https://proceedings.mlr.press/v84/zhang18a.html, §5.4 and
Figure 4) reports that structural weight uncertainty, W = P Λ1 C Λ2 Qᵀ with K Householder reflections per
side (eqs. 10–13) under the matrix-variate Gaussian prior of eq. 14, converges faster and higher than plain
SVGD in Stein variational policy gradient (eqs. 17–19). This harness trains a grid of *cells* on one task's
preset, each with both estimators, and compares every cell with plain SVGD seed by seed:

* ``s2vgd-K<k>-<prior>-a<α>`` for K in ``--householders``, prior in ``--priors`` (``flat``, or ``mvg``: eq. 14
  with Inv-Gamma hyperpriors) and the temperature α of eq. 18 in ``--alphas``;
* the controls ``svgd`` (plain dense layers, SVPG) and ``svgd-star`` (dense layers widened to the parameter
  count of S²VGD with K = 4, the paper's SVGD*), at the preset's prior and α.

A cell name is ``<method>[-K<k>][-flat|-mvg][-a<α>]``; a part left out takes the preset's value, so
``svgd-mvg-a1000`` is a control under the eq. 14 prior. ``--cells`` runs exactly the cells named instead of
the grid. The seeds of a (cell, estimator) train as one seed batch (``train.py --num-seeds``), one job
each, on ``--jobs`` local processes or as Ray Tune trials (:mod:`svpg.grid`); run folders are
``<cell>__<estimator>__seed<s>`` under ``--out``, finished runs are skipped and interrupted ones resume
from their last checkpoint, exactly as in :mod:`svpg.rl.experiments`. Every training option of
``train.py`` except the cell's own (``--householder``, ``--prior``, ``--alpha``) overrides the preset for
all runs. Writes to ``--out``:

* ``results.md``  returns, convergence, diversity and cost per cell × estimator, and paired differences
  to ``--reference`` (plain ``svgd``) with 95 % t-intervals,
* ``cells.csv``   the same numbers, one row per cell × estimator; ``seeds.csv``: one row per run,
* ``curves.csv``  per-iteration returns of every run; ``curves.png``: the best structural cell against
  the controls, mean ± std over seeds, as the paper's Figure 4,
* ``timing/``     wall-clock of every training call (seconds and iterations per seed batch).

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

import csv
import json
import math
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from svpg.grid import add_backend_arguments
from svpg.rl import experiments
from svpg.rl.config import ESTIMATORS, METHODS, TASKS
from svpg.rl.experiments import finished_iterations, job_label, run_folder, unfinished
from svpg.stats import mean_se, paired_difference, parse_range_list

#: config fields a cell sets; typed as training options they are refused with the grid flag to use instead
CELL_FIELDS = {"householder": "--householders or --cells", "prior": "--priors or --cells", "alpha": "--alphas or --cells",
               "method": "--cells", "estimator": "--estimators", "seed": "--seeds", "num_seeds": "--seeds"}
OWN_OPTIONS = {"task", "seeds", "cells", "householders", "priors", "alphas", "estimators", "reference", "window",
               "threshold", "select", "report_only", "jobs", "out", "backend", "gpus_per_job"}
CONTROLS = ("svgd", "svgd-star")
PRIOR_NAMES = ("flat", "mvg")  # svpg.core.priors.PRIORS; fixed here so that cell names parse the same everywhere
ALPHA_FACTORS = (0.3, 1.0, 3.0)  # the default --alphas: the preset's α times these
METRICS = ("peak_best", "final_best", "peak_mean", "final_mean")  # compared with the reference, seed by seed
DIVERSITY = ("theta_distance", "action_kl", "action_mean_distance")
STATE_ENVS, STATE_EVERY = 20, 10  # the fixed states: 20 random-action episodes, every 10th step


# -- cells ---------------------------------------------------------------------------------------
def format_alpha(alpha: float) -> str:
    """α as written in a cell name: ``1000``, ``0.5``; exact, so that the name parses back to the same α."""
    return str(int(alpha)) if float(alpha).is_integer() and abs(alpha) < 1e15 else repr(float(alpha))


_METHOD = "|".join(re.escape(m) for m in sorted(METHODS, key=len, reverse=True))  # svgd-star before svgd
_CELL = re.compile(rf"^(?P<method>{_METHOD})(?:-K(?P<k>\d+))?(?:-(?P<prior>{'|'.join(PRIOR_NAMES)}))?"
                   r"(?:-a(?P<alpha>[0-9][0-9.e+\-]*))?$")
CELL_FORM = "<method>[-K<k>][-flat|-mvg][-a<alpha>], e.g. s2vgd-K2-mvg-a1000, svgd or svgd-star"


@dataclass(frozen=True)
class Cell:
    """One setting of the ablation; None takes the preset's value (K: the config's default, 1)."""

    method: str
    householder: int | None = None  # K of eqs. 10–13, s2vgd only
    prior: str | None = None  # flat | mvg (eq. 14)
    alpha: float | None = None  # temperature α of eq. 18

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r} (choose from {', '.join(METHODS)})")
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
            hint = f"choose from {', '.join(map(str, allowed))}" if allowed is not None else "expected a comma-separated list"
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
    out = str(Path(out).resolve())
    jobs = [{"out": out, "task": task, "method": c.method, "cell": c.name, "estimator": e, "seeds": list(seeds),
             "overrides": overrides | c.settings()} for e in estimators for c in cells]
    return experiments.a2c_first(jobs)


def timing_file(out: Path, cell: str, estimator: str) -> Path:
    return Path(out) / "timing" / f"{cell}__{estimator}.jsonl"


def train_cell(job: dict, report=None) -> dict:
    """:func:`experiments.train_batch`, timed: appends {seeds, iterations, seconds} of the training it did
    to the job's timing file (one job per file, so concurrent workers never share one)."""
    out, cell, estimator = Path(job["out"]), job_label(job), job["estimator"]
    groups = unfinished(job)
    result = experiments.train_batch(job, report)
    # seed groups resumed from different checkpoints train one after another: count each group's iterations
    done = sum(finished_iterations(run_folder(out, cell, estimator, seeds[0])) - at for (_, at), seeds in groups.items())
    if done > 0:
        path = timing_file(out, cell, estimator)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as f:
            f.write(json.dumps({"seeds": job["seeds"], "iterations": done, "seconds": result["seconds"]}) + "\n")
    return {**result, "iterations": done}


def seconds_per_iteration(out: Path, cell: str, estimator: str, seeds: list[int]) -> float:
    """Wall-clock seconds per iteration of the cell's seed batch, over the recorded training of these
    seeds (NaN if none was recorded, e.g. runs copied from elsewhere)."""
    path = timing_file(out, cell, estimator)
    if not path.exists():
        return math.nan
    seconds = iterations = 0.0
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # a line torn by a kill
            continue
        if set(record["seeds"]) <= set(seeds):
            seconds, iterations = seconds + record["seconds"], iterations + record["iterations"]
    return seconds / iterations if iterations else math.nan


# -- per-run metrics ----------------------------------------------------------------------------------
def smooth(y, window: int):
    """Trailing means of ``window`` iterations (shorter curves: one window over all of it); entry i
    ends at iteration i + w (1-based)."""
    import numpy as np

    w = min(window, len(y))
    return np.convolve(np.asarray(y, float), np.ones(w) / w, mode="valid"), w


def curve_metrics(mean, best, window: int, threshold: float | None) -> dict:
    """Peak and final returns (best particle, mean over particles) and iterations to the threshold."""
    import numpy as np

    sm_mean, _ = smooth(mean, window)
    sm_best, w = smooth(best, window)
    hit = np.flatnonzero(sm_best >= threshold) if threshold is not None else []
    return {"iterations": len(best), "peak_best": float(sm_best.max()), "final_best": float(np.mean(best[-w:])),
            "peak_mean": float(sm_mean.max()), "final_mean": float(np.mean(mean[-w:])),
            "iterations_to_threshold": float(hit[0] + w) if len(hit) else math.nan}


def probe_states(env_id: str, horizon: int, seed: int = 0):
    """The fixed states at which action distributions are compared: every 10th state of 20 episodes of
    uniformly random actions from the task's start distribution (the same for every cell and run)."""
    import torch

    from svpg import envs
    from svpg.seeding import int_seed, torch_generator

    env = envs.make_batched(env_id, STATE_ENVS, max_episode_steps=horizon)
    obs = env.reset(seed=int_seed(seed, "ablation_states"))
    noise = torch_generator(seed, "ablation_states", "actions")
    space, kept = env.single_action_space, []
    for t in range(horizon):
        if t % STATE_EVERY == 0:
            kept.append(obs.clone())
        if env.is_discrete:
            actions = torch.randint(int(space.n), (STATE_ENVS,), generator=noise)
        else:
            low, high = torch.as_tensor(space.low), torch.as_tensor(space.high)
            actions = low + (high - low) * torch.rand((STATE_ENVS, *space.shape), generator=noise)
        obs = env.step(actions.to(env.dtype) if not env.is_discrete else actions).obs
    return torch.cat(kept)


def diversity(run_dir: Path, states) -> dict:
    """θ distance, action KL and action-mean distance of the run's newest particles (module docstring)."""
    import torch

    from svpg.rl.policies import load_policy

    policy = load_policy(run_dir)
    theta = policy.theta.detach()
    m = theta.shape[0]
    pairs = max(m * (m - 1), 1)  # the diagonal terms are 0
    out = {"parameters": theta.shape[1], "theta_distance": float(torch.cdist(theta, theta).sum() / pairs)}
    with torch.no_grad():
        weights = policy.fast_weights(theta)
        obs = states.to(theta.dtype).expand(m, *states.shape)
        if policy.spec.discrete:
            logp = torch.log_softmax(policy.net.fast_forward(weights[0], obs), -1)  # (M, N, A)
            p, lp = logp.exp().unsqueeze(1), logp.unsqueeze(1)
            kl = 0.5 * ((p - p.transpose(0, 1)) * (lp - lp.transpose(0, 1))).sum(-1)
            out |= {"action_kl": float(kl.mean((-1,)).sum() / pairs), "action_mean_distance": math.nan}
        else:
            mu = policy.mode(weights, obs)  # (M, N, A)
            var = (2 * weights[1]).exp()[:, None, :]  # (M, 1, A): a state-independent std per particle
            d2 = (mu.unsqueeze(1) - mu.unsqueeze(0)) ** 2  # (M, M, N, A)
            vi, vj = var.unsqueeze(1), var.unsqueeze(0)
            kl = ((vi + d2) / (4 * vj) + (vj + d2) / (4 * vi) - 0.5).sum(-1)  # ½[KL(i‖j) + KL(j‖i)] per state
            out |= {"action_kl": float(kl.mean(-1).sum() / pairs),
                    "action_mean_distance": float(d2.sum(-1).sqrt().mean(-1).sum() / pairs)}
    return out


# -- the report ---------------------------------------------------------------------------------------
def run_curves(rows: list[dict]) -> dict:
    """(cell, estimator) → {seed: (mean curve, best curve)}, every seed cut to the cell's shortest run."""
    groups: dict = {}
    for r in sorted(rows, key=lambda r: r["iteration"]):
        curves = groups.setdefault((r["cell"], r["estimator"]), {}).setdefault(r["seed"], ([], []))
        curves[0].append(r["mean"])
        curves[1].append(r["max"])
    for seeds in groups.values():
        n = min(len(c[0]) for c in seeds.values())
        for seed, (mean, best) in seeds.items():
            seeds[seed] = (mean[:n], best[:n])
    return groups


def thresholds(curves: dict, spec: tuple[str, float], window: int) -> tuple[dict, str]:
    """τ per estimator, and how it was set. A fraction f: τ = s + f (P − s), P the highest peak of a
    seed-averaged smoothed best-particle curve among the controls (all cells if no control ran), s that
    cell's seed-averaged best return at iteration 1."""
    import numpy as np

    kind, value = spec
    estimators = sorted({e for _, e in curves}, key=ESTIMATORS.index)
    if kind == "return":
        return {e: value for e in estimators}, f"τ = {value:g} (--threshold) for every estimator"
    taus, source, among = {}, [], "control"
    for e in estimators:
        keys = [k for k in curves if k[1] == e and Cell.parse(k[0]).method in CONTROLS]
        if not keys:
            keys, among = [k for k in curves if k[1] == e], "cell (no control ran)"
        best = None
        for key in keys:
            n = min(len(c[1]) for c in curves[key].values())
            avg = np.mean([c[1][:n] for c in curves[key].values()], axis=0)
            peak = smooth(avg, window)[0].max()
            if best is None or peak > best[0]:
                best = (peak, avg[0], key[0])
        peak, start, cell = best
        taus[e] = float(start + value * (peak - start))
        source.append(f"{e} {taus[e]:.1f} ({cell}: {start:.1f} → {peak:.1f})")
    text = (f"τ = {value:.0%} of the way from the first iteration's to the peak of the seed-averaged best-particle "
            f"curve of the best {among}: " + "; ".join(source))
    return taus, text


def selection_scores(per_run: dict, estimators) -> dict:
    """--select's rule: per s2vgd cell with every estimator, the mean over estimators of the mean over
    seeds of the peak best-particle return."""
    scores = {}
    for cell in {c for c, _ in per_run}:
        if Cell.parse(cell).method != "s2vgd" or any((cell, e) not in per_run for e in estimators):
            continue
        scores[cell] = sum(mean_se([r["peak_best"] for r in per_run[(cell, e)].values()])[0] for e in estimators) / len(estimators)
    return scores


def analyse(out: Path, task: str, cells: list[Cell], estimators, seeds: list[int], overrides: dict,
            window: int, threshold: tuple[str, float], reference: str) -> dict | None:
    """Everything the report shows, from the run folders under ``out`` (None: nothing finished yet)."""
    from svpg.rl.config import default_horizon, load_preset

    keys = [(c.name, e, s) for e in estimators for c in cells for s in seeds]
    rows = experiments.collect(out, keys, label="cell")
    if not rows:
        return None
    curves = run_curves(rows)
    taus, tau_text = thresholds(curves, threshold, window)
    config = load_preset(task) | overrides
    states = probe_states(config["env_id"], config.get("horizon") or default_horizon(config["env_id"]))
    per_run: dict = {}
    for (cell, e), runs in curves.items():
        for seed, (mean, best) in runs.items():
            metrics = curve_metrics(mean, best, window, taus[e])
            metrics |= diversity(run_folder(out, cell, e, seed), states)
            per_run.setdefault((cell, e), {})[seed] = metrics
    order = {c.name: i for i, c in enumerate(cells)}
    table = []
    for (cell, e), runs in sorted(per_run.items(), key=lambda kv: (ESTIMATORS.index(kv[0][1]), order[kv[0][0]])):
        c = Cell.parse(cell)
        row = {"task": task, "cell": cell, "method": c.method, "K": "" if c.householder is None else c.householder,
               "prior": c.prior or "", "alpha": "" if c.alpha is None else c.alpha, "estimator": e,
               "parameters": next(iter(runs.values()))["parameters"], "seeds": len(runs),
               "iterations": next(iter(runs.values()))["iterations"]}
        for m in (*METRICS, "iterations_to_threshold", *DIVERSITY):
            row[m], row[f"{m}_se"] = mean_se([r[m] for r in runs.values()])
        row["threshold"] = taus[e]
        row["reached"] = sum(math.isfinite(r["iterations_to_threshold"]) for r in runs.values())
        row["seconds_per_iteration"] = seconds_per_iteration(out, cell, e, seeds)
        ref = per_run.get((reference, e)) if cell != reference else None
        row["pairs"] = len(set(runs) & set(ref)) if ref else 0
        for m in METRICS:
            _, d, lo, hi = (paired_difference({s: r[m] for s, r in runs.items()}, {s: r[m] for s, r in ref.items()})
                            if ref else (0, math.nan, math.nan, math.nan))
            row |= {f"d_{m}": d, f"d_{m}_lo": lo, f"d_{m}_hi": hi}
        table.append(row)
    scores = selection_scores(per_run, estimators)
    return {"rows": rows, "per_run": per_run, "table": table, "tau_text": tau_text, "scores": scores,
            "summary": experiments.summarise(rows, label="cell")}


def _pm(mean: float, se: float, digits: int = 1) -> str:
    if not math.isfinite(mean):
        return "—"
    return f"{mean:.{digits}f}" + (f" ± {se:.{digits}f}" if math.isfinite(se) else "")


def _sig(x: float) -> str:
    return f"{x:.3g}" if math.isfinite(x) else "—"


def _interval(d: float, lo: float, hi: float) -> str:
    if not math.isfinite(d):
        return "—"
    return f"{d:+.1f}" + (f" [{lo:+.1f}, {hi:+.1f}]" if math.isfinite(lo) else "")


def write_report(result: dict, out: Path, task: str, seeds: list[int], estimators, reference: str, window: int,
                 overrides: dict, wall: float | None) -> str:
    table = result["table"]
    with open(out / "cells.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    per_run = [{"cell": c, "estimator": e, "seed": s, **m} for (c, e), runs in result["per_run"].items() for s, m in runs.items()]
    with open(out / "seeds.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(per_run[0]))
        writer.writeheader()
        writer.writerows(per_run)
    shown = ", ".join(f"--{k.replace('_', '-')} {','.join(map(str, v)) if isinstance(v, list) else v}" for k, v in sorted(overrides.items()))
    iterations = sorted({r["iterations"] for r in table})
    lines = [
        f"# {task}: structure ablation",
        "",
        (f"Seeds {seeds_text(seeds)}; the `{task}` preset{' with ' + shown if shown else ''}; "
        f"{' or '.join(map(str, iterations))} iterations. Mean ± standard error over seeds. Curves smoothed by a "
        f"trailing {window}-iteration mean: *best* = max over particles of each particle's average return, *mean* = "
        "mean over particles; *peak* = the highest smoothed value, *final* = the mean of the last "
        f"{window} iterations. Definitions: docs/rl.md, \"Structure ablation\"."),
        "",
        ("| cell | estimator | D | seeds | peak best | final best | peak mean | final mean | iterations to τ (reached) "
        "| θ distance | action KL | action-mean distance | s / iteration |"),
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in table:
        lines.append(
            f"| {r['cell']} | {r['estimator']} | {r['parameters']} | {r['seeds']} | "
            + " | ".join(_pm(r[m], r[f"{m}_se"]) for m in ("peak_best", "final_best", "peak_mean", "final_mean"))
            + f" | {_pm(r['iterations_to_threshold'], r['iterations_to_threshold_se'], 0)} ({r['reached']}/{r['seeds']}) | "
            + " | ".join(_sig(r[m]) for m in DIVERSITY) + f" | {_sig(r['seconds_per_iteration'])} |")
    lines += ["", result["tau_text"] + "."]
    compared = [r for r in table if r["pairs"]]
    if compared:
        lines += ["", f"## Paired differences to {reference}", "",
                  f"Cell − {reference} on the same seed: mean [95 % t-interval] over the seeds both have.", "",
                  "| cell | estimator | pairs | Δ peak best | Δ final best | Δ peak mean | Δ final mean |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        for r in compared:
            lines.append(f"| {r['cell']} | {r['estimator']} | {r['pairs']} | "
                         + " | ".join(_interval(r[f"d_{m}"], r[f"d_{m}_lo"], r[f"d_{m}_hi"]) for m in METRICS) + " |")
    else:
        lines += ["", f"No paired differences: the reference cell {reference} has no finished iterations here."]
    if result["scores"]:
        winner = max(result["scores"], key=result["scores"].get)
        lines += ["", (f"Best structural cell by --select's rule (peak best return, mean over seeds, averaged over "
                      f"{', '.join(estimators)}): {winner} ({result['scores'][winner]:.1f}).")]
    if len(iterations) > 1:
        lines += ["", "Cells differ in iterations: some runs are unfinished; compare only when every run has finished."]
    if wall is not None:
        lines += ["", f"Wall-clock of this invocation: {wall / 60:.1f} min."]
    text = "\n".join(lines) + "\n"
    (out / "results.md").write_text(text)
    return text


def seeds_text(seeds: list[int]) -> str:
    """[0, 1, 2, 7] → ``0–2, 7``."""
    parts, start = [], None
    for i, s in enumerate(seeds):
        start = s if start is None else start
        if i + 1 == len(seeds) or seeds[i + 1] != s + 1:
            parts.append(f"{start}–{s}" if s > start else f"{s}")
            start = None
    return ", ".join(parts)


def figure_labels(result: dict, cells: list[Cell]) -> list[str]:
    """The best structural cell (--select's rule on what has run) and the controls."""
    ran = {name for name, _ in result["summary"]}
    names = [c.name for c in cells if c.name in ran]
    controls = [n for n in names if Cell.parse(n).method != "s2vgd"]
    if result["scores"]:
        return [max(result["scores"], key=result["scores"].get), *controls]
    return names


# -- the command line -------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    from svpg.cli import Parser
    from svpg.rl.config import load_preset

    p = Parser(prog="python -m svpg.rl.ablation", description=__doc__, allow_abbrev=False)
    p.add_argument("--task", choices=TASKS, required=True)
    p.add_argument("--seeds", required=True, help="the seeds of every cell, as one seed batch per cell and estimator: "
                   "a range such as 100-104 (tuning) or 0-9 (report), or a list such as 0-4,7")
    p.add_argument("--cells", default=None, help=f"run exactly these comma-separated cells instead of the grid ({CELL_FORM})")
    p.add_argument("--householders", default="1,2,4", help="the grid's K values (default: 1,2,4)")
    p.add_argument("--priors", default=",".join(PRIOR_NAMES), help="the grid's priors: flat, mvg (eq. 14) (default: flat,mvg)")
    p.add_argument("--alphas", default=None, help="the grid's temperatures α (default: the preset's α × 0.3, 1, 3)")
    p.add_argument("--estimators", default=",".join(ESTIMATORS), help="(default: reinforce,a2c)")
    p.add_argument("--reference", default="svgd", help="the cell every other is compared with, seed by seed (default: svgd)")
    p.add_argument("--window", type=int, default=10, help="iterations of the trailing mean that smooths every curve (default: 10)")
    p.add_argument("--threshold", default="90%", help="τ of 'iterations to τ': a return, or a percentage f: f of the way "
                   "from the first iteration to the peak of the best control's seed-averaged best-particle curve, per "
                   "estimator (default: 90%%)")
    p.add_argument("--select", action="store_true", help="train nothing; print the s2vgd cell with the highest peak "
                   "best-particle return (mean over seeds, averaged over the estimators) once every run has finished")
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
            cells = grid_cells(_list("--householders", args.householders, _count),
                               _list("--priors", args.priors, str, PRIOR_NAMES), alphas)
        Cell.parse(args.reference)
        threshold = parse_threshold(args.threshold)
        if args.window < 1:
            raise ValueError(f"--window must be ≥ 1, got {args.window}")
    except ValueError as e:
        return fail(str(e))
    out = Path(args.out or f"runs/ablation-{args.task}")
    overrides = experiments.typed_overrides(p, argv, args, OWN_OPTIONS)
    if args.select:
        return select(p.prog, out, args.task, cells, estimators, seeds, overrides, args.window, threshold, args.reference)
    t0 = time.perf_counter()
    if not args.report_only:
        jobs = plan(out, args.task, cells, estimators, seeds, overrides)
        print(f"{len(cells)} cells × {len(estimators)} estimators × {len(seeds)} seeds: {', '.join(c.name for c in cells)}")
        status = experiments.run_grid(p.prog, jobs, out, args.backend, args.jobs, fn="svpg.rl.ablation:train_cell",
                                      gpus=args.gpus_per_job)
        if status:
            return status
    wall = time.perf_counter() - t0
    result = analyse(out, args.task, cells, estimators, seeds, overrides, args.window, threshold, args.reference)
    if result is None:
        print(f"no finished iterations in {out} to report yet", file=sys.stderr)
        return 1
    experiments.write_curves(result["rows"], out / "curves.csv")
    experiments.plot(result["summary"], out / "curves.png", args.task, labels=figure_labels(result, cells))
    print(write_report(result, out, args.task, seeds, estimators, args.reference, args.window, overrides,
                       None if args.report_only else wall))
    (out / "invocation.json").write_text(json.dumps({"argv": sys.argv, "wall_clock_s": wall}, indent=2))
    print(f"wrote {out / 'results.md'}, {out / 'cells.csv'}, {out / 'seeds.csv'}, {out / 'curves.csv'}, {out / 'curves.png'}")
    return 0


def select(prog: str, out: Path, task: str, cells, estimators, seeds, overrides, window, threshold, reference) -> int:
    """Print the winning s2vgd cell (stdout: its name only, for the report stage's --cells) and the
    ranking (stderr); refuses while any run of the plan is unfinished."""
    jobs = plan(out, task, cells, estimators, seeds, overrides)
    missing = sum(len(s) for j in jobs for s in unfinished(j).values())
    if missing:
        print(f"{prog}: error: {missing} of {len(cells) * len(estimators) * len(seeds)} runs in {out} are unfinished: "
              f"run the same command without --select first", file=sys.stderr)
        return 1
    result = analyse(out, task, cells, estimators, seeds, overrides, window, threshold, reference)
    scores = result["scores"] if result else {}
    if not scores:
        print(f"{prog}: error: no s2vgd cell among --cells / the grid to select from", file=sys.stderr)
        return 2
    ranked = sorted(scores, key=scores.get, reverse=True)
    print(f"peak best-particle return, mean over seeds {seeds_text(seeds)}, averaged over {', '.join(estimators)}:",
          file=sys.stderr)
    for name in ranked:
        print(f"  {name:28s} {scores[name]:10.1f}", file=sys.stderr)
    print(ranked[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
