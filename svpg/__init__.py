"""svpg: Stein variational policy gradient with structural weight uncertainty (S²VGD).

Public entry points::

    model = svpg.SVPG("CartPole-v1", seed=0).learn(100_000)    # train (Stable-Baselines3's interface)
    model.save("cartpole"); model = svpg.SVPG.load("cartpole")  # everything needed to continue
    policy = svpg.load("runs/<run-name>")                       # a saved particle ensemble, for acting
    policy.predict(obs, deterministic=True)                     # SB3 convention: (actions, None)
    svpg.svgd_direction(theta, grad_logp, bandwidth="median")   # φ of eq. 9 and the bandwidth

Importing svpg registers its tasks with Gymnasium (``svpg/CartPoleSwingUp-v0``, …); without importing
it, ``gym.make("svpg:svpg/CartPoleSwingUp-v0")`` imports it first.
"""

from __future__ import annotations

from svpg import envs as _envs  # noqa: F401  (registers the svpg/* Gymnasium ids)
from svpg.core.kernels import IdentityKernel, RBFKernel
from svpg.core.svgd import SVGD, svgd_direction
from svpg.io import CheckpointError
from svpg.rl import (
    SVPG,
    BaseCallback,
    CallbackList,
    CheckpointCallback,
    EvalCallback,
    EveryNTimesteps,
    StopTrainingOnNoModelImprovement,
    StopTrainingOnRewardThreshold,
    load,
)

__version__ = "0.1.0"
__all__ = [
    "SVPG",
    "BaseCallback",
    "CallbackList",
    "CheckpointCallback",
    "EvalCallback",
    "EveryNTimesteps",
    "StopTrainingOnRewardThreshold",
    "StopTrainingOnNoModelImprovement",
    "svgd_direction",
    "SVGD",
    "RBFKernel",
    "IdentityKernel",
    "load",
    "CheckpointError",
    "__version__",
]
