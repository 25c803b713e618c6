#!/usr/bin/env python
"""Env steps per second of whole SVPG training iterations (rollout + update, all particles),
beside Stable-Baselines3 A2C's steps per second measured in the same run.

    python bench/throughput.py                      # CartPole-v1, M = 16, 5000 samples/particle
    python bench/throughput.py --task swingup       # svpg/CartPoleSwingUp-v0
    python bench/throughput.py --task double-pendulum --device cuda
    python bench/throughput.py --num-seeds 5        # S²VGD: 5 seeds as one batched run beside 1 seed
    python bench/throughput.py --task swingup --cells svgd,svgd-star,s2vgd-K1,s2vgd-K4,s2vgd-K1-mvg

With ``--num-seeds S`` the S²VGD rows compare S seeds trained as one batched computation
(``train.py --num-seeds S``; steps of all seeds count) with a single seed, instead of S²VGD with
plain SVGD. With ``--cells`` the rows are cells of the structure ablation (:mod:`svpg.studies.ablation`
names) trained on the task's preset, and the cost of an iteration is given relative to the first cell;
SB3 is not run (``--out``: one line of kind ``cells``, the seconds per iteration of each cell).
"""
from __future__ import annotations

import json
import os
import tempfile
import time

import torch

from svpg.cli import Parser

#: the network, prior and critic the throughput tables are measured with (the S²VGD paper's; the
#: package's generic defaults differ: docs/rl.md); the command line's --estimator and sizes go on top
SETTINGS = dict(hidden=(25, 10), prior="mvg", alpha=1.0, lr=5e-3, anneal_lr=True, normalize_obs=False,
                normalize_reward=False, critic_hidden=(32, 32), critic_lr=5e-3, value_steps=8, value_epochs=2)

TASKS = {
    "cartpole": "CartPole-v1",
    "balance": "svpg/CartPoleBalance-v0",
    "swingup": "svpg/CartPoleSwingUp-v0",
    "double-pendulum": "svpg/DoublePendulum-v0",
}


def iteration(trainer):
    """One training iteration with the thread counts of ``SVPGTrainer.train``: (batch, scalars,
    seconds of the rollout, seconds of the learning step: advantages, critic fit, SVGD update)."""
    from svpg.runtime import torch_threads

    t0 = time.perf_counter()
    with torch_threads(1):
        batch = trainer.model.collect()
    t1 = time.perf_counter()
    with torch_threads(trainer.model.update_threads):
        scalars = trainer.model.train_iteration(batch)
    return batch, scalars, t1 - t0, time.perf_counter() - t1


def svpg_steps_per_second(env_id: str, variants: dict[str, dict], args) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """Best-of-repeats steps/s of whole iterations for each variant (config fields), timed in
    alternating blocks so that background load affects every variant alike (the ratios stay fair),
    and the best block's milliseconds per iteration in the rollout and in the learning step."""
    from svpg.rl.config import SVPGConfig
    from svpg.rl.trainer import SVPGTrainer

    trainers = {}
    for label, fields in variants.items():
        cfg = SVPGConfig(**(SETTINGS | {
            "env_id": env_id, "householder": args.householder, "num_particles": args.particles,
            "samples_per_particle": args.samples} | fields | {
            "iterations": 1, "device": args.device, "threads": args.threads, "log_dir": tempfile.mkdtemp(),
            "progress": False, "estimator": args.estimator}))
        trainers[label] = SVPGTrainer(cfg)
        for _ in range(args.warmup):
            iteration(trainers[label])
    best = dict.fromkeys(variants, 0.0)
    phases = {}
    for _ in range(args.repeats):
        for label, trainer in trainers.items():
            steps, rollout, learn = 0, 0.0, 0.0
            t0 = time.perf_counter()
            for _ in range(args.iterations):
                batch, scalars, seconds_rollout, seconds_learn = iteration(trainer)
                steps += batch.num_steps
                rollout, learn = rollout + seconds_rollout, learn + seconds_learn
            scalars["rollout/ep_rew_mean"].tolist()  # wait for the device
            rate = steps / (time.perf_counter() - t0)
            if rate > best[label]:
                best[label] = rate
                phases[label] = (1e3 * rollout / args.iterations, 1e3 * learn / args.iterations)
    return best, phases


