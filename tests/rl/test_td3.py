"""The off-policy estimator estimator="td3": the deterministic head (predict, export, saved spec), the actor
step's gradient and the smoothed target against independent computations, the policy delay, exact resume,
the seed batch, the refusals, its own defaults and the command line."""
import math

import gymnasium as gym
import numpy as np
import pytest
import torch

import svpg
from svpg.rl.config import SVPGConfig
from svpg.rl.estimators import ESTIMATORS, TD3
from svpg.rl.export import to_module
from svpg.rl.policies import ParticlePolicy, PolicySpec, load_policy
from tests.rl.off_policy import twin_q, update_capturing_target

#: a tiny TD3: 4 particles, 50-step Pendulum episodes (an iteration: 4 × 50 = 200 steps), an update every 2nd
#: step from the 100th transition on
TINY = dict(estimator="td3", hidden=(16,), critic_hidden=(16,), batch_size=32, learning_starts=100, train_freq=2,
            horizon=50, threads=1)


def tiny(seed=0, **kw):
    return svpg.SVPG("Pendulum-v1", seed=seed, verbose=0, **(TINY | kw))


def test_the_deterministic_head_predicts_its_mode_in_the_box_and_exports_it(tmp_path):
    model = tiny(hidden=(8,))
    assert model.policy.spec.head == "deterministic" and model.policy.spec.network.sizes == (3, 8, 1)
    assert "pi.log_std" not in model.policy.layout
    with torch.no_grad():
        model.policy.theta.normal_(0, 3.0, generator=torch.Generator().manual_seed(0))  # saturating outputs
    obs = np.random.default_rng(0).normal(size=(64, 3)).astype(np.float32)
    mode, _ = model.predict(obs, deterministic=True)
    sampled, _ = model.predict(obs)  # SB3's TD3 predicts μ(s) either way
    np.testing.assert_array_equal(sampled, mode)
    assert mode.shape == (64, 1) and np.all(np.abs(mode) <= 2.0) and np.abs(mode).max() > 1.9
    i = model.policy.particle
    out = model.policy.net.forward(model.policy.net.weights(model.policy.theta.detach()[i : i + 1]),
                                   torch.as_tensor(obs)[None])
    # the same function summed in another order: weights of std 3 make float32's rounding show at 1e-5
    close = dict(rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(torch.as_tensor(mode), 2.0 * torch.tanh(out[0]), **close)  # Pendulum's box [−2, 2]
    for deterministic in (True, False):
        module = to_module(model.policy, deterministic=deterministic)
        torch.testing.assert_close(module(torch.as_tensor(obs)), torch.as_tensor(mode), **close)
    raw = to_module(model.policy, raw=True)
    torch.testing.assert_close(raw(torch.as_tensor(obs)), out[0], **close)
    # saved and loaded with its head; a file of another head stores no such field
    path = model.save(tmp_path / "td3")
    loaded = load_policy(path)
    assert loaded.spec.deterministic and loaded.spec == model.spec
    np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0], mode)
    np.testing.assert_array_equal(svpg.SVPG.load(path, verbose=0).predict(obs)[0], mode)
    gaussian = PolicySpec.for_spaces(gym.spaces.Box(-1, 1, (3,)), gym.spaces.Box(-1, 1, (2,)), {"hidden": (4,)}, 2)
    assert "deterministic" not in gaussian.to_dict() and PolicySpec.from_dict(gaussian.to_dict()) == gaussian
    assert PolicySpec.from_dict(model.spec.to_dict()).deterministic
    with pytest.raises(ValueError, match="deterministic tanh policy needs finite action bounds.*ClipAction makes the bounds infinite"):
        PolicySpec.for_spaces(gym.spaces.Box(-1, 1, (3,)), gym.spaces.Box(-np.inf, np.inf, (2,)), {"hidden": (4,)}, 2,
                              deterministic=True)


def test_evaluate_py_says_its_stochastic_episodes_of_the_deterministic_head_are_deterministic(tmp_path, capsys):
    from svpg.rl.evaluate_cli import main

    path = tiny(hidden=(8,)).save(tmp_path / "td3")
    outs = []
    for flags in ([], ["--stochastic"]):
        assert main([str(path), "--eval-episodes", "1", *flags]) == 0
        outs.append(capsys.readouterr().out)
    assert "1 deterministic episodes" in outs[0]
    assert "1 deterministic (TD3's head has no noise to sample, as SB3's TD3.predict) episodes" in outs[1]
    tables = [out[out.index("| particle") :] for out in outs]
    assert tables[0] == tables[1] and "| 3 |" in tables[0]


