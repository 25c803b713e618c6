"""Environments stepped in parallel: the training process steps one group, worker processes the others.

:class:`GroupedAsyncVectorEnv` splits ``num_envs`` environments into ``n_workers`` consecutive groups
that run in parallel: this process steps the first group itself, ``n_workers - 1`` worker processes
step the others (``n_workers = 1``: no worker process). Each group is a ``SyncVectorEnv`` with
same-step autoreset that steps its environments in turn. To the caller it is one flat ``VectorEnv``
that behaves exactly as ``SyncVectorEnv`` over the same ``num_envs`` environments: environment ``i``
gets the same seed, the same actions and returns the same observations, rewards and ``final_obs`` (so
a run gives the same results bit for bit with either). One process per group rather than per
environment keeps the pipe round trips per step at ``n_workers - 1``, and the training process works
instead of waiting, which is what lets a few cores pay off.

The workers' groups are ``gym.Env`` s (:class:`EnvGroup`) in Gymnasium's ``AsyncVectorEnv`` with
autoreset disabled there (a group resets its own environments) and observations through shared
memory. Its workers wait for the next command by polling their pipe for :data:`WORKER_SPIN_S` before
they block (waking a blocked process costs more than a step of a few environments). When the groups
differ in size the training process gets a smallest one (it also runs the policies) and the workers'
smaller groups are padded to the largest one's size with rows that are never stepped.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.async_vector_env import _async_worker
from gymnasium.vector.utils import batch_space

#: builds a same-step-autoreset ``VectorEnv`` of the given number of environments
VectorFactory = Callable[[int], gym.vector.VectorEnv]


#: how long a worker polls its pipe for the next command before it blocks on it. A blocked process
#: takes hundreds of microseconds to wake on a busy machine, longer than a step of a few MuJoCo
#: environments; within a rollout the next command comes sooner than this (the training process steps
#: its own group and the policies in less), and between rollouts the worker blocks and frees its core.
#: It yields the core between polls, so that on a loaded machine polling costs the other processes
#: little (plain busy polling made stepping slower there than blocking at once). The training process
#: itself never polls: it blocks on the workers once its own group has stepped (polling there was
#: never faster).
WORKER_SPIN_S = 0.002

_yield = getattr(os, "sched_yield", lambda: None)


def default_workers(num_envs: int) -> int:
    """One group per core (this process steps one of them), at most one per environment."""
    return max(1, min(num_envs, os.cpu_count() or 1))


def group_sizes(num_envs: int, n_workers: int) -> list[int]:
    """Consecutive groups of environments, one per parallel group, as equal as can be; the smaller first
    (the first is the training process's, which also runs the policies)."""
    base, extra = divmod(num_envs, n_workers)
    return [base + (w >= n_workers - extra) for w in range(n_workers)]


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


def _spin_then_wait(conn: Connection, seconds: float) -> None:
    """Return once ``conn`` has data: poll it for up to ``seconds`` (yielding the core in between), then block."""
    if seconds > 0 and not conn.poll():
        deadline = time.perf_counter() + seconds
        while not conn.poll() and time.perf_counter() < deadline:
            _yield()
    conn.poll(None)


class _SpinningPipe:
    """A worker's end of the pipe whose ``recv`` polls for :data:`WORKER_SPIN_S` before it blocks."""

    def __init__(self, conn: Connection):
        self._conn = conn

    def recv(self) -> Any:
        _spin_then_wait(self._conn, WORKER_SPIN_S)
        return self._conn.recv()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _spinning_worker(index: int, env_fn: Callable, pipe: Connection, *rest: Any) -> None:
    """Gymnasium's own worker loop, waiting for commands as :class:`_SpinningPipe` does."""
    _async_worker(index, env_fn, _SpinningPipe(pipe), *rest)  # type: ignore[arg-type]


class EnvGroup(gym.Env):
    """``size`` environments of a group as one ``gym.Env`` whose spaces are the group's batched spaces.

    Its ``SyncVectorEnv`` is ``vec`` if given (the training process's own group), else built at the
    first ``reset`` (in the worker process: the copy that ``AsyncVectorEnv`` builds in the parent to
    read the spaces creates no environment). Results are
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
        vec: gym.vector.VectorEnv | None = None,
    ):
        self.make_vector, self.size, self.width = make_vector, size, width
        self.observation_space = batch_space(single_observation_space, width)
        self.action_space = batch_space(single_action_space, width)
        self._vec: gym.vector.VectorEnv | None = vec

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
    """``num_envs`` environments in ``n_workers`` consecutive groups stepped in parallel: the first by
    this process, each other one by a worker process.

    :param make_vector: ``make_vector(k)`` builds a same-step-autoreset ``VectorEnv`` of ``k``
        environments (a ``SyncVectorEnv``); it is called once per group, here for the first and in its
        worker for each other one. With the ``fork`` start method (Linux's default) it need not be
        picklable.
    :param num_envs: number of environments.
    :param n_workers: groups stepped in parallel, this process's included (at most ``num_envs``;
        default: one per core; 1: no worker process).
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
        self.num_envs = num_envs
        self.n_workers = n_workers
        self.sizes = group_sizes(num_envs, n_workers)
        own = make_vector(self.sizes[0])  # this process's group; its spaces are every group's
        try:
            self.single_observation_space = own.single_observation_space
            self.single_action_space = own.single_action_space
            self.metadata = {**own.metadata, "autoreset_mode": AutoresetMode.SAME_STEP}
            self.render_mode = own.render_mode
            self.spec = own.spec
            if check_spaces is not None:
                check_spaces(self.single_observation_space, self.single_action_space)
        except BaseException:
            own.close()
            raise
        obs_space, act_space = self.single_observation_space, self.single_action_space
        self.own = EnvGroup(make_vector, self.sizes[0], self.sizes[0], obs_space, act_space, vec=own)
        self.observation_space = batch_space(obs_space, num_envs)
        self.action_space = batch_space(act_space, num_envs)
        self._starts = [sum(self.sizes[:w]) for w in range(n_workers)]  # first environment of each group
        self.workers: gym.vector.AsyncVectorEnv | None = None
        if n_workers == 1:
            return
        sizes = self.sizes[1:]
        self.width = width = max(sizes)  # the workers' groups, padded to the largest one's size
        # row of the workers' environment i (environment sizes[0] + i) in their padded batch
        self._rows = np.array([w * width + j for w, k in enumerate(sizes) for j in range(k)])
        self._padded = len(self._rows) != len(sizes) * width

        def group_factory(size: int) -> Callable[[], EnvGroup]:
            return lambda: EnvGroup(make_vector, size, width, obs_space, act_space)

        try:
            self.workers = gym.vector.AsyncVectorEnv(
                [group_factory(k) for k in sizes],
                shared_memory=True,
                copy=False,
                context=context,
                autoreset_mode=AutoresetMode.DISABLED,
                worker=_spinning_worker,
            )
        except BaseException:
            self.own.close()
            raise

    def _flat(self, x: np.ndarray) -> np.ndarray:
        """The workers' (groups, width, ...) results as (their environments, ...)."""
        x = np.asarray(x).reshape(len(self.sizes[1:]) * self.width, *np.shape(x)[2:])
        return x[self._rows] if self._padded else x

    @staticmethod
    def _wait(wait: Callable) -> Any:
        """The workers' results of the call in flight (``reset_wait`` or ``step_wait``), once this
        process's group is done; a worker's ``ValueError`` is re-raised on one line."""
        return _quiet_value_errors(wait)

    def _drain(self, wait: Callable) -> None:
        """Collect (and drop) the workers' results after this process's group failed, so that the
        group's error is the one raised and the workers are ready for ``close``."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                wait()
            except Exception:
                pass

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
        if self.workers is not None:
            self.workers.reset_async(seed=groups[1:], options=options)  # type: ignore[arg-type]  # a seed list per group
        try:
            obs, _ = self.own.reset(seed=groups[0], options=options)
        except BaseException:
            if self.workers is not None:
                self._drain(self.workers.reset_wait)
            raise
        if self.workers is None:
            return obs, {}
        rest, _ = self._wait(self.workers.reset_wait)
        return np.concatenate([obs, self._flat(rest)]), {}

    def step(self, actions):
        actions = np.asarray(actions)
        n = self.sizes[0]
        if self.workers is not None:  # the workers first, so that they step while this process does
            rest = actions[n:]
            if self._padded:
                padded = np.zeros((len(self.sizes[1:]) * self.width, *rest.shape[1:]), dtype=rest.dtype)
                padded[self._rows] = rest
                rest = padded
            self.workers.step_async(rest.reshape(len(self.sizes[1:]), self.width, *rest.shape[1:]))
        try:
            obs, reward, terminated, truncated, own_info = self.own.step(actions[:n])
        except BaseException:
            if self.workers is not None:
                self._drain(self.workers.step_wait)
            raise
        final = own_info.get("final_obs", obs)
        if self.workers is not None:
            w_obs, w_reward, w_terminated, w_truncated, infos = self._wait(self.workers.step_wait)
            w_obs = self._flat(w_obs)
            w_final = w_obs
            if "final_obs" in infos:
                w_final = np.array(w_obs, copy=True)
                for w in np.flatnonzero(infos["_final_obs"]):
                    start, size = self._starts[w + 1] - n, self.sizes[w + 1]
                    w_final[start : start + size] = infos["final_obs"][w][:size]
            obs = np.concatenate([obs, w_obs])
            final = np.concatenate([final, w_final])
            reward, terminated, truncated = (
                np.concatenate([a, self._flat(b)])
                for a, b in ((reward, w_reward), (terminated, w_terminated), (truncated, w_truncated))
            )
        info: dict[str, Any] = {}
        done = terminated | truncated
        if done.any():
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in np.flatnonzero(done):
                final_obs[i] = final[i]
            info = {"final_obs": final_obs, "_final_obs": done}
        return obs, reward, terminated, truncated, info

    def close_extras(self, **kwargs: Any) -> None:
        try:
            if self.workers is not None:
                self.workers.close(**kwargs)
        finally:
            self.own.close()
