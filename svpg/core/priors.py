"""Priors over a particle's coordinates (eq. 14 of S²VGD).

Every weight group g has a Gaussian prior N(0, σ_g²) whose log-variance s_g = log σ_g² is itself a
coordinate of the particle with an Inv-Gamma(a, b) hyperprior (a = 1, b = 0.1 in §5), as in Liu &
Wang's SVGD Bayesian neural network. Densities of s include the Jacobian of v = e^s. The same groups
can instead share one fixed variance (:class:`GaussianPrior`) or have no prior at all (:class:`FlatPrior`).
"""

from __future__ import annotations

import math
from typing import cast

import torch

from svpg.core.probability import inverse_gamma_log_prob_of_log, isotropic_gaussian_log_prob

#: prior names of the RL and bandit command lines (make_prior also takes "hierarchical" for "mvg")
PRIORS = ("mvg", "flat")


class HierarchicalGaussianPrior:
    """Eq. 14: groups ~ N(0, v_g), v_g ~ Inv-Gamma(a, b), with log v_g a particle coordinate.

    Paper: https://proceedings.mlr.press/v84/zhang18a.html (S²VGD, eq. 14)
    """

    name = "mvg"
    learns_variances = True

    def __init__(self, a: float = 1.0, b: float = 0.1):
        if a <= 0 or b <= 0:
            raise ValueError(f"Inv-Gamma hyperparameters must be positive, got a={a}, b={b}")
        self.a, self.b = float(a), float(b)

    def group_log_prob(self, values: list[torch.Tensor], log_var: torch.Tensor | None) -> torch.Tensor:
        """Log density of the tensors sharing one variance, plus the hyperprior on it: (M,)."""
        if log_var is None:
            raise ValueError("eq. 14 needs the group's log-variance coordinate (learns_variances is True)")
        lp = inverse_gamma_log_prob_of_log(log_var, self.a, self.b)
        for v in values:
            lp = lp + isotropic_gaussian_log_prob(v, log_var)
        return lp

    def __repr__(self) -> str:
        return f"HierarchicalGaussianPrior(a={self.a}, b={self.b})"


class GaussianPrior:
    """Every group ~ N(0, std² I) with std fixed: eq. 14 without its hyperpriors.

    The prior of the S²VGD authors' MNIST code (std 1; ``Classification/MNIST.py`` of
    https://github.com/zhangry868/Learning-Structural-Weight-Uncertainty). Under the hierarchical prior the
    joint mode of a wide layer's weights and their variance is degenerate: shrinking D weights towards 0
    while their variance follows gains about (D/2)·log of the shrinkage in log prior, more than a
    classifier's whole likelihood when D is 3·10⁵ (784×400), so point estimates and a few particles
    collapse; a fixed variance has no such mode.
    """

    name = "gaussian"
    learns_variances = False

    def __init__(self, std: float = 1.0):
        if not std > 0:
            raise ValueError(f"the Gaussian prior's std must be positive, got {std}")
        self.std = float(std)

    def group_log_prob(self, values: list[torch.Tensor], log_var: torch.Tensor | None) -> torch.Tensor:
        fixed = values[0].new_full((values[0].shape[0],), 2.0 * math.log(self.std))
        return cast(torch.Tensor, sum(isotropic_gaussian_log_prob(v, fixed) for v in values))

    def __repr__(self) -> str:
        return f"GaussianPrior(std={self.std})"


class FlatPrior:
    """log p(θ) = 0 (the original SVPG code): the target is exp(J/α) alone.

    Paper: https://arxiv.org/abs/1704.02399 (SVPG, Liu et al. 2017)
    """

    name = "flat"
    learns_variances = False

    def group_log_prob(self, values: list[torch.Tensor], log_var: torch.Tensor | None) -> torch.Tensor:
        return values[0].new_zeros(values[0].shape[0])

    def __repr__(self) -> str:
        return "FlatPrior()"


Prior = HierarchicalGaussianPrior | GaussianPrior | FlatPrior


def make_prior(name: str, a: float = 1.0, b: float = 0.1, std: float = 1.0) -> Prior:
    """``"mvg"`` (eq. 14 with Inv-Gamma(a, b) hyperpriors), ``"gaussian"`` (N(0, std²)) or ``"flat"``."""
    if name in ("mvg", "hierarchical"):
        return HierarchicalGaussianPrior(a, b)
    if name == "gaussian":
        return GaussianPrior(std)
    if name == "flat":
        return FlatPrior()
    raise ValueError(
        f"unknown prior {name!r}: choose 'mvg' (eq. 14, Inv-Gamma hyperpriors), 'gaussian' (fixed N(0, std²)) or 'flat'"
    )
