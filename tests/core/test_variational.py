"""svpg.core.variational: each family's KL / density against torch.distributions or a hand computation,
sampling statistics, local reparameterisation against explicit weight draws, BADAM's eq. 14 from
Adam's state, a short fit per family, seeding."""
import math

import pytest
import torch
from torch import distributions as D

from svpg.core.variational import FAMILIES, WeightPosterior, make_posterior

ELBO_FAMILIES = ("bbb", "vmg", "kflow-diag", "kflow-linear")


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def perturb_(post: WeightPosterior, seed=1, scale=0.5):
    """Move every parameter away from its initial value (random means, scales, triangular factors)."""
    g = gen(seed)
    with torch.no_grad():
        for name, p in post.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            if name.endswith(("rho", "s_raw")):
                p.copy_(-1.0 + 0.3 * noise)          # softplus ≈ 0.3
            elif "log" in name:
                p.copy_(-1.0 + 0.3 * noise)
            else:
                p.add_(scale * noise)
    return post


def test_bad_input_names_the_problem():
    with pytest.raises(ValueError, match="unknown posterior family 'gp'.*bbb"):
        make_posterior("gp", (2, 1))
    with pytest.raises(ValueError, match="unknown option 'tau'.*prior_std"):
        make_posterior("vmg", (2, 1), tau=1.0)
    with pytest.raises(ValueError, match="activation"):
        make_posterior("bbb", (2, 1), "gelu")
    with pytest.raises(ValueError, match="pi"):
        make_posterior("bbb", (2, 1), pi=1.5)
    with pytest.raises(ValueError, match="num_samples"):
        make_posterior("bbb", (2, 1))(torch.zeros(3, 2), 0)
    assert set(FAMILIES) == {"bbb", "vmg", "kflow-diag", "kflow-linear", "badam"}


def test_bbb_gaussian_prior_kl_is_torchs():
    post = perturb_(make_posterior("bbb", (3, 4, 2), prior="gaussian", prior_std=0.7, generator=gen()))
    want = sum(D.kl_divergence(D.Normal(layer.mu, layer.std()), D.Normal(0.0, 0.7)).sum() for layer in post.layers)
    torch.testing.assert_close(post.regulariser(gen()), want)


def test_bbb_mixture_log_prior_and_mc_kl_match_numerical_integration():
    post = make_posterior("bbb", (1, 1), pi=0.25, sigma1=1.0, sigma2=math.exp(-2), kl_samples=200_000,
                          generator=gen())
    layer = post.layers[0]
    with torch.no_grad():
        layer.mu.copy_(torch.tensor([[0.3], [-0.1]]))
        layer.rho.copy_(torch.tensor([[-1.0], [-2.5]]))
    w = torch.linspace(-6, 6, 24001, dtype=torch.float64)
    mix = D.MixtureSameFamily(D.Categorical(torch.tensor([0.25, 0.75], dtype=torch.float64)),
                              D.Normal(torch.zeros(2, dtype=torch.float64),
                                       torch.tensor([1.0, math.exp(-2)], dtype=torch.float64)))
    torch.testing.assert_close(layer.log_prior(w.float().reshape(-1, 1, 1)).double(), mix.log_prob(w),
                               rtol=1e-4, atol=1e-4)
    exact = 0.0
    for mu, sd in zip(layer.mu.detach().double().flatten(), layer.std().detach().double().flatten()):
        q = D.Normal(mu, sd)
        exact += torch.trapezoid(q.log_prob(w).exp() * (q.log_prob(w) - mix.log_prob(w)), w).item()
    assert post.regulariser(gen(3)).item() == pytest.approx(exact, abs=0.01)
    few = make_posterior("bbb", (1, 1), pi=0.25, sigma1=1.0, sigma2=math.exp(-2), generator=gen())
    few.load_state_dict(post.state_dict())
    estimates = torch.stack([few.regulariser(gen(s)) for s in range(2000)])
    assert estimates.std() > 0.05                              # one draw is noisy, its mean is unbiased
    assert estimates.mean().item() == pytest.approx(exact, abs=4 * estimates.std().item() / math.sqrt(2000))


