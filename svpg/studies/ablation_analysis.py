"""The structure ablation's analysis: per-run metrics, the tables, the paired differences and the figure,
from the run folders that :mod:`svpg.studies.ablation` trains.

Statistics follow :mod:`svpg.stats`: mean ± standard error over seeds, and paired differences (cell −
reference on the same seed) with 95 % t-intervals; every table says so in its header. The metrics are
defined in :mod:`svpg.studies.ablation`'s docstring (and docs/rl.md, "Structure ablation"). Every file is
written atomically (:func:`svpg.io.atomic_write`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import cast

from svpg.io import atomic_write, write_csv
from svpg.rl.config import ESTIMATORS
from svpg.stats import mean_se, paired_difference
from svpg.studies import experiments
from svpg.studies.ablation_cells import CONTROLS, Cell, timing_file
from svpg.studies.experiments import run_folder

METRICS = ("peak_best", "final_best", "peak_mean", "final_mean")  # compared with the reference, seed by seed
DIVERSITY = ("theta_distance", "action_kl", "action_mean_distance")
STATE_ENVS, STATE_EVERY = 20, 10  # the fixed states: 20 random-action episodes, every 10th step
WINDOW, THRESHOLD = 10, "90%"  # the defaults of --window and --threshold


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
    hit: np.ndarray | list[int] = np.flatnonzero(sm_best >= threshold) if threshold is not None else []
    return {
        "iterations": len(best),
        "peak_best": float(sm_best.max()),
        "final_best": float(np.mean(best[-w:])),
        "peak_mean": float(sm_mean.max()),
        "final_mean": float(np.mean(mean[-w:])),
        "iterations_to_threshold": float(hit[0] + w) if len(hit) else math.nan,
    }


def probe_states(env_id: str, horizon: int, seed: int = 0):
    """The fixed states at which action distributions are compared: every 10th state of 20 episodes of
    uniformly random actions from the task's start distribution (the same for every cell and run)."""
    import torch
    from gymnasium import spaces

    from svpg.envs import make_batched
    from svpg.seeding import int_seed, torch_generator

    env = make_batched(env_id, STATE_ENVS, max_episode_steps=horizon)
    obs = env.reset(seed=int_seed(seed, "ablation_states"))
    noise = torch_generator(seed, "ablation_states", "actions")
    space, kept = env.single_action_space, []
    for t in range(horizon):
        if t % STATE_EVERY == 0:
            kept.append(obs.clone())
        if env.is_discrete:
            actions = torch.randint(int(cast(spaces.Discrete, space).n), (STATE_ENVS,), generator=noise)
        else:
            box = cast(spaces.Box, space)
            low, high = torch.as_tensor(box.low), torch.as_tensor(box.high)
            actions = low + (high - low) * torch.rand((STATE_ENVS, *box.shape), generator=noise)
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
            out |= {
                "action_kl": float(kl.mean(-1).sum() / pairs),
                "action_mean_distance": float(d2.sum(-1).sqrt().mean(-1).sum() / pairs),
            }
    return out


def timing_records(out: Path, cell: str, estimator: str) -> list[dict]:
    """The cell's recorded trainings (seeds, seconds, iterations), none if not recorded (e.g. runs copied from
    elsewhere)."""
    path = timing_file(out, cell, estimator)
    records = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:  # a line torn by a kill
            continue
    return records


def seconds_per_iteration(out: Path, cell: str, estimator: str, seeds: list[int]) -> float:
    """Wall-clock seconds per iteration of the cell's seed batch, over the recorded training of these
    seeds (NaN if none was recorded, e.g. runs copied from elsewhere)."""
    seconds = iterations = 0.0
    for record in timing_records(out, cell, estimator):
        if set(record["seeds"]) <= set(seeds):
            seconds, iterations = seconds + record["seconds"], iterations + record["iterations"]
    return seconds / iterations if iterations else math.nan


def batch_seeds(out: Path, cell: str, estimator: str, seed: int) -> list[int]:
    """The seeds trained in one batch with ``seed`` (itself alone if none was recorded)."""
    seeds = {seed}
    for record in timing_records(out, cell, estimator):
        if seed in record["seeds"]:
            seeds.update(record["seeds"])
    return sorted(seeds)


