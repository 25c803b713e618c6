"""Agents without a neural network: a uniformly random arm and LinUCB."""

from __future__ import annotations

import math

import numpy as np

from svpg.bandits.agents.base import UNBOUNDED, Agent
from svpg.seeding import numpy_rng


class Uniform(Agent):
    """Plays an arm uniformly at random every round (the normalisation reference: regret = 100).

    Paper: https://arxiv.org/abs/1802.09127 (Riquelme et al. 2018, the normalisation of regret)
    """

    name = "uniform"

    def __init__(self, num_actions: int, context_dim: int, seed: int = 0, name: str | None = None):
        super().__init__(num_actions, context_dim, name)
        self.rng = numpy_rng(seed, "agent", self.name, "act")

    def window(self, t: int) -> int:
        return UNBOUNDED

    def act(self, contexts, t):
        contexts = self.check_contexts(contexts)
        return self.rng.integers(0, self.num_actions, size=contexts.shape[0])


class LinUCB(Agent):
    """LinUCB with disjoint linear models (Li et al. 2010, Algorithm 1).

    Paper: https://arxiv.org/abs/1003.0146

    Each arm a keeps A_a = λI + Σ x xᵀ and b_a = Σ r x over the rounds it was played (x is the
    context with a constant 1 appended) and plays argmax_a θ_aᵀx + α σ̂ √(xᵀ A_a⁻¹ x), θ_a = A_a⁻¹ b_a.
    σ̂ is the standard deviation of the rewards observed so far (1 before two are seen), which makes
    α free of the reward scale. A_a⁻¹ is kept up to date by Sherman–Morrison (O(d²) per round).

    :param alpha: width multiplier α of the confidence bonus.
    :param reg: ridge λ.
    """

    name = "linucb"

    def __init__(
        self,
        num_actions: int,
        context_dim: int,
        alpha: float = 1.0,
        reg: float = 1.0,
        seed: int = 0,
        name: str | None = None,
    ):
        super().__init__(num_actions, context_dim, name)
        if not alpha >= 0:
            raise ValueError(f"linucb: alpha must be ≥ 0, got {alpha}")
        if not reg > 0:
            raise ValueError(f"linucb: reg (ridge λ) must be > 0, got {reg}")
        self.alpha, self.reg = float(alpha), float(reg)
        d = context_dim + 1
        self.a_inv = np.repeat(np.eye(d)[None] / self.reg, num_actions, axis=0)
        self.b = np.zeros((num_actions, d))
        self.coef = np.zeros((num_actions, d))
        self.rng = numpy_rng(seed, "agent", self.name, "act")
        self._n, self._sum, self._sumsq = 0, 0.0, 0.0

    def _features(self, contexts: np.ndarray) -> np.ndarray:
        return np.concatenate([contexts.astype(np.float64), np.ones((contexts.shape[0], 1))], axis=1)

    def reward_scale(self) -> float:
        if self._n < 2:
            return 1.0
        var = (self._sumsq - self._sum**2 / self._n) / (self._n - 1)
        return math.sqrt(var) if var > 0 else 1.0

    def scores(self, contexts: np.ndarray) -> np.ndarray:
        """UCB of every arm: (n, K)."""
        x = self._features(self.check_contexts(contexts))
        means = x @ self.coef.T
        widths = np.sqrt(np.maximum(np.einsum("nd,kde,ne->nk", x, self.a_inv, x), 0.0))
        return means + self.alpha * self.reward_scale() * widths

    def act(self, contexts, t):
        s = self.scores(contexts)
        s = s + 1e-9 * self.rng.random(s.shape)  # break exact ties at random, not towards arm 0
        return s.argmax(1)

    def update(self, contexts, actions, rewards, t):
        x = self._features(self.check_contexts(contexts))
        for xi, a, r in zip(x, np.asarray(actions), np.asarray(rewards, dtype=np.float64)):
            ax = self.a_inv[a] @ xi
            self.a_inv[a] -= np.outer(ax, ax) / (1.0 + xi @ ax)
            self.b[a] += r * xi
            self.coef[a] = self.a_inv[a] @ self.b[a]
            self._n += 1
            self._sum += r
            self._sumsq += r * r
        return {}

    def hyperparameters(self) -> dict:
        return {"alpha": self.alpha, "reg": self.reg}
