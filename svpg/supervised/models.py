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

Papers: https://proceedings.mlr.press/v84/zhang18a.html (S²VGD), https://arxiv.org/abs/1608.04471 (SVGD),
https://arxiv.org/abs/1505.05424 (Bayes by Backprop), https://arxiv.org/abs/1603.04733 (VMG),
https://arxiv.org/abs/1906.04282 (Kronecker flow), https://arxiv.org/abs/1811.03679 (BADAM)
"""
from __future__ import annotations

import contextlib
import functools
import math
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from svpg.core.networks import NetworkSpec, ParticleMLP
from svpg.core.particles import ParticleLayout
from svpg.core.probability import LOG_2PI, gamma_log_prob_of_log, gaussian_log_prob, log_mean_exp
from svpg.core.svgd import OPTIMIZERS, SVGD, make_optimizer
from svpg.core.variational import FAMILIES, gamma_kl, make_posterior, posterior_options
from svpg.io import CheckpointError, load_tensors, save_tensors
from svpg.runtime import DEFAULT_THREADS, torch_threads
from svpg.seeding import torch_generator
from svpg.supervised.data import (
    TASKS,
    Standardizer,
    check_features,
    check_xy,
    holdout_split,
)
from svpg.supervised.metrics import classification_metrics, regression_metrics

LR_SCHEDULES = ("constant", "cosine")
#: the particle methods, moved by SVGD
PARTICLE_METHODS = {
    "s2vgd": "structural MVG layers W = P Λ1 C Λ2 Qᵀ with K Householder reflections per side (§3), RBF kernel",
    "svgd": "plain dense layers (K = 0, Λ = I), RBF kernel (Liu & Wang 2016)",
    "map": "one plain particle (M = 1): gradient ascent on the log posterior",
}
#: every method of the Bayesian neural network estimators and of ``train.py supervised``: the particle
#: methods, then the parametric posteriors of :mod:`svpg.core.variational`
BNN_METHODS = {**PARTICLE_METHODS, **FAMILIES}
METHODS = BNN_METHODS  # its former name
#: posterior options that differ from :func:`svpg.core.variational.make_posterior`'s defaults: vmg is the
#: VMG paper's regression model (§2.4, §4, §4.1) and its reference code's (``MatrixGaussDiagLayerLearnP``):
#: prior MN(0, τ_r⁻¹I, τ_c⁻¹I) with learned Gamma posteriors of τ_r, τ_c, 10 pseudo-data pairs per layer
#: with multiplicative noise of variance at most 0.005, inputs scaled by 1/√(fan-in + 1), σ ≈ 1 at the start
POSTERIOR_OPTIONS = {"vmg": {"learn_precisions": True, "pseudo_data": 10, "pseudo_dropout": 0.005,
                             "scale_inputs": True, "reference_init": True}}
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


def row_log_likelihood(task: str, out: torch.Tensor, y: torch.Tensor, log_prec: torch.Tensor | None) -> torch.Tensor:
    """log p(y_i | x_i, member s) for network outputs ``out`` (S, B, out) of S members (particles or
    posterior draws): (S, B). Regression: N(y | out, 1/γ_s) with ``log_prec`` = log γ, (S,) or (1,);
    classification: the softmax of ``out`` at label y."""
    if task == "regression":
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
        if task not in TASKS:
            raise ValueError(f"unknown task {task!r}: choose from {', '.join(TASKS)}")
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
        gradient per block access (~3.5× faster steps for the 784-400-400-10 S²VGD network)."""
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
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch\._inductor")  # torch-internal deprecations
        fn = torch.compile(objective.__call__, dynamic=False)
    _SHARED[key] = (objective, fn)
    return objective, (fn if compiled else objective.split_call)


def _renamed_particles(n_particles: int) -> int:
    warnings.warn("n_particles is now called num_particles, as everywhere else in svpg; n_particles will be removed",
                  FutureWarning, stacklevel=3)
    return n_particles


