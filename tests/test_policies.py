"""Policy heads against torch.distributions (the direct formulas must match the reference)."""
import gymnasium as gym
import numpy as np
import torch

from svpg.rl.policies import ParticlePolicy, PolicySpec

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
