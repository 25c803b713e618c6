"""rllab cart-pole tasks and the double pendulum against scalar reimplementations of their equations
(as stated in the docstrings of envs/rllab_cartpole.py and envs/double_pendulum.py)."""

import math

import numpy as np
import pytest
import torch

from svpg.envs import CartPoleBalance, CartPoleSwingUp, DoublePendulum

F64 = dict(dtype=torch.float64)


# ---------------------------------------------------------------------------------------------------
# Scalar reference implementations, written straight from the equations (no folded constants).


def rllab_cartpole_step(s, a):
    """One step of the cart-pole family: returns (next state, force)."""
    x, x_dot, th, th_dot = s
    M, m, l, g, dt = 1.0, 0.1, 0.5, 10.0, 0.05  # noqa: E741 (the physics names)
    J = m * (1**2 + 0.1**2) / 12 + m * l**2
    F = min(max(10 * a, -10.0), 10.0)
    x_acc = (F - m * l * math.sin(th) * th_dot**2 + (m * l * math.cos(th)) * (m * g * l * math.sin(th)) / J) / (
        (M + m) - (m * l * math.cos(th)) ** 2 / J
    )
    th_acc = (m * g * l * math.sin(th) + m * l * math.cos(th) * x_acc) / J
    x_dot += dt * x_acc
    th_dot += dt * th_acc
    th_dot = min(max(th_dot, -0.5 * math.pi / dt), 0.5 * math.pi / dt)
    x += dt * x_dot
    th += dt * th_dot
    return np.array([x, x_dot, th, th_dot]), F


def double_pendulum_step(s, a):
    """One env step (two substeps) of the double pendulum, solving the 2x2 system with numpy."""
    th1, th2, w1, w2 = s
    m, L, g, dt = 0.5, 1.0, 10.0, 0.01
    I = m * (L**2 + 0.1**2) / 12  # noqa: E741 (moment of inertia)
    tau = min(max(50 * a, -50.0), 50.0)
    for _ in range(2):
        M = np.array(
            [[1.25 * m * L**2 + I, 0.5 * m * L**2 * math.cos(th1 - th2)],
             [0.5 * m * L**2 * math.cos(th1 - th2), 0.25 * m * L**2 + I]]
        )
        b = np.array(
            [-tau - 0.5 * m * L**2 * math.sin(th1 - th2) * w2**2 - 1.5 * m * g * L * math.sin(th1),
             +tau + 0.5 * m * L**2 * math.sin(th1 - th2) * w1**2 - 0.5 * m * g * L * math.sin(th2)]
        )
        acc1, acc2 = np.linalg.solve(M, b)
        lim = 0.5 * math.pi / dt
        w1 = min(max(w1 + dt * acc1, -lim), lim)
        w2 = min(max(w2 + dt * acc2, -lim), lim)
        th1 += dt * w1
        th2 += dt * w2
    p = (L * math.sin(th1), -L * math.cos(th1))
    tip = (p[0] - L * math.sin(th2), p[1] - L * math.cos(th2))
    reward = -math.hypot(tip[0] - 0.0, tip[1] - 2 * L)
    return np.array([th1, th2, w1, w2]), reward


def _step_from(env_cls, states, actions, backend=None, **kw):
    env = env_cls(len(states), max_episode_steps=1000, seed=0, backend=backend, **F64, **kw)
    env.reset()
    env.state = np.asarray(states, dtype=np.float64)
    return env.step(torch.as_tensor(np.asarray(actions, dtype=np.float64).reshape(-1, 1)))


CARTPOLE_CASES = [  # (state, action)
    ([0.0, 0.0, 0.0, 0.0], 0.5),
    ([0.3, -0.4, 0.1, -0.2], -0.3),
    ([-1.0, 1.5, 0.15, 1.0], 1.7),  # action outside the box: F = 10
    ([0.5, 0.2, 2.5, -3.0], -2.0),  # far from upright: F = -10
    ([0.0, 0.0, math.pi - 0.3, 1.0], 0.0),
    ([0.0, 0.0, 0.3, 40.0], 0.1),  # |theta_dot| would exceed 0.5 pi / dt = 31.4: clamped
    ([2.0, 5.0, -1.0, -35.0], 1.0),
]


