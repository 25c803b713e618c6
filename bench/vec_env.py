#!/usr/bin/env python
"""Environment steps per second of the generic path: environments stepped in this process
(``vec_env="sync"``) against W groups stepped in parallel, one by this process and W − 1 by worker
processes (``vec_env="async"``, ``n_workers=W``) and, where EnvPool is installed, EnvPool's W threads
(``vec_env="envpool"``, its own implementation of the task), and the ratios to sync.

    python bench/vec_env.py                                # Hopper-v5, 8 and 16 envs, 2 workers
    python bench/vec_env.py --num-envs 32 --workers 2 4 --steps 300 --repeats 7
    python bench/vec_env.py --env-id Pendulum-v1 --num-envs 16
    python bench/vec_env.py --learn                        # also svpg.SVPG(...).learn end to end

Each figure is ``svpg.envs.make_batched(...).step`` on a ``(num_envs, ...)`` action tensor drawn
beforehand (no policy), autoresets included, over rollouts of ``--steps`` steps, as a training
iteration runs them. The variants take turns, one rollout each per round, so that load from other
processes hits them alike; each figure is the best of ``--repeats`` rounds (on a shared machine the
best is the capacity, the rest is other people's load). The ratio is async / sync of those best figures.
With ``--learn`` it also times whole PPO iterations of ``svpg.SVPG`` (rollouts, policies and updates,
one torch thread) on the first ``--num-envs``: environment steps per second of an iteration, best of
``--learn-repeats``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from svpg import envs  # noqa: E402


def steps_per_second(env_id: str, num_envs: int, variants: dict[str, dict], steps: int, repeats: int) -> dict:
    """Best env-steps per second of each variant (keyword arguments of ``make_batched``), in turns."""
    batches = {name: envs.make_batched(env_id, num_envs, seed=0, **kw) for name, kw in variants.items()}
    try:
        first = next(iter(batches.values()))
        g = torch.Generator().manual_seed(0)
        if first.is_discrete:
            acts = torch.randint(0, first.action_dim, (steps, num_envs), generator=g)
        else:
            acts = torch.rand(steps, num_envs, first.action_dim, generator=g) * 2 - 1
        for env in batches.values():
            env.reset()
        best = dict.fromkeys(batches, float("inf"))
        for r in range(repeats + 1):  # the first round warms up
            for name, env in batches.items():
                t0 = time.perf_counter()
                for t in range(steps):
                    env.step(acts[t])
                if r:
                    best[name] = min(best[name], time.perf_counter() - t0)
        return {name: steps * num_envs / seconds for name, seconds in best.items()}
    finally:
        for env in batches.values():
            env.close()


def learn_steps_per_second(env_id: str, num_envs: int, variants: dict[str, dict], repeats: int) -> dict:
    """Best env-steps per second of one ``svpg.SVPG(...).learn`` iteration of each variant, in turns: 4
    particles with ``num_envs / 4`` environments each, a full horizon per environment."""
    import svpg
    from svpg.rl.config import default_horizon

    particles, models = 4, {}
    samples = default_horizon(env_id) * max(1, num_envs // particles)
    try:
        for name, kw in variants.items():
            models[name] = svpg.SVPG(
                env_id, num_particles=particles, samples_per_particle=samples, seed=0, verbose=0, threads=1, **kw
            )
        best = dict.fromkeys(models, 0.0)
        for r in range(repeats + 1):  # the first round warms up
            for name, model in models.items():
                model.learn(model.steps_per_update)
                if r:
                    best[name] = max(best[name], model.scalars[0]["time/fps"])
        return best
    finally:
        for model in models.values():
            model.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env-id", default="Hopper-v5")
    p.add_argument("--num-envs", type=int, nargs="+", default=[8, 16])
    p.add_argument(
        "--workers",
        type=int,
        nargs="+",
        default=[2],
        help="n_workers of the async (parallel groups, this process's included) and envpool (threads) variants",
    )
    p.add_argument("--steps", type=int, default=200, help="steps per timed rollout")
    p.add_argument("--repeats", type=int, default=5, help="timed rounds (the best is reported)")
    p.add_argument("--learn", action="store_true", help="also time svpg.SVPG(...).learn iterations end to end")
    p.add_argument("--learn-repeats", type=int, default=2, help="timed learn iterations per variant")
    p.add_argument(
        "--out",
        help="also append one JSON line per figure to this file (e.g. bench/results/vec_env.jsonl), "
        "with the load, machine and commit",
    )
    p.add_argument("--machine", default=None, help="machine description recorded with --out (default: detected)")
    args = p.parse_args()
    load_start = os.getloadavg()[0]
    rows: list[dict] = []

    def sync_and_async(n: int) -> dict[str, dict]:
        return {"sync": {}} | {f"async/{w}": {"vec_env": "async", "n_workers": w} for w in args.workers if w <= n}

    def show(label: str, sps: dict) -> None:
        others = (f"  | {name} {v:8.0f} ({v / sps['sync']:.2f}x)" for name, v in sps.items() if name != "sync")
        print(f"{label} {sps['sync']:8.0f}" + "".join(others), flush=True)

    def record(kind: str, n: int, sps: dict) -> None:
        for name, value in sps.items():
            rows.append(
                {
                    "env_id": args.env_id,
                    "kind": kind,
                    "num_envs": n,
                    "variant": name,
                    "steps_per_s": round(value, 1),
                    "ratio_to_sync": round(value / sps["sync"], 3),
                }
            )

    torch.set_num_threads(1)
    try:
        import envpool

        pool = args.env_id in envpool.list_all_envs()
    except ImportError:
        pool = False
    print(
        f"{args.env_id}: env-steps/s, best of {args.repeats} rounds of {args.steps}-step rollouts; "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; async/W: W parallel groups (this process and W - 1 workers), envpool/W: W threads"
        + ("" if pool else " (EnvPool not installed or without this id)")
    )
    for n in args.num_envs:
        variants = sync_and_async(n)
        if pool:
            variants |= {f"envpool/{w}": {"vec_env": "envpool", "n_workers": w} for w in args.workers}
        sps = steps_per_second(args.env_id, n, variants, args.steps, args.repeats)
        record("step", n, sps)
        show(f"  {n:4d} envs  sync", sps)
    if args.learn:
        n = args.num_envs[0]
        sps = learn_steps_per_second(args.env_id, n, sync_and_async(n), args.learn_repeats)
        record("learn", n, sps)
        show(f"  learn, {n} envs: sync", sps)
    load_end = os.getloadavg()[0]
    print(f"load {load_end:.1f} at the end")
    if args.out:
        from svpg.runs import describe_machine, source_commit

        stamp = {
            "cores": os.cpu_count(),
            "load_start": round(load_start, 1),
            "load_end": round(load_end, 1),
            "machine": args.machine or describe_machine(),
            "commit": source_commit(),
        }
        with open(args.out, "a") as fh:
            for row in rows:
                fh.write(json.dumps({**row, **stamp}) + "\n")


if __name__ == "__main__":
    main()
