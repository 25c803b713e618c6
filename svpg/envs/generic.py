"""Generic (slow) path: any Gymnasium environment as a :class:`~svpg.envs.base.BatchedEnv`.

Wraps ``gym.make_vec(env_id, num_envs, vectorization_mode="sync")`` (or a ``SyncVectorEnv`` of a
factory's environments, or a user's vector env) with same-step autoreset and converts numpy <-> torch
at every step (a host round trip, so this path is for coverage, not speed). With ``vec_env="async"``
the same environments run in parallel groups, one in this process and one per worker process
(:mod:`svpg.envs.parallel`).
Observations are flattened (``Discrete``, ``MultiDiscrete`` and ``MultiBinary`` ones encoded as SB3 does; image ``Box`` and ``Dict``
observations keep their space as ``single_observation_space`` and reach the policies as one flat float
vector laid out by :class:`svpg.core.extractors.ObsLayout`, pixels 0–255); ``Box`` actions are clipped
to the action space before they are applied, as Stable-Baselines3 does; ``Discrete``, ``MultiDiscrete``
and ``MultiBinary`` actions reach the environment as arrays of the space's dtype, (num_envs,) and
(num_envs, n).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import gymnasium as gym
import numpy as np
import torch

from svpg.core.extractors import SUPPORTED_OBSERVATIONS, ObsEncoding, ObsLayout

from .base import BatchedEnv, StepResult
from .envpool_env import EnvPoolVectorEnv
from .parallel import GroupedAsyncVectorEnv, VectorFactory

VEC_ENVS = ("sync", "async", "envpool")
#: the action spaces svpg's policies act in, as errors name them (svpg.rl.policies refuses the others with it)
SUPPORTED_ACTIONS = "Discrete, flat MultiDiscrete, flat MultiBinary or Box"


def supports_actions(space: gym.Space) -> bool:
    """True for the action spaces svpg's policies act in: Discrete, flat MultiDiscrete and MultiBinary, and
    Box of any shape (flattened, as SB3 acts in it)."""
    if isinstance(space, gym.spaces.Discrete):
        return True
    if isinstance(space, gym.spaces.MultiDiscrete):
        return space.nvec.ndim == 1
    if isinstance(space, gym.spaces.Box):
        return len(space.shape) >= 1
    return isinstance(space, gym.spaces.MultiBinary) and len(space.shape) == 1


def env_name(env: gym.Env) -> str:
    """How errors name an environment: its registered id, else its class."""
    spec = getattr(env, "spec", None)
    return spec.id if spec is not None else type(env.unwrapped).__name__


def factory_name(factory) -> str:
    """How errors name an env factory or vector env before it has built an environment: its
    ``env_name`` attribute if it has one, else its class (a vector env) or its qualified name."""
    if isinstance(factory, gym.vector.VectorEnv):
        return type(factory.unwrapped).__name__
    return getattr(factory, "env_name", None) or getattr(factory, "__qualname__", None) or type(factory).__name__


class CheckObservations(gym.Wrapper):
    """A one-line ``ValueError`` naming the environment when ``reset`` or ``step`` returns an
    observation that does not fit its ``Box``, ``Discrete``, ``MultiDiscrete``, ``MultiBinary`` or ``Dict``
    observation space: another shape, a non-numeric dtype (the discrete spaces need integers in their
    range), a ``Dict`` with other keys.
    Numeric dtypes that differ from the space's are converted, as ``SyncVectorEnv`` converts them."""

    def __init__(self, env: gym.Env, name: str):
        super().__init__(env)
        self.name = name
        space = env.observation_space
        self._keys = list(space.spaces) if isinstance(space, gym.spaces.Dict) else None
        self._parts = (
            {k: CheckObservations._Part(sub) for k, sub in space.spaces.items()}
            if isinstance(space, gym.spaces.Dict)
            else {}
        )
        self._whole = None if self._keys is not None else CheckObservations._Part(space)

    class _Part:
        """What one observation (or one Dict key) needs: its space, shape and dtype kinds."""

        def __init__(self, space: gym.Space):
            self.space = space
            self.discrete = isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary))
            self.shape = () if isinstance(space, gym.spaces.Discrete) else space.shape
            self.kinds = "biu" if self.discrete else "biuf"

    def _check_dict(self, obs, call: str):
        if not isinstance(obs, dict):
            raise ValueError(
                f"{self.name}: {call} returned a {type(obs).__name__}, its observation_space is a Dict with keys "
                f"{self._keys}"
            )
        if set(obs) != set(self._parts):
            raise ValueError(
                f"{self.name}: {call} returned an observation with keys {sorted(obs)}, its Dict observation_space "
                f"has keys {self._keys} (the keys must not change between steps)"
            )
        for key, part in self._parts.items():
            arr = np.asarray(obs[key])
            if arr.dtype.kind not in part.kinds or arr.shape != part.shape:
                what = f"dtype {arr.dtype}" if arr.dtype.kind not in part.kinds else f"shape {arr.shape}"
                raise ValueError(
                    f"{self.name}: {call} returned {what} for the Dict key {key!r}, its space {part.space} "
                    f"has shape {part.shape}"
                )
        return obs

    def _check(self, obs, call: str):
        if self._keys is not None:
            return self._check_dict(obs, call)
        whole = cast(CheckObservations._Part, self._whole)
        arr = np.asarray(obs) if not isinstance(obs, (dict, tuple)) else np.empty((), object)
        if arr.dtype.kind not in whole.kinds:
            what = f"dtype {arr.dtype}" if arr.dtype != object else f"a {type(obs).__name__}"
            need = "integers" if whole.discrete else "numbers"
            raise ValueError(
                f"{self.name}: {call} returned an observation of {what}, its observation_space "
                f"{self.observation_space} needs {need}"
            )
        if arr.shape != whole.shape:
            raise ValueError(
                f"{self.name}: {call} returned an observation of shape {arr.shape}, its observation_space "
                f"{self.observation_space} has shape {whole.shape}"
            )
        if whole.discrete and not self.observation_space.contains(obs):
            raise ValueError(f"{self.name}: {call} returned the observation {obs}, outside {self.observation_space}")
        return obs

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return self._check(obs, "reset()"), info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._check(obs, "step()"), reward, terminated, truncated, info


