"""Image and Dict observations: layouts, the particle CNN, learning, save/load, export and bad input."""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import svpg
from svpg import envs
from svpg.core.extractors import ObsLayout, ParticleNetwork, grouped_conv
from svpg.core.networks import NetworkSpec
from svpg.core.particles import ParticleLayout


class PixelReach(gym.Env):
    """A 1-D reach task drawn as pixels: a strip of ``width`` cells, the agent in channel 0 and the goal
    in channel 1 (uint8, 0 or 255); actions left / right; reward 1 and the end on reaching the goal, −0.05
    a step otherwise. The goal is random, so only a policy that reads the image does well."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(self, width: int = 6, channels_first: bool = True, horizon: int = 8, render_mode=None):
        self.width, self.channels_first, self.horizon = width, channels_first, horizon
        self.render_mode = render_mode
        shape = (2, 3, width) if channels_first else (3, width, 2)
        self.observation_space = gym.spaces.Box(0, 255, shape, np.uint8)
        self.action_space = gym.spaces.Discrete(2)

    def _obs(self):
        img = np.zeros((2, 3, self.width), np.uint8)
        img[0, :, self.pos] = 255
        img[1, :, self.goal] = 255
        return img if self.channels_first else img.transpose(1, 2, 0)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.goal = int(self.np_random.integers(self.width))
        self.pos = int((self.goal + 1 + self.np_random.integers(self.width - 1)) % self.width)
        self.t = 0
        return self._obs(), {}

    def render(self):
        """The frame as RGB (agent red, goal green), 8 px a cell."""
        img = self._obs() if self.channels_first else self._obs().transpose(2, 0, 1)
        rgb = np.stack([img[0], img[1], np.zeros_like(img[0])], -1)
        return rgb.repeat(8, 0).repeat(8, 1)

    def step(self, action):
        self.pos = int(np.clip(self.pos + (1 if int(action) == 1 else -1), 0, self.width - 1))
        self.t += 1
        done = self.pos == self.goal
        return self._obs(), 1.0 if done else -0.05, done, self.t >= self.horizon, {}


class GoalReach(gym.Env):
    """A goal-conditioned 1-D reach task with ``Dict`` observations ("observation": the position,
    "desired_goal": −1 or +1): reward −|x − goal| a step for 10 steps."""

    metadata: dict = {}
    observation_space = gym.spaces.Dict(
        {
            "observation": gym.spaces.Box(-1.0, 1.0, (1,), np.float32),
            "desired_goal": gym.spaces.Box(-1.0, 1.0, (1,), np.float32),
        }
    )
    action_space = gym.spaces.Discrete(2)

    def _obs(self):
        return {"observation": np.array([self.x], np.float32), "desired_goal": np.array([self.goal], np.float32)}

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.goal, self.t = 0.0, float(self.np_random.choice([-1.0, 1.0])), 0
        return self._obs(), {}

    def step(self, action):
        self.x = float(np.clip(self.x + (0.2 if int(action) == 1 else -0.2), -1.0, 1.0))
        self.t += 1
        return self._obs(), -abs(self.x - self.goal), False, self.t >= 10, {}


class BadImage(gym.Env):
    """A 3-D observation space of floats: an image of the wrong dtype."""

    observation_space = gym.spaces.Box(0.0, 1.0, (4, 4, 1), np.float32)
    action_space = gym.spaces.Discrete(2)


class WrongShape(PixelReach):
    """Its step() returns a frame of the wrong shape."""

    def step(self, action):
        obs, *rest = super().step(action)
        return obs[:, :, :-1], *rest


class ChangingKeys(GoalReach):
    """Its step() drops a key of its Dict observation."""

    def step(self, action):
        obs, *rest = super().step(action)
        del obs["desired_goal"]
        return obs, *rest


FAST = dict(num_particles=2, samples_per_particle=64, ppo_epochs=1, ppo_minibatches=1, hidden=(8,), critic_hidden=(8,))


def test_grouped_conv_equals_a_loop_of_conv2d_over_particles():
    g = torch.Generator().manual_seed(0)
    rows, cin, cout, batch = 3, 2, 5, 4
    x = torch.randn(batch, rows * cin, 7, 6, generator=g)
    w = torch.randn(rows, cout, cin, 3, 3, generator=g)
    b = torch.randn(rows, cout, generator=g)
    out = grouped_conv(x, w, b, stride=2, padding=1)
    loop = torch.cat([F.conv2d(x[:, j * cin : (j + 1) * cin], w[j], b[j], stride=2, padding=1) for j in range(rows)], 1)
    assert out.shape == (batch, rows * cout, 4, 3)
    torch.testing.assert_close(out, loop, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(10, 10, 4), (4, 84, 84)])
def test_every_particle_row_reads_its_own_images_with_its_own_filters(shape):
    """The batched torso of R rows equals each row's network run alone (nothing mixes across rows)."""
    obs = ObsLayout.from_space(gym.spaces.Box(0, 255, shape, np.uint8))
    assert obs is not None
    layout = ParticleLayout()
    net = ParticleNetwork(layout, obs, NetworkSpec((obs.parts[0].features, 8, 3), householder=2, learn_scales=True))
    theta = torch.empty(3, layout.size)
    net.init_(theta, torch.Generator().manual_seed(1))
    x = torch.randint(0, 256, (3, 2, obs.size), generator=torch.Generator().manual_seed(2)).float()
    out = net.fast_forward(net.fast_weights(net.weights(theta)), x)
    alone = torch.cat([net.forward(net.weights(theta[j : j + 1]), x[j : j + 1]) for j in range(3)])
    assert out.shape == (3, 2, 3)
    torch.testing.assert_close(out, alone, rtol=1e-4, atol=1e-5)
    # the kernel sees the filters: they are coordinates of θ with a prior like a dense layer's
    assert any(name.startswith("net.cnn0.conv") for name in layout)
    assert torch.isfinite(net.log_prior(theta)).all()


