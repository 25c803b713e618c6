"""M particles stored as one (M, D) tensor θ; named blocks are views into it.

Keeping every particle's coordinates in one flat row lets one backward pass give the (M, D)
gradient and the SVGD direction be two small matrix products, with no loop over particles.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import torch


class ParticleLayout:
    """Where each named parameter block lives inside a particle's flat coordinate vector."""

    def __init__(self) -> None:
        self._blocks: dict[str, tuple[int, tuple[int, ...]]] = {}
        self.size = 0
        self._source: torch.Tensor | None = None
        self._views: dict[str, torch.Tensor] = {}

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

    @contextmanager
    def split(self, theta: torch.Tensor):
        """Inside the block, :meth:`get` on ``theta`` returns views of one ``torch.split``.

        Each plain slice's backward pass writes a zero-filled (M, D) gradient and adds it up, once per
        block access; the views of one split have a single concatenation as their backward.
        """
        names = list(self._blocks)
        parts = torch.split(theta, [math.prod(self._blocks[n][1]) for n in names], dim=1)
        self._source = theta
        self._views = {n: p.view(theta.shape[0], *self._blocks[n][1]) for n, p in zip(names, parts)}
        try:
            yield
        finally:
            self._source, self._views = None, {}

    def get(self, theta: torch.Tensor, name: str) -> torch.Tensor:
        """The block ``name`` of every particle, a view of shape (M, *shape)."""
        if theta is self._source:
            return self._views[name]
        offset, shape = self._blocks[name]
        n = math.prod(shape)
        return theta[:, offset : offset + n].view(theta.shape[0], *shape)

    def per_coordinate(self, values: dict[str, float], default: float = 1.0) -> torch.Tensor:
        """A (D,) tensor holding ``values[name]`` on the coordinates of each named block, else ``default``."""
        out = torch.full((self.size,), float(default))
        for name, value in values.items():
            offset, shape = self._blocks[name]
            out[offset : offset + math.prod(shape)] = float(value)
        return out

    def describe(self) -> dict[str, list[int]]:
        """Block shapes, for checkpoint metadata and mismatch messages."""
        return {k: list(s) for k, (_, s) in self._blocks.items()}