def test_vmg_kl_is_eq4_and_matches_the_matrix_normal_as_a_multivariate_normal():
    for prior_std in (1.0, 0.5):
        post = perturb_(make_posterior("vmg", (3, 2), prior_std=prior_std, generator=gen()))
        layer = post.layers[0]
        q = D.MultivariateNormal(layer.M.reshape(-1), layer.covariance())
        p = D.MultivariateNormal(torch.zeros(8), prior_std ** 2 * torch.eye(8))
        torch.testing.assert_close(post.regulariser(), D.kl_divergence(q, p), rtol=1e-5, atol=1e-5)
    # eq. 4 written out at s = 1
    post = perturb_(make_posterior("vmg", (3, 2), generator=gen()))
    layer = post.layers[0]
    vr, vc, m = layer.log_var_rows.exp(), layer.log_var_cols.exp(), layer.M
    eq4 = 0.5 * (vr.sum() * vc.sum() + m.square().sum() - 8 - 2 * vr.log().sum() - 4 * vc.log().sum())
    torch.testing.assert_close(post.regulariser(), eq4)


def test_vmg_learned_precisions_kl_is_the_expected_kl_plus_the_gamma_kls():
    post = perturb_(make_posterior("vmg", (3, 2), learn_precisions=True, generator=gen()))
    layer = post.layers[0]
    with torch.no_grad():
        layer.log_gamma_rows.copy_(torch.tensor([0.7, -0.2]))
        layer.log_gamma_cols.copy_(torch.tensor([1.5, 0.4]))
    q_r = D.Gamma(*layer.log_gamma_rows.detach().exp())
    q_c = D.Gamma(*layer.log_gamma_cols.detach().exp())
    torch.manual_seed(0)  # the Monte Carlo reference only
    tau = q_r.sample((100_000,)) * q_c.sample((100_000,))          # prior variance 1/(τ_r τ_c) per weight
    q = D.MultivariateNormal(layer.M.detach().reshape(-1), layer.covariance().detach())
    # KL(q ‖ N(0, v I)) = ½[(tr Σ + ‖M‖²)/v − d + d log v − log det Σ], averaged over τ
    trace_m = q.covariance_matrix.trace() + q.mean.square().sum()
    expected = 0.5 * (trace_m * tau - 8 - 8 * torch.log(tau) - torch.logdet(q.covariance_matrix)).mean()
    hyper = D.Gamma(torch.tensor(1.0), torch.tensor(0.5))
    want = expected + D.kl_divergence(q_r, hyper) + D.kl_divergence(q_c, hyper)
    assert post.regulariser().item() == pytest.approx(want.item(), rel=0.01)
    # the hyper-posteriors are learned: the KL has a gradient in them
    post.regulariser().backward()
    assert layer.log_gamma_rows.grad.abs().min() > 0


def test_vmg_draws_have_the_mean_and_kronecker_covariance():
    post = perturb_(make_posterior("vmg", (2, 3), generator=gen()))
    layer = post.layers[0]
    with torch.no_grad():
        w = layer.sample(100_000, gen(5)).reshape(100_000, -1)
    torch.testing.assert_close(w.mean(0), layer.M.detach().reshape(-1), atol=0.01, rtol=0)
    cov = torch.cov(w.T)
    want = torch.kron(torch.diag(layer.log_var_rows.exp()), torch.diag(layer.log_var_cols.exp())).detach()
    torch.testing.assert_close(cov, want, atol=0.01, rtol=0.03)
    # Kronecker: the variance of W_ij is the product of a row and a column factor (rank one)
    var = cov.diagonal().reshape(3, 3)
    assert torch.linalg.matrix_rank(var, rtol=0.05) == 1


def test_kflow_linear_covariance_has_the_triangular_kronecker_structure_of_its_draws():
    post = perturb_(make_posterior("kflow-linear", (2, 3), generator=gen()), scale=0.5)
    layer = post.layers[0]
    with torch.no_grad():
        a, s, b = layer.factors()
        sigma = layer.covariance()
        w = layer.sample(200_000, gen(7)).reshape(200_000, -1)
    assert torch.equal(a, torch.tril(a)) and torch.equal(a.diagonal(), torch.ones(3)) and s.min() > 0
    assert torch.equal(b, torch.tril(b)) and torch.equal(b.diagonal(), torch.ones(3))
    # Property 1: Σ = (A ⊗ Bᵀ) diag(S²) (A ⊗ Bᵀ)ᵀ for row-major vec; a unit-triangular factor (after
    # reordering) so log det Σ = Σ log S²
    torch.testing.assert_close(torch.cov(w.T), sigma, atol=0.01, rtol=0.05)
    off_diagonal = sigma - torch.diag(sigma.diagonal())
    assert off_diagonal.abs().max() > 0.05                   # correlated weights, unlike vmg / bbb
    torch.testing.assert_close(torch.logdet(sigma.double()).float(), layer.log_det(), rtol=1e-4, atol=1e-4)
    q = D.MultivariateNormal(layer.M.detach().reshape(-1), sigma)
    p = D.MultivariateNormal(torch.zeros(9), 0.8 ** 2 * torch.eye(9))
    layer.prior_std = 0.8
    torch.testing.assert_close(layer.kl().detach(), D.kl_divergence(q, p), rtol=1e-4, atol=1e-4)


