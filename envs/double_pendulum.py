"""rllab's double pendulum (torque at the elbow only) as a batched torch task (DESIGN §4).

Two identical links, mass ``m = 0.5``, length ``L = 1``, centre of mass at ``l_c = 0.5``, inertia about
the centre ``I = m (L² + 0.1²) / 12 = 0.0420833`` (a 1 x 0.1 box), ``g = 10``. State
``[theta1, theta2, omega1, omega2]`` with *absolute* angles (``0`` = hanging down, counter-clockwise
positive). The torque ``tau = clip(50 a, -50, 50)`` acts ``+tau`` on link 2 and ``-tau`` on link 1::

    M11 = 1.25 m L² + I,   M22 = 0.25 m L² + I,   M12 = 0.5 m L² cos(th1 - th2)
    M11 acc1 + M12 acc2 = -tau - 0.5 m L² sin(th1 - th2) w2² - 1.5 m g L sin th1
    M12 acc1 + M22 acc2 = +tau + 0.5 m L² sin(th1 - th2) w1² - 0.5 m g L sin th2

The 2 x 2 system is solved in closed form (Cramer's rule, ``det = M11 M22 - M12² > 0``) and
integrated with semi-implicit Euler, ``dt = 0.01``, two substeps per env step; after each velocity
update ``|omega| <= 0.5 pi / dt`` (Box2D's per-step rotation limit; without it random torques blow
the state up).

Observation ``[sin th1, cos th1, w1, sin th2, cos th2, w2]``; reset ``N(0, diag(0.1, 0.1, 0.01, 0.01)²)``
on ``[th1, th2, w1, w2]``; reward ``-|tip - (0, 2L)|`` with elbow ``p = (L sin th1, -L cos th1)`` and
``tip = (p_x - L sin th2, p_y - L cos th2)`` -- rllab's formula, kept as written (its x component has
the opposite sign to the physical tip; both put the upright pose at distance 0), evaluated after the
step; never terminates; horizon 500, so returns lie in ``[-2000, 0]``. The action space is
``Box(-1, 1, (1,))``; actions outside it are clipped here.

Deviations from rllab: (1) analytic rigid-body dynamics instead of a Box2D simulation; (2) start
states are physically consistent (rllab perturbed each Box2D body's pose independently, leaving the
links detached at their joints); the angles are those of a valid configuration.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import torch

from .base import TorchEnv

MASS = 0.5
LENGTH = 1.0
INERTIA = MASS * (LENGTH**2 + 0.1**2) / 12
GRAVITY = 10.0
DT = 0.01
SUBSTEPS = 2
MAX_OMEGA = 0.5 * math.pi / DT
MAX_TORQUE = 50.0
M11 = 1.25 * MASS * LENGTH**2 + INERTIA
M22 = 0.25 * MASS * LENGTH**2 + INERTIA
C12 = 0.5 * MASS * LENGTH**2  # M12 = C12 cos(th1 - th2); also the Coriolis coefficient
G1 = 1.5 * MASS * GRAVITY * LENGTH
G2 = 0.5 * MASS * GRAVITY * LENGTH


class DoublePendulum(TorchEnv):
    """rllab's double pendulum (``svpg/DoublePendulum-v0``), see the module docstring."""

    state_dim = 4
    default_max_episode_steps = 500
    render_fps = int(round(1 / (DT * SUBSTEPS)))
    _high = np.array([1, 1, np.inf, 1, 1, np.inf], dtype=np.float32)
    single_observation_space = gym.spaces.Box(-_high, _high, dtype=np.float32)
    single_action_space = gym.spaces.Box(-1.0, 1.0, (1,), dtype=np.float32)

    def _setup(self) -> None:
        kw = dict(device=self.device, dtype=self.dtype)
        self._max_torque = torch.tensor(MAX_TORQUE, **kw)
        self._m11_neg = torch.tensor(-M11, **kw)
        self._m22 = torch.tensor(M22, **kw)
        self._c12 = torch.tensor(C12, **kw)
        self._det0_neg = torch.tensor(-M11 * M22, **kw)
        half_pi = math.pi / 2
        # Trigonometry as one matmul + one sin (cos z = sin(z + pi/2)):
        # [th1, th2] @ _trig_map + _trig_off = [th1, th2, th1 - th2, th1 - th2 + pi/2]
        self._trig_map = torch.tensor([[1.0, 0.0, 1.0, 1.0], [0.0, 1.0, -1.0, -1.0]], **kw)
        self._trig_off = torch.tensor([0.0, 0.0, 0.0, half_pi], **kw)
        # observation: state @ _obs_map + _obs_off = [th1, th1 + pi/2, w1, th2, th2 + pi/2, w2], then
        # sin() on the angle columns
        obs_map = torch.zeros(4, 6, **kw)
        obs_map[0, 0] = obs_map[0, 1] = obs_map[2, 2] = obs_map[1, 3] = obs_map[1, 4] = obs_map[3, 5] = 1.0
        self._obs_map = obs_map
        self._obs_off = torch.tensor([0.0, half_pi, 0.0, 0.0, half_pi, 0.0], **kw)
        self._obs_is_angle = torch.tensor([True, True, False, True, True, False], device=self.device)
        # reward: obs @ _tip_map + _tip_off = L (sin th1 - sin th2, cos th1 + cos th2 + 2)
        tip_map = torch.zeros(6, 2, **kw)
        tip_map[0, 0], tip_map[3, 0], tip_map[1, 1], tip_map[4, 1] = LENGTH, -LENGTH, LENGTH, LENGTH
        self._tip_map = tip_map
        self._tip_off = torch.tensor([0.0, 2 * LENGTH], **kw)
        self._reset_std = torch.tensor([0.1, 0.1, 0.01, 0.01], **kw)
        self._reset_buf = torch.empty(self.num_envs, 4, **kw)

    def _draw_reset(self) -> torch.Tensor:
        return self._reset_buf.normal_(generator=self.generator) * self._reset_std

    def _transition(self, state, actions):
        tau = actions.reshape(-1).to(self.dtype).clamp(-1.0, 1.0) * self._max_torque
        theta, omega = state[:, :2], state[:, 2:]
        for _ in range(SUBSTEPS):
            sin1, sin2, sin_d, cos_d = torch.sin(torch.addmm(self._trig_off, theta, self._trig_map)).unbind(1)
            w1, w2 = omega.unbind(1)
            c12_sin = sin_d * self._c12
            # right-hand sides, the first one negated: nb1 = -b1 = tau + G1 sin th1 + C12 sin d w2²
            nb1 = torch.addcmul(torch.add(tau, sin1, alpha=G1), c12_sin * w2, w2)
            b2 = torch.addcmul(torch.add(tau, sin2, alpha=-G2), c12_sin * w1, w1)
            m12 = cos_d * self._c12
            ndet = torch.addcmul(self._det0_neg, m12, m12)  # -(M11 M22 - M12²)
            # Cramer: acc1 = (M22 b1 - M12 b2) / det,  acc2 = (M11 b2 - M12 b1) / det
            acc1 = torch.addcmul(nb1 * self._m22, m12, b2) / ndet
            acc2 = torch.addcmul(b2 * self._m11_neg, m12, nb1, value=-1.0) / ndet
            omega = torch.add(omega, torch.stack((acc1, acc2), dim=1), alpha=DT)
            omega = omega.clamp_(-MAX_OMEGA, MAX_OMEGA)
            theta = torch.add(theta, omega, alpha=DT)
        next_state = torch.cat((theta, omega), dim=1)
        next_obs = self._observe(next_state)
        # rllab: tip - (0, 2L) = (L (sin th1 - sin th2), -L (cos th1 + cos th2) - 2L)
        reward = torch.linalg.vector_norm(torch.addmm(self._tip_off, next_obs, self._tip_map), dim=1).neg_()
        terminated = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        return next_state, next_obs, reward, terminated

    def _observe(self, state: torch.Tensor) -> torch.Tensor:
        z = torch.addmm(self._obs_off, state, self._obs_map)
        return torch.where(self._obs_is_angle, torch.sin(z), z)

    @staticmethod
    def render_obs(obs: np.ndarray) -> np.ndarray:
        """RGB frame of one observation ``[sin th1, cos th1, w1, sin th2, cos th2, w2]``."""
        from .render import draw_double_pendulum

        theta1 = math.atan2(float(obs[0]), float(obs[1]))
        theta2 = math.atan2(float(obs[3]), float(obs[4]))
        return draw_double_pendulum(theta1, theta2, link_length=LENGTH)
