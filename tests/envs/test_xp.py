"""The array namespaces of envs/xp.py: what lets kernels write constants as plain Python numbers.

A kernel writes ``9.0 + cos`` or ``abs(x) > 2.4``; on a float32 column that must round exactly as an
operation with the number first cast to float32 (a 0-d array of the column's dtype) would, or the
batched tasks would not reproduce themselves across the backends' conventions. The constant arrays
the fused ops need (the ``addcmul`` constant term, the ``take`` table) are made by the namespace.
"""

import math

import numpy as np
import pytest
import torch

from svpg.envs.xp import SCALAR, NumpyOps, TorchOps

DTYPES = [torch.float32, torch.float64]


def _columns(dtype, n=4096):
    g = torch.Generator().manual_seed(0)
    a = (torch.randn(n, generator=g, dtype=torch.float64) * 3).to(dtype)
    b = (torch.randn(n, generator=g, dtype=torch.float64) * 3).to(dtype)
    # values exactly at float32-rounded thresholds, where comparing in float64 would differ
    a[:3] = torch.tensor([2.4, -2.4, 12 * 2 * math.pi / 360], dtype=torch.float64).to(dtype)
    return a, b


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("number", [9.8, 2.4, 12 * 2 * math.pi / 360, -1.0 / 3.0])
def test_python_numbers_act_in_the_column_dtype(dtype, number):
    a, _ = _columns(dtype)
    for col, zero_d in ((a, torch.tensor(number, dtype=dtype)), (a.numpy(), np.array(number, a.numpy().dtype))):
        assert (col + number).dtype == col.dtype and (number * col).dtype == col.dtype
        for op in (lambda x, y: x + y, lambda x, y: x * y, lambda x, y: y * x, lambda x, y: x > y):
            np.testing.assert_array_equal(np.asarray(op(col, number)), np.asarray(op(col, zero_d)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_ops_take_python_constants(dtype):
    a, b = _columns(dtype)
    idx = (a > 0).long()
    table = (-10.0 / 1.1, 10.0 / 1.1)
    t_ops = TorchOps(torch.device("cpu"), dtype)
    ref = torch.addcmul(torch.tensor(2.0 / 3.0, dtype=dtype), a, b, value=-0.05 / 1.1)
    assert torch.equal(t_ops.addcmul(2.0 / 3.0, a, b, value=-0.05 / 1.1), ref)
    assert torch.equal(t_ops.take(table, idx), torch.tensor(table, dtype=dtype)[idx])
    n_ops = NumpyOps(dtype)
    an, bn, np_dtype = a.numpy(), b.numpy(), a.numpy().dtype
    ref_n = n_ops.addcmul(np.array(2.0 / 3.0, np_dtype), an, bn, value=-0.05 / 1.1)
    np.testing.assert_array_equal(n_ops.addcmul(2.0 / 3.0, an, bn, value=-0.05 / 1.1), ref_n)
    assert n_ops.addcmul(2.0 / 3.0, an, bn, value=-0.05 / 1.1).dtype == np_dtype
    np.testing.assert_array_equal(n_ops.take(table, idx.numpy()), np.array(table, np_dtype)[idx.numpy()])
    # the constant arrays are made once per namespace
    assert n_ops._c(table) is n_ops._c(table) and t_ops._c(2.0 / 3.0) is t_ops._c(2.0 / 3.0)


def test_scalar_namespace_matches_the_torch_formulas():
    a, b, c = 0.3, -1.7, 2.9
    assert SCALAR.addcmul(a, b, c, value=0.5) == a + 0.5 * b * c
    assert SCALAR.addcdiv(a, b, c, value=0.5) == a + 0.5 * b / c
    assert SCALAR.take((-1.0, 1.0), 1) == 1.0
    assert -math.pi <= SCALAR.wrap_angle(7.0) < math.pi
