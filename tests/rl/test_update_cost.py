"""The PPO update's shortcuts compute what the plain computation does: the finiteness check, the
diagnostics of the last SVGD step only, and the critics' gradient through one split of θ."""

from __future__ import annotations

import pytest
import torch

import svpg
from svpg.rl.algorithm import NonFiniteError
from tests.rl.test_obs_spaces import FAST, PixelReach


def test_the_finiteness_check_names_the_bad_seed_and_passes_finite_values_whose_sum_overflows():
    model = svpg.SVPG("CartPole-v1", num_seeds=2, num_particles=2, seed=0, verbose=0, threads=1)
    huge = torch.full((4, 3), 3e38)  # finite, but the sum is +inf
    model._check_finite(huge, "x")
    for bad in (float("nan"), float("inf"), -float("inf")):
        x = torch.zeros(4, 3)
        x[3, 1] = bad  # row 3: seed 1's second particle
        with pytest.raises(NonFiniteError, match=r"x is not finite \(seed 1\)$"):
            model._check_finite(x, "x")
    x = huge.clone()
    x[0, 0], x[2, 2] = float("inf"), -float("inf")  # sum NaN, both seeds bad
    with pytest.raises(NonFiniteError, match=r"\(seed 0, 1\)$"):
        model._check_finite(x, "x")


def test_ppo_asks_for_the_diagnostics_of_its_last_svgd_step_only():
    model = svpg.SVPG(PixelReach, seed=0, verbose=0, **{**FAST, "ppo_epochs": 2, "ppo_minibatches": 3})
    asked, update = [], model.svgd_update

    def spy(surrogate, samples, diagnostics=True):
        asked.append(diagnostics)
        info = update(surrogate, samples, diagnostics)
        assert (info != {}) == diagnostics
        return info

    model.svgd_update = spy  # type: ignore[method-assign]
    model.learn(128)
    assert asked == [False] * 5 + [True]
    scalars = model.scalars[0]
    for key in ("svgd/bandwidth", "svgd/driving_norm", "svgd/particle_spread", "policy/entropy", "train/policy_loss"):
        assert key in scalars and scalars[key] == scalars[key], key  # present, not NaN


def test_the_critics_gradient_through_one_split_of_theta_equals_the_blockwise_one():
    model = svpg.SVPG(PixelReach, seed=0, verbose=0, **FAST)
    critic = model.estimator
    obs = torch.randint(0, 2, (2, 16, 36)).float() * 255
    theta = (critic.theta.detach() + 0.1 * torch.randn(critic.theta.shape)).requires_grad_()
    plain = torch.autograd.grad(critic.values(obs, theta).square().sum(), theta)[0]
    with critic.layout.split(theta):
        split = torch.autograd.grad(critic.values(obs, theta).square().sum(), theta)[0]
    assert plain.abs().sum() > 0 and torch.equal(split, plain)
