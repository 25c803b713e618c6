"""The batched-environment interface every front end codes against.

A :class:`BatchedEnv` steps ``num_envs`` copies of one task at once on torch tensors, with
*same-step* autoreset: when an environment terminates or reaches its time limit, the observation
returned by :meth:`BatchedEnv.step` is already the first observation of its next episode, and the
true last observation is reported separately in :attr:`StepResult.final_obs` (needed to bootstrap
the value of a truncated episode).

:class:`TorchEnv` is the fast path: the whole batch is one ``(num_envs, state_dim)`` tensor, the step
is a handful of fused tensor ops with no host synchronisation, and reset states for *every*
environment are drawn in every step from the env's own ``torch.Generator`` and selected with
``torch.where`` where an episode ended. Tasks subclass it and implement three small methods
(:meth:`TorchEnv._draw_reset`, :meth:`TorchEnv._transition`, optionally :meth:`TorchEnv._observe`).
"""

from __future__ import annotations

import operator
from typing import NamedTuple

import gymnasium as gym
import torch


class StepResult(NamedTuple):
    """What :meth:`BatchedEnv.step` returns; every field has a leading ``num_envs`` dimension.

    :param obs: ``(num_envs, obs_dim)`` next observation; for environments that finished in this step
        it is already the first observation of the next episode (same-step autoreset).
    :param reward: ``(num_envs,)`` float reward of this transition.
    :param terminated: ``(num_envs,)`` bool, the task reached a terminal state.
    :param truncated: ``(num_envs,)`` bool, the time limit was reached and the task did not terminate
        (``terminated & truncated`` is always false).
    :param final_obs: ``(num_envs, obs_dim)`` the true next observation before any reset (equal to
        ``obs`` where the episode goes on).
    """

    obs: torch.Tensor
    reward: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    final_obs: torch.Tensor


class BatchedEnv:
    """Abstract batch of ``num_envs`` environments stepped together on torch tensors.

    Actions are an int64 tensor ``(num_envs,)`` for a ``Discrete`` action space, a float tensor
    ``(num_envs, act_dim)`` for a ``Box`` action space. Box actions are *not* expected to be clipped
    by the caller: a Gaussian policy's sample may leave the box, and each task clips what it applies.

    Returned tensors must be treated as read-only (``obs`` may alias the internal state).

    :param num_envs: number of environments in the batch (>= 1).
    :param device: torch device of all tensors (state, actions, results, random generator).
    :param dtype: floating dtype of the state, observations and rewards (float64 for exact tests).
    :param max_episode_steps: time limit; ``None`` uses the task's default.
    :param seed: seed of the env's random generator (reset states); ``None`` draws a random seed.
    """

    single_observation_space: gym.spaces.Box
    single_action_space: gym.spaces.Space
    num_envs: int
    max_episode_steps: int
    device: torch.device
    dtype: torch.dtype

    def __init__(
        self,
        num_envs: int,
        *,
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float32,
        max_episode_steps: int | None = None,
        seed: int | None = None,
    ):
        self.num_envs = check_num_envs(num_envs)
        self.device = torch.device(device)
        if not dtype.is_floating_point:
            raise ValueError(f"dtype must be a floating point dtype, got {dtype}")
        self.dtype = dtype
        if max_episode_steps is not None and int(max_episode_steps) < 1:
            raise ValueError(f"max_episode_steps must be >= 1 or None, got {max_episode_steps}")
        self.max_episode_steps = max_episode_steps  # type: ignore[assignment]

    # -- the interface ------------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> torch.Tensor:
        """Reset every environment; returns the observations ``(num_envs, obs_dim)``.

        :param seed: if given, reseeds the env's random generator first.
        """
        raise NotImplementedError

    def step(self, actions: torch.Tensor) -> StepResult:
        """Advance every environment by one step, autoresetting those that finish (same step)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release resources (nothing to release for the torch tasks)."""

    # -- conveniences -------------------------------------------------------------------------------
    @property
    def obs_dim(self) -> int:
        """Length of one (flat) observation."""
        return int(self.single_observation_space.shape[0])

    @property
    def is_discrete(self) -> bool:
        """True for a ``Discrete`` action space."""
        return isinstance(self.single_action_space, gym.spaces.Discrete)

    @property
    def action_dim(self) -> int:
        """Number of actions for ``Discrete`` (policy logits), action vector length for ``Box``."""
        space = self.single_action_space
        if isinstance(space, gym.spaces.Discrete):
            return int(space.n)
        return int(space.shape[0])

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(num_envs={self.num_envs}, device={self.device}, "
            f"dtype={self.dtype}, max_episode_steps={self.max_episode_steps})"
        )