def test_rllab_cartpole_one_step_by_hand():
    """From rest with a = 0.5 (F = 5), sin = 0 and cos = 1 leave
    x_acc = F / ((M + m) - (m l)² / J) = 5 / (1.1 - 0.0025 / 0.0334167) = 5 / 1.0251870 = 4.8771588,
    theta_acc = m l x_acc / J = 0.05 * 4.8771588 / 0.0334167 = 7.2974945; semi-implicit Euler, dt = 0.05:
    x_dot = 0.24385794, theta_dot = 0.36487473, x = dt x_dot = 0.012192897, theta = 0.018243736.
    Balance reward: 10 - (1 - cos 0.018243736) - 1e-5 * 25 = 9.9995835877."""
    out = _step_from(CartPoleBalance, [[0.0, 0.0, 0.0, 0.0]], [0.5])
    expected = [0.012192897105327172, 0.2438579421065434, 0.01824373631719776, 0.3648747263439552]
    np.testing.assert_allclose(out.final_obs[0].numpy(), expected, rtol=1e-12, atol=0)
    assert out.reward.item() == pytest.approx(9.99958358765831, abs=1e-12)
    assert not out.terminated.item()


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("env_cls", [CartPoleBalance, CartPoleSwingUp])
def test_rllab_cartpole_dynamics_match_scalar_reference(env_cls, backend):
    states, actions = zip(*CARTPOLE_CASES)
    out = _step_from(env_cls, states, actions, backend)
    for i, (s, a) in enumerate(CARTPOLE_CASES):
        expected, _ = rllab_cartpole_step(s, a)
        if env_cls is CartPoleSwingUp:
            expected = _wrapped(expected)
        np.testing.assert_allclose(out.final_obs[i].numpy(), expected, rtol=1e-12, atol=1e-12)
    assert out.final_obs[5, 3].item() == pytest.approx(0.5 * math.pi / 0.05)  # clamped
    assert out.final_obs[6, 3].item() == pytest.approx(-0.5 * math.pi / 0.05)


def test_rllab_cartpole_multistep_trajectory():
    rng = np.random.default_rng(0)
    env = CartPoleSwingUp(1, seed=0, **F64)
    s = env.reset()[0].numpy()
    turns = 0
    for _ in range(100):
        a = rng.normal() * 2
        out = env.step(torch.tensor([[a]], **F64))
        s, _ = rllab_cartpole_step(s, a)
        if out.terminated.item():
            break
        np.testing.assert_allclose(out.final_obs[0].numpy(), _wrapped(s), rtol=1e-9, atol=1e-9)
        turns += abs(s[2]) > math.pi
    assert turns > 0  # the random forces spin the pole past the bottom, so the wrap was exercised


def _wrapped(state):
    """The swing-up reports its angle in [-pi, pi): the reference's angle, wrapped via atan2."""
    x, x_dot, theta, theta_dot = state
    return [x, x_dot, math.atan2(math.sin(theta), math.cos(theta)), theta_dot]


def test_balance_rewards_and_termination():
    states = [
        [0.0, 0.0, 0.05, 0.0],  # alive
        [2.39, 1.0, 0.0, 0.0],  # x crosses 2.4
        [-2.39, -1.0, 0.0, 0.0],  # x crosses -2.4
        [0.0, 0.0, 0.19, 1.0],  # theta crosses 0.2
        [0.0, 0.0, -0.19, -1.0],  # theta crosses -0.2
        [0.0, 0.0, 0.1, 0.0],  # alive, action outside the box
    ]
    actions = [0.3, 0.0, 0.0, 0.0, 0.0, -3.0]
    out = _step_from(CartPoleBalance, states, actions)
    assert out.terminated.tolist() == [False, True, True, True, True, False]
    assert not out.truncated.any()
    for i, (s, a) in enumerate(zip(states, actions)):
        nxt, F = rllab_cartpole_step(s, a)
        alive = abs(nxt[0]) <= 2.4 and abs(nxt[2]) <= 0.2
        assert alive == (not out.terminated[i].item())
        expected = 10 - (1 - math.cos(nxt[2])) - 1e-5 * F**2 if alive else 0.0
        assert out.reward[i].item() == pytest.approx(expected, abs=1e-12)
    assert out.reward[5].item() == pytest.approx(10 - (1 - math.cos(out.final_obs[5, 2].item())) - 1e-5 * 100)


def test_swingup_rewards_and_termination():
    states = [
        [0.0, 0.0, math.pi, 0.0],  # hanging: reward about -1
        [2.95, 2.0, 0.0, 0.0],  # x crosses 3: -100
        [-2.95, -2.0, 1.0, 0.0],  # x crosses -3: -100
        [2.5, 0.0, 0.2, 0.0],  # |theta| large does not terminate the swing-up
        [0.0, 0.0, 4.0, 5.0],
    ]
    actions = [0.0, 0.0, 0.0, 0.0, 0.7]
    out = _step_from(CartPoleSwingUp, states, actions)
    assert out.terminated.tolist() == [False, True, True, False, False]
    for i, (s, a) in enumerate(zip(states, actions)):
        nxt, _ = rllab_cartpole_step(s, a)
        expected = -100.0 if abs(nxt[0]) > 3 else math.cos(nxt[2])
        assert out.reward[i].item() == pytest.approx(expected, abs=1e-12)


def test_rllab_reset_distributions():
    b = CartPoleBalance(4000, seed=0).reset()
    half = torch.tensor([0.12, 0.2, 0.01, 0.2])
    assert (b.abs() <= half).all()
    assert (b.abs().amax(0) > 0.95 * half).all()  # spans the range
    s = CartPoleSwingUp(4000, seed=0).reset()
    lo = torch.tensor([-1.0, -2.0, math.pi - 1, -3.0])
    hi = torch.tensor([1.0, 2.0, math.pi + 1, 3.0])
    assert ((s >= lo) & (s <= hi)).all()
    torch.testing.assert_close(s.mean(0), (lo + hi) / 2, atol=0.1, rtol=0)


