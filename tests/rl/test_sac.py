"""The off-policy estimator (estimator="sac"): the squashed head, the replay buffer, the update (the actor
step's gradient, the critics' target, the temperature's step) against independent computations, exact
resume (save/load, a run folder killed with SIGKILL), the refusals, its own defaults, and learning on
Pendulum-v1."""
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.distributions import Normal, TanhTransform, TransformedDistribution

import svpg
from svpg.rl.config import SVPGConfig
from svpg.rl.estimators import ESTIMATORS, SAC
from svpg.rl.export import to_module
from svpg.rl.policies import ParticlePolicy, PolicySpec, load_policy
from svpg.rl.replay import ReplayBuffer
from svpg.rl.trainer import ProgressCSV, SVPGTrainer
from tests.rl.off_policy import twin_q, update_capturing_target

ROOT = Path(__file__).resolve().parents[2]
#: a tiny SAC: 4 particles, 50-step Pendulum episodes (an iteration: 4 × 50 = 200 steps), an update every 2nd
#: step from the 100th transition on
TINY = dict(estimator="sac", hidden=(16,), critic_hidden=(16,), batch_size=32, learning_starts=100, train_freq=2,
            horizon=50, threads=1)


def tiny(seed=0, **kw):
    return svpg.SVPG("Pendulum-v1", seed=seed, verbose=0, **(TINY | kw))


def test_squashed_log_prob_is_torch_distributions_tanh_normal():
    import gymnasium as gym

    spec = PolicySpec.for_spaces(gym.spaces.Box(-1, 1, (3,)), gym.spaces.Box(-1, 1, (2,)), {"hidden": (4,)}, 2,
                                 squashed=True)
    policy = ParticlePolicy(spec)
    g = torch.Generator().manual_seed(0)
    out = torch.randn(2, 5, 4, generator=g)  # |u| < 4: torch's tanh inverse stays finite
    out[..., 2:] -= 1.0
    out[0, 0, 3] = 30.0  # a log-std beyond SB3's clamp at 2
    noise = torch.randn(2, 5, 2, generator=g)
    actions, logp = policy.squashed_sample(out, noise)
    mean, log_std = out.chunk(2, -1)
    log_std = log_std.clamp(-20, 2)
    reference = TransformedDistribution(Normal(mean, log_std.exp()), [TanhTransform()])
    u = mean + log_std.exp() * noise
    torch.testing.assert_close(actions, torch.tanh(u))
    torch.testing.assert_close(logp, reference.log_prob(torch.tanh(u)).sum(-1), rtol=1e-4, atol=1e-4)
    # where tanh rounds to ±1 in float32 the log-density stays finite (computed from u, not from a)
    _, saturated = policy.squashed_sample(torch.tensor([[[30.0, -30.0, 0.0, 0.0]]]), torch.zeros(1, 1, 2))
    assert torch.isfinite(saturated).all()


def test_squashed_actions_fill_the_box_and_predict_export_agree():
    model = tiny(hidden=(8,))
    with torch.no_grad():
        model.policy.theta.normal_(0, 3.0, generator=torch.Generator().manual_seed(0))  # saturating outputs
    obs = np.random.default_rng(0).normal(size=(64, 3)).astype(np.float32)
    sampled, _ = model.predict(obs)
    assert sampled.shape == (64, 1) and np.all(np.abs(sampled) <= 2.0)
    mode, _ = model.predict(obs, deterministic=True)
    module = to_module(model.policy, deterministic=True)
    # the same function summed in another order: weights of std 3 make float32's rounding show at 1e-5
    torch.testing.assert_close(module(torch.as_tensor(obs)), torch.as_tensor(mode), rtol=1e-4, atol=1e-4)


