"""Batched control tasks, registered with Gymnasium on import.

Fast path (batched, no host syncs in ``step``; torch tensors in and out, computed with numpy on CPU
and with torch on other devices, see :class:`svpg.envs.base.BatchedKernelEnv`)::

    svpg/CartPole-v1          Gymnasium's CartPole-v1, ported (plain ``CartPole-v1`` maps here too)
    svpg/CartPoleBalance-v0   rllab's cart-pole balancing task
    svpg/CartPoleSwingUp-v0   rllab's cart-pole swing-up task
    svpg/DoublePendulum-v0    rllab's double pendulum (torque at the elbow)

Small tasks of other spaces, single Gymnasium environments on the generic path (:mod:`svpg.envs.spaces_tasks`)::

    svpg/PointReach-v0        a 2-D point reaching a random goal: a goal-conditioned Dict observation
    svpg/Knobs-v0             three knobs turned to targets: MultiDiscrete([3, 3, 3]) actions

and MinAtar's ids (``MinAtar/Breakout-v1`` …) when MinAtar is installed.

Each task's equations are one kernel over state columns (:mod:`svpg.envs.xp`), which also drives the
single ``gym.make`` environments on Python floats (:mod:`svpg.envs.gym_api`). Any other Gymnasium id runs
on the slower generic path (:class:`svpg.envs.generic.GymVectorEnv`).

>>> import torch
>>> from svpg import envs
>>> env = envs.make_batched("svpg/CartPole-v1", 160, seed=0)
>>> obs = env.reset()
>>> out = env.step(torch.zeros(160, dtype=torch.int64))
"""

from __future__ import annotations

import difflib

import gymnasium as gym
import torch

from .base import BatchedEnv, BatchedKernelEnv, StepResult, check_num_envs
from .cartpole import CartPole
from .double_pendulum import DoublePendulum
from .generic import VEC_ENVS, GymVectorEnv, factory_name
from .gym_api import register_all
from .parallel import GroupedAsyncVectorEnv
from .rllab_cartpole import CartPoleBalance, CartPoleSwingUp
from .spaces_tasks import Knobs, PointReach, register_spaces_tasks

__all__ = [
    "BatchedEnv",
    "StepResult",
    "BatchedKernelEnv",
    "GymVectorEnv",
    "GroupedAsyncVectorEnv",
    "VEC_ENVS",
    "CartPole",
    "CartPoleBalance",
    "CartPoleSwingUp",
    "DoublePendulum",
    "PointReach",
    "Knobs",
    "make_batched",
    "is_fast",
    "canonical_id",
    "FAST_ENVS",
]

#: Fast-path task classes by Gymnasium id.
FAST_ENVS: dict[str, type[BatchedKernelEnv]] = {
    "svpg/CartPole-v1": CartPole,
    "svpg/CartPoleBalance-v0": CartPoleBalance,
    "svpg/CartPoleSwingUp-v0": CartPoleSwingUp,
    "svpg/DoublePendulum-v0": DoublePendulum,
}
#: Other ids served by a fast-path class (a faithful port of the original).
_ALIASES = {"CartPole-v1": "svpg/CartPole-v1"}


def canonical_id(env_id: str) -> str:
    """The id that actually runs: ``CartPole-v1`` → ``svpg/CartPole-v1`` (the faithful fast port)."""
    return _ALIASES.get(env_id, env_id)


def is_fast(env_id: str) -> bool:
    """True if ``env_id`` runs on the batched fast path."""
    return env_id in FAST_ENVS or env_id in _ALIASES


