"""The REINFORCE gradient of svpg's trainer against ∇J computed by hand, on a one-step problem.

Every episode is one step: a fixed observation x, a softmax policy π = softmax(x W + b) over three
arms (one linear layer), a deterministic reward R(a). Then J(θ) = Σ_a π_a R_a and, with z = x W + b,

    ∇_z J = Σ_a π_a R_a (e_a − π) = π ⊙ (R − R̄),   R̄ = Σ_a π_a R_a,   ∇_W J = x ⊗ ∇_z J,   ∇_b J = ∇_z J.

svpg's estimator (``Reinforce(baseline="none")`` advantages, ``ParticlePolicy.log_prob_entropy`` and
the trainer's ``policy_gradient_surrogate``) standardises the returns per particle, so its gradient
Σ_i ∇log π(a_i) (R_i − mean)/std, divided by the number of samples B, estimates ∇J / σ_R with
σ_R² = Σ_a π_a (R_a − R̄)² (the standardisation is a positive rescaling, and E ∇log π = 0).
"""
from __future__ import annotations

import gymnasium as gym
import torch
from torch.distributions import Categorical

from svpg.rl.estimators import Reinforce, policy_gradient_surrogate
from svpg.rl.policies import ParticlePolicy, PolicySpec
from svpg.rl.rollout import Rollout

X = torch.tensor([0.5, -1.0, 2.0])
R = torch.tensor([1.0, -0.5, 2.0])
M, B = 2, 40_000  # particles, one-step episodes per particle


def _policy() -> ParticlePolicy:
    spec = PolicySpec.for_spaces(gym.spaces.Box(-5, 5, (3,)), gym.spaces.Discrete(3),
                                 dict(hidden=(), prior="flat"), M)
    policy = ParticlePolicy(spec, seed=0)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():  # logits of order 1, different per particle
        policy.layout.get(policy.theta, "pi.0.C").copy_(0.6 * torch.randn(M, 3, 3, generator=g))
        policy.layout.get(policy.theta, "pi.0.bias").copy_(0.3 * torch.randn(M, 3, generator=g))
    return policy


def _rollout(policy: ParticlePolicy) -> Rollout:
    """B one-step episodes per particle, actions drawn by the policy's own sampler."""
    obs = X.expand(1, M, B, 3).clone()  # (T = 1, M, N = B, obs_dim)
    noise = policy.draw_noise((M, B), torch.Generator().manual_seed(2))
    actions = policy.sample(policy.fast_weights(policy.theta.detach()), obs[0], noise).unsqueeze(0)
    done = torch.ones(1, M, B, dtype=torch.bool)  # every episode ends after its one step
    return Rollout(obs, actions, R[actions], done, torch.zeros_like(done), None)


def _svpg_gradient(policy: ParticlePolicy, batch: Rollout) -> torch.Tensor:
    """∇θ of the trainer's surrogate Σ_i log π(a_i) Â_i with REINFORCE's advantages: (M, D)."""
    advantages, _, _ = Reinforce(gamma=0.99, baseline="none").advantages(batch)
    surrogate, _ = policy_gradient_surrogate(policy, batch, advantages)
    (grad,) = torch.autograd.grad(surrogate.sum(), policy.theta)
    return grad


def _blocks(policy: ParticlePolicy, grad: torch.Tensor) -> torch.Tensor:
    """(∂/∂W, ∂/∂b) of every particle as one (M, 12) tensor."""
    return torch.cat([policy.layout.get(grad, "pi.0.C").flatten(1), policy.layout.get(grad, "pi.0.bias")], 1)


def test_reinforce_gradient_matches_the_analytic_policy_gradient():
    policy = _policy()
    grad = _blocks(policy, _svpg_gradient(policy, _rollout(policy)))
    with torch.no_grad():
        w, b = policy.layout.get(policy.theta, "pi.0.C"), policy.layout.get(policy.theta, "pi.0.bias")
        pi = torch.softmax(X @ w + b, -1)  # (M, 3)
        r_bar = (pi * R).sum(-1, keepdim=True)
        dz = pi * (R - r_bar)  # ∇_z J
        sigma = ((pi * (R - r_bar) ** 2).sum(-1, keepdim=True)).sqrt()
        analytic = torch.cat([(X[:, None] * dz[:, None, :]).flatten(1), dz], 1)  # ∇_W J (row-major), ∇_b J
    estimate = grad * sigma / B  # undo the standardisation's 1/σ_R and the sum over B samples
    # Monte Carlo error of a mean of 40000 terms of size ≤ ~4: ~0.02 at most; ∇J itself is ~0.1–1
    torch.testing.assert_close(estimate, analytic, rtol=0, atol=0.03)
    cosine = torch.nn.functional.cosine_similarity(estimate, analytic, dim=1)
    assert (cosine > 0.995).all(), cosine


def test_reinforce_gradient_equals_a_per_sample_categorical_computation():
    # the same samples through torch.distributions: Σ_i ∇ log π(a_i) (R_i − mean)/std per particle
    policy = _policy()
    batch = _rollout(policy)
    grad = _svpg_gradient(policy, batch)
    theta = policy.theta.detach().clone().requires_grad_(True)
    w, b = policy.layout.get(theta, "pi.0.C"), policy.layout.get(theta, "pi.0.bias")
    total = 0.0
    for j in range(M):
        a, r = batch.actions[0, j], batch.rewards[0, j]
        adv = (r - r.mean()) / (r.std(unbiased=False) + 1e-8)
        log_prob = Categorical(logits=X @ w[j] + b[j]).log_prob(a)  # (B,)
        total = total + (log_prob * adv).sum()
    (reference,) = torch.autograd.grad(total, theta)
    torch.testing.assert_close(grad, reference, rtol=1e-3, atol=1e-2)  # float32 sums of 40000 terms
    assert (_blocks(policy, grad).abs().amax(1) > 10).all()  # a real signal, not two zeros agreeing