DP_CASES = [  # (state [th1, th2, w1, w2], action)
    ([0.0, 0.0, 0.0, 0.0], 0.5),
    ([0.1, -0.2, 0.3, -0.1], -0.4),
    ([math.pi - 0.1, math.pi + 0.2, 1.0, -2.0], 2.0),  # action outside the box: tau = 50
    ([1.0, -2.0, 5.0, 8.0], -1.0),
    ([0.5, 0.5, 156.0, -156.0], 1.0),  # velocities at the clamp (0.5 pi / dt = 157.08)
    ([3.0, -1.0, -20.0, 30.0], 0.0),
]


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_double_pendulum_one_step_matches_scalar_reference(backend):
    states, actions = zip(*DP_CASES)
    env = DoublePendulum(len(states), seed=0, backend=backend, **F64)
    env.reset()
    env.state = np.asarray(states)
    out = env.step(torch.tensor(actions, **F64).reshape(-1, 1))
    for i, (s, a) in enumerate(DP_CASES):
        nxt, reward = double_pendulum_step(s, a)
        th1, th2, w1, w2 = nxt
        expected_obs = [math.sin(th1), math.cos(th1), w1, math.sin(th2), math.cos(th2), w2]
        np.testing.assert_allclose(env.state[i].numpy(), nxt, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(out.final_obs[i].numpy(), expected_obs, rtol=1e-12, atol=1e-12)
        assert out.reward[i].item() == pytest.approx(reward, abs=1e-12)
    lim = 0.5 * math.pi / 0.01
    assert env.state[4, 2].item() == pytest.approx(lim)  # omega1 hit the clamp
    assert not out.terminated.any()


def test_double_pendulum_upright_reward_is_zero_and_hanging_is_minus_four():
    env = DoublePendulum(2, seed=0, **F64)
    env.reset()
    # The reward is evaluated after the step; these poses are equilibria, so they stay put.
    env.state = [[math.pi, math.pi, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
    out = env.step(torch.zeros(2, 1, **F64))
    np.testing.assert_allclose(out.reward.numpy(), [0.0, -4.0], atol=1e-9)


def test_double_pendulum_multistep_and_return_range():
    rng = np.random.default_rng(1)
    n = 8
    env = DoublePendulum(n, seed=0, **F64)
    env.reset()
    states = env.state.numpy().copy()
    returns = np.zeros(n)
    for t in range(500):
        a = rng.normal(size=n) * 1.5
        out = env.step(torch.as_tensor(a).reshape(n, 1))
        returns += out.reward.numpy()
        if t < 50:  # random torques: a chaotic system, so only compare the first steps exactly
            for i in range(n):
                states[i], r = double_pendulum_step(states[i], a[i])
                assert out.reward[i].item() == pytest.approx(r, abs=1e-8)
        assert not out.terminated.any()
        assert out.truncated.all() == (t == 499)
    assert (out.reward <= 0).all() and (out.reward >= -4).all()
    assert ((returns >= -2000) & (returns <= 0)).all()
    # never blew up thanks to the velocity clamp
    assert torch.isfinite(out.final_obs).all() and (out.final_obs[:, [2, 5]].abs() <= 157.1).all()


def test_double_pendulum_reset_distribution():
    env = DoublePendulum(20000, seed=3, **F64)
    env.reset()
    std = env.state.std(0)
    torch.testing.assert_close(std, torch.tensor([0.1, 0.1, 0.01, 0.01], **F64), rtol=0.03, atol=0)
    torch.testing.assert_close(env.state.mean(0), torch.zeros(4, **F64), atol=3e-3, rtol=0)


@pytest.mark.parametrize("env_cls,lo,hi", [(CartPoleBalance, 0.0, 5000.0), (CartPoleSwingUp, -600.0, 500.0)])
def test_rllab_return_ranges(env_cls, lo, hi):
    """Random policies: per-step rewards and episode returns stay within the documented ranges."""
    n = 32
    env = env_cls(n, seed=1)
    env.reset()
    g = torch.Generator().manual_seed(0)
    ret = torch.zeros(n)
    for _ in range(500):
        out = env.step(torch.randn(n, 1, generator=g))
        if env_cls is CartPoleBalance:
            assert ((out.reward >= 0) & (out.reward <= 10)).all()
            assert (out.reward[out.terminated] == 0).all()
        else:
            alive = out.reward[~out.terminated]
            assert ((alive >= -1) & (alive <= 1)).all() and (out.reward[out.terminated] == -100).all()
        ret += out.reward
        done = out.terminated | out.truncated
        assert ((ret >= lo) & (ret <= hi)).all()
        ret[done] = 0
