#!/usr/bin/env python
"""Microseconds per batched env step of the fast-path tasks, and single-env steps per second.

    python bench/env_step.py                  # 160 envs (M = 16 particles x 10 envs), 1 thread
    python bench/env_step.py --num-envs 1600 --steps 500 --repeats 9
    python bench/env_step.py --single         # also gym.make(...) single envs vs Gymnasium's CartPole-v1
    python bench/env_step.py --backends numpy torch   # the batched envs' two array backends on CPU
    python bench/env_step.py --baseline /tmp/head     # vs another envs/, e.g. from
                                              #   git archive HEAD envs | tar -x -C /tmp/head

Batched: ``env.step`` on a ``(num_envs, ...)`` action tensor drawn beforehand (no policy), the time
limit and autoresets included, in rollouts of ``--steps`` steps after a ``reset()``, as a training
iteration runs them. Single: ``gym.make(id)`` (with its ``TimeLimit`` and checker wrappers, as
Stable-Baselines3 gets it) stepped with actions sampled beforehand, resetting when an episode ends.
Every figure is the best of ``--repeats`` timings: on a shared machine the minimum is the capacity,
the rest is other people's load. Both also report the thread's CPU time (best of the repeats),
which leaves out the time the thread waited for a core. With ``--baseline`` the batched envs of both
packages are timed in alternating rollouts (so both see the same load) and the ratio is printed.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gymnasium as gym  # noqa: E402
import torch  # noqa: E402

from svpg import envs  # noqa: E402

IDS = ["svpg/CartPole-v1", "svpg/CartPoleBalance-v0", "svpg/CartPoleSwingUp-v0", "svpg/DoublePendulum-v0"]


def load_envs(root: Path, name: str = "envs_baseline"):
    """The ``envs`` package under ``root`` imported as ``name`` (its ids are already registered)."""
    spec = importlib.util.spec_from_file_location(
        name, root / "envs" / "__init__.py", submodule_search_locations=[str(root / "envs")]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def batched_us_per_step(
    env_id: str, num_envs: int, steps: int, repeats: int, backend: str | None = None, packages=(envs,)
) -> list[tuple[float, float]]:
    """Best wall-clock and best thread-CPU microseconds per step, for the task of each package.

    The packages take turns, one rollout each per round, so that load changes hit them alike.
    """
    kw = {} if backend is None else {"backend": backend}
    envs_ = [pkg.FAST_ENVS[env_id](num_envs, seed=0, **kw) for pkg in packages]
    g = torch.Generator().manual_seed(0)
    if envs_[0].is_discrete:
        acts = torch.randint(0, envs_[0].action_dim, (steps, num_envs), generator=g)
    else:
        acts = torch.randn(steps, num_envs, envs_[0].action_dim, generator=g)
    best = [[float("inf")] * 2 for _ in envs_]
    for r in range(repeats + 1):  # the first round warms up
        for env, b in zip(envs_, best):
            env.reset()
            t0, c0 = time.perf_counter(), time.thread_time()
            for t in range(steps):
                env.step(acts[t])
            dt, dc = time.perf_counter() - t0, time.thread_time() - c0
            if r:
                b[0], b[1] = min(b[0], dt), min(b[1], dc)
    return [(1e6 * wall / steps, 1e6 * cpu / steps) for wall, cpu in best]


def single_steps_per_second(env_id: str, steps: int, repeats: int) -> tuple[float, float]:
    """Best wall-clock and best thread-CPU steps per second of ``gym.make(env_id)``."""
    env = gym.make(env_id)
    env.action_space.seed(0)
    acts = [env.action_space.sample() for _ in range(steps)]
    best = cpu_best = float("inf")
    for r in range(repeats + 1):
        env.reset(seed=r)
        t0, c0 = time.perf_counter(), time.thread_time()
        for a in acts:
            _, _, terminated, truncated, _ = env.step(a)
            if terminated or truncated:
                env.reset()
        dt, dc = time.perf_counter() - t0, time.thread_time() - c0
        if r:
            best, cpu_best = min(best, dt), min(cpu_best, dc)
    return steps / best, steps / cpu_best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--num-envs", type=int, default=160)
    p.add_argument("--steps", type=int, default=500, help="steps per timed rollout")
    p.add_argument("--repeats", type=int, default=15, help="timed rollouts (best is reported)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--tasks", nargs="*", default=IDS)
    p.add_argument("--backends", nargs="*", default=["default"],
                   help="array backends of the batched envs: default (numpy on CPU), numpy, torch")
    p.add_argument("--baseline", type=Path, metavar="DIR",
                   help="also time DIR/envs (another version), alternating with this one, and print the ratio")
    p.add_argument("--single", action="store_true", help="also time gym.make single environments")
    p.add_argument("--single-steps", type=int, default=20_000)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), {os.cpu_count()} cores, load "
          f"{os.getloadavg()[0]:.1f}; best of {args.repeats}")
    print(f"batched, {args.num_envs} envs ({args.steps}-step rollouts):")
    packages = (envs,) if args.baseline is None else (envs, load_envs(args.baseline))
    for backend in args.backends:
        for env_id in args.tasks:
            timings = batched_us_per_step(env_id, args.num_envs, args.steps, args.repeats,
                                          None if backend == "default" else backend, packages)
            (us, cpu_us) = timings[0]
            line = (f"  {backend:8s} {env_id:26s} {us:7.1f} us/step (thread CPU {cpu_us:6.1f})  "
                    f"{args.num_envs / us:6.2f} M env-steps/s")
            if args.baseline is not None:
                base_us, base_cpu = timings[1]
                line += f"  | baseline {base_us:7.1f} (CPU {base_cpu:6.1f}), ratio {us / base_us:.3f} (CPU {cpu_us / base_cpu:.3f})"
            print(line)
    if args.single:
        print(f"single env via gym.make ({args.single_steps} steps):")
        for env_id in ["CartPole-v1 (Gymnasium)", *args.tasks]:
            gid = env_id.split()[0]
            sps, cpu_sps = single_steps_per_second(gid, args.single_steps, max(3, args.repeats // 3))
            print(f"  {env_id:26s} {sps:9.0f} steps/s (thread CPU {cpu_sps:9.0f})")


if __name__ == "__main__":
    main()