# -- the report ---------------------------------------------------------------------------------------
def run_curves(rows: list[dict]) -> dict:
    """(cell, estimator) → {seed: (mean curve, best curve)} of per-iteration rows, every seed cut to the cell's
    shortest run."""
    groups: dict = {}
    for r in sorted(rows, key=lambda r: r["iteration"]):
        curves = groups.setdefault((r["cell"], r["estimator"]), {}).setdefault(r["seed"], ([], []))
        curves[0].append(r["mean"])
        curves[1].append(r["max"])
    return cut_to_shortest(groups)


def cut_to_shortest(groups: dict) -> dict:
    """(cell, estimator) → {seed: (mean curve, best curve)} with every seed cut to the cell's shortest run (in place)."""
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
        assert best is not None  # keys holds at least one run of e: curves gave e
        peak, start, cell = best
        taus[e] = float(start + value * (peak - start))
        source.append(f"{e} {taus[e]:.1f} ({cell}: {start:.1f} → {peak:.1f})")
    text = (
        f"τ = {value:.0%} of the way from the first iteration's to the peak of the seed-averaged best-particle "
        f"curve of the best {among}: " + "; ".join(source)
    )
    return taus, text


def per_run_metrics(curves: dict, taus: dict, window: int) -> dict:
    """(cell, estimator) → {seed: :func:`curve_metrics`} of :func:`run_curves`' curves, with each estimator's τ."""
    return {
        key: {seed: curve_metrics(mean, best, window, taus[key[1]]) for seed, (mean, best) in runs.items()}
        for key, runs in curves.items()
    }


def summary_row(runs: dict, ref: dict | None, keys=(*METRICS, "iterations_to_threshold", *DIVERSITY)) -> dict:
    """A (cell, estimator)'s row of ``cells.csv`` from its per-seed metrics ``runs``: mean and standard error over
    seeds of every metric in ``keys``, how many seeds reach τ, and the paired differences to the reference's
    per-seed metrics ``ref`` (None: no reference, the differences NaN)."""
    row: dict = {}
    for m in keys:
        row[m], row[f"{m}_se"] = mean_se([r[m] for r in runs.values()])
    row["reached"] = sum(math.isfinite(r["iterations_to_threshold"]) for r in runs.values())
    row["pairs"] = len(set(runs) & set(ref)) if ref else 0
    for m in METRICS:
        _, d, lo, hi = (
            paired_difference({s: r[m] for s, r in runs.items()}, {s: r[m] for s, r in ref.items()})
            if ref
            else (0, math.nan, math.nan, math.nan)
        )
        row |= {f"d_{m}": d, f"d_{m}_lo": lo, f"d_{m}_hi": hi}
    return row


def selection_scores(per_run: dict, estimators) -> dict:
    """--select's rule: per s2vgd cell with every estimator, the mean over estimators of the mean over
    seeds of the peak best-particle return."""
    scores = {}
    for cell in {c for c, _ in per_run}:
        if Cell.parse(cell).method != "s2vgd" or any((cell, e) not in per_run for e in estimators):
            continue
        scores[cell] = sum(mean_se([r["peak_best"] for r in per_run[(cell, e)].values()])[0] for e in estimators) / len(
            estimators
        )
    return scores


def analyse(
    out: Path,
    task: str,
    cells: list[Cell],
    estimators,
    seeds: list[int],
    overrides: dict,
    window: int,
    threshold: tuple[str, float],
    reference: str,
) -> dict | None:
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
    per_run = per_run_metrics(curves, taus, window)
    for (cell, e), runs in per_run.items():
        for seed, metrics in runs.items():
            metrics |= diversity(run_folder(out, cell, e, seed), states)
    order = {c.name: i for i, c in enumerate(cells)}
    table = []
    for (cell, e), runs in sorted(per_run.items(), key=lambda kv: (ESTIMATORS.index(kv[0][1]), order[kv[0][0]])):
        c = Cell.parse(cell)
        row = {
            "task": task,
            "cell": cell,
            "method": c.method,
            "K": "" if c.householder is None else c.householder,
            "prior": c.prior or "",
            "alpha": "" if c.alpha is None else c.alpha,
            "estimator": e,
            "parameters": next(iter(runs.values()))["parameters"],
            "seeds": len(runs),
            "iterations": next(iter(runs.values()))["iterations"],
        }
        ref = per_run.get((reference, e)) if cell != reference else None
        summary = summary_row(runs, ref)
        reached, pairs = summary.pop("reached"), summary.pop("pairs")
        differences = {k: summary.pop(k) for k in list(summary) if k.startswith("d_")}
        row |= summary | {"threshold": taus[e], "reached": reached}
        row |= {"seconds_per_iteration": seconds_per_iteration(out, cell, e, seeds), "pairs": pairs, **differences}
        table.append(row)
    scores = selection_scores(per_run, estimators)
    return {
        "rows": rows,
        "per_run": per_run,
        "table": table,
        "tau_text": tau_text,
        "scores": scores,
        "summary": experiments.summarise(rows, label="cell"),
    }


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


