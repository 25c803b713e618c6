"""Reproduction harnesses: ``python -m svpg.experiments.rl`` and ``python -m svpg.experiments.sb3``."""
