"""MLPs whose every layer is a :class:`StructuralLinear`, evaluated for all particles at once.

A forward pass is one ``torch.baddbmm`` per layer on weights (M, in, out) and inputs (M, B, in).
Effective weights are computed once per parameter update by :meth:`ParticleMLP.weights` and reused
for any number of forward passes (a whole rollout), so the structure costs nothing per environment step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import cast

import torch

from svpg.core.layers import StructuralLinear
from svpg.core.particles import ParticleLayout
from svpg.core.priors import make_prior

ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {"tanh": torch.tanh, "relu": torch.relu}

LayerWeights = list[tuple[torch.Tensor, torch.Tensor]]


@dataclass(frozen=True)
class NetworkSpec:
    """Everything that fixes a particle network's layout (stored in checkpoints).

    :param sizes: layer widths including input and output, e.g. (4, 25, 10, 2).
    :param activation: ``"tanh"`` or ``"relu"`` between layers (none after the last).
    :param householder: K reflections per side in every layer, capped at min(ℓ1, ℓ2) per layer.
    :param learn_scales: learn the diagonal scales Λ1, Λ2 (S²VGD) or fix Λ = I (plain SVGD).
    :param prior: ``"mvg"`` (eq. 14), ``"gaussian"`` (every group N(0, prior_std²)) or ``"flat"``.
    :param prior_a: Inv-Gamma shape a; :param prior_b: Inv-Gamma scale b (§5: a = 1, b = 0.1).
    :param prior_std: the fixed standard deviation of ``prior="gaussian"``.
    :param structural_output: the last layer is structural too (§3.3: W_L "can follow the same
        techniques"); False keeps it plain (K = 0, Λ = I) while the hidden layers stay structural.
    """

    sizes: tuple[int, ...]
    activation: str = "tanh"
    householder: int = 0
    learn_scales: bool = False
    prior: str = "mvg"
    prior_a: float = 1.0
    prior_b: float = 0.1
    structural_output: bool = True
    prior_std: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "sizes", tuple(int(s) for s in self.sizes))
        if len(self.sizes) < 2 or min(self.sizes) < 1:
            raise ValueError(f"network sizes must be ≥ 2 positive widths, got {self.sizes}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {self.activation!r}; choose from {sorted(ACTIVATIONS)}")
        if self.householder < 0:
            raise ValueError(f"Householder K must be ≥ 0, got {self.householder}")
        k_max = max(min(a, b) for a, b in zip(self.sizes[:-1], self.sizes[1:]))
        if self.householder > k_max:
            raise ValueError(
                f"Householder K={self.householder} exceeds min(ℓ1, ℓ2) of every layer of {self.sizes} "
                f"(at most {k_max}, §3.2); lower --householder or widen the layers"
            )

    def to_dict(self) -> dict:
        return asdict(self)


class ParticleMLP:
    """An MLP declared into a layout; all maps take the (M, D) particle tensor θ.

    Paper: https://proceedings.mlr.press/v84/zhang18a.html (S²VGD, §3.3: every layer, the output layer included, can be structural)
    """

    def __init__(self, layout: ParticleLayout, spec: NetworkSpec, name: str = "net"):
        self.spec, self.layout = spec, layout
        self.activation = ACTIVATIONS[spec.activation]
        prior = make_prior(spec.prior, spec.prior_a, spec.prior_b, spec.prior_std)
        pairs = list(zip(spec.sizes[:-1], spec.sizes[1:]))
        self.layers = []
        for i, (l1, l2) in enumerate(pairs):
            structural = spec.structural_output or i < len(pairs) - 1
            self.layers.append(
                StructuralLinear(
                    layout,
                    f"{name}.{i}",
                    l1,
                    l2,
                    householder=min(spec.householder, l1, l2) if structural else 0,
                    learn_scales=spec.learn_scales and structural,
                    prior=prior,
                )
            )

    def weights(self, theta: torch.Tensor) -> LayerWeights:
        """Effective (W, b) of every layer, W (M, ℓ1, ℓ2), b (M, 1, ℓ2)."""
        return [(layer.weight(theta), layer.bias(theta)) for layer in self.layers]

    def forward(self, weights: LayerWeights, x: torch.Tensor) -> torch.Tensor:
        """x (M, B, in) → (M, B, out)."""
        last = len(weights) - 1
        for i, (w, b) in enumerate(weights):
            x = torch.baddbmm(b, x, w)
            if i < last:
                x = self.activation(x)
        return x

    def fast_weights(self, weights: LayerWeights) -> LayerWeights:
        """Weights for :meth:`fast_forward`, which computes the same function as :meth:`forward`.

        For tanh networks the function is rewritten with sigmoids, tanh(z) = 2σ(2z) − 1, the 2s and
        −1s folded into the weights: with s = σ(2z) a layer's input h = 2s − 1 gives
        hW + b = s(2W) + (b − 1ᵀW). torch's CPU tanh kernel costs ~4–5× its sigmoid kernel; forward and
        backward cost the same otherwise (``bench/throughput.py`` prints the updates' and rollouts' times).
        Differentiable in the weights; compute once per rollout or update.
        """
        if self.activation is not torch.tanh:
            return weights
        last = len(weights) - 1
        out = []
        for i, (w, b) in enumerate(weights):
            if i > 0:
                b = b - w.sum(dim=1, keepdim=True)  # the −1 of h = 2s − 1
            scale_out = 1.0 if i == last else 2.0  # the next σ takes 2z
            out.append((w * ((1.0 if i == 0 else 2.0) * scale_out), b * scale_out))
        return out

    def fast_forward(self, fast_weights: LayerWeights, x: torch.Tensor) -> torch.Tensor:
        """:meth:`forward` from :meth:`fast_weights`: x (M, B, in) → (M, B, out)."""
        activation = torch.sigmoid if self.activation is torch.tanh else self.activation
        last = len(fast_weights) - 1
        for i, (w, b) in enumerate(fast_weights):
            x = torch.baddbmm(b, x, w)
            if i < last:
                x = activation(x)
        return x

    def structural_blocks(self) -> list[str]:
        """Layout names of every Λ and Householder-vector block (for per-block step sizes)."""
        return [b for layer in self.layers for b in layer.structural_blocks()]

    @property
    def has_householder(self) -> bool:
        """True if some layer has Householder reflections (K ≥ 1)."""
        return any(layer.k for layer in self.layers)

    @torch.no_grad()
    def normalise_householder_(self, theta: torch.Tensor) -> torch.Tensor:
        """:meth:`StructuralLinear.normalise_householder_` on every layer: Householder vectors of length
        √ℓ, the same effective weights. :class:`~svpg.core.svgd.SVGD` given this network calls it after
        every step.

        :return: the smallest ‖v‖/√ℓ before rescaling over all particles and layers, a 0-d tensor on θ's
            device (no host sync), logged as ``structure/min_householder_norm``; 1.0 for a network
            without reflections.
        """
        norms = [layer.normalise_householder_(theta) for layer in self.layers if layer.k]
        return torch.stack(norms).amin() if norms else theta.new_ones(())

    def log_prior(self, theta: torch.Tensor) -> torch.Tensor:
        """Σ over layers of eq. 14: (M,)."""
        return cast(torch.Tensor, sum(layer.log_prior(theta) for layer in self.layers))  # never empty: a tensor

    def init_(self, theta: torch.Tensor, generator: torch.Generator | None = None, out_scale: float = 1.0) -> None:
        for i, layer in enumerate(self.layers):
            layer.init_(theta, generator, scale=out_scale if i == len(self.layers) - 1 else 1.0)
