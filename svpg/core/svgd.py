"""The SVGD direction (eq. 9 of S²VGD; Liu & Wang 2016) for all particles at once.

Paper: https://proceedings.mlr.press/v84/zhang18a.html (S²VGD, eq. 9), https://arxiv.org/abs/1608.04471 (SVGD)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from svpg.core.kernels import RBFKernel, SteinKernel, make_kernel
from svpg.core.networks import ParticleMLP

if TYPE_CHECKING:
    from svpg.core.extractors import ParticleNetwork


@dataclass
class SVGDTerms:
    """φ and what it is made of, for logging; rows are particles (G·M of them for G groups)."""

    direction: torch.Tensor  # (G·M, D) φ(θ_i)
    driving: torch.Tensor  # (G·M, D) (1/M) Σ_j κ(θ_j, θ_i) ∇log p(θ_j)
    repulsive: torch.Tensor  # (G·M, D) (1/M) Σ_j ∇_{θ_j} κ(θ_j, θ_i)
    bandwidth: torch.Tensor  # 0-d, or (G,) for G > 1 groups
    groups: int = 1
    # after an SVGD.step with a network: the smallest ‖v‖/√ℓ of its Householder vectors before they were
    # rescaled, (G,) (one value per group; 1.0 without reflections); None otherwise
    min_householder_norm: torch.Tensor | None = None

    def diagnostics(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        """Bandwidth, mean norms of both terms, mean pairwise distance: 0-d tensors, or (G,) for
        G > 1 groups (one value per group), without a host sync."""
        g = self.groups
        shape = (g, -1) if g > 1 else (-1,)
        grouped = theta.view(g, -1, theta.shape[-1]) if g > 1 else theta
        m = grouped.shape[-2]
        spread = torch.cdist(grouped, grouped).sum((-2, -1)) / max(m * (m - 1), 1)
        return {
            "svgd/bandwidth": self.bandwidth,
            "svgd/driving_norm": self.driving.norm(dim=1).view(shape).mean(-1),
            "svgd/repulsive_norm": self.repulsive.norm(dim=1).view(shape).mean(-1),
            "svgd/particle_spread": spread,
        }


def svgd_terms(theta: torch.Tensor, grad_logp: torch.Tensor, kernel: SteinKernel, groups: int = 1) -> SVGDTerms:
    """Eq. 9: φ(θ_i) = (1/M) Σ_j [κ(θ_j, θ_i) ∇log p(θ_j) + ∇_{θ_j} κ(θ_j, θ_i)].

    :param groups: G; rows of θ form G consecutive groups of M particles that do not interact (the
        sum over j runs within a group): G independent SVGD runs in one computation.
    """
    if theta.ndim != 2 or grad_logp.shape != theta.shape:
        raise ValueError(
            f"theta and grad_logp must both be (M, D) tensors of the same shape, got "
            f"{tuple(theta.shape)} and {tuple(grad_logp.shape)}"
        )
    if groups < 1 or theta.shape[0] % groups:
        raise ValueError(f"{theta.shape[0]} particles cannot form {groups} equal groups")
    theta = theta.detach()
    if groups > 1:
        theta, grad_logp = theta.view(groups, -1, theta.shape[1]), grad_logp.view(groups, -1, theta.shape[1])
    m = theta.shape[-2]
    k = kernel(theta)
    driving = (k.gram @ grad_logp) / m  # κ is symmetric, so K @ g sums over j
    repulsive = k.repulsion / m
    if groups > 1:
        driving, repulsive = driving.flatten(0, 1), repulsive.flatten(0, 1)
    return SVGDTerms(driving + repulsive, driving, repulsive, k.bandwidth, groups)


def svgd_direction(
    theta: torch.Tensor,
    grad_logp: torch.Tensor,
    bandwidth: str | float = "median",
    kernel: SteinKernel | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The SVGD update direction φ of eq. 9 of S²VGD for every particle.

    :param theta: particles, shape (M, D).
    :param grad_logp: ∇_θ log p at every particle, shape (M, D).
    :param bandwidth: ``"median"`` for h = med²/log M (RBF kernel), or a fixed h > 0.
    :param kernel: optionally a kernel object (or ``"identity"`` for independent learners); overrides
        ``bandwidth``.
    :return: ``(phi, h)``: φ of shape (M, D) (ascend it: θ ← θ + ε φ) and the bandwidth used.

    Example, sampling a standard normal in 2-D::

        theta = torch.randn(50, 2) + 5
        for _ in range(500):
            phi, h = svgd_direction(theta, -theta)  # ∇log N(0, I) = −θ
            theta += 0.1 * phi
    """
    k = make_kernel(kernel) if kernel is not None else RBFKernel(bandwidth)
    terms = svgd_terms(theta, grad_logp, k)
    return terms.direction, terms.bandwidth


