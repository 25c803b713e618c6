"""Estimator-style particle Bayesian neural networks on the shared particle core (§5.1–5.2 of S²VGD).

``BayesianRegressor`` and ``BayesianClassifier`` hold M particles of an MLP in one (M, D) tensor θ
(:class:`~svpg.core.particles.ParticleLayout`) and move them with SVGD (eq. 9,
:class:`~svpg.core.svgd.SVGD`) on the log posterior

    log p(θ | D) = (N / B) Σ_{i ∈ batch} log p(y_i | x_i, θ) + log p(θ)   (likelihood scaled by N/B),

where log p(θ) is eq. 14 (C ~ N(0, λ); v ~ N(0, φ); Λ ~ N(0, ψ); λ, φ, ψ ~ Inv-Gamma(1, 0.1); the bias b
shares C's λ, our choice).
After every SVGD step each Householder vector v (length ℓ) is rescaled to length √ℓ
(:meth:`~svpg.core.networks.ParticleMLP.normalise_householder_`): the weights depend on v's direction only.

Methods (the ``method`` argument):

- ``"s2vgd"``: structural layers W = P Λ1 C Λ2 Qᵀ with K Householder reflections per side (§3), RBF kernel;
- ``"svgd"``: plain dense layers (K = 0, Λ = I), RBF kernel (Liu & Wang 2016);
- ``"map"``: one plain particle: SVGD with M = 1 is gradient ascent on the log posterior.

Regression (§5.1): Gaussian likelihood N(y | f(x), 1/γ) whose noise precision γ is a particle
coordinate (stored as log γ) with a Gamma(1, 0.1) prior; inputs and targets are standardised with
training statistics and predictions are mapped back to the original units. Classification (§5.2):
softmax likelihood; the predictive distribution is the mean of the particles' softmax.

Nothing is ever chosen on test data: when ``validation_fraction > 0`` a validation split is carved
from the training rows; it selects the checkpoint (best validation log-likelihood over the epochs
evaluated) and, for regression, each particle's noise precision (Liu & Wang's heuristic, see
:meth:`BayesianRegressor._refit_noise`).

Randomness comes from the ``seed`` argument only, through named streams of :mod:`svpg.seeding`: the
validation rows, the initial particles and the minibatch order each have their own, and no global
RNG state is read or changed. Two fits with the same seed on one machine are bit-identical.

``fit``, ``predict`` and ``evaluate`` run on ``threads`` torch CPU threads (default
:data:`svpg.runtime.DEFAULT_THREADS`, as ``train.py``) and restore the caller's setting afterwards.
"""
from __future__ import annotations

import functools
import math
import time
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from tqdm.auto import tqdm

from svpg.core.networks import NetworkSpec, ParticleMLP
from svpg.core.particles import ParticleLayout
from svpg.core.probability import gamma_log_prob_of_log, gaussian_log_prob, log_mean_exp
from svpg.core.svgd import SVGD

from svpg.io import CheckpointError, load_tensors, save_tensors
from svpg.runtime import DEFAULT_THREADS, torch_threads
from svpg.seeding import torch_generator
from svpg.supervised.data import TASKS, Standardizer, check_features, check_xy, holdout_split
from svpg.supervised.metrics import classification_metrics, regression_metrics

LR_SCHEDULES = ("constant", "cosine")
METHODS = {
    "s2vgd": "structural MVG layers W = P Λ1 C Λ2 Qᵀ with K Householder reflections per side (§3), RBF kernel",
    "svgd": "plain dense layers (K = 0, Λ = I), RBF kernel (Liu & Wang 2016)",
    "map": "one plain particle (M = 1): gradient ascent on the log posterior",
}

class Objective:
    """The log posterior of a particle BNN, log p(θ | batch) per particle (M,), and its pieces.

    One object per network structure; it holds no particles, so estimators with the same structure
    share it (and its compiled version, see ``compile`` in :class:`_ParticleBNN`).

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
        m = theta.shape[0]
        out = self.net.forward(weights, x.expand(m, -1, -1))
        if self.task == "regression":
            return gaussian_log_prob(y, out[..., 0], log_var=-self.log_prec(theta)[:, None]).sum(1)  # variance 1/γ
        logp = torch.log_softmax(out, -1)
        return logp.gather(2, y.expand(m, -1).unsqueeze(2))[..., 0].sum(1)

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


def _in_threads(method):
    """Run an estimator method on the estimator's torch CPU threads; the caller's count is restored."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if self.threads is not None and not (isinstance(self.threads, int) and self.threads >= 1):
            raise ValueError(f"threads must be a positive integer (or None for the caller's setting), got {self.threads!r}")
        with torch_threads(self.threads):
            return method(self, *args, **kwargs)

    return wrapper