def test_exploration_adds_clipped_gaussian_noise_in_half_widths_of_the_box():
    model = tiny(action_noise=0.5)
    policy, est = model.policy, model.estimator
    obs = torch.randn(4, 3, 3)
    eps = torch.randn(4, 3, 1) * 3
    weights = policy.fast_weights(policy.theta.detach())
    a = est.explore(model, weights, obs, eps)
    mu = policy.mode(weights, obs) / 2.0  # the action scaled to [−1, 1]
    torch.testing.assert_close(a, 2.0 * (mu + 0.5 * eps).clamp(-1, 1))
    assert (a.abs() == 2.0).any() and (a.abs() < 2.0).any()


def run_to_updates(model):
    model.train_iteration()  # 200 transitions: a critic update every 2nd step of the last 25, 6 actor steps
    assert model.estimator.critic_updates == 13
    return model.estimator


def test_the_actor_step_follows_grad_of_Q1_over_alpha_plus_weighted_log_prior():
    # One actor step's SVGD gradient against TD3's actor objective written out independently (minibatch
    # redrawn from the same stream, the critics as the update leaves them).
    model = tiny(alpha=7.0, prior="mvg", prior_weight=0.5, hidden=(8,))
    est: TD3 = run_to_updates(model)
    est.critic_updates = 1  # the next update is the 2nd: it takes an actor step
    theta = model.policy.theta.detach().clone()
    seen, step = {}, model.svgd.step
    model.svgd.step = lambda grad: step(seen.setdefault("grad", grad.clone()))
    est.gradient_step(model, model.streams("replay_minibatch"), model.streams("td3_noise"))
    assert "grad" in seen
    m, b = 4, est.batch_size
    indices = torch.randint(est.buffer.filled, (m, b), generator=model.streams("replay_minibatch")[0])
    obs = est.buffer.obs[0][indices]
    block = theta.clone().requires_grad_()
    out = model.policy.net.forward(model.policy.net.weights(block), obs)
    a = 2.0 * torch.tanh(out)  # Pendulum's box [−2, 2]
    critic = est.critic.detach()
    q1 = est.net.forward(est.net.weights(critic[0::2]), torch.cat([obs, a], -1)).squeeze(-1)  # Q_i1 only
    log_q = q1.sum(1) / 7.0 + 0.5 * model.policy.log_prior(block)
    (expected,) = torch.autograd.grad(log_q.sum(), block)
    torch.testing.assert_close(seen["grad"], expected, rtol=2e-3, atol=2e-4)


@pytest.mark.parametrize("critics", ["per-particle", "shared"])
def test_the_actor_objective_reads_each_particles_first_critic_alone(critics):
    # Q_1 without Q_2's pass equals the first of both critics' values, for both critic layouts and 2 seeds
    model = tiny(seed=3, num_seeds=2, critics=critics)
    est: TD3 = model.estimator
    with torch.no_grad():
        est.critic.normal_(0, 0.5, generator=torch.Generator().manual_seed(0))
    g = torch.Generator().manual_seed(1)
    obs, actions = torch.randn(8, 5, 3, generator=g), torch.randn(8, 5, 1, generator=g)
    weights = est.net.weights(est.critic)
    both = est.q_values(weights, obs, actions)
    assert both.shape == (8, 2, 5) and not torch.allclose(both[:, 0], both[:, 1])
    torch.testing.assert_close(est.first_critic_values(weights, obs, actions), both[:, 0])
    for k, rows in enumerate((slice(0, 4), slice(4, 8))):  # one seed's particles, as the actor step reads them
        seed_weights = est.critic_weights(weights, rows, k)
        torch.testing.assert_close(est.first_critic_values(seed_weights, obs[rows], actions[rows]), both[rows, 0])


