#!/usr/bin/env python
"""One Markdown table per Showdown problem: our agents (mean ± standard error over seeds, paired 95 %
intervals of every agent minus S²VGD) beside the Kronecker-flow paper's Table 4 and BADAM's Table 1.

    python bench/bandit_showdown_table.py runs/showdown-statlog runs/showdown-financial …

Each argument is a finished (or partly finished) run folder of ``train.py bandit``; runs of one problem
are merged and paired by seed as ``python -m svpg.bandits.compare`` does.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from svpg.bandits.compare import load_runs  # noqa: E402
from svpg.stats import cell, convention, format_difference, markdown_table, paired_difference  # noqa: E402

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
}
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
}
# which of the papers' columns is our agent (the same posterior family, their networks and schedules)
OURS = {"neural-greedy": ("SGD", "Greedy"), "bbb": ("Diag", "BBB"), "kflow-diag": ("K-Diag", None),
        "kflow-linear": ("K-Linear", None), "badam": (None, "BADAM"), "uniform": (None, "Uniform")}
ORDER = ("s2vgd", "svgd", "bbb", "vmg", "kflow-diag", "kflow-linear", "badam", "neural-greedy", "eps-greedy-0.01",
         "linucb", "uniform")


def table(run_dirs: list[str], reference: str = "s2vgd") -> str:
    config, runs = load_runs(run_dirs)
    problem = config["problem"]
    agents = sorted({a for a, _ in runs}, key=lambda a: ORDER.index(a) if a in ORDER else len(ORDER))
    seeds = sorted({s for _, s in runs})
    ref = {s: runs[(reference, s)]["normalised_regret"] for s in seeds if (reference, s) in runs}
    header = ["agent", "seeds", "normalised regret (uniform = 100)", "reward / optimal",
              "minus S²VGD: mean [95 % CI]", "s per run", "Huang et al. T4 (regret)", "Salas et al. T1 (reward / optimal)"]
    rows = []
    used_k, used_b = set(), set()
    for agent in agents:
        own = {s: runs[(agent, s)] for s in seeds if (agent, s) in runs}
        reg = {s: v["normalised_regret"] for s, v in own.items()}
        secs = float(np.median([v["seconds"] for v in own.values()]))
        diff = "" if agent == reference or not ref else format_difference(*paired_difference(reg, ref), digits=2)
        k, b = OURS.get(agent, (None, None))
        used_k.add(k), used_b.add(b)
        kval = f"{KFLOW[problem][k]} ({k})" if k else ""
        bval = f"{BADAM[problem][b]} ({b})" if b else ""
        name = f"**{agent}**" if agent == reference else agent
        rows.append([name, len(own), cell(reg.values(), 2), cell([v["reward_ratio"] for v in own.values()], 3), diff,
                     f"{secs:.0f}", kval, bval])
    rows += [[f"*{k} (not here)*", "", "", "", "", "", KFLOW[problem][k], ""] for k in KFLOW[problem] if k not in used_k]
    rows += [[f"*{b} (not here)*", "", "", "", "", "", "", BADAM[problem][b]] for b in BADAM[problem] if b not in used_b]
    head = f"**{problem}**, {config['rounds']} rounds, seeds {seeds[0]}–{seeds[-1]}" if seeds else problem
    note = (f"{convention('seeds', seeds, paired=reference)}; the papers' columns as printed there "
            "(Huang et al.: mean ± s.e. over 3 seeds; Salas et al.: mean ± s.e. over 10 runs)")
    return head + f"\n\n({note})\n\n" + markdown_table(header, rows)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="run folders of one problem")
    p.add_argument("--reference", default="s2vgd")
    args = p.parse_args()
    print(table(args.runs, args.reference))
    return 0


if __name__ == "__main__":
    sys.exit(main())
