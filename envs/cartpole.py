"""Gymnasium's CartPole-v1 as a batched task (DESIGN §4, "Gymnasium CartPole-v1").

A faithful port of ``gymnasium.envs.classic_control.CartPoleEnv`` (Barto, Sutton & Anderson 1983;
equations of Florian 2005): explicit Euler with ``tau = 0.02``, force ``±10`` for actions ``{0, 1}``,
termination when ``|x| > 2.4`` or ``|theta| > 12°`` (``12 * 2 * pi / 360`` rad), reward ``+1`` for every
step *including* the terminating one, reset ``U(-0.05, 0.05)`` for all four state variables, time
limit 500 (truncation). The observation is the state ``[x, x_dot, theta, theta_dot]`` (theta = 0
upright, positive leaning towards +x), in the env's dtype.

The equations are written once, as :func:`cartpole_kernel` over state columns (:mod:`envs.xp`): the
batched task runs it on numpy or torch arrays, the single ``gym.make("svpg/CartPole-v1")`` env on
Python floats. The only differences to Gymnasium are floating point ones: the constants are folded
(``(f + c q) / m`` is computed as ``f / m + (c / m) q``) so that a step is ~20 array ops; with
``dtype=torch.float64`` the trajectories agree with Gymnasium's to ~1e-13 (see
``tests/test_envs_cartpole.py``). With the default float32 the state is also *integrated* in float32,
whereas Gymnasium integrates in float64 and only casts the observation.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np

from .base import TorchEnv

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


CONSTANTS = {
    "force_over_mass": (-FORCE_MAG / TOTAL_MASS, FORCE_MAG / TOTAL_MASS),  # by action 0 / 1
    "gravity": GRAVITY,
    "den0": LENGTH * 4.0 / 3.0,
    "x_limit": X_THRESHOLD,
    "theta_limit": THETA_THRESHOLD,
}


def cartpole_kernel(xp, k, state, action):
    """One step of Gymnasium's CartPole-v1 on state columns (see :class:`envs.base.TorchEnv`)."""
    x, x_dot, theta, theta_dot = state
    cos, sin = xp.cos(theta), xp.sin(theta)
    # temp = (force + polemass_length * theta_dot^2 * sin) / total_mass
    force_over_mass = xp.take(k.force_over_mass, action)
    temp = xp.addcmul(force_over_mass, sin * theta_dot, theta_dot, value=POLEMASS_LENGTH / TOTAL_MASS)
    # thetaacc = (g sin - cos temp) / (length (4/3 - masspole cos^2 / total_mass))
    thetaacc = xp.addcmul(sin * k.gravity, cos, temp, value=-1.0) / xp.addcmul(
        k.den0, cos, cos, value=-LENGTH * MASS_POLE / TOTAL_MASS
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
    terminated = (xp.abs(nxt[0]) > k.x_limit) | (xp.abs(nxt[2]) > k.theta_limit)
    return nxt, nxt, xp.full_like(x, 1.0), terminated


class CartPole(TorchEnv):
    """Batched port of Gymnasium's ``CartPole-v1``; ``Discrete(2)`` actions (0 push left, 1 right)."""

    state_dim = 4
    default_max_episode_steps = 500
    render_fps = 50
    _high = np.array([X_THRESHOLD * 2, np.inf, THETA_THRESHOLD * 2, np.inf], dtype=np.float32)
    single_observation_space = gym.spaces.Box(-_high, _high, dtype=np.float32)
    single_action_space = gym.spaces.Discrete(2)
    kernel = staticmethod(cartpole_kernel)
    constants = CONSTANTS
    reset_loc = (0.0, 0.0, 0.0, 0.0)
    reset_scale = (0.05, 0.05, 0.05, 0.05)

    @staticmethod
    def render_obs(obs: np.ndarray) -> np.ndarray:
        """RGB frame of one observation ``[x, x_dot, theta, theta_dot]``."""
        from .render import draw_cartpole

        x, theta = float(obs[0]), float(obs[2])
        # Gymnasium's theta is positive leaning towards +x, i.e. clockwise.
        return draw_cartpole(x, -theta, x_limit=X_THRESHOLD, pole_length=2 * LENGTH)