def test_kflow_diag_is_the_vmg_family_under_a_gaussian_prior():
    kd = perturb_(make_posterior("kflow-diag", (3, 2), generator=gen()))
    vmg = make_posterior("vmg", (3, 2), generator=gen())
    with torch.no_grad():
        vmg.layers[0].M.copy_(kd.layers[0].M)
        vmg.layers[0].log_var_rows.copy_(2 * kd.layers[0].log_a)
        vmg.layers[0].log_var_cols.copy_(2 * kd.layers[0].log_b)
    torch.testing.assert_close(kd.layers[0].covariance(), vmg.layers[0].covariance())
    torch.testing.assert_close(kd.regulariser(), vmg.regulariser())
    q = D.MultivariateNormal(kd.layers[0].M.reshape(-1), kd.layers[0].covariance())
    torch.testing.assert_close(kd.regulariser(), D.kl_divergence(q, D.MultivariateNormal(torch.zeros(8), torch.eye(8))))


@pytest.mark.parametrize("family", FAMILIES)
def test_local_reparameterisation_matches_explicit_weight_draws(family):
    """Per input, the layer-by-layer output draws (train_forward, and forward with one input per draw)
    have the mean and variance of outputs under explicit weight draws (forward with B > 1)."""
    post = perturb_(make_posterior(family, (2, 4, 1), "tanh", generator=gen()), scale=0.3)
    if family == "badam":
        with torch.no_grad():
            for layer in post.layers:
                layer.curvature.copy_(torch.rand(layer.curvature.shape, generator=gen(2)))
            post.examples_seen.fill_(3.0)
    x = torch.tensor([[0.5, -1.0], [2.0, 0.3], [-0.7, 0.0]])
    n = 40_000
    with torch.no_grad():
        explicit = post(x, n, gen(1))[..., 0]                                 # (n, 3)
        per_decision = post(x.repeat(n, 1).unsqueeze(1), 3 * n, gen(2)).reshape(n, 3)
        local = post.train_forward(x, n, gen(3))[..., 0] if family != "badam" else per_decision
    for draws in (per_decision, local):
        torch.testing.assert_close(draws.mean(0), explicit.mean(0), atol=0.02, rtol=0)
        torch.testing.assert_close(draws.var(0), explicit.var(0), atol=0.01, rtol=0.05)
    assert explicit.var(0).min() > 0.01


def test_badam_posterior_is_eq14_from_adams_second_moments():
    torch.manual_seed(0)  # only the data below; the posterior never reads the global generator
    x, y = torch.randn(16, 3), torch.randn(16, 1)
    data_size, batch, lr, beta2, sigma = 160, 16, 0.05, 0.99, 0.5
    post = make_posterior("badam", (3, 1), prior_std=sigma, generator=gen())
    layer = post.layers[0]
    with pytest.raises(ValueError, match="no Adam state"):
        post.observe_step(torch.optim.Adam(post.parameters()), 16)
    opt = torch.optim.Adam(post.parameters(), lr, betas=(0.9, beta2))
    v = torch.zeros(4, 1)
    for t in range(1, 4):
        opt.zero_grad()
        loglik = -0.5 * (post.train_forward(x, 5) - y).square()
        loss = -(data_size / batch) * loglik.mean(0).sum() + post.regulariser()
        loss.backward()
        v = beta2 * v + (1 - beta2) * layer.theta.grad.square()      # eq. 4's v_t before its correction
        opt.step()
        post.observe_step(opt, t * batch, data_size=data_size)
    n = 3 * batch
    curvature = (v / (1 - beta2 ** 3)).sqrt() / data_size            # V^½ per example (eq. 10)
    precision = n * curvature + 1 / sigma ** 2
    theta = layer.theta.detach()
    mean, var = layer.posterior(post.examples_seen)
    torch.testing.assert_close(mean.detach(), n * curvature / precision * theta)
    torch.testing.assert_close(var, 1 / precision)
    # draws of a linear network at unit inputs read the weights back: eq. 14's mean and variance
    with torch.no_grad():
        draws = post(torch.cat([torch.eye(3), torch.zeros(1, 3)]), 50_000, gen(4))[..., 0]
    bias = draws[:, 3]
    torch.testing.assert_close(bias.mean(), mean[3, 0].detach(), atol=4 * var[3, 0].sqrt().item() / 200, rtol=0)
    torch.testing.assert_close(bias.var(), var[3, 0], rtol=0.05, atol=0)
    torch.testing.assert_close((draws[:, :3] - bias[:, None]).mean(0), mean[:3, 0].detach(), atol=0.02, rtol=0)
    torch.testing.assert_close(post.mean_forward(torch.zeros(1, 3))[0, 0], mean[3, 0])


