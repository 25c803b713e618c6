"""The fast-path tasks through Gymnasium's front doors: gym.make, gym.make_vec, env checkers, SB3."""

import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env as gym_check_env
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from svpg import envs
from svpg.envs import FAST_ENVS

IDS = sorted(FAST_ENVS)


@pytest.mark.parametrize("env_id", IDS)
def test_registered(env_id):
    spec = gym.spec(env_id)
    assert spec.max_episode_steps == 500
    assert spec.entry_point == "svpg.envs.gym_api:KernelGymEnv"
    assert spec.vector_entry_point == "svpg.envs.gym_api:KernelVectorEnv"
    task = FAST_ENVS[env_id]
    assert spec.kwargs == {"task": task.__name__}
    assert gym.envs.registration.EnvSpec.from_json(spec.to_json()) == spec  # plain-data kwargs
    env, venv = gym.make(env_id), gym.make_vec(env_id, num_envs=2)
    assert env.unwrapped.task_cls is task and venv.task_cls is task and isinstance(venv.task, task)
    assert env.metadata["render_fps"] == venv.metadata["render_fps"] == task.render_fps


def test_unknown_task_name():
    with pytest.raises(ValueError, match="task must be one of"):
        envs.gym_api.KernelGymEnv(task="CartPol")
    with pytest.raises(ValueError, match="task must be one of"):
        envs.gym_api.KernelVectorEnv(task="CartPol", num_envs=2)


