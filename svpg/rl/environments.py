"""What a user may pass as an environment, resolved to what the batched rollouts need.

``svpg.SVPG(env)`` takes a registered id (also Gymnasium's ``module:Id`` form), a ``gym.Env``
instance, a zero-argument factory (a function or an ``Env`` subclass) or a ``gym.vector.VectorEnv``.
Ids (with their keyword arguments) are recorded in saved models, so a model trained on one can be
loaded and evaluated without the environment at hand; the others must be passed again to ``load``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np
import torch

#: the prefix of the label recorded for an environment that cannot be rebuilt from its id
CUSTOM_PREFIX = "custom:"


@dataclass
class EnvSource:
    """How to build the training (or evaluation) environments.

    :param env_id: the Gymnasium id, or ``custom:<module>.<Class>`` for an env given as an object.
    :param env_kwargs: ``gym.make`` keyword arguments of the id.
    :param factory: a zero-argument callable returning a new ``gym.Env``, or a ``VectorEnv``; ``None``
        when the id builds them.
    :param time_limit: the object's own time limit (a ``TimeLimit`` wrapper), if it has one.
    """

    env_id: str
    env_kwargs: dict = field(default_factory=dict)
    factory: Callable | gym.vector.VectorEnv | None = None
    time_limit: int | None = None

    @property
    def target(self):
        """What :func:`svpg.envs.make_batched` takes."""
        return self.factory if self.factory is not None else self.env_id

    @property
    def num_envs(self) -> int | None:
        """The environments of a user's vector env (which fix the sampler's geometry)."""
        return self.factory.num_envs if isinstance(self.factory, gym.vector.VectorEnv) else None


class CopiesOf:
    """A zero-argument factory of deep copies of a user's env instance; errors name the instance's
    registered id or class (``env_name``), not this factory."""

    def __init__(self, template: gym.Env):
        self.template = template
        spec = template.spec
        self.env_name = spec.id if spec is not None else type(template.unwrapped).__name__

    def __call__(self) -> gym.Env:
        return copy.deepcopy(self.template)

    def __repr__(self) -> str:
        return f"CopiesOf({self.env_name})"


def is_custom(env_id: str) -> bool:
    return env_id.startswith(CUSTOM_PREFIX)


def _label(obj) -> str:
    cls = obj if isinstance(obj, type) else type(getattr(obj, "unwrapped", obj))
    if not isinstance(obj, type) and callable(obj) and not isinstance(obj, (gym.Env, gym.vector.VectorEnv)):
        cls = obj
    return f"{CUSTOM_PREFIX}{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', type(cls).__name__)}"


def _time_limit(env: gym.Env) -> int | None:
    while isinstance(env, gym.Wrapper):
        if isinstance(env, gym.wrappers.TimeLimit):
            return int(env._max_episode_steps)
        env = env.env
    return None


def _json_kwargs(kwargs: dict) -> dict | None:
    kwargs = {k: v for k, v in kwargs.items() if k != "render_mode"}
    try:
        json.dumps(kwargs)
    except TypeError:
        return None
    return kwargs


def _sb3_vec_env_message(env) -> str:
    """What to pass instead of Stable-Baselines3's VecEnv (``make_vec_env``, ``VecNormalize``, …)."""
    try:
        env_id = env.get_attr("spec", [0])[0].id
    except Exception:  # a VecEnv of unregistered envs, or one whose workers are gone
        env_id = None
    wrappers, inner = [], env
    while hasattr(inner, "venv"):
        wrappers.append(type(inner).__name__)
        inner = inner.venv
    normalize = (
        ", and normalize_obs=True / normalize_reward=True instead of VecNormalize" if "VecNormalize" in wrappers else ""
    )
    what = f"its id {env_id!r}" if env_id else "the env's id, one instance or a zero-argument factory"
    return (
        f"env is Stable-Baselines3's {type(env).__name__}: svpg builds every particle's environments itself; pass "
        f"{what} (vec_env='async' steps them in worker processes, as SubprocVecEnv){normalize}"
    )