@pytest.mark.parametrize("family", FAMILIES)
def test_fits_a_noisy_sine_better_than_the_mean(family):
    g = gen(0)
    x = torch.linspace(-3, 3, 128).unsqueeze(1)
    y = torch.sin(x) + 0.1 * torch.randn(x.shape, generator=g)
    post = make_posterior(family, (1, 32, 1), "tanh", generator=gen(1))
    opt = torch.optim.Adam(post.parameters(), 0.02)
    steps, batch = 300, 32  # every family is below 0.04 of the variance by then
    for t in range(steps):
        idx = torch.randint(0, 128, (batch,), generator=g)
        out = post.train_forward(x[idx], 2, g)
        loglik = -0.5 * (out - y[idx]).square() / 0.1 ** 2
        loss = -(128 / batch) * loglik.mean(0).sum() + post.regulariser(g)
        opt.zero_grad()
        loss.backward()
        opt.step()
        post.observe_step(opt, (t + 1) * batch, data_size=128)
    with torch.no_grad():
        mse = (post(x, 32, g).mean(0) - y).square().mean().item()
        mean_mse = (post.mean_forward(x) - y).square().mean().item()
    baseline = y.var(unbiased=False).item()
    assert mse < 0.1 * baseline and mean_mse < 0.1 * baseline, (mse, mean_mse, baseline)


@pytest.mark.parametrize("family", FAMILIES)
def test_same_seed_same_draws_and_the_global_generator_is_untouched(family):
    state = torch.get_rng_state()
    a = make_posterior(family, (3, 5, 2), generator=gen(4))
    b = make_posterior(family, (3, 5, 2), generator=gen(4))
    for pa, pb in zip(a.state_dict().values(), b.state_dict().values()):
        assert torch.equal(pa, pb)
    x = torch.linspace(-1, 1, 12).reshape(4, 3)
    for post in (a, b):
        opt = torch.optim.Adam(post.parameters(), 0.01)
        post.regulariser(gen(5)).backward()
        opt.step()
        post.observe_step(opt, 4, data_size=4)
    assert torch.equal(a(x, 6, gen(6)), b(x, 6, gen(6)))
    assert torch.equal(a(x.unsqueeze(1), 4, gen(6)), b(x.unsqueeze(1), 4, gen(6)))
    assert torch.equal(a.train_forward(x, 3, gen(7)), b.train_forward(x, 3, gen(7)))
    assert torch.equal(a(x, 6), b(x, 6))                     # no generator: the posterior's own, seeded at init
    assert not torch.equal(a(x, 6, gen(6)), a(x, 6, gen(8)))
    a.regulariser()
    assert torch.equal(torch.get_rng_state(), state)


def test_shapes():
    post = make_posterior("kflow-linear", (3, 4, 2), generator=gen())
    x = torch.zeros(5, 3)
    assert post(x, 7).shape == (7, 5, 2)
    assert post(torch.zeros(7, 5, 3), 7).shape == (7, 5, 2)
    assert post.train_forward(x, 2).shape == (2, 5, 2)
    assert post.mean_forward(x).shape == (5, 2)
    assert make_posterior("badam", (3, 4, 2)).train_forward(x, 9).shape == (1, 5, 2)
    with pytest.raises(ValueError, match="num_samples=7"):
        post(torch.zeros(6, 5, 3), 7)
