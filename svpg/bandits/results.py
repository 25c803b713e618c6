"""The results of a bandit comparison and their tables (Riquelme et al. 2018's metrics).

Paper: https://arxiv.org/abs/1802.09127

Reported per agent and seed:

* cumulative regret Σ_t [max_a E r(x_t, a) − r_t(a_t)] (realised rewards);
* cumulative pseudo-regret Σ_t [max_a E r(x_t, a) − E r(x_t, a_t)];
* normalised regret: 100 × the agent's cumulative regret / the uniform policy's on the same table
  (as the Kronecker-flow paper's Table 4);
* reward ratio Σ_t r_t(a_t) / Σ_t r_t(a*_t) (the normalisation of BADAM's Tables 1–2).

The tables report mean ± standard error over seeds (:mod:`svpg.stats`). This module depends on no other part of :mod:`svpg.bandits`: the protocol produces these results,
:mod:`svpg.bandits.report` and :mod:`svpg.bandits.runfolder` write and read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class AgentRun:
    """One agent on one seed's table."""

    agent: str
    seed: int
    actions: np.ndarray
    regret: np.ndarray  # (T,) per-round regret
    expected_regret: np.ndarray  # (T,) per-round pseudo-regret
    rewards: np.ndarray  # (T,) realised rewards
    optimal_reward_total: float  # Σ_t r_t(a*_t)
    seconds: float
    hyperparameters: dict = field(default_factory=dict)

    @property
    def cumulative_regret(self) -> np.ndarray:
        return np.cumsum(self.regret)

    @property
    def final_regret(self) -> float:
        return float(self.regret.sum())

    @property
    def reward_ratio(self) -> float:
        return float(self.rewards.sum() / self.optimal_reward_total) if self.optimal_reward_total else float("nan")


@dataclass
class BanditResults:
    """Every agent's runs on every seed, with the problem description (files and figures: :mod:`svpg.bandits.report`)."""

    problem: dict
    rounds: int
    seeds: list[int]
    agents: list[str]
    runs: list[AgentRun]

    def get(self, agent: str, seed: int) -> AgentRun:
        for run in self.runs:
            if run.agent == agent and run.seed == seed:
                return run
        raise KeyError(f"no run of agent {agent!r} on seed {seed}")

    def normalised_regret(self, agent: str, seed: int) -> float:
        """100 × cumulative regret / the uniform policy's on the same table (nan without a uniform run)."""
        try:
            ref = self.get("uniform", seed).final_regret
        except KeyError:
            return float("nan")
        return 100.0 * self.get(agent, seed).final_regret / ref if ref else float("nan")

    def summary(self):
        """One row per agent: final cumulative regret, normalised regret, reward ratio (mean, std, sem over seeds)."""
        return summary_frame(self)

    def to_markdown(self) -> str:
        """:func:`markdown_table` of these results."""
        return markdown_table(self)


def per_seed_frame(results: BanditResults):
    """One row per (agent, seed)."""
    import pandas as pd

    rows = []
    for r in results.runs:
        rows.append(
            {
                "agent": r.agent,
                "seed": r.seed,
                "rounds": len(r.actions),
                "cumulative_regret": r.final_regret,
                "normalised_regret": results.normalised_regret(r.agent, r.seed),
                "cumulative_pseudo_regret": float(r.expected_regret.sum()),
                "cumulative_reward": float(r.rewards.sum()),
                "reward_ratio": r.reward_ratio,
                "seconds": r.seconds,
            }
        )
    return pd.DataFrame(rows)


def summary_frame(results: BanditResults):
    """One row per agent: mean, std and standard error over seeds."""
    import pandas as pd

    df = per_seed_frame(results)
    rows = []
    for agent in results.agents:
        d = df[df.agent == agent]
        n = len(d)

        def stats(col, d=d, n=n):
            v = d[col].to_numpy(dtype=np.float64)
            sd = float(v.std(ddof=1)) if n > 1 else 0.0
            return float(v.mean()), sd, sd / np.sqrt(n)

        reg, norm, pseudo, ratio = (
            stats("cumulative_regret"),
            stats("normalised_regret"),
            stats("cumulative_pseudo_regret"),
            stats("reward_ratio"),
        )
        rows.append(
            {
                "agent": agent,
                "seeds": n,
                "cumulative_regret_mean": reg[0],
                "cumulative_regret_std": reg[1],
                "normalised_regret_mean": norm[0],
                "normalised_regret_std": norm[1],
                "normalised_regret_sem": norm[2],
                "pseudo_regret_mean": pseudo[0],
                "pseudo_regret_std": pseudo[1],
                "reward_ratio_mean": ratio[0],
                "reward_ratio_std": ratio[1],
                "seconds_mean": float(d.seconds.mean()),
            }
        )
    return pd.DataFrame(rows)


def markdown_table(results: BanditResults) -> str:
    """Final cumulative regret and normalised regret (uniform = 100) per agent, mean ± standard error over seeds."""
    from svpg.stats import cell, convention
    from svpg.stats import markdown_table as table

    df = per_seed_frame(results)
    p = results.problem
    means = {agent: df.loc[df.agent == agent, "cumulative_regret"].mean() for agent in results.agents}
    learners = [m for a, m in means.items() if a != "uniform"]
    best = min(learners) if learners else None
    rows = []
    for agent in results.agents:
        d = df[df.agent == agent]
        rows.append(
            [
                f"**{agent}**" if best is not None and means[agent] == best else agent,
                cell(d.cumulative_regret, 1),
                cell(d.normalised_regret, 2),
                cell(d.cumulative_pseudo_regret, 1),
                cell(d.reward_ratio, 3),
                f"{d.seconds.mean():.1f}",
            ]
        )
    header = (
        f"**{p.get('name', 'bandit')}** — {results.rounds} rounds, {len(results.seeds)} seed(s) "
        f"({', '.join(map(str, results.seeds))}); {convention('seeds', results.seeds)}; "
        f"normalised regret = 100 × regret / uniform's regret on the same table."
    )
    return (
        header
        + "\n\n"
        + table(
            [
                "agent",
                "cumulative regret",
                "normalised regret (uniform = 100)",
                "cumulative pseudo-regret",
                "reward / optimal reward",
                "seconds per run",
            ],
            rows,
        )
    )