OPTIMIZERS = {
    "adam": torch.optim.Adam,
    "rmsprop": torch.optim.RMSprop,
    "adagrad": torch.optim.Adagrad,
    "sgd": torch.optim.SGD,
}


def make_optimizer(name: str, params, lr: float) -> torch.optim.Optimizer:
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; choose from {sorted(OPTIMIZERS)}")
    if not lr > 0:
        raise ValueError(f"learning rate must be positive, got {lr}")
    return OPTIMIZERS[name](params, lr=lr)


class SVGD:
    """Moves the particle tensor θ along φ (eq. 9) with a standard ``torch.optim`` optimizer.

    The optimizer minimises, so it is handed −φ as θ's gradient. Used by every front end: each step
    also restores the invariants of the network θ holds, so that no front end has to remember them.

    :param theta: the (M, D) leaf tensor holding all particles.
    :param kernel: ``"median"`` / a fixed bandwidth / ``"identity"`` or a kernel object.
    :param optimizer: ``"adam"``, ``"rmsprop"``, ``"adagrad"`` or ``"sgd"``.
    :param step_scale: optional (D,) multiplier of every coordinate's optimizer step: a per-block
        learning rate on the single (M, D) tensor (e.g. slower structural coordinates,
        :meth:`ParticleLayout.per_coordinate`). ``None``: the plain optimizer step.
    :param groups: G independent groups of particles in θ's rows (see :func:`svgd_terms`). The
        optimizers' statistics are per coordinate, so each group also keeps its own.
    :param network: the :class:`~svpg.core.networks.ParticleMLP` (or
        :class:`~svpg.core.extractors.ParticleNetwork`) whose blocks θ holds (required when θ holds
        one). After every step its Householder vectors are rescaled to length √ℓ
        (:meth:`~svpg.core.networks.ParticleMLP.normalise_householder_`: the same weights W), and
        :attr:`SVGDTerms.min_householder_norm` reports the smallest length before.
    """

    def __init__(
        self,
        theta: torch.Tensor,
        kernel="median",
        optimizer: str = "adam",
        lr: float = 5e-3,
        step_scale: torch.Tensor | None = None,
        groups: int = 1,
        network: ParticleMLP | ParticleNetwork | None = None,
    ):
        self.theta = theta
        self.groups = groups
        if network is not None and network.layout.size != theta.shape[1]:
            raise ValueError(
                f"network: its layout has {network.layout.size} coordinates but θ has {theta.shape[1]}; "
                "pass the network whose layout θ was built from"
            )
        self.network = network
        self.kernel = make_kernel(kernel)
        self.optimizer = make_optimizer(optimizer, [theta], lr)
        if step_scale is not None:
            if step_scale.shape != theta.shape[1:]:
                raise ValueError(
                    f"step_scale must have shape {tuple(theta.shape[1:])} (one value per coordinate), "
                    f"got {tuple(step_scale.shape)}"
                )
            step_scale = step_scale.to(theta.device, theta.dtype)
        self.step_scale = step_scale

    def step(self, grad_logp: torch.Tensor) -> SVGDTerms:
        terms = svgd_terms(self.theta, grad_logp, self.kernel, self.groups)
        scale = self.step_scale
        before = self.theta.detach().clone() if scale is not None else None
        self.theta.grad = -terms.direction
        self.optimizer.step()
        self.theta.grad = None
        if (
            scale is not None and before is not None
        ):  # θ ← θ_old + s ⊙ (θ_new − θ_old); exact per-coordinate lr for Adam/RMSprop/SGD
            with torch.no_grad():
                self.theta.sub_(before).mul_(scale).add_(before)
        if self.network is not None:
            # the likelihood sees only the directions of the Householder vectors: keep them at length √ℓ;
            # one group at a time, as each group's own run would
            blocks = self.theta.detach().view(self.groups, -1, self.theta.shape[1])
            terms.min_householder_norm = torch.stack([self.network.normalise_householder_(b) for b in blocks])
        return terms
