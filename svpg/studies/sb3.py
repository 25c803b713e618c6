"""Stable-Baselines3 A2C and PPO on the same registered tasks, added to the reproduction table.

    python -m svpg.studies.sb3 --task swingup --seeds 5
    python -m svpg.studies.sb3 --task double-pendulum --seeds 3 --steps 1000000

Each agent trains with ``--steps`` environment steps (default: the SVPG preset's budget *per particle*,
iterations × samples per particle = 5 M for swing-up; the whole 16-particle ensemble uses 16× that),
with SB3's default hyperparameters and 8 environments, and is evaluated every ``--eval-every`` steps on
10 episodes. Results go to ``<out>/sb3/`` and a section appended to ``<out>/results.md``.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path
from typing import cast

import numpy as np

from svpg.io import atomic_write, write_csv
from svpg.rl.config import PAPER_TASKS
from svpg.runtime import torch_threads


def train_one(task_env: str, algo: str, seed: int, steps: int, eval_every: int, out: Path) -> list[dict]:
    from stable_baselines3 import A2C, PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy

    import svpg.envs  # noqa: F401  (registers svpg/* ids)

    cls = {"a2c": A2C, "ppo": PPO}[algo]
    # SB3's small MLPs gain nothing from a second thread, and the svpg runs it is compared with use one;
    # the caller's setting is restored afterwards
    with torch_threads(1):
        model = cls("MlpPolicy", make_vec_env(task_env, n_envs=8, seed=seed), seed=seed, device="cpu", verbose=0)
        eval_env = make_vec_env(task_env, n_envs=1, seed=seed + 1000)
        rows, done = [], 0
        while done < steps:
            chunk = min(eval_every, steps - done)
            model.learn(total_timesteps=chunk, reset_num_timesteps=False)
            done += chunk
            # without return_episode_rewards: (mean, std) of the episodes' returns
            mean, std = cast(
                "tuple[float, float]", evaluate_policy(model, eval_env, n_eval_episodes=10, deterministic=True)
            )
            rows.append(
                {"algo": algo, "seed": seed, "total_steps": done, "eval_mean": float(mean), "eval_std": float(std)}
            )
        eval_env.close()
        model.save(out / f"{algo}__seed{seed}")
    return rows


def main(argv: list[str] | None = None) -> int:
    from svpg.rl.config import load_preset

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=PAPER_TASKS, required=True)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--algos", default="a2c,ppo")
    p.add_argument("--steps", type=int, default=0, help="steps per agent (0: preset iterations × samples per particle)")
    p.add_argument("--eval-every", type=int, default=0, help="evaluation interval in steps (0: steps / 20)")
    p.add_argument("--out", default=None, help="reproduction folder (default: runs/repro-<task>)")
    args = p.parse_args(argv)
    preset = load_preset(args.task)
    steps = args.steps or preset["iterations"] * preset["samples_per_particle"]
    eval_every = args.eval_every or max(steps // 20, 1000)
    out = Path(args.out or f"runs/repro-{args.task}")
    (out / "sb3").mkdir(parents=True, exist_ok=True)
    csv_path = out / "sb3" / "curves.csv"
    rows = []
    if csv_path.exists():
        with open(csv_path, newline="") as f:
            rows = list(csv.DictReader(f))
    done = {(r["algo"], int(r["seed"])) for r in rows if int(r["total_steps"]) >= steps}
    t0 = time.perf_counter()
    for algo in args.algos.split(","):
        for seed in range(args.seeds):
            if (algo, seed) in done:
                continue
            t1 = time.perf_counter()
            new = train_one(preset["env_id"], algo, seed, steps, eval_every, out / "sb3")
            rows = [r for r in rows if not (r["algo"] == algo and int(r["seed"]) == seed)] + new
            write_csv(csv_path, rows)
            print(
                f"{algo} seed {seed}: final {new[-1]['eval_mean']:.1f}, peak {max(r['eval_mean'] for r in new):.1f} "
                f"({time.perf_counter() - t1:.0f} s, {steps / (time.perf_counter() - t1):,.0f} steps/s)"
            )
    lines = [
        "",
        f"## Stable-Baselines3 baselines ({steps:,} steps per agent, default hyperparameters, 8 envs)",
        "",
        "Deterministic evaluation return, 10 episodes per evaluation, mean ± std over seeds.",
        "",
        "| agent | seeds | final | peak (best evaluation of the seed-averaged curve) |",
        "|---|---:|---:|---:|",
    ]
    for algo in args.algos.split(","):
        by_seed: dict = {}
        for r in rows:
            if r["algo"] == algo:
                by_seed.setdefault(int(r["seed"]), []).append(float(r["eval_mean"]))
        if not by_seed:
            continue
        n = min(len(v) for v in by_seed.values())
        curves = np.array([v[:n] for v in by_seed.values()])
        lines.append(
            f"| SB3 {algo.upper()} | {len(by_seed)} | {curves[:, -1].mean():.1f} ± {curves[:, -1].std():.1f} | "
            f"{curves.mean(0).max():.1f} |"
        )
    text = "\n".join(lines) + "\n"
    md = out / "results.md"
    old = md.read_text().split("\n## Stable-Baselines3")[0].rstrip("\n") + "\n" if md.exists() else ""
    atomic_write(md, lambda tmp: Path(tmp).write_text(old + text))
    print(text)
    print(f"wall-clock {(time.perf_counter() - t0) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