@pytest.mark.parametrize("env_id", IDS)
def test_gymnasium_env_checker(env_id):
    env = gym.make(env_id, render_mode="rgb_array")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*infinity.*")  # unbounded velocities
        gym_check_env(env.unwrapped)
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_sb3_env_checker(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # SB3 reports problems as warnings
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        sb3_check_env(gym.make(env_id), warn=True)


@pytest.mark.parametrize("env_id", IDS)
def test_single_env_episode(env_id):
    env = gym.make(env_id)
    obs, info = env.reset(seed=3)
    assert obs.dtype == np.float32 and env.observation_space.contains(obs) and info == {}
    obs2, _ = env.reset(seed=3)
    np.testing.assert_array_equal(obs, obs2)
    env.action_space.seed(0)
    for steps in range(1, 501):  # noqa: B007 (read after the loop)
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        assert isinstance(reward, float) and obs.dtype == np.float32
        if terminated or truncated:
            break
    # the TimeLimit wrapper from the registration truncates at 500
    assert terminated or (truncated and steps == 500)


@pytest.mark.parametrize("env_id", IDS)
def test_single_env_matches_batched(env_id):
    """The single env (the task's kernel on Python floats) follows the batched env (the same kernel
    on float64 tensors) through whole episodes, actions outside the box and terminations included."""
    env = gym.make(env_id)
    batched = envs.make_batched(env_id, 1, dtype=torch.float64, max_episode_steps=10**6)
    batched.reset()
    rng = np.random.default_rng(0)
    n_terminated = 0
    for episode in range(3):
        obs, _ = env.reset(seed=episode)
        batched.state = torch.tensor([env.unwrapped.state], dtype=torch.float64)
        np.testing.assert_allclose(obs, batched.observe(batched.state)[0].numpy(), rtol=1e-6, atol=1e-6)
        for _ in range(200):
            if batched.is_discrete:
                a = int(rng.integers(2))
                ta = torch.tensor([a])
            else:
                a = rng.normal(size=1).astype(np.float32) * 1.5
                ta = torch.from_numpy(a).reshape(1, 1)
            obs, r, term, trunc, _ = env.step(a)
            out = batched.step(ta)
            next_state = batched.state if env_id == "svpg/DoublePendulum-v0" else out.final_obs  # obs is the state
            np.testing.assert_allclose(env.unwrapped.state, next_state[0].numpy(), rtol=1e-9, atol=1e-9)
            np.testing.assert_allclose(obs, out.final_obs[0].numpy(), rtol=1e-6, atol=1e-6)
            assert isinstance(r, float) and r == pytest.approx(out.reward.item(), abs=1e-9)
            assert term == out.terminated.item() and not trunc
            if term:
                n_terminated += 1
                break
            batched.state = torch.tensor([env.unwrapped.state], dtype=torch.float64)  # no drift
    if env_id != "svpg/DoublePendulum-v0":
        assert n_terminated >= 1


@pytest.mark.parametrize("env_id", IDS)
def test_make_vec(env_id):
    venv = gym.make_vec(env_id, num_envs=4)
    assert venv.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert venv.num_envs == 4 and venv.observation_space.shape[0] == 4
    obs, _ = venv.reset(seed=0)
    obs_again, _ = venv.reset(seed=0)
    np.testing.assert_array_equal(obs, obs_again)
    assert obs.dtype == np.float32 and venv.observation_space.contains(obs)
    venv.action_space.seed(0)
    seen_final = 0
    for _ in range(520):
        obs, reward, term, trunc, infos = venv.step(venv.action_space.sample())
        assert obs.shape == (4, venv.single_observation_space.shape[0]) and reward.shape == (4,)
        assert term.dtype == trunc.dtype == np.bool_
        done = term | trunc
        if done.any():
            np.testing.assert_array_equal(infos["_final_obs"], done)
            for i in np.flatnonzero(done):
                final = infos["final_obs"][i]
                assert final.shape == obs[i].shape and not np.array_equal(final, obs[i])
            seen_final += int(done.sum())
        else:
            assert "final_obs" not in infos
    assert seen_final >= 4  # every env finished at least once (by the 500-step limit at the latest)
    venv.close()


def test_make_vec_max_episode_steps_override_and_sync_mode():
    venv = gym.make_vec("svpg/CartPoleBalance-v0", num_envs=3, max_episode_steps=4)
    venv.reset(seed=1)
    for _ in range(4):
        _, _, term, trunc, _ = venv.step(np.zeros((3, 1), dtype=np.float32))
    assert trunc.all() and not term.any()
    # Gymnasium's own vectoriser works with the single-env entry point too
    sync = gym.make_vec(
        "svpg/DoublePendulum-v0", num_envs=2, vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
    )
    sync.reset(seed=0)
    obs, reward, *_ = sync.step(np.zeros((2, 1), dtype=np.float32))
    assert obs.shape == (2, 6) and (reward < 0).all()


@pytest.mark.parametrize("env_id", IDS)
def test_render_rgb_array(env_id):
    env = gym.make(env_id, render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8
    assert frame.shape[0] >= 300 and frame.shape[1] >= 300
    colors = np.unique(frame.reshape(-1, 3), axis=0)
    assert len(colors) >= 3  # background plus drawn bodies
    assert (frame != 255).any(axis=2).mean() > 0.005  # not blank
    for _ in range(10):
        env.step(np.ones(env.action_space.shape, dtype=np.float32) if env_id != "svpg/CartPole-v1" else 1)
    assert not np.array_equal(env.render(), frame)  # the picture follows the state
    venv = gym.make_vec(env_id, num_envs=2, render_mode="rgb_array")
    venv.reset(seed=0)
    frames = venv.render()
    assert len(frames) == 2 and frames[0].shape == frame.shape


def test_render_geometry():
    """The pole is drawn where the state puts it: upright above the cart, leaning the right way."""
    from svpg.envs.render import draw_cartpole, draw_double_pendulum

    up = draw_cartpole(0.0, 0.0, x_limit=2.4, pole_length=1.0)
    left = draw_cartpole(0.0, 0.8, x_limit=2.4, pole_length=1.0)  # CCW: leans towards -x
    h, w, _ = up.shape
    pole = np.array([202, 152, 101])
    cols_up = np.nonzero((up == pole).all(2))[1]
    cols_left = np.nonzero((left == pole).all(2))[1]
    assert abs(cols_up.mean() - w / 2) < 3 and cols_left.mean() < w / 2 - 20
    hanging = draw_double_pendulum(0.0, 0.0)
    rows = np.nonzero((hanging == np.array([200, 80, 70])).all(2))[0]
    assert rows.mean() > hanging.shape[0] / 2  # second link below the pivot


def test_sb3_ppo_trains_on_the_registered_env():
    from stable_baselines3 import PPO

    model = PPO("MlpPolicy", "svpg/CartPoleBalance-v0", n_steps=128, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=256)  # too short to assert learning: this checks the env works under SB3
    assert model.num_timesteps >= 256
    obs = model.get_env().reset()
    action, _ = model.predict(obs, deterministic=True)
    assert action.shape == (1, 1)


class _Shifted(gym.Env):
    """Discrete observations 10, 11, 12 (a Discrete space with start=10): the state is the step count."""

    observation_space = gym.spaces.Discrete(3, start=10)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return 10, {}

    def step(self, action):
        self.t += 1
        return 10 + self.t, 0.0, self.t == 2, False, {}


def test_discrete_observations_with_a_start_are_one_hot_from_the_start():
    from svpg import envs

    env = envs.make_batched(_Shifted, 2, seed=0)
    first = env.reset()
    second = env.step(torch.zeros(2, dtype=torch.long)).obs
    assert first.tolist() == [[1.0, 0.0, 0.0]] * 2 and second.tolist() == [[0.0, 1.0, 0.0]] * 2


class _Digits(gym.Env):
    """MultiDiscrete([3, 2], start=[1, 0]) or MultiBinary([2, 2]) observations: a fixed sequence."""

    action_space = gym.spaces.Discrete(2)

    def __init__(self, binary=False):
        self.binary = binary
        self.observation_space = gym.spaces.MultiBinary([2, 2]) if binary else gym.spaces.MultiDiscrete([3, 2], start=[1, 0])
        self.seq = [np.array([[1, 0], [0, 1]], np.int8), np.array([[0, 0], [1, 1]], np.int8)] if binary else [
            np.array([1, 1]), np.array([3, 0])]

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.seq[0], {}

    def step(self, action):
        self.t += 1
        return self.seq[self.t % 2], 0.0, False, self.t == 2, {}


@pytest.mark.parametrize("binary", [False, True])
def test_multi_discrete_and_multi_binary_observations_are_encoded_as_sb3_preprocesses_them(binary):
    from stable_baselines3.common.preprocessing import preprocess_obs

    from svpg import envs

    env = envs.make_batched(lambda: _Digits(binary), 2, seed=0)
    space = _Digits(binary).observation_space
    assert env.original_observation_space == space and env.single_observation_space.shape == (4 if binary else 5,)
    first, second = env.reset(), env.step(torch.zeros(2, dtype=torch.long)).obs
    # by hand: components 1 of 1..3 and 1 of 0..1 → [1, 0, 0 | 0, 1]; 3 and 0 → [0, 0, 1 | 1, 0]
    expected = [[1, 0, 0, 1], [0, 0, 1, 1]] if binary else [[1, 0, 0, 0, 1], [0, 0, 1, 1, 0]]
    assert first.tolist() == [expected[0]] * 2 and second.tolist() == [expected[1]] * 2
    if not binary:  # SB3 one-hots MultiDiscrete components counted from 0: the same vector once start is taken off
        raw = torch.as_tensor(np.stack(_Digits().seq) - np.array([1, 0]))
        assert preprocess_obs(raw, gym.spaces.MultiDiscrete([3, 2])).tolist() == expected
    else:
        assert preprocess_obs(torch.as_tensor(np.stack(_Digits(True).seq)), space).flatten(1).tolist() == expected
