"""Array namespaces for the task kernels: one definition of each task's equations, three executions.

Every fast-path task writes its transition, reward and termination *once*, as a kernel
``kernel(xp, state, action)`` over the columns of the state (see :class:`svpg.envs.base.BatchedKernelEnv`).
The kernel only uses

- the math functions of the namespace ``xp`` (``sin``, ``addcmul``, ``clip``, ``wrap_angle``, ... listed in
  :class:`TorchOps`),
- arithmetic and comparison operators (``+ - * / > |``) between columns and Python numbers.

A Python-number operand follows the column's dtype (NumPy's NEP 50 and torch's type promotion alike),
so a float32 column stays float32 and rounds the number to float32 first (torch's float16/bfloat16
compute with it in float32). It costs more than a 0-d array operand (~0.4 us per op in numpy, ~2 us
in torch): at 160 envs, 3-6 % of a numpy step and 8-19 % of a torch step for all of a task's numbers
together (``bench/env_step.py --baseline``), the price of equations that read like the physics.
Where a kernel needs a constant *array* (the table of :meth:`TorchOps.take`, the constant term of
:meth:`TorchOps.addcmul`) it passes Python floats and the namespace converts them once and caches
the array.

The namespaces:

- :class:`NumpyOps` runs a kernel on ``(num_envs,)`` numpy columns: the batched envs on CPU. A numpy
  call on a few hundred numbers costs ~0.3 us, a torch call ~1.2 us, so this is ~2x faster than
  torch there; the envs hand out the results as torch tensors (``torch.from_numpy``, no copy).
- :class:`TorchOps` runs it on ``(num_envs,)`` tensor columns: the batched envs on other devices
  (CUDA), and on CPU when asked for.
- :data:`SCALAR` runs it on Python floats (~30 ns an op): one environment for ``gym.make`` and
  Stable-Baselines3, as fast as Gymnasium's own classic-control envs.

The fused ops follow torch's argument and evaluation order (``addcmul(a, b, c, value=v)`` is
``a + v * b * c``, ``addcdiv(a, b, c, value=v)`` is ``a + v * b / c``), so all paths round alike. The
namespaces of the batched paths also carry the few whole-array operations the env loop needs
(``columns``, ``stack_columns``, ``where_rows``, ...).
"""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = ["TorchOps", "NumpyOps", "SCALAR", "numpy_dtype"]


