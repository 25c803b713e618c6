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

from svpg.bandits.compare import load_runs  # noqa: E402
from svpg.bandits.showdown_table import HEADER, measured_cells, not_here_rows, ordered, published_cells  # noqa: E402
from svpg.stats import convention, markdown_table  # noqa: E402


def table(run_dirs: list[str], reference: str = "s2vgd") -> str:
    config, runs = load_runs(run_dirs)
    problem = config["problem"]
    agents = ordered({a for a, _ in runs})
    seeds = sorted({s for _, s in runs})
    rows = []
    for agent in agents:
        name = f"**{agent}**" if agent == reference else agent
        rows.append([name, *measured_cells(runs, agent, reference), *published_cells(problem, agent)])
    rows += not_here_rows(problem, agents)
    head = f"**{problem}**, {config['rounds']} rounds, seeds {seeds[0]}–{seeds[-1]}" if seeds else problem
    note = (f"{convention('seeds', seeds, paired=reference)}; the papers' columns as printed there "
            "(Huang et al.: mean ± s.e. over 3 seeds; Salas et al.: mean ± s.e. over 10 runs)")
    return head + f"\n\n({note})\n\n" + markdown_table(HEADER, rows)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="run folders of one problem")
    p.add_argument("--reference", default="s2vgd")
    args = p.parse_args()
    print(table(args.runs, args.reference))
    return 0


if __name__ == "__main__":
    sys.exit(main())