def test_the_critic_target_uses_the_target_policy_with_clipped_smoothing_noise():
    model = tiny(seed=1, gamma=0.9, target_policy_noise=1.0, target_noise_clip=0.3)
    est: TD3 = run_to_updates(model)
    assert not torch.equal(est.target_theta, model.policy.theta.detach())  # the Polyak average lags θ
    target_theta, target_critic = est.target_theta.clone(), est.target.clone()
    y, indices, g = update_capturing_target(model, "td3_noise")
    m, b = 4, est.batch_size
    torch.randn((m, b, 1), generator=g)  # the first draw is the actor noise TD3 does not use
    eps = torch.randn((m, b, 1), generator=g)
    smoothing = (1.0 * eps).clamp(-0.3, 0.3)
    assert (eps.abs() > 0.3).any()  # the clip matters in this case
    rewards, next_obs = est.buffer.rewards[0][indices], est.buffer.next_obs[0][indices]
    terminated = est.buffer.terminated[0][indices]
    mu = model.policy.net.forward(model.policy.net.weights(target_theta), next_obs)
    next_a = 2.0 * (torch.tanh(mu) + smoothing).clamp(-1, 1)
    x = torch.cat([next_obs, next_a], -1)
    expected = rewards + 0.9 * (1 - terminated) * twin_q(est, target_critic, x).amin(0)
    torch.testing.assert_close(y, expected, rtol=1e-5, atol=1e-5)


def test_the_actor_and_the_targets_move_only_every_policy_delay_critic_updates():
    model = tiny(seed=2)
    est: TD3 = run_to_updates(model)
    minibatches, noise = model.streams("replay_minibatch", 1), model.streams("td3_noise", 1)
    for update in range(14, 20):
        before = [x.detach().clone() for x in (model.policy.theta, est.critic, est.target, est.target_theta)]
        info = est.gradient_step(model, minibatches, noise)
        after = [x.detach() for x in (model.policy.theta, est.critic, est.target, est.target_theta)]
        moved = [not torch.equal(x, y) for x, y in zip(before, after)]
        actor_step = update % 2 == 0
        assert moved == [actor_step, True, actor_step, actor_step], update
        if actor_step:
            torch.testing.assert_close(after[3], before[3] + 0.005 * (after[0] - before[3]))
            torch.testing.assert_close(after[2], before[2] + 0.005 * (after[1] - before[2]))
        assert set(info) == set(est.scalars)
    assert est.critic_updates == 19


def test_warm_up_and_update_iterations_log_the_same_scalars():
    model = tiny(learning_starts=300)  # the first iteration (200 steps) makes no update
    first = model.train_iteration()
    assert math.isnan(first["critic/q_loss"].item()) and "train/ent_coef" not in first
    second = model.train_iteration()
    assert list(first) == list(second)
    assert not math.isnan(second["critic/q_loss"].item()) and not math.isnan(second["svgd/driving_norm"].item())


def test_save_load_continues_bit_for_bit(tmp_path):
    straight = tiny(seed=3)
    straight.learn(600)
    first = tiny(seed=3)
    first.learn(200)
    first.save(tmp_path / "td3")
    resumed = svpg.SVPG.load(tmp_path / "td3", verbose=0)
    assert resumed.estimator.buffer.filled == 200 and resumed.estimator.critic_updates == 13
    resumed.learn(400, reset_num_timesteps=False)
    assert torch.equal(resumed.policy.theta, straight.policy.theta)
    for name in ("critic", "target", "target_theta"):
        assert torch.equal(getattr(resumed.estimator, name), getattr(straight.estimator, name)), name
    assert resumed.estimator.critic_updates == straight.estimator.critic_updates == 63
    assert torch.equal(resumed.estimator.buffer.obs, straight.estimator.buffer.obs)
    untimed = lambda scalars: {k: v for k, v in scalars.items() if not k.startswith("time/")}  # noqa: E731
    np.testing.assert_equal(untimed(resumed.scalars[0]), untimed(straight.scalars[0]))  # NaN entropy equal too


