#!/usr/bin/env python
"""Does batching the particles' CNNs pay? Forward + backward of M particles' convolutional torsos at
once (one grouped convolution per layer, :mod:`svpg.core.extractors`), per particle, against one
particle alone.

    python bench/cnn_batching.py                      # 10×10×4 (small torso) and 84×84×4 (NatureCNN)
    python bench/cnn_batching.py --particles 1 4 16 32 --batch 64 --repeats 7 --threads 2

Each figure is one forward pass of the policy network (torso, dense layers, a 6-way head) of M
particles on ``--batch`` observations each, then the backward pass of the sum of its outputs to θ
(M, D), as a training step computes them; the time per particle is that divided by M, and the ratio
is that per-particle time over M = 1's (below 1: batching pays). Variants take turns, one round
each, and each figure is the best of ``--repeats`` rounds (on a shared machine the best is the
capacity, the rest is other people's load). Prints only.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from svpg.core.extractors import ObsLayout, ParticleNetwork, feature_size  # noqa: E402
from svpg.core.networks import NetworkSpec  # noqa: E402
from svpg.core.particles import ParticleLayout  # noqa: E402


def make_case(shape: tuple[int, ...], m: int, batch: int, device: str, structural: bool = True):
    obs = ObsLayout.from_space(gym.spaces.Box(0, 255, shape, np.uint8))
    assert obs is not None
    layout = ParticleLayout()
    spec = NetworkSpec((feature_size(obs), 64, 64, 6), householder=int(structural), learn_scales=structural)
    net = ParticleNetwork(layout, obs, spec, name="pi")
    theta = torch.empty(m, layout.size, device=device)
    net.init_(theta, torch.Generator(device=device).manual_seed(0))
    theta.requires_grad_(True)
    x = torch.randint(0, 256, (m, batch, obs.size), generator=torch.Generator().manual_seed(1)).float().to(device)
    return net, theta, x, obs.parts[0].torso


def one_pass(net: ParticleNetwork, theta: torch.Tensor, x: torch.Tensor) -> None:
    theta.grad = None
    with net.layout.split(theta):  # as the training step reads θ's blocks: one backward concatenation
        out = net.fast_forward(net.fast_weights(net.weights(theta)), x)
    out.sum().backward()
    if theta.device.type == "cuda":
        torch.cuda.synchronize()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--particles", type=int, nargs="+", default=[1, 4, 16])
    p.add_argument("--batch", type=int, default=32, help="observations per particle")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--device", default="cpu")
    p.add_argument(
        "--method",
        choices=("s2vgd", "svgd"),
        default="s2vgd",
        help="dense layers with one Householder reflection and scales (s2vgd, the default) or plain (svgd)",
    )
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.device}, batch {args.batch} per "
        f"particle, {args.method} dense layers"
    )
    print("| image | torso | M | ms per pass | ms per particle | per particle / M = 1 |")
    print("|---|---|---:|---:|---:|---:|")
    for shape in [(10, 10, 4), (84, 84, 4)]:
        cases = {m: make_case(shape, m, args.batch, args.device, args.method == "s2vgd") for m in args.particles}
        for case in cases.values():
            one_pass(*case[:3])  # warm-up
        best = {m: float("inf") for m in cases}
        for _ in range(args.repeats):
            for m, (net, theta, x, _) in cases.items():
                t = time.perf_counter()
                one_pass(net, theta, x)
                best[m] = min(best[m], time.perf_counter() - t)
        base = best[min(cases)] / min(cases)
        for m, (_, _, _, torso) in cases.items():
            per = best[m] / m
            name = "×".join(str(s) for s in shape)
            print(f"| {name} | {torso} | {m} | {1e3 * best[m]:.2f} | {1e3 * per:.2f} | {per / base:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