class TorchOps:
    """Namespace for kernels on ``(num_envs,)`` tensor columns."""

    sin = staticmethod(torch.sin)
    cos = staticmethod(torch.cos)
    abs = staticmethod(torch.abs)
    hypot = staticmethod(torch.hypot)
    #: ``add(a, b, alpha=v)`` is ``a + v * b``
    add = staticmethod(torch.add)
    #: ``addcdiv(a, b, c, value=v)`` is ``a + v * b / c``
    addcdiv = staticmethod(torch.addcdiv)

    def __init__(self, device: torch.device, dtype: torch.dtype):
        self.device, self.dtype = device, dtype
        self._arrays: dict[float | tuple, torch.Tensor] = {}

    def _c(self, value: float | tuple) -> torch.Tensor:
        """``value`` as a tensor of the env's dtype and device, made on first use."""
        a = self._arrays.get(value)
        if a is None:
            a = self._arrays[value] = torch.tensor(value, device=self.device, dtype=self.dtype)
        return a

    def addcmul(self, a, b: torch.Tensor, c: torch.Tensor, value: float = 1.0) -> torch.Tensor:
        """``a + value * b * c``; ``a`` may be a Python float (a constant term)."""
        # torch.addcmul takes no Python-number input, and unfused ops would round differently
        return torch.addcmul(a if isinstance(a, torch.Tensor) else self._c(a), b, c, value=value)

    @staticmethod
    def clip(x: torch.Tensor, lo: float, hi: float) -> torch.Tensor:
        """``min(max(x, lo), hi)`` as a new array (for inputs the kernel does not own)."""
        return torch.clamp(x, lo, hi)

    @staticmethod
    def wrap_angle(x: torch.Tensor) -> torch.Tensor:
        """The angle ``x`` mapped into ``[-pi, pi)``."""
        return torch.remainder(x + math.pi, 2 * math.pi) - math.pi

    @staticmethod
    def clip_(x: torch.Tensor, lo: float, hi: float) -> torch.Tensor:
        """:meth:`clip` that may overwrite ``x``: only for intermediates the kernel created."""
        return x.clamp_(lo, hi)

    @staticmethod
    def fill_where_(x: torch.Tensor, cond: torch.Tensor, value) -> torch.Tensor:
        """``value`` where ``cond`` else ``x``; may overwrite ``x`` (an intermediate of the kernel)."""
        return x.masked_fill_(cond, value)

    def take(self, table: tuple[float, ...], index: torch.Tensor) -> torch.Tensor:
        """``table[index]`` for a tuple of floats and an integer column ``index`` (e.g. a force per
        discrete action)."""
        return self._c(table).index_select(0, index)

    @staticmethod
    def full_like(x: torch.Tensor, value: float) -> torch.Tensor:
        """A column like ``x`` filled with ``value``."""
        return torch.full_like(x, value)

    # -- whole arrays (the env loop, not the kernels) --------------------------------------------
    @staticmethod
    def columns(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The columns of an ``(n, d)`` array (views)."""
        return x.unbind(1)

    @staticmethod
    def stack_columns(cols) -> torch.Tensor:
        """``(n, d)`` array from ``d`` columns."""
        return torch.stack(cols, 1)

    @staticmethod
    def where_rows(cond: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Rows of ``a`` where ``cond`` else rows of ``b``."""
        return torch.where(cond.unsqueeze(1), a, b)

    @staticmethod
    def to_torch(x: torch.Tensor) -> torch.Tensor:
        return x

    @staticmethod
    def from_torch(x: torch.Tensor, dtype=None) -> torch.Tensor:
        """The tensor itself (in ``dtype`` if given); it must already be on the env's device."""
        return x if dtype is None or x.dtype == dtype else x.to(dtype)


def numpy_dtype(dtype: torch.dtype) -> np.dtype:
    """The numpy dtype of a torch dtype (``torch.float32`` -> ``float32``)."""
    return torch.empty((), dtype=dtype).numpy().dtype


class NumpyOps:
    """Namespace for kernels on ``(num_envs,)`` numpy columns of one floating dtype (CPU).

    The Python-float coefficients of its functions are turned into 0-d arrays of the dtype once and
    cached: an operation with a 0-d array costs ~0.3 us less than with a Python float, which numpy
    converts at every call.
    """

    sin = staticmethod(np.sin)
    cos = staticmethod(np.cos)
    abs = staticmethod(np.abs)
    hypot = staticmethod(np.hypot)

    def __init__(self, dtype: torch.dtype):
        self.dtype = numpy_dtype(dtype)
        self._arrays: dict[float | tuple, np.ndarray] = {}

    def _c(self, value: float | tuple) -> np.ndarray:
        """``value`` as an array of the dtype, made on first use."""
        a = self._arrays.get(value)
        if a is None:
            a = self._arrays[value] = np.array(value, dtype=self.dtype)
        return a

    def add(self, a, b, alpha=1.0):
        if alpha == 1.0:
            return a + b
        t = b * self._c(alpha)
        t += a
        return t

    def addcmul(self, a, b, c, value=1.0):
        if value == 1.0:
            t = b * c
        else:
            t = b * self._c(value)
            t *= c
        t += self._c(a) if type(a) is float else a
        return t

    def addcdiv(self, a, b, c, value=1.0):
        t = b * self._c(value)
        t /= c
        t += a
        return t

    def clip(self, x, lo, hi):
        return np.minimum(np.maximum(x, self._c(lo)), self._c(hi))

    def clip_(self, x, lo, hi):
        np.maximum(x, self._c(lo), out=x)
        return np.minimum(x, self._c(hi), out=x)

    def wrap_angle(self, x):
        t = np.remainder(x + self._c(math.pi), self._c(2 * math.pi))
        t -= self._c(math.pi)
        return t

    @staticmethod
    def fill_where_(x, cond, value):
        np.putmask(x, cond, value)
        return x

    def take(self, table, index):
        return self._c(table)[index]

    @staticmethod
    def full_like(x, value):
        return np.full_like(x, value)

    # -- whole arrays (the env loop, not the kernels) --------------------------------------------
    @staticmethod
    def columns(x: np.ndarray) -> tuple[np.ndarray, ...]:
        return tuple(x.T)

    def stack_columns(self, cols) -> np.ndarray:
        out = np.empty((len(cols[0]), len(cols)), dtype=self.dtype)
        for i, c in enumerate(cols):
            out[:, i] = c
        return out

    @staticmethod
    def where_rows(cond, a, b):
        return np.where(cond[:, None], a, b)

    @staticmethod
    def to_torch(x: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(x)

    def from_torch(self, x: torch.Tensor, dtype=None) -> np.ndarray:
        """A numpy view (or converted copy) of a CPU tensor."""
        a = (x.detach() if x.requires_grad else x).numpy()
        if dtype is not None and a.dtype != dtype:
            a = a.astype(dtype)
        return a


def _add(a, b, alpha=1.0):
    return a + alpha * b


def _addcmul(a, b, c, value=1.0):
    return a + value * b * c


def _addcdiv(a, b, c, value=1.0):
    return a + value * b / c


def _clip(x, lo, hi):
    return min(max(x, lo), hi)


def _wrap_angle(x):
    return (x + math.pi) % (2 * math.pi) - math.pi


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
    wrap_angle = staticmethod(_wrap_angle)
    fill_where_ = staticmethod(_fill_where)
    take = staticmethod(_take)
    full_like = staticmethod(_full_like)
