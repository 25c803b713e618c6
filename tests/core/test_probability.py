"""svpg.core.probability against torch.distributions and hand-computed values.

The Gamma and Inv-Gamma densities are those of s = log x (the particles store log-variances and
log-precisions), so the references are ``Gamma(a, b).log_prob(e^s) + s`` (the Jacobian |dx/ds| = e^s).
"""
from __future__ import annotations

import math

import pytest
import torch
from torch.distributions import Gamma, InverseGamma, Normal

from svpg.core.probability import (
    LOG_2PI,
    gamma_log_prob_of_log,
    gaussian_log_prob,
    inverse_gamma_log_prob_of_log,
    isotropic_gaussian_log_prob,
    log_mean_exp,
)

F64 = torch.float64


def _randn(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=F64)


def test_log_2pi():
    assert LOG_2PI == math.log(2 * math.pi)


def test_gaussian_log_prob_matches_normal_for_log_var_and_var():
    x, mean = _randn(3, 4, seed=0), _randn(3, 4, seed=1)
    log_var = torch.tensor([[-3.0], [0.0], [2.5]], dtype=F64)  # broadcast over the last axis
    ref = Normal(mean, torch.exp(0.5 * log_var)).log_prob(x)
    torch.testing.assert_close(gaussian_log_prob(x, mean, log_var=log_var), ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(gaussian_log_prob(x, mean, var=torch.exp(log_var)), ref, rtol=1e-12, atol=1e-12)


def test_gaussian_log_prob_by_hand():
    # x = 3, mean = 1, σ² = 4: −½ (4/4 + log 4 + log 2π)
    val = gaussian_log_prob(torch.tensor(3.0, dtype=F64), 1.0, var=torch.tensor(4.0, dtype=F64))
    assert val.item() == pytest.approx(-0.5 * (1 + math.log(4) + math.log(2 * math.pi)), rel=1e-14)
    with pytest.raises(ValueError, match="exactly one of log_var and var"):
        gaussian_log_prob(torch.zeros(1), 0.0)
    with pytest.raises(ValueError, match="exactly one of log_var and var"):
        gaussian_log_prob(torch.zeros(1), 0.0, log_var=torch.zeros(1), var=torch.ones(1))


@pytest.mark.parametrize("shape", [(4,), (3, 5), (2, 3, 2)])
def test_isotropic_gaussian_log_prob_sums_normal_over_each_row(shape):
    x = _randn(4, *shape, seed=len(shape))
    log_var = torch.tensor([-2.0, 0.0, 0.7, 3.0], dtype=F64)
    scale = torch.exp(0.5 * log_var).reshape(4, *([1] * len(shape)))
    ref = Normal(torch.zeros_like(x), scale.expand_as(x)).log_prob(x).reshape(4, -1).sum(1)
    torch.testing.assert_close(isotropic_gaussian_log_prob(x, log_var), ref, rtol=1e-12, atol=1e-12)
    # x = (1, 2), σ² = e⁰ = 1: −½(1 + 4) − log 2π
    val = isotropic_gaussian_log_prob(torch.tensor([[1.0, 2.0]], dtype=F64), torch.zeros(1, dtype=F64))
    assert val.item() == pytest.approx(-2.5 - math.log(2 * math.pi), rel=1e-14)


@pytest.mark.parametrize("a,b", [(1.0, 0.1), (2.5, 1.0), (0.5, 3.0)])
def test_gamma_and_inverse_gamma_of_log_match_torch_with_jacobian(a, b):
    s = torch.linspace(-6.0, 4.0, 21, dtype=F64)
    a_t, b_t = torch.tensor(a, dtype=F64), torch.tensor(b, dtype=F64)
    torch.testing.assert_close(gamma_log_prob_of_log(s, a, b), Gamma(a_t, b_t).log_prob(torch.exp(s)) + s,
                               rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(inverse_gamma_log_prob_of_log(s, a, b), InverseGamma(a_t, b_t).log_prob(torch.exp(s)) + s,
                               rtol=1e-12, atol=1e-12)
    # x ~ Inv-Gamma(a, b) ⇔ 1/x ~ Gamma(a, b): log x = −log(1/x), and the densities of s agree
    torch.testing.assert_close(inverse_gamma_log_prob_of_log(s, a, b), gamma_log_prob_of_log(-s, a, b), rtol=1e-12, atol=1e-12)


def test_inverse_gamma_of_log_is_normalised_in_s():
    # With the Jacobian, p(s) integrates to 1 over s (trapezoid rule on a wide grid, a = 1, b = 0.1);
    # without it the integral would be ∫ p_IG(e^s) ds ≠ 1.
    s = torch.linspace(-15.0, 25.0, 40001, dtype=F64)
    total = torch.trapezoid(torch.exp(inverse_gamma_log_prob_of_log(s, 1.0, 0.1)), s)
    assert total.item() == pytest.approx(1.0, abs=1e-6)


def test_log_mean_exp():
    x = torch.tensor([[0.0, 1000.0], [math.log(3.0), 1000.0 + math.log(3.0)]], dtype=F64)
    # column 0: log((1 + 3)/2) = log 2; column 1 would overflow as exp: 1000 + log 2
    torch.testing.assert_close(log_mean_exp(x, 0), torch.tensor([math.log(2.0), 1000 + math.log(2.0)], dtype=F64))
    torch.testing.assert_close(log_mean_exp(x[:, :1], 1), x[:, 0])  # the mean of one value