def sb3_a2c_steps_per_second(env_id: str, steps: int) -> float:
    from stable_baselines3 import A2C
    from stable_baselines3.common.env_util import make_vec_env

    from svpg import envs  # noqa: F401  (registers svpg/* ids)

    vec = make_vec_env(env_id, n_envs=8, seed=0)
    model = A2C("MlpPolicy", vec, device="cpu", seed=0, verbose=0)
    model.learn(total_timesteps=1000)  # warm-up
    t0 = time.perf_counter()
    model.learn(total_timesteps=steps, reset_num_timesteps=False)
    return steps / (time.perf_counter() - t0)


def main() -> None:
    p = Parser(prog="python bench/throughput.py", description=__doc__)
    p.add_argument("--task", choices=sorted(TASKS), default="cartpole")
    p.add_argument("--num-particles", deprecated=("--particles",), dest="particles", type=int, default=16)
    p.add_argument("--samples-per-particle", deprecated=("--samples",), dest="samples", type=int, default=5000,
                   help="samples per particle per iteration")
    p.add_argument("--householder", type=int, default=1)
    p.add_argument("--estimator", default="reinforce")
    p.add_argument("--iterations", type=int, default=5, help="timed iterations per block")
    p.add_argument("--repeats", type=int, default=6, help="alternating blocks per method (best one counts)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--sb3-steps", type=int, default=20_000)
    p.add_argument("--threads", type=int, default=1, help="torch threads for both SVPG's update and SB3 (default: 1)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--num-seeds", type=int, default=1, help="compare S seeds batched with 1 seed (S²VGD) instead of "
                   "S²VGD with plain SVGD (default: 1)")
    p.add_argument("--out", default=None, help="also append the figures as one JSON line to this file (e.g. "
                   "bench/results/throughput.jsonl), with the load, machine and commit")
    p.add_argument("--machine", default=None, help="machine description recorded with --out (default: detected)")
    p.add_argument("--cells", default=None, help="time these structure-ablation cells on the task's preset, e.g. "
                   "svgd,svgd-star,s2vgd-K4-mvg (see python -m svpg.studies.ablation), instead of S²VGD against SVGD")
    args = p.parse_args()
    env_id = TASKS[args.task]
    torch.set_num_threads(args.threads)
    if args.cells:
        return compare_cells(p, args)
    load_start = os.getloadavg()[0]
    print(f"task {env_id}: M = {args.particles}, {args.samples} samples/particle/iteration, "
          f"{args.estimator}, device {args.device}, {args.threads} torch thread(s), {os.cpu_count()} cores, "
          f"torch {torch.__version__}")
    if args.num_seeds > 1:
        variants = {f"svpg s2vgd (K = {args.householder}), 1 seed": {"method": "s2vgd"},
                    f"svpg s2vgd (K = {args.householder}), {args.num_seeds} seeds batched": {"method": "s2vgd", "num_seeds": args.num_seeds}}
    else:
        variants = {f"svpg s2vgd (K = {args.householder})": {"method": "s2vgd"}, "svpg svgd (plain layers)": {"method": "svgd"}}
    rates, phases = svpg_steps_per_second(env_id, variants, args)
    torch.set_num_threads(args.threads)  # SB3 runs with the same thread budget
    sb3 = sb3_a2c_steps_per_second(env_id, args.sb3_steps)
    print("\n| agent | env steps/s (whole iterations) | × SB3 A2C | ms / iteration: rollout | learning step |\n"
          "|---|---:|---:|---:|---:|")
    for label, rate in rates.items():
        rollout, learn = phases[label]
        print(f"| {label} | {rate:,.0f} | {rate / sb3:,.0f}× | {rollout:,.0f} | {learn:,.0f} |")
    print(f"| SB3 A2C (MlpPolicy, 8 envs) | {sb3:,.0f} | 1× | | |")
    first, second = rates.values()
    what = "batched seeds relative to one seed" if args.num_seeds > 1 else "S²VGD throughput relative to plain SVGD"
    print(f"\n{what}: {second / first:.2f}×" if args.num_seeds > 1 else f"\n{what}: {100 * (first / second - 1):+.1f} %")
    (r1, l1), (r2, l2) = phases.values()
    if args.num_seeds > 1:  # batching pays only where per-op overhead, not per-row work, sets the time
        print(f"time per iteration, {args.num_seeds} seeds batched ÷ 1 seed: rollout {r2 / r1:.2f}×, learning step "
              f"{l2 / l1:.2f}× (the ideal is 1×, the cost of {args.num_seeds} separate runs {args.num_seeds}×)")
    if args.out:
        from svpg.runs import describe_machine, source_commit

        row = {"kind": "seed-batch" if args.num_seeds > 1 else "methods", "env_id": env_id, "estimator": args.estimator,
               "device": args.device, "num_seeds": args.num_seeds, "num_particles": args.particles,
               "samples_per_particle": args.samples, "householder": args.householder, "threads": args.threads,
               "iterations": args.iterations, "repeats": args.repeats,
               # methods: S²VGD, then plain SVGD; seed-batch: one seed, then num_seeds batched
               "first_steps_per_s": round(first, 1), "second_steps_per_s": round(second, 1),
               "first_ms_rollout": round(r1, 2), "first_ms_learn": round(l1, 2),
               "second_ms_rollout": round(r2, 2), "second_ms_learn": round(l2, 2),
               "sb3_a2c_steps_per_s": round(sb3, 1), "cores": os.cpu_count(), "load_start": round(load_start, 1),
               "load_end": round(os.getloadavg()[0], 1), "machine": args.machine or describe_machine(),
               "commit": source_commit()}
        with open(args.out, "a") as fh:
            fh.write(json.dumps(row) + "\n")


