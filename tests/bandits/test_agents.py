"""Bandit agents: LinUCB, Stein Thompson sampling (Algorithm 1 of S²VGD), the greedy baselines."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from svpg.bandits import (
    BanditProblem,
    BanditTable,
    LinUCB,
    NeuralGreedy,
    SteinThompson,
    VariationalThompson,
    make_agent,
    make_problem,
    play,
    run,
)
from svpg.bandits.agents import (
    STEIN_LR,
    VARIATIONAL_LR,
    VARIATIONAL_METHODS,
    canonical_name,
)
from svpg.core.probability import inverse_gamma_log_prob_of_log


class LinearBandit(BanditProblem):
    """E[r | x, a] = w_aᵀx, Gaussian noise: LinUCB's own model."""

    name, context_dim, num_actions = "linear", 5, 3

    def __init__(self, noise: float = 0.1):
        self.w = np.random.default_rng(123).normal(size=(3, 5))
        self.noise = noise

    def sample(self, rounds, rng):
        x = rng.normal(size=(rounds, 5))
        mean = x @ self.w.T
        return BanditTable(x.astype(np.float32), mean + self.noise * rng.normal(size=mean.shape), mean)


def test_linucb_regret_is_clearly_sublinear_on_a_linear_problem():
    results = run(LinearBandit(), ["linucb"], rounds=3000, seeds=1)
    pseudo = np.cumsum(results.get("linucb", 0).expected_regret)
    uniform = np.cumsum(results.get("uniform", 0).expected_regret)
    first, last = pseudo[999], pseudo[-1] - pseudo[1999]
    assert last < 0.1 * first  # the third thousand rounds cost a tenth of the first thousand
    assert pseudo[-1] < 0.02 * uniform[-1]


def test_linucb_sherman_morrison_matches_a_direct_solve():
    rng = np.random.default_rng(0)
    agent = LinUCB(3, 4, alpha=0.5, reg=2.0)
    x = rng.normal(size=(40, 4)).astype(np.float32)
    a = rng.integers(0, 3, 40)
    r = rng.normal(size=40)
    for i in range(40):
        agent.update(x[i : i + 1], a[i : i + 1], r[i : i + 1], i)
    feats = np.concatenate([x, np.ones((40, 1))], 1).astype(np.float64)
    for arm in range(3):
        f = feats[a == arm]
        A = 2.0 * np.eye(5) + f.T @ f
        np.testing.assert_allclose(agent.a_inv[arm], np.linalg.inv(A), atol=1e-10)
        np.testing.assert_allclose(agent.coef[arm], np.linalg.solve(A, f.T @ r[a == arm]), atol=1e-10)
    # UCB = θᵀx + α σ̂ √(xᵀA⁻¹x), σ̂ the std of the observed rewards
    xq = rng.normal(size=(1, 4)).astype(np.float32)
    fq = np.append(xq[0].astype(np.float64), 1.0)
    expect = [agent.coef[k] @ fq + 0.5 * r.std(ddof=1) * math.sqrt(fq @ agent.a_inv[k] @ fq) for k in range(3)]
    np.testing.assert_allclose(agent.scores(xq)[0], expect, rtol=1e-6)


@pytest.mark.usefixtures("one_thread")
def test_stein_thompson_beats_uniform_by_a_wide_margin_on_mushroom():
    results = run(make_problem("mushroom"), ["s2vgd"], rounds=1500, seeds=1, num_particles=10)
    assert results.normalised_regret("s2vgd", 0) < 40  # uniform = 100