def test_images_are_detected_and_laid_out_as_sb3_does():
    preprocessing = pytest.importorskip("stable_baselines3.common.preprocessing")
    for shape, torso, features in [
        ((10, 10, 4), "small", 128),
        ((4, 84, 84), "nature", 512),
        ((36, 40, 3), "nature", 512),
    ]:
        space = gym.spaces.Box(0, 255, shape, np.uint8)
        assert preprocessing.is_image_space(space)
        part = ObsLayout.from_space(space).parts[0]
        assert part.channels_first == preprocessing.is_image_space_channels_first(space)
        assert (part.torso, part.features) == (torso, features)
    # a Dict: its keys in the space's order (sorted, as SB3's CombinedExtractor iterates them); an image
    # key's CNN gives 256 features (SB3's cnn_output_dim) when it is NatureCNN's
    space = gym.spaces.Dict({"z": gym.spaces.Box(-1, 1, (2, 3)), "a": gym.spaces.Box(0, 255, (3, 40, 40), np.uint8)})
    layout = ObsLayout.from_space(space)
    assert [p.key for p in layout.parts] == ["a", "z"] == list(space.spaces)
    assert [p.features for p in layout.parts] == [256, 0] and layout.size == 3 * 40 * 40 + 6
    assert layout.normalized_index() == list(range(4800, 4806))  # never the pixels


def saved_image_policy(tmp_path, channels_first: bool):
    """A briefly trained PixelReach model, five first frames, its greedy action on each, and the policy it saved."""

    def make():
        return PixelReach(channels_first=channels_first)

    model = svpg.SVPG(make, seed=0, verbose=0, **FAST)
    model.learn(128)
    env = make()
    frames = [env.reset(seed=s)[0] for s in range(5)]
    single = [int(model.predict(f, deterministic=True)[0]) for f in frames]
    model.save(tmp_path / "m")
    return make, model, frames, single, svpg.load(tmp_path / "m")


