"""Contextual bandits: Stein Thompson sampling (Algorithm 1 of S²VGD, §4.1) and baselines, evaluated by
the protocol of the Deep Bayesian Bandits Showdown (Riquelme et al. 2018).

Papers: https://proceedings.mlr.press/v84/zhang18a.html (S²VGD), https://arxiv.org/abs/1802.09127 (Showdown)

A problem draws one table of contexts and rewards per seed; every agent plays the same tables::

    import svpg.bandits as bandits

    problem = bandits.make_problem("mushroom")            # or WheelBandit(delta=0.9), ClassificationBandit(X, y)
    results = bandits.run(problem, ["s2vgd", "linucb", "eps-greedy-0.01"], rounds=5000, seeds=2)
    print(results.to_markdown())                          # cumulative regret, normalised regret (uniform = 100)
    results.summary()                                     # the same as a pandas DataFrame
    bandits.save_results(results, "runs/my-bandit")       # CSVs, PNG, Markdown, TensorBoard

    agent = bandits.SteinThompson(problem.num_actions, problem.context_dim, method="s2vgd", num_particles=20)
    actions = bandits.play(agent, problem.table(rounds=1000, seed=0))

Same seed, same machine: bit-identical results. The table of seed s and every agent draw from their
own :mod:`svpg.seeding` streams of s, never from a global RNG. ``run`` and ``play`` use
``svpg.runtime.DEFAULT_THREADS`` torch threads (as the CLI) unless given ``threads=``.
``python train.py bandit`` saves each finished seed in its run folder and can resume (:mod:`svpg.bandits.cli`).
"""

from __future__ import annotations

from svpg.bandits.agents import (
    AGENTS,
    DEFAULT_AGENTS,
    S2VGD_STRUCTURE,
    STEIN_LR,
    STEIN_METHODS,
    VARIATIONAL_LR,
    VARIATIONAL_METHODS,
    Agent,
    EpsilonGreedy,
    LinUCB,
    NeuralGreedy,
    SteinThompson,
    Uniform,
    VariationalThompson,
    make_agent,
)
from svpg.bandits.problem_registry import PROBLEMS, ProblemEntry, make_problem, register_problem
from svpg.bandits.problems import (
    BanditProblem,
    BanditTable,
    ClassificationBandit,
    MushroomBandit,
    WheelBandit,
)
from svpg.bandits.protocol import play, run
from svpg.bandits.report import save_results
from svpg.bandits.results import AgentRun, BanditResults

__all__ = [
    "AGENTS",
    "DEFAULT_AGENTS",
    "Agent",
    "SteinThompson",
    "NeuralGreedy",
    "EpsilonGreedy",
    "LinUCB",
    "Uniform",
    "VariationalThompson",
    "VARIATIONAL_METHODS",
    "VARIATIONAL_LR",
    "STEIN_LR",
    "STEIN_METHODS",
    "S2VGD_STRUCTURE",
    "make_agent",
    "BanditProblem",
    "BanditTable",
    "MushroomBandit",
    "WheelBandit",
    "ClassificationBandit",
    "make_problem",
    "PROBLEMS",
    "ProblemEntry",
    "register_problem",
    "play",
    "run",
    "AgentRun",
    "BanditResults",
    "save_results",
]