def test_thompson_sampling_plays_the_argmax_of_one_uniformly_drawn_particle_per_round():
    agent = SteinThompson(3, 4, method="svgd", num_particles=5, initial_pulls=0, seed=7)
    x = np.random.default_rng(0).normal(size=(400, 4)).astype(np.float32)
    values = agent.predict(x)  # (M, n, K)
    state = agent.rng.bit_generator.state
    actions = agent.act(x, t=0)
    agent.rng.bit_generator.state = state
    particles = agent.rng.integers(0, 5, size=400)  # the draws act() made
    np.testing.assert_array_equal(actions, values[particles, np.arange(400)].argmax(1).numpy())
    assert np.bincount(particles, minlength=5).min() > 50  # every particle is used
    # a window gives the same values as rounds one by one (fixed particles between training points)
    one_by_one = torch.cat([agent.predict(x[i : i + 1]) for i in range(0, 400, 37)], 1)
    torch.testing.assert_close(one_by_one, values[:, ::37])


def test_training_schedule_and_round_robin_warmup():
    agent = SteinThompson(2, 3, num_particles=4, train_every=10, train_steps=2, initial_pulls=2)
    assert agent.window(0) == 4 and agent.window(3) == 1  # 2 pulls × 2 arms, round-robin
    np.testing.assert_array_equal(agent.act(np.zeros((4, 3)), 0), [0, 1, 0, 1])
    assert agent.window(4) == 6 and agent.window(10) == 10 and agent.window(17) == 3
    table = WheelLike().table(35, seed=0)
    play(agent, table)
    assert agent.trainings == 3 and agent.size == 35  # trained at 10, 20, 30 rounds


def test_stein_agents_keep_householder_vectors_on_their_sphere_and_log_their_smallest_norm():
    x = np.random.default_rng(0).normal(size=(20, 3)).astype(np.float32)
    a, r = np.arange(20) % 2, np.random.default_rng(1).normal(size=20)
    for name in ("s2vgd", "svgd"):
        agent = make_agent(name, 2, 3, num_particles=4, train_every=20, train_steps=3, initial_pulls=0, lr=0.05)
        info = agent.update(x, a, r, 0)  # 20 rounds: one training point
        blocks = [b for b in agent.layout if b.endswith((".v_in", ".v_out"))]
        assert bool(blocks) == (name == "s2vgd") == ("structure/min_householder_norm" in info)
        for block in blocks:
            v = agent.layout.get(agent.theta.detach(), block)
            norms = torch.linalg.vector_norm(v, dim=-1)
            torch.testing.assert_close(norms, torch.full_like(norms, v.shape[-1] ** 0.5))  # length √ℓ
        if blocks:
            assert 0.5 < info["structure/min_householder_norm"].item() < 1.5  # one small step off the sphere


class WheelLike(BanditProblem):
    name, context_dim, num_actions = "tiny", 3, 2

    def sample(self, rounds, rng):
        x = rng.normal(size=(rounds, 3)).astype(np.float32)
        mean = np.stack([x[:, 0], -x[:, 0]], 1)
        return BanditTable(x, mean + rng.normal(size=mean.shape), mean)


def test_likelihood_is_scaled_by_the_data_set_size_not_the_batch():
    agent = SteinThompson(2, 3, num_particles=3, prior="flat", seed=0)
    rng = np.random.default_rng(1)
    n = 8
    x = torch.tensor(rng.normal(size=(n, 3)), dtype=torch.float32)
    a = torch.tensor(rng.integers(0, 2, n))
    y = torch.tensor(rng.normal(size=n), dtype=torch.float32)
    theta = agent.theta.detach()
    # reference: Gaussian log-likelihood of the played arm, noise variance from the particle
    with torch.no_grad():
        mean = agent.predict(x.numpy())  # (M, n, K)
    log_var = agent.layout.get(theta, "noise.log_var")[:, 0]  # (M,)
    mu = mean[:, torch.arange(n), a]  # (M, n)
    ll = -0.5 * ((y - mu) ** 2 / log_var.exp()[:, None] + log_var[:, None] + math.log(2 * math.pi))
    noise_prior = inverse_gamma_log_prob_of_log(log_var, agent.noise_a, agent.noise_b)
    # the full batch: the plain sum
    torch.testing.assert_close(agent.log_posterior(theta, x, a, y, n), ll.sum(1) + noise_prior)
    # a batch of B copies of point i estimates n · ll_i whatever B is
    for b in (1, 5, 64):
        idx = torch.full((b,), 3, dtype=torch.long)
        torch.testing.assert_close(agent.log_posterior(theta, x[idx], a[idx], y[idx], n), n * ll[:, 3] + noise_prior)


