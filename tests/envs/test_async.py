"""Environments stepped in parallel groups (vec_env="async": this process and worker processes) step exactly
as in this process; errors about a user's environment name it and fit on one line."""
import gymnasium as gym
import numpy as np
import pytest
import torch

from svpg import envs
from svpg.envs.parallel import GroupedAsyncVectorEnv, group_sizes


class Walk(gym.Env):
    """A random walk on 0..4 with Discrete observations; a wrong observation at step ``bad_at`` on request."""

    observation_space = gym.spaces.Discrete(5)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, bad_at: int | None = None, bad=None):
        self.bad_at, self.bad = bad_at, bad

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.x = 0, int(self.np_random.integers(5))
        return self.x, {}

    def step(self, action):
        self.t += 1
        self.x = min(4, max(0, self.x + (1 if int(action) else -1) * int(self.np_random.integers(1, 3))))
        obs = self.bad if self.t == self.bad_at else self.x
        return obs, float(self.x == 4), self.x == 4, False, {}


class Pair(gym.Env):
    """A Box observation of shape (2,), or ``bad`` from ``step``."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, bad):
        self.bad = bad

    def reset(self, *, seed=None, options=None):
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return self.bad, 0.0, False, False, {}


def assert_same_steps(a, b, steps, actions, seeds=(None,)):
    for seed in seeds:
        assert torch.equal(a.reset(seed=seed), b.reset(seed=seed))
        for t in range(steps):
            act = actions(t)
            for x, y in zip(a.step(act), b.step(act), strict=True):
                assert torch.equal(x, y), t


def test_group_sizes_are_consecutive_and_as_equal_as_can_be():
    assert group_sizes(8, 2) == [4, 4] and group_sizes(7, 3) == [2, 2, 3] and group_sizes(3, 3) == [1, 1, 1]
    assert group_sizes(9, 4) == [2, 2, 2, 3] and group_sizes(5, 1) == [5]


@pytest.mark.parametrize("num_envs, n_workers", [(6, 2), (7, 3), (3, 1)])  # (7, 3): groups of 2, 2 and 3
def test_async_steps_as_sync_bit_for_bit(num_envs, n_workers):
    # short episodes so that same-step resets (and their final observations) happen in every group
    kw = dict(seed=3, max_episode_steps=7)
    sync = envs.make_batched("Pendulum-v1", num_envs, **kw)
    par = envs.make_batched("Pendulum-v1", num_envs, vec_env="async", n_workers=n_workers, **kw)
    assert isinstance(par.vec_env, GroupedAsyncVectorEnv) and par.vec_env.n_workers == n_workers
    # this process steps the first group, a worker process each other one
    workers = par.vec_env.workers
    assert (workers is None) if n_workers == 1 else len(workers.processes) == n_workers - 1
    assert par.single_observation_space == sync.single_observation_space and par.max_episode_steps == 7
    g = torch.Generator().manual_seed(0)
    acts = torch.randn(40, num_envs, 1, generator=g) * 3
    seeds = (None, 11) if num_envs % 2 else (None, [11, 12])  # also a seed batch: one seed per group of envs
    assert_same_steps(sync, par, 20, lambda t: acts[t], seeds)
    par.close()
    sync.close()


def test_a_factory_with_discrete_observations_steps_alike_in_workers():
    sync = envs.make_batched(Walk, 4, seed=0, max_episode_steps=6)
    par = envs.make_batched(Walk, 4, seed=0, max_episode_steps=6, vec_env="async", n_workers=2)
    assert par.env_id == sync.env_id == "Walk" and par.obs_dim == 5
    acts = torch.tensor([[1, 0, 1, 1], [0, 1, 1, 0], [1, 1, 1, 1]])
    assert_same_steps(sync, par, 15, lambda t: acts[t % 3], seeds=(None, 4))
    par.close()


def test_bad_vec_env_options_are_refused():
    with pytest.raises(ValueError, match="vec_env must be one of"):
        envs.make_batched("Pendulum-v1", 2, vec_env="threads")
    with pytest.raises(ValueError, match="vec_env must be one of"):
        envs.make_batched("CartPole-v1", 2, vec_env="subproc")  # checked on the fast path too
    with pytest.raises(ValueError, match=r"n_workers must be between 1 and the number of environments \(2\)"):
        envs.make_batched("Pendulum-v1", 2, vec_env="async", n_workers=3)
    vec = gym.make_vec("Pendulum-v1", 2, vectorization_mode="sync",
                       vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP})
    with pytest.raises(ValueError, match="needs an env id or a factory"):
        envs.make_batched(vec, 2, vec_env="async")
    # the fast path is one batch in this process either way
    fast = envs.make_batched("CartPole-v1", 4, seed=0, vec_env="async")
    assert not isinstance(fast, envs.GymVectorEnv)


@pytest.mark.parametrize("vec_env", ["sync", "async"])
@pytest.mark.parametrize("bad, fragment", [
    (np.zeros(3, np.float32), r"Pair: step\(\) returned an observation of shape \(3,\), its observation_space .* "
                              r"has shape \(2,\)"),
    (np.array(["a", "b"]), r"Pair: step\(\) returned an observation of dtype <U1, its observation_space .* needs numbers"),
    ({"x": 1.0}, r"Pair: step\(\) returned an observation of a dict"),
])
def test_a_wrong_observation_is_one_line_naming_the_env(vec_env, bad, fragment):
    env = envs.make_batched(lambda: Pair(bad), 2, seed=0, vec_env=vec_env, n_workers=2)
    env.reset()
    with pytest.raises(ValueError, match=fragment) as err:
        env.step(torch.zeros(2, dtype=torch.int64))
    assert "\n" not in str(err.value)
    env.close()


class PairFromSeed(Pair):
    """``Pair`` whose steps go wrong only in environments reset with a seed of at least 2."""

    def reset(self, *, seed=None, options=None):
        self.wrong = seed is not None and seed >= 2
        return super().reset(seed=seed, options=options)

    def step(self, action):
        return (self.bad if self.wrong else np.zeros(2, np.float32)), 0.0, False, False, {}


def test_a_wrong_observation_in_a_worker_process_is_one_line_naming_the_env():
    # environments 0 and 1 (seeds 0, 1) are this process's group, 2 and 3 the worker's
    env = envs.make_batched(lambda: PairFromSeed(np.zeros(3, np.float32)), 4, seed=0, vec_env="async", n_workers=2)
    assert env.vec_env.sizes == [2, 2]
    env.reset()
    with pytest.raises(ValueError, match=r"^PairFromSeed: step\(\) returned an observation of shape \(3,\)") as err:
        env.step(torch.zeros(4, dtype=torch.int64))
    assert "\n" not in str(err.value)
    env.close()
    assert not any(p.is_alive() for p in env.vec_env.workers.processes)


def test_a_discrete_observation_out_of_range_is_named():
    env = envs.make_batched(lambda: Walk(bad_at=1, bad=7), 2, seed=0)
    env.reset()
    with pytest.raises(ValueError, match=r"Walk: step\(\) returned the observation 7, outside Discrete\(5\)"):
        env.step(torch.zeros(2, dtype=torch.int64))


class Pieces(gym.Env):
    """An observation space that svpg refuses (a Tuple)."""

    observation_space = gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Discrete(3)))
    action_space = gym.spaces.Discrete(2)


@pytest.mark.parametrize("vec_env", ["sync", "async"])
def test_errors_about_an_env_instance_or_factory_name_its_class_not_a_function(vec_env):
    import svpg

    for env in (Pieces(), Pieces, lambda: Pieces()):
        with pytest.raises(ValueError, match=r"^Pieces: svpg reads .* observation spaces, got Tuple") as err:
            envs.make_batched(svpg.rl.environments.resolve_env(env).target, 2, vec_env=vec_env, n_workers=2)
        assert "function" not in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ValueError, match=r"^Pieces: svpg reads .* observation spaces, got Tuple"):
        svpg.SVPG(Pieces(), verbose=0)

    def make_nothing():
        return 42

    with pytest.raises(ValueError, match=r"the env factory .*make_nothing returned a int, not a gymnasium.Env"):
        envs.make_batched(make_nothing, 2, vec_env=vec_env, n_workers=2)


def test_an_env_instance_of_a_registered_id_is_named_by_its_id():
    env = gym.wrappers.TransformReward(gym.make("Pendulum-v1"), lambda r: r)  # not rebuilt from its id
    source = __import__("svpg").rl.environments.resolve_env(env)
    assert source.factory is not None and repr(source.factory) == "CopiesOf(Pendulum-v1)"
    assert envs.make_batched(source.target, 2).env_id == "Pendulum-v1"


SVPG_KW = dict(num_particles=2, samples_per_particle=400, ppo_epochs=2, ppo_minibatches=4, value_epochs=2,
               value_steps=4, seed=1, verbose=0)


@pytest.fixture(scope="module")
def sync_theta():
    import svpg

    with svpg.SVPG("Pendulum-v1", **SVPG_KW) as sync:
        return sync.learn(1600).policy.theta


@pytest.mark.parametrize("n_workers", [2, 3, 1])  # 4 environments: 3 groups of 1, 1 and 2
def test_svpg_trains_the_same_theta_with_async_environments(sync_theta, n_workers):
    import svpg

    with svpg.SVPG("Pendulum-v1", vec_env="async", n_workers=n_workers, **SVPG_KW) as par:
        assert isinstance(par.env.vec_env, GroupedAsyncVectorEnv) and par.env.vec_env.sizes == {
            1: [4], 2: [2, 2], 3: [1, 1, 2]
        }[n_workers]
        par.learn(1600)
        assert par.iteration == 2 and torch.equal(par.policy.theta, sync_theta)
