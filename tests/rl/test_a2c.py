"""A2C: GAE against Stable-Baselines3's own advantage computation, bootstrapping rules, learning."""
import numpy as np
import pytest
import torch
from gymnasium import spaces

from svpg.rl.config import SVPGConfig, load_preset, parameter_count, widen_to_match
from svpg.rl.evaluation import evaluate_particles
from svpg.rl.returns import gae_advantages, standardize
from svpg.rl.trainer import SVPGTrainer
from tests.conftest import CLASSIC


def sb3_advantages(rewards, values, last_values, episode_starts, last_dones, gamma, lam):
    from stable_baselines3.common.buffers import RolloutBuffer

    t, n = rewards.shape
    buf = RolloutBuffer(t, spaces.Box(-1, 1, (1,)), spaces.Discrete(2), gamma=gamma, gae_lambda=lam, n_envs=n)
    for i in range(t):
        buf.add(np.zeros((n, 1)), np.zeros((n, 1)), rewards[i], episode_starts[i], torch.tensor(values[i]), torch.zeros(n))
    buf.compute_returns_and_advantage(torch.tensor(last_values), last_dones)
    return buf.advantages


def test_gae_matches_stable_baselines3_with_terminations_and_truncations():
    rng = np.random.default_rng(0)
    t, n, gamma, lam = 40, 5, 0.97, 0.9
    rewards = rng.normal(size=(t, n)).astype(np.float32)
    values = rng.normal(size=(t, n)).astype(np.float32)
    last_values = rng.normal(size=n).astype(np.float32)
    terminated = rng.random((t, n)) < 0.08
    truncated = (rng.random((t, n)) < 0.08) & ~terminated
    dones = terminated | truncated
    final_values = rng.normal(size=(t, n)).astype(np.float32)  # V(pre-reset next obs) where done
    # ours: V of the true next state of every step
    next_values = np.where(dones, final_values, np.vstack([values[1:], last_values[None]]))
    ours = gae_advantages(
        torch.tensor(rewards), torch.tensor(values), torch.tensor(next_values), torch.tensor(terminated),
        torch.tensor(dones), gamma, lam,
    )
    # SB3: a truncated step's reward gets γ V(terminal obs) added (on_policy_algorithm.collect_rollouts)
    sb3_rewards = rewards + gamma * final_values * truncated
    starts = np.vstack([np.ones((1, n)), dones[:-1]]).astype(np.float32)
    ref = sb3_advantages(sb3_rewards, values, last_values, starts, dones[-1].astype(np.float32), gamma, lam)
    np.testing.assert_allclose(ours.numpy(), ref, rtol=1e-5, atol=1e-5)


def test_bootstrap_on_truncation_not_on_termination():
    # one step each: same reward 1, V(s) = 0, V(s') = 10
    r, v, nv = torch.ones(1, 2), torch.zeros(1, 2), torch.full((1, 2), 10.0)
    term = torch.tensor([[True, False]])
    adv = gae_advantages(r, v, nv, term, torch.tensor([[True, True]]), gamma=0.5, lam=1.0)
    torch.testing.assert_close(adv, torch.tensor([[1.0, 1.0 + 0.5 * 10]]))


@pytest.mark.parametrize("env_id", ["CartPole-v1", "svpg/DoublePendulum-v0"])
def test_advantages_bootstrap_from_the_true_next_state_of_every_step(tmp_runs, env_id):
    # A2C reads V(s'_t) off the critic pass over s_{t+1} where the episode goes on; a horizon of 37 in
    # batches of 40 steps puts time limits inside the batch, and CartPole also terminates. The result
    # must equal GAE with a critic pass over every true next state s'_t.
    cfg = SVPGConfig(**(CLASSIC | dict(estimator="a2c")), env_id=env_id, num_particles=3, samples_per_particle=400, horizon=37, num_seeds=2,
                     log_dir=str(tmp_runs), progress=False)
    trainer = SVPGTrainer(cfg)
    batch = trainer.model.collect()
    assert (batch.truncated[:-1] & ~batch.terminated[:-1]).any()
    critic = trainer.model.estimator
    with torch.no_grad():
        values, next_values = critic.values(batch.obs), critic.values(batch.final_obs)
        advantages, targets, _ = critic.advantages(batch)
    expected = gae_advantages(batch.rewards, values, next_values, batch.terminated, batch.dones, cfg.gamma, cfg.gae_lambda)
    torch.testing.assert_close(targets, expected + values, rtol=1e-6, atol=1e-5)
    torch.testing.assert_close(advantages, standardize(expected, dims=(0, 2)), rtol=1e-5, atol=1e-5)


def test_a2c_learns_cartpole(tmp_runs):
    cfg = SVPGConfig(
        **(CLASSIC | dict(estimator="a2c", anneal_lr=False)), num_particles=4, samples_per_particle=2000, iterations=30, seed=0, log_dir=str(tmp_runs),
        run_name="a2c", progress=False, checkpoint_every=0, eval_episodes=0, threads=1,
    )
    trainer = SVPGTrainer(cfg)
    policy = trainer.train()
    after = evaluate_particles(policy, cfg.env_id, 10, seed=3, deterministic=False)
    assert after.mean() > 100, f"mean return {after.mean():.1f}"
    # the critics are saved with the trainer state and restored on resume
    resumed = SVPGTrainer.resume(trainer.run_dir, iterations=31)
    torch.testing.assert_close(resumed.model.estimator.theta, trainer.model.estimator.theta, rtol=0, atol=0)


def test_svgd_star_has_at_least_the_parameters_of_s2vgd_k4():
    for obs_dim, out in ((4, 1), (6, 1), (4, 2)):
        target = parameter_count((obs_dim, 25, 10, out), householder=4, learn_scales=True)
        widths = widen_to_match(obs_dim, (25, 10), out)
        d = parameter_count((obs_dim, *widths, out))
        assert target <= d < target * 1.1, (widths, d, target)


def test_presets_hold_their_documented_settings():
    # From §5.4 of S²VGD: M = 16, horizon 500, 25-10 tanh policies, 1000 iterations (100 for Cartpole).
    # This package's choices (docs/rl.md), not the paper's: 5000 samples per particle (the paper's
    # "sample size of 10000" is not broken down), γ = 0.99, lr 0.005, and the three below.
    for name, iters in (("swingup", 1000), ("double-pendulum", 1000), ("balance", 100)):
        p = load_preset(name)
        assert (p["num_particles"], p["samples_per_particle"], p["horizon"], p["gamma"], p["lr"],
                tuple(p["hidden"]), p["iterations"]) == (16, 5000, 500, 0.99, 0.005, (25, 10), iters)
        # on this package's J scale (summed over the batch): α = 1000, flat prior, annealed lr
        assert (p["alpha"], p["prior"], p["anneal_lr"]) == (1000.0, "flat", True)
    with pytest.raises(ValueError, match="unknown preset"):
        load_preset("nope")


def test_svpg_rl_exports_the_public_rl_api():
    import svpg
    import svpg.rl as rl

    assert rl.SVPG is svpg.SVPG and rl.EvalCallback is svpg.EvalCallback
    assert all(hasattr(rl, name) for name in rl.__all__)
    assert {"SVPG", "SVPGConfig", "load", "BaseCallback", "CheckpointCallback", "EvalCallback"} <= set(rl.__all__)