def test_agent_registry_and_options():
    assert canonical_name("greedy") == canonical_name("eps-greedy-0") == "neural-greedy"
    assert canonical_name("eps-greedy-0.010") == "eps-greedy-0.01"
    s2 = make_agent("s2vgd", 2, 5, householder=2, num_particles=7)
    assert s2.spec.householder == 2 and s2.spec.learn_scales and s2.num_particles == 7
    plain = make_agent("svgd", 2, 5)
    assert plain.spec.householder == 0 and not plain.spec.learn_scales
    eps = make_agent("eps-greedy-0.03", 2, 5, num_particles=7)
    assert isinstance(eps, NeuralGreedy) and eps.epsilon == 0.03 and eps.num_particles == 1
    assert make_agent("linucb", 2, 5, linucb_alpha=2.0).alpha == 2.0
    with pytest.raises(ValueError, match="unknown agent 'ucb'.*s2vgd"):
        make_agent("ucb", 2, 5)
    with pytest.raises(ValueError, match="ε must lie in"):
        make_agent("eps-greedy-2", 2, 5)
    with pytest.raises(ValueError, match="train_every must be ≥ 1"):
        make_agent("s2vgd", 2, 5, train_every=0)


def test_per_method_learning_rates_replace_the_shared_one_for_that_stein_agent_only():
    opts = dict(lr=3e-3, s2vgd_lr=1e-3, svgd_lr=5e-4)
    assert make_agent("s2vgd", 2, 5, **opts).lr == 1e-3
    assert make_agent("svgd", 2, 5, **opts).lr == 5e-4
    assert make_agent("neural-greedy", 2, 5, **opts).lr == 3e-3
    assert make_agent("s2vgd", 2, 5, lr=3e-3, s2vgd_lr=0).lr == 3e-3  # 0: the shared lr
    # with no rate given, each agent has its own tuned default, in Python as in the CLI
    assert make_agent("s2vgd", 2, 5).lr == STEIN_LR["s2vgd"] and SteinThompson(2, 5, method="svgd").lr == STEIN_LR["svgd"]
    assert make_agent("eps-greedy-0.01", 2, 5).lr == 3e-3
    assert make_agent("svgd", 2, 5, lr=2e-3).lr == 2e-3  # an explicit shared rate applies to every neural agent
    opt = make_agent("s2vgd", 2, 5, **opts).svgd.optimizer
    assert opt.param_groups[0]["lr"] == 1e-3


def test_s2vgd_structure_options_and_defaults():
    agent = make_agent("s2vgd", 2, 5)  # the tuned defaults: K = 2, plain output layer, Λ/v at 0.1 × lr
    hp = agent.hyperparameters()
    assert (hp["householder"], hp["structural_output"], hp["structural_lr_scale"]) == (2, False, 0.1)
    assert agent.net.structural_blocks() == ["reward.0.lam_in", "reward.0.lam_out", "reward.0.v_in", "reward.0.v_out"]
    assert agent.layout.shape("reward.0.v_in") == (2, 5)
    scale = agent.svgd.step_scale
    assert agent.layout.get(scale.unsqueeze(0), "reward.0.lam_in").eq(0.1).all()
    assert agent.layout.get(scale.unsqueeze(0), "reward.0.C").eq(1.0).all()
    # the paper's layout (every layer structural, K = 1, one step size) is three options away
    paper = make_agent("s2vgd", 2, 5, householder=1, structural_output=True, structural_lr_scale=1.0)
    assert "reward.1.v_out" in paper.layout and paper.svgd.step_scale is None
    plain = make_agent("svgd", 2, 5)  # no structure, whatever the s2vgd options
    assert plain.net.structural_blocks() == [] and plain.svgd.step_scale is None
    assert plain.hyperparameters()["structural_lr_scale"] == 1.0
    with pytest.raises(ValueError, match="structural_lr_scale must be > 0"):
        make_agent("s2vgd", 2, 5, structural_lr_scale=0)


