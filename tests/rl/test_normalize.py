"""Observation normalisation and reward scaling: SB3's VecNormalize as the reference, and the frozen
transform wherever a trained model acts."""
import gymnasium as gym
import numpy as np
import pytest
import torch

import svpg
from svpg.rl.normalize import Normalizer

SMALL = dict(num_particles=2, samples_per_particle=400, verbose=0, ppo_minibatches=4, ppo_epochs=2)


def test_statistics_and_scaled_rewards_equal_sb3_vecnormalize():
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    # a fake vector env whose observations and rewards we choose, fed through SB3's VecNormalize
    rng = np.random.default_rng(0)
    steps, n = 30, 3
    observations = rng.normal(2.0, 3.0, (steps + 1, n, 2)).astype(np.float32)
    rewards = rng.normal(-1.0, 2.0, (steps, n)).astype(np.float32)
    dones = rng.random((steps, n)) < 0.1

    class Scripted(gym.Env):
        observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
        action_space = gym.spaces.Discrete(2)

    venv = DummyVecEnv([Scripted] * n)
    reference = VecNormalize(venv, gamma=0.9, clip_obs=10.0, clip_reward=10.0)
    ours = Normalizer(2, norm_obs=True, norm_reward=True, gamma=0.9)
    ours.start_episodes(n, "cpu")
    expected = reference.normalize_obs(_update(reference, observations[0]))
    got = ours.observe(torch.as_tensor(observations[0]))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-5)
    for t in range(steps):
        # SB3's step_wait, by hand: observations first, then returns and rewards
        obs = _update(reference, observations[t + 1])
        reference.returns = reference.returns * reference.gamma + rewards[t]
        reference.ret_rms.update(reference.returns)
        expected_reward = reference.normalize_reward(rewards[t])
        reference.returns[dones[t]] = 0
        got_reward = ours.scale_rewards(torch.as_tensor(rewards[t]), torch.as_tensor(dones[t]))
        got_obs = ours.observe(torch.as_tensor(observations[t + 1]))
        np.testing.assert_allclose(got_reward.numpy(), expected_reward, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got_obs.numpy(), reference.normalize_obs(obs), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours.obs_var[0].numpy(), reference.obs_rms.var, rtol=1e-6)  # SB3 takes the batch variance in float32
    np.testing.assert_allclose(ours.ret_var[0].numpy(), reference.ret_rms.var, rtol=1e-6)


def _update(vec_normalize, obs):
    vec_normalize.obs_rms.update(obs)
    return obs


def test_groups_keep_separate_statistics():
    ours = Normalizer(1, groups=2, norm_reward=False)
    ours.observe(torch.tensor([[0.0], [2.0], [10.0], [14.0]]))
    mean = ours.obs_mean[:, 0]
    torch.testing.assert_close(mean, torch.tensor([1.0, 12.0], dtype=torch.float64), rtol=1e-4, atol=0)


def test_a_normalising_model_acts_with_frozen_statistics_everywhere(tmp_path):
    from svpg.rl.export import to_module

    model = svpg.SVPG("Pendulum-v1", seed=1, **SMALL).learn(1600)
    frozen = model.normalizer.frozen(0)
    assert not torch.allclose(frozen["mean"], torch.zeros(3))
    obs = np.array([[0.5, -0.2, 3.0], [1.0, 0.0, -6.0]], np.float32)
    action, _ = model.predict(obs, deterministic=True)
    path = model.save(tmp_path / "p")
    acting = svpg.load(path)  # the rollout-only loader applies the same transform
    np.testing.assert_allclose(acting.predict(obs, deterministic=True)[0], action, rtol=1e-6)
    module = to_module(acting)
    np.testing.assert_allclose(module(torch.as_tensor(obs)).numpy(), action, rtol=1e-5, atol=1e-6)
    # training on does not move the statistics of a saved model, and resuming restores them exactly
    loaded = svpg.SVPG.load(path, verbose=0)
    assert torch.equal(loaded.normalizer.obs_var, model.normalizer.obs_var)
    model.learn(800, reset_num_timesteps=False)
    loaded.learn(800, reset_num_timesteps=False)
    assert torch.equal(loaded.normalizer.obs_mean, model.normalizer.obs_mean)
    assert torch.equal(loaded.policy.theta, model.policy.theta)


def test_ppo_first_minibatch_step_is_the_policy_gradient_of_that_minibatch():
    # at the first minibatch the ratio is 1, so min(rÂ, clip(r)Â) has the plain policy gradient ∇log π Â
    model = svpg.SVPG("CartPole-v1", seed=2, prior_weight=0.0, **SMALL)
    batch = model.collect()
    advantages, _, _ = model.estimator.advantages(batch)
    seen = []
    step = model.svgd.step
    model.svgd.step = lambda grad: seen.append(grad.clone()) or step(grad)
    theta = model.policy.theta.detach().clone()
    model.estimator.policy_update(model, batch, advantages)
    from svpg.rl.rollout import per_particle
    from svpg.seeding import torch_generator

    samples = per_particle(batch.obs, 2).shape[1]
    order = torch.randperm(samples, generator=torch_generator(2, "ppo_minibatch", 0, 0))
    columns = order[: samples // 4]
    block = theta.requires_grad_()
    logp, _ = model.policy.log_prob_entropy(block, per_particle(batch.obs, 2)[:, columns],
                                            per_particle(batch.actions, 2)[:, columns])
    objective = (logp * per_particle(advantages, 2)[:, columns]).sum(1) * (samples / len(columns))
    (expected,) = torch.autograd.grad(objective.sum() / model.config.alpha, block)
    assert len(seen) == 2 * 4
    torch.testing.assert_close(seen[0], expected, rtol=1e-4, atol=1e-6)


@pytest.mark.slow
def test_pendulum_learns_with_the_defaults_on_a_seed_not_used_for_tuning():
    model = svpg.SVPG("Pendulum-v1", seed=7, verbose=0).learn(200_000)
    from svpg.rl.evaluation import evaluate_particles

    policy = model.seed_policy(0)
    returns = evaluate_particles(policy, "Pendulum-v1", 10, seed=123)
    assert returns[policy.particle].mean() >= -300
