"""Generic (slow) path: any Gymnasium environment as a :class:`~svpg.envs.base.BatchedEnv`.

Wraps ``gym.make_vec(env_id, num_envs, vectorization_mode="sync")`` (or a ``SyncVectorEnv`` of a
factory's environments, or a user's vector env) with same-step autoreset and converts numpy <-> torch
at every step (a host round trip, so this path is for coverage, not speed).
Observations are flattened (``Discrete`` observations are one-hot encoded); ``Box`` actions are clipped
to the action space before they are applied, as Stable-Baselines3 does.
"""

from __future__ import annotations

from typing import cast

import gymnasium as gym
import numpy as np
import torch

from .base import BatchedEnv, StepResult


class GymVectorEnv(BatchedEnv):
    """``num_envs`` copies of a Gymnasium environment in a ``SyncVectorEnv``, torch in and out.

    :param env_id: a registered Gymnasium id (also ``module:Id``), or a zero-argument callable that
        returns a new ``gym.Env`` (each of the ``num_envs`` environments is one call), or a
        ``gym.vector.VectorEnv`` with ``num_envs`` environments and same-step autoreset.
    :param num_envs: number of environments (>= 1).
    :param max_episode_steps: time limit override (default: the id's registered limit; ``None`` if it
        has none).
    :param env_kwargs: extra keyword arguments for ``gym.make`` (ids only).
    """

    def __init__(
        self,
        env_id: str,
        num_envs: int,
        *,
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float32,
        max_episode_steps: int | None = None,
        seed: int | None = None,
        **env_kwargs,
    ):
        super().__init__(num_envs, device=device, dtype=dtype, max_episode_steps=max_episode_steps, seed=seed)
        same_step = gym.vector.AutoresetMode.SAME_STEP
        if isinstance(env_id, gym.vector.VectorEnv):
            self.env_id = type(env_id.unwrapped).__name__
            if env_id.num_envs != self.num_envs:
                raise ValueError(f"the vector env has {env_id.num_envs} environments, {self.num_envs} are needed")
            if env_id.metadata.get("autoreset_mode") != same_step:
                raise ValueError(
                    "the vector env must reset on the same step (create it with vector_kwargs="
                    "{'autoreset_mode': gym.vector.AutoresetMode.SAME_STEP}), or pass its id or a factory"
                )
            self.vec_env: gym.vector.VectorEnv = env_id
        elif callable(env_id):
            self.env_id = getattr(env_id, "__name__", type(env_id).__name__)
            steps = max_episode_steps

            def make() -> gym.Env:
                env = env_id()
                if not isinstance(env, gym.Env):
                    raise ValueError(f"the env factory returned a {type(env).__name__}, not a gymnasium.Env")
                return gym.wrappers.TimeLimit(env, int(steps)) if steps else env

            self.vec_env = gym.vector.SyncVectorEnv([make] * self.num_envs, autoreset_mode=same_step)
        else:
            self.env_id = env_id
            if max_episode_steps is not None:
                env_kwargs["max_episode_steps"] = int(max_episode_steps)
            self.vec_env = gym.make_vec(
                env_id,
                num_envs=self.num_envs,
                vectorization_mode="sync",
                vector_kwargs={"autoreset_mode": same_step},
                **env_kwargs,
            )
            if self.max_episode_steps is None:
                self.max_episode_steps = gym.spec(env_id.split(":")[-1]).max_episode_steps
        self._seed = seed
        obs_space = self.vec_env.single_observation_space
        if isinstance(obs_space, gym.spaces.Discrete):
            self._obs_n: int | None = int(obs_space.n)
            self.single_observation_space = gym.spaces.Box(0.0, 1.0, (self._obs_n,), np.float32)
        elif isinstance(obs_space, gym.spaces.Box):
            self._obs_n = None
            self.single_observation_space = gym.spaces.Box(
                obs_space.low.reshape(-1).astype(np.float32),
                obs_space.high.reshape(-1).astype(np.float32),
                dtype=np.float32,
            )
        else:
            raise ValueError(f"{env_id}: only Box and Discrete observation spaces are supported, got {obs_space}")
        act_space = self.vec_env.single_action_space
        if not isinstance(act_space, (gym.spaces.Discrete, gym.spaces.Box)):
            raise ValueError(f"{env_id}: only Discrete and Box action spaces are supported, got {act_space}")
        self.single_action_space = act_space
        self._started = False

    def _to_torch(self, obs: np.ndarray) -> torch.Tensor:
        if self._obs_n is not None:
            obs = np.eye(self._obs_n, dtype=np.float32)[np.asarray(obs, dtype=np.int64)]
        obs = np.asarray(obs).reshape(self.num_envs, -1)
        return torch.as_tensor(obs, device=self.device).to(self.dtype)

    def reset(self, seed: int | list[int] | None = None) -> torch.Tensor:
        if seed is None and not self._started:
            seed = self._seed
        if isinstance(seed, (list, tuple)):  # G groups, each seeded as a lone batch: env i of a group gets s + i
            if not seed or self.num_envs % len(seed):
                raise ValueError(f"{self.num_envs} environments cannot form {len(seed)} equal seed groups")
            per_group = self.num_envs // len(seed)
            seed = [int(s) + i for s in seed for i in range(per_group)]
        self._started = True
        obs, _ = self.vec_env.reset(seed=seed)  # type: ignore[arg-type]  # a list: one seed per env
        return self._to_torch(obs)

    def step(self, actions: torch.Tensor) -> StepResult:
        if not self._started:
            raise RuntimeError(f"{type(self).__name__}: call reset() before step()")
        space = self.single_action_space
        acts = actions.detach().cpu().numpy()
        if isinstance(space, gym.spaces.Discrete):
            acts = acts.reshape(self.num_envs).astype(space.dtype)
        else:
            box = cast(gym.spaces.Box, space)
            acts = np.clip(acts.reshape(self.num_envs, *box.shape), box.low, box.high).astype(box.dtype)
        obs, reward, terminated, truncated, infos = self.vec_env.step(acts)
        final_obs = obs
        if "final_obs" in infos:
            final_obs = np.array(obs, copy=True)
            for i in np.flatnonzero(infos["_final_obs"]):
                final_obs[i] = infos["final_obs"][i]
        terminated = torch.as_tensor(np.asarray(terminated, dtype=bool), device=self.device)
        truncated = torch.as_tensor(np.asarray(truncated, dtype=bool), device=self.device)
        return StepResult(
            self._to_torch(obs),
            torch.as_tensor(np.asarray(reward, dtype=np.float64), device=self.device).to(self.dtype),
            terminated,
            truncated & ~terminated,
            self._to_torch(final_obs),
        )

    def close(self) -> None:
        self.vec_env.close()

    def __repr__(self) -> str:
        return f"GymVectorEnv({self.env_id!r}, num_envs={self.num_envs})"
