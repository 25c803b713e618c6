"""The agent interface that :func:`svpg.bandits.protocol.play` drives, and the schedule the neural
agents share (warm-up, training every ``train_every`` rounds on all data so far)."""

from __future__ import annotations

import numpy as np
import torch

from svpg.runtime import resolve_device

UNBOUNDED = 1 << 62


class Agent:
    """Base class: stores the problem's sizes and checks the contexts it is given."""

    name = "agent"

    def __init__(self, num_actions: int, context_dim: int, name: str | None = None):
        if int(num_actions) < 2:
            raise ValueError(f"a bandit needs at least 2 arms, got num_actions={num_actions}")
        if int(context_dim) < 1:
            raise ValueError(f"context_dim must be ≥ 1, got {context_dim}")
        self.num_actions, self.context_dim = int(num_actions), int(context_dim)
        if name is not None:
            self.name = name

    def check_contexts(self, contexts) -> np.ndarray:
        contexts = np.asarray(contexts, dtype=np.float32)
        if contexts.ndim == 1:
            contexts = contexts[None]
        if contexts.ndim != 2 or contexts.shape[1] != self.context_dim:
            raise ValueError(
                f"agent {self.name!r} was built for {self.context_dim}-dimensional contexts but got an array of "
                f"shape {contexts.shape}; build the agent with context_dim={contexts.shape[-1]} "
                f"(e.g. make_agent(name, problem.num_actions, problem.context_dim))"
            )
        return contexts

    def window(self, t: int) -> int:
        return 1

    def act(self, contexts: np.ndarray, t: int) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def update(self, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray, t: int) -> dict:
        return {}

    def hyperparameters(self) -> dict:
        return {}

    def __repr__(self) -> str:
        hp = ", ".join(f"{k}={v!r}" for k, v in self.hyperparameters().items())
        return f"{type(self).__name__}(name={self.name!r}, num_actions={self.num_actions}, context_dim={self.context_dim}{', ' if hp else ''}{hp})"


def noise_prior_problems(noise_a: float, noise_b: float) -> list[str]:
    """What is wrong with the Inv-Gamma(noise_a, noise_b) prior of a reward model's noise variance."""
    if noise_a > 0 and noise_b > 0:
        return []
    return [f"noise_a and noise_b (Inv-Gamma prior of the noise variance) must be > 0, got {noise_a}, {noise_b}"]


class RewardModelAgent(Agent):
    """The schedule shared by the neural agents: round-robin warm-up, training every ``train_every``
    rounds on all data so far, standardised rewards.

    The first ``initial_pulls`` × K rounds play the arms in turn (Riquelme et al.'s initial pulls);
    afterwards every ``train_every`` rounds :meth:`train` runs (``train_steps`` minibatches of
    ``batch_size`` drawn from all data so far). Between two training points the model is fixed, so
    :meth:`choose_arms` picks the arms of a whole window at once. Rewards are standardised with the
    mean and standard deviation of all rewards seen so far (which leaves every argmax unchanged).
    """

    def __init__(
        self,
        num_actions: int,
        context_dim: int,
        *,
        train_every: int,
        train_steps: int,
        batch_size: int,
        initial_pulls: int,
        device: str,
        name: str | None,
        problems: list[str] | None = None,
    ):
        super().__init__(num_actions, context_dim, name)
        problems = list(problems or [])
        for key, value in (("train_every", train_every), ("train_steps", train_steps), ("batch_size", batch_size)):
            if int(value) < 1:
                problems.append(f"{key} must be ≥ 1, got {value}")
        if int(initial_pulls) < 0:
            problems.append(f"initial_pulls must be ≥ 0, got {initial_pulls}")
        if problems:
            raise ValueError(f"agent {self.name!r}: " + "; ".join(problems))
        self.train_every, self.train_steps, self.batch_size = int(train_every), int(train_steps), int(batch_size)
        self.initial_pulls = int(initial_pulls)
        self.device = resolve_device(device)  # also SB3's "auto"
        # growable buffers of everything observed
        self._x = torch.empty(0, context_dim, device=self.device)
        self._a = torch.empty(0, dtype=torch.long, device=self.device)
        self._r = torch.empty(0, dtype=torch.float64, device=self.device)
        self.size = 0
        self.trainings = 0

    def window(self, t: int) -> int:
        warmup = self.initial_pulls * self.num_actions
        if t < warmup:
            return warmup - t
        return self.train_every - (t % self.train_every)

    def act(self, contexts, t):
        contexts = self.check_contexts(contexts)
        n = contexts.shape[0]
        if t < self.initial_pulls * self.num_actions:  # round-robin warm-up (Riquelme et al.'s initial pulls)
            return (t + np.arange(n)) % self.num_actions
        return self.choose_arms(contexts)

    def choose_arms(self, contexts: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _append(self, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray) -> None:
        n = len(actions)
        if self.size + n > self._x.shape[0]:
            cap = max(1024, 2 * (self.size + n))
            for name in ("_x", "_a", "_r"):
                old = getattr(self, name)
                new = torch.empty((cap, *old.shape[1:]), dtype=old.dtype, device=self.device)
                new[: self.size] = old[: self.size]
                setattr(self, name, new)
        s = slice(self.size, self.size + n)
        self._x[s] = torch.as_tensor(contexts, device=self.device)
        self._a[s] = torch.as_tensor(np.asarray(actions, dtype=np.int64), device=self.device)
        self._r[s] = torch.as_tensor(np.asarray(rewards, dtype=np.float64), device=self.device)
        self.size += n

    def update(self, contexts, actions, rewards, t):
        contexts = self.check_contexts(contexts)
        actions = np.asarray(actions)
        self._append(contexts, actions, rewards)
        if self.size >= self.initial_pulls * self.num_actions and self.size % self.train_every == 0:
            return self.train()
        return {}

    def data(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Contexts, played arms and standardised rewards of everything observed so far."""
        n = self.size
        r = self._r[:n]
        mean, std = r.mean(), r.std() if n > 1 else r.new_tensor(1.0)
        std = torch.where(std > 0, std, torch.ones_like(std))
        return self._x[:n], self._a[:n], ((r - mean) / std).float()

    def train(self) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def hyperparameters(self) -> dict:
        return {
            "train_every": self.train_every,
            "train_steps": self.train_steps,
            "batch_size": self.batch_size,
            "initial_pulls": self.initial_pulls,
        }
