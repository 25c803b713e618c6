"""The log posterior of a particle Bayesian neural network, per particle (M,), and its likelihood terms."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import torch

from svpg.core.networks import NetworkSpec, ParticleMLP
from svpg.core.particles import ParticleLayout
from svpg.core.probability import gamma_log_prob_of_log, gaussian_log_prob
from svpg.supervised.data import (
    TASK_KINDS,
)


def row_log_likelihood(task: str, out: torch.Tensor, y: torch.Tensor, log_prec: torch.Tensor | None) -> torch.Tensor:
    """log p(y_i | x_i, member s) for network outputs ``out`` (S, B, out) of S members (particles or
    posterior draws): (S, B). Regression: N(y | out, 1/γ_s) with ``log_prec`` = log γ, (S,) or (1,);
    classification: the softmax of ``out`` at label y."""
    if task == "regression":
        if log_prec is None:
            raise ValueError("row_log_likelihood: regression needs log_prec, the log noise precision")
        return gaussian_log_prob(y, out[..., 0], log_var=-log_prec[:, None])  # variance 1/γ
    logp = torch.log_softmax(out, -1)
    return logp.gather(2, y.expand(out.shape[0], -1).unsqueeze(2))[..., 0]


class Objective:
    """The log posterior of a particle BNN, log p(θ | batch) per particle (M,), and its pieces.

    One object per network structure; it holds no particles, so estimators with the same structure
    share it (and its compiled version, see ``compile`` in :class:`_BayesianNN`).

    :param task: ``"regression"`` (Gaussian likelihood, noise precision γ a particle coordinate stored
        as log γ with a Gamma(a, b) prior) or ``"classification"`` (softmax likelihood).
    :param spec: the network (its eq. 14 prior uses ``spec.prior_a``, ``spec.prior_b``).
    """

    def __init__(self, task: str, spec: NetworkSpec):
        if task not in TASK_KINDS:
            raise ValueError(f"unknown task {task!r}: choose from {', '.join(TASK_KINDS)}")
        self.task, self.spec = task, spec
        self.layout = ParticleLayout()
        self.net = ParticleMLP(self.layout, spec, "net")
        if task == "regression":
            self.layout.add("log_noise_precision", (1,))

    def log_prec(self, theta: torch.Tensor) -> torch.Tensor:
        """log γ of every particle: (M,)."""
        return self.layout.get(theta, "log_noise_precision")[:, 0]

    def log_likelihood(self, theta, weights, x, y) -> torch.Tensor:
        """Σ over the batch of log p(y | x, θ_m), per particle: (M,)."""
        out = self.net.forward(weights, x.expand(theta.shape[0], -1, -1))
        log_prec = self.log_prec(theta) if self.task == "regression" else None
        return row_log_likelihood(self.task, out, y, log_prec).sum(1)

    def log_prior(self, theta) -> torch.Tensor:
        """Eq. 14 for the network, plus the Gamma(a, b) prior of the noise precision γ (as Liu & Wang 2016): (M,)."""
        lp = self.net.log_prior(theta)
        if self.task == "regression":
            lp = lp + gamma_log_prob_of_log(self.log_prec(theta), self.spec.prior_a, self.spec.prior_b)
        return lp

    def __call__(self, theta, x, y, scale) -> torch.Tensor:
        """(N/B) Σ_batch log p(y | x, θ) + log p(θ), per particle: (M,). ``scale`` = N/B."""
        return scale * self.log_likelihood(theta, self.net.weights(theta), x, y) + self.log_prior(theta)

    def split_call(self, theta, x, y, scale) -> torch.Tensor:
        """:meth:`__call__` with θ's blocks cut by one ``torch.split`` (:meth:`ParticleLayout.split`):
        the same value, and a backward pass of one concatenation instead of one (M, D) zero-filled
        gradient per block access (~3× faster steps for the 784-400-400-10 S²VGD network)."""
        with self.layout.split(theta):
            return self(theta, x, y, scale)


_SHARED: dict[tuple, tuple[Objective, Callable | None]] = {}


def shared_objective(task: str, spec: NetworkSpec, compiled: bool = False):
    """The :class:`Objective` for (task, spec), built once per process, and optionally its
    ``torch.compile``-d call (compiled once and reused by every estimator of that structure)."""
    key = (task, spec)
    objective, fn = _SHARED.get(key, (None, None))
    if objective is None:
        objective = Objective(task, spec)
    if compiled and fn is None:
        warnings.filterwarnings(
            "ignore", category=FutureWarning, module=r"torch\._inductor"
        )  # torch-internal deprecations
        fn = torch.compile(objective.__call__, dynamic=False)
    _SHARED[key] = (objective, fn)
    return objective, (fn if compiled else objective.split_call)
