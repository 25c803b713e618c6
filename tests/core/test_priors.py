"""Eq. 14 priors against torch.distributions (the densities themselves: tests/core/test_probability.py).

The log-variances s = log v are particle coordinates, so the density of s is the Inv-Gamma density of
v = e^s times the Jacobian |dv/ds| = e^s:  log p(s) = InverseGamma(a, b).log_prob(e^s) + s.
"""
from __future__ import annotations

import math

import pytest
import torch
from torch.distributions import InverseGamma, Normal

from svpg.core.layers import StructuralLinear
from svpg.core.networks import NetworkSpec, ParticleMLP
from svpg.core.particles import ParticleLayout
from svpg.core.priors import FlatPrior, GaussianPrior, HierarchicalGaussianPrior, make_prior

F64 = torch.float64


def _randn(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=F64)


def ref_normal(x: torch.Tensor, log_var: torch.Tensor) -> torch.Tensor:
    """Σ over non-particle axes of log N(x | 0, e^{log_var}) via torch.distributions."""
    m = x.shape[0]
    scale = torch.exp(0.5 * log_var).reshape(m, *([1] * (x.ndim - 1)))
    return Normal(torch.zeros_like(x), scale.expand_as(x)).log_prob(x).reshape(m, -1).sum(1)


def ref_inv_gamma_of_log(s: torch.Tensor, a: float, b: float) -> torch.Tensor:
    a_t, b_t = torch.tensor(a, dtype=s.dtype), torch.tensor(b, dtype=s.dtype)
    return InverseGamma(a_t, b_t).log_prob(torch.exp(s)) + s  # + log|dv/ds|


