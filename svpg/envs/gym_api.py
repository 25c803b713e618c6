"""Gymnasium front doors for the fast-path tasks: ``gym.make`` and ``gym.make_vec``.

- :class:`KernelGymEnv` (``entry_point``): one environment as a ``gym.Env``: the task's kernel (the
  same function the batched task runs on arrays, see :mod:`svpg.envs.xp`) on Python floats (float64),
  numpy float32 observations out, ``render_mode="rgb_array"`` drawn with numpy. No torch op per step,
  so it runs at the speed of Gymnasium's own classic-control envs (what Stable-Baselines3's
  ``make_vec_env`` steps). Like those it has no time limit of its own; ``gym.make`` adds the
  ``TimeLimit`` wrapper from the registration.
- :class:`KernelVectorEnv` (``vector_entry_point``): a ``gymnasium.vector.VectorEnv`` over the
  batched task, numpy in and out, same-step autoreset (the last observation of a finished episode is
  in ``infos["final_obs"]``, masked by ``infos["_final_obs"]``, as ``SyncVectorEnv`` reports it).

Both serve every task: the registration names it in its ``kwargs`` (``task="CartPole"``, a key of
:data:`TASKS`; a name rather than the class keeps the spec JSON-serialisable, ``EnvSpec.to_json``).

The single env draws its start states from Gymnasium's ``np_random`` (the task's reset
distribution), the vector env draws a torch seed from it at every ``reset``; either way
``reset(seed=s)`` is reproducible and unseeded resets continue the seeded stream.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from .base import BatchedKernelEnv
from .cartpole import CartPole
from .double_pendulum import DoublePendulum
from .rllab_cartpole import CartPoleBalance, CartPoleSwingUp
from .xp import SCALAR

#: The fast-path tasks by the name a registration's ``kwargs={"task": name}`` gives.
KERNEL_ENVS: dict[str, type[BatchedKernelEnv]] = {
    cls.__name__: cls for cls in (CartPole, CartPoleBalance, CartPoleSwingUp, DoublePendulum)
}
TASKS = KERNEL_ENVS  # the former name, kept for existing imports
#: Gymnasium id -> task name.
REGISTRATIONS = {
    "svpg/CartPole-v1": "CartPole",
    "svpg/CartPoleBalance-v0": "CartPoleBalance",
    "svpg/CartPoleSwingUp-v0": "CartPoleSwingUp",
    "svpg/DoublePendulum-v0": "DoublePendulum",
}


def _torch_seed(np_random: np.random.Generator) -> int:
    return int(np_random.integers(0, 2**63 - 1))


def _task_class(task: str) -> type[BatchedKernelEnv]:
    try:
        return KERNEL_ENVS[task]
    except (KeyError, TypeError):
        raise ValueError(f"task must be one of {sorted(TASKS)}, got {task!r}") from None


def _to_action_tensor(space: gym.spaces.Space, action: Any, n: int, dtype: torch.dtype) -> torch.Tensor:
    if isinstance(space, gym.spaces.Discrete):
        return torch.as_tensor(np.asarray(action, dtype=np.int64).reshape(n))
    assert space.shape is not None  # a Box
    return torch.as_tensor(np.asarray(action, dtype=np.float64).reshape(n, *space.shape)).to(dtype)


class KernelGymEnv(gym.Env):
    """One environment of a fast-path task as a ``gym.Env``.

    :attr:`state` is the task's state as a tuple of Python floats (``[x, x_dot, theta, theta_dot]``
    for the cart-poles, ``[theta1, theta2, omega1, omega2]`` for the double pendulum); it may be set.

    :param task: the task's name, a key of :data:`TASKS`.
    :param render_mode: ``"rgb_array"`` or None.
    """

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, task: str, render_mode: str | None = None):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.render_mode = render_mode
        self.task_cls = cls = _task_class(task)
        self.metadata = {**self.metadata, "render_fps": cls.render_fps}
        self.observation_space = cls.single_observation_space
        self.action_space = cls.single_action_space
        self._n_actions = int(self.action_space.n) if isinstance(self.action_space, gym.spaces.Discrete) else None
        self._kernel = cls.kernel
        self._observe = cls.observe_columns
        self._reset_loc = np.asarray(cls.reset_loc, dtype=np.float64)
        self._reset_scale = np.asarray(cls.reset_scale, dtype=np.float64)
        self.state: tuple[float, ...] | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        d = len(self._reset_loc)
        if self.task_cls.reset_distribution == "uniform":
            u = self.np_random.uniform(-1.0, 1.0, d)
        else:
            u = self.np_random.standard_normal(d)
        self.state = tuple((self._reset_loc + u * self._reset_scale).tolist())
        return np.array(self._observe(SCALAR, self.state), dtype=np.float32), {}

    def step(self, action):
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        self.state, obs, reward, terminated = self._kernel(SCALAR, self.state, self._action(action))
        return np.array(obs, dtype=np.float32), float(reward), bool(terminated), False, {}

    def _action(self, action) -> float | int:
        """The kernel's action: an int for ``Discrete``, a float for ``Box`` of shape (1,) (unclipped)."""
        a = action.item() if isinstance(action, np.ndarray) else action
        if self._n_actions is not None:
            if isinstance(a, (int, np.integer)) and 0 <= a < self._n_actions:
                return int(a)
            raise ValueError(f"action {action!r} is not in {self.action_space}")
        if not isinstance(a, float):
            a = np.asarray(a, dtype=np.float64).item()  # size 1 or ValueError
        return float(a)

    def render(self):
        if self.render_mode != "rgb_array":
            gym.logger.warn("render() needs render_mode='rgb_array'")
            return None
        if self.state is None:
            raise RuntimeError("call reset() before render()")
        return self.task_cls.render_obs(np.asarray(self._observe(SCALAR, self.state), dtype=np.float64))


class KernelVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` environments of a fast-path task as a Gymnasium ``VectorEnv`` (same-step autoreset).

    :param task: the task's name, a key of :data:`TASKS`.
    :param num_envs: batch size.
    :param max_episode_steps: time limit (``make_vec`` passes the registered one).
    :param render_mode: ``"rgb_array"`` renders a tuple of frames, one per environment.
    :param device: torch device of the batched task (results are returned as numpy).
    :param dtype: torch dtype of the batched task (observations are returned as float32).
    """

    metadata = {"render_modes": ["rgb_array"], "autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(
        self,
        task: str,
        num_envs: int = 1,
        max_episode_steps: int | None = None,
        render_mode: str | None = None,
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float32,
    ):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.task_cls = _task_class(task)
        self.metadata = {**self.metadata, "render_fps": self.task_cls.render_fps}
        self.task = self.task_cls(num_envs, device=device, dtype=dtype, max_episode_steps=max_episode_steps, seed=0)
        self.num_envs = self.task.num_envs
        self.render_mode = render_mode
        self.single_observation_space = self.task.single_observation_space
        self.single_action_space = self.task.single_action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._obs: np.ndarray | None = None

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        if seed is not None and not isinstance(seed, (int, np.integer)):
            seed = int(np.random.SeedSequence([int(s) for s in seed if s is not None]).generate_state(1)[0])
        super().reset(seed=seed)
        obs = self.task.reset(seed=_torch_seed(self.np_random))
        self._obs = obs.cpu().numpy().astype(np.float32)
        return self._obs.copy(), {}

    def step(self, actions):
        if self._obs is None:
            raise RuntimeError("call reset() before step()")
        actions = _to_action_tensor(self.single_action_space, actions, self.num_envs, self.task.dtype)
        out = self.task.step(actions.to(self.task.device))
        obs = out.obs.cpu().numpy().astype(np.float32)
        terminated = out.terminated.cpu().numpy().copy()  # ours: the task may reuse its tensors
        truncated = out.truncated.cpu().numpy().copy()
        done = terminated | truncated
        infos: dict[str, Any] = {}
        if done.any():
            final = out.final_obs.cpu().numpy().astype(np.float32)
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in np.flatnonzero(done):
                final_obs[i] = final[i]
            infos = {"final_obs": final_obs, "_final_obs": done.copy(), "final_info": {}, "_final_info": done.copy()}
        self._obs = obs
        reward = out.reward.cpu().numpy().astype(np.float64)
        return obs.copy(), reward, terminated, truncated, infos

    def render(self):
        if self.render_mode != "rgb_array":
            gym.logger.warn("render() needs render_mode='rgb_array'")
            return None
        if self._obs is None:
            raise RuntimeError("call reset() before render()")
        return tuple(self.task_cls.render_obs(o) for o in self._obs)


def register_all() -> None:
    """Register the fast-path tasks with Gymnasium (idempotent)."""
    for env_id, task in REGISTRATIONS.items():
        if env_id in gym.registry:
            continue
        gym.register(
            id=env_id,
            entry_point=f"{__name__}:KernelGymEnv",
            vector_entry_point=f"{__name__}:KernelVectorEnv",
            max_episode_steps=KERNEL_ENVS[task].default_max_episode_steps,
            kwargs={"task": task},
        )
