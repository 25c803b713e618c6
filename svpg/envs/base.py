"""The batched-environment interface every front end codes against.

A :class:`BatchedEnv` steps ``num_envs`` copies of one task at once on torch tensors, with
*same-step* autoreset: when an environment terminates or reaches its time limit, the observation
returned by :meth:`BatchedEnv.step` is already the first observation of its next episode, and the
true last observation is reported separately in :attr:`StepResult.final_obs` (needed to bootstrap
the value of a truncated episode).

:class:`BatchedKernelEnv` is the fast path: the whole batch is one ``(num_envs, state_dim)`` array and
the step is a few dozen array ops with no host synchronisation. A task is written once, as a *kernel*
over the columns of the state (:mod:`svpg.envs.xp`): the batched env runs it on numpy columns on CPU
(handing out torch tensors that share the arrays' memory) and on tensor columns on other devices;
the single ``gym.make`` env (:mod:`svpg.envs.gym_api`) runs it on Python floats. Start states come from
blocks of fresh draws (one generator call per block of steps, see
:meth:`BatchedKernelEnv._reset_states`) and are selected row-wise where an episode ended.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import gymnasium as gym
import torch

from .xp import NumpyOps, TorchOps

if TYPE_CHECKING:
    from svpg.core.extractors import ObsEncoding


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

    Returned tensors must be treated as read-only: ``obs`` may alias the internal state, and a
    fast-path env hands out the same all-false ``terminated`` / ``truncated`` tensor step after step.

    :param num_envs: number of environments in the batch (>= 1).
    :param device: torch device of all tensors (state, actions, results, random generator).
    :param dtype: floating dtype of the state, observations and rewards (float64 for exact tests).
    :param max_episode_steps: time limit; ``None`` uses the task's default.
    :param seed: seed of the env's random generator (reset states); ``None`` draws a random seed.
    """

    single_observation_space: gym.spaces.Box
    single_action_space: gym.spaces.Space
    #: a Discrete, MultiDiscrete, MultiBinary or non-flat Box observation space's encoding into the flat
    #: float vectors this batch returns (:class:`svpg.core.extractors.ObsEncoding`); None: as the space has them
    obs_encoding: ObsEncoding | None = None
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
    def reset(self, seed: int | list[int] | None = None) -> torch.Tensor:
        """Reset every environment; returns the observations ``(num_envs, obs_dim)``.

        :param seed: if given, reseeds the env's random generator first. A list of G seeds splits the
            batch into G equal consecutive groups, each drawing its start states exactly as a batch of
            num_envs / G environments seeded with its seed would (seed-batched training).
        """
        raise NotImplementedError

    def step(self, actions: torch.Tensor) -> StepResult:
        """Advance every environment by one step, autoresetting those that finish (same step)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release resources (nothing to release for the torch tasks)."""

    #: the latest reset's or step's observations and true last observations as the environments gave them
    #: (arrays, or dicts of arrays, for one environment each row), before any encoding; None: the returned
    #: tensors are those observations (the torch tasks' flat Box)
    raw_obs: Any = None
    raw_final_obs: Any = None

    # -- conveniences -------------------------------------------------------------------------------
    @property
    def original_observation_space(self) -> gym.Space:
        """One environment's own observation space (a Discrete, MultiDiscrete, MultiBinary or non-flat Box
        one before its encoding into :attr:`single_observation_space`'s flat float vectors)."""
        original = getattr(self, "_original_observation_space", None)
        return original if original is not None else self.single_observation_space

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
        """The policy's outputs per action: number of actions for ``Discrete`` (logits), ``sum(nvec)`` for
        ``MultiDiscrete`` (every component's logits), ``n`` for ``MultiBinary``, the flattened action's length
        for ``Box``."""
        space = self.single_action_space
        if isinstance(space, gym.spaces.Discrete):
            return int(space.n)
        if isinstance(space, gym.spaces.MultiDiscrete):
            return int(space.nvec.sum())
        assert space.shape is not None  # a Box
        return math.prod(space.shape)

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


