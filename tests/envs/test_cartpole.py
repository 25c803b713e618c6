"""The batched CartPole-v1 port against Gymnasium's own ``CartPoleEnv``, step for step."""

import numpy as np
import pytest
import torch
from gymnasium.envs.classic_control import CartPoleEnv
from gymnasium.wrappers import TimeLimit

from svpg import envs
from svpg.envs.cartpole import CartPole

# The float64 port differs from numpy in the last bit now and then (folded constants, torch's
# vectorised sin/cos); a random episode (~20 steps) stays within 1e-12. Under the balancing
# controller (bang-bang, chattering) such differences grow ~10x per 20 steps, so long
# episodes copy Gymnasium's state into the port before each step and compare one step at a time.
TOL = 1e-12


def _policy(rng, state, kind):
    """Random actions, or a noisy balancing controller that survives to the 500-step limit."""
    if kind == "random":
        return int(rng.integers(2))
    if rng.random() < 0.1:
        return int(rng.integers(2))
    x, x_dot, theta, theta_dot = state
    return int(theta + 0.5 * theta_dot + 0.05 * x + 0.2 * x_dot > 0)


@pytest.mark.parametrize("kind", ["random", "controller"])
def test_single_env_matches_gymnasium(kind):
    rng = np.random.default_rng(0)
    ref = TimeLimit(CartPoleEnv(), max_episode_steps=500)
    port = CartPole(1, dtype=torch.float64, seed=0)
    n_episodes = 12 if kind == "random" else 2
    lengths = []
    for ep in range(n_episodes):
        ref_obs, _ = ref.reset(seed=100 + ep)
        # Same start state: Gymnasium's draw is copied into the port.
        port.reset()
        port.state = torch.as_tensor(ref.unwrapped.state).reshape(1, 4)
        np.testing.assert_array_equal(port.state[0].numpy().astype(np.float32), ref_obs)
        for t in range(1, 501):
            action = _policy(rng, ref.unwrapped.state, kind)
            if kind == "controller":  # resync (see TOL); elapsed keeps counting
                port.state = torch.as_tensor(ref.unwrapped.state).reshape(1, 4)
            ref_obs, ref_rew, ref_term, ref_trunc, _ = ref.step(action)
            out = port.step(torch.tensor([action]))
            np.testing.assert_allclose(out.final_obs[0].numpy(), ref.unwrapped.state, rtol=0, atol=TOL)
            np.testing.assert_allclose(out.final_obs[0].numpy().astype(np.float32), ref_obs, atol=1e-6)
            assert out.reward.dtype == torch.float64 and out.reward.item() == ref_rew == 1.0
            assert out.terminated.item() == ref_term
            # Gymnasium's TimeLimit may flag both at once; our truncated excludes terminated
            assert out.truncated.item() == (ref_trunc and not ref_term)
            if ref_term or ref_trunc:
                # same-step autoreset: obs is a fresh start state, elapsed is back to 0
                assert out.obs[0].abs().max() <= 0.05
                assert port.elapsed.item() == 0
                break
            assert torch.equal(out.obs, out.final_obs)
            assert port.elapsed.item() == t
        lengths.append(t)
    if kind == "random":
        assert max(lengths) < 500 and min(lengths) >= 8  # every episode terminated
    else:
        assert lengths == [500, 500]  # both truncated by the time limit


def test_batched_matches_gymnasium_across_autoresets():
    """16 envs in one batch vs 16 Gymnasium envs in lockstep, through many autoresets."""
    n, steps = 16, 600
    rng = np.random.default_rng(1)
    port = CartPole(n, dtype=torch.float64, seed=3)
    obs = port.reset()
    refs = [TimeLimit(CartPoleEnv(), max_episode_steps=500) for _ in range(n)]
    for i, ref in enumerate(refs):
        ref.reset(seed=i)
        ref.unwrapped.state = obs[i].numpy().copy()  # the port's own start states
    kinds = ["random" if i % 2 else "controller" for i in range(n)]
    n_term = n_trunc = 0
    for _ in range(steps):
        actions = [_policy(rng, ref.unwrapped.state, kinds[i]) for i, ref in enumerate(refs)]
        port.state = np.stack([ref.unwrapped.state for ref in refs])  # resync (see TOL)
        out = port.step(torch.tensor(actions))
        assert out.obs.shape == out.final_obs.shape == (n, 4)
        assert out.terminated.dtype == out.truncated.dtype == torch.bool
        assert not (out.terminated & out.truncated).any()
        for i, ref in enumerate(refs):
            _, rew, term, trunc, _ = ref.step(actions[i])
            np.testing.assert_allclose(out.final_obs[i].numpy(), ref.unwrapped.state, rtol=0, atol=TOL)
            got = (out.reward[i].item(), out.terminated[i].item(), out.truncated[i].item())
            assert got == (rew, term, trunc and not term)
            if term or trunc:
                n_term += term
                n_trunc += trunc
                ref.reset()
                ref.unwrapped.state = out.obs[i].numpy().copy()
            else:
                assert torch.equal(out.obs[i], out.final_obs[i])
        expected_elapsed = torch.tensor([ref._elapsed_steps for ref in refs])
        assert torch.equal(port.elapsed, expected_elapsed)
    assert n_term > 100 and n_trunc > 5


def test_plain_cartpole_id_maps_to_the_port():
    assert envs.is_fast("CartPole-v1") and envs.is_fast("svpg/CartPole-v1")
    env = envs.make_batched("CartPole-v1", 3, seed=0)
    assert isinstance(env, CartPole)
    assert env.is_discrete and env.action_dim == 2 and env.obs_dim == 4


def test_float32_close_to_float64():
    a = CartPole(8, dtype=torch.float64, seed=5)
    b = CartPole(8, dtype=torch.float32, seed=5)
    b.reset()
    a.state = b.reset().double()
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        act = torch.randint(0, 2, (8,), generator=g)
        oa, ob = a.step(act), b.step(act)
        torch.testing.assert_close(ob.final_obs.double(), oa.final_obs, atol=1e-4, rtol=1e-4)
        assert torch.equal(oa.terminated, ob.terminated)
        if oa.terminated.any():  # reset draws differ from here on
            break
