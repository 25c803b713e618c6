"""The studies, apart from the library: each a command that trains grids of runs and writes their tables.

    python -m svpg.studies.benchmark     # svpg against SB3 at equal environment steps (on- and off-policy)
    python -m svpg.studies.experiments   # the paper's RL grid: methods × estimators × seeds on a task's preset
    python -m svpg.studies.ablation      # the structure ablation (K × prior × α) and its analysis
    python -m svpg.studies.sb3           # the paper grid's SB3 A2C and PPO baselines

:mod:`svpg.studies.sb3` is the one SB3 runner the benchmark and the baselines share. The studies import
the library (``svpg.rl`` and below); nothing in the library imports them.
"""