@pytest.mark.parametrize("critics", ["per-particle", "shared"])
def test_a_seed_batch_equals_its_single_seed_runs(critics):
    batched = tiny(seed=5, num_seeds=2, critics=critics)
    batched.learn(400)
    pairs = 2 if critics == "shared" else 8  # critic rows per seed
    for k, seed in enumerate((5, 6)):
        single = tiny(seed=seed, critics=critics)
        single.learn(400)
        torch.testing.assert_close(batched.policy.theta[4 * k : 4 * k + 4], single.policy.theta, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(batched.estimator.target_theta[4 * k : 4 * k + 4], single.estimator.target_theta,
                                   rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(batched.estimator.critic[pairs * k : pairs * (k + 1)], single.estimator.critic,
                                   rtol=1e-4, atol=1e-5)


def test_td3_has_sb3s_defaults_and_explicit_options_win():
    model = svpg.SVPG("Pendulum-v1", estimator="td3", verbose=0, buffer_size=1000)
    cfg = model.config
    assert cfg.hidden == (400, 300) and cfg.critic_hidden == (400, 300)
    assert cfg.lr == cfg.critic_lr == 1e-3
    assert (cfg.batch_size, cfg.tau, cfg.gamma, cfg.train_freq, cfg.gradient_steps) == (256, 0.005, 0.99, 1, 1)
    assert (cfg.policy_delay, cfg.target_policy_noise, cfg.target_noise_clip, cfg.action_noise) == (2, 0.2, 0.5, 0.1)
    assert cfg.learning_starts == SVPGConfig.with_defaults(estimator="sac").learning_starts
    assert not cfg.normalize_obs and not cfg.normalize_reward
    assert (model.envs_per_particle, model.steps_per_env) == (1, 200)  # one episode per particle
    assert model.estimator.net.spec.activation == "relu" and model.policy.spec.network.activation == "tanh"
    assert svpg.SVPG("Pendulum-v1", estimator="td3", lr=3e-4, verbose=0, buffer_size=10).config.lr == 3e-4
    assert set(TD3.defaults) <= set(SVPGConfig.__dataclass_fields__)
    assert "td3" in ESTIMATORS and not ESTIMATORS["td3"].on_policy


def test_the_command_line_takes_td3_and_its_options(tmp_path):
    from svpg.rl.train_cli import build_parser, make_trainer

    argv = ["--estimator", "td3", "--env-id", "Pendulum-v1", "--iterations", "1", "--log-dir", str(tmp_path),
            "--buffer-size", "1000", "--critic-hidden", "8", "--policy-delay", "3", "--action-noise", "0.2",
            "--target-policy-noise", "0.1", "--target-noise-clip", "0.3"]
    parser = build_parser("train.py")
    trainer = make_trainer(parser, parser.parse_args(argv), argv)
    cfg = trainer.config
    assert cfg.hidden == (400, 300) and cfg.critic_hidden == (8,) and cfg.lr == 1e-3
    assert (cfg.policy_delay, cfg.action_noise, cfg.target_policy_noise, cfg.target_noise_clip) == (3, 0.2, 0.1, 0.3)
    est = trainer.model.estimator
    assert (est.policy_delay, est.action_noise, est.target_policy_noise, est.target_noise_clip) == (3, 0.2, 0.1, 0.3)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(env="CartPole-v1"), "estimator 'td3' needs a continuous \\(Box\\) action space, and CartPole-v1 has"),
        (dict(buffer_size=10**13), "lower buffer_size"),
        (dict(normalize_reward=True), "estimator 'td3' learns from raw observations and rewards"),
        (dict(policy_delay=0), "--policy-delay must be ≥ 1, got 0"),
        (dict(action_noise=-0.1), "--action-noise must be ≥ 0"),
        (dict(target_noise_clip=float("nan")), "--target-noise-clip must be ≥ 0"),
        (dict(critics="shared", batch_size=30), "30 is not a multiple of --num-particles 4"),
    ],
)
def test_bad_settings_are_refused_in_one_line(options, message):
    env = options.pop("env", "Pendulum-v1")
    with pytest.raises(ValueError, match=message):
        svpg.SVPG(env, estimator="td3", verbose=0, **options)