def _in_threads(method):
    """Run an estimator method on the estimator's torch CPU threads; the caller's count is restored."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if self.threads is not None and not (isinstance(self.threads, int) and self.threads >= 1):
            raise ValueError(f"threads must be a positive integer (or None for the caller's setting), got {self.threads!r}")
        with torch_threads(self.threads):
            return method(self, *args, **kwargs)

    return wrapper


def _cosine(optimizer: torch.optim.Optimizer, total_steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    """lr × ½(1 + cos(π t / T)): from the peak rate to 0 over all T steps."""
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: 0.5 * (1 + math.cos(math.pi * min(step, total_steps) / total_steps)))


def _row_chunks(n: int, size: int) -> list[slice]:
    """Slices of at most ``size`` rows covering n, none of one row unless n = 1 (a one-row batch is drawn
    input by input, see :meth:`~svpg.core.variational.WeightPosterior.forward`, not with whole weight draws)."""
    starts = list(range(0, n, size))
    if len(starts) > 1 and n - starts[-1] == 1:
        starts.pop()
    return [slice(a, b) for a, b in zip(starts, starts[1:] + [n])]


# ------------------------------------------------------------------------------------ posteriors


class _Posterior:
    """How an estimator's posterior is held and trained; the estimator owns the data handling.

    Members are what the predictive distribution mixes: the M particles, or S posterior draws.
    :meth:`_train_epochs` is the epoch loop both kinds share (minibatch order, validation, checkpoint,
    callback); each subclass supplies one epoch of steps.
    """

    shared_noise = False  # one noise precision for every member (True) or one per member

    def __init__(self, est: _BayesianNN, n_in: int, n_out: int):
        self.est, self.task = est, est._task

    def _train_epochs(self, n: int, device, run_epoch, snapshot, restore, x_val, y_val, callback,
                      evaluated=contextlib.nullcontext) -> None:
        """``est.epochs`` passes, each over a fresh permutation of the n rows from the stream
        ``"minibatch"``; ``run_epoch(perm, diagnose)`` takes the steps and returns diagnostics (when
        ``diagnose``). With validation rows the best epoch by validation log-likelihood is kept
        (``snapshot()`` / ``restore(state)``, both inside ``evaluated()``, the weights the model would be
        fitted with at that epoch); otherwise the last."""
        est = self.est
        history: list[dict] = []
        best, best_state, best_epoch = -math.inf, None, est.epochs
        order = torch_generator(est.seed, "minibatch")  # on the CPU: the same order on every device
        bar = tqdm(range(1, est.epochs + 1), disable=not est.progress, unit="epoch", leave=False, dynamic_ncols=True)
        for epoch in bar:
            t0 = time.perf_counter()
            perm = torch.randperm(n, generator=order).to(device)
            diagnostics = run_epoch(perm, callback is not None)
            record = {"epoch": epoch, "epoch_seconds": time.perf_counter() - t0}
            if x_val is not None and (epoch % est.eval_every == 0 or epoch == est.epochs):
                with evaluated():
                    score = est._validation_score(x_val, y_val)
                    if score > best:
                        best, best_state, best_epoch = score, snapshot(), epoch
                record["val_log_likelihood"] = score
                bar.set_postfix(val_ll=f"{score:.3f}", best=best_epoch)
            if callback is not None:
                callback(epoch, {**record, **{k: float(v) for k, v in diagnostics.items()}})
            history.append(record)
        bar.close()
        if best_state is not None:
            restore(best_state)
        est.history_, est.best_epoch_ = history, best_epoch


class _Particles(_Posterior):
    """M particles θ (M, D) moved by SVGD (eq. 9) on the log posterior: the home of the SVGD loop."""

    def __init__(self, est, n_in, n_out):
        super().__init__(est, n_in, n_out)
        structural = est.method == "s2vgd"
        self.spec = NetworkSpec((n_in, *est.hidden, n_out), activation=est.activation,
                                householder=est.householder if structural else 0, learn_scales=structural,
                                prior="mvg", prior_a=est.prior_a, prior_b=est.prior_b)
        self.objective, self.log_posterior = shared_objective(self.task, self.spec, est.compile)
        self.layout, self.net = self.objective.layout, self.objective.net
        self.theta = torch.zeros(1 if est.method == "map" else est.num_particles, self.layout.size, device=est.device)

    def fit(self, x, y, x_val, y_val, callback) -> None:
        est = self.est
        self.net.init_(self.theta, torch_generator(est.seed, "init", device=self.theta.device))
        if self.task == "regression":
            with torch.no_grad():
                self.log_noise_precision().zero_()  # noise std = 1 target std
        theta = self.theta.requires_grad_(True)
        svgd = SVGD(theta, est.kernel if theta.shape[0] > 1 else "median", est.optimizer, est.lr, network=self.net)
        n, bs = len(x), min(est.batch_size, len(x))
        scale = torch.tensor(n / bs, device=x.device)  # a tensor: a compiled objective is not specialised on N
        schedule = _cosine(svgd.optimizer, est.epochs * (n // bs)) if est.lr_schedule == "cosine" else None

        def run_epoch(perm, diagnose):
            householder_norms = []
            for start in range(0, n - bs + 1, bs):  # drop the last partial batch: every step sees B rows
                idx = perm[start : start + bs]
                log_post = self.log_posterior(theta, x[idx], y[idx], scale)
                (grad,) = torch.autograd.grad(log_post.sum(), theta)
                terms = svgd.step(grad)
                householder_norms.append(terms.min_householder_norm)
                if schedule is not None:
                    schedule.step()
            if not diagnose:
                return {}
            diag = terms.diagnostics(theta.detach())
            if self.net.has_householder:
                diag["structure/min_householder_norm"] = torch.stack(householder_norms).amin()
            return {**diag, "train/log_posterior": log_post.detach().mean()}

        def restore(best):
            with torch.no_grad():
                theta.copy_(best)

        self._train_epochs(n, x.device, run_epoch, lambda: theta.detach().clone(), restore, x_val, y_val, callback)
        self.theta = theta.detach()

    def outputs(self, x: torch.Tensor, chunk: int = 2048) -> torch.Tensor:
        """Network outputs of every particle for inputs x (n, d) in model units: (M, n, out)."""
        theta = self.theta
        with torch.no_grad():
            weights = self.net.weights(theta)
            m = theta.shape[0]
            parts = [self.net.forward(weights, x[i : i + chunk].expand(m, -1, -1)) for i in range(0, len(x), chunk)]
        return torch.cat(parts, 1)

    def log_noise_precision(self) -> torch.Tensor:
        """log γ of every particle, a view into θ: (M,)."""
        return self.objective.log_prec(self.theta.detach())

    def set_log_noise_precision(self, value: torch.Tensor) -> None:
        with torch.no_grad():
            self.log_noise_precision().copy_(value)

    def state(self) -> tuple[dict[str, torch.Tensor], dict]:
        return {"theta": self.theta}, {"spec": self.spec.to_dict(), "layout": self.layout.describe()}

    def load(self, tensors: dict[str, torch.Tensor], meta: dict, path) -> None:
        theta = tensors.get("theta")
        if theta is None or self.layout.describe() != meta.get("layout") or tuple(theta.shape) != tuple(self.theta.shape):
            raise CheckpointError(f"{path}: particle layout does not match its metadata (file written by another version?)")
        self.theta = theta.to(self.theta.device)


class _Variational(_Posterior):
    """A parametric posterior q of :mod:`svpg.core.variational` trained by a torch optimizer on
    −(N/B) Σ_batch mean_s log p(y | x, W_s) + R (R = KL(q ‖ p), or −log p(θ) for badam, with
    :meth:`~svpg.core.variational.WeightPosterior.observe_step` after every step): the home of the
    variational loop. Its members are ``predict_samples`` posterior draws.

    The regression noise precision γ is shared by the draws: a point estimate (log γ with a Gamma prior),
    or, for the methods of :data:`NOISE_POSTERIORS`, a learned Gamma posterior q(γ) = Gam(a, b): the
    training loss then has the expected log-likelihood ½(ψ(a) − log b) − ½ log 2π − ½ (a/b)(y − f)² and
    KL(q(γ) ‖ p(γ)) instead of −log p(γ), and the S predictive draws take the S quantiles
    (s + ½)/S of q(γ) as their precisions (no random numbers: the same every call). With
    :data:`POLYAK` the fitted parameters are the bias-corrected moving average of the steps' parameters.
    badam's eq. 14 uses N = the number of training rows (as the reference code's ``BayesAdam(..., N, ...)``).
    """

    shared_noise = True

    def __init__(self, est, n_in, n_out):
        super().__init__(est, n_in, n_out)
        self.sizes = (n_in, *est.hidden, n_out)
        self.options = est.posterior_options_()
        self.post = make_posterior(est.method, self.sizes, est.activation,
                                   generator=torch_generator(est.seed, "init"), **self.options).to(est.device)
        self.noise_posterior = self.task == "regression" and est.method in NOISE_POSTERIORS
        self.log_noise = self.noise_gamma = None
        if self.noise_posterior:
            a, b = est.noise_prior_()   # q(γ) starts at the prior (the reference code's a1, b1 = a0, b0)
            self.noise_gamma = torch.nn.Parameter(torch.tensor([math.log(a), math.log(b)], device=est.device))
        elif self.task == "regression":
            self.log_noise = torch.nn.Parameter(torch.zeros(1, device=est.device))

    def _noise_params(self) -> list[torch.nn.Parameter]:
        return [p for p in (self.log_noise, self.noise_gamma) if p is not None]

    def parameters(self) -> list[torch.nn.Parameter]:
        return [*self.post.parameters(), *self._noise_params()]

    def _noise_regulariser(self) -> torch.Tensor | float:
        """−log p(γ) of the point estimate, or KL(q(γ) ‖ p(γ)) of the Gamma posterior; 0 for classification."""
        a0, b0 = self.est.noise_prior_()
        if self.noise_gamma is not None:
            a, b = self.noise_gamma.exp()
            return gamma_kl(a, b, a0, b0)
        if self.log_noise is None:
            return 0.0
        return -gamma_log_prob_of_log(self.log_noise, a0, b0).sum()

    def _log_likelihood(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Σ over the batch of the mean over draws of log p(y | x, W_s) (its expectation under q(γ) for a
        Gamma posterior of the noise precision)."""
        if self.noise_gamma is None:
            return row_log_likelihood(self.task, out, y, self.log_noise).mean(0).sum()
        a, b = self.noise_gamma.exp()
        sq = (y - out[..., 0]).square()
        return (0.5 * (torch.digamma(a) - torch.log(b) - LOG_2PI) - 0.5 * (a / b) * sq).mean(0).sum()

    def fit(self, x, y, x_val, y_val, callback) -> None:
        est, post = self.est, self.post
        params = self.parameters()
        optimizer = make_optimizer(est.optimizer, params, est.lr)
        if est.method in FOREACH:
            for group in optimizer.param_groups:   # one multi-tensor update for the many small parameters
                group["foreach"] = True
        draws = torch_generator(est.seed, "posterior", "train", device=x.device)
        n, bs = len(x), min(est.batch_size, len(x))
        schedule = _cosine(optimizer, est.epochs * (n // bs)) if est.lr_schedule == "cosine" else None
        beta = POLYAK.get(est.method)
        average = [p.detach().clone().zero_() for p in params] if beta else []
        steps = 0

        def run_epoch(perm, diagnose):
            nonlocal steps
            for start in range(0, n - bs + 1, bs):  # drop the last partial batch: every step sees B rows
                idx = perm[start : start + bs]
                out = post.train_forward(x[idx], est.samples, draws)
                log_lik = self._log_likelihood(out, y[idx])
                regulariser = post.regulariser(draws) + self._noise_regulariser()
                loss = -(n / bs) * log_lik + regulariser
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                steps += 1
                # badam: eq. 14's N = the training rows, as the reference BayesAdam(..., N, ...); the loss
                # is scaled to n rows. vmg: clips its pseudo-data noise.
                post.observe_step(optimizer, n, data_size=n)
                if schedule is not None:
                    schedule.step()
                if beta:
                    with torch.no_grad():
                        torch._foreach_lerp_(average, params, 1.0 - beta)
            if not diagnose:
                return {}
            return {"train/loss": loss.detach(), "train/regulariser": regulariser.detach()}

        @contextlib.contextmanager
        def averaged():
            """The parameters replaced by their bias-corrected moving average (Polyak), then put back."""
            if not beta or steps == 0:
                yield
                return
            current = [p.detach().clone() for p in params]
            with torch.no_grad():
                for avg, p in zip(average, params):
                    p.copy_(avg / (1.0 - beta ** steps))
            try:
                yield
            finally:
                with torch.no_grad():
                    for value, p in zip(current, params):
                        p.copy_(value)

        def snapshot():
            return {k: v.detach().clone() for k, v in self.state()[0].items()}

        self._train_epochs(n, x.device, run_epoch, snapshot, self._load_tensors, x_val, y_val, callback, averaged)
        if beta and x_val is None:   # with validation rows, the best epoch's averaged weights are restored
            with torch.no_grad():
                for avg, p in zip(average, params):
                    p.copy_(avg / (1.0 - beta ** steps))

    def outputs(self, x: torch.Tensor, chunk: int = 2048, samples_per_pass: int = 10) -> torch.Tensor:
        """Network outputs under ``predict_samples`` posterior draws for inputs x (n, d): (S, n, out).

        Every row chunk restarts the stream ``("posterior", "predict")``, so draw s is the same weight
        sample for every row (coherent functions) and the result depends on the fitted model only."""
        s_total = self.est.predict_samples
        parts = []
        with torch.no_grad():
            for rows in _row_chunks(len(x), chunk):
                draws = torch_generator(self.est.seed, "posterior", "predict", device=x.device)
                parts.append(torch.cat([self.post(x[rows], min(samples_per_pass, s_total - s), draws)
                                        for s in range(0, s_total, samples_per_pass)], 0))
        return torch.cat(parts, 1)

    def log_noise_precision(self) -> torch.Tensor:
        """log γ for every draw: (S,), the one shared estimate, or the S quantiles (s + ½)/S of q(γ)."""
        s_total = self.est.predict_samples
        if self.noise_gamma is None:
            return self.log_noise.detach().expand(s_total)
        from scipy.special import gammaincinv

        a, b = (float(v) for v in self.noise_gamma.detach().double().exp().cpu())
        quantiles = gammaincinv(a, (np.arange(s_total) + 0.5) / s_total) / b
        return torch.as_tensor(np.log(quantiles), dtype=self.noise_gamma.dtype, device=self.noise_gamma.device)

    def set_log_noise_precision(self, value: torch.Tensor) -> None:
        with torch.no_grad():
            if self.noise_gamma is None:
                self.log_noise.copy_(value.reshape(-1)[:1])
            elif not torch.equal(value, self.log_noise_precision()):
                # keep q(γ)'s shape, move its mean E γ = a / b to the value
                self.noise_gamma[1] = self.noise_gamma[0] - value.reshape(-1)[0]

    def state(self) -> tuple[dict[str, torch.Tensor], dict]:
        tensors = {f"posterior.{k}": v for k, v in self.post.state_dict().items()}
        if self.log_noise is not None:
            tensors["log_noise_precision"] = self.log_noise.detach()
        if self.noise_gamma is not None:
            tensors["noise_posterior_log_shape_rate"] = self.noise_gamma.detach()
        return tensors, {"sizes": list(self.sizes), "posterior_options": self.options}

    def _load_tensors(self, tensors: dict[str, torch.Tensor]) -> None:
        self.post.load_state_dict({k.removeprefix("posterior."): v for k, v in tensors.items() if k.startswith("posterior.")})
        with torch.no_grad():
            if self.log_noise is not None:
                self.log_noise.copy_(tensors["log_noise_precision"].to(self.log_noise.device))
            if self.noise_gamma is not None:
                self.noise_gamma.copy_(tensors["noise_posterior_log_shape_rate"].to(self.noise_gamma.device))

    def load(self, tensors, meta, path) -> None:
        expected = set(self.state()[0])
        given = {k for k in tensors if k.startswith("posterior.") or k in ("log_noise_precision",
                                                                           "noise_posterior_log_shape_rate")}
        if given != expected or meta.get("sizes") != list(self.sizes):
            raise CheckpointError(f"{path}: its tensors do not match a {self.est.method} posterior of sizes "
                                  f"{self.sizes} (file written by another version?)")
        self._load_tensors(tensors)


# ------------------------------------------------------------------------------------ estimators


class _BayesianNN:
    """What regressor and classifier share: parameters, the posterior (particles or parametric), save/load.

    Papers: https://proceedings.mlr.press/v84/zhang18a.html (S²VGD, §5.1–5.2), https://arxiv.org/abs/1608.04471
    (SVGD and its Bayesian neural network); the parametric posteriors: see :mod:`svpg.core.variational`.

    :param method: a name out of :data:`BNN_METHODS`: ``"s2vgd"``, ``"svgd"``, ``"map"``, ``"bbb"``, ``"vmg"``,
        ``"kflow-diag"``, ``"kflow-linear"`` or ``"badam"``.
    :param num_particles: M (particle methods; ``"map"`` uses one particle). ``n_particles`` is its
        former name, still accepted (with a FutureWarning) for now.
    :param householder: K Householder reflections per side of every layer (``"s2vgd"`` only).
    :param hidden: hidden layer widths.
    :param activation: ``"relu"`` or ``"tanh"``.
    :param prior_a: Inv-Gamma / Gamma shape a of every hyperprior of eq. 14 and of the noise precision (§5: 1).
    :param prior_b: Inv-Gamma scale / Gamma rate b of the same (§5: 0.1).
    :param kernel: ``"median"`` (h = med²/log M) or a fixed bandwidth (particle methods).
    :param optimizer: ``"adam"``, ``"rmsprop"``, ``"adagrad"`` or ``"sgd"``: for the particle methods it
        steps along −φ, for the parametric ones it minimises their loss (``"badam"`` needs ``"adam"``).
    :param lr: learning rate (the peak one under a schedule).
    :param lr_schedule: ``"constant"`` or ``"cosine"`` (anneals from ``lr`` to 0 over all steps).
    :param epochs: passes over the (fit part of the) training data.
    :param batch_size: minibatch size B (the likelihood is scaled by N/B).
    :param samples: posterior draws per training step of ``"bbb"``, ``"vmg"``, ``"kflow-*"`` (badam
        trains its point weights and ignores it).
    :param predict_samples: posterior draws S of the predictive distribution of the parametric methods.
    :param posterior_options: options of :func:`svpg.core.variational.make_posterior` (None: its defaults,
        and for ``"vmg"`` the paper's learned prior precisions, :data:`POSTERIOR_OPTIONS`).
    :param noise_prior: (a, b) of the Gamma prior of the regression noise precision (None: (prior_a,
        prior_b), and Gam(6, 6) for ``"vmg"`` as its paper, :data:`NOISE_PRIORS`).
    :param validation_fraction: share of the training rows held out for checkpoint selection (0: none,
        the last epoch is kept).
    :param eval_every: evaluate on the validation rows every this many epochs.
    :param seed: the root of the estimator's random streams: the validation rows, the initial weights, the
        minibatch order and the posterior draws each draw from their own (:mod:`svpg.seeding`); the same
        seed gives bit-identical fits on one machine.
    :param device: torch device.
    :param progress: show a tqdm bar over epochs.
    :param compile: ``torch.compile`` the log posterior and its gradient of the particle methods (several
        times fewer CPU seconds per step for small networks, after a one-off compilation of 1–2 minutes
        that every estimator of the same structure in the process reuses); the parametric methods run
        eagerly.
    :param threads: torch CPU threads of ``fit``, ``predict`` and ``evaluate`` (the caller's setting is
        restored afterwards; None: use the caller's). The default, :data:`svpg.runtime.DEFAULT_THREADS`, is
        ``train.py``'s: small batched ops gain nothing from more threads, and on shared cores a second
        thread can make every step several times slower.
    """

    _kind = ""
    _task = ""

    def __init__(
        self,
        method: str = "s2vgd",
        num_particles: int = 20,
        householder: int = 1,
        hidden: tuple[int, ...] = (50,),
        activation: str = "relu",
        prior_a: float = 1.0,
        prior_b: float = 0.1,
        kernel: str | float = "median",
        optimizer: str = "adam",
        lr: float = 1e-3,
        lr_schedule: str = "constant",
        epochs: int = 100,
        batch_size: int = 100,
        validation_fraction: float = 0.1,
        eval_every: int = 1,
        seed: int = 0,
        device: str = "cpu",
        progress: bool = False,
        compile: bool = False,
        threads: int | None = DEFAULT_THREADS,
        samples: int = 1,
        predict_samples: int = 100,
        posterior_options: dict | None = None,
        noise_prior: tuple[float, float] | None = None,
        n_particles: int | None = None,
    ):
        if n_particles is not None:
            num_particles = _renamed_particles(n_particles)
        self.method = method
        self.num_particles = num_particles
        self.householder = householder
        self.hidden = tuple(hidden)
        self.activation = activation
        self.prior_a = prior_a
        self.prior_b = prior_b
        self.kernel = kernel
        self.optimizer = optimizer
        self.lr = lr
        self.lr_schedule = lr_schedule
        self.epochs = epochs
        self.batch_size = batch_size
        self.validation_fraction = validation_fraction
        self.eval_every = eval_every
        self.seed = seed
        self.device = device
        self.progress = progress
        self.compile = compile
        self.threads = threads
        self.samples = samples
        self.predict_samples = predict_samples
        self.posterior_options = None if posterior_options is None else dict(posterior_options)
        self.noise_prior = None if noise_prior is None else tuple(noise_prior)

    # ---------------------------------------------------------------------------- parameters

    _PARAMS = (
        "method", "num_particles", "householder", "hidden", "activation", "prior_a", "prior_b", "kernel",
        "optimizer", "lr", "lr_schedule", "epochs", "batch_size", "validation_fraction", "eval_every", "seed", "device",
        "progress", "compile", "threads", "samples", "predict_samples", "posterior_options", "noise_prior",
    )

    def get_params(self, deep: bool = True) -> dict:
        """The constructor arguments (scikit-learn convention)."""
        return {k: getattr(self, k) for k in self._PARAMS}

    def set_params(self, **params) -> _BayesianNN:
        if "n_particles" in params:
            params["num_particles"] = _renamed_particles(params.pop("n_particles"))
        for k, v in params.items():
            if k not in self._PARAMS:
                raise ValueError(f"unknown parameter {k!r}; valid: {', '.join(self._PARAMS)}")
            setattr(self, k, v)
        return self

    def __repr__(self) -> str:
        shown = ("method", "num_particles", "householder") if self.method in PARTICLE_METHODS else ("method", "samples")
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in (*shown, "hidden", "epochs", "lr"))
        return f"{type(self).__name__}({args})"

    @property
    def variational(self) -> bool:
        """True for a parametric posterior (:mod:`svpg.core.variational`), False for a particle method."""
        return self.method in FAMILIES

    def posterior_options_(self) -> dict:
        """The options given to :func:`~svpg.core.variational.make_posterior` (parametric methods)."""
        given = POSTERIOR_OPTIONS.get(self.method, {}) if self.posterior_options is None else self.posterior_options
        return dict(given)

    def noise_prior_(self) -> tuple[float, float]:
        """(a, b) of the Gamma prior of the regression noise precision."""
        if self.noise_prior is not None:
            return tuple(self.noise_prior)
        return NOISE_PRIORS.get(self.method, (self.prior_a, self.prior_b)) if self.variational else (self.prior_a, self.prior_b)

    def _validate_params(self) -> None:
        problems = []
        if self.method not in BNN_METHODS:
            problems.append(f"method {self.method!r}: choose from {', '.join(BNN_METHODS)}")
        if self.num_particles < 1:
            problems.append(f"num_particles must be ≥ 1, got {self.num_particles}")
        if self.householder < 0 or (self.method == "s2vgd" and self.householder < 1):
            problems.append(f"householder K must be ≥ 1 for s2vgd, got {self.householder}")
        if not self.hidden or min(self.hidden) < 1:
            problems.append(f"hidden needs positive widths, got {self.hidden}")
        if self.epochs < 1 or self.batch_size < 1 or self.eval_every < 1:
            problems.append(f"epochs, batch_size and eval_every must be ≥ 1, got {self.epochs}, {self.batch_size}, {self.eval_every}")
        if not self.lr > 0:
            problems.append(f"lr must be > 0, got {self.lr}")
        if self.optimizer not in OPTIMIZERS:
            problems.append(f"optimizer {self.optimizer!r}: choose from {', '.join(OPTIMIZERS)}")
        elif self.method == "badam" and self.optimizer != "adam":
            problems.append(f"badam reads its posterior off Adam's moments: use optimizer='adam', not {self.optimizer!r}")
        if self.lr_schedule not in LR_SCHEDULES:
            problems.append(f"lr_schedule must be one of {', '.join(LR_SCHEDULES)}, got {self.lr_schedule!r}")
        if not 0 <= self.validation_fraction < 1:
            problems.append(f"validation_fraction must be in [0, 1), got {self.validation_fraction}")
        if self.samples < 1 or self.predict_samples < 1:
            problems.append(f"samples and predict_samples must be ≥ 1, got {self.samples}, {self.predict_samples}")
        if self.method in FAMILIES:
            unknown = sorted(set(self.posterior_options_()) - set(posterior_options(self.method)))
            if unknown:
                problems.append(f"posterior_options {unknown} are not options of {self.method}; it takes "
                                f"{', '.join(posterior_options(self.method))}")
        if self.noise_prior is not None and not (len(self.noise_prior) == 2 and min(self.noise_prior) > 0):
            problems.append(f"noise_prior must be two positive numbers (a, b) of a Gamma prior, got {self.noise_prior}")
        if problems:
            raise ValueError(f"invalid {type(self).__name__}: " + "; ".join(problems))

    # ------------------------------------------------------------------------------ posterior

    def _build(self, n_in: int, n_out: int) -> None:
        """The posterior of this method for a network from n_in inputs to n_out outputs (not yet trained)."""
        self.posterior_ = (_Variational if self.variational else _Particles)(self, n_in, n_out)

    def _particles(self) -> _Particles:
        posterior = self.__dict__.get("posterior_")
        if isinstance(posterior, _Particles):
            return posterior
        raise AttributeError(f"a fitted particle method ({', '.join(PARTICLE_METHODS)}) has particles; this is {self.method!r}")

    # the particle methods' network, as attributes of the estimator
    theta_ = property(lambda self: self._particles().theta, doc="the (M, D) particles")
    layout_ = property(lambda self: self._particles().layout, doc="where each block sits in a particle")
    net_ = property(lambda self: self._particles().net, doc="the particle MLP")
    spec_ = property(lambda self: self._particles().spec, doc="the particle network's spec")

    @property
    def num_particles_(self) -> int:
        """M for the particle methods (1 for map); the number of predictive draws for the parametric ones."""
        if self.variational:
            return self.predict_samples
        return 1 if self.method == "map" else self.num_particles

    @property
    def n_particles(self) -> int:
        """The former name of ``num_particles``."""
        return self.num_particles

    def _outputs(self, x: torch.Tensor) -> torch.Tensor:
        """Network outputs of every member (particle or posterior draw) for inputs x (n, d) in model units: (S, n, out)."""
        return self.posterior_.outputs(x)

    def _fit_tensors(self, x, y, x_val, y_val, callback=None) -> None:
        """Train the posterior for ``epochs`` passes; keep the epoch best on validation (if any)."""
        self.posterior_.fit(x, y, x_val, y_val, callback)

    def _validation_score(self, x_val, y_val) -> float:
        """Mean validation log predictive density (higher is better)."""
        raise NotImplementedError

    def _check_fitted(self) -> None:
        if "posterior_" not in self.__dict__:
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet; call fit(X, y) first or load() a saved model")

    def _split_validation(self, x, y, x_val, y_val):
        if x_val is not None:
            x_val, y_val = check_xy(x_val, y_val, self._task)
            if x_val.shape[1] != x.shape[1]:
                raise ValueError(f"X_val has {x_val.shape[1]} features but X has {x.shape[1]}; pass the same columns")
            return x, y, x_val, y_val
        fit_idx, val_idx = holdout_split(len(x), self.validation_fraction, self.seed)
        if len(val_idx) == 0:
            return x, y, None, None
        return x[fit_idx], y[fit_idx], x[val_idx], y[val_idx]

    # ------------------------------------------------------------------------------ save/load

    def _state(self) -> tuple[dict[str, torch.Tensor], dict]:
        raise NotImplementedError

    def save(self, path: str | Path) -> Path:
        """Write the posterior (particles or parameters) and everything needed to predict to a
        .safetensors file (atomic).

        :raises WriteError: naming the file and the reason (e.g. no space left on the device).
        """
        self._check_fitted()
        tensors, meta = self._state()
        posterior_tensors, posterior_meta = self.posterior_.state()
        params = self.get_params()
        params["hidden"] = list(params["hidden"])
        if params["noise_prior"] is not None:
            params["noise_prior"] = list(params["noise_prior"])
        meta = {**meta, **posterior_meta, "params": params}
        return save_tensors(path, {**posterior_tensors, **tensors}, self._kind, meta)

    @classmethod
    def load(cls, path: str | Path, device: str = "cpu"):
        """Rebuild a fitted estimator from :meth:`save`'s file (or a run folder holding model.safetensors)."""
        tensors, meta, _ = load_tensors(path, cls._kind)
        params = dict(meta["params"], device=device)
        if "n_particles" in params:  # a file written before the parameter was renamed
            params["num_particles"] = params.pop("n_particles")
        params["hidden"] = tuple(params["hidden"])
        model = cls(**params)
        model._restore(tensors, meta)
        model.posterior_.load(tensors, meta, path)
        return model


class BayesianRegressor(_BayesianNN):
    """BNN regression: one hidden layer of 50 ReLU units (§5.1 of S²VGD) by default.

    Paper: https://proceedings.mlr.press/v84/zhang18a.html (§5.1), https://arxiv.org/abs/1608.04471 (§5, the same model with SVGD),
    https://arxiv.org/abs/1603.04733 (§4.1, VMG on the same data sets)

    Example::

        from svpg.supervised import BayesianRegressor
        model = BayesianRegressor(method="s2vgd", householder=1, epochs=500).fit(X_train, y_train)
        model = BayesianRegressor(method="vmg", epochs=500, lr=1e-2)           # or a parametric posterior
        mean, std = model.predict(X_test)          # predictive mean and std, original units
        model.evaluate(X_test, y_test)             # {'rmse': …, 'test_ll': …}
        model.save("boston.safetensors"); BayesianRegressor.load("boston.safetensors")

    :param refit_noise: after training, set each particle's (or the shared) noise precision to the validation-MSE
        estimate when that raises its validation likelihood (Liu & Wang 2016's model selection step,
        done on the validation split only; needs ``validation_fraction > 0``).
    :param validation_fraction: defaults to 0 here: train on every row and keep the last epoch. On
        small UCI sets a 10 % validation split costs more (fewer rows, a noisy checkpoint choice) than
        it gains (docs/supervised.md, nested validation).
    Other parameters: see :class:`_BayesianNN`.
    """

    _kind = "bnn-regressor"
    _task = "regression"
    _PARAMS = _BayesianNN._PARAMS + ("refit_noise",)

    def __init__(self, *args, refit_noise: bool = True, **kwargs):
        kwargs.setdefault("validation_fraction", 0.0)
        super().__init__(*args, **kwargs)
        self.refit_noise = refit_noise

    def _validation_score(self, x_val, y_val):
        f = self._outputs(x_val)[..., 0]
        logp = gaussian_log_prob(y_val, f, log_var=-self.posterior_.log_noise_precision()[:, None])
        return float(log_mean_exp(logp, 0).mean())

    @torch.no_grad()
    def _refit_noise(self, x_val, y_val) -> None:
        """Per particle: γ̂ = 1 / mean validation squared error; keep it if it raises the validation
        likelihood of that particle (Liu & Wang 2016, ``bayesian_nn.py``). A noise precision shared by
        posterior draws is refitted the same way on all draws pooled."""
        f = self._outputs(x_val)[..., 0]
        s = self.posterior_.log_noise_precision()
        if self.posterior_.shared_noise:
            mse = ((y_val - f) ** 2).mean().clamp_min(1e-8).expand_as(s)
            ll = lambda s_: gaussian_log_prob(y_val, f, log_var=-s_[:, None]).sum()
        else:
            mse = ((y_val - f) ** 2).mean(1).clamp_min(1e-8)
            ll = lambda s_: gaussian_log_prob(y_val, f, log_var=-s_[:, None]).sum(1)
        s_hat = -torch.log(mse)
        self.posterior_.set_log_noise_precision(torch.where(ll(s_hat) > ll(s), s_hat, s))

    @_in_threads
    def fit(self, X, y, X_val=None, y_val=None, callback: Callable[[int, dict], None] | None = None) -> BayesianRegressor:
        """Train on (X, y); validation rows are ``(X_val, y_val)`` or carved from X (``validation_fraction``).

        :param callback: called as ``callback(epoch, scalars)`` after every epoch (e.g. TensorBoard).
        """
        self._validate_params()
        x, y = check_xy(X, y, self._task)
        x_fit, y_fit, x_val, y_val_ = self._split_validation(x, y, X_val, y_val)
        self.x_scaler_ = Standardizer.fit(x_fit)
        self.y_scaler_ = Standardizer.fit(y_fit[:, None])
        self.n_features_in_ = x.shape[1]
        self._build(x.shape[1], 1)
        t = lambda a: torch.as_tensor(a, dtype=torch.float32, device=self.device)
        xs, ys = t(self.x_scaler_.transform(x_fit)), t(self.y_scaler_.transform(y_fit[:, None])[:, 0])
        if x_val is not None:
            xv, yv = t(self.x_scaler_.transform(x_val)), t(self.y_scaler_.transform(y_val_[:, None])[:, 0])
        else:
            xv = yv = None
        self._fit_tensors(xs, ys, xv, yv, callback)
        if self.refit_noise and xv is not None:
            self._refit_noise(xv, yv)
        return self

    @_in_threads
    def predict_particles(self, X) -> tuple[np.ndarray, np.ndarray]:
        """Every member's prediction (S, n) and noise std (S,), in the target's original units: the M
        particles, or ``predict_samples`` posterior draws (the same draws every call)."""
        self._check_fitted()
        x = check_features(X, self.n_features_in_)
        xs = torch.as_tensor(self.x_scaler_.transform(x), dtype=torch.float32, device=self.device)
        f = self._outputs(xs)[..., 0].double().cpu().numpy()
        sy, my = float(self.y_scaler_.std[0]), float(self.y_scaler_.mean[0])
        noise = torch.exp(-0.5 * self.posterior_.log_noise_precision()).double().cpu().numpy() * sy
        return f * sy + my, noise

    @_in_threads
    def predict(self, X, return_std: bool = True):
        """Predictive mean (n,) and, by default, predictive std (n,) of the mixture over members.

        The std combines the noise and the spread of the members: √(mean_s σ_s² + var_s f_s(x)).
        """
        means, noise = self.predict_particles(X)
        mean = means.mean(0)
        if not return_std:
            return mean
        var = (noise[:, None] ** 2).mean(0) + means.var(0)
        return mean, np.sqrt(var)

    @_in_threads
    def evaluate(self, X, y) -> dict[str, float]:
        """Test RMSE of the mean prediction and test log-likelihood of the mixture (original units)."""
        x, y = check_xy(X, y, self._task)
        means, noise = self.predict_particles(x)
        return regression_metrics(y, means, noise)

    @_in_threads
    def score(self, X, y) -> float:
        """Coefficient of determination R² of the mean prediction (scikit-learn convention)."""
        x, y = check_xy(X, y, self._task)
        mean = self.predict(x, return_std=False)
        return float(1 - ((y - mean) ** 2).sum() / ((y - y.mean()) ** 2).sum())

    def _state(self):
        d = lambda a: torch.as_tensor(np.asarray(a), dtype=torch.float64)
        tensors = {"x_mean": d(self.x_scaler_.mean), "x_std": d(self.x_scaler_.std),
                   "y_mean": d(self.y_scaler_.mean), "y_std": d(self.y_scaler_.std)}
        return tensors, {"n_features": self.n_features_in_}

    def _restore(self, tensors, meta):
        self.n_features_in_ = int(meta["n_features"])
        self.x_scaler_ = Standardizer(tensors["x_mean"].numpy(), tensors["x_std"].numpy())
        self.y_scaler_ = Standardizer(tensors["y_mean"].numpy(), tensors["y_std"].numpy())
        self._build(self.n_features_in_, 1)


class BayesianClassifier(_BayesianNN):
    """BNN classification: 784-400-400-10 ReLU with softmax (§5.2 of S²VGD) by default.

    Paper: https://proceedings.mlr.press/v84/zhang18a.html (§5.2)

    ``predict_proba`` is the mean of the particles' (or ``predict_samples`` posterior draws') softmax;
    ``predict`` its argmax (scikit-learn convention). Inputs are used as given (scale pixels to [0, 1] first).

    Example::

        from svpg.supervised import BayesianClassifier
        clf = BayesianClassifier(method="s2vgd", num_particles=10, epochs=10).fit(X_train, y_train)
        probs = clf.predict_proba(X_test)          # (n, C)
        clf.evaluate(X_test, y_test)               # {'error': …, 'nll': …, 'ece': …}
    """

    _kind = "bnn-classifier"
    _task = "classification"

    def __init__(self, method: str = "s2vgd", num_particles: int = 10, householder: int = 1,
                 hidden: tuple[int, ...] = (400, 400), *args, **kwargs):
        kwargs.setdefault("epochs", 20)
        # 20 draws: a 784-400-400-10 network's predictive over 100 draws costs ~10× an SVGD epoch's evaluation
        kwargs.setdefault("predict_samples", 20)
        super().__init__(method, num_particles, householder, hidden, *args, **kwargs)

    def _log_predictive(self, x) -> torch.Tensor:
        """log of the mean of the members' softmax: (n, C)."""
        return log_mean_exp(torch.log_softmax(self._outputs(x).double(), -1), 0)

    def _validation_score(self, x_val, y_val):
        logp = self._log_predictive(x_val)
        return float(logp.gather(1, y_val[:, None])[:, 0].mean())

    @_in_threads
    def fit(self, X, y, X_val=None, y_val=None, callback: Callable[[int, dict], None] | None = None) -> BayesianClassifier:
        """Train on (X, y) with labels 0..C−1; validation as for :meth:`BayesianRegressor.fit`."""
        self._validate_params()
        x, y = check_xy(X, y, self._task)
        x_fit, y_fit, x_val, y_val_ = self._split_validation(x, y, X_val, y_val)
        self.n_features_in_ = x.shape[1]
        self.n_classes_ = int(max(y.max(), y_val_.max() if y_val_ is not None else 0)) + 1
        self.classes_ = np.arange(self.n_classes_)
        self._build(x.shape[1], self.n_classes_)
        t = lambda a, dt=torch.float32: torch.as_tensor(a, dtype=dt, device=self.device)
        xv = t(x_val) if x_val is not None else None
        yv = t(y_val_, torch.int64) if x_val is not None else None
        self._fit_tensors(t(x_fit), t(y_fit, torch.int64), xv, yv, callback)
        return self

    @_in_threads
    def predict_proba(self, X) -> np.ndarray:
        """Mean of the members' softmax: (n, C)."""
        self._check_fitted()
        x = torch.as_tensor(check_features(X, self.n_features_in_), dtype=torch.float32, device=self.device)
        return torch.exp(self._log_predictive(x)).cpu().numpy()

    @_in_threads
    def predict(self, X) -> np.ndarray:
        """Most probable class under the predictive distribution: (n,)."""
        return self.predict_proba(X).argmax(1)

    @_in_threads
    def evaluate(self, X, y) -> dict[str, float]:
        """Test error, NLL and expected calibration error of the predictive distribution."""
        x, y = check_xy(X, y, self._task)
        return classification_metrics(y, self.predict_proba(x))

    @_in_threads
    def score(self, X, y) -> float:
        """Accuracy (scikit-learn convention)."""
        x, y = check_xy(X, y, self._task)
        return float((self.predict(x) == y).mean())

    def _state(self):
        return {}, {"n_features": self.n_features_in_, "n_classes": self.n_classes_}

    def _restore(self, tensors, meta):
        self.n_features_in_ = int(meta["n_features"])
        self.n_classes_ = int(meta["n_classes"])
        self.classes_ = np.arange(self.n_classes_)
        self._build(self.n_features_in_, self.n_classes_)
