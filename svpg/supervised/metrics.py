"""Test metrics for particle BNNs (§5.1–5.2 of S²VGD: test RMSE and log-likelihood, test error).

Regression: the particle mixture p(y | x) = (1/M) Σ_m N(y | f_m(x), σ_m²), everything in the
target's original units. Classification: the mean of the particles' softmax.
"""

from __future__ import annotations

import numpy as np
import torch

from svpg.core.probability import gaussian_log_prob, log_mean_exp


def _t(a) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a), dtype=torch.float64)


def rmse(y, mean) -> float:
    """Root mean squared error of the particle-mean prediction."""
    y, mean = _t(y), _t(mean)
    return float(torch.sqrt(torch.mean((y - mean) ** 2)))


def mixture_log_likelihood(y, means, stds) -> np.ndarray:
    """Per-point log (1/M Σ_m N(y_i | μ_m(x_i), σ_m²)), by log-mean-exp over particles.

    :param y: (n,) targets; :param means: (M, n) particle predictions; :param stds: (M,) or (M, n)
        particle noise standard deviations (all in the same, original units).
    """
    y, mu, sd = _t(y), _t(means), _t(stds)
    if sd.ndim == 1:
        sd = sd[:, None]
    return log_mean_exp(gaussian_log_prob(y, mu, var=sd.square()), 0).numpy()


def test_log_likelihood(y, means, stds) -> float:
    """mean_i log (1/M Σ_m N(y_i | f_m(x_i), σ_m²)) (§5.1 of S²VGD, as Liu & Wang 2016's SVGD BNN)."""
    return float(mixture_log_likelihood(y, means, stds).mean())


test_log_likelihood.__dict__["__test__"] = False  # a metric, not a pytest test, when imported into test modules


def regression_metrics(y, means, stds) -> dict[str, float]:
    means = np.asarray(means)
    return {"rmse": rmse(y, means.mean(0)), "test_ll": test_log_likelihood(y, means, stds)}


def error_rate(y, probs) -> float:
    """Fraction misclassified by the argmax of the predictive probabilities."""
    return float((np.asarray(probs).argmax(1) != np.asarray(y)).mean())


def nll(y, probs, eps: float = 1e-12) -> float:
    """Mean negative log predictive probability of the true class."""
    p = np.asarray(probs, dtype=np.float64)
    return float(-np.log(np.clip(p[np.arange(len(p)), np.asarray(y)], eps, None)).mean())


def expected_calibration_error(y, probs, n_bins: int = 15) -> float:
    """ECE (Guo et al. 2017): Σ_b (n_b / n) |accuracy_b − confidence_b| over equal-width
    confidence bins of the top-class probability; (0, 1/15], (1/15, 2/15], …"""
    p = np.asarray(probs, dtype=np.float64)
    conf = p.max(1)
    correct = p.argmax(1) == np.asarray(y)
    bins = np.clip(np.ceil(conf * n_bins).astype(int) - 1, 0, n_bins - 1)
    ece = 0.0
    for b in range(n_bins):
        mask = bins == b
        if mask.any():
            ece += mask.mean() * abs(correct[mask].mean() - conf[mask].mean())
    return float(ece)


def classification_metrics(y, probs) -> dict[str, float]:
    """Error, NLL and ECE; a label outside the model's classes is a ValueError, not a wrong index."""
    labels, classes = np.asarray(y), np.shape(probs)[1]
    if labels.size and (labels.min() < 0 or labels.max() >= classes):
        raise ValueError(
            f"labels must be class indices 0…{classes - 1} (the classes the model was fitted on), "
            f"got {labels.min()}…{labels.max()}"
        )
    return {"error": error_rate(y, probs), "nll": nll(y, probs), "ece": expected_calibration_error(y, probs)}
