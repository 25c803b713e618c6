"""BatchedEnv semantics: autoreset, time limits, batched vs single, seeding, make_batched, generic path."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from svpg import envs
from svpg.envs import FAST_ENVS, GymVectorEnv, make_batched

FAST_IDS = sorted(FAST_ENVS)
BACKENDS = ["numpy", "torch"]  # the same kernels on numpy arrays (CPU default) or on tensors


def _make(env_id, n, backend, **kw):
    return FAST_ENVS[env_id](n, backend=backend, **kw)


def _actions(env, g, scale=1.0):
    if env.is_discrete:
        return torch.randint(0, env.action_dim, (env.num_envs,), generator=g)
    return torch.randn(env.num_envs, env.action_dim, generator=g) * scale


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("env_id", FAST_IDS)
def test_interface(env_id, backend):
    env = _make(env_id, 5, backend, seed=0)
    assert env.backend == backend and make_batched(env_id, 2).backend == "numpy"  # CPU default
    assert isinstance(env, envs.BatchedEnv) and envs.is_fast(env_id)
    assert env.num_envs == 5 and env.max_episode_steps == 500 and env.device == torch.device("cpu")
    obs = env.reset()
    assert obs.shape == (5, env.obs_dim) and obs.dtype == torch.float32
    assert env.single_observation_space.dtype == np.float32
    assert env.is_discrete == isinstance(env.single_action_space, gym.spaces.Discrete)
    out = env.step(_actions(env, torch.Generator().manual_seed(0)))
    assert isinstance(out, envs.StepResult)
    assert all(isinstance(x, torch.Tensor) for x in out) and isinstance(env.state, torch.Tensor)
    assert out.obs.shape == out.final_obs.shape == (5, env.obs_dim)
    assert out.reward.shape == (5,) and out.reward.dtype == torch.float32
    assert out.terminated.dtype == out.truncated.dtype == torch.bool
    assert out.terminated.shape == out.truncated.shape == (5,)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("env_id", FAST_IDS)
def test_autoreset_semantics(env_id, backend):
    limit = 7
    env = _make(env_id, 64, backend, seed=1, max_episode_steps=limit, dtype=torch.float64)
    assert env.max_episode_steps == limit
    env.reset()
    # a twin without time limit recomputes each transition from the same state
    twin = _make(env_id, 64, backend, dtype=torch.float64, max_episode_steps=10**9, seed=0)
    twin.reset()
    g = torch.Generator().manual_seed(0)
    elapsed = torch.zeros(64, dtype=torch.int64)
    n_done = 0
    for _ in range(3 * limit + 2):
        twin.state = env.state
        actions = _actions(env, g, scale=3.0)
        out = env.step(actions)
        ref = twin.step(actions)
        assert torch.equal(out.final_obs, ref.final_obs) and torch.equal(out.reward, ref.reward)
        assert torch.equal(out.terminated, ref.terminated) and not ref.truncated.any()
        elapsed += 1
        done = out.terminated | out.truncated
        assert not (out.terminated & out.truncated).any()
        # truncation exactly at the limit, unless the task terminated in that very step
        assert torch.equal(out.truncated, (elapsed == limit) & ~out.terminated)
        # continuing envs: obs is the true next observation
        assert torch.equal(out.obs[~done], out.final_obs[~done])
        # finished envs: obs is a fresh start, final_obs the observation the episode ended in
        if done.any():
            assert not torch.equal(out.obs[done], out.final_obs[done])
            n_done += int(done.sum())
        elapsed[done] = 0
        assert torch.equal(env.elapsed, elapsed)
    assert n_done >= 3 * 64


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("env_id", FAST_IDS)
def test_batched_matches_single_envs(env_id, backend):
    n = 6
    batched = _make(env_id, n, backend, seed=2, dtype=torch.float64)
    batched.reset()
    singles = [_make(env_id, 1, backend, seed=2, dtype=torch.float64) for _ in range(n)]
    for i, s in enumerate(singles):
        s.reset()
        s.state = batched.state[i : i + 1]
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        acts = _actions(batched, g)
        out = batched.step(acts)
        for i, s in enumerate(singles):
            o = s.step(acts[i : i + 1])
            torch.testing.assert_close(o.final_obs[0], out.final_obs[i], rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(o.reward[0], out.reward[i], rtol=1e-12, atol=1e-12)
            assert o.terminated[0] == out.terminated[i] and o.truncated[0] == out.truncated[i]
            s.state = batched.state[i : i + 1]  # follow the batch's own reset draws


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("env_id", FAST_IDS)
def test_seeding(env_id, backend):
    a = _make(env_id, 16, backend, seed=123)
    b = _make(env_id, 16, backend, seed=123)
    c = _make(env_id, 16, backend, seed=124)
    d = _make(env_id, 16, backend)
    oa, ob, oc, od = a.reset(), b.reset(), c.reset(), d.reset(seed=123)
    assert torch.equal(oa, ob) and torch.equal(oa, od) and not torch.equal(oa, oc)
    # the whole rollout, autoresets included, is reproducible
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    for _ in range(60):
        ra, rb = a.step(_actions(a, g1, 3.0)), b.step(_actions(b, g2, 3.0))
        for x, y in zip(ra, rb):
            assert torch.equal(x, y)
    assert torch.equal(a.reset(seed=7), b.reset(seed=7))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("env_id", FAST_IDS)
def test_time_limits_after_setting_elapsed(env_id, backend):
    """Per-env episode clocks set by hand (no longer all equal) truncate each env at its own time."""
    limit, n = 5, 7
    env = _make(env_id, n, backend, seed=3, max_episode_steps=limit, dtype=torch.float64)
    env.reset()
    expected = torch.tensor([0, 1, 2, 3, 4, 5, 9])  # >= limit: truncates at the next step
    env.elapsed = expected
    assert torch.equal(env.elapsed, expected)
    g = torch.Generator().manual_seed(1)
    for _ in range(2 * limit + 3):
        out = env.step(_actions(env, g, scale=0.3))
        expected = expected + 1
        assert torch.equal(out.truncated, (expected >= limit) & ~out.terminated)
        expected[out.terminated | out.truncated] = 0
        assert torch.equal(env.elapsed, expected)


@pytest.mark.parametrize("env_id", ["svpg/CartPoleSwingUp-v0", "svpg/DoublePendulum-v0"])
def test_reset_states_are_fresh_across_blocks(env_id, monkeypatch):
    """Start states come from blocks of draws; every autoreset gets new ones, reproducibly."""
    cls = type(make_batched(env_id, 1))
    monkeypatch.setattr(cls, "reset_block_numbers", 3 * 4 * 4)  # a block holds 3 steps of 4 envs
    a, b = make_batched(env_id, 4, seed=9, max_episode_steps=2), make_batched(env_id, 4, seed=9, max_episode_steps=2)
    assert a._block_steps == 3
    starts = [a.reset()]
    assert torch.equal(starts[0], b.reset())
    for _ in range(20):
        zeros = torch.zeros(4, 1)
        out, ref = a.step(zeros), b.step(zeros)
        for x, y in zip(out, ref):
            assert torch.equal(x, y)
        if out.truncated.all():
            starts.append(out.obs)
    assert len(starts) == 11
    starts = torch.stack(starts)
    assert torch.unique(starts.reshape(-1, starts.shape[-1]), dim=0).shape[0] == starts.shape[0] * 4
    # reset() discards the rest of a block: the same seed gives the same first states again
    assert torch.equal(a.reset(seed=9), starts[0])


@pytest.mark.parametrize("env_id", FAST_IDS)
def test_numpy_and_torch_backends_agree(env_id):
    """Same seed, same actions: the two backends draw the same start states (one torch generator)
    and run the same kernel, so they agree to rounding, autoresets and time limits included."""
    kw = dict(seed=4, max_episode_steps=9, dtype=torch.float64)
    a, b = _make(env_id, 32, "numpy", **kw), _make(env_id, 32, "torch", **kw)
    assert torch.equal(a.reset(), b.reset())
    g = torch.Generator().manual_seed(2)
    for _ in range(40):
        acts = _actions(a, g, scale=3.0)
        b.state = a.state  # no drift (the double pendulum is chaotic)
        out_a, out_b = a.step(acts), b.step(acts)
        for x, y in zip(out_a, out_b):
            assert x.dtype == y.dtype and x.shape == y.shape
            if x.dtype == torch.bool:
                assert torch.equal(x, y)
            else:
                torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-12)
        assert torch.equal(a.elapsed, b.elapsed)
    with pytest.raises(ValueError, match="backend"):
        _make(env_id, 2, "jax")
    with pytest.raises(ValueError, match="backend='numpy'"):
        _make(env_id, 2, "numpy", dtype=torch.bfloat16)
    assert _make(env_id, 2, None, dtype=torch.bfloat16).backend == "torch"


def test_step_before_reset_and_bad_arguments():
    env = make_batched("svpg/CartPole-v1", 2)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(torch.zeros(2, dtype=torch.int64))
    for bad in (0, -3, 2.5, "4", True):
        with pytest.raises(ValueError, match="num_envs"):
            make_batched("svpg/CartPole-v1", bad)
    with pytest.raises(ValueError, match="num_envs"):
        make_batched("Pendulum-v1", 0)
    with pytest.raises(ValueError, match="max_episode_steps"):
        make_batched("svpg/CartPoleBalance-v0", 2, max_episode_steps=0)
    assert make_batched("svpg/CartPole-v1", np.int64(3)).num_envs == 3


def test_unknown_id_error_message():
    with pytest.raises(ValueError) as info:
        make_batched("svpg/CartPoleBalance-v1", 4)
    msg = str(info.value)
    assert "'svpg/CartPoleBalance-v1'" in msg and "not registered" in msg
    assert "svpg/CartPoleBalance-v0" in msg  # close match
    for fast_id in FAST_IDS:
        assert fast_id in msg
    with pytest.raises(ValueError, match="CartPole-v1"):
        make_batched("CartPol-v1", 4)
    with pytest.raises(ValueError, match="cannot import 'nonexistent_module'"):
        make_batched("nonexistent_module:Foo-v0", 4)
    assert not envs.is_fast("Pendulum-v1")


def test_float64_and_dtype_propagation():
    env = make_batched("svpg/DoublePendulum-v0", 3, seed=0, dtype=torch.float64)
    obs = env.reset()
    out = env.step(torch.zeros(3, 1))  # float32 actions are accepted by a float64 env
    assert obs.dtype == out.obs.dtype == out.reward.dtype == out.final_obs.dtype == torch.float64


# -- generic path -------------------------------------------------------------------------------------


def test_generic_pendulum_truncation_and_final_obs():
    env = make_batched("Pendulum-v1", 3, seed=10, max_episode_steps=5)
    assert isinstance(env, GymVectorEnv) and not env.is_discrete
    assert env.obs_dim == 3 and env.action_dim == 1 and env.max_episode_steps == 5
    obs = env.reset()
    # Reference: SyncVectorEnv seeds sub-env i with seed + i; follow env 0 by hand.
    ref = gym.make("Pendulum-v1", max_episode_steps=5)
    ref_obs, _ = ref.reset(seed=10)
    np.testing.assert_allclose(obs[0].numpy(), ref_obs, rtol=1e-6)
    actions = torch.tensor([[5.0], [-0.5], [0.3]])  # 5.0 is outside Box(-2, 2): clipped to 2
    for t in range(5):
        out = env.step(actions)
        ref_obs, ref_rew, ref_term, ref_trunc, _ = ref.step(np.array([2.0], dtype=np.float32))
        np.testing.assert_allclose(out.final_obs[0].numpy(), ref_obs, rtol=1e-5, atol=1e-6)
        assert out.reward[0].item() == pytest.approx(ref_rew, rel=1e-5)
        assert not out.terminated.any()
        assert bool(out.truncated.all()) == (t == 4) == ref_trunc
    # at the time limit obs is already the reset observation; final_obs is the last one
    assert not torch.allclose(out.obs, out.final_obs)
    assert out.obs.dtype == torch.float32 and out.reward.dtype == torch.float32


def test_generic_discrete_actions_and_default_limit():
    env = make_batched("MountainCar-v0", 2, seed=0)
    assert env.is_discrete and env.action_dim == 3 and env.max_episode_steps == 200
    env.reset()
    for _ in range(200):
        out = env.step(torch.tensor([0, 2]))
    assert out.truncated.all() and not out.terminated.any()
    assert (out.reward == -1).all()
    with pytest.raises(RuntimeError, match="reset"):
        make_batched("MountainCar-v0", 2).step(torch.tensor([0, 1]))