def test_epsilon_greedy_explores_at_rate_epsilon():
    agent = make_agent("eps-greedy-0.2", 4, 3, initial_pulls=0)
    x = np.zeros((20_000, 3), dtype=np.float32)
    greedy = agent.predict(x[:1])[0, 0].argmax().item()
    acts = agent.act(x, 0)
    # a random arm with probability ε, the greedy one otherwise: P(non-greedy) = ε (K − 1)/K
    assert abs((acts != greedy).mean() - 0.2 * 3 / 4) < 0.015


def test_wrong_context_dimension_is_a_clear_error():
    agent = make_agent("s2vgd", 2, 3)
    with pytest.raises(ValueError, match=r"built for 3-dimensional contexts.*context_dim=5"):
        agent.act(np.zeros((4, 5)), 0)
    with pytest.raises(ValueError, match="built for 3-dimensional contexts"):
        play(agent, make_problem("wheel").table(10, seed=0))
    with pytest.raises(ValueError, match="built for 3-dimensional"):
        make_agent("linucb", 2, 3).act(np.zeros((1, 2)), 0)


# ----------------------------------------------------------------------------- variational agents
# the default suite plays one ELBO family and BADAM; every family's short fit is in tests/core/test_variational.py
@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("method", [m if m in ("vmg", "badam") else pytest.param(m, marks=pytest.mark.slow)
                                    for m in VARIATIONAL_METHODS])
def test_variational_thompson_beats_uniform_by_a_wide_margin_on_mushroom(method):
    results = run(make_problem("mushroom"), [method], rounds=5000, seeds=1)
    # uniform = 100; BADAM's posterior, read off Adam's state with N = the rows seen (eq. 14), narrows far more
    # slowly than the ELBO ones (75 at 5000 rounds, 32 at 20000 on this table)
    assert results.normalised_regret(method, 0) < (85 if method == "badam" else 20)


@pytest.mark.parametrize("method", VARIATIONAL_METHODS)
def test_variational_thompson_plays_the_argmax_of_one_posterior_draw_per_decision(method):
    agent = make_agent(method, 3, 4, initial_pulls=0, seed=7)
    x = np.random.default_rng(0).normal(size=(300, 4)).astype(np.float32)
    state = agent.act_generator.get_state()
    actions = agent.act(x, t=0)
    agent.act_generator.set_state(state)
    with torch.no_grad():
        values = agent.posterior(torch.as_tensor(x).unsqueeze(1), 300, agent.act_generator)[:, 0]
    np.testing.assert_array_equal(actions, values.argmax(1).numpy())
    # identical contexts get independent draws: their values differ, their mean is the posterior's
    same = agent.sample_values(np.repeat(x[:1], 2000, 0))
    assert same.std(0).min() > 1e-3
    assert isinstance(agent, VariationalThompson) and agent.name == method