class _ParticleBNN:
    """What regressor and classifier share: parameters, the particle network, the SVGD loop, save/load.

    Paper: https://proceedings.mlr.press/v84/zhang18a.html (S²VGD, §5.1–5.2), https://arxiv.org/abs/1608.04471 (SVGD and its Bayesian neural network)

    :param method: ``"s2vgd"``, ``"svgd"`` or ``"map"`` (see :data:`METHODS`).
    :param n_particles: M (ignored by ``"map"``, which uses one particle).
    :param householder: K Householder reflections per side of every layer (``"s2vgd"`` only).
    :param hidden: hidden layer widths.
    :param activation: ``"relu"`` or ``"tanh"``.
    :param prior_a: Inv-Gamma / Gamma shape a of every hyperprior (§5: 1).
    :param prior_b: Inv-Gamma scale / Gamma rate b of every hyperprior (§5: 0.1).
    :param kernel: ``"median"`` (h = med²/log M) or a fixed bandwidth.
    :param optimizer: ``"adam"``, ``"rmsprop"``, ``"adagrad"`` or ``"sgd"``, stepping along −φ.
    :param lr: learning rate (the peak one under a schedule).
    :param lr_schedule: ``"constant"`` or ``"cosine"`` (anneals from ``lr`` to 0 over all steps).
    :param epochs: passes over the (fit part of the) training data.
    :param batch_size: minibatch size B (the likelihood is scaled by N/B).
    :param validation_fraction: share of the training rows held out for checkpoint selection (0: none,
        the last epoch is kept).
    :param eval_every: evaluate on the validation rows every this many epochs.
    :param seed: the root of the estimator's random streams: the validation rows, the initial particles
        and the minibatch order each draw from their own (:mod:`svpg.seeding`); the same seed gives
        bit-identical fits on one machine.
    :param device: torch device.
    :param progress: show a tqdm bar over epochs.
    :param compile: ``torch.compile`` the log posterior and its gradient (several times fewer CPU
        seconds per step for small networks, after a one-off compilation of 1–2 minutes that every
        estimator of the same structure in the process reuses).
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
        n_particles: int = 20,
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
    ):
        self.method = method
        self.n_particles = n_particles
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

    # ---------------------------------------------------------------------------- parameters

    _PARAMS = (
        "method", "n_particles", "householder", "hidden", "activation", "prior_a", "prior_b", "kernel",
        "optimizer", "lr", "lr_schedule", "epochs", "batch_size", "validation_fraction", "eval_every", "seed", "device",
        "progress", "compile", "threads",
    )

    def get_params(self, deep: bool = True) -> dict:
        """The constructor arguments (scikit-learn convention)."""
        return {k: getattr(self, k) for k in self._PARAMS}

    def set_params(self, **params) -> "_ParticleBNN":
        for k, v in params.items():
            if k not in self._PARAMS:
                raise ValueError(f"unknown parameter {k!r}; valid: {', '.join(self._PARAMS)}")
            setattr(self, k, v)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in ("method", "n_particles", "householder", "hidden", "epochs", "lr"))
        return f"{type(self).__name__}({args})"

    def _validate_params(self) -> None:
        problems = []
        if self.method not in METHODS:
            problems.append(f"method {self.method!r}: choose from {', '.join(METHODS)}")
        if self.n_particles < 1:
            problems.append(f"n_particles must be ≥ 1, got {self.n_particles}")
        if self.householder < 0 or (self.method == "s2vgd" and self.householder < 1):
            problems.append(f"householder K must be ≥ 1 for s2vgd, got {self.householder}")
        if not self.hidden or min(self.hidden) < 1:
            problems.append(f"hidden needs positive widths, got {self.hidden}")
        if self.epochs < 1 or self.batch_size < 1 or self.eval_every < 1:
            problems.append(f"epochs, batch_size and eval_every must be ≥ 1, got {self.epochs}, {self.batch_size}, {self.eval_every}")
        if not self.lr > 0:
            problems.append(f"lr must be > 0, got {self.lr}")
        if self.lr_schedule not in LR_SCHEDULES:
            problems.append(f"lr_schedule must be one of {', '.join(LR_SCHEDULES)}, got {self.lr_schedule!r}")
        if not 0 <= self.validation_fraction < 1:
            problems.append(f"validation_fraction must be in [0, 1), got {self.validation_fraction}")
        if problems:
            raise ValueError(f"invalid {type(self).__name__}:\n  " + "\n  ".join(problems))

    @property
    def num_particles_(self) -> int:
        return 1 if self.method == "map" else self.n_particles

    def _spec(self, n_in: int, n_out: int) -> NetworkSpec:
        structural = self.method == "s2vgd"
        return NetworkSpec(
            (n_in, *self.hidden, n_out),
            activation=self.activation,
            householder=self.householder if structural else 0,
            learn_scales=structural,
            prior="mvg",
            prior_a=self.prior_a,
            prior_b=self.prior_b,
        )

    # ------------------------------------------------------------------------------- network

    def _build(self, n_in: int, n_out: int) -> None:
        """The particle layout (network blocks + front-end extras) and θ, all zero."""
        self.spec_ = self._spec(n_in, n_out)
        self.objective_, self._log_posterior = shared_objective(self._task, self.spec_, self.compile)
        self.layout_, self.net_ = self.objective_.layout, self.objective_.net
        self.theta_ = torch.zeros(self.num_particles_, self.layout_.size, device=self.device)

    def _init_extra(self, theta: torch.Tensor) -> None:
        pass

    def _outputs(self, x: torch.Tensor, theta: torch.Tensor | None = None, chunk: int = 2048) -> torch.Tensor:
        """Network outputs of every particle for inputs x (n, d) in model units: (M, n, out)."""
        theta = self.theta_ if theta is None else theta
        with torch.no_grad():
            weights = self.net_.weights(theta)
            m = theta.shape[0]
            parts = [self.net_.forward(weights, x[i : i + chunk].expand(m, -1, -1)) for i in range(0, len(x), chunk)]
        return torch.cat(parts, 1)

    # --------------------------------------------------------------------------- training loop

    def _fit_tensors(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        x_val: torch.Tensor | None,
        y_val: torch.Tensor | None,
        callback: Callable[[int, dict], None] | None = None,
    ) -> None:
        """SVGD on log p(θ | data) for ``epochs`` passes; keep the epoch best on validation (if any)."""
        self.net_.init_(self.theta_, torch_generator(self.seed, "init", device=self.theta_.device))
        self._init_extra(self.theta_)
        theta = self.theta_.requires_grad_(True)
        svgd = SVGD(theta, self.kernel if self.num_particles_ > 1 else "median", self.optimizer, self.lr)
        n, bs = len(x), min(self.batch_size, len(x))
        total_steps = self.epochs * (n // bs)
        scale = torch.tensor(n / bs, device=x.device)  # a tensor: a compiled objective is not specialised on N
        schedule = None
        if self.lr_schedule == "cosine":
            schedule = torch.optim.lr_scheduler.LambdaLR(
                svgd.optimizer, lambda step: 0.5 * (1 + math.cos(math.pi * min(step, total_steps) / total_steps)))
        self.history_: list[dict] = []
        best, best_theta, best_epoch = -math.inf, None, self.epochs
        order = torch_generator(self.seed, "minibatch")  # on the CPU: the same order on every device
        bar = tqdm(range(1, self.epochs + 1), disable=not self.progress, unit="epoch", leave=False, dynamic_ncols=True)
        for epoch in bar:
            t0 = time.perf_counter()
            perm = torch.randperm(n, generator=order).to(x.device)
            householder_norms = []
            for start in range(0, n - bs + 1, bs):  # drop the last partial batch: every step sees B rows
                idx = perm[start : start + bs]
                log_post = self._log_posterior(theta, x[idx], y[idx], scale)
                (grad,) = torch.autograd.grad(log_post.sum(), theta)
                terms = svgd.step(grad)
                householder_norms.append(self.net_.normalise_householder_(theta))  # unit v: the same W
                if schedule is not None:
                    schedule.step()
            record = {"epoch": epoch, "epoch_seconds": time.perf_counter() - t0}
            if x_val is not None and (epoch % self.eval_every == 0 or epoch == self.epochs):
                score = self._validation_score(theta.detach(), x_val, y_val)
                record["val_log_likelihood"] = score
                if score > best:
                    best, best_theta, best_epoch = score, theta.detach().clone(), epoch
                bar.set_postfix(val_ll=f"{score:.3f}", best=best_epoch)
            if callback is not None:
                diag = terms.diagnostics(theta.detach())
                if self.net_.has_householder:
                    diag["structure/min_householder_norm"] = torch.stack(householder_norms).amin()
                diag = {k: float(v) for k, v in diag.items()}
                callback(epoch, {**record, **diag, "train/log_posterior": float(log_post.detach().mean())})
            self.history_.append(record)
        bar.close()
        with torch.no_grad():
            if best_theta is not None:
                theta.copy_(best_theta)
        self.theta_ = theta.detach()
        self.best_epoch_ = best_epoch

    def _validation_score(self, theta, x_val, y_val) -> float:
        """Mean validation log predictive density (higher is better)."""
        raise NotImplementedError

    def _check_fitted(self) -> None:
        if not hasattr(self, "theta_"):
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
        """Write the particles and everything needed to predict to a .safetensors file (atomic).

        :raises WriteError: naming the file and the reason (e.g. no space left on the device).
        """
        self._check_fitted()
        tensors, meta = self._state()
        params = self.get_params()
        params["hidden"] = list(params["hidden"])
        meta = {**meta, "params": params, "spec": self.spec_.to_dict(), "layout": self.layout_.describe()}
        return save_tensors(path, {"theta": self.theta_, **tensors}, self._kind, meta)

    @classmethod
    def load(cls, path: str | Path, device: str = "cpu"):
        """Rebuild a fitted estimator from :meth:`save`'s file (or a run folder holding model.safetensors)."""
        tensors, meta, _ = load_tensors(path, cls._kind)
        params = dict(meta["params"], device=device)
        params["hidden"] = tuple(params["hidden"])
        model = cls(**params)
        model._restore(tensors, meta)
        if model.layout_.describe() != meta["layout"] or tuple(tensors["theta"].shape) != (model.num_particles_, model.layout_.size):
            raise CheckpointError(f"{path}: particle layout does not match its metadata (file written by another version?)")
        model.theta_ = tensors["theta"].to(device)
        return model