def test_replay_buffer_is_a_ring_per_run_and_samples_each_runs_own_store():
    buffer = ReplayBuffer(seeds=2, capacity=5, obs_dim=1, action_dim=1)
    for step in range(4):  # 3 transitions per run per step: 12 added, the ring holds the last 5
        values = torch.tensor([[10.0 * step + k for k in range(3)], [-(10.0 * step + k) for k in range(3)]])
        buffer.add(values[..., None], values[..., None], values, values[..., None] + 1, torch.zeros(2, 3))
    assert (buffer.size(), buffer.added, buffer.pos) == (5, 12, 2)
    assert buffer.full and buffer.buffer_size == 5  # SB3's names
    assert sorted(buffer.rewards[0].tolist()) == [21.0, 22.0, 30.0, 31.0, 32.0]
    indices = torch.tensor([[0, 1], [0, 1], [0, 1], [0, 1]])  # rows 0-1 read run 0, rows 2-3 run 1
    obs, _, rewards, next_obs, _ = buffer.sample(indices, particles_per_run=2)
    assert torch.equal(rewards[:2], buffer.rewards[0, :2].expand(2, 2))
    assert torch.equal(rewards[2:], buffer.rewards[1, :2].expand(2, 2))
    assert torch.equal(next_obs, obs + 1)
    restored = ReplayBuffer(seeds=2, capacity=5, obs_dim=1, action_dim=1)
    restored.load_state_dict(buffer.state_dict())
    assert torch.equal(restored.rewards, buffer.rewards) and (restored.pos, restored.added) == (2, 12)


def squashed(model, weights, obs, noise):
    """SAC's tanh-Gaussian action in [−1, 1] and its log-density, written with torch.distributions."""
    mean, log_std = model.policy.net.forward(model.policy.net.weights(weights), obs).chunk(2, -1)
    std = log_std.clamp(-20, 2).exp()
    a = torch.tanh(mean + std * noise)
    dist = TransformedDistribution(Normal(mean, std), [TanhTransform()])
    return a, dist.log_prob(a.clamp(-1 + 1e-7, 1 - 1e-7)).sum(-1)


def test_the_actor_step_follows_grad_of_J_over_alpha_plus_weighted_log_prior():
    # One update's SVGD gradient against SAC's actor objective written out independently (minibatch and
    # noise redrawn from the same streams, the critics as the update leaves them).
    model = tiny(alpha=7.0, prior="mvg", prior_weight=0.5, hidden=(8,))
    est: SAC = model.estimator
    model.train_iteration()
    theta = model.policy.theta.detach().clone()
    seen, step = {}, model.svgd.step
    model.svgd.step = lambda grad: step(seen.setdefault("grad", grad.clone()))
    ent_coef = est.log_ent_coef.detach().exp()  # before the temperature's own step (SB3's order)
    est.gradient_step(model, model.streams("replay_minibatch"), model.streams("sac_noise"))
    m, b = 4, est.batch_size
    g = model.streams("replay_minibatch")[0]
    indices = torch.randint(est.buffer.filled, (m, b), generator=g)
    obs = est.buffer.obs[0][indices]
    noise = torch.randn((m, b, 1), generator=model.streams("sac_noise")[0])
    block = theta.clone().requires_grad_()
    a, logp = squashed(model, block, obs, noise)
    x = torch.cat([obs, 2.0 * a], -1)  # the critics read the action in Pendulum's box [−2, 2]
    critic = est.critic.detach()
    q = twin_q(est, critic, x).amin(0)
    objective = (q - ent_coef[:, None] * logp).sum(1)
    log_q = objective / 7.0 + 0.5 * model.policy.log_prior(block)
    (expected,) = torch.autograd.grad(log_q.sum(), block)
    torch.testing.assert_close(seen["grad"], expected, rtol=2e-3, atol=2e-4)