def compare_cells(parser, args) -> None:
    """Steps/s and seconds per iteration of ablation cells on the task's preset, in alternating blocks."""
    from svpg.rl.config import PRESETS, load_preset
    from svpg.studies.ablation import parse_cells

    if args.task not in PRESETS:
        parser.error(f"--cells needs a task with a preset ({', '.join(PRESETS)}), not {args.task!r}")
    try:
        cells = parse_cells(args.cells)
    except ValueError as e:
        parser.error(str(e))
    preset = load_preset(args.task)  # its iterations give way to the benchmark's own blocks
    variants = {c.name: preset | {"method": c.method} | c.settings() for c in cells}
    print(f"task {preset['env_id']} preset: M = {preset['num_particles']}, {preset['samples_per_particle']} "
          f"samples/particle/iteration, {args.estimator}, device {args.device}, {args.threads} torch thread(s), "
          f"{os.cpu_count()} cores, torch {torch.__version__}")
    rates, phases = svpg_steps_per_second(preset["env_id"], variants, args)
    first = next(iter(rates.values()))
    print("\n| cell | env steps/s (whole iterations) | s / iteration | ms / iteration: rollout | learning step | "
          f"cost ÷ {cells[0].name} |\n|---|---:|---:|---:|---:|---:|")
    steps = preset["num_particles"] * preset["samples_per_particle"]
    for label, rate in rates.items():
        rollout, learn = phases[label]
        print(f"| {label} | {rate:,.0f} | {steps / rate:.3f} | {rollout:,.0f} | {learn:,.0f} | {first / rate:.2f}× |")
    if args.out:
        from svpg.runs import describe_machine, source_commit

        row = {"kind": "cells", "env_id": preset["env_id"], "estimator": args.estimator, "device": args.device,
               "num_seeds": 1, "num_particles": preset["num_particles"],
               "samples_per_particle": preset["samples_per_particle"], "threads": args.threads,
               "iterations": args.iterations, "repeats": args.repeats,
               # per cell, the best block's: seconds per iteration, and ms per iteration in the rollout and learning step
               "seconds_per_iteration": {c: steps / rate for c, rate in rates.items()},  # unrounded: printed .3f
               "ms_rollout": {c: round(phases[c][0], 2) for c in rates}, "ms_learn": {c: round(phases[c][1], 2) for c in rates},
               "cores": os.cpu_count(), "machine": args.machine or describe_machine(), "commit": source_commit()}
        with open(args.out, "a") as fh:
            fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
