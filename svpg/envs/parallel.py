"""Environments stepped in worker processes: Gymnasium's ``AsyncVectorEnv`` over groups of environments.

:class:`GroupedAsyncVectorEnv` runs ``num_envs`` environments in ``n_workers`` processes. Each worker
holds one consecutive group of them in a ``SyncVectorEnv`` (same-step autoreset) and steps its group
in turn; the groups run in parallel. To the caller it is one flat ``VectorEnv`` that behaves exactly as
``SyncVectorEnv`` over the same ``num_envs`` environments: environment ``i`` gets the same seed, the
same actions and returns the same observations, rewards and ``final_obs`` (so a run gives the same
results bit for bit with either). One process per group rather than per environment keeps the number
of pipe round trips per step at ``n_workers``, which is what lets a few cores pay off.

Each group is one ``gym.Env`` (:class:`EnvGroup`) in Gymnasium's ``AsyncVectorEnv`` with its default
worker and autoreset disabled there (the group resets its own environments), observations through
shared memory. When ``n_workers`` does not divide ``num_envs`` the smaller groups are padded to the
largest one's size with rows that are never stepped.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

#: builds a same-step-autoreset ``VectorEnv`` of the given number of environments
VectorFactory = Callable[[int], gym.vector.VectorEnv]


def default_workers(num_envs: int) -> int:
    """One worker per core, at most one per environment."""
    return max(1, min(num_envs, os.cpu_count() or 1))


def group_sizes(num_envs: int, n_workers: int) -> list[int]:
    """Consecutive groups of environments, one per worker, as equal as can be (the larger first)."""
    base, extra = divmod(num_envs, n_workers)
    return [base + (w < extra) for w in range(n_workers)]


def _quiet_value_errors(call: Callable, *args, **kwargs):
    """``call(...)`` of the ``AsyncVectorEnv``; a ``ValueError`` in a worker (bad input, e.g. a wrong
    observation, with a one-line message naming the environment) is re-raised without the worker's
    traceback that Gymnasium logs as a warning; any other error keeps it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return call(*args, **kwargs)
        except ValueError:
            caught.clear()
            raise
        finally:
            for w in caught:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


