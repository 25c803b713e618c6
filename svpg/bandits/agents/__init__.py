"""Bandit agents: Stein Thompson sampling (Algorithm 1 of S²VGD), the baselines of its §5.3
(neural greedy, ε-greedy) and of Riquelme et al. 2018 (LinUCB, uniform), and Thompson sampling from
parametric posteriors (Bayes by Backprop, the variational matrix Gaussian, Kronecker flows, BADAM).

Every agent follows one small interface, driven by :func:`svpg.bandits.protocol.play`:

* ``window(t)`` — how many rounds, starting at round ``t``, the agent can act without new data
  (1 for LinUCB; the rounds up to the next training point for the neural agents; all for uniform);
* ``act(contexts, t)`` — the arms for those rounds' contexts (n, d) → (n,) integers;
* ``update(contexts, actions, rewards, t)`` — the rewards of the played arms; returns diagnostics
  (a dict, empty when nothing was trained).

An agent never sees the rewards of arms it did not play. Acting in windows is what makes the
neural agents fast: between two training points the particles are fixed, so the arms of a whole
window come from one batched forward pass, with the particle of each round drawn up front.

Randomness: an agent built with ``seed`` and ``name`` draws from its own :mod:`svpg.seeding` streams,
``(seed, "agent", name, "act")`` for arm, particle, ε and posterior draws, and, for the neural agents,
``"init"`` for the initial particles and ``"minibatch"`` for the training minibatches. No global RNG
is touched; agents of different names, the problem's table and neighbouring seeds share no numbers.

The package: :mod:`.base` (the interface and the neural agents' schedule), :mod:`.classic` (uniform,
LinUCB), :mod:`.stein` (the particle agents), :mod:`.variational` (the parametric posteriors) and
:mod:`.registry` (the agents by name, :func:`make_agent`).
"""

from __future__ import annotations

from svpg.bandits.agents.base import UNBOUNDED, Agent, RewardModelAgent
from svpg.bandits.agents.classic import LinUCB, Uniform
from svpg.bandits.agents.registry import (
    AGENTS,
    DEFAULT_AGENTS,
    NEURAL_OPTIONS,
    VARIATIONAL_NEURAL,
    canonical_name,
    make_agent,
)
from svpg.bandits.agents.stein import (
    S2VGD_STRUCTURE,
    STEIN_LR,
    STEIN_METHODS,
    EpsilonGreedy,
    NeuralGreedy,
    ParticleRewardModel,
    SteinThompson,
)
from svpg.bandits.agents.variational import (
    VARIATIONAL_LR,
    VARIATIONAL_METHODS,
    VARIATIONAL_POSTERIOR,
    VariationalThompson,
)

__all__ = [
    "UNBOUNDED",
    "Agent",
    "RewardModelAgent",
    "LinUCB",
    "Uniform",
    "AGENTS",
    "DEFAULT_AGENTS",
    "NEURAL_OPTIONS",
    "VARIATIONAL_NEURAL",
    "canonical_name",
    "make_agent",
    "S2VGD_STRUCTURE",
    "STEIN_LR",
    "STEIN_METHODS",
    "EpsilonGreedy",
    "NeuralGreedy",
    "ParticleRewardModel",
    "SteinThompson",
    "VARIATIONAL_LR",
    "VARIATIONAL_METHODS",
    "VARIATIONAL_POSTERIOR",
    "VariationalThompson",
]
