"""Small Gymnasium tasks with a ``Dict`` observation or ``MultiDiscrete`` actions, registered on import;
the benchmark's observation- and action-space tasks (``python -m svpg.studies.benchmark --budget spaces``).

    svpg/PointReach-v0   a 2-D point driven to a random goal: a goal-conditioned ``Dict`` observation
                         ("observation", "achieved_goal", "desired_goal", as Gymnasium-Robotics' tasks),
                         dense reward −‖position − goal‖, 50 steps
    svpg/Knobs-v0        three knobs of 7 positions each, turned by −1, 0 or +1 per step (``MultiDiscrete([3, 3, 3])``)
                         to targets given in the observation; reward −(mean distance to the targets) / 6, 20 steps

MinAtar's games (``pip install "svpg[minatar]"``) are registered here too when MinAtar is installed: its
package declares its ids as a Gymnasium plugin, which Gymnasium 1.x no longer loads on its own, so
``gym.make("MinAtar/Breakout-v1")`` works after ``import svpg`` as after ``minatar.gym.register_envs()``,
with MinAtar's own arguments, through :class:`svpg.envs.minatar_env.MinAtarEnv`, which also takes seeds
of 2³² and more (svpg's; MinAtar's own class refuses them). ``minatar.gym.register_envs()`` called after
``import svpg`` puts MinAtar's class back.
"""

from __future__ import annotations

