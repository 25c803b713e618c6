"""Policy heads against torch.distributions (the direct formulas must match the reference)."""
import gymnasium as gym
import numpy as np
import pytest
import torch

from svpg.rl.estimators import A2C, Reinforce
from svpg.rl.policies import ParticlePolicy, PolicySpec
from svpg.rl.rollout import Rollout

NET = dict(hidden=(8, 5), activation="tanh", householder=1, learn_scales=True, prior="mvg", prior_a=1.0, prior_b=0.1)


def make(action_space, m=3):
    spec = PolicySpec.for_spaces(gym.spaces.Box(-1, 1, (4,)), action_space, NET, m)
    return ParticlePolicy(spec, seed=0)


# log-probs come from the fast form (2σ(2z) − 1 for tanh), which agrees with torch.tanh to float32
# rounding; with logits of tens that leaves ~1e-4 on log-probs of order 10.
TOL = dict(rtol=1e-4, atol=2e-4)


def test_categorical_log_prob_entropy_and_sampling_match_torch_distributions():
    torch.manual_seed(0)
    policy = make(gym.spaces.Discrete(3))
    with torch.no_grad():
        policy.theta.mul_(30)  # sharpen the policies so the probabilities differ clearly
    obs = torch.randn(3, 4, 4)
    actions = torch.randint(0, 3, (3, 4))
    logp, entropy = policy.log_prob_entropy(policy.theta, obs, actions)
    logits = policy.net.forward(policy.net.weights(policy.theta), obs)
    ref = torch.distributions.Categorical(logits=logits)
    torch.testing.assert_close(logp, ref.log_prob(actions), **TOL)
    torch.testing.assert_close(entropy, ref.entropy().mean(-1), **TOL)
    # Gumbel-max samples follow the softmax: frequencies over 20k draws within 0.015
    weights = policy.fast_weights(policy.theta.detach())
    one = obs[:, :1].expand(3, 20000, 4)
    draws = policy.sample(weights, one, policy.draw_noise((3, 20000), torch.Generator().manual_seed(1)))
    freq = torch.stack([(draws == a).float().mean(1) for a in range(3)], -1)
    torch.testing.assert_close(freq, ref.probs[:, 0].detach(), atol=0.015, rtol=0)


def test_gaussian_log_prob_and_entropy_match_torch_distributions():
    torch.manual_seed(1)
    policy = make(gym.spaces.Box(-1, 1, (2,)))
    with torch.no_grad():
        policy.layout.get(policy.theta, "pi.log_std").copy_(torch.tensor([[-0.5, 0.3]]))
    obs, actions = torch.randn(3, 6, 4), torch.randn(3, 6, 2)
    logp, entropy = policy.log_prob_entropy(policy.theta, obs, actions)
    mean = policy.net.forward(policy.net.weights(policy.theta), obs)
    std = policy.layout.get(policy.theta, "pi.log_std").exp().unsqueeze(1)
    ref = torch.distributions.Normal(mean, std)
    torch.testing.assert_close(logp, ref.log_prob(actions).sum(-1), **TOL)
    torch.testing.assert_close(entropy, ref.entropy().sum(-1).mean(-1), **TOL)
    # predict clips to the Box like Stable-Baselines3 does
    far = np.full((5, 4), 50.0, dtype=np.float32)
    with torch.no_grad():
        policy.theta.mul_(100)
    act, _ = policy.predict(far, deterministic=True)
    assert act.shape == (5, 2) and np.all(np.abs(act) <= 1.0)


def test_obs_scale_is_the_same_policy_as_scaling_every_observation():
    """--obs-scale s folds into the first layer: a policy with s on x equals the same θ without s on x ⊙ s,
    in actions and in log-probabilities with their gradients (so training is unchanged by the folding)."""
    box = gym.spaces.Box(-1, 1, (2,))
    scale = (1.0, 0.1, 2.0, 0.5)
    plain = make(box)
    scaled = ParticlePolicy(PolicySpec.for_spaces(gym.spaces.Box(-1, 1, (4,)), box, NET, 3, obs_scale=scale), plain.theta)
    obs, actions = torch.randn(3, 6, 4) * 20, torch.randn(3, 6, 2)
    logp_scaled, _ = scaled.log_prob_entropy(scaled.theta, obs, actions)
    logp_plain, _ = plain.log_prob_entropy(plain.theta, obs * torch.tensor(scale), actions)
    torch.testing.assert_close(logp_scaled, logp_plain, **TOL)
    (g_scaled,) = torch.autograd.grad(logp_scaled.sum(), scaled.theta)
    (g_plain,) = torch.autograd.grad(logp_plain.sum(), plain.theta)
    torch.testing.assert_close(g_scaled, g_plain, rtol=1e-4, atol=1e-4)
    a, _ = scaled.predict(obs[0].numpy(), deterministic=True)
    b, _ = plain.predict((obs[0] * torch.tensor(scale)).numpy(), deterministic=True)
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert not np.allclose(a, plain.predict(obs[0].numpy(), deterministic=True)[0]), "the scale must change the policy"


def test_obs_scale_of_the_wrong_length_or_sign_is_a_clear_error():
    for bad in ((1.0, 0.1), (1.0, 1.0, 0.0, 1.0)):
        with pytest.raises(ValueError, match="4 positive numbers"):
            PolicySpec.for_spaces(gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2), NET, 2, obs_scale=bad)


def test_a_critic_reads_the_scaled_observation():
    scale = (1.0, 1.0, 0.1, 3.0)
    plain = A2C(4, 2, 0.99, hidden=(8,), seed=3, gae_lambda=0.95, lr=3e-4, value_steps=1, value_epochs=1)
    scaled = A2C(4, 2, 0.99, hidden=(8,), seed=3, gae_lambda=0.95, lr=3e-4, value_steps=1, value_epochs=1, obs_scale=scale)
    obs = torch.randn(2, 5, 4) * 10
    torch.testing.assert_close(scaled.values(obs), plain.values(obs * torch.tensor(scale)), rtol=1e-5, atol=1e-5)


def test_the_reinforce_baseline_reads_the_scaled_observation():
    """rllab's linear baseline is fitted on what the policy sees: with obs_scale s on raw obs the advantages equal
    those of an unscaled estimator on obs ⊙ s (and differ from the raw fit: the baseline clips its features at ±10)."""
    g = torch.Generator().manual_seed(0)
    t, m, n = 40, 2, 3
    obs = torch.randn(t, m, n, 2, generator=g) * torch.tensor([1.0, 60.0])
    rewards = torch.randn(t, m, n, generator=g) + 0.05 * obs[..., 1]
    none = torch.zeros(t, m, n, dtype=torch.bool)
    batch = Rollout(obs, torch.zeros(t, m, n), rewards, none, none, None)
    scale = (1.0, 0.1)
    adv_scaled, _, _ = Reinforce(0.99, "linear", scale).advantages(batch)
    ref = Rollout(obs * torch.tensor(scale), torch.zeros(t, m, n), rewards, none, none, None)
    adv_ref, _, _ = Reinforce(0.99, "linear").advantages(ref)
    torch.testing.assert_close(adv_scaled, adv_ref)
    adv_raw, _, _ = Reinforce(0.99, "linear").advantages(batch)
    assert not torch.allclose(adv_scaled, adv_raw, atol=1e-3)