class GymVectorEnv(BatchedEnv):
    """``num_envs`` copies of a Gymnasium environment in a ``SyncVectorEnv`` (or in parallel groups,
    ``vec_env="async"``), torch in and out.

    :param env_id: a registered Gymnasium id (also ``module:Id``), or a zero-argument callable that
        returns a new ``gym.Env`` (each of the ``num_envs`` environments is one call), or a
        ``gym.vector.VectorEnv`` with ``num_envs`` environments and same-step autoreset.
    :param num_envs: number of environments (>= 1).
    :param max_episode_steps: time limit override (default: the id's registered limit; ``None`` if it
        has none).
    :param vec_env: ``"sync"`` steps the environments one after the other in this process;
        ``"async"`` in ``n_workers`` consecutive groups stepped in parallel, the first by this process
        and each other one by a worker process (:class:`~svpg.envs.parallel.GroupedAsyncVectorEnv`):
        same seeds, same results bit for bit. Ids and factories only (a vector env steps as it was
        built). ``"envpool"``: EnvPool's own implementation of the id, in ``n_workers`` threads
        (:mod:`svpg.envs.envpool_env`; ids only).
    :param n_workers: parallel groups of ``"async"``, this process's included (at most ``num_envs``;
        1: no worker process), threads of ``"envpool"`` (default: one per core).
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
        vec_env: str = "sync",
        n_workers: int | None = None,
        **env_kwargs,
    ):
        super().__init__(num_envs, device=device, dtype=dtype, max_episode_steps=max_episode_steps, seed=seed)
        self._vec_env_kind = vec_env
        if vec_env not in VEC_ENVS:
            raise ValueError(f"vec_env must be one of {VEC_ENVS}, got {vec_env!r}")
        if n_workers is not None and (not isinstance(n_workers, int) or n_workers < 0):
            raise ValueError(
                f"n_workers must be a positive number of parallel groups or threads (0 or None: one per core), "
                f"got {n_workers!r}"
            )
        same_step = gym.vector.AutoresetMode.SAME_STEP
        make_vector: VectorFactory
        self._factory: Callable | None = None  # a user's env factory
        self._names: list[str] = []  # the names of the factory's environments built in this process
        if isinstance(env_id, gym.vector.VectorEnv):
            self.env_id = type(env_id.unwrapped).__name__
            if vec_env != "sync":
                what = "an env id or a factory" if vec_env == "async" else "an env id"
                raise ValueError(f"vec_env={vec_env!r} needs {what}: {self.env_id} is a vector env already")
            if env_id.num_envs != self.num_envs:
                raise ValueError(f"the vector env has {env_id.num_envs} environments, {self.num_envs} are needed")
            if env_id.metadata.get("autoreset_mode") != same_step:
                raise ValueError(
                    "the vector env must reset on the same step (create it with vector_kwargs="
                    "{'autoreset_mode': gym.vector.AutoresetMode.SAME_STEP}), or pass its id or a factory"
                )
            self.vec_env: gym.vector.VectorEnv = env_id
        elif callable(env_id):
            if vec_env == "envpool":
                raise ValueError(
                    f"vec_env='envpool' runs EnvPool's own tasks: pass an id that EnvPool knows, not "
                    f"{factory_name(env_id)} (or use vec_env='async' for your own env)"
                )
            self._factory = factory = env_id
            self.env_id = factory_name(factory)
            steps, names = max_episode_steps, self._names

            def make() -> gym.Env:
                env = factory()
                if not isinstance(env, gym.Env):
                    raise ValueError(
                        f"the env factory {factory_name(factory)} returned a {type(env).__name__}, not a gymnasium.Env"
                    )
                names.append(env_name(env))
                env = CheckObservations(env, names[0])
                return gym.wrappers.TimeLimit(env, int(steps)) if steps else env

            def make_vector(k: int) -> gym.vector.VectorEnv:
                return gym.vector.SyncVectorEnv([make] * k, autoreset_mode=same_step)
        else:
            name = self.env_id = env_id
            if max_episode_steps is not None:
                env_kwargs["max_episode_steps"] = int(max_episode_steps)

            def make_vector(k: int) -> gym.vector.VectorEnv:
                return gym.make_vec(
                    name,
                    num_envs=k,
                    vectorization_mode="sync",
                    vector_kwargs={"autoreset_mode": same_step},
                    wrappers=[lambda env: CheckObservations(env, name)],
                    **env_kwargs,
                )

            if self.max_episode_steps is None:
                self.max_episode_steps = gym.spec(env_id.split(":")[-1]).max_episode_steps
        if isinstance(env_id, gym.vector.VectorEnv):
            self._set_spaces(env_id.single_observation_space, env_id.single_action_space)
        elif vec_env == "envpool":
            kwargs = {k: v for k, v in env_kwargs.items() if k != "max_episode_steps"}
            self.vec_env = EnvPoolVectorEnv(
                env_id,
                self.num_envs,
                num_threads=n_workers,
                max_episode_steps=self.max_episode_steps,
                env_kwargs=kwargs,
            )
            self._set_spaces(self.vec_env.single_observation_space, self.vec_env.single_action_space)
        elif vec_env == "async":  # the spaces are checked before any worker starts
            self.vec_env = GroupedAsyncVectorEnv(make_vector, self.num_envs, n_workers, check_spaces=self._set_spaces)
        else:
            self.vec_env = make_vector(self.num_envs)
            try:
                self._set_spaces(self.vec_env.single_observation_space, self.vec_env.single_action_space)
            except ValueError:
                self.vec_env.close()
                raise
        self._seed = seed
        self._started = False

    def _set_spaces(self, obs_space: gym.Space, act_space: gym.Space) -> None:
        """This batch's spaces from one environment's, or a one-line ValueError naming the environment."""
        if self._factory is not None:
            self.env_id = self._names[0]  # the environment's id or class, known once one is built
        self._layout = ObsLayout.from_space(obs_space, self.env_id)
        if self._layout is not None and self._layout.is_dict and self._vec_env_kind != "sync":
            raise ValueError(
                f"{self.env_id}: vec_env={self._vec_env_kind!r} steps array observations; Dict observations run "
                f"with vec_env='sync'"
            )
        self.obs_encoding = ObsEncoding.from_space(obs_space, self.env_id) if self._layout is None else None
        self._original_observation_space = obs_space if self.obs_encoding is not None else None
        if self._layout is not None:  # image or Dict: the policies read the space's own layout
            self.single_observation_space = obs_space  # type: ignore[assignment]
        elif self.obs_encoding is not None and self.obs_encoding.kind != "box":  # one-hots and 0/1 floats
            self.single_observation_space = gym.spaces.Box(0.0, 1.0, (self.obs_encoding.size,), np.float32)
        elif isinstance(obs_space, gym.spaces.Box):  # flat, or flattened with its bounds
            self.single_observation_space = gym.spaces.Box(
                obs_space.low.reshape(-1).astype(np.float32),
                obs_space.high.reshape(-1).astype(np.float32),
                dtype=np.float32,
            )
        else:
            raise ValueError(f"{self.env_id}: svpg reads {SUPPORTED_OBSERVATIONS} observation spaces, got {obs_space}")
        if not supports_actions(act_space):
            raise ValueError(f"{self.env_id}: svpg policies support {SUPPORTED_ACTIONS} action spaces, got {act_space}")
        self.single_action_space = act_space

    @property
    def obs_dim(self) -> int:
        """Length of one flat observation (an image's pixels, a Dict's keys one after another)."""
        return self._layout.size if self._layout is not None else int(self.single_observation_space.shape[0])

    def _to_torch(self, obs: np.ndarray) -> torch.Tensor:
        if self._layout is not None:
            flat, _ = self._layout.flatten(obs, batched=True)
            return torch.as_tensor(flat, device=self.device).to(self.dtype)
        if self.obs_encoding is not None:
            obs = self.obs_encoding.encode(obs)
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
        self.raw_obs = self.raw_final_obs = obs
        return self._to_torch(obs)

    def step(self, actions: torch.Tensor) -> StepResult:
        if not self._started:
            raise RuntimeError(f"{type(self).__name__}: call reset() before step()")
        space = self.single_action_space
        acts = actions.detach().cpu().numpy()
        if isinstance(space, gym.spaces.Discrete):
            acts = acts.reshape(self.num_envs).astype(space.dtype)
        elif isinstance(space, (gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)):
            acts = acts.reshape(self.num_envs, *space.shape).astype(space.dtype)
        else:
            box = cast(gym.spaces.Box, space)
            acts = np.clip(acts.reshape(self.num_envs, *box.shape), box.low, box.high).astype(box.dtype)
        obs, reward, terminated, truncated, infos = self.vec_env.step(acts)
        final_obs = obs
        if "final_obs" in infos:
            if isinstance(obs, dict):  # a Dict space: one array per key
                final_obs = {k: np.array(v, copy=True) for k, v in obs.items()}
                for i in np.flatnonzero(infos["_final_obs"]):
                    for k in final_obs:
                        final_obs[k][i] = infos["final_obs"][i][k]
            else:
                final_obs = np.array(obs, copy=True)
                for i in np.flatnonzero(infos["_final_obs"]):
                    final_obs[i] = infos["final_obs"][i]
        self.raw_obs, self.raw_final_obs = obs, final_obs
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
