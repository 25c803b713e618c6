"""rllab's cart-pole tasks (balance and swing-up) as batched tasks.

Ported from rllab (Duan et al. 2016, "Benchmarking Deep Reinforcement Learning for Continuous
Control"), ``rllab/envs/box2d/cartpole_env.py`` and ``cartpole_swingup_env.py``.

rllab simulates these in a Box2D world; here the same rigid bodies are integrated analytically.
Cart mass ``M = 1.0``, pole mass ``m = 0.1``, pivot to pole centre of mass ``l = 0.5``, pole inertia about
the pivot ``J = m (1² + 0.1²) / 12 + m l² = 0.0334167`` (a 1 x 0.1 box), ``g = 10``; ``theta = 0`` is
upright, counter-clockwise positive (a positive angle leans the pole towards -x)::

    x_acc     = [F - m l sin(th) th_dot² + (m l cos th)(m g l sin th) / J] / [(M + m) - (m l cos th)² / J]
    theta_acc = (m g l sin th + m l cos(th) x_acc) / J

integrated with semi-implicit Euler (Box2D's scheme), ``dt = 0.05``::

    x_dot += dt x_acc;  th_dot += dt theta_acc;  |th_dot| <= 0.5 pi / dt;  x += dt x_dot;  th += dt th_dot

(the clamp is Box2D's per-step rotation limit). Observation ``[x, x_dot, theta, theta_dot]``; the
action space is ``Box(-1, 1, (1,))`` like rllab's normalised env, and the applied force is
``F = clip(10 a, -10, 10)``: actions outside the box (a Gaussian policy's sample) are clipped here.
Rewards and terminations are evaluated at the state *after* the step, as rllab does.

- :class:`CartPoleBalance` (rllab ``CartpoleEnv``): reset ``U(±[0.12, 0.2, 0.01, 0.2])``; reward
  ``10 - (1 - cos theta) - 1e-5 F²`` while alive and ``0`` on the terminating step; terminates when
  ``|x| > 2.4`` or ``|theta| > 0.2``; horizon 500, so the maximal return is about 5000.
- :class:`CartPoleSwingUp` (rllab ``CartpoleSwingupEnv``): reset ``U([-1, -2, pi-1, -3], [1, 2, pi+1, 3])``
  (hanging down, give or take a radian); reward ``cos theta``, ``-100`` on the terminating step;
  terminates when ``|x| > 3``; horizon 500, maximal return 500; the observed angle is wrapped into ``[-pi, pi)``.

The equations, rewards and terminations are written once, as kernels over state columns
(:func:`cartpole_dynamics`, :func:`balance_kernel`, :func:`swingup_kernel`), run on arrays by the
batched tasks and on Python floats by the single ``gym.make`` envs (:mod:`svpg.envs.xp`).

Deviations from rllab: (1) the dynamics are the analytic equations above instead of a Box2D
simulation (no contact solver, no joint-error correction); (2) start states are physically
consistent: rllab perturbed the position and velocity of each Box2D body independently, so the pole's
body did not sit on the cart's pivot at reset. Here the state *is* ``[x, x_dot, theta, theta_dot]``,
so every start state is a valid configuration; (3) the swing-up wraps its angle into ``[-pi, pi)`` after
every step (rllab reported Box2D's unbounded body angle, so a pole that had turned over n times looked
``2 pi n`` away from upright to the policy); rewards and dynamics depend on the angle only through sin
and cos, so they are unchanged.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np

from .base import BatchedKernelEnv

MASS_CART = 1.0
MASS_POLE = 0.1
POLE_COM = 0.5  # l: pivot to the pole's centre of mass
INERTIA = MASS_POLE * (1.0**2 + 0.1**2) / 12 + MASS_POLE * POLE_COM**2  # J about the pivot
GRAVITY = 10.0
DT = 0.05
MAX_THETA_DOT = 0.5 * math.pi / DT
MAX_FORCE = 10.0

_M, _L, _J = MASS_POLE, POLE_COM, INERTIA


def cartpole_dynamics(xp, state, action):
    """One semi-implicit Euler step of the rllab cart-pole (module docstring), on state columns.

    :returns: ``(x, x_dot, theta, theta_dot)`` after the step and ``u = clip(a, -1, 1)`` (F = 10 u).
    """
    x, x_dot, theta, theta_dot = state
    u = xp.clip(action, -1.0, 1.0)
    sin, cos = xp.sin(theta), xp.cos(theta)
    # x_acc = [F + sin (cos (m l)(m g l) / J - m l th_dot²)] / [(M + m) - (m l)² cos² / J], with
    # numerator and denominator divided by MAX_FORCE, as the force is carried as u = F / MAX_FORCE
    inner = xp.addcmul(cos * ((_M * _L) * (_M * GRAVITY * _L) / _J), theta_dot, theta_dot, value=-_M * _L)
    x_acc = xp.addcmul(u, sin, inner, value=1.0 / MAX_FORCE) / xp.addcmul(
        (MASS_CART + _M) / MAX_FORCE, cos, cos, value=-((_M * _L) ** 2) / _J / MAX_FORCE
    )
    # velocities first, then positions (Box2D's order); theta_acc = (m g l sin + m l cos x_acc) / J
    x_dot = xp.add(x_dot, x_acc, alpha=DT)
    theta_dot = xp.addcmul(
        xp.add(theta_dot, sin, alpha=DT * _M * GRAVITY * _L / _J), cos, x_acc, value=DT * _M * _L / _J
    )
    theta_dot = xp.clip_(theta_dot, -MAX_THETA_DOT, MAX_THETA_DOT)
    x = xp.add(x, x_dot, alpha=DT)
    theta = xp.add(theta, theta_dot, alpha=DT)
    return (x, x_dot, theta, theta_dot), u


def balance_kernel(xp, state, action):
    """:class:`CartPoleBalance`: reward ``10 - (1 - cos theta) - 1e-5 F²`` while alive, ``0`` on the
    terminating step; terminates when ``|x| > 2.4`` or ``|theta| > 0.2`` (after the step)."""
    nxt, u = cartpole_dynamics(xp, state, action)
    x, _, theta, _ = nxt
    terminated = (xp.abs(x) > 2.4) | (xp.abs(theta) > 0.2)
    # 10 - (1 - cos theta) - 1e-5 F² with F = MAX_FORCE u
    reward = xp.addcmul(xp.cos(theta) + 9.0, u, u, value=-1e-5 * MAX_FORCE**2)
    return nxt, nxt, xp.fill_where_(reward, terminated, 0.0), terminated


def swingup_kernel(xp, state, action):
    """:class:`CartPoleSwingUp`: reward ``cos theta``, ``-100`` on the terminating step; terminates
    when ``|x| > 3`` (after the step)."""
    (x, x_dot, theta, theta_dot), _ = cartpole_dynamics(xp, state, action)
    # the angle stays in [-pi, pi): upright looks the same to the policy however many turns it took
    nxt = (x, x_dot, xp.wrap_angle(theta), theta_dot)
    terminated = xp.abs(x) > 3.0
    return nxt, nxt, xp.fill_where_(xp.cos(theta), terminated, -100.0), terminated


class _RllabCartPole(BatchedKernelEnv):
    """Shared spaces and rendering of the rllab cart-pole tasks; subclasses set kernel and reset."""

    state_dim = 4
    default_max_episode_steps = 500
    render_fps = int(round(1 / DT))
    single_observation_space = gym.spaces.Box(-np.inf, np.inf, (4,), dtype=np.float32)
    single_action_space = gym.spaces.Box(-1.0, 1.0, (1,), dtype=np.float32)
    #: half width of the rendered track
    render_x_limit = 2.4

    @classmethod
    def render_obs(cls, obs: np.ndarray) -> np.ndarray:
        """RGB frame of one observation ``[x, x_dot, theta, theta_dot]``."""
        from .render import draw_cartpole

        return draw_cartpole(float(obs[0]), float(obs[2]), x_limit=cls.render_x_limit, pole_length=2 * POLE_COM)


class CartPoleBalance(_RllabCartPole):
    """rllab's cart-pole balancing task (``svpg/CartPoleBalance-v0``), see the module docstring."""

    kernel = staticmethod(balance_kernel)
    reset_loc = (0.0, 0.0, 0.0, 0.0)
    reset_scale = (0.12, 0.2, 0.01, 0.2)


class CartPoleSwingUp(_RllabCartPole):
    """rllab's cart-pole swing-up task (``svpg/CartPoleSwingUp-v0``), see the module docstring."""

    render_x_limit = 3.0
    kernel = staticmethod(swingup_kernel)
    reset_loc = (0.0, 0.0, math.pi, 0.0)
    reset_scale = (1.0, 2.0, 1.0, 3.0)
