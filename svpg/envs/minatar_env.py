"""MinAtar's Gymnasium environment as :func:`svpg.envs.spaces_tasks.register_spaces_tasks` registers it
(imported by ``gym.make`` only, so that ``import svpg`` needs no MinAtar)."""

from __future__ import annotations

import gymnasium as gym
from minatar.gym import BaseEnv


class MinAtarEnv(BaseEnv):
    """``minatar.gym.BaseEnv`` that takes any non-negative integer seed, as Gymnasium's environments do:
    MinAtar seeds a legacy ``np.random.RandomState``, which refuses seeds of 2³² and more (svpg draws 63-bit
    ones), so a seed is taken modulo 2³² (consecutive seeds stay distinct). It also seeds ``np_random``
    as ``gym.Env.reset`` does, which MinAtar leaves unset."""

    def reset(self, seed=None, options=None):
        gym.Env.reset(self, seed=seed)
        return super().reset(seed=None if seed is None else int(seed) % 2**32, options=options)
