"""svpg: Stein variational policy gradient with structural weight uncertainty (S²VGD).

Public entry points::

    svpg.svgd_direction(theta, grad_logp, bandwidth="median")   # φ of eq. 9 and the bandwidth
    policy = svpg.load("runs/<run-name>")                       # a saved particle ensemble
    policy.predict(obs, deterministic=True)                     # SB3 convention: (actions, None)
"""
from __future__ import annotations

from svpg.core.kernels import IdentityKernel, RBFKernel
from svpg.core.svgd import SVGD, svgd_direction
from svpg.io import CheckpointError

__version__ = "0.1.0"
__all__ = ["svgd_direction", "SVGD", "RBFKernel", "IdentityKernel", "load", "CheckpointError", "__version__"]


def load(path, device: str = "cpu", particle: int | None = None):
    """Load a saved particle ensemble (a run folder or a ``.safetensors`` checkpoint).

    :param particle: the particle :meth:`predict` acts with (default: the best one at save time).
    """
    from svpg.rl.policies import load_policy

    policy = load_policy(path, device=device)
    if particle is not None:
        policy.set_particle(particle)
    return policy