def write_report(
    result: dict,
    out: Path,
    task: str,
    cells: list[Cell],
    seeds: list[int],
    estimators,
    reference: str,
    window: int,
    overrides: dict,
    wall: float | None,
) -> str:
    """Write cells.csv, seeds.csv, curves.csv, curves.png and results.md under ``out``; returns the Markdown."""
    table = result["table"]
    write_csv(out / "cells.csv", table)
    per_run = [
        {"cell": c, "estimator": e, "seed": s, **m}
        for (c, e), runs in result["per_run"].items()
        for s, m in runs.items()
    ]
    write_csv(out / "seeds.csv", per_run)
    write_csv(out / "curves.csv", result["rows"])
    experiments.plot(result["summary"], out / "curves.png", task, labels=figure_labels(result, cells))
    shown = ", ".join(
        f"--{k.replace('_', '-')} {','.join(map(str, v)) if isinstance(v, list) else v}"
        for k, v in sorted(overrides.items())
    )
    iterations = sorted({r["iterations"] for r in table})
    lines = [
        f"# {task}: structure ablation",
        "",
        (
            f"Seeds {seeds_text(seeds)}; the `{task}` preset{' with ' + shown if shown else ''}; "
            f"{' or '.join(map(str, iterations))} iterations. Mean ± standard error over seeds. Curves smoothed by a "
            f"trailing {window}-iteration mean: *best* = max over particles of each particle's average return, *mean* = "
            "mean over particles; *peak* = the highest smoothed value, *final* = the mean of the last "
            f'{window} iterations. Definitions: docs/rl.md, "Structure ablation".'
        ),
        "",
        (
            "| cell | estimator | D | seeds | peak best | final best | peak mean | final mean | iterations to τ (reached) "
            "| θ distance | action KL | action-mean distance | s / iteration |"
        ),
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in table:
        lines.append(
            f"| {r['cell']} | {r['estimator']} | {r['parameters']} | {r['seeds']} | "
            + " | ".join(_pm(r[m], r[f"{m}_se"]) for m in ("peak_best", "final_best", "peak_mean", "final_mean"))
            + f" | {_pm(r['iterations_to_threshold'], r['iterations_to_threshold_se'], 0)} ({r['reached']}/{r['seeds']}) | "
            + " | ".join(_sig(r[m]) for m in DIVERSITY)
            + f" | {_sig(r['seconds_per_iteration'])} |"
        )
    lines += ["", result["tau_text"] + "."]
    compared = [r for r in table if r["pairs"]]
    if compared:
        lines += [
            "",
            f"## Paired differences to {reference}",
            "",
            f"Cell − {reference} on the same seed: mean [95 % t-interval] over the seeds both have.",
            "",
            "| cell | estimator | pairs | Δ peak best | Δ final best | Δ peak mean | Δ final mean |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        for r in compared:
            lines.append(
                f"| {r['cell']} | {r['estimator']} | {r['pairs']} | "
                + " | ".join(_interval(r[f"d_{m}"], r[f"d_{m}_lo"], r[f"d_{m}_hi"]) for m in METRICS)
                + " |"
            )
    else:
        lines += ["", f"No paired differences: the reference cell {reference} has no finished iterations here."]
    if result["scores"]:
        winner = max(result["scores"], key=result["scores"].get)
        lines += [
            "",
            (
                f"Best structural cell by --select's rule (peak best return, mean over seeds, averaged over "
                f"{', '.join(estimators)}): {winner} ({result['scores'][winner]:.1f})."
            ),
        ]
    if len(iterations) > 1:
        lines += ["", "Cells differ in iterations: some runs are unfinished; compare only when every run has finished."]
    if wall is not None:
        lines += ["", f"Wall-clock of this invocation: {wall / 60:.1f} min."]
    text = "\n".join(lines) + "\n"
    atomic_write(out / "results.md", lambda tmp: Path(tmp).write_text(text))
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
