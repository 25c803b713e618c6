"""Reinforcement learning with Stein variational policy gradient (SVPG, S²VGD §4.2): the algorithm with
Stable-Baselines3's interface, its callbacks, its configuration and loading saved policies.

Paper: https://proceedings.mlr.press/v84/zhang18a.html (S²VGD), https://arxiv.org/abs/1704.02399 (SVPG)

    from svpg.rl import SVPG, EvalCallback, load
    model = SVPG("CartPole-v1", seed=0).learn(100_000)   # also svpg.SVPG
    policy = load("runs/<run-name>")                      # a saved particle ensemble, for acting
"""

from __future__ import annotations

import torch

from svpg.deprecation import renamed
from svpg.rl.algorithm import SVPG
from svpg.rl.callbacks import (
    BaseCallback,
    CallbackList,
    CheckpointCallback,
    EvalCallback,
    EveryNTimesteps,
    StopTrainingOnNoModelImprovement,
    StopTrainingOnRewardThreshold,
)
from svpg.rl.config import (
    ESTIMATORS,
    PAPER_TASKS,
    POLICY_METHODS,
    PRESETS,
    SVPGConfig,
    available_presets,
    load_preset,
)
from svpg.rl.policies import ParticlePolicy

__all__ = [
    "SVPG",
    "SVPGConfig",
    "BaseCallback",
    "CallbackList",
    "CheckpointCallback",
    "EvalCallback",
    "EveryNTimesteps",
    "StopTrainingOnRewardThreshold",
    "StopTrainingOnNoModelImprovement",
    "ParticlePolicy",
    "load",
    "load_preset",
    "available_presets",
    "POLICY_METHODS",
    "ESTIMATORS",
    "PAPER_TASKS",
    "PRESETS",
]


def load(path, device: str | torch.device = "cpu", particle: int | None = None) -> ParticlePolicy:
    """Load a saved particle ensemble (a run folder or a ``.safetensors`` checkpoint) for acting.

    :param particle: the particle :meth:`~ParticlePolicy.predict` acts with (default: the best one at
        save time).
    """
    from svpg.rl.policies import load_policy

    policy = load_policy(path, device=device)
    if particle is not None:
        policy.set_particle(particle)
    return policy


# the former names
__getattr__ = renamed(__name__, {"METHODS": "POLICY_METHODS", "TASKS": "PAPER_TASKS"}, globals())
