"""M particles stored as one (M, D) tensor θ; named blocks are views into it (DESIGN §2).

Keeping every particle's coordinates in one flat row lets one backward pass give the (M, D)
gradient and the SVGD direction be two small matrix products, with no loop over particles.
"""
from __future__ import annotations

import math
from typing import Iterator

import torch


class ParticleLayout:
    """Where each named parameter block lives inside a particle's flat coordinate vector."""

    def __init__(self) -> None:
        self._blocks: dict[str, tuple[int, tuple[int, ...]]] = {}
        self.size = 0

    def add(self, name: str, shape: tuple[int, ...]) -> None:
        if name in self._blocks:
            raise ValueError(f"parameter block {name!r} is declared twice")
        self._blocks[name] = (self.size, tuple(shape))
        self.size += math.prod(shape)

    def __contains__(self, name: str) -> bool:
        return name in self._blocks

    def __iter__(self) -> Iterator[str]:
        return iter(self._blocks)

    def shape(self, name: str) -> tuple[int, ...]:
        return self._blocks[name][1]

    def get(self, theta: torch.Tensor, name: str) -> torch.Tensor:
        """The block ``name`` of every particle, a view of shape (M, *shape)."""
        offset, shape = self._blocks[name]
        n = math.prod(shape)
        return theta[:, offset : offset + n].view(theta.shape[0], *shape)

    def describe(self) -> dict[str, list[int]]:
        """Block shapes, for checkpoint metadata and mismatch messages."""
        return {k: list(s) for k, (_, s) in self._blocks.items()}
