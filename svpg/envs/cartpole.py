"""Gymnasium's CartPole-v1 as a batched task.

A faithful port of ``gymnasium.envs.classic_control.CartPoleEnv`` (Barto, Sutton & Anderson 1983;
equations of Florian 2005): explicit Euler with ``tau = 0.02``, force ``±10`` for actions ``{0, 1}``,
termination when ``|x| > 2.4`` or ``|theta| > 12°`` (``12 * 2 * pi / 360`` rad), reward ``+1`` for every
step *including* the terminating one, reset ``U(-0.05, 0.05)`` for all four state variables, time
limit 500 (truncation). The observation is the state ``[x, x_dot, theta, theta_dot]`` (theta = 0
upright, positive leaning towards +x), in the env's dtype.

The equations are written once, as :func:`cartpole_kernel` over state columns (:mod:`svpg.envs.xp`): the
batched task runs it on numpy or torch arrays, the single ``gym.make("svpg/CartPole-v1")`` env on
Python floats. The only differences to Gymnasium are floating point ones: the divisions by the total
mass are folded into the coefficients (``(f + c q) / m`` is computed as ``f / m + (c / m) q``) so that
a step is ~20 array ops; with ``dtype=torch.float64`` the trajectories agree with Gymnasium's to
~1e-13 (see ``tests/envs/test_cartpole.py``). With the default float32 the state is also *integrated* in float32,
whereas Gymnasium integrates in float64 and only casts the observation.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np

from .base import BatchedKernelEnv

GRAVITY = 9.8
MASS_CART = 1.0
MASS_POLE = 0.1
TOTAL_MASS = MASS_CART + MASS_POLE
LENGTH = 0.5  # half the pole's length
POLEMASS_LENGTH = MASS_POLE * LENGTH
FORCE_MAG = 10.0
TAU = 0.02
THETA_THRESHOLD = 12 * 2 * math.pi / 360
X_THRESHOLD = 2.4


def cartpole_kernel(xp, state, action):
    """One step of Gymnasium's CartPole-v1 on state columns (see :class:`svpg.envs.base.BatchedKernelEnv`)."""
    x, x_dot, theta, theta_dot = state
    cos, sin = xp.cos(theta), xp.sin(theta)
    # temp = (force + polemass_length * theta_dot^2 * sin) / total_mass, force -10 / +10 by action 0 / 1
    force_over_mass = xp.take((-FORCE_MAG / TOTAL_MASS, FORCE_MAG / TOTAL_MASS), action)
    temp = xp.addcmul(force_over_mass, sin * theta_dot, theta_dot, value=POLEMASS_LENGTH / TOTAL_MASS)
    # thetaacc = (g sin - cos temp) / (length (4/3 - masspole cos^2 / total_mass))
    thetaacc = xp.addcmul(sin * GRAVITY, cos, temp, value=-1.0) / xp.addcmul(
        LENGTH * 4.0 / 3.0, cos, cos, value=-LENGTH * MASS_POLE / TOTAL_MASS
    )
    # xacc = temp - polemass_length * thetaacc * cos / total_mass
    xacc = xp.addcmul(temp, thetaacc, cos, value=-POLEMASS_LENGTH / TOTAL_MASS)
    # explicit Euler: every variable moves with the derivative at the old state
    nxt = (
        xp.add(x, x_dot, alpha=TAU),
        xp.add(x_dot, xacc, alpha=TAU),
        xp.add(theta, theta_dot, alpha=TAU),
        xp.add(theta_dot, thetaacc, alpha=TAU),
    )
    terminated = (xp.abs(nxt[0]) > X_THRESHOLD) | (xp.abs(nxt[2]) > THETA_THRESHOLD)
    return nxt, nxt, xp.full_like(x, 1.0), terminated


class CartPole(BatchedKernelEnv):
    """Batched port of Gymnasium's ``CartPole-v1``; ``Discrete(2)`` actions (0 push left, 1 right)."""

    state_dim = 4
    default_max_episode_steps = 500
    render_fps = 50
    _high = np.array([X_THRESHOLD * 2, np.inf, THETA_THRESHOLD * 2, np.inf], dtype=np.float32)
    single_observation_space = gym.spaces.Box(-_high, _high, dtype=np.float32)
    single_action_space = gym.spaces.Discrete(2)
    kernel = staticmethod(cartpole_kernel)
    reset_loc = (0.0, 0.0, 0.0, 0.0)
    reset_scale = (0.05, 0.05, 0.05, 0.05)

    @staticmethod
    def render_obs(obs: np.ndarray) -> np.ndarray:
        """RGB frame of one observation ``[x, x_dot, theta, theta_dot]``."""
        from .render import draw_cartpole

        x, theta = float(obs[0]), float(obs[2])
        # Gymnasium's theta is positive leaning towards +x, i.e. clockwise.
        return draw_cartpole(x, -theta, x_limit=X_THRESHOLD, pole_length=2 * LENGTH)