def test_the_critic_target_is_the_soft_bellman_backup_of_the_target_critics():
    # y = r + γ (1 − d) (min_k Q̄_k(s', ã') − α log π(ã'|s')), ã' ~ π(·|s') on the update's second noise draw,
    # against an independent computation (SAC's eq. 3 and 5 with twin target critics, SB3's order)
    model = tiny(seed=1, gamma=0.9, hidden=(8,))
    est: SAC = model.estimator
    model.train_iteration()
    assert not torch.equal(est.target, est.critic.detach())  # the Polyak average lags the critics
    theta, target_critic = model.policy.theta.detach().clone(), est.target.clone()
    ent_coef = est.log_ent_coef.detach().exp()
    y, indices, g = update_capturing_target(model, "sac_noise")
    m, b = 4, est.batch_size
    torch.randn((m, b, 1), generator=g)  # the first draw is the actor's and the temperature's
    next_noise = torch.randn((m, b, 1), generator=g)
    rewards, next_obs = est.buffer.rewards[0][indices], est.buffer.next_obs[0][indices]
    terminated = est.buffer.terminated[0][indices]
    assert terminated.sum() == 0 and not torch.all(ent_coef == 1)  # Pendulum only truncates; α has moved
    next_a, next_logp = squashed(model, theta, next_obs, next_noise)
    x = torch.cat([next_obs, 2.0 * next_a], -1)  # the critics read the action in Pendulum's box [−2, 2]
    expected = rewards + 0.9 * (twin_q(est, target_critic, x).amin(0) - ent_coef[:, None] * next_logp)
    torch.testing.assert_close(y, expected, rtol=1e-4, atol=1e-4)


