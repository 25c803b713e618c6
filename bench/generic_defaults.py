#!/usr/bin/env python
"""Candidate defaults for environments svpg has no preset for, trained on tuning seeds, in parallel.

    python bench/generic_defaults.py --env-id Pendulum-v1 --total-steps 200000 --seeds 100-104 --jobs 16 --out tune.csv
    python bench/generic_defaults.py --candidates base,m8,gamma95 --env-id Pendulum-v1 --seeds 100-104

Each candidate is a set of ``svpg.SVPG`` options (``CANDIDATES``, on top of ``BASE``; ``defaults`` is
the package's defaults alone, ``sb3-ppo`` Stable-Baselines3's PPO with its defaults, evaluated the
same way); every (candidate, seed) trains for
``--steps`` environment steps (all particles' steps count) and is scored by its best particle's
deterministic return on 10 fresh episodes (the particle chosen on the last iteration's training
returns) and the mean over particles. Rows are appended to ``--out`` as they finish (resumable: rows
already there are skipped). Prints mean ± s.e. per candidate.
"""
from __future__ import annotations

import csv
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from svpg.cli import Parser
from svpg.io import append_csv
from svpg.stats import cell, convention, markdown_table, parse_range_list

BASE = dict(estimator="ppo", num_particles=4, samples_per_particle=2048, hidden=(64, 64), lr=3e-4, anneal_lr=False,
            normalize_obs=True, normalize_reward=True, method="s2vgd", prior="flat", alpha=1.0, ppo_epochs=10,
            ppo_minibatches=32, gae_lambda=0.95, gamma=0.99, value_epochs=10, value_steps=32, critic_hidden=(64, 64),
            critic_lr=3e-4)
CANDIDATES = {
    "base": {},
    "m8": dict(num_particles=8),
    "m2": dict(num_particles=2),
    "lr1e-3": dict(lr=1e-3, critic_lr=1e-3),
    "gamma95": dict(gamma=0.95),
    "samples1024": dict(samples_per_particle=1024),
    "alpha10": dict(alpha=10.0),
    "alpha100": dict(alpha=100.0),
    "svgd": dict(method="svgd"),
    "mvg": dict(prior="mvg"),
    "norew": dict(normalize_reward=False),
    "small": dict(hidden=(25, 10)),
    "anneal": dict(anneal_lr=True),
    "lr1e-3-m8": dict(lr=1e-3, critic_lr=1e-3, num_particles=8),
    "lr1e-3-gamma95": dict(lr=1e-3, critic_lr=1e-3, gamma=0.95),
    "epochs5": dict(ppo_epochs=5),
    "a100-lr1e-3": dict(alpha=100.0, lr=1e-3, critic_lr=1e-3),
    "a1000": dict(alpha=1000.0),
    "a100-m8": dict(alpha=100.0, num_particles=8),
    "a100-s1024": dict(alpha=100.0, samples_per_particle=1024),
}


def run(env_id: str, name: str, seed: int, steps: int) -> dict:
    import torch

    torch.set_num_threads(1)
    import svpg
    from svpg.rl.evaluation import evaluate_particles
    from svpg.seeding import int_seed

    t0 = time.perf_counter()
    if name == "sb3-ppo":
        return run_sb3(env_id, seed, steps, t0)
    options = {} if name == "defaults" else BASE | CANDIDATES[name]
    model = svpg.SVPG(env_id, seed=seed, verbose=0, threads=1, **options)
    model.learn(steps)
    policy = model.seed_policy(0)
    returns = evaluate_particles(policy, env_id, 10, seed=int_seed(seed, "evaluation"), max_episode_steps=model.horizon)
    per_particle = returns.mean(1)
    return {"env_id": env_id, "candidate": name, "seed": seed, "steps": model.num_timesteps,
            "best_particle": float(per_particle[policy.particle]), "mean_particles": float(per_particle.mean()),
            "top_particle": float(per_particle.max()), "train_best": model.scalars[0]["rollout/ep_rew_max"],
            "seconds": round(time.perf_counter() - t0, 1)}


def run_sb3(env_id: str, seed: int, steps: int, t0: float) -> dict:
    """SB3's PPO with its defaults on ``steps`` steps, its deterministic policy on 10 fresh episodes."""
    import gymnasium as gym
    from stable_baselines3 import PPO
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor

    model = PPO("MlpPolicy", env_id, seed=seed, device="cpu").learn(steps)
    env = Monitor(gym.make(env_id))
    env.reset(seed=seed + 10_000)
    mean, _ = evaluate_policy(model, env, n_eval_episodes=10, deterministic=True)
    return {"env_id": env_id, "candidate": "sb3-ppo", "seed": seed, "steps": model.num_timesteps, "best_particle": mean,
            "mean_particles": mean, "top_particle": mean, "train_best": float("nan"),
            "seconds": round(time.perf_counter() - t0, 1)}


def main() -> None:
    p = Parser(prog="python bench/generic_defaults.py", description=__doc__)
    p.add_argument("--env-id", default="Pendulum-v1")
    p.add_argument("--total-steps", deprecated=("--steps",), dest="steps", type=int, default=200_000)
    p.add_argument("--seeds", default="100-104", help="tuning seeds, e.g. 100-104")
    p.add_argument("--candidates", default=",".join(CANDIDATES), help="names of CANDIDATES, defaults, sb3-ppo")
    p.add_argument("--jobs", type=int, default=os.cpu_count())
    p.add_argument("--out", default="generic_defaults.csv")
    args = p.parse_args()
    out = Path(args.out)
    done = set()
    if out.exists():
        done = {(r["env_id"], r["candidate"], int(r["seed"])) for r in csv.DictReader(open(out))}
    todo = [(args.env_id, c, s) for c in args.candidates.split(",") for s in parse_range_list(args.seeds)
            if (args.env_id, c, s) not in done]
    with ProcessPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(run, env, c, s, args.steps) for env, c, s in todo]
        for f in as_completed(futures):
            row = f.result()
            append_csv(out, [row])
            print(row, flush=True)
    import pandas as pd

    table = pd.read_csv(out)
    table = table[table.env_id == args.env_id]
    columns = ["best_particle", "mean_particles", "top_particle", "seconds"]
    groups = sorted(table.groupby("candidate"), key=lambda kv: -kv[1].best_particle.mean())
    print(f"\n({convention('seeds')})\n")
    print(markdown_table(["candidate", "seeds", *columns], [[name, len(g), *(cell(g[c]) for c in columns)] for name, g in groups]))


if __name__ == "__main__":
    main()
