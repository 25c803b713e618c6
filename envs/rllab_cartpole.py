"""rllab's cart-pole tasks (balance and swing-up) as batched torch tasks (DESIGN §4, cart-pole family).

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
  terminates when ``|x| > 3``; horizon 500, maximal return 500.

Deviations from rllab: (1) the dynamics are the analytic equations above instead of a Box2D
simulation (no contact solver, no joint-error correction); (2) start states are physically
consistent: rllab perturbed the position and velocity of each Box2D body independently, so the pole's
body did not sit on the cart's pivot at reset. Here the state *is* ``[x, x_dot, theta, theta_dot]``,
so every start state is a valid configuration. The angle is not wrapped.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import torch

from .base import TorchEnv

MASS_CART = 1.0
MASS_POLE = 0.1
POLE_COM = 0.5  # l: pivot to the pole's centre of mass
INERTIA = MASS_POLE * (1.0**2 + 0.1**2) / 12 + MASS_POLE * POLE_COM**2  # J about the pivot
GRAVITY = 10.0
DT = 0.05
MAX_THETA_DOT = 0.5 * math.pi / DT
MAX_FORCE = 10.0


class _RllabCartPole(TorchEnv):
    """Shared dynamics of the rllab cart-pole tasks; subclasses define reset, reward, termination."""

    state_dim = 4
    default_max_episode_steps = 500
    render_fps = int(round(1 / DT))
    single_observation_space = gym.spaces.Box(-np.inf, np.inf, (4,), dtype=np.float32)
    single_action_space = gym.spaces.Box(-1.0, 1.0, (1,), dtype=np.float32)
    #: half width of the rendered track
    render_x_limit = 2.4

    def _setup(self) -> None:
        m, l, J, g = MASS_POLE, POLE_COM, INERTIA, GRAVITY
        kw = dict(device=self.device, dtype=self.dtype)
        self._max_force = torch.tensor(MAX_FORCE, **kw)
        self._c_grav_x = torch.tensor((m * l) * (m * g * l) / J, **kw)  # (m l)(m g l) / J
        self._total_mass = torch.tensor(MASS_CART + m, **kw)
        self._c_grav_th = torch.tensor(m * g * l / J, **kw)
        self._reset_buf = torch.empty(self.num_envs, 4, **kw)

    def _force(self, actions: torch.Tensor) -> torch.Tensor:
        """``F = clip(10 a, -10, 10)`` for actions of shape ``(num_envs, 1)`` (or ``(num_envs,)``)."""
        return actions.reshape(-1).to(self.dtype).clamp(-1.0, 1.0) * self._max_force

    def _dynamics(self, state: torch.Tensor, force: torch.Tensor):
        """One semi-implicit Euler step; returns ``(next_state, x, theta)`` (new x and theta as 1-D)."""
        m, l, J = MASS_POLE, POLE_COM, INERTIA
        x, x_dot, theta, theta_dot = state.unbind(1)
        cos, sin = torch.cos(theta), torch.sin(theta)
        # x_acc = [F + sin (c cos - m l th_dot²)] / [(M + m) - (m l)² cos² / J],  c = (m l)(m g l) / J
        inner = torch.addcmul(cos * self._c_grav_x, theta_dot, theta_dot, value=-m * l)
        x_acc = torch.addcmul(force, sin, inner) / torch.addcmul(
            self._total_mass, cos, cos, value=-(m * l) ** 2 / J
        )
        # theta_acc = (m g l sin + m l cos x_acc) / J
        theta_acc = torch.addcmul(sin * self._c_grav_th, cos, x_acc, value=m * l / J)
        x_dot = torch.add(x_dot, x_acc, alpha=DT)
        theta_dot = torch.add(theta_dot, theta_acc, alpha=DT).clamp_(-MAX_THETA_DOT, MAX_THETA_DOT)
        x = torch.add(x, x_dot, alpha=DT)
        theta = torch.add(theta, theta_dot, alpha=DT)
        return torch.stack((x, x_dot, theta, theta_dot), dim=1), x, theta

    @classmethod
    def render_obs(cls, obs: np.ndarray) -> np.ndarray:
        """RGB frame of one observation ``[x, x_dot, theta, theta_dot]``."""
        from .render import draw_cartpole

        return draw_cartpole(
            float(obs[0]), float(obs[2]), x_limit=cls.render_x_limit, pole_length=2 * POLE_COM
        )


class CartPoleBalance(_RllabCartPole):
    """rllab's cart-pole balancing task (``svpg/CartPoleBalance-v0``), see the module docstring."""

    def _setup(self) -> None:
        super()._setup()
        kw = dict(device=self.device, dtype=self.dtype)
        self._reset_half_width = torch.tensor([0.12, 0.2, 0.01, 0.2], **kw)
        self._thresholds = torch.tensor([2.4, math.inf, 0.2, math.inf], **kw)
        self._nine = torch.tensor(9.0, **kw)

    def _draw_reset(self) -> torch.Tensor:
        u = self._reset_buf.uniform_(-1.0, 1.0, generator=self.generator)
        return u * self._reset_half_width

    def _transition(self, state, actions):
        force = self._force(actions)
        next_state, _, theta = self._dynamics(state, force)
        terminated = (next_state.abs() > self._thresholds).any(dim=1)
        # 10 - (1 - cos theta) - 1e-5 F² while alive, 0 on the terminating step
        reward = torch.addcmul(torch.cos(theta) + self._nine, force, force, value=-1e-5)
        return next_state, next_state, reward.masked_fill_(terminated, 0.0), terminated


class CartPoleSwingUp(_RllabCartPole):
    """rllab's cart-pole swing-up task (``svpg/CartPoleSwingUp-v0``), see the module docstring."""

    render_x_limit = 3.0

    def _setup(self) -> None:
        super()._setup()
        kw = dict(device=self.device, dtype=self.dtype)
        self._reset_center = torch.tensor([0.0, 0.0, math.pi, 0.0], **kw)
        self._reset_half_width = torch.tensor([1.0, 2.0, 1.0, 3.0], **kw)
        self._x_limit = torch.tensor(3.0, **kw)

    def _draw_reset(self) -> torch.Tensor:
        u = self._reset_buf.uniform_(-1.0, 1.0, generator=self.generator)
        return torch.addcmul(self._reset_center, u, self._reset_half_width)

    def _transition(self, state, actions):
        next_state, x, theta = self._dynamics(state, self._force(actions))
        terminated = x.abs() > self._x_limit
        # cos theta, -100 on the terminating step
        reward = torch.cos(theta).masked_fill_(terminated, -100.0)
        return next_state, next_state, reward, terminated