def make_batched(
    env_id,
    num_envs: int,
    *,
    device: str | torch.device = "cpu",
    seed: int | None = None,
    max_episode_steps: int | None = None,
    dtype: torch.dtype = torch.float32,
    env_kwargs: dict | None = None,
    vec_env: str = "sync",
    n_workers: int | None = None,
) -> BatchedEnv:
    """Create ``num_envs`` environments of ``env_id`` as one :class:`BatchedEnv`.

    :param env_id: a fast-path id (see :data:`FAST_ENVS`), any registered Gymnasium id (also in
        Gymnasium's ``module:Id`` form, which imports ``module`` first), a zero-argument callable that
        returns a new ``gym.Env``, or a ``gym.vector.VectorEnv`` of ``num_envs`` environments.
    :param num_envs: batch size (>= 1).
    :param device: torch device of states, actions and results.
    :param seed: seed of the reset-state generator; same seed, same reset states.
    :param max_episode_steps: time limit override (default: the task's / the id's own).
    :param dtype: floating dtype of observations and rewards.
    :param env_kwargs: keyword arguments of ``gym.make`` (Gymnasium ids only).
    :param vec_env: how the generic path steps its environments: ``"sync"``, one after the other in
        this process, or ``"async"``, in ``n_workers`` consecutive groups stepped in parallel, the first
        by this process and each other one by a worker process (Gymnasium's ``AsyncVectorEnv``); the
        same seeds give the same results bit for bit. ``"envpool"``: EnvPool's own implementation of
        the id in ``n_workers`` threads (same seeds, same results, but not Gymnasium's;
        ``pip install "svpg[envpool]"``). The fast-path tasks are one batch in this process and ignore
        it; a vector env needs ``"sync"``.
    :param n_workers: parallel groups of ``"async"``, this process's included (at most ``num_envs``;
        1: no worker process), threads of ``"envpool"`` (None or 0: one per core).
    :raises ValueError: for an unknown id (with suggestions), an env whose dependency is missing (naming
        what to install) or a bad ``num_envs``, ``vec_env`` or ``n_workers``.
    """
    num_envs = check_num_envs(num_envs)
    if vec_env not in VEC_ENVS:
        raise ValueError(f"vec_env must be one of {VEC_ENVS}, got {vec_env!r}")
    env_kwargs = dict(env_kwargs or {})

    def generic(name: str) -> GymVectorEnv:  # the Gymnasium path, its errors naming the env
        return _guarded(
            name,
            lambda: GymVectorEnv(
                env_id,
                num_envs,
                device=device,
                dtype=dtype,
                max_episode_steps=max_episode_steps,
                seed=seed,
                vec_env=vec_env,
                n_workers=n_workers,
                **env_kwargs,
            ),
        )

    if not isinstance(env_id, str):
        if env_kwargs:
            raise ValueError("env_kwargs apply to environment ids only: pass them to your factory instead")
        return generic(factory_name(env_id))
    env_id = _ALIASES.get(env_id, env_id)
    if env_id in FAST_ENVS:
        if env_kwargs:
            raise ValueError(f"{env_id} takes no env_kwargs (got {sorted(env_kwargs)})")
        return FAST_ENVS[env_id](num_envs, device=device, dtype=dtype, max_episode_steps=max_episode_steps, seed=seed)
    check_registered(env_id)
    return generic(env_id)


def _guarded(env_id, make):
    """``make()``, with a missing dependency or a bad keyword argument reported in one line."""
    try:
        return make()
    except gym.error.DependencyNotInstalled as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"{env_id} needs a package that is not installed: {first}") from None
    except TypeError as e:
        if "unexpected keyword argument" in str(e) or "got an unexpected" in str(e):
            raise ValueError(f"{env_id}: {e} (check env_kwargs / --env-kwargs)") from None
        raise


def check_registered(env_id: str) -> None:
    """A one-line ValueError (with suggestions) unless ``env_id`` names a fast-path task or a
    registered Gymnasium id; ``module:Id`` imports ``module`` first, as ``gym.make`` does."""
    if env_id in FAST_ENVS or env_id in _ALIASES:
        return
    module, _, name = env_id.rpartition(":")
    if module:
        import importlib

        try:
            importlib.import_module(module)
        except ImportError as e:
            raise ValueError(
                f"environment {env_id!r}: cannot import {module!r} ({e}); install it or fix the module "
                f"name (Gymnasium's form is module:Id)"
            ) from None
    try:
        gym.spec(name)
        return
    except (gym.error.Error, ModuleNotFoundError, ImportError):
        pass
    known = sorted(set(gym.registry) | set(FAST_ENVS) | set(_ALIASES))
    close = difflib.get_close_matches(name, known, n=5, cutoff=0.5)
    hint = f" Did you mean one of {close}?" if close else ""
    raise ValueError(
        f"Environment id {env_id!r} is not registered with Gymnasium (nor a fast-path task).{hint}"
        f" Fast-path tasks: {sorted(FAST_ENVS)}."
    )


_check_registered = check_registered  # the name older callers use


register_all()
register_spaces_tasks()