# ----------------------------------------------------------------------------- eq. 14 groups
def test_hierarchical_group_log_prob():
    prior = HierarchicalGaussianPrior(a=1.0, b=0.1)
    x1, x2 = _randn(3, 4, 2, seed=1), _randn(3, 5, seed=2)
    s = torch.tensor([-1.0, 0.2, 1.5], dtype=F64)
    expected = ref_normal(x1, s) + ref_normal(x2, s) + ref_inv_gamma_of_log(s, 1.0, 0.1)
    torch.testing.assert_close(prior.group_log_prob([x1, x2], s), expected, rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------- layer and network priors
def _layer_prior_reference(layout, theta, name, a, b, learn_scales, k):
    g = lambda blk: layout.get(theta, f"{name}.{blk}")  # noqa: E731
    s_c = g("log_var_C")[:, 0]
    lp = ref_normal(g("C"), s_c) + ref_normal(g("bias"), s_c) + ref_inv_gamma_of_log(s_c, a, b)  # C, b ~ N(0, λ)
    if learn_scales:
        s_l = g("log_var_lam")[:, 0]  # Λ1, Λ2 ~ N(0, ψ I)
        lp = lp + ref_normal(g("lam_in"), s_l) + ref_normal(g("lam_out"), s_l) + ref_inv_gamma_of_log(s_l, a, b)
    if k:
        s_v = g("log_var_v")[:, 0]  # v^(p), v^(q) ~ N(0, φ I)
        lp = lp + ref_normal(g("v_in"), s_v) + ref_normal(g("v_out"), s_v) + ref_inv_gamma_of_log(s_v, a, b)
    return lp


@pytest.mark.parametrize("learn_scales,k", [(False, 0), (True, 0), (False, 2), (True, 3)])
def test_structural_linear_log_prior_matches_distributions(learn_scales, k):
    layout = ParticleLayout()
    layer = StructuralLinear(layout, "l", 4, 3, householder=k, learn_scales=learn_scales, prior=HierarchicalGaussianPrior(1.0, 0.1))
    theta = _randn(5, layout.size, seed=k + 10 * learn_scales)
    lp = layer.log_prior(theta)
    assert lp.shape == (5,)
    torch.testing.assert_close(lp, _layer_prior_reference(layout, theta, "l", 1.0, 0.1, learn_scales, k), rtol=1e-12, atol=1e-10)
    # gradients agree too (w.r.t. every coordinate, log-variances included)
    t1 = theta.clone().requires_grad_(True)
    t2 = theta.clone().requires_grad_(True)
    (g1,) = torch.autograd.grad(layer.log_prior(t1).sum(), t1)
    (g2,) = torch.autograd.grad(_layer_prior_reference(layout, t2, "l", 1.0, 0.1, learn_scales, k).sum(), t2)
    torch.testing.assert_close(g1, g2, rtol=1e-10, atol=1e-10)


def test_network_log_prior_sums_layers_and_uses_spec_hyperparameters():
    layout = ParticleLayout()
    spec = NetworkSpec(sizes=(3, 4, 2), householder=2, learn_scales=True, prior="mvg", prior_a=2.0, prior_b=0.5)
    mlp = ParticleMLP(layout, spec)
    theta = _randn(4, layout.size, seed=3)
    expected = _layer_prior_reference(layout, theta, "net.0", 2.0, 0.5, True, 2) + _layer_prior_reference(
        layout, theta, "net.1", 2.0, 0.5, True, 2
    )
    torch.testing.assert_close(mlp.log_prior(theta), expected, rtol=1e-12, atol=1e-10)


# ----------------------------------------------------------------------------- flat prior
def test_flat_prior_is_zero_and_declares_no_variances():
    layout = ParticleLayout()
    mlp = ParticleMLP(layout, NetworkSpec(sizes=(3, 4, 2), householder=2, learn_scales=True, prior="flat"))
    assert not any("log_var" in name for name in layout)
    assert all(isinstance(layer.prior, FlatPrior) for layer in mlp.layers)
    theta = _randn(4, layout.size, seed=0).requires_grad_(True)
    lp = mlp.log_prior(theta)
    assert lp.shape == (4,)
    assert torch.count_nonzero(lp) == 0
    # the default prior of a bare StructuralLinear is flat too
    layout2 = ParticleLayout()
    StructuralLinear(layout2, "l", 2, 2, householder=1, learn_scales=True)
    assert not any("log_var" in name for name in layout2)
    assert FlatPrior().group_log_prob([torch.ones(3, 2)], None).tolist() == [0.0, 0.0, 0.0]


# ----------------------------------------------------------------------------- fixed Gaussian prior
@pytest.mark.parametrize("learn_scales,k", [(False, 0), (True, 2)])
def test_gaussian_prior_is_every_group_under_one_fixed_normal(learn_scales, k):
    """C, the bias, Λ and v each ~ N(0, std²), with no variance coordinates and no hyperprior."""
    layout = ParticleLayout()
    spec = NetworkSpec(sizes=(4, 3, 2), householder=k, learn_scales=learn_scales, prior="gaussian", prior_std=0.7)
    mlp = ParticleMLP(layout, spec)
    assert not any("log_var" in name for name in layout)
    assert all(isinstance(layer.prior, GaussianPrior) and layer.prior.std == 0.7 for layer in mlp.layers)
    theta = _randn(3, layout.size, seed=4).requires_grad_(True)
    expected = Normal(torch.zeros((), dtype=F64), torch.tensor(0.7, dtype=F64)).log_prob(theta).sum(1)  # every coordinate is a weight
    torch.testing.assert_close(mlp.log_prior(theta), expected, rtol=1e-12, atol=1e-10)
    (grad,) = torch.autograd.grad(mlp.log_prior(theta).sum(), theta)
    torch.testing.assert_close(grad, -theta / 0.49, rtol=1e-12, atol=1e-12)


def test_gaussian_prior_has_no_degenerate_mode_where_eq14_has_one():
    """Shrinking a wide layer's weights by 10 raises eq. 14's joint density (its variance follows) by about
    (D/2)·log 100, while under a fixed N(0, 1) it only ever lowers the penalty ½‖w‖²: by at most
    ½‖w‖² here, a bounded gain that a likelihood can outweigh."""
    d = 20_000
    w = _randn(1, d, seed=5) * 0.05
    hier, fixed = HierarchicalGaussianPrior(1.0, 0.1), GaussianPrior(1.0)

    def joint_mode(x):  # eq. 14 at its best variance for these weights: s* = log((b + ‖x‖²/2)/(a + d/2))
        s = torch.log((0.1 + 0.5 * x.square().sum(1)) / (1.0 + d / 2))
        return hier.group_log_prob([x], s)

    gain_hier = (joint_mode(w / 10) - joint_mode(w)).item()
    gain_fixed = (fixed.group_log_prob([w / 10], None) - fixed.group_log_prob([w], None)).item()
    assert gain_hier > 0.9 * (d / 2) * math.log(100)
    assert 0 < gain_fixed < 0.5 * w.square().sum().item() + 1e-9


# ----------------------------------------------------------------------------- make_prior
def test_make_prior_names_and_hyperparameters():
    assert isinstance(make_prior("gaussian", std=0.5), GaussianPrior) and make_prior("gaussian", std=0.5).std == 0.5
    assert not make_prior("gaussian").learns_variances and make_prior("gaussian").std == 1.0
    with pytest.raises(ValueError, match="std must be positive, got 0"):
        make_prior("gaussian", std=0)
    for name in ("mvg", "hierarchical"):
        p = make_prior(name, a=2.0, b=0.3)
        assert isinstance(p, HierarchicalGaussianPrior) and (p.a, p.b) == (2.0, 0.3)
        assert p.learns_variances
    d = make_prior("mvg")
    assert (d.a, d.b) == (1.0, 0.1)  # §5: a = 1, b = 0.1
    assert isinstance(make_prior("flat"), FlatPrior) and not make_prior("flat").learns_variances


def test_make_prior_rejects_unknown_name():
    with pytest.raises(ValueError, match=r"unknown prior 'laplace'.*'mvg'.*'gaussian'.*'flat'"):
        make_prior("laplace")


@pytest.mark.parametrize("a,b", [(0.0, 0.1), (-1.0, 0.1), (1.0, 0.0), (1.0, -0.5)])
def test_make_prior_rejects_nonpositive_hyperparameters(a, b):
    with pytest.raises(ValueError, match="must be positive"):
        make_prior("mvg", a=a, b=b)
    with pytest.raises(ValueError, match="must be positive"):
        ParticleMLP(ParticleLayout(), NetworkSpec(sizes=(2, 2), prior="mvg", prior_a=a, prior_b=b))
