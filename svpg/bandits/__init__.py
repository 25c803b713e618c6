"""Contextual bandits: Stein Thompson sampling (Algorithm 1 of S²VGD) and baselines (DESIGN §5)."""
