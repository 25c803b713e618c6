"""Independent random streams spawned from one run seed.

Every consumer of randomness (initial particles, environment resets, action noise, critics, evaluation,
minibatch order, bandit tables, data splits …) draws from its own stream, a child of
``numpy.random.SeedSequence(seed)`` keyed by the consumer's name. Children of one SeedSequence are
statistically independent (NumPy's guarantee for ``spawn``), so no two consumers share numbers, and
neighbouring run seeds share nothing either (``seed + 1`` is not a stream of ``seed``). Named keys
instead of ``spawn(n)`` positions keep a stream fixed when another consumer is added.

>>> init = torch_generator(0, "policy_init")
>>> rng = numpy_rng(0, "bandit_table", 3)      # nested keys: the table of seed index 3
>>> s = int_seed(0, "env_reset")               # for APIs that take an integer seed
"""

from __future__ import annotations

import zlib

import numpy as np
import torch


def _key(part: str | int) -> int:
    if isinstance(part, str):
        return zlib.crc32(part.encode())
    if isinstance(part, (int, np.integer)) and part >= 0:
        return int(part)
    raise TypeError(f"stream key parts are names or non-negative integers, got {part!r}")


def seed_sequence(seed: int, *stream: str | int) -> np.random.SeedSequence:
    """The child of ``SeedSequence(seed)`` named by ``stream`` (names and indices, outermost first)."""
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"a seed must be a non-negative integer, got {seed!r}")
    return np.random.SeedSequence(int(seed), spawn_key=tuple(_key(p) for p in stream))


def int_seed(seed: int, *stream: str | int) -> int:
    """A 63-bit integer drawn from the stream, for APIs that take an integer seed."""
    return int(seed_sequence(seed, *stream).generate_state(1, dtype=np.uint64)[0]) >> 1


def numpy_rng(seed: int, *stream: str | int) -> np.random.Generator:
    """A NumPy generator on the stream."""
    return np.random.default_rng(seed_sequence(seed, *stream))


def torch_generator(seed: int, *stream: str | int, device: str | torch.device = "cpu") -> torch.Generator:
    """A torch generator on ``device`` seeded from the stream (no global RNG state is touched)."""
    gen = torch.Generator(device=device)
    gen.manual_seed(int_seed(seed, *stream))
    return gen