class BatchedKernelEnv(BatchedEnv):
    """One task, batched: its equations are a kernel over state columns, run on numpy (CPU) or torch.

    The batch's state is one ``(num_envs, state_dim)`` array and the step has no host syncs. A task
    sets the class attributes below; its equations live in one pure function, :attr:`kernel`,
    written against an array namespace ``xp`` (:mod:`svpg.envs.xp`)::

        kernel(xp, state, action) -> (next_state, obs, reward, terminated)

    ``state`` is a sequence of ``state_dim`` columns and ``action`` one column (``(num_envs,)`` arrays
    here, Python floats/ints in the single ``gym.make`` env). It returns the next state's columns, the
    next observation's columns (or the very ``next_state`` tuple when the observation is the state),
    the reward column and the terminated column (or the Python ``False`` for a task that never
    terminates). :attr:`observe_columns` maps state columns to observation columns (for reset states).

    :param backend: ``"numpy"`` (CPU, float32/float64; the default there: ~2x fewer microseconds per
        step than torch for a few hundred envs) or ``"torch"`` (any device; the default elsewhere).
        Inputs and outputs are torch tensors either way; the state is never modified in place, so
        tensors handed out stay valid.
    """

    #: Length of the state vector.
    state_dim: int
    #: Horizon used when ``max_episode_steps`` is None.
    default_max_episode_steps: int = 500
    #: ``kernel(xp, state, action) -> (next_state, obs, reward, terminated)``, see the class doc.
    kernel: ClassVar[Callable[..., tuple]]
    #: False if only time limits end episodes (the kernel returns ``terminated=False``).
    can_terminate: ClassVar[bool] = True
    #: Start states: ``"uniform"`` on ``loc ± scale`` or ``"normal"`` with mean ``loc``, std ``scale``.
    reset_distribution: ClassVar[str] = "uniform"
    reset_loc: ClassVar[tuple[float, ...]]
    reset_scale: ClassVar[tuple[float, ...]]
    #: Reset draws are made this many numbers at a time (a block of steps' worth, at most 128 steps).
    reset_block_numbers: ClassVar[int] = 1 << 17
    #: frames per second of a rendered episode (each task sets it)
    render_fps: ClassVar[int]

    def __init__(
        self,
        num_envs: int,
        *,
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float32,
        max_episode_steps: int | None = None,
        seed: int | None = None,
        backend: str | None = None,
    ):
        super().__init__(num_envs, device=device, dtype=dtype, max_episode_steps=max_episode_steps, seed=seed)
        if self.max_episode_steps is None:
            self.max_episode_steps = self.default_max_episode_steps
        self.max_episode_steps = int(self.max_episode_steps)
        numpy_ok = self.device.type == "cpu" and dtype in (torch.float32, torch.float64)
        self.backend = backend or ("numpy" if numpy_ok else "torch")
        if self.backend == "numpy":
            if not numpy_ok:
                raise ValueError(f"backend='numpy' needs device cpu and float32/float64, got {self.device}, {dtype}")
            self._xp: Any = NumpyOps(dtype)  # NumpyOps or TorchOps: arrays and tensors, never mixed
        elif self.backend == "torch":
            self._xp = TorchOps(self.device, dtype)
        else:
            raise ValueError(f"backend must be 'numpy', 'torch' or None, got {backend!r}")
        self.generator = torch.Generator(device=self.device)
        self._seed(seed)  # sets the block size and the seed groups
        xp = self._xp
        kw: dict[str, Any] = dict(device=self.device, dtype=self.dtype)
        self._reset_loc = torch.tensor(self.reset_loc, **kw)
        self._reset_scale = torch.tensor(self.reset_scale, **kw)
        self._obs_is_state = type(self).observe_columns is BatchedKernelEnv.observe_columns
        self._action_dtype = None if self.is_discrete else xp.dtype
        n = self.num_envs
        self._false_t = torch.zeros(n, dtype=torch.bool, device=self.device)
        self._true_t = torch.ones(n, dtype=torch.bool, device=self.device)
        self._false = xp.from_torch(self._false_t)
        self._resets: tuple = ()
        self._next_reset = 0
        self._state: Any = None  # (num_envs, state_dim) array of the backend
        # Time limits without per-step counting: env i truncates at step count `_deadline[i]`
        # (steps since reset()); no env can do so before `_no_hit_before`, and for a task that
        # never terminates, `_synced` says all deadlines are equal (all envs truncate together).
        self._t = 0
        self._deadline = xp.from_torch(torch.full((n,), self.max_episode_steps, dtype=torch.int64, device=self.device))
        self._no_hit_before = self.max_episode_steps
        self._synced = True

    # -- hooks ---------------------------------------------------------------------------------------
    @staticmethod
    def observe_columns(xp, state):
        """Observation columns of state columns (default: the state itself)."""
        return state

    def _action_column(self, actions: torch.Tensor):
        """The kernel's ``action`` column, ``(num_envs,)``: integers for ``Discrete`` action spaces,
        the env's dtype for ``Box`` of shape (1,)."""
        return self._xp.from_torch(actions, self._action_dtype).reshape(-1)

    def _draw_reset(self, steps: int) -> torch.Tensor:
        """``(steps, num_envs, state_dim)`` fresh start states from ``self.generator`` (or from each
        group's generator for its rows)."""
        generators = self._group_generators or [self.generator]
        u = torch.empty((steps, self.num_envs, self.state_dim), device=self.device, dtype=self.dtype)
        for block, generator in zip(u.chunk(len(generators), dim=1), generators):
            part = torch.empty(
                block.shape, device=self.device, dtype=self.dtype
            )  # contiguous: the draw order of a lone batch
            if self.reset_distribution == "uniform":
                part.uniform_(-1.0, 1.0, generator=generator)
            elif self.reset_distribution == "normal":
                part.normal_(generator=generator)
            else:
                raise ValueError(f"unknown reset_distribution {self.reset_distribution!r}")
            block.copy_(part)
        return torch.addcmul(self._reset_loc, u, self._reset_scale)

    def _observe_x(self, state):
        """Observation (backend array) of a backend array of states."""
        if self._obs_is_state:
            return state
        xp = self._xp
        return xp.stack_columns(self.observe_columns(xp, xp.columns(state)))

    # -- start states --------------------------------------------------------------------------------
    def _reset_states(self):
        """The next ``(num_envs, state_dim)`` batch of fresh start states (a backend array).

        Drawn :attr:`reset_block_numbers` numbers at a time (one generator call per block of steps
        instead of one per step); every batch is a fresh, independent draw, and ``reset()`` discards
        what is left of a block, so a seed fixes the whole run (and a run that calls ``reset()`` at
        the start of each iteration resumes exactly from a saved ``generator`` state).
        """
        i = self._next_reset
        if i == len(self._resets):
            self._resets = tuple(self._xp.from_torch(self._draw_reset(self._block_steps)))
            i = 0
        self._next_reset = i + 1
        return self._resets[i]

    # -- BatchedEnv ---------------------------------------------------------------------------------
    def _seed(self, seed: int | list[int] | None) -> None:
        self._group_generators = None
        self._block_steps = self._steps_per_block(self.num_envs)
        if seed is None:
            self.generator.seed()
        elif isinstance(seed, (list, tuple)):
            groups = len(seed)
            if groups < 1 or self.num_envs % groups:
                raise ValueError(f"{self.num_envs} environments cannot form {groups} equal seed groups")
            self._group_generators = [torch.Generator(device=self.device).manual_seed(int(s)) for s in seed]
            self._block_steps = self._steps_per_block(self.num_envs // groups)
        else:
            self.generator.manual_seed(int(seed))

    def _steps_per_block(self, num_envs: int) -> int:
        return max(1, min(128, self.reset_block_numbers // (num_envs * self.state_dim)))

    def reset(self, seed: int | list[int] | None = None) -> torch.Tensor:
        if seed is not None:
            self._seed(seed)
        self._resets, self._next_reset = (), 0
        self._state = self._reset_states()
        self._t = 0
        self._deadline[...] = self.max_episode_steps
        self._no_hit_before = self.max_episode_steps
        self._synced = True
        return self._xp.to_torch(self._observe_x(self._state))

    def step(self, actions: torch.Tensor) -> StepResult:
        state = self._state
        if state is None:
            raise RuntimeError(f"{type(self).__name__}: call reset() before step()")
        xp = self._xp
        nxt, obs, reward, terminated = self.kernel(xp, xp.columns(state), self._action_column(actions))
        next_state = xp.stack_columns(nxt)
        final_obs = xp.to_torch(next_state if obs is nxt else xp.stack_columns(obs))
        reward = xp.to_torch(reward)
        if terminated is False:
            terminated, terminated_t = self._false, self._false_t
        else:
            terminated_t = xp.to_torch(terminated)
        t = self._t = self._t + 1
        limit = self.max_episode_steps
        if t < self._no_hit_before:  # no env is at its time limit: done == terminated
            if not self.can_terminate:
                self._state = next_state
                return StepResult(final_obs, reward, terminated_t, self._false_t, final_obs)
            done, truncated = terminated, self._false_t
        elif not self.can_terminate and self._synced:  # all envs reach the limit together
            self._state = self._reset_states()
            self._deadline[...] = t + limit
            self._no_hit_before = t + limit
            obs = xp.to_torch(self._observe_x(self._state))
            return StepResult(obs, reward, terminated_t, self._true_t, final_obs)
        else:
            hit = self._deadline <= t
            if self.can_terminate:
                done = terminated | hit
                truncated = xp.to_torch(done ^ terminated)
            else:
                done = hit
                truncated = xp.to_torch(hit)
        # Fresh start states kept only where an episode ended (no host sync).
        self._state = xp.where_rows(done, self._reset_states(), next_state)
        xp.fill_where_(self._deadline, done, t + limit)
        obs = xp.to_torch(self._observe_x(self._state))
        return StepResult(obs, reward, terminated_t, truncated, final_obs)

    # -- state access (tests, evaluation, rendering) -------------------------------------------------
    @property
    def state(self) -> torch.Tensor | None:
        """The ``(num_envs, state_dim)`` state tensor (read-only view of the internal state)."""
        return None if self._state is None else self._xp.to_torch(self._state)

    @state.setter
    def state(self, value) -> None:
        value = torch.as_tensor(value, dtype=self.dtype, device=self.device)
        if value.shape != (self.num_envs, self.state_dim):
            raise ValueError(f"state must have shape {(self.num_envs, self.state_dim)}, got {tuple(value.shape)}")
        self._state = self._xp.from_torch(value.clone())

    @property
    def elapsed(self) -> torch.Tensor:
        """``(num_envs,)`` int64 steps taken in the current episode of each environment."""
        return (self._t + self.max_episode_steps) - self._xp.to_torch(self._deadline)

    @elapsed.setter
    def elapsed(self, value) -> None:
        value = torch.as_tensor(value, dtype=torch.int64, device=self.device).expand(self.num_envs)
        self._deadline = self._xp.from_torch((self._t + self.max_episode_steps) - value)
        lo, hi = int(value.min()), int(value.max())  # not a hot path: host syncs are fine here
        self._no_hit_before = self._t + self.max_episode_steps - hi
        self._synced = lo == hi

    def observe(self, state: torch.Tensor) -> torch.Tensor:
        """Observation of an arbitrary ``(n, state_dim)`` batch of states."""
        xp = self._xp
        return xp.to_torch(self._observe_x(xp.from_torch(torch.as_tensor(state, dtype=self.dtype, device=self.device))))

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", backend={self.backend!r})"