class EnvGroup(gym.Env):
    """``size`` environments of a worker as one ``gym.Env`` whose spaces are the group's batched spaces.

    Its ``SyncVectorEnv`` is built at the first ``reset`` (in the worker process: the copy that
    ``AsyncVectorEnv`` builds in the parent to read the spaces creates no environment). Results are
    padded to ``width`` rows; ``info`` holds only ``final_obs``, the group's last observations
    before the same-step resets (equal to the observations where no episode ended).
    """

    def __init__(
        self,
        make_vector: VectorFactory,
        size: int,
        width: int,
        single_observation_space: gym.Space,
        single_action_space: gym.Space,
    ):
        self.make_vector, self.size, self.width = make_vector, size, width
        self.observation_space = batch_space(single_observation_space, width)
        self.action_space = batch_space(single_action_space, width)
        self._vec: gym.vector.VectorEnv | None = None

    def _pad(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        if self.size == self.width:
            return x
        out = np.zeros((self.width, *x.shape[1:]), dtype=x.dtype)
        out[: self.size] = x
        return out

    def reset(self, *, seed: list[int | None] | None = None, options: dict | None = None):  # type: ignore[override]
        if self._vec is None:
            self._vec = self.make_vector(self.size)
        obs, _ = self._vec.reset(seed=seed, options=options)  # type: ignore[arg-type]  # one seed per env
        return self._pad(obs), {}

    def step(self, action):
        if self._vec is None:
            raise RuntimeError("call reset() before step()")
        obs, reward, terminated, truncated, infos = self._vec.step(action[: self.size])
        info: dict[str, Any] = {}
        if "final_obs" in infos:
            final = np.array(obs, copy=True)
            for i in np.flatnonzero(infos["_final_obs"]):
                final[i] = infos["final_obs"][i]
            info["final_obs"] = self._pad(final)
        return self._pad(obs), self._pad(reward), self._pad(terminated), self._pad(truncated), info

    def close(self) -> None:
        if self._vec is not None:
            self._vec.close()


class GroupedAsyncVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` environments in ``n_workers`` processes, one consecutive group each.

    :param make_vector: ``make_vector(k)`` builds a same-step-autoreset ``VectorEnv`` of ``k``
        environments (a ``SyncVectorEnv``); it is called once per worker, in the worker (and once with
        ``k = 1`` here, to read the spaces). With the ``fork`` start method (Linux's default) it need
        not be picklable.
    :param num_envs: number of environments.
    :param n_workers: worker processes (at most ``num_envs``; default: one per core).
    :param context: ``multiprocessing`` start method (default: the platform's, as Gymnasium's).
    :param check_spaces: called with the observation and action space of one environment before any
        worker starts (to refuse spaces early).
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(
        self,
        make_vector: VectorFactory,
        num_envs: int,
        n_workers: int | None = None,
        *,
        context: str | None = None,
        check_spaces: Callable[[gym.Space, gym.Space], None] | None = None,
    ):
        n_workers = default_workers(num_envs) if not n_workers else int(n_workers)
        if not 1 <= n_workers <= num_envs:
            raise ValueError(
                f"n_workers must be between 1 and the number of environments ({num_envs}), got {n_workers}"
            )
        probe = make_vector(1)
        try:
            self.single_observation_space = probe.single_observation_space
            self.single_action_space = probe.single_action_space
            self.metadata = {**probe.metadata, "autoreset_mode": AutoresetMode.SAME_STEP}
            self.render_mode = probe.render_mode
            self.spec = probe.spec
            if check_spaces is not None:
                check_spaces(self.single_observation_space, self.single_action_space)
        finally:
            probe.close()
        self.num_envs = num_envs
        self.n_workers = n_workers
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.sizes = group_sizes(num_envs, n_workers)
        self.width = width = self.sizes[0]
        self._starts = [sum(self.sizes[:w]) for w in range(n_workers)]  # first environment of each group
        # row of environment i in the (n_workers * width) padded batch
        self._rows = np.array([w * width + j for w, k in enumerate(self.sizes) for j in range(k)])
        self._padded = len(self._rows) != n_workers * width
        obs_space, act_space = self.single_observation_space, self.single_action_space

        def group_factory(size: int) -> Callable[[], EnvGroup]:
            return lambda: EnvGroup(make_vector, size, width, obs_space, act_space)

        self.workers = gym.vector.AsyncVectorEnv(
            [group_factory(k) for k in self.sizes],
            shared_memory=True,
            copy=False,
            context=context,
            autoreset_mode=AutoresetMode.DISABLED,
        )

    def _flat(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x).reshape(self.n_workers * self.width, *np.shape(x)[2:])
        return x[self._rows] if self._padded else x.copy()

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict | None = None):
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, (int, np.integer)):
            seeds = [int(seed) + i for i in range(self.num_envs)]  # as SyncVectorEnv seeds its environments
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"{len(seeds)} seeds for {self.num_envs} environments")
        groups = [seeds[a : a + k] for a, k in zip(self._starts, self.sizes, strict=True)]
        obs, _ = _quiet_value_errors(self.workers.reset, seed=groups, options=options)  # one seed list per group
        return self._flat(obs), {}

    def step(self, actions):
        actions = np.asarray(actions)
        if self._padded:
            padded = np.zeros((self.n_workers * self.width, *actions.shape[1:]), dtype=actions.dtype)
            padded[self._rows] = actions
            actions = padded
        actions = actions.reshape(self.n_workers, self.width, *actions.shape[1:])
        obs, reward, terminated, truncated, infos = _quiet_value_errors(self.workers.step, actions)
        obs = self._flat(obs)
        reward, terminated, truncated = (self._flat(x) for x in (reward, terminated, truncated))
        info: dict[str, Any] = {}
        if "final_obs" in infos:
            final = np.array(obs, copy=True)
            for w in np.flatnonzero(infos["_final_obs"]):
                start, size = self._starts[w], self.sizes[w]
                final[start : start + size] = infos["final_obs"][w][:size]
            done = terminated | truncated
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in np.flatnonzero(done):
                final_obs[i] = final[i]
            info = {"final_obs": final_obs, "_final_obs": done}
        return obs, reward, terminated, truncated, info

    def close_extras(self, **kwargs: Any) -> None:
        self.workers.close(**kwargs)
