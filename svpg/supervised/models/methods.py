"""The methods of the Bayesian neural network estimators and the settings that differ by method."""

from __future__ import annotations

from svpg.core.variational import FAMILIES
from svpg.deprecation import renamed

LR_SCHEDULES = ("constant", "cosine")
#: which epoch's weights a fit ends with: the best by validation log-likelihood, or the last
KEEP_EPOCHS = ("best", "last")
#: the particle methods' weight priors: eq. 14 with Inv-Gamma hyperpriors, a fixed N(0, prior_std²), or
#: auto (the fixed one for classification, eq. 14 for regression)
WEIGHT_PRIORS = ("auto", "mvg", "gaussian")
#: the weight prior of every fit, run folder and saved model from before weight_prior existed
EARLIER_WEIGHT_PRIOR = "mvg"
#: the particle methods, moved by SVGD
PARTICLE_METHODS = {
    "s2vgd": "structural MVG layers W = P Λ1 C Λ2 Qᵀ with K Householder reflections per side (§3), RBF kernel",
    "svgd": "plain dense layers (K = 0, Λ = I), RBF kernel (Liu & Wang 2016)",
    "map": "one plain particle (M = 1): gradient ascent on the log posterior",
}
#: every method of the Bayesian neural network estimators and of ``train.py supervised``: the particle
#: methods, then the parametric posteriors of :mod:`svpg.core.variational`
BNN_METHODS = {**PARTICLE_METHODS, **FAMILIES}
#: posterior options that differ from :func:`svpg.core.variational.make_posterior`'s defaults: vmg is the
#: VMG paper's regression model (§2.4, §4, §4.1) and its reference code's (``MatrixGaussDiagLayerLearnP``):
#: prior MN(0, τ_r⁻¹I, τ_c⁻¹I) with learned Gamma posteriors of τ_r, τ_c, 10 pseudo-data pairs per layer
#: with multiplicative noise of variance at most 0.005, inputs scaled by 1/√(fan-in + 1), σ ≈ 1 at the start
POSTERIOR_OPTIONS = {
    "vmg": {
        "learn_precisions": True,
        "pseudo_data": 10,
        "pseudo_dropout": 0.005,
        "scale_inputs": True,
        "reference_init": True,
    }
}
#: Gamma(a, b) priors of the noise precision that differ from (prior_a, prior_b): vmg's Gam(6, 6) (§4.1 of
#: VMG, after PBP); on standardised targets its mean 1 is a noise as large as the target's spread
NOISE_PRIORS = {"vmg": (6.0, 6.0)}
#: methods whose regression noise precision γ has a learned Gamma posterior q(γ) = Gam(a, b) (started at
#: the prior, trained on the expected log-likelihood with KL(q(γ) ‖ p(γ)), as VMG §4.1 and its reference
#: code) instead of a point estimate with a Gamma prior
NOISE_POSTERIORS = ("vmg",)
#: temporal (Polyak) averaging of the parameters, β of the exponential moving average whose bias-corrected
#: value is the fitted model (and what validation rows score): VMG's "Adam ... and temporal averaging" (§4),
#: β3 = 0.999 as its reference code
POLYAK = {"vmg": 0.999}
#: methods whose optimizer updates all parameters in one multi-tensor (foreach) step: vmg's many small
#: parameter tensors (pseudo-data, Gamma posteriors) made the per-tensor update its slowest part
FOREACH = ("vmg",)


__getattr__ = renamed(__name__, {"METHODS": "BNN_METHODS"}, globals())  # the former name
