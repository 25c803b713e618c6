"""Estimator-style Bayesian neural networks: particle methods (§5.1–5.2 of S²VGD) and the parametric
posteriors they are compared with.

``BayesianRegressor`` and ``BayesianClassifier`` take a ``method`` out of :data:`BNN_METHODS`:

- particle methods, moved by SVGD (eq. 9, :class:`~svpg.core.svgd.SVGD`) on the log posterior

      log p(θ | D) = (N / B) Σ_{i ∈ batch} log p(y_i | x_i, θ) + log p(θ)   (likelihood scaled by N/B),

  M particles in one (M, D) tensor θ (:class:`~svpg.core.particles.ParticleLayout`), log p(θ) eq. 14
  (C ~ N(0, λ); v ~ N(0, φ); Λ ~ N(0, ψ); λ, φ, ψ ~ Inv-Gamma(1, 0.1); the bias b shares C's λ, our choice):

  - ``"s2vgd"``: structural layers W = P Λ1 C Λ2 Qᵀ with K Householder reflections per side (§3), RBF kernel;
    after every step each Householder vector v (length ℓ) is rescaled to length √ℓ (the weights depend
    on v's direction only);
  - ``"svgd"``: plain dense layers (K = 0, Λ = I), RBF kernel (Liu & Wang 2016);
  - ``"map"``: one plain particle: SVGD with M = 1 is gradient ascent on the log posterior;

- parametric posteriors q(W) of :mod:`svpg.core.variational`, trained by Adam on

      loss = −(N / B) Σ_{i ∈ batch} (1/S) Σ_s log p(y_i | x_i, W_s) + R,   W_s ~ q,

  with R = KL(q ‖ p) (the negative ELBO, eq. 1 of Bayes by Backprop) for ``"bbb"`` (Bayes by
  Backprop), ``"vmg"`` (the variational matrix Gaussian), ``"kflow-diag"`` and ``"kflow-linear"``
  (Kronecker flows), and R = −log p(θ) for ``"badam"`` (a point estimate whose Gaussian posterior,
  eq. 14 of BADAM, is read off Adam's second moments).

Regression (§5.1): Gaussian likelihood N(y | f(x), 1/γ). The noise precision γ is learned as log γ with
a Gamma(a, b) prior: a particle coordinate for the particle methods, one point estimate shared by all
posterior draws for the parametric ones. Inputs and targets are standardised with training statistics and
predictions are mapped back to the original units. The predictive distribution is the mixture over the
particles, or over S posterior draws, (1/S) Σ_s N(f_s(x), 1/γ_s). Classification (§5.2): softmax
likelihood; the predictive distribution is the mean of the particles' (draws') softmax.

Nothing is ever chosen on test data: when ``validation_fraction > 0`` a validation split is carved
from the training rows; it selects the checkpoint (best validation log-likelihood over the epochs
evaluated) and, for regression, the noise precision (Liu & Wang's heuristic, see
:meth:`BayesianRegressor._refit_noise`).

Randomness comes from the ``seed`` argument only, through named streams of :mod:`svpg.seeding`: the
validation rows, the initial weights, the minibatch order and the posterior draws (those of training and
those of prediction) each have their own, and no global RNG state is read or changed. Two fits with the
same seed on one machine are bit-identical, and predictions are a function of the fitted model (the
same draws every call, and after save/load).

``fit``, ``predict`` and ``evaluate`` run on ``threads`` torch CPU threads (default
:data:`svpg.runtime.DEFAULT_THREADS`, as ``train.py``) and restore the caller's setting afterwards.

The package: :mod:`.methods` (the method registry and per-method settings), :mod:`.objective` (the
particle methods' log posterior), :mod:`.posteriors` (the training loops: SVGD on particles, an optimizer
on a parametric posterior) and :mod:`.estimators` (the estimators themselves).

Papers: https://proceedings.mlr.press/v84/zhang18a.html (S²VGD), https://arxiv.org/abs/1608.04471 (SVGD),
https://arxiv.org/abs/1505.05424 (Bayes by Backprop), https://arxiv.org/abs/1603.04733 (VMG),
https://arxiv.org/abs/1906.04282 (Kronecker flow), https://arxiv.org/abs/1811.03679 (BADAM)
"""

from __future__ import annotations

from svpg.deprecation import renamed
from svpg.supervised.models.estimators import BayesianClassifier, BayesianRegressor
from svpg.supervised.models.methods import (
    BNN_METHODS,
    FOREACH,
    KEEP_EPOCHS,
    LR_SCHEDULES,
    NOISE_POSTERIORS,
    NOISE_PRIORS,
    PARTICLE_METHODS,
    POLYAK,
    POSTERIOR_OPTIONS,
    WEIGHT_PRIORS,
)
from svpg.supervised.models.objective import Objective, row_log_likelihood, shared_objective

__all__ = [
    "BayesianClassifier",
    "BayesianRegressor",
    "BNN_METHODS",
    "PARTICLE_METHODS",
    "KEEP_EPOCHS",
    "WEIGHT_PRIORS",
    "LR_SCHEDULES",
    "POSTERIOR_OPTIONS",
    "NOISE_PRIORS",
    "NOISE_POSTERIORS",
    "POLYAK",
    "FOREACH",
    "Objective",
    "row_log_likelihood",
    "shared_objective",
]

__getattr__ = renamed(__name__, {"METHODS": "BNN_METHODS"}, globals())  # the former name
