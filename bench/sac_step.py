#!/usr/bin/env python
"""The off-policy estimator's cost per environment step against Stable-Baselines3 SAC's, on one CPU thread.

    python bench/sac_step.py --env-id Hopper-v5 --steps 200

Both with their defaults: svpg's M = 4 particles make one gradient step (twin critics, temperature and one
SVGD step of all particles) after every step of all particles, that is one gradient step per M
environment steps; SB3's SAC makes one per environment step. Prints the seconds of a gradient step of
each, measured in this one process one after the other, and their ratio per environment step (the
machine is shared: compare the ratio, not the seconds).
"""

from __future__ import annotations

import time

import torch

from svpg.cli import Parser


def main() -> None:
    p = Parser(prog="python bench/sac_step.py", description=__doc__)
    p.add_argument("--env-id", default="Hopper-v5")
    p.add_argument("--steps", type=int, default=200, help="gradient steps timed per agent")
    p.add_argument("--repeats", type=int, default=3, help="alternate the two agents this many times")
    args = p.parse_args()
    torch.set_num_threads(1)

    from stable_baselines3 import SAC

    import svpg

    model = svpg.SVPG(args.env_id, estimator="sac", seed=0, verbose=0, learning_starts=10**9, threads=1)
    model.train_iteration()  # fills the buffer with one horizon of uniform actions, makes no update
    estimator, particles = model.estimator, model.config.num_particles
    sb3 = SAC("MlpPolicy", args.env_id, seed=0, device="cpu", learning_starts=0, verbose=0)
    sb3.learn(1000)  # a filled buffer and initialised optimizers

    def ours() -> float:
        minibatches, noise = model.streams("replay_minibatch"), model.streams("sac_noise")
        t0 = time.perf_counter()
        for i in range(args.steps):  # as in training: the SVGD diagnostics on an iteration's last update only
            estimator.gradient_step(model, minibatches, noise, remaining=args.steps - 1 - i)
        return (time.perf_counter() - t0) / args.steps

    def theirs() -> float:
        t0 = time.perf_counter()
        sb3.train(gradient_steps=args.steps, batch_size=sb3.batch_size)
        return (time.perf_counter() - t0) / args.steps

    svpg_s, sb3_s = [], []
    for _ in range(args.repeats):
        svpg_s.append(ours())
        sb3_s.append(theirs())
    a, b = min(svpg_s), min(sb3_s)
    print(f"{args.env_id}, one CPU thread, best of {args.repeats} × {args.steps} gradient steps:")
    print(f"  svpg sac, M = {particles}: {a * 1e3:.1f} ms per gradient step, {a / particles * 1e3:.1f} ms per env step")
    print(f"  SB3 SAC:             {b * 1e3:.1f} ms per gradient step, {b * 1e3:.1f} ms per env step")
    print(f"  svpg / SB3 per environment step: {a / particles / b:.2f}")


if __name__ == "__main__":
    main()