def test_variational_training_schedule_and_the_likelihood_scaled_by_the_data_set_size():
    agent = make_agent("badam", 2, 3, train_every=10, train_steps=2, batch_size=8, initial_pulls=2, seed=1)
    assert agent.window(0) == 4 and agent.window(4) == 6 and agent.window(17) == 3
    np.testing.assert_array_equal(agent.act(np.zeros((4, 3)), 0), [0, 1, 0, 1])
    play(agent, WheelLike().table(35, seed=0))
    assert agent.trainings == 3 and agent.size == 35 and agent.steps == 6
    # BADAM's posterior read Adam's state after the last step: N = the rows seen at the last training
    # (round 30, as the reference code's data-set size), not Adam steps × batch size (6 × 8 = 48)
    assert agent.posterior.examples_seen.item() == 30 and agent.posterior.layers[0].curvature.gt(0).all()
    layer = agent.posterior.layers[0]
    _, var = layer.posterior(agent.posterior.examples_seen)
    torch.testing.assert_close(var, 1.0 / (30 * layer.curvature + 1 / 0.1**2))  # eq. 14, prior N(0, 0.1²)
    # −(N/B) Σ log N(y | f(x)[a], σ²) + R − log p(σ²): B copies of one point cost N times its log-likelihood
    x, a, y = torch.randn(1, 3), torch.tensor([1]), torch.tensor([0.3])
    pred = agent.posterior.train_forward(x, 1)[0, 0, 1]
    lv = agent.log_var.detach()[0]
    ll = -0.5 * ((0.3 - pred) ** 2 / lv.exp() + lv + math.log(2 * math.pi))
    reg = agent.posterior.regulariser()
    noise_prior = inverse_gamma_log_prob_of_log(lv, agent.noise_a, agent.noise_b)
    for b, n in ((1, 10), (16, 10), (16, 1000)):
        loss, r = agent.loss(x.expand(b, 3), a.expand(b), y.expand(b), n)
        torch.testing.assert_close(loss, -n * ll + reg - noise_prior)
        torch.testing.assert_close(r, reg)


def test_variational_agent_registry_options_and_learning_rates():
    for method in VARIATIONAL_METHODS:
        agent = make_agent(method, 2, 5, hidden=(7, 6), lr=0.5, prior="mvg", kernel="median", num_particles=3)
        assert agent.posterior.family == method and agent.posterior.sizes == (5, 7, 6, 2)
        assert agent.lr == VARIATIONAL_LR[method]  # the shared --lr is the greedy agents'; 0: the tuned rate
        assert agent.optimizer.param_groups[0]["lr"] == VARIATIONAL_LR[method]
        assert make_agent(method, 2, 5, variational_lr=0.02).lr == 0.02
    bbb = make_agent("bbb", 2, 5, prior="mvg", sigma2=0.01, prior_std=0.3)  # the Stein agents' prior is ignored
    assert bbb.posterior.options["prior"] == "mixture" and bbb.hyperparameters()["sigma2"] == 0.01
    assert make_agent("vmg", 2, 5, sigma2=0.01).posterior.options == {"prior_std": 1.0, "init_std": 0.01,
                                                                     "learn_precisions": False, "pseudo_data": 0,
                                                                     "pseudo_dropout": 0.005, "scale_inputs": False,
                                                                     "reference_init": False}
    assert VariationalThompson(2, 5, method="bbb", prior="gaussian").posterior.options["prior"] == "gaussian"
    assert make_agent("badam", 2, 5).posterior.options["prior_std"] == 0.1  # VARIATIONAL_POSTERIOR
    assert make_agent("badam", 2, 5, prior_std=0.5).hyperparameters()["prior_std"] == 0.5
    with pytest.raises(ValueError, match="method must be one of bbb, vmg"):
        VariationalThompson(2, 5, method="gp")
    with pytest.raises(ValueError, match="train_every must be ≥ 1"):
        make_agent("vmg", 2, 5, train_every=0)
    with pytest.raises(ValueError, match="init_std must be > 0"):
        make_agent("kflow-linear", 2, 5, init_std=0)


@pytest.mark.parametrize("method", VARIATIONAL_METHODS)
def test_variational_agents_are_bit_identical_with_the_same_seed_and_leave_the_global_generator_alone(method):
    state = torch.get_rng_state()
    first, second = (run(WheelLike(), [method], rounds=120, seeds=[3], train_every=20, train_steps=3)
                     for _ in range(2))
    np.testing.assert_array_equal(first.get(method, 3).actions, second.get(method, 3).actions)
    assert first.get(method, 3).regret.tobytes() == second.get(method, 3).regret.tobytes()
    assert torch.equal(torch.get_rng_state(), state)
    other = run(WheelLike(), [method], rounds=120, seeds=[4], train_every=20, train_steps=3)
    assert not np.array_equal(first.get(method, 3).actions, other.get(method, 4).actions)