import importlib.util

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class PointReach(gym.Env):
    """A point in the square [−1, 1]² moved by an action in [−1, 1]² times ``step_size`` (clipped to the
    square) towards a goal drawn uniformly in the square at reset; start drawn likewise. The observation is
    a ``Dict``: "observation" (position and last velocity, 4 values), "achieved_goal" (the position) and
    "desired_goal" (the goal). Reward: −‖position − goal‖ after the move; no termination (Gymnasium's
    time limit truncates at 50 steps). A random policy scores about −54; one that heads straight for the
    goal about −5 (the distance covered on the way)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}

    def __init__(self, step_size: float = 0.1, render_mode: str | None = None):
        self.step_size = float(step_size)
        self.render_mode = render_mode
        box2 = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.observation_space = spaces.Dict(
            {
                "observation": spaces.Box(-1.0, 1.0, (4,), np.float32),
                "achieved_goal": box2,
                "desired_goal": box2,
            }
        )
        self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self._pos = np.zeros(2)
        self._vel = np.zeros(2)
        self._goal = np.zeros(2)

    def _obs(self) -> dict[str, np.ndarray]:
        return {
            "observation": np.concatenate([self._pos, self._vel]).astype(np.float32),
            "achieved_goal": self._pos.astype(np.float32),
            "desired_goal": self._goal.astype(np.float32),
        }

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._pos = self.np_random.uniform(-1.0, 1.0, 2)
        self._goal = self.np_random.uniform(-1.0, 1.0, 2)
        self._vel = np.zeros(2)
        return self._obs(), {}

    def step(self, action):
        move = np.clip(np.asarray(action, dtype=np.float64).reshape(2), -1.0, 1.0) * self.step_size
        old = self._pos
        self._pos = np.clip(old + move, -1.0, 1.0)
        self._vel = (self._pos - old) / self.step_size
        distance = float(np.linalg.norm(self._pos - self._goal))
        return self._obs(), -distance, False, False, {"distance": distance, "is_success": distance < 0.05}

    def render(self):
        """A 64 × 64 RGB frame: the goal green, the point white, on black."""
        frame = np.zeros((64, 64, 3), np.uint8)
        for xy, colour in ((self._goal, (0, 200, 0)), (self._pos, (255, 255, 255))):
            col, row = np.clip(((xy + 1.0) / 2.0 * 63).round().astype(int), 0, 63)
            frame[max(0, 63 - row - 1) : 63 - row + 2, max(0, col - 1) : col + 2] = colour
        return frame


class Knobs(gym.Env):
    """``n_knobs`` knobs with positions 0 … ``positions`` − 1, each turned by −1, 0 or +1 per step (action
    ``MultiDiscrete([3] * n_knobs)``: 0 turns down, 1 holds, 2 turns up; clipped at the ends) towards a
    target; positions and targets are drawn uniformly at reset. Observation: the positions and the
    targets, scaled to [0, 1]. Reward: −(mean |position − target|) / (positions − 1) after the turn; no
    termination (truncated at 20 steps). Each knob is its own decision, so the task needs a factored
    action distribution: a random policy scores about −8, turning every knob straight to its target about −0.5."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 5}

    def __init__(self, n_knobs: int = 3, positions: int = 7, render_mode: str | None = None):
        self.render_mode = render_mode
        if n_knobs < 1 or positions < 2:
            raise ValueError(f"Knobs needs n_knobs ≥ 1 and positions ≥ 2, got {n_knobs} and {positions}")
        self.n_knobs, self.positions = int(n_knobs), int(positions)
        self.observation_space = spaces.Box(0.0, 1.0, (2 * self.n_knobs,), np.float32)
        self.action_space = spaces.MultiDiscrete([3] * self.n_knobs)
        self._pos = np.zeros(self.n_knobs, dtype=np.int64)
        self._target = np.zeros(self.n_knobs, dtype=np.int64)

    def _obs(self) -> np.ndarray:
        return (np.concatenate([self._pos, self._target]) / (self.positions - 1)).astype(np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._pos = self.np_random.integers(0, self.positions, self.n_knobs)
        self._target = self.np_random.integers(0, self.positions, self.n_knobs)
        return self._obs(), {}

    def step(self, action):
        turn = np.asarray(action, dtype=np.int64).reshape(self.n_knobs) - 1
        if np.any(np.abs(turn) > 1):
            raise ValueError(f"Knobs: action {np.asarray(action).tolist()} outside MultiDiscrete([3] * {self.n_knobs})")
        self._pos = np.clip(self._pos + turn, 0, self.positions - 1)
        distance = np.abs(self._pos - self._target)
        reward = -float(distance.mean()) / (self.positions - 1)
        return self._obs(), reward, False, False, {"is_success": bool(np.all(distance == 0))}

    def render(self):
        """An RGB frame, one 8-pixel row per knob: the target cell green, the knob white (yellow on its target)."""
        cell = 8
        frame = np.zeros((self.n_knobs * cell, self.positions * cell, 3), np.uint8)
        for k in range(self.n_knobs):
            rows = slice(k * cell + 1, (k + 1) * cell - 1)
            t, p = int(self._target[k]), int(self._pos[k])
            frame[rows, t * cell + 1 : (t + 1) * cell - 1] = (0, 200, 0)
            frame[rows, p * cell + 2 : (p + 1) * cell - 2] = (255, 255, 0) if p == t else (255, 255, 255)
        return frame


#: id → (entry point, episode length)
REGISTRATIONS = {
    "svpg/PointReach-v0": (f"{__name__}:PointReach", 50),
    "svpg/Knobs-v0": (f"{__name__}:Knobs", 20),
}
MINATAR_GAMES = ("asterix", "breakout", "freeway", "seaquest", "space_invaders")


def minatar_installed() -> bool:
    return importlib.util.find_spec("minatar") is not None


def register_spaces_tasks() -> None:
    """Register the tasks above, and MinAtar's ids when MinAtar is installed (idempotent)."""
    for env_id, (entry_point, steps) in REGISTRATIONS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, max_episode_steps=steps)
    if minatar_installed():
        # the ids and arguments of minatar.gym.register_envs() (v0 the full action set, v1 the minimal one)
        for game in MINATAR_GAMES:
            name = game.title().replace("_", "")
            for version, minimal in (("v0", False), ("v1", True)):
                env_id = f"MinAtar/{name}-{version}"
                if env_id not in gym.registry:
                    gym.register(
                        id=env_id,
                        entry_point="svpg.envs.minatar_env:MinAtarEnv",
                        kwargs={"game": game, "use_minimal_action_set": minimal},
                    )
