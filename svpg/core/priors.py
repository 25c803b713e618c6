"""Priors over a particle's coordinates (eq. 14 of S²VGD).

Every weight group g has a Gaussian prior N(0, σ_g²) whose log-variance s_g = log σ_g² is itself a
coordinate of the particle with an Inv-Gamma(a, b) hyperprior (a = 1, b = 0.1 in §5), as in Liu &
Wang's SVGD Bayesian neural network. Densities of s include the Jacobian of v = e^s.
"""

from __future__ import annotations

import torch

from svpg.core.probability import inverse_gamma_log_prob_of_log, isotropic_gaussian_log_prob

#: prior names for command lines (make_prior also takes "gaussian" and "hierarchical" for "mvg")
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

    def group_log_prob(self, values: list[torch.Tensor], log_var: torch.Tensor) -> torch.Tensor:
        """Log density of the tensors sharing one variance, plus the hyperprior on it: (M,)."""
        lp = inverse_gamma_log_prob_of_log(log_var, self.a, self.b)
        for v in values:
            lp = lp + isotropic_gaussian_log_prob(v, log_var)
        return lp

    def __repr__(self) -> str:
        return f"HierarchicalGaussianPrior(a={self.a}, b={self.b})"


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


def make_prior(name: str, a: float = 1.0, b: float = 0.1) -> HierarchicalGaussianPrior | FlatPrior:
    if name in ("mvg", "gaussian", "hierarchical"):
        return HierarchicalGaussianPrior(a, b)
    if name == "flat":
        return FlatPrior()
    raise ValueError(f"unknown prior {name!r}: choose 'mvg' (eq. 14, Inv-Gamma hyperpriors) or 'flat'")