def resolve_env(env, env_kwargs: dict | None = None) -> EnvSource:
    """An :class:`EnvSource` for anything ``svpg.SVPG`` accepts as ``env``; a one-line ValueError for
    anything else."""
    if env_kwargs is not None and not isinstance(env_kwargs, dict):
        raise ValueError(f"env_kwargs must be a dict of gym.make keyword arguments, got {type(env_kwargs).__name__}")
    env_kwargs = dict(env_kwargs or {})
    if isinstance(env, str):
        from svpg import envs

        envs.check_registered(env)
        return EnvSource(env, env_kwargs)
    if env_kwargs:
        raise ValueError("env_kwargs apply to environment ids only; configure the env object or factory itself")
    if isinstance(env, gym.vector.VectorEnv):
        return EnvSource(_label(env), factory=env)
    if isinstance(env, gym.Env):
        spec = env.spec
        if spec is not None and spec.id in gym.registry and spec.entry_point is not None:
            kwargs = _json_kwargs(dict(spec.kwargs or {}))
            if kwargs is not None and not spec.additional_wrappers:
                return EnvSource(spec.id, kwargs)  # rebuilt from its id: recorded, reloadable
        return EnvSource(_label(env), factory=CopiesOf(env), time_limit=_time_limit(env))
    if type(env).__module__.startswith("stable_baselines3") and hasattr(env, "num_envs"):
        raise ValueError(_sb3_vec_env_message(env))
    if callable(env):
        return EnvSource(_label(env), factory=env)
    raise ValueError(
        f"env must be an environment id, a gymnasium.Env, a zero-argument factory or a gymnasium.vector.VectorEnv, "
        f"got a {type(env).__name__}"
    )


def sb3_vec_env(batched):
    """``SVPG.get_env()``: svpg's batched training environments as Stable-Baselines3's ``VecEnv``, so SB3's
    loops run on them: ``reset()`` and ``step(actions)`` take and give numpy arrays, SB3's ``(obs, rewards,
    dones, infos)`` with an ended episode's true last observation in its info's ``terminal_observation``
    (and ``TimeLimit.truncated``), as ``DummyVecEnv``. Observations are the environments' own (a Discrete's
    integers, images, dicts), which ``predict`` reads."""
    from stable_baselines3.common.vec_env import VecEnv

    def numpy(tensor, raw):
        if raw is None:
            return tensor.detach().cpu().numpy()
        # copies, as DummyVecEnv's: a Gymnasium vector env writes the next step into the same arrays
        return {key: np.array(value) for key, value in raw.items()} if isinstance(raw, dict) else np.array(raw)

    def row(obs, i: int):
        return {key: value[i] for key, value in obs.items()} if isinstance(obs, dict) else obs[i]

    class BatchedVecEnv(VecEnv):
        def __init__(self) -> None:
            self.batched = batched
            super().__init__(batched.num_envs, batched.original_observation_space, batched.single_action_space)

        def reset(self):
            seeds = [int(s) for s in self._seeds] if all(s is not None for s in self._seeds) else None
            obs = batched.reset(seed=seeds)  # a list of num_envs seeds: one per environment
            self._reset_seeds()
            return numpy(obs, batched.raw_obs)

        def step_async(self, actions) -> None:
            self.actions = torch.as_tensor(np.asarray(actions), device=batched.device)

        def step_wait(self):
            result = batched.step(self.actions)
            final = numpy(result.final_obs, batched.raw_final_obs)
            terminated, truncated = result.terminated.cpu().numpy(), result.truncated.cpu().numpy()
            dones = terminated | truncated
            infos: list[dict] = [{} for _ in range(self.num_envs)]
            for i in np.flatnonzero(dones):
                infos[i] = {"terminal_observation": row(final, i), "TimeLimit.truncated": bool(truncated[i])}
            rewards = result.reward.detach().cpu().numpy().astype(np.float32)
            return numpy(result.obs, batched.raw_obs), rewards, dones, infos

        def close(self) -> None:
            batched.close()

        def _vector(self):
            vector = getattr(batched, "vec_env", None)
            if not isinstance(vector, gym.vector.VectorEnv):
                raise AttributeError(f"{batched!r} steps its environments as one tensor program: no per-env attributes")
            return vector

        def get_attr(self, attr_name: str, indices=None) -> list:
            if attr_name == "render_mode" and not isinstance(getattr(batched, "vec_env", None), gym.vector.VectorEnv):
                return [None] * len(list(self._get_indices(indices)))
            values = list(self._vector().get_attr(attr_name))
            return [values[i] for i in self._get_indices(indices)]

        def set_attr(self, attr_name: str, value, indices=None) -> None:
            values = list(self._vector().get_attr(attr_name))
            for i in self._get_indices(indices):
                values[i] = value
            self._vector().set_attr(attr_name, values)

        def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list:
            values = list(self._vector().call(method_name, *method_args, **method_kwargs))
            return [values[i] for i in self._get_indices(indices)]

        def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
            return [False] * len(list(self._get_indices(indices)))

    return BatchedVecEnv()
