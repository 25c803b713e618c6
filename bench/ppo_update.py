#!/usr/bin/env python
"""How long does one PPO iteration's update take (the critics' fit and the policy's SVGD steps, not the
rollout)? Optionally for several svpg source trees, taking turns, to measure a change.

    python bench/ppo_update.py                                  # MinAtar/Breakout-v1's preset, this tree
    python bench/ppo_update.py --src /path/to/old/checkout .    # before / after, alternating
    python bench/ppo_update.py --preset MinAtar/Breakout-v1 --epochs 2 --repeats 5 --threads 1

One rollout of the preset (``--seed``) is collected once and saved (``--rollout``); every figure is then
one iteration's update on that same rollout, from the same freshly built model, in a fresh process with
``PYTHONPATH`` set to the source tree: ``advantages`` and ``fit`` (the critics) and ``policy_update``
(PPO's epochs × minibatches SVGD steps). The trees take turns (A, B, A, B, …) and each figure is the best
of ``--repeats`` rounds (on a shared machine the best is the capacity, the rest is other people's load).
``--epochs`` overrides the preset's ``ppo_epochs`` and ``value_epochs`` (both 10) for a quicker figure:
the update's time is proportional to them. Prints only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def one(args: argparse.Namespace) -> dict[str, Any]:
    """Build the preset's model, load (or collect and save) the rollout, time one update."""
    import torch

    import svpg
    from svpg.rl.config import load_preset
    from svpg.rl.rollout import Rollout

    preset = load_preset(args.preset)
    preset.pop("total_steps", None)
    env_id = preset.pop("env_id")
    if args.epochs:
        preset.update(ppo_epochs=args.epochs, value_epochs=args.epochs)
    model = svpg.SVPG(env_id, seed=args.seed, verbose=0, threads=args.threads, **preset)
    path = Path(args.rollout)
    if path.exists():
        batch = Rollout(**torch.load(path))
    else:
        with torch.no_grad():
            batch = model.collect()
        torch.save(vars(batch), path)
    est = model.estimator
    times: dict[str, Any] = {}
    for name in ("advantages", "fit", "policy_update"):
        method = getattr(est, name)

        def timed(*a, _method=method, _name=name, **k):
            t = time.perf_counter()
            out = _method(*a, **k)
            times[_name] = time.perf_counter() - t
            return out

        setattr(est, name, timed)
    t = time.perf_counter()
    model.train_iteration(batch)
    times["update"] = time.perf_counter() - t
    times["svpg"] = str(Path(svpg.__file__).resolve().parents[1])  # which tree was imported
    return times


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="MinAtar/Breakout-v1")
    p.add_argument("--src", nargs="+", default=[str(ROOT)], help="svpg source trees (repository roots) to compare")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--epochs", type=int, default=0, help="ppo_epochs and value_epochs (0: the preset's)")
    p.add_argument("--threads", type=int, default=1, help="the model's threads (0: all cores)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rollout", default="", help="where the rollout is kept (default: a temporary file)")
    p.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(one(args)))
        return 0
    tmp = None
    if not args.rollout:
        tmp = tempfile.TemporaryDirectory()
        args.rollout = os.path.join(tmp.name, "rollout.pt")
    srcs = [str(Path(s).resolve()) for s in args.src]
    base = [sys.executable, __file__, "--one", "--preset", args.preset, "--seed", str(args.seed)]
    base += ["--epochs", str(args.epochs), "--threads", str(args.threads), "--rollout", args.rollout]
    best: dict[str, dict[str, float]] = {s: {} for s in srcs}
    load = os.getloadavg()[0]
    for _ in range(args.repeats):
        for src in srcs:
            env = {**os.environ, "PYTHONPATH": src}
            out = subprocess.run(base, env=env, capture_output=True, text=True, check=True).stdout
            times = json.loads(out.strip().splitlines()[-1])
            if times.pop("svpg") != src:
                raise SystemExit(f"{src}: its svpg was not the one imported; give a repository root")
            for k, v in times.items():
                best[src][k] = min(best[src].get(k, float("inf")), v)
    load = max(load, os.getloadavg()[0])
    print(f"{args.preset}, seed {args.seed}, {args.threads} threads, best of {args.repeats}, load up to {load:.1f}")
    print("| source | advantages s | critics' fit s | policy update s | update s | ratio to the first |")
    print("|---|---:|---:|---:|---:|---:|")
    first = best[srcs[0]]["update"]
    for src, b in best.items():
        print(
            f"| {src} | {b['advantages']:.2f} | {b['fit']:.2f} | {b['policy_update']:.2f} | {b['update']:.2f} "
            f"| {first / b['update']:.2f}× |"
        )
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
