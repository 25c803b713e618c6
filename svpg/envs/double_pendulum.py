"""rllab's double pendulum (torque at the elbow only) as a batched task.

Ported from rllab (Duan et al. 2016, "Benchmarking Deep Reinforcement Learning for Continuous
Control"), ``rllab/envs/box2d/double_pendulum_env.py``.

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

The equations, reward and observation are written once, as :func:`double_pendulum_kernel` and
:func:`double_pendulum_observe` over state columns (:mod:`svpg.envs.xp`): the batched task runs them on
arrays, the single ``gym.make`` env on Python floats.

Deviations from rllab: (1) analytic rigid-body dynamics instead of a Box2D simulation; (2) start
states are physically consistent (rllab perturbed each Box2D body's pose independently, leaving the
links detached at their joints); the angles are those of a valid configuration.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np

from .base import BatchedKernelEnv

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


def double_pendulum_observe(xp, state):
    """Observation columns ``[sin th1, cos th1, w1, sin th2, cos th2, w2]`` of state columns."""
    th1, th2, w1, w2 = state
    return xp.sin(th1), xp.cos(th1), w1, xp.sin(th2), xp.cos(th2), w2


def double_pendulum_kernel(xp, state, action):
    """Two substeps of the double pendulum (module docstring) on state columns, then observation
    and reward (see :class:`svpg.envs.base.BatchedKernelEnv`); never terminates."""
    th1, th2, w1, w2 = state
    u = xp.clip(action, -1.0, 1.0)  # tau = MAX_TORQUE u
    for _ in range(SUBSTEPS):
        d = th1 - th2
        sin1, sin2, sin_d, cos_d = xp.sin(th1), xp.sin(th2), xp.sin(d), xp.cos(d)
        # Right-hand sides b1 = -tau - C12 sin_d w2² - G1 sin1 and b2 = tau + C12 sin_d w1² - G2 sin2,
        # carried as p = -b1 / G1 and q = -b2 / G2 (so that sin1, sin2 enter without a multiply).
        p = xp.addcmul(xp.add(sin1, u, alpha=MAX_TORQUE / G1), sin_d * w2, w2, value=C12 / G1)
        q = xp.addcmul(xp.add(sin2, u, alpha=-MAX_TORQUE / G2), sin_d * w1, w1, value=-C12 / G2)
        # Cramer, M12 = C12 cos_d, det = M11 M22 - M12²:
        #   acc1 = (M22 b1 - M12 b2) / det = -M22 G1 (p - C12 G2 / (M22 G1) cos_d q) / det
        #   acc2 = (M11 b2 - M12 b1) / det = -M11 G2 (q - C12 G1 / (M11 G2) cos_d p) / det
        det = xp.addcmul(M11 * M22, cos_d, cos_d, value=-C12 * C12)
        num1 = xp.addcmul(p, cos_d, q, value=-C12 * G2 / (M22 * G1))
        num2 = xp.addcmul(q, cos_d, p, value=-C12 * G1 / (M11 * G2))
        # semi-implicit Euler: w += dt acc, clamped (Box2D's rotation limit), then th += dt w
        w1 = xp.clip_(xp.addcdiv(w1, num1, det, value=-DT * M22 * G1), -MAX_OMEGA, MAX_OMEGA)
        w2 = xp.clip_(xp.addcdiv(w2, num2, det, value=-DT * M11 * G2), -MAX_OMEGA, MAX_OMEGA)
        th1 = xp.add(th1, w1, alpha=DT)
        th2 = xp.add(th2, w2, alpha=DT)
    nxt = (th1, th2, w1, w2)
    obs = double_pendulum_observe(xp, nxt)
    sin1, cos1, _, sin2, cos2, _ = obs
    # rllab: tip - (0, 2L) = (L (sin th1 - sin th2), -L (cos th1 + cos th2 + 2)); reward -|.|
    reward = -LENGTH * xp.hypot(sin1 - sin2, cos1 + 2.0 + cos2)
    return nxt, obs, reward, False


class DoublePendulum(BatchedKernelEnv):
    """rllab's double pendulum (``svpg/DoublePendulum-v0``), see the module docstring."""

    state_dim = 4
    default_max_episode_steps = 500
    render_fps = int(round(1 / (DT * SUBSTEPS)))
    _high = np.array([1, 1, np.inf, 1, 1, np.inf], dtype=np.float32)
    single_observation_space = gym.spaces.Box(-_high, _high, dtype=np.float32)
    single_action_space = gym.spaces.Box(-1.0, 1.0, (1,), dtype=np.float32)
    kernel = staticmethod(double_pendulum_kernel)
    observe_columns = staticmethod(double_pendulum_observe)
    can_terminate = False
    reset_distribution = "normal"
    reset_loc = (0.0, 0.0, 0.0, 0.0)
    reset_scale = (0.1, 0.1, 0.01, 0.01)

    @staticmethod
    def render_obs(obs: np.ndarray) -> np.ndarray:
        """RGB frame of one observation ``[sin th1, cos th1, w1, sin th2, cos th2, w2]``."""
        from .render import draw_double_pendulum

        theta1 = math.atan2(float(obs[0]), float(obs[1]))
        theta2 = math.atan2(float(obs[3]), float(obs[4]))
        return draw_double_pendulum(theta1, theta2, link_length=LENGTH)