def test_the_temperature_step_follows_sb3s_entropy_loss():
    # ∂/∂ log α_i of −log α_i · mean_b(log π_i(ã|s) + H̄), H̄ = −dim A, per particle (SB3's ent_coef_loss)
    model = tiny(seed=2, hidden=(8,))
    est: SAC = model.estimator
    model.train_iteration()
    theta, log_alpha = model.policy.theta.detach().clone(), est.log_ent_coef.detach().clone()
    seen, step = {}, est.ent_optimizer.step
    est.ent_optimizer.step = lambda: (seen.setdefault("grad", est.log_ent_coef.grad.clone()), step())
    info = est.gradient_step(model, model.streams("replay_minibatch"), model.streams("sac_noise"))
    m, b = 4, est.batch_size
    indices = torch.randint(est.buffer.filled, (m, b), generator=model.streams("replay_minibatch")[0])
    noise = torch.randn((m, b, 1), generator=model.streams("sac_noise")[0])
    _, logp = squashed(model, theta, est.buffer.obs[0][indices], noise)
    assert est.target_entropy == -1.0
    per_particle = logp.mean(1) - 1.0
    torch.testing.assert_close(seen["grad"], -per_particle, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(info["train/ent_coef_loss"], (-log_alpha * per_particle).mean()[None],
                               rtol=1e-4, atol=1e-5)


def test_an_update_uses_the_temperatures_from_before_their_own_step_as_sb3_does():
    model = tiny(learning_starts=10_000)  # the iteration only fills the buffer
    est: SAC = model.estimator
    model.train_iteration()
    assert torch.all(est.log_ent_coef == 0)
    info = est.gradient_step(model, model.streams("replay_minibatch"), model.streams("sac_noise"))
    assert info["train/ent_coef"].tolist() == [1.0]  # α = e⁰ in the targets and the actor step
    assert torch.all(est.log_ent_coef != 0)  # and the temperatures took their step


def test_warm_up_and_update_iterations_log_the_same_scalars():
    model = tiny(learning_starts=300)  # the first iteration (200 steps) makes no update
    first = model.train_iteration()
    assert math.isnan(first["train/ent_coef"].item())
    second = model.train_iteration()
    assert list(first) == list(second) and not math.isnan(second["train/ent_coef"].item())


def test_save_load_continues_bit_for_bit_with_and_without_the_replay_buffer(tmp_path):
    straight = tiny(seed=3)
    straight.learn(600)
    first = tiny(seed=3)
    first.learn(200)
    first.save(tmp_path / "sac")
    resumed = svpg.SVPG.load(tmp_path / "sac", verbose=0)
    assert resumed.estimator.buffer.filled == 200
    resumed.learn(400, reset_num_timesteps=False)
    assert torch.equal(resumed.policy.theta, straight.policy.theta)
    for name in ("critic", "target", "log_ent_coef"):
        assert torch.equal(getattr(resumed.estimator, name), getattr(straight.estimator, name)), name
    assert torch.equal(resumed.estimator.buffer.obs, straight.estimator.buffer.obs)

    light = tiny(seed=3, save_replay_buffer=False)
    light.learn(200)
    path = light.save(tmp_path / "light")
    transitions = 200 * (3 + 1 + 1 + 3 + 1) * 4  # s, a, r, s', terminated: float32
    assert (tmp_path / "sac.safetensors").stat().st_size - path.stat().st_size >= transitions
    again = svpg.SVPG.load(path, verbose=0)
    assert again.estimator.buffer.filled == 0 and again.estimator.buffer.added == 200  # no second warm-up
    assert torch.equal(again.estimator.critic, light.estimator.critic)



def test_sb3s_save_replay_buffer_workflow_continues_bit_for_bit(tmp_path):
    straight = tiny(seed=3)
    straight.learn(600)
    first = tiny(seed=3, save_replay_buffer=False)  # the model file without the buffer, as SB3's save
    first.learn(200)
    first.save(tmp_path / "sac")
    buffer_file = first.save_replay_buffer(tmp_path / "buffer")
    assert buffer_file == tmp_path / "buffer.safetensors"
    resumed = svpg.SVPG.load(tmp_path / "sac", verbose=0)
    assert resumed.replay_buffer.size() == 0
    resumed.load_replay_buffer(buffer_file)
    assert resumed.replay_buffer.size() == 200 and torch.equal(resumed.replay_buffer.obs, first.replay_buffer.obs)
    resumed.learn(400, reset_num_timesteps=False)
    assert torch.equal(resumed.policy.theta, straight.policy.theta)
    assert torch.equal(resumed.estimator.critic, straight.estimator.critic)


def test_a_seed_batch_saves_and_loads_one_replay_buffer_file_per_seed(tmp_path):
    batched = tiny(seed=5, num_seeds=2, learning_starts=1000)  # no update: the buffers alone differ
    batched.learn(200)
    files = [batched.save_replay_buffer(tmp_path / f"seed{k}", seed_index=k) for k in range(2)]
    single = tiny(seed=6, learning_starts=1000)
    single.load_replay_buffer(files[1])
    assert torch.equal(single.replay_buffer.obs, batched.replay_buffer.obs[1:])
    again = tiny(seed=5, num_seeds=2, learning_starts=1000)
    again.load_replay_buffer(files)
    assert torch.equal(again.replay_buffer.actions, batched.replay_buffer.actions)
    with pytest.raises(ValueError, match="one replay-buffer file per seed"):
        again.load_replay_buffer(files[0])
    with pytest.raises(ValueError, match="seed_index must be an integer from 0 to 1"):
        batched.save_replay_buffer(tmp_path / "third", seed_index=2)


def test_replay_buffer_files_are_refused_where_they_do_not_fit(tmp_path):
    path = tiny().learn(200).save_replay_buffer(tmp_path / "pendulum")
    other = svpg.SVPG("MountainCarContinuous-v0", estimator="sac", verbose=0, buffer_size=1000)
    with pytest.raises(ValueError, match="obs of 3 dimensions and this model's environment has 2"):
        other.load_replay_buffer(path)
    with pytest.raises(ValueError, match="more than buffer_size 100"):
        tiny(buffer_size=100).load_replay_buffer(path)
    on_policy = svpg.SVPG("Pendulum-v1", estimator="ppo", verbose=0)
    assert on_policy.replay_buffer is None
    with pytest.raises(ValueError, match="keeps no replay buffer"):
        on_policy.save_replay_buffer(tmp_path / "none")
    model_file = tiny().save(tmp_path / "model")
    with pytest.raises(ValueError, match="not a 'replay-buffer' one"):
        tiny().load_replay_buffer(model_file)

def test_a_seed_batch_equals_its_single_seed_runs():
    batched = tiny(seed=5, num_seeds=2)
    batched.learn(400)
    for k, seed in enumerate((5, 6)):
        single = tiny(seed=seed)
        single.learn(400)
        torch.testing.assert_close(batched.policy.theta[4 * k : 4 * k + 4], single.policy.theta, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(
            batched.estimator.critic[8 * k : 8 * k + 8], single.estimator.critic, rtol=1e-4, atol=1e-5
        )


def test_sac_has_its_own_defaults_and_explicit_options_win():
    model = svpg.SVPG("Pendulum-v1", estimator="sac", verbose=0, buffer_size=1000)
    cfg = model.config
    assert cfg.hidden == (256, 256) and cfg.critic_hidden == (256, 256)
    assert not cfg.normalize_obs and not cfg.normalize_reward
    assert (model.envs_per_particle, model.steps_per_env) == (1, 200)  # one episode per particle
    assert svpg.SVPG("Pendulum-v1", estimator="sac", hidden=(32,), verbose=0, buffer_size=10).config.hidden == (32,)
    assert svpg.SVPG("Pendulum-v1", verbose=0).config.hidden == (64, 64)  # ppo's unchanged
    assert set(SAC.defaults) <= {f for f in SVPGConfig.__dataclass_fields__}
    assert "sac" in ESTIMATORS and not ESTIMATORS["sac"].on_policy


def test_the_command_line_takes_sac_and_its_defaults(tmp_path):
    from svpg.rl.train_cli import build_parser, make_trainer

    argv = ["--estimator", "sac", "--env-id", "Pendulum-v1", "--iterations", "1", "--log-dir", str(tmp_path),
            "--buffer-size", "1000", "--critic-hidden", "8"]
    parser = build_parser("train.py")
    trainer = make_trainer(parser, parser.parse_args(argv), argv)
    assert trainer.config.hidden == (256, 256) and trainer.config.critic_hidden == (8,)



def test_train_py_states_the_replay_buffers_memory_before_training(tmp_path, capsys):
    from svpg.rl.train_cli import main

    argv = ["--estimator", "sac", "--env-id", "Pendulum-v1", "--iterations", "1", "--log-dir", str(tmp_path),
            "--buffer-size", "3000", "--learning-starts", "10000", "--hidden", "8", "--critic-hidden", "8",
            "--eval-episodes", "0"]
    assert main(argv) == 0
    # 3,000 × (3 + 1 + 1 + 3 + 1 floats: s, a, r, s', terminated) × 4 bytes = 0.10 MiB
    assert "replay buffer: 3,000 transitions, 0.1 MiB preallocated on cpu" in capsys.readouterr().out
    model = svpg.SVPG("Pendulum-v1", estimator="sac", buffer_size=100_000, num_seeds=2, verbose=0)
    assert str(model.replay_buffer) == "replay buffer: 100,000 transitions × 2 seeds, 6.9 MiB preallocated on cpu"
    assert sum(t.nbytes for t in vars(model.replay_buffer).values() if torch.is_tensor(t)) == 2 * 100_000 * 9 * 4

@pytest.mark.parametrize(
    "options, message",
    [
        (dict(env="CartPole-v1"), "needs a continuous \\(Box\\) action space, and CartPole-v1 has discrete actions"),
        (dict(buffer_size=10**13), "lower buffer_size"),
        (dict(normalize_obs=True), "normalize_obs=False"),
        (dict(ent_coef="hot"), "--ent-coef must be"),
        (dict(critics="shared", batch_size=30), "30 is not a multiple of --num-particles 4"),
        (dict(gradient_steps=0), "--gradient-steps must be ≥ 1 or -1"),
    ],
)
def test_bad_settings_are_refused_in_one_line(options, message):
    env = options.pop("env", "Pendulum-v1")
    with pytest.raises(ValueError, match=message):
        svpg.SVPG(env, estimator="sac", verbose=0, **options)


def test_train_py_refuses_sac_on_a_discrete_task_with_exit_status_2(tmp_path, capsys):
    from svpg.rl.train_cli import main

    assert main(["--estimator", "sac", "--log-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "discrete actions" in err and len(err.strip().splitlines()) == 1
    assert not tmp_path.exists() or not any(tmp_path.iterdir()), "bad input creates no run folder"


@pytest.mark.slow
def test_a_run_folder_killed_inside_a_checkpoint_write_resumes_to_the_uninterrupted_run(tmp_path):
    settings = dict(TINY, env_id="Pendulum-v1", iterations=4, checkpoint_every=2, eval_episodes=0, progress=False)
    settings["horizon"] = 50
    reference = SVPGTrainer(SVPGConfig.with_defaults(**settings, log_dir=str(tmp_path / "ref"), run_name="ref"))
    reference.train()
    args = [f"--{k.replace('_', '-')}={','.join(map(str, v)) if isinstance(v, tuple) else str(v).lower() if isinstance(v, bool) else v}"
            for k, v in settings.items()]
    run = tmp_path / "killed"
    # config.json is written twice, then (checkpoint, model.safetensors) per checkpoint: 5 = inside the second checkpoint
    out = subprocess.run([sys.executable, "tests/kill_driver.py", "replace:5:before", "--", *args,
                          "--log-dir", str(tmp_path), "--run-name", "killed"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == -9, out.stderr
    out = subprocess.run([sys.executable, "train.py", "--resume", str(run)], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert torch.equal(load_policy(run).theta, reference.model.policy.theta.detach())
    strip = lambda rows: [{k: v for k, v in r.items() if k != "time/fps"} for r in rows]  # noqa: E731
    assert strip(ProgressCSV.read(run / "progress.csv")) == strip(ProgressCSV.read(reference.run_dir / "progress.csv"))


@pytest.mark.slow
def test_pendulum_best_particle_reaches_minus_250_within_30000_steps_with_the_defaults():
    # seed 7: neither a tuning seed (100-104) nor a reported one (0-4)
    model = svpg.SVPG("Pendulum-v1", estimator="sac", seed=7, verbose=0)
    model.learn(30_000)
    from svpg.rl.evaluation import evaluate_particles

    returns = evaluate_particles(model.policy, "Pendulum-v1", 10, seed=11, deterministic=True).mean(1)
    assert model.scalars[0]["rollout/ep_rew_max"] >= -250, model.scalars[0]
    assert returns.max() >= -250, returns


def test_shared_critics_are_one_pair_per_seed_read_by_every_particle_on_its_share_of_the_minibatch():
    model = tiny(seed=2, critics="shared", num_seeds=2)
    est: SAC = model.estimator
    assert est.critic.shape[0] == 2 * 2  # one twin pair per seed
    obs, actions = torch.randn(8, 5, 3), torch.rand(8, 5, 1)
    q = est.q_values(est.net.weights(est.critic.detach()), obs, actions)
    for row in range(8):  # particle row r (seed r // 4) is scored by its seed's pair, sample by sample
        seed = row // 4
        x = torch.cat([obs[row], actions[row]], -1)
        for k in range(2):
            pair = est.critic.detach()[2 * seed + k : 2 * seed + k + 1]
            expected = est.net.forward(est.net.weights(pair), x.unsqueeze(0)).view(5)
            torch.testing.assert_close(q[row, k], expected, rtol=1e-5, atol=1e-6)


def test_shared_critics_resume_bit_for_bit_and_a_seed_batch_equals_its_single_seed_runs(tmp_path):
    straight = tiny(seed=4, critics="shared")
    straight.learn(400)
    first = tiny(seed=4, critics="shared")
    first.learn(200)
    resumed = svpg.SVPG.load(first.save(tmp_path / "shared"), verbose=0)
    resumed.learn(200, reset_num_timesteps=False)
    assert torch.equal(resumed.policy.theta, straight.policy.theta)
    assert torch.equal(resumed.estimator.critic, straight.estimator.critic)
    batched = tiny(seed=4, critics="shared", num_seeds=2)
    batched.learn(400)
    torch.testing.assert_close(batched.policy.theta[:4], straight.policy.theta, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(batched.estimator.critic[:2], straight.estimator.critic, rtol=1e-4, atol=1e-5)


def test_gradient_steps_minus_one_makes_one_update_per_environment_step():
    model = tiny(gradient_steps=-1, learning_starts=0, train_freq=1, horizon=10)
    calls = []
    step = model.estimator.gradient_step
    model.estimator.gradient_step = lambda *a: calls.append(1) or step(*a)
    model.train_iteration()  # 10 steps of 4 particles, one environment each
    assert len(calls) == 40



@pytest.mark.parametrize("train_freq, horizon, updates", [(3, 10, [3, 3, 4, 3]), (64, 50, [0, 1, 1, 1]),
                                                       (128, 50, [0, 0, 1, 0])])
def test_train_freq_counts_the_runs_steps_across_iterations_as_sb3s(train_freq, horizon, updates):
    # an update after every train_freq-th step of the run, whichever iteration it falls in (train_freq 3,
    # 10-step iterations: after steps 3, 6, 9 | 12, 15, 18 | 21, 24, 27, 30 | 33, 36, 39; 64 and 128 with
    # 50-step iterations: more than an iteration apart)
    model = tiny(learning_starts=0, train_freq=train_freq, horizon=horizon)
    calls = []
    step = model.estimator.gradient_step
    model.estimator.gradient_step = lambda *a: calls.append(1) or step(*a)
    counted, infos = [], []
    for _ in range(4):
        infos.append(model.train_iteration())
        counted.append(len(calls) - sum(counted))
    assert counted == updates
    # an iteration without an update reports NaN, one with an update its losses
    assert [math.isnan(info["critic/q_loss"].item()) for info in infos] == [n == 0 for n in updates]


@pytest.mark.parametrize("gradient_steps", [1, 3])
def test_the_svgd_diagnostics_are_computed_on_an_iterations_last_update_only(gradient_steps):
    """The iteration reports its last update's scalars: the SVGD diagnostics (pairwise distances, norms) are
    computed for that update alone, and still reported."""
    model = tiny(gradient_steps=gradient_steps)
    flags = []
    update = model.svgd_update
    model.svgd_update = lambda *a, diagnostics=True: flags.append(diagnostics) or update(*a, diagnostics=diagnostics)
    for _ in range(2):
        flags.clear()
        scalars = model.train_iteration()
        assert len(flags) > 1 and flags[-1] and not any(flags[:-1])
        assert torch.isfinite(scalars["svgd/bandwidth"]).all() and torch.isfinite(scalars["critic/q_loss"]).all()


def test_sb3s_train_freq_tuples_in_steps_are_taken_and_episodes_refused():
    from stable_baselines3.common.type_aliases import TrainFreq, TrainFrequencyUnit

    assert tiny(train_freq=(4, "step")).config.train_freq == 4
    assert tiny(train_freq=TrainFreq(3, TrainFrequencyUnit.STEP)).config.train_freq == 3
    with pytest.raises(ValueError, match=r"SB3's \(n, 'episode'\) has no equivalent here"):
        tiny(train_freq=(1, "episode"))


def test_anneal_lr_decays_the_critics_and_temperatures_with_the_actors_as_sb3s_schedule():
    model = tiny(anneal_lr=True, lr=4e-3, critic_lr=2e-3, learning_starts=1000)
    model.learn(800)  # 4 iterations: the last one runs at 1 − 3/4 of each base rate
    est = model.estimator
    assert [g["lr"] for g in model.svgd.optimizer.param_groups] == [1e-3]
    assert [g["lr"] for g in est.critic_optimizer.param_groups] == [5e-4]
    assert [g["lr"] for g in est.ent_optimizer.param_groups] == [1e-3]
    fixed = tiny(lr=4e-3, critic_lr=2e-3, learning_starts=1000).learn(800).estimator
    assert [g["lr"] for g in fixed.critic_optimizer.param_groups] == [2e-3]


def test_numbers_for_ent_coef_and_target_entropy_are_taken_as_sb3_takes_them():
    given = tiny(ent_coef=0.2, target_entropy=-2)
    assert given.config == tiny(ent_coef="0.2", target_entropy="-2.0").config
    assert not given.estimator.auto_entropy and given.estimator.target_entropy == -2.0
    assert torch.allclose(given.estimator.log_ent_coef.exp(), torch.tensor(0.2))
