"""EnvPool as a backend of the generic path (``vec_env="envpool"``, ``pip install "svpg[envpool]"``).

EnvPool steps a batch of environments in C++ threads. It runs its own implementations of the tasks it
knows (MuJoCo, classic control, Atari, …; ``envpool.list_all_envs()``), with their own random streams:
the same seed gives the same run, but not the run that Gymnasium's environments give. Its Gymnasium
API resets a finished environment on the *next* step; :class:`EnvPoolVectorEnv` resets it on the same
step (a partial ``reset`` of the finished ones, which EnvPool's synchronous mode supports), as every
svpg environment does, and reports the last observation in ``infos["final_obs"]``.

Seeds: ``reset(seed=s)`` builds the pool anew with environment ``i`` seeded ``s + i`` (a list gives
each environment its seed), as ``SyncVectorEnv`` seeds its environments, modulo 2³¹ (EnvPool's seeds
are 32-bit integers); an unseeded reset continues each environment's stream.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

INSTALL_HINT = 'pip install "svpg[envpool]"'


def import_envpool():
    try:
        import envpool
    except ImportError as e:
        raise ValueError(f"vec_env='envpool' needs EnvPool ({e}): {INSTALL_HINT}") from None
    return envpool


class EnvPoolVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` environments of an EnvPool id as a same-step-autoreset Gymnasium ``VectorEnv``.

    :param env_id: an id that both Gymnasium and EnvPool know (e.g. ``Hopper-v5``).
    :param num_envs: number of environments.
    :param num_threads: EnvPool's worker threads (None or 0: EnvPool's default, one per core).
    :param max_episode_steps: time limit (default: the Gymnasium id's).
    :param env_kwargs: EnvPool configuration of the task (its names, e.g. ``ctrl_cost_weight``).
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(
        self,
        env_id: str,
        num_envs: int,
        *,
        num_threads: int | None = None,
        max_episode_steps: int | None = None,
        env_kwargs: dict | None = None,
    ):
        envpool = import_envpool()
        if env_id not in envpool.list_all_envs():
            raise ValueError(
                f"EnvPool has no {env_id!r}: use --vec-env sync or async for it (EnvPool's ids: envpool.list_all_envs())"
            )
        self.env_id, self.num_envs = env_id, num_envs
        self._config: dict[str, Any] = dict(env_kwargs or {}, num_envs=num_envs, num_threads=int(num_threads or 0))
        if max_episode_steps is not None:
            self._config["max_episode_steps"] = int(max_episode_steps)
        self._pool = self._build(list(range(num_envs)))
        self.single_observation_space = self._pool.observation_space
        self.single_action_space = self._pool.action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)

    def _build(self, seeds: list[int]):
        envpool = import_envpool()
        try:
            return envpool.make_gymnasium(self.env_id, env_seed=seeds, **self._config)
        except (TypeError, KeyError, AssertionError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ValueError(f"EnvPool's {self.env_id}: {first} (check env_kwargs / --env-kwargs)") from None

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict | None = None):
        if seed is not None:
            seeds = [int(seed) + i for i in range(self.num_envs)] if isinstance(seed, (int, np.integer)) else seed
            if len(seeds) != self.num_envs or any(s is None for s in seeds):
                raise ValueError(f"EnvPool needs one seed per environment ({self.num_envs}), got {seed}")
            self._pool.close()
            self._pool = self._build([int(s) % 2**31 for s in seeds])  # type: ignore[arg-type]  # EnvPool's are int32
        obs, info = self._pool.reset()
        return self._ordered(obs, info), {}

    @staticmethod
    def _ordered(x: np.ndarray, info: dict) -> np.ndarray:
        """Rows by environment index (EnvPool reports which environment each row is)."""
        ids = np.asarray(info["env_id"])
        if np.array_equal(ids, np.arange(len(ids))):
            return x
        out = np.empty_like(x)
        out[ids] = x
        return out

    def step(self, actions):
        obs, reward, terminated, truncated, info = self._pool.step(np.asarray(actions))
        obs, reward, terminated, truncated = (
            self._ordered(np.asarray(x), info) for x in (obs, reward, terminated, truncated)
        )
        done = terminated | truncated
        infos: dict[str, Any] = {}
        if done.any():
            ids = np.flatnonzero(done).astype(np.int32)
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in ids:
                final_obs[i] = obs[i].copy()
            first, reset_info = self._pool.reset(ids)
            obs = np.array(obs, copy=True)
            obs[np.asarray(reset_info["env_id"])] = first
            infos = {"final_obs": final_obs, "_final_obs": done}
        return obs, np.asarray(reward, dtype=np.float64), terminated, truncated, infos

    def close_extras(self, **kwargs: Any) -> None:
        self._pool.close()