@pytest.mark.parametrize("channels_first", [True, False])
def test_an_image_policy_saves_loads_predicts_and_evaluates(tmp_path, channels_first):
    make, model, frames, single, policy = saved_image_policy(tmp_path, channels_first)
    batch = np.stack(frames)
    batched, _ = model.predict(batch, deterministic=True)
    assert batched.shape == (5,) and batched.tolist() == single
    assert policy.predict(batch, deterministic=True)[0].tolist() == single
    sampled = [policy.predict(batch)[0] for _ in range(3)]
    assert all(s.shape == (5,) for s in sampled)
    with pytest.raises(
        ValueError,
        match=r"^observation has shape \(\d, \d\), but this policy expects \(\d, \d, \d\) or \(n_envs, \d, \d, \d\)$",
    ):
        policy.predict(frames[0][0])
    from svpg.rl.evaluation import evaluate_particles

    assert evaluate_particles(policy, make, episodes=2, max_episode_steps=8).shape == (2, 2)
    from svpg.rl.export import to_module  # what export traces: the torso, both layouts

    assert to_module(policy)(torch.from_numpy(batch).float()).tolist() == single


@pytest.mark.slow  # torch.export and a fresh interpreter; the default suite exports the vector policies (test_export.py)
def test_an_exported_image_policy_runs_without_svpg(tmp_path):
    # the channel-last layout: the module's first step moves it
    _, _, frames, single, policy = saved_image_policy(tmp_path, channels_first=False)
    batch = np.stack(frames)
    from svpg.rl.export import export

    out = export(policy, tmp_path / "pi.pt2")
    np.save(tmp_path / "frames.npy", batch)
    code = (  # -I: no PYTHONPATH, no working directory on the path; svpg cannot be imported
        "import sys; sys.modules['svpg'] = None; import numpy as np, torch; m = torch.export.load(sys.argv[1]).module(); "
        "print(m(torch.from_numpy(np.load(sys.argv[2])).float()).tolist())"
    )
    run = subprocess.run(
        [sys.executable, "-I", "-c", code, str(out), str(tmp_path / "frames.npy")], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert eval(run.stdout) == single


def test_a_dict_policy_saves_loads_predicts_and_exports(tmp_path):
    model = svpg.SVPG(GoalReach, seed=0, verbose=0, **FAST)
    model.learn(128)
    obs = [GoalReach().reset(seed=s)[0] for s in range(4)]
    for o, x in zip(obs, (-0.6, 0.2, 0.4, 1.0)):
        o["observation"][:] = x
    batch = {k: np.stack([o[k] for o in obs]) for k in ("observation", "desired_goal")}
    single = [int(model.predict(o, deterministic=True)[0]) for o in obs]
    assert model.predict(batch, deterministic=True)[0].tolist() == single
    model.save(tmp_path / "m")
    policy = svpg.load(tmp_path / "m")
    assert policy.obs_normalization is not None  # the vector keys are normalised (SB3's VecNormalize)
    assert policy.predict(batch, deterministic=True)[0].tolist() == single
    with pytest.raises(ValueError, match=r"observation has keys \['observation'\], but this policy reads"):
        policy.predict({"observation": batch["observation"]})
    from svpg.rl.export import to_module

    flat, _ = policy.spec.obs_layout.flatten(batch)
    assert to_module(policy)(torch.from_numpy(flat)).tolist() == single


def test_images_are_never_normalised_dict_vector_keys_are():
    model = svpg.SVPG(PixelReach, seed=0, verbose=0, **FAST)
    model.learn(128)
    frozen = model.normalizer.frozen(0)
    x = torch.randint(0, 256, (3, model.spec.obs_dim)).float()
    assert torch.equal(model.policy.preprocess(x), x) or model.policy.obs_normalization is None
    model.policy.obs_normalization = frozen
    assert torch.equal(model.policy.preprocess(x), x)  # pixels pass through as 0…255
    dict_model = svpg.SVPG(GoalReach, seed=0, verbose=0, **FAST)
    dict_model.learn(128)
    stats = dict_model.normalizer.frozen(0)
    assert dict_model.spec.normalized_index() == [0, 1] and (stats["std"] != 1).all()


@pytest.mark.parametrize(
    "env, message",
    [
        (BadImage, r"^BadImage: observation_space Box\(.*\) is 3-D, which svpg reads as an image .* dtype float32"),
        (WrongShape, r"^WrongShape: step\(\) returned an observation of shape \(2, 3, 5\), its observation_space"),
        (ChangingKeys, r"^ChangingKeys: step\(\) returned an observation with keys \['observation'\], its Dict"),
    ],
)
def test_bad_image_and_dict_input_is_one_line_naming_the_env(env, message):
    with pytest.raises(ValueError, match=message) as err:
        svpg.SVPG(env, seed=0, verbose=0, **FAST).learn(64)
    assert "\n" not in str(err.value) and "function" not in str(err.value)


class PixelPush(PixelReach):
    """PixelReach with a continuous action (its sign picks the direction)."""

    def __init__(self):
        super().__init__()
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def step(self, action):
        return super().step(int(np.asarray(action).reshape(-1)[0] > 0))


def test_sac_and_reinforces_linear_baseline_refuse_image_observations_in_one_line():
    with pytest.raises(ValueError, match=r"estimator 'sac' reads flat observations"):
        svpg.SVPG(PixelPush, estimator="sac", seed=0, verbose=0, num_particles=2)
    with pytest.raises(ValueError, match=r"^reinforce's linear baseline .* baseline='none'$"):
        svpg.SVPG(PixelReach, estimator="reinforce", seed=0, verbose=0, num_particles=2)
    svpg.SVPG(PixelReach, estimator="reinforce", baseline="none", seed=0, verbose=0, **FAST).learn(64)


@pytest.mark.slow
def test_a_pixel_reach_task_learns():
    """The goal is drawn at random, so a policy must read the image: a random one scores about 0.5."""
    from svpg.rl.evaluation import evaluate_particles

    config = dict(num_particles=2, samples_per_particle=256, ppo_epochs=4, ppo_minibatches=4, hidden=(32,))
    model = svpg.SVPG(PixelReach, seed=0, verbose=0, critic_hidden=(32,), **config)
    model.learn(5120)
    returns = evaluate_particles(model.policy, PixelReach, episodes=20, max_episode_steps=8).mean(1)
    assert returns.max() >= 0.8, returns


def test_a_goal_conditioned_dict_task_learns():
    """The best return is −2.0 (straight to the goal); a random policy scores about −8.4."""
    from svpg.rl.evaluation import evaluate_particles

    config = dict(num_particles=2, samples_per_particle=256, ppo_epochs=4, ppo_minibatches=4, hidden=(32,))
    model = svpg.SVPG(GoalReach, seed=0, verbose=0, critic_hidden=(32,), **config)
    model.learn(1024)
    returns = evaluate_particles(model.policy, GoalReach, episodes=20, max_episode_steps=10).mean(1)
    assert returns.max() >= -2.2, returns


def test_a_batched_env_hands_out_flat_observations_in_the_env_layout():
    env = envs.make_batched(lambda: PixelReach(channels_first=False), 3, seed=0)
    obs = env.reset()
    assert env.obs_dim == 36 and obs.shape == (3, 36) and set(obs.unique().tolist()) <= {0.0, 255.0}
    frame, _ = PixelReach(channels_first=False).reset(seed=0)
    assert torch.equal(obs[0], torch.from_numpy(frame.reshape(-1).astype(np.float32)))


def test_a_dict_with_an_image_key_predicts_and_exports_the_same_actions():
    from svpg.rl.export import to_module
    from svpg.rl.policies import ParticlePolicy, PolicySpec

    space = gym.spaces.Dict(
        {"pos": gym.spaces.Box(-1.0, 1.0, (2,), np.float32), "pixels": gym.spaces.Box(0, 255, (3, 6, 2), np.uint8)}
    )
    spec = PolicySpec.for_spaces(space, gym.spaces.Discrete(3), {"hidden": (8,), "householder": 1}, 3)
    assert [p.key for p in spec.obs_layout.parts] == ["pixels", "pos"] and spec.normalized_index() == [36, 37]
    policy = ParticlePolicy(spec, seed=0).set_particle(2)
    policy.theta.data.mul_(30.0)  # far from the near-uniform start, so actions differ between observations
    policy.obs_normalization = {"mean": torch.full((38,), 0.5), "std": torch.full((38,), 2.0), "clip": 10.0}
    space.seed(0)
    obs = [space.sample() for _ in range(6)]
    batch = {k: np.stack([o[k] for o in obs]) for k in ("pos", "pixels")}
    single = [int(policy.predict(o, deterministic=True)[0]) for o in obs]
    assert policy.predict(batch, deterministic=True)[0].tolist() == single and len(set(single)) > 1
    flat, is_single = spec.obs_layout.flatten(batch)
    assert not is_single and flat.shape == (6, 38)
    assert to_module(policy)(torch.from_numpy(flat)).tolist() == single


def test_evaluate_py_and_its_gif_run_an_image_policy_of_a_registered_id(tmp_path, capsys):
    from svpg.rl.evaluate_cli import main

    env_id = "svpgtest/PixelReach-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=PixelReach, max_episode_steps=8)
    model = svpg.SVPG(env_id, seed=0, verbose=0, **FAST)
    model.learn(128)
    model.save(tmp_path / "m")
    gif = tmp_path / "episode.gif"
    assert main([str(tmp_path / "m"), "--eval-episodes", "2", "--gif", str(gif)]) == 0
    assert "ensemble" in capsys.readouterr().out and gif.stat().st_size > 0


def test_async_environments_step_images_and_refuse_dicts_in_one_line():
    sync = envs.make_batched(PixelReach, 4, seed=3)
    parallel = envs.make_batched(PixelReach, 4, seed=3, vec_env="async", n_workers=2)
    try:
        assert torch.equal(sync.reset(), parallel.reset())
        actions = torch.tensor([0, 1, 1, 0])
        for _ in range(10):  # through episode ends: final observations too
            a, b = sync.step(actions), parallel.step(actions)
            assert torch.equal(a.obs, b.obs) and torch.equal(a.final_obs, b.final_obs)
    finally:
        sync.close()
        parallel.close()
    with pytest.raises(ValueError, match=r"^GoalReach: vec_env='async' steps array observations; Dict observations"):
        envs.make_batched(GoalReach, 2, vec_env="async", n_workers=2)


class MinAtarLike(gym.Env):
    """MinAtar's observations: Box(0, 1, (10, 10, 4), bool), a binary image."""

    observation_space = gym.spaces.Box(0, 1, (10, 10, 4), np.bool_)
    action_space = gym.spaces.Discrete(3)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.random((10, 10, 4)) < 0.1, {}

    def step(self, action):
        self.t += 1
        return self.np_random.random((10, 10, 4)) < 0.1, float(action == 1), False, self.t >= 5, {}


def test_minatar_bool_frames_are_binary_images_through_the_small_torso():
    model = svpg.SVPG(MinAtarLike, seed=0, verbose=0, **FAST)
    (part,) = model.spec.obs_layout.parts
    assert (part.kind, part.torso, part.scale, part.channels_first) == ("image", "small", 1.0, False)
    model.learn(64)
    frames = np.stack([MinAtarLike().reset(seed=s)[0] for s in range(3)])
    actions, _ = model.predict(frames, deterministic=True)
    assert actions.shape == (3,) and [int(model.predict(f, deterministic=True)[0]) for f in frames] == actions.tolist()
    from svpg.rl.export import to_module

    assert to_module(model.policy)(torch.from_numpy(frames).float()).tolist() == actions.tolist()


def test_svgd_star_widens_an_image_policy_from_its_features_not_its_pixels():
    from svpg.rl.config import parameter_count, widen_to_match

    options = {**FAST, "hidden": (32, 32)}
    model = svpg.SVPG(lambda: PixelReach(width=40), method="svgd-star", seed=0, verbose=0, **options)
    features = 128  # the small torso's dense layer (the image is under 36 px)
    hidden = tuple(model.policy.spec.network.sizes[1:-1])
    assert hidden == widen_to_match(features, (32, 32), 2) == (39, 39)
    assert widen_to_match(2 * 3 * 40, (32, 32), 2) == (38, 38)  # what the flat pixel count would give
    # as many coordinates as S²VGD's dense network (K = 4) on the same features, at least
    target = parameter_count((features, 32, 32, 2), householder=4, learn_scales=True, prior="mvg")
    assert parameter_count((features, *hidden, 2), prior="mvg") >= target > parameter_count((features, 32, 32, 2))


class UnrenderedReach(PixelReach):
    def render(self):
        raise gym.error.DependencyNotInstalled('pygame is not installed, run `pip install "gymnasium[classic_control]"`')


def test_evaluate_py_gif_without_the_envs_renderer_is_one_line_naming_the_install(tmp_path, capsys):
    from svpg.rl.evaluate_cli import main

    env_id = "svpgtest/UnrenderedReach-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=UnrenderedReach, max_episode_steps=8)
    svpg.SVPG(env_id, seed=0, verbose=0, **FAST).learn(128).save(tmp_path / "m")
    assert main([str(tmp_path / "m"), "--eval-episodes", "1", "--gif", str(tmp_path / "episode.gif")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and 'pip install "gymnasium[classic_control]"' in err, err
    assert not (tmp_path / "episode.gif").exists()


class EchoDigit(gym.Env):
    """Name the first component of a random MultiDiscrete([3, 3], start=[1, 1]) observation (reward 1 when
    right, 20 steps; a guess scores about 6.7), or the second bit of a random MultiBinary(3) one (about 10)."""

    def __init__(self, binary=False):
        self.binary = binary
        self.observation_space = gym.spaces.MultiBinary(3) if binary else gym.spaces.MultiDiscrete([3, 3], start=[1, 1])
        self.action_space = gym.spaces.Discrete(2 if binary else 3)

    def _draw(self):
        self.x = self.np_random.integers(0, 2, 3).astype(np.int8) if self.binary else self.np_random.integers(1, 4, 2)
        return self.x

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._draw(), {}

    def step(self, action):
        reward = float(int(action) == (int(self.x[1]) if self.binary else int(self.x[0]) - 1))
        self.t += 1
        return self._draw(), reward, False, self.t >= 20, {}


@pytest.mark.parametrize("binary", [False, True])
def test_multi_discrete_and_multi_binary_observations_learn_and_predict_from_the_env_s_own(binary, tmp_path):
    from stable_baselines3.common.evaluation import evaluate_policy

    model = svpg.SVPG(lambda: EchoDigit(binary), estimator="reinforce", samples_per_particle=400, lr=0.02, verbose=0)
    assert model.observation_space == EchoDigit(binary).observation_space  # the env's own space, as SB3's
    model.learn(8 * 1_600)
    mean, _ = evaluate_policy(model, EchoDigit(binary), n_eval_episodes=10, deterministic=True, warn=False)
    assert mean >= 18  # of 20: it reads the component it has to name
    raw = np.array([[1, 0, 1], [0, 1, 1]], np.int8) if binary else np.array([[1, 3], [2, 1], [3, 2]])
    actions, _ = model.predict(raw, deterministic=True)
    assert actions.tolist() == ([0, 1] if binary else [0, 1, 2])
    assert model.predict(raw[0], deterministic=True)[0] == actions[0]  # one observation, one action
    loaded = svpg.load(model.save(tmp_path / "echo"))
    assert loaded.predict(raw, deterministic=True)[0].tolist() == actions.tolist()
    with pytest.raises(ValueError, match=r"^observation has shape \(2, \d, \d\), but this policy reads Multi"):
        model.predict(np.stack([raw, raw]))
    model.set_env(EchoDigit(binary))  # the same spaces: the env's own, not their encodings, are compared


class CornerSign(gym.Env):
    """Say on which side of 0 the last entry of a (2, 3) Box observation is (reward 1 when right, 20 steps)."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2, 3), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.x = 0, self.np_random.uniform(-1, 1, (2, 3)).astype(np.float32)
        return self.x, {}

    def step(self, action):
        reward = float(int(action) == int(self.x[1, 2] > 0))
        self.t, self.x = self.t + 1, self.np_random.uniform(-1, 1, (2, 3)).astype(np.float32)
        return self.x, reward, False, self.t >= 20, {}


def test_a_non_flat_box_observation_is_read_flattened_and_predicted_in_the_env_s_shape(tmp_path):
    from stable_baselines3.common.evaluation import evaluate_policy

    model = svpg.SVPG(CornerSign, estimator="reinforce", samples_per_particle=400, lr=0.02, verbose=0)
    assert model.observation_space == CornerSign.observation_space and model.env.obs_dim == 6
    model.learn(8 * 1_600)
    mean, _ = evaluate_policy(model, CornerSign(), n_eval_episodes=10, deterministic=True, warn=False)
    assert mean >= 18  # of 20
    raw = np.random.default_rng(0).uniform(-1, 1, (50, 2, 3)).astype(np.float32)
    actions, _ = model.predict(raw, deterministic=True)
    assert actions.shape == (50,) and (actions == (raw[:, 1, 2] > 0)).mean() > 0.9
    assert model.predict(raw[0], deterministic=True)[0] == actions[0]  # one observation in the env's shape
    assert np.array_equal(model.predict(raw.reshape(50, 6), deterministic=True)[0], actions)  # flattened: the same
    assert np.array_equal(svpg.load(model.save(tmp_path / "corner")).predict(raw, deterministic=True)[0], actions)


class EchoDigitDict(EchoDigit):
    """EchoDigit's MultiDiscrete digits beside MultiBinary bits and a Box of noise, as one Dict observation."""

    def __init__(self):
        super().__init__(binary=False)
        self.observation_space = gym.spaces.Dict(
            {
                "digits": gym.spaces.MultiDiscrete([3, 3], start=[1, 1]),
                "bits": gym.spaces.MultiBinary(3),
                "noise": gym.spaces.Box(-1.0, 1.0, (1,), np.float32),
            }
        )

    def _draw(self):
        super()._draw()
        bits = self.np_random.integers(0, 2, 3).astype(np.int8)
        return {"digits": self.x, "bits": bits, "noise": self.np_random.uniform(-1, 1, 1).astype(np.float32)}


def test_a_dict_of_multi_discrete_and_multi_binary_keys_is_flattened_as_sb3_preprocesses_it():
    from stable_baselines3.common.preprocessing import preprocess_obs

    env = EchoDigitDict()
    layout = ObsLayout.from_space(env.observation_space)
    obs = {"bits": np.array([1, 0, 1], np.int8), "digits": np.array([3, 1]), "noise": np.array([0.5], np.float32)}
    flat, single = layout.flatten(obs)
    sb3 = preprocess_obs(
        {k: torch.as_tensor(v - (1 if k == "digits" else 0))[None] for k, v in obs.items()},
        gym.spaces.Dict({**env.observation_space.spaces, "digits": gym.spaces.MultiDiscrete([3, 3])}),
    )
    assert single and flat.tolist() == [torch.cat([sb3[k] for k in ("bits", "digits", "noise")], 1)[0].tolist()]
    assert layout.normalized_index() == [9]  # only the Box key is normalised: 3 bits and 6 one-hots come first


@pytest.mark.slow  # the flat MultiDiscrete and MultiBinary tasks above learn in the quick suite
def test_a_dict_of_multi_discrete_and_multi_binary_keys_learns(tmp_path):
    from stable_baselines3.common.evaluation import evaluate_policy

    obs = {"bits": np.array([1, 0, 1], np.int8), "digits": np.array([3, 1]), "noise": np.array([0.5], np.float32)}
    model = svpg.SVPG(EchoDigitDict, estimator="reinforce", samples_per_particle=400, lr=0.02, verbose=0)
    model.learn(8 * 1_600)
    mean, _ = evaluate_policy(model, EchoDigitDict(), n_eval_episodes=10, deterministic=True, warn=False)
    assert mean >= 18  # of 20
    batch = {k: np.stack([v, v]) for k, v in obs.items()}
    assert model.predict(batch, deterministic=True)[0].tolist() == [2, 2]  # digits[0] = 3: action 2
    assert svpg.load(model.save(tmp_path / "dict")).predict(obs, deterministic=True)[0] == 2
