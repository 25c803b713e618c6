"""VMG with pseudo-data (Louizos & Welling 2016, §2.4 eqs. 8–11, §4) and BADAM's N: checked against direct
computations on tiny layers."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.distributions as D

from svpg.core.variational import BBB_PRIOR_GRID, MatrixGaussianLinear, make_posterior


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _layer(n_in=3, n_out=2, pseudo=2, **kw):
    """A double-precision VMG layer with perturbed, non-trivial parameters."""
    layer = MatrixGaussianLinear(n_in, n_out, gen(), prior_std=1.0, init_std=0.01, pseudo_data=pseudo, **kw).double()
    g = gen(1)
    with torch.no_grad():
        for p in layer.parameters():
            p.add_(0.5 * torch.randn(p.shape, generator=g, dtype=p.dtype))
        layer.log_var_rows.add_(4.0)                 # variances of order 1 (they start at 0.01)
        layer.log_var_cols.add_(4.0)
        if pseudo:
            layer.log_pseudo_noise.fill_(-40.0)      # noise-free pseudo-data: the conditional is deterministic
    return layer


def _direct_conditional(layer, a):
    """Mean and covariance of the outputs a W (one row a, r entries) given Ã W = B̃, by conditioning the
    joint Gaussian of vec(W) ~ N(vec M, V ⊗ U) (column-major vec) directly in numpy."""
    c = layer.cols
    m = layer.M.detach().numpy()
    u, v = np.diag(layer.log_var_rows.exp().detach().numpy()), np.diag(layer.log_var_cols.exp().detach().numpy())
    pa = (layer.pseudo_inputs * layer.input_scale).detach().numpy()
    pb = layer.pseudo_outputs.detach().numpy()
    cov_w = np.kron(v, u)                                       # vec(W) column-major: W[:, j] blocks
    f_obs, f_out = np.kron(np.eye(c), pa), np.kron(np.eye(c), a[None])   # vec(A W) = (I ⊗ A) vec(W)
    mu_w = m.T.reshape(-1)
    s11 = f_obs @ cov_w @ f_obs.T + layer.JITTER * np.kron(v, np.eye(len(pa)))   # V ⊗ (Σ11 + jitter I)
    s12 = f_obs @ cov_w @ f_out.T
    s22 = f_out @ cov_w @ f_out.T
    gain = np.linalg.solve(s11, s12)
    mean = f_out @ mu_w + gain.T @ (pb.T.reshape(-1) - f_obs @ mu_w)
    return mean, s22 - s12.T @ gain


@pytest.mark.parametrize("scale_inputs", [False, True])
def test_pseudo_data_conditional_is_gaussian_conditioning_of_the_matrix_normal(scale_inputs):
    """Eq. 8–9: the output mean and variance of one input given Ã W = B̃ equal those of conditioning
    the joint Gaussian of vec(W) directly; the column covariance V factors out (eq. 8's ⊙ V)."""
    layer = _layer(scale_inputs=scale_inputs)
    h = torch.tensor([[0.3, -1.2, 0.8], [2.0, 0.1, -0.5]], dtype=torch.float64)
    mean, row_var = layer.moments(h.unsqueeze(0), gen(2))
    v = layer.log_var_cols.exp().detach().numpy()
    for i in range(len(h)):
        a = np.append(h[i].numpy(), 1.0) * layer.input_scale
        want_mean, want_cov = _direct_conditional(layer, a)
        np.testing.assert_allclose(mean[0, i].detach().numpy(), want_mean, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(row_var[0, i].item() * v, np.diag(want_cov), rtol=1e-5, atol=1e-9)
        np.testing.assert_allclose(want_cov - np.diag(np.diag(want_cov)), 0, atol=1e-9)   # outputs independent
    assert (row_var < (h.square() @ layer.log_var_rows[:-1].exp() + layer.log_var_rows[-1].exp()) * layer.input_scale ** 2).all()


def test_whole_weight_draws_are_the_conditional_matrix_normal():
    """sample()'s W = mean + R E V^½ with R Rᵀ = U − UÃᵀΣ11⁻¹ÃU: a W has the conditional's mean and row
    variance for any input row, and Ã W = B̃ up to the jitter."""
    layer = _layer(n_in=4, n_out=3, pseudo=2, scale_inputs=True)
    pa, pb = layer._pseudo(None, None)
    mean, factor = layer._conditional_weights(pa, pb)
    torch.testing.assert_close(pa @ mean, pb, atol=1e-4, rtol=0)
    torch.testing.assert_close(pa @ factor, torch.zeros_like(pa @ factor), atol=1e-4, rtol=0)
    h = torch.tensor([[0.5, -1.0, 2.0, 0.1]], dtype=torch.float64)
    a = torch.cat([h, torch.ones(1, 1, dtype=h.dtype)], 1) * layer.input_scale
    m, row_var = layer.moments(h.unsqueeze(0), gen())
    torch.testing.assert_close(a @ mean, m[0])
    torch.testing.assert_close((a @ factor).square().sum(), row_var[0, 0], rtol=1e-6, atol=1e-10)
    torch.testing.assert_close(layer.mean(), mean * layer.input_scale)
    w = layer.sample(5, gen(3))
    assert w.shape == (5, 5, 3)


def test_vmg_kl_with_pseudo_data_against_a_direct_computation():
    """The regulariser of a learned-precision layer with pseudo-data: E_q(τ)[KL(q(W) ‖ p(W | τ))] (the
    multivariate-normal KL at E τ, corrected by d/2 (log E τ − E log τ), the KL being linear in τ and
    log τ), the two Gamma KLs, and the pseudo-data noise KL −(½ log α + c1 α + c2 α² + c3 α³) per element
    counted from its value at the upper bound."""
    layer = _layer(n_in=3, n_out=2, pseudo=2, learn_precisions=True)
    alpha_max = layer.pseudo_dropout
    with torch.no_grad():
        layer.log_pseudo_noise.copy_(torch.tensor([0.5 * math.log(1e-3), 0.5 * math.log(2e-3)], dtype=torch.float64))
    d = layer.rows * layer.cols
    (ar, br), (ac, bc) = layer.log_gamma_rows.exp(), layer.log_gamma_cols.exp()
    e_tau = (ar / br * ac / bc).item()
    e_log_tau = (torch.digamma(ar) - br.log() + torch.digamma(ac) - bc.log()).item()
    q = D.MultivariateNormal(layer.M.reshape(-1), layer.covariance())
    p = D.MultivariateNormal(torch.zeros(d, dtype=torch.float64), torch.eye(d, dtype=torch.float64) / e_tau)
    expected_kl = D.kl_divergence(q, p).item() + 0.5 * d * (math.log(e_tau) - e_log_tau)
    prior = D.Gamma(torch.tensor(1.0, dtype=torch.float64), torch.tensor(0.5, dtype=torch.float64))
    gamma_kl = sum(D.kl_divergence(D.Gamma(a, b), prior).item() for a, b in ((ar, br), (ac, bc)))
    c1, c2, c3 = 1.16145124, -1.50204118, 0.58629921

    def g(al):
        return 0.5 * math.log(al) + c1 * al + c2 * al ** 2 + c3 * al ** 3

    pseudo_kl = 2 * 4 * (g(alpha_max) - g(1e-3)) + 2 * 2 * (g(alpha_max) - g(2e-3))   # Ã: 2 × 4, B̃: 2 × 2
    assert pseudo_kl > 0
    assert layer.kl().item() == pytest.approx(expected_kl + gamma_kl + pseudo_kl, rel=1e-9)
    assert layer.pseudo_kl().item() == pytest.approx(pseudo_kl, rel=1e-9)


def test_pseudo_data_are_capped_at_the_fan_in_and_the_noise_is_clipped():
    post = make_posterior("vmg", (3, 50, 1), pseudo_data=10, generator=gen())
    assert [layer.n_pseudo for layer in post.layers] == [3, 10]          # N_p < r = fan-in + 1 (§2.4)
    first = post.layers[0]
    assert first.pseudo_inputs.shape == (3, 4) and first.pseudo_inputs.abs().max() <= 0.01
    with torch.no_grad():
        first.log_pseudo_noise.copy_(torch.tensor([1.0, -9.0]))
    opt = torch.optim.Adam(post.parameters())
    post.observe_step(opt, 10)
    torch.testing.assert_close(first.log_pseudo_noise.detach(), torch.tensor([0.5 * math.log(0.005), -4.0]))
    with pytest.raises(ValueError, match="pseudo_data must be an integer"):
        make_posterior("vmg", (3, 1), pseudo_data=-1)
    with pytest.raises(ValueError, match="pseudo_dropout"):
        make_posterior("vmg", (3, 1), pseudo_dropout=0.0)


def test_reference_initialisation_and_input_scaling():
    """The reference code's start: σ_r σ_c ≈ 1 on inputs scaled by 1/√(fan-in + 1), the bias row's σ_r ≈ e⁻⁴,
    means of variance 4 / (fan-in + fan-out); the scaled layer's mean output is [x, 1] M / √(fan-in + 1)."""
    post = make_posterior("vmg", (400, 100, 1), reference_init=True, scale_inputs=True, learn_precisions=True,
                          generator=gen())
    layer = post.layers[0]
    sr, sc = (0.5 * layer.log_var_rows).exp(), (0.5 * layer.log_var_cols).exp()
    assert sr[:-1].sub(1).abs().max() < 0.05 and sc.sub(1).abs().max() < 0.05
    assert sr[-1].item() == pytest.approx(math.exp(-4), rel=0.05)
    assert layer.M[:-1].std().item() == pytest.approx(math.sqrt(4 / 500), rel=0.05) and (layer.M[-1] == 0).all()
    torch.testing.assert_close(layer.log_gamma_rows.exp(), torch.tensor([1.0, 0.5]))   # q(τ) starts at the prior
    x = torch.randn(7, 400, generator=gen(1))
    out = post.layers[0].mean()
    torch.testing.assert_close(out, layer.M / math.sqrt(401))
    torch.testing.assert_close(layer.moments(x.unsqueeze(0))[0][0], (x @ layer.M[:-1] + layer.M[-1]) / math.sqrt(401))


def test_badam_posterior_std_with_n_the_number_of_rows():
    """Eq. 14 with N = the training rows (the reference's BayesAdam(..., N, ...)): after one Adam step on
    the loss −(N/B) Σ log-lik − log p(θ) with gradient g, V^½ = |g| / N per example, so the posterior
    precision is N |g| / N + 1/σ² = |g| + 1/σ²: a std of order 1/√(|g| + 1), not the 1/√(t B |g| / N)
    of N = examples seen."""
    post = make_posterior("badam", (2, 1), prior_std=1.0, generator=gen())
    opt = torch.optim.Adam(post.parameters(), 1e-3)
    layer = post.layers[0]
    g = torch.tensor([[3.0], [-0.5], [8.0]])
    layer.theta.grad = g.clone()
    opt.step()
    n_rows = 455
    post.observe_step(opt, n_rows, data_size=n_rows)
    _, var = layer.posterior(post.examples_seen)
    torch.testing.assert_close(var, 1 / (g.abs() + 1.0))


def test_bbb_prior_grid_is_blundell_et_al_section_5():
    assert BBB_PRIOR_GRID["pi"] == (0.25, 0.5, 0.75)
    assert [round(-math.log(s)) for s in BBB_PRIOR_GRID["sigma1"]] == [0, 1, 2]
    assert [round(-math.log(s)) for s in BBB_PRIOR_GRID["sigma2"]] == [6, 7, 8]
