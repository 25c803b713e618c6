"""The table of a Showdown data set (docs/bandits.md): our agents beside the papers' published figures.

Per agent: seeds, normalised regret (uniform = 100) and reward / optimal reward, mean ± standard error over
seeds; the paired difference of the normalised regret to S²VGD with its 95 % Student-t interval
(:func:`svpg.stats.paired_difference`); the median seconds per run; and the figure of the same posterior
family in the Kronecker-flow paper's Table 4 and BADAM's Table 1, as printed there. ``bench/bandit_showdown_table.py``
prints it from run folders, ``python -m svpg.report`` from the rows of ``bench/results/bandit_showdown.csv``.
"""

from __future__ import annotations

import math

import numpy as np

from svpg.stats import cell, format_difference, paired_difference

# Huang et al. 2020 (arXiv:1906.04282), Table 4: normalised cumulative regret, mean ± s.e. over 3 seeds
KFLOW = {
    "statlog": {"SGD": "1.29 ± 0.20", "fBNN": "0.73 ± 0.01", "Diag": "1.01 ± 0.01", "K-Diag": "0.84 ± 0.06",
                "K-Linear": "0.81 ± 0.01", "K-Nonlinear": "0.79 ± 0.04"},
    "covertype": {"SGD": "30.01 ± 0.21", "fBNN": "32.03 ± 0.40", "Diag": "28.42 ± 0.30", "K-Diag": "29.19 ± 0.16",
                  "K-Linear": "28.13 ± 0.12", "K-Nonlinear": "28.06 ± 0.15"},
    "financial": {"SGD": "6.08 ± 0.47", "fBNN": "7.27 ± 1.09", "Diag": "7.43 ± 0.57", "K-Diag": "5.88 ± 0.25",
                  "K-Linear": "5.88 ± 0.35", "K-Nonlinear": "5.78 ± 0.28"},
    "adult": {"SGD": "79.31 ± 0.47", "fBNN": "84.45 ± 0.82", "Diag": "76.32 ± 0.09", "K-Diag": "77.28 ± 0.01",
              "K-Linear": "75.94 ± 0.12", "K-Nonlinear": "77.30 ± 0.26"},
}  # fmt: skip
# Salas et al. 2018 (arXiv:1811.03679), Table 1: reward / optimal reward, mean ± s.e. over 10 runs
BADAM = {
    "statlog": {"BADAM": "0.97 ± 0.02", "MC Dropout": "0.98 ± 0.02", "BBB": "0.69 ± 0.11", "Greedy": "0.97 ± 0.02",
                "Uniform": "0.14 ± 0.00"},
    "covertype": {"BADAM": "0.52 ± 0.06", "MC Dropout": "0.52 ± 0.06", "BBB": "0.43 ± 0.05", "Greedy": "0.57 ± 0.04",
                  "Uniform": "0.14 ± 0.00"},
    "financial": {"BADAM": "0.89 ± 0.03", "MC Dropout": "0.88 ± 0.03", "BBB": "0.09 ± 0.15", "Greedy": "0.91 ± 0.02",
                  "Uniform": "-0.00 ± 0.01"},
    "adult": {"BADAM": "0.19 ± 0.02", "MC Dropout": "0.18 ± 0.02", "BBB": "0.12 ± 0.01", "Greedy": "0.17 ± 0.02",
              "Uniform": "0.07 ± 0.00"},
}  # fmt: skip
#: which of the papers' columns is our agent (the same posterior family, their networks and schedules)
OURS = {"neural-greedy": ("SGD", "Greedy"), "bbb": ("Diag", "BBB"), "kflow-diag": ("K-Diag", None),
        "kflow-linear": ("K-Linear", None), "badam": (None, "BADAM"), "uniform": (None, "Uniform")}  # fmt: skip
#: the agents' order in the tables
ORDER = ("s2vgd", "svgd", "bbb", "vmg", "kflow-diag", "kflow-linear", "badam", "neural-greedy", "eps-greedy-0.01",
         "linucb", "uniform")  # fmt: skip
HEADER = ("agent", "seeds", "normalised regret (uniform = 100)", "reward / optimal", "minus S²VGD: mean [95 % CI]",
          "s per run", "Huang et al. T4 (regret)", "Salas et al. T1 (reward / optimal)")  # fmt: skip


def measured_cells(runs: dict[tuple[str, int], dict], agent: str, reference: str = "s2vgd") -> list | None:
    """The agent's measured cells (seeds, normalised regret, reward / optimal, paired difference to
    ``reference``, median seconds per run) from ``{(agent, seed): metrics}`` (:func:`svpg.bandits.compare.load_runs`);
    None if it has no seed. The reference's own difference is empty, and so is every difference without it."""
    seeds = sorted({s for _, s in runs})
    own = {s: runs[(agent, s)] for s in seeds if (agent, s) in runs}
    if not own:
        return None
    ref = {s: runs[(reference, s)]["normalised_regret"] for s in seeds if (reference, s) in runs}
    reg = {s: v["normalised_regret"] for s, v in own.items()}
    secs = float(np.median([v["seconds"] for v in own.values()]))
    diff = "" if agent == reference or not ref else format_difference(*paired_difference(reg, ref), digits=2)
    ratio = cell([v["reward_ratio"] for v in own.values()], 3)
    return [len(own), cell(reg.values(), 2), ratio, diff, f"{secs:.0f}" if math.isfinite(secs) else "–"]


def published_cells(problem: str, agent: str) -> list[str]:
    """The papers' figures for ``agent``'s posterior family on ``problem``, each with the paper's name for it."""
    k, b = OURS.get(agent, (None, None))
    return [f"{KFLOW[problem][k]} ({k})" if k else "", f"{BADAM[problem][b]} ({b})" if b else ""]


def not_here_rows(problem: str, agents) -> list[list[str]]:
    """Rows of the papers' methods that none of ``agents`` stands for (in italics, their figure only)."""
    used_k = {OURS.get(a, (None, None))[0] for a in agents}
    used_b = {OURS.get(a, (None, None))[1] for a in agents}
    rows = [[f"*{k} (not here)*", "", "", "", "", "", KFLOW[problem][k], ""] for k in KFLOW[problem] if k not in used_k]
    rows += [
        [f"*{b} (not here)*", "", "", "", "", "", "", BADAM[problem][b]] for b in BADAM[problem] if b not in used_b
    ]
    return rows


def ordered(agents) -> list[str]:
    """``agents`` in the tables' order (:data:`ORDER`; others after it, in the order given)."""
    return sorted(agents, key=lambda a: ORDER.index(a) if a in ORDER else len(ORDER))