class BayesianRegressor(_ParticleBNN):
    """Particle BNN regression: one hidden layer of 50 ReLU units (§5.1 of S²VGD) by default.

    Paper: https://proceedings.mlr.press/v84/zhang18a.html (§5.1), https://arxiv.org/abs/1608.04471 (§5, the same model with SVGD)

    Example::

        from svpg.supervised import BayesianRegressor
        model = BayesianRegressor(method="s2vgd", householder=1, epochs=500).fit(X_train, y_train)
        mean, std = model.predict(X_test)          # predictive mean and std, original units
        model.evaluate(X_test, y_test)             # {'rmse': …, 'test_ll': …}
        model.save("boston.safetensors"); BayesianRegressor.load("boston.safetensors")

    :param refit_noise: after training, set each particle's noise precision to the validation-MSE
        estimate when that raises its validation likelihood (Liu & Wang 2016's model selection step,
        done on the validation split only; needs ``validation_fraction > 0``).
    :param validation_fraction: defaults to 0 here: train on every row and keep the last epoch. On
        small UCI sets a 10 % validation split costs more (fewer rows, a noisy checkpoint choice) than
        it gains (docs/supervised.md, nested validation).
    Other parameters: see :class:`_ParticleBNN`.
    """

    _kind = "bnn-regressor"
    _task = "regression"
    _PARAMS = _ParticleBNN._PARAMS + ("refit_noise",)

    def __init__(self, *args, refit_noise: bool = True, **kwargs):
        kwargs.setdefault("validation_fraction", 0.0)
        super().__init__(*args, **kwargs)
        self.refit_noise = refit_noise

    def _init_extra(self, theta):
        with torch.no_grad():
            self.layout_.get(theta, "log_noise_precision").zero_()  # noise std = 1 target std

    def _log_prec(self, theta):
        return self.objective_.log_prec(theta)

    def _validation_score(self, theta, x_val, y_val):
        f = self._outputs(x_val, theta)[..., 0]
        logp = gaussian_log_prob(y_val, f, log_var=-self._log_prec(theta)[:, None])
        return float(log_mean_exp(logp, 0).mean())

    @torch.no_grad()
    def _refit_noise(self, x_val, y_val) -> None:
        """Per particle: γ̂ = 1 / mean validation squared error; keep it if it raises the validation
        likelihood of that particle (Liu & Wang 2016, ``bayesian_nn.py``)."""
        f = self._outputs(x_val)[..., 0]
        s = self._log_prec(self.theta_)
        mse = ((y_val - f) ** 2).mean(1).clamp_min(1e-8)
        s_hat = -torch.log(mse)
        ll = lambda s_: gaussian_log_prob(y_val, f, log_var=-s_[:, None]).sum(1)  # noqa: E731
        self._log_prec(self.theta_).copy_(torch.where(ll(s_hat) > ll(s), s_hat, s))

    @_in_threads
    def fit(self, X, y, X_val=None, y_val=None, callback: Callable[[int, dict], None] | None = None) -> "BayesianRegressor":
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
        t = lambda a: torch.as_tensor(a, dtype=torch.float32, device=self.device)  # noqa: E731
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
        """Every particle's prediction (M, n) and noise std (M,), in the target's original units."""
        self._check_fitted()
        x = check_features(X, self.n_features_in_)
        xs = torch.as_tensor(self.x_scaler_.transform(x), dtype=torch.float32, device=self.device)
        f = self._outputs(xs)[..., 0].double().cpu().numpy()
        sy, my = float(self.y_scaler_.std[0]), float(self.y_scaler_.mean[0])
        noise = torch.exp(-0.5 * self._log_prec(self.theta_)).double().cpu().numpy() * sy
        return f * sy + my, noise

    @_in_threads
    def predict(self, X, return_std: bool = True):
        """Predictive mean (n,) and, by default, predictive std (n,) of the particle mixture.

        The std combines the noise and the spread of the particles: √(mean_m σ_m² + var_m f_m(x)).
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
        d = lambda a: torch.as_tensor(np.asarray(a), dtype=torch.float64)  # noqa: E731
        tensors = {"x_mean": d(self.x_scaler_.mean), "x_std": d(self.x_scaler_.std),
                   "y_mean": d(self.y_scaler_.mean), "y_std": d(self.y_scaler_.std)}
        return tensors, {"n_features": self.n_features_in_}

    def _restore(self, tensors, meta):
        self.n_features_in_ = int(meta["n_features"])
        self.x_scaler_ = Standardizer(tensors["x_mean"].numpy(), tensors["x_std"].numpy())
        self.y_scaler_ = Standardizer(tensors["y_mean"].numpy(), tensors["y_std"].numpy())
        self._build(self.n_features_in_, 1)


class BayesianClassifier(_ParticleBNN):
    """Particle BNN classification: 784-400-400-10 ReLU with softmax (§5.2 of S²VGD) by default.

    Paper: https://proceedings.mlr.press/v84/zhang18a.html (§5.2)

    ``predict_proba`` is the mean of the particles' softmax; ``predict`` its argmax (scikit-learn
    convention). Inputs are used as given (scale pixels to [0, 1] first).

    Example::

        from svpg.supervised import BayesianClassifier
        clf = BayesianClassifier(method="s2vgd", n_particles=10, epochs=10).fit(X_train, y_train)
        probs = clf.predict_proba(X_test)          # (n, C)
        clf.evaluate(X_test, y_test)               # {'error': …, 'nll': …, 'ece': …}
    """

    _kind = "bnn-classifier"
    _task = "classification"

    def __init__(self, method: str = "s2vgd", n_particles: int = 10, householder: int = 1,
                 hidden: tuple[int, ...] = (400, 400), *args, **kwargs):
        kwargs.setdefault("epochs", 20)
        super().__init__(method, n_particles, householder, hidden, *args, **kwargs)

    def _log_predictive(self, x, theta=None) -> torch.Tensor:
        """log of the mean of the particles' softmax: (n, C)."""
        return log_mean_exp(torch.log_softmax(self._outputs(x, theta).double(), -1), 0)

    def _validation_score(self, theta, x_val, y_val):
        logp = self._log_predictive(x_val, theta)
        return float(logp.gather(1, y_val[:, None])[:, 0].mean())

    @_in_threads
    def fit(self, X, y, X_val=None, y_val=None, callback: Callable[[int, dict], None] | None = None) -> "BayesianClassifier":
        """Train on (X, y) with labels 0..C−1; validation as for :meth:`BayesianRegressor.fit`."""
        self._validate_params()
        x, y = check_xy(X, y, self._task)
        x_fit, y_fit, x_val, y_val_ = self._split_validation(x, y, X_val, y_val)
        self.n_features_in_ = x.shape[1]
        self.n_classes_ = int(max(y.max(), y_val_.max() if y_val_ is not None else 0)) + 1
        self.classes_ = np.arange(self.n_classes_)
        self._build(x.shape[1], self.n_classes_)
        t = lambda a, dt=torch.float32: torch.as_tensor(a, dtype=dt, device=self.device)  # noqa: E731
        xv = t(x_val) if x_val is not None else None
        yv = t(y_val_, torch.int64) if x_val is not None else None
        self._fit_tensors(t(x_fit), t(y_fit, torch.int64), xv, yv, callback)
        return self

    @_in_threads
    def predict_proba(self, X) -> np.ndarray:
        """Mean of the particles' softmax: (n, C)."""
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
