"""The evaluation protocol of the Deep Bayesian Bandits Showdown (Riquelme et al. 2018).

Paper: https://arxiv.org/abs/1802.09127

For every seed one :class:`~svpg.bandits.problems.BanditTable` is drawn up front (contexts and the
reward of every arm in every round) and every agent plays on that same table, so agents differ only
through their own choices. What is reported per agent and seed: :mod:`svpg.bandits.results`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import cast

import numpy as np

from svpg.bandits.agents import Agent, canonical_name, make_agent
from svpg.bandits.problems import BanditProblem, BanditTable
from svpg.bandits.results import AgentRun, BanditResults
from svpg.runtime import DEFAULT_THREADS, torch_threads

# callback(agent_name, seed, rounds_done, cumulative_regret, info) after every window
Callback = Callable[[str, int, int, float, dict], None]
AgentFactory = Callable[[BanditProblem, int], Agent]


def play(
    agent: Agent,
    table: BanditTable,
    callback: Callable[[int, float, dict], None] | None = None,
    threads: int | None = DEFAULT_THREADS,
) -> np.ndarray:
    """Let ``agent`` play every round of ``table``; returns its actions (T,).

    The agent acts in windows (``agent.window(t)`` rounds at a time) and only ever sees the rewards of
    the arms it played. ``callback(rounds_done, cumulative_regret, info)`` runs after every window.

    :param threads: torch CPU threads while playing (default ``svpg.runtime.DEFAULT_THREADS``, as the
        CLI's ``--threads``; None: leave torch's setting); the previous setting is restored afterwards.
    """
    if agent.context_dim != table.contexts.shape[1] or agent.num_actions != table.num_actions:
        raise ValueError(
            f"agent {agent.name!r} was built for {agent.context_dim}-dimensional contexts and {agent.num_actions} arms, "
            f"but the problem has {table.contexts.shape[1]}-dimensional contexts and {table.num_actions} arms; build it "
            f"with make_agent(name, problem.num_actions, problem.context_dim)"
        )
    with torch_threads(threads):
        return _play(agent, table, callback)


def _play(agent: Agent, table: BanditTable, callback) -> np.ndarray:
    rounds = table.rounds
    actions = np.empty(rounds, dtype=np.int64)
    optimal = table.optimal_expected
    regret = 0.0
    t = 0
    while t < rounds:
        n = min(int(agent.window(t)), rounds - t)
        if n < 1:
            raise ValueError(f"agent {agent.name!r}: window({t}) returned {n}; it must be ≥ 1")
        contexts = table.contexts[t : t + n]
        a = np.asarray(agent.act(contexts, t)).reshape(-1).astype(np.int64)
        if a.shape[0] != n or (a.min() < 0) or (a.max() >= table.num_actions):
            raise ValueError(
                f"agent {agent.name!r}: act() must return {n} arms in [0, {table.num_actions}), got {a[:10]}…"
            )
        r = table.play(a, t)
        info = agent.update(contexts, a, r, t) or {}
        actions[t : t + n] = a
        regret += float(optimal[t : t + n].sum() - r.sum())
        t += n
        if callback is not None:
            callback(t, regret, info)
    return actions


def _as_factory(agent: str | AgentFactory, options: dict) -> tuple[str, AgentFactory]:
    if isinstance(agent, str):
        name = canonical_name(agent)
        return name, lambda problem, seed: make_agent(
            name, problem.num_actions, problem.context_dim, seed=seed, **options
        )
    if callable(agent):
        label = getattr(agent, "name", None) or getattr(agent, "__name__", "custom")
        return cast(str, label), agent  # a factory's name (or function name) is a string
    raise ValueError(
        f"an agent must be a name (see svpg.bandits.AGENTS) or a callable (problem, seed) -> Agent, got {agent!r}"
    )


def agent_factories(
    problem: BanditProblem, agents, include_uniform: bool = True, **options
) -> list[tuple[str, AgentFactory]]:
    """``(name, factory)`` of every agent, checked up front: unknown names, bad options and duplicates
    are a ValueError before any round is played. See :func:`run` for the arguments."""
    if not isinstance(problem, BanditProblem):
        raise ValueError(f"problem must be a BanditProblem (e.g. make_problem('mushroom')), got {problem!r}")
    if isinstance(agents, str):
        agents = [a for a in agents.split(",") if a.strip()]
    if not agents:
        raise ValueError("no agents given; name at least one, e.g. ['s2vgd', 'linucb']")
    factories = [_as_factory(a, options) for a in agents]
    if include_uniform and "uniform" not in [n for n, _ in factories]:
        factories.append(_as_factory("uniform", options))
    names = [n for n, _ in factories]
    if len(set(names)) != len(names):
        raise ValueError(f"an agent is named twice (greedy, neural-greedy and eps-greedy-0 are one agent): {names}")
    for agent in agents:
        if isinstance(agent, str):
            make_agent(agent, problem.num_actions, problem.context_dim, **options)
    return factories


def run_seed(
    problem: BanditProblem,
    factories: list[tuple[str, AgentFactory]],
    rounds: int,
    seed: int,
    callback: Callback | None = None,
    threads: int | None = DEFAULT_THREADS,
) -> list[AgentRun]:
    """Every agent of :func:`agent_factories` on the table of one seed, in order (see :func:`run`)."""
    table = problem.table(rounds, seed)
    runs = []
    for name, factory in factories:
        agent = factory(problem, seed)
        cb = None if callback is None else (lambda t, reg, info, _n=name: callback(_n, seed, t, reg, info))
        start = time.perf_counter()
        actions = play(agent, table, cb, threads)
        seconds = time.perf_counter() - start
        rewards = table.play(actions)
        runs.append(
            AgentRun(
                name,
                seed,
                actions,
                table.optimal_expected - rewards,
                table.expected_regret(actions),
                rewards,
                float(table.optimal_rewards.sum()),
                seconds,
                agent.hyperparameters(),
            )
        )
    return runs


def run(
    problem: BanditProblem,
    agents,
    rounds: int,
    seeds: int | list[int] = 1,
    seed: int = 0,
    callback: Callback | None = None,
    include_uniform: bool = True,
    threads: int | None = DEFAULT_THREADS,
    **options,
) -> BanditResults:
    """Run every agent on the same pre-drawn tables, one table per seed.

    Same arguments, same machine: bit-identical results (every agent and table draws from its own
    :mod:`svpg.seeding` stream of its seed; no global RNG is used).

    :param problem: a :class:`BanditProblem` (``make_problem("mushroom")``, ``WheelBandit(0.9)``,
        ``ClassificationBandit(X, y)``, …).
    :param agents: names (``"s2vgd"``, ``"linucb"``, …; a comma-separated string works too) or
        callables ``(problem, seed) -> Agent``.
    :param rounds: T. :param seeds: a count (seeds ``seed, seed + 1, …``) or an explicit list.
    :param callback: ``callback(agent, seed, rounds_done, cumulative_regret, info)`` after every window.
    :param include_uniform: add the uniform policy if missing (it is the normalisation reference).
    :param threads: torch CPU threads while agents play (default ``svpg.runtime.DEFAULT_THREADS``, as
        the CLI's ``--threads``; None: leave torch's setting); the previous setting is restored afterwards.
    :param options: agent options (see :func:`~svpg.bandits.agents.make_agent`).
    """
    factories = agent_factories(problem, agents, include_uniform, **options)
    seed_list = list(range(seed, seed + int(seeds))) if isinstance(seeds, int) else [int(s) for s in seeds]
    if not seed_list:
        raise ValueError("seeds must be ≥ 1")
    runs = [r for s in seed_list for r in run_seed(problem, factories, rounds, s, callback, threads)]
    return BanditResults(problem.describe(), int(rounds), seed_list, [n for n, _ in factories], runs)
