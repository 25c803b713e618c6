"""Array namespaces for the task kernels: one definition of each task's equations, two executions.

Every fast-path task writes its transition, reward and termination *once*, as a kernel
``kernel(xp, k, state, action)`` over the columns of the state (see :class:`envs.base.TorchEnv`). The
kernel only uses

- the functions of the namespace ``xp`` below (``sin``, ``addcmul``, ``clip``, ...),
- arithmetic and comparison operators (``+ - * / > |``) between two *array* operands, and
- constants ``k.<name>``, which are 0-d tensors on the torch path and floats on the scalar path
  (a torch op with a Python scalar operand costs ~1.5 us more than with a 0-d tensor; Python scalars
  are fine, and cheap, as the ``value=`` / ``alpha=`` coefficients of the fused ops).

:data:`TORCH` runs a kernel on ``(num_envs,)`` tensor columns: the batched fast path, where each
call is one (fused) tensor op and the op count is the cost. :data:`SCALAR` runs the same kernel on
Python floats: one environment for ``gym.make`` and Stable-Baselines3, at the speed of Gymnasium's
own classic-control envs (a float op costs ~30 ns, a numpy op on a tiny array ~300 ns, a torch op
~1.2 us).

The fused ops follow torch's argument order and evaluation order (``addcmul(a, b, c, value=v)`` is
``a + v * b * c``, ``addcdiv(a, b, c, value=v)`` is ``a + v * b / c``), so both paths round alike.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Mapping

import torch

__all__ = ["TORCH", "SCALAR", "torch_constants", "scalar_constants"]


class TORCH:
    """Namespace for kernels on ``(num_envs,)`` tensor columns (the batched fast path)."""

    sin = torch.sin
    cos = torch.cos
    abs = torch.abs
    hypot = torch.hypot
    #: ``a + alpha * b``
    add = torch.add
    #: ``a + value * b * c``
    addcmul = torch.addcmul
    #: ``a + value * b / c``
    addcdiv = torch.addcdiv

    @staticmethod
    def clip(x: torch.Tensor, lo: float, hi: float) -> torch.Tensor:
        """``min(max(x, lo), hi)`` as a new array (for inputs the kernel does not own)."""
        return torch.clamp(x, lo, hi)

    @staticmethod
    def clip_(x: torch.Tensor, lo: float, hi: float) -> torch.Tensor:
        """:meth:`clip` that may overwrite ``x``: only for intermediates the kernel created."""
        return x.clamp_(lo, hi)

    @staticmethod
    def fill_where_(x: torch.Tensor, cond: torch.Tensor, value: float) -> torch.Tensor:
        """``value`` where ``cond`` else ``x``; may overwrite ``x`` (an intermediate of the kernel)."""
        return x.masked_fill_(cond, value)

    @staticmethod
    def take(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """``table[index]`` for an integer column ``index`` (e.g. a force per discrete action)."""
        return table.index_select(0, index)

    @staticmethod
    def full_like(x: torch.Tensor, value: float) -> torch.Tensor:
        """A column like ``x`` filled with ``value``."""
        return torch.full_like(x, value)


def _add(a, b, alpha=1.0):
    return a + alpha * b


def _addcmul(a, b, c, value=1.0):
    return a + value * b * c


def _addcdiv(a, b, c, value=1.0):
    return a + value * b / c


def _clip(x, lo, hi):
    return min(max(x, lo), hi)


def _fill_where(x, cond, value):
    return value if cond else x


def _take(table, index):
    return table[index]


def _full_like(x, value):
    return value


class SCALAR:
    """Namespace for kernels on Python floats (one environment, no array library at all)."""

    sin = staticmethod(math.sin)
    cos = staticmethod(math.cos)
    abs = staticmethod(abs)
    hypot = staticmethod(math.hypot)
    add = staticmethod(_add)
    addcmul = staticmethod(_addcmul)
    addcdiv = staticmethod(_addcdiv)
    clip = staticmethod(_clip)
    clip_ = staticmethod(_clip)
    fill_where_ = staticmethod(_fill_where)
    take = staticmethod(_take)
    full_like = staticmethod(_full_like)


def torch_constants(constants: Mapping[str, float | tuple], *, device, dtype) -> SimpleNamespace:
    """A task's constants as tensors: floats become 0-d tensors, tuples 1-d tensors."""
    return SimpleNamespace(
        **{name: torch.tensor(value, device=device, dtype=dtype) for name, value in constants.items()}
    )


def scalar_constants(constants: Mapping[str, float | tuple]) -> SimpleNamespace:
    """A task's constants as Python floats (tuples stay tuples of floats)."""
    return SimpleNamespace(
        **{
            name: tuple(float(v) for v in value) if isinstance(value, tuple) else float(value)
            for name, value in constants.items()
        }
    )
