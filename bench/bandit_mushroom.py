#!/usr/bin/env python
"""Wall-clock of bandit agents on the mushroom bandit (target: 50,000 rounds in ≤ 5 minutes on one
CPU core, e.g. Stein Thompson sampling with 20 particles): `bench/bandit_showdown.py --problem mushroom`.

    python bench/bandit_mushroom.py                          # s2vgd, M = 20, 50,000 rounds, 1 thread
    python bench/bandit_mushroom.py --agents svgd --rounds 10000
    python bench/bandit_mushroom.py --agents bbb,vmg,kflow-diag,kflow-linear,badam

Prints, per agent, the total wall-clock, the split between acting and training, the time per
training step (SVGD or Adam) and the run's regret (normalised by the uniform policy on the same
table). Not a test: timings depend on the machine and its load.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bandit_showdown import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main("python bench/bandit_mushroom.py", __doc__, default_problem="mushroom"))