def test_train_py_refuses_td3_on_a_discrete_task_with_exit_status_2(tmp_path, capsys):
    from svpg.rl.train_cli import main

    assert main(["--estimator", "td3", "--log-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "discrete actions" in err and len(err.strip().splitlines()) == 1


def test_a_deterministic_head_has_no_log_probabilities():
    spec = PolicySpec.for_spaces(gym.spaces.Box(-1, 1, (3,)), gym.spaces.Box(-1, 1, (2,)), {"hidden": (4,)}, 2,
                                 deterministic=True)
    policy = ParticlePolicy(spec)
    with pytest.raises(ValueError, match="deterministic policy is trained by the off-policy estimators"):
        policy.log_prob_entropy(policy.theta, torch.zeros(2, 1, 3), torch.zeros(2, 1, 2))


@pytest.mark.slow
def test_pendulum_best_particle_reaches_minus_250_within_30000_steps_with_the_defaults():
    # seed 7: neither a tuning seed (100-104) nor a reported one (0-4); measured once: training best −122.2,
    # the best particle's deterministic return −135.4 on 10 fresh episodes (13 minutes on a shared 2-core VM)
    model = svpg.SVPG("Pendulum-v1", estimator="td3", seed=7, verbose=0)
    model.learn(30_000)
    from svpg.rl.evaluation import evaluate_particles

    returns = evaluate_particles(model.policy, "Pendulum-v1", 10, seed=11, deterministic=True).mean(1)
    assert model.scalars[0]["rollout/ep_rew_max"] >= -250, model.scalars[0]
    assert returns.max() >= -250, returns


def test_the_svgd_diagnostics_are_computed_on_an_iterations_last_actor_step_only():
    """TD3 reports its iteration's last actor step: with an actor step every policy_delay = 2 critic updates
    (13, then 25 updates in the first two iterations, the count carried across), only that step pays for the
    SVGD diagnostics, and they are reported."""
    model = tiny()
    flags = []
    update = model.svgd_update
    model.svgd_update = lambda *a, diagnostics=True: flags.append(diagnostics) or update(*a, diagnostics=diagnostics)
    for actor_steps in (6, 13):
        flags.clear()
        scalars = model.train_iteration()
        assert flags == [False] * (actor_steps - 1) + [True]
        assert torch.isfinite(scalars["svgd/bandwidth"]).all()


def test_sb3s_normal_action_noise_object_is_its_std_and_other_noise_is_refused():
    from stable_baselines3.common.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise

    given = tiny(seed=4, action_noise=NormalActionNoise(np.zeros(1), np.full(1, 0.3))).learn(400)
    number = tiny(seed=4, action_noise=0.3).learn(400)
    assert given.config.action_noise == 0.3
    assert torch.equal(given.policy.theta, number.policy.theta)
    assert tiny(action_noise=0.25).config.action_noise == 0.25  # a number stays as it is
    assert tiny(action_noise=None).config.action_noise == 0.0  # SB3's TD3 default: no exploration noise
    for noise in (
        NormalActionNoise(np.full(2, 0.1), np.full(2, 0.1)),  # not zero-mean
        NormalActionNoise(np.zeros(2), np.array([0.1, 0.2])),  # one std per dimension
        OrnsteinUhlenbeckActionNoise(np.zeros(1), np.full(1, 0.1)),
    ):
        with pytest.raises(ValueError, match="pass that std as a number, e.g. action_noise=0.1"):
            tiny(action_noise=noise)


def test_train_py_help_lists_the_off_policy_estimators_own_defaults(capsys):
    from svpg.rl.train_cli import build_parser

    text = " ".join(build_parser("train.py").format_help().split())
    assert "td3: --hidden 400,300, --critic-hidden 400,300, --lr 0.001, --critic-lr 0.001" in text
    assert "sac: --hidden 256,256, --critic-hidden 256,256" in text


@pytest.mark.parametrize("estimator, options, message", [
    ("td3", dict(ent_coef="auto_0.5"), "ent_coef is an option of sac, and estimator td3 does not read it: leave it "
                                       "out or use estimator sac"),
    ("sac", dict(policy_delay=3), "policy_delay is an option of td3, and estimator sac does not read it"),
    ("ppo", dict(learning_starts=5), "learning_starts is an option of sac or td3, and estimator ppo does not read it"),
    ("sac", dict(ppo_epochs=3), "ppo_epochs is an option of ppo, and estimator sac does not read it"),
    ("reinforce", dict(tau=0.01), "tau is an option of sac or td3, and estimator reinforce does not read it"),
])
def test_another_estimators_option_is_refused_in_one_line_not_ignored(estimator, options, message):
    with pytest.raises(ValueError, match=f"^{message}"):
        svpg.SVPG("Pendulum-v1", estimator=estimator, verbose=0, **options)
    assert svpg.SVPG("Pendulum-v1", estimator="ppo", clip_range=0.1, critic_lr=1e-3, verbose=0)  # its own are taken
    # the on-policy estimators' options pass between them (one set serves a grid over REINFORCE, A2C and PPO)
    assert svpg.SVPG("Pendulum-v1", estimator="reinforce", critic_hidden=(8,), ppo_epochs=2, verbose=0)


def test_train_py_refuses_another_estimators_option_with_exit_status_2(tmp_path, capsys):
    from svpg.rl.train_cli import main

    assert main(["--estimator", "td3", "--ent-coef", "0.1", "--env-id", "Pendulum-v1", "--log-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--ent-coef is an option of sac, and estimator td3 does not read it" in err and len(err.strip().splitlines()) == 1
    assert not tmp_path.exists() or not any(tmp_path.iterdir())
