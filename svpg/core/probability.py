"""The log-densities every front end needs, in one place.

Variances are passed as log-variances (or variances), and the Gamma / Inv-Gamma hyperpriors are
densities of the *log* of their variable, Jacobian included, because the particles store
log-variances and log-precisions (eq. 14 of S²VGD: every weight group's variance has an
Inv-Gamma(a, b) hyperprior). Checked against ``torch.distributions`` in ``tests/core/test_probability.py``.
"""

from __future__ import annotations

import math

import torch

LOG_2PI = math.log(2 * math.pi)


def gaussian_log_prob(
    x: torch.Tensor,
    mean: torch.Tensor | float = 0.0,
    *,
    log_var: torch.Tensor | None = None,
    var: torch.Tensor | None = None,
) -> torch.Tensor:
    """Elementwise log N(x | mean, σ²), σ² given as exactly one of ``log_var`` or ``var`` (broadcast).

    With ``log_var`` this is −½ [(x − mean)² e^{−log_var} + log_var + log 2π], finite for any log_var.
    """
    if (log_var is None) == (var is None):
        raise ValueError("gaussian_log_prob: give exactly one of log_var and var")
    if log_var is None:
        assert var is not None  # exactly one of the two, checked above
        return -0.5 * ((x - mean).square() / var + torch.log(var) + LOG_2PI)
    return -0.5 * ((x - mean).square() * torch.exp(-log_var) + log_var + LOG_2PI)


def isotropic_gaussian_log_prob(x: torch.Tensor, log_var: torch.Tensor) -> torch.Tensor:
    """log N(x_m | 0, e^{log_var_m} I) of every row m of x: Σ over all but the leading axis, (M,).

    The same as ``gaussian_log_prob(x, log_var=…).sum()`` per row, computed as one sum of squares
    (the prior of eq. 14 on a whole weight group, which can have ~10⁵ coordinates per particle).

    :param x: (M, ...) values; :param log_var: (M,) one log-variance per row.
    """
    flat = x.reshape(x.shape[0], -1)
    n = flat.shape[1]
    return -0.5 * (flat.square().sum(1) * torch.exp(-log_var) + n * (log_var + LOG_2PI))


def gamma_log_prob_of_log(log_x: torch.Tensor, a: float, b: float) -> torch.Tensor:
    """log p(s) for s = log x, x ~ Gamma(shape a, rate b): a log b − log Γ(a) + a s − b e^s.

    (The Gamma density b^a/Γ(a) x^{a−1} e^{−bx} times the Jacobian dx/ds = x.)
    """
    return a * math.log(b) - math.lgamma(a) + a * log_x - b * torch.exp(log_x)


def inverse_gamma_log_prob_of_log(log_x: torch.Tensor, a: float, b: float) -> torch.Tensor:
    """log p(s) for s = log x, x ~ Inv-Gamma(shape a, scale b): a log b − log Γ(a) − a s − b e^{−s}.

    (The Inv-Gamma density b^a/Γ(a) x^{−a−1} e^{−b/x} times the Jacobian dx/ds = x.) If x ~ Inv-Gamma(a, b)
    then 1/x ~ Gamma(a, b): a variance with this prior is a precision with :func:`gamma_log_prob_of_log`.
    """
    return a * math.log(b) - math.lgamma(a) - a * log_x - b * torch.exp(-log_x)


def log_mean_exp(x: torch.Tensor, dim: int = 0) -> torch.Tensor:
    """log((1/n) Σ_i e^{x_i}) along ``dim`` (n = x.shape[dim]), without overflow: the log density of an
    equally weighted mixture, e.g. of M particles' predictive densities."""
    return torch.logsumexp(x, dim) - math.log(x.shape[dim])
