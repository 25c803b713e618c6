"""Gymnasium's CartPole-v1 as a batched torch task (DESIGN §4, "Gymnasium CartPole-v1").

A faithful port of ``gymnasium.envs.classic_control.CartPoleEnv`` (Barto, Sutton & Anderson 1983;
equations of Florian 2005): explicit Euler with ``tau = 0.02``, force ``±10`` for actions ``{0, 1}``,
termination when ``|x| > 2.4`` or ``|theta| > 12°`` (``12 * 2 * pi / 360`` rad), reward ``+1`` for every
step *including* the terminating one, reset ``U(-0.05, 0.05)`` for all four state variables, time
limit 500 (truncation). The observation is the state ``[x, x_dot, theta, theta_dot]`` (theta = 0
upright, positive leaning towards +x), in the env's dtype.

The only differences to Gymnasium are floating point ones: the constants are folded
(``(f + c q) / m`` is computed as ``f / m + (c / m) q``) so that a step is ~17 tensor ops; with
``dtype=torch.float64`` the trajectories agree with Gymnasium's to ~1e-13 (see
``tests/test_envs_cartpole.py``). With the default float32 the state is also *integrated* in float32,
whereas Gymnasium integrates in float64 and only casts the observation.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import torch

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


class CartPole(TorchEnv):
    """Batched port of Gymnasium's ``CartPole-v1``; ``Discrete(2)`` actions (0 push left, 1 right)."""

    state_dim = 4
    default_max_episode_steps = 500
    render_fps = 50
    _high = np.array([X_THRESHOLD * 2, np.inf, THETA_THRESHOLD * 2, np.inf], dtype=np.float32)
    single_observation_space = gym.spaces.Box(-_high, _high, dtype=np.float32)
    single_action_space = gym.spaces.Discrete(2)

    def _setup(self) -> None:
        kw = dict(device=self.device, dtype=self.dtype)
        # Constants live in tensors: an op with a Python scalar costs ~1.5 us more on CPU.
        self._force_over_mass = torch.tensor([-FORCE_MAG, FORCE_MAG], **kw) / TOTAL_MASS
        self._gravity = torch.tensor(GRAVITY, **kw)
        self._den0 = torch.tensor(LENGTH * 4.0 / 3.0, **kw)
        # |next_state| > thresholds, with +inf for the velocities
        self._thresholds = torch.tensor([X_THRESHOLD, math.inf, THETA_THRESHOLD, math.inf], **kw)
        self._reset_buf = torch.empty(self.num_envs, 4, **kw)

    def _draw_reset(self) -> torch.Tensor:
        return self._reset_buf.uniform_(-0.05, 0.05, generator=self.generator)

    def _transition(self, state, actions):
        _, x_dot, theta, theta_dot = state.unbind(1)
        cos, sin = torch.cos(theta), torch.sin(theta)
        # temp = (force + polemass_length * theta_dot^2 * sin) / total_mass
        temp = torch.addcmul(
            self._force_over_mass.index_select(0, actions.reshape(-1)),
            sin * theta_dot,
            theta_dot,
            value=POLEMASS_LENGTH / TOTAL_MASS,
        )
        # thetaacc = (g sin - cos temp) / (length (4/3 - masspole cos^2 / total_mass))
        thetaacc = torch.addcmul(sin * self._gravity, cos, temp, value=-1.0) / torch.addcmul(
            self._den0, cos, cos, value=-LENGTH * MASS_POLE / TOTAL_MASS
        )
        # xacc = temp - polemass_length * thetaacc * cos / total_mass
        xacc = torch.addcmul(temp, thetaacc, cos, value=-POLEMASS_LENGTH / TOTAL_MASS)
        # explicit Euler: every variable moves with the derivative at the old state
        deriv = torch.stack((x_dot, xacc, theta_dot, thetaacc), dim=1)
        next_state = torch.add(state, deriv, alpha=TAU)
        terminated = (next_state.abs() > self._thresholds).any(dim=1)
        reward = torch.ones(self.num_envs, device=self.device, dtype=self.dtype)
        return next_state, next_state, reward, terminated

    @staticmethod
    def render_obs(obs: np.ndarray) -> np.ndarray:
        """RGB frame of one observation ``[x, x_dot, theta, theta_dot]``."""
        from .render import draw_cartpole

        x, theta = float(obs[0]), float(obs[2])
        # Gymnasium's theta is positive leaning towards +x, i.e. clockwise.
        return draw_cartpole(x, -theta, x_limit=X_THRESHOLD, pole_length=2 * LENGTH)