def check_num_envs(num_envs: int) -> int:
    """Validate ``num_envs`` (an integer >= 1) and return it as an int."""
    try:
        n = operator.index(num_envs)
    except TypeError:
        n = None
    if n is None or isinstance(num_envs, bool) or n < 1:
        raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
    return n


class TorchEnv(BatchedEnv):
    """Fast-path base: state is one ``(num_envs, state_dim)`` tensor, the step has no host syncs.

    Subclasses set the class attributes below and implement :meth:`_draw_reset` and
    :meth:`_transition` (and :meth:`_observe` if the observation is not the state itself). The
    state tensor is never modified in place, so tensors handed out stay valid.
    """

    #: Length of the state vector.
    state_dim: int
    #: Horizon used when ``max_episode_steps`` is None.
    default_max_episode_steps: int = 500

    def __init__(
        self,
        num_envs: int,
        *,
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float32,
        max_episode_steps: int | None = None,
        seed: int | None = None,
    ):
        super().__init__(
            num_envs, device=device, dtype=dtype, max_episode_steps=max_episode_steps, seed=seed
        )
        if self.max_episode_steps is None:
            self.max_episode_steps = self.default_max_episode_steps
        self.max_episode_steps = int(self.max_episode_steps)
        self.generator = torch.Generator(device=self.device)
        self._seed(seed)
        self._state: torch.Tensor | None = None
        self._elapsed = torch.zeros(self.num_envs, dtype=torch.int64, device=self.device)
        self._one = torch.ones((), dtype=torch.int64, device=self.device)
        self._limit = torch.tensor(self.max_episode_steps, dtype=torch.int64, device=self.device)
        self._setup()

    # -- to implement -------------------------------------------------------------------------------
    def _setup(self) -> None:
        """Create constant tensors (on ``self.device``, of ``self.dtype``) used by the step."""

    def _draw_reset(self) -> torch.Tensor:
        """Draw reset states for all ``num_envs`` environments from ``self.generator``."""
        raise NotImplementedError

    def _transition(
        self, state: torch.Tensor, actions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One step of the dynamics, not in place.

        :returns: ``(next_state, next_obs, reward, terminated)``; ``next_obs`` is
            ``self._observe(next_state)``, returned here so that a task can share work between its
            observation and its reward.
        """
        raise NotImplementedError

    def _observe(self, state: torch.Tensor) -> torch.Tensor:
        """Observation of a batch of states (default: the state itself)."""
        return state

    # -- BatchedEnv ---------------------------------------------------------------------------------
    def _seed(self, seed: int | None) -> None:
        if seed is None:
            self.generator.seed()
        else:
            self.generator.manual_seed(int(seed))

    def reset(self, seed: int | None = None) -> torch.Tensor:
        if seed is not None:
            self._seed(seed)
        self._state = self._draw_reset().clone()
        self._elapsed = torch.zeros(self.num_envs, dtype=torch.int64, device=self.device)
        return self._observe(self._state)

    def step(self, actions: torch.Tensor) -> StepResult:
        state = self._state
        if state is None:
            raise RuntimeError(f"{type(self).__name__}: call reset() before step()")
        next_state, final_obs, reward, terminated = self._transition(state, actions)
        elapsed = torch.add(self._elapsed, self._one)
        done = terminated | (elapsed >= self._limit)
        truncated = done ^ terminated
        # Fresh start states for every env, kept only where an episode ended (no host sync).
        self._state = torch.where(done.unsqueeze(1), self._draw_reset(), next_state)
        self._elapsed = elapsed.masked_fill_(done, 0)
        return StepResult(self._observe(self._state), reward, terminated, truncated, final_obs)

    # -- state access (tests, evaluation, rendering) -------------------------------------------------
    @property
    def state(self) -> torch.Tensor | None:
        """The ``(num_envs, state_dim)`` state tensor (read-only view of the internal state)."""
        return self._state

    @state.setter
    def state(self, value) -> None:
        value = torch.as_tensor(value, dtype=self.dtype, device=self.device)
        if value.shape != (self.num_envs, self.state_dim):
            raise ValueError(
                f"state must have shape {(self.num_envs, self.state_dim)}, got {tuple(value.shape)}"
            )
        self._state = value.clone()

    @property
    def elapsed(self) -> torch.Tensor:
        """``(num_envs,)`` int64 steps taken in the current episode of each environment."""
        return self._elapsed

    @elapsed.setter
    def elapsed(self, value) -> None:
        value = torch.as_tensor(value, dtype=torch.int64, device=self.device)
        self._elapsed = value.expand(self.num_envs).clone()

    def observe(self, state: torch.Tensor) -> torch.Tensor:
        """Observation of an arbitrary ``(n, state_dim)`` batch of states."""
        return self._observe(torch.as_tensor(state, dtype=self.dtype, device=self.device))
