"""The scikit-learn style estimators ``BayesianRegressor`` and ``BayesianClassifier``: parameters, data
handling, prediction, evaluation, save and load; training is their posterior's (:mod:`.posteriors`)."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import cast

import numpy as np
import torch

from svpg.core.probability import gaussian_log_prob, log_mean_exp
from svpg.core.svgd import OPTIMIZERS
from svpg.core.variational import FAMILIES, posterior_options
from svpg.io import load_tensors, save_tensors
from svpg.runtime import DEFAULT_THREADS, flush_denormals, resolve_device, torch_threads
from svpg.supervised.data import (
    Standardizer,
    check_features,
    check_xy,
    holdout_split,
)
from svpg.supervised.metrics import classification_metrics, regression_metrics
from svpg.supervised.models.methods import (
    BNN_METHODS,
    EARLIER_WEIGHT_PRIOR,
    KEEP_EPOCHS,
    LR_SCHEDULES,
    NOISE_PRIORS,
    PARTICLE_METHODS,
    POSTERIOR_OPTIONS,
    WEIGHT_PRIORS,
)
from svpg.supervised.models.posteriors import PosteriorSettings, TrainingCheckpoint, _Particles, _Variational


def _renamed_particles(n_particles: int, stacklevel: int) -> int:
    warnings.warn(
        "n_particles is now called num_particles, as everywhere else in svpg; n_particles will be removed",
        FutureWarning,
        stacklevel=stacklevel + 1,
    )
    return n_particles


def _in_threads(method):
    """Run an estimator method on the estimator's torch CPU threads, with subnormal floats flushed to zero
    (:func:`svpg.runtime.flush_denormals`); the caller's settings are restored."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if self.threads is not None and not (isinstance(self.threads, int) and self.threads >= 1):
            raise ValueError(
                f"threads must be a positive integer (or None for the caller's setting), got {self.threads!r}"
            )
        with torch_threads(self.threads), flush_denormals():
            return method(self, *args, **kwargs)

    return wrapper


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
    :param weight_prior: the particle methods' prior on the weights: ``"mvg"``, eq. 14 (every group's
        variance a particle coordinate with an Inv-Gamma(prior_a, prior_b) hyperprior), ``"gaussian"``,
        every weight N(0, prior_std²), as the S²VGD authors' MNIST code (:class:`svpg.core.priors.GaussianPrior`),
        or ``"auto"``: ``"gaussian"`` for classification, where eq. 14 collapses wide layers (docs/supervised.md,
        MNIST), ``"mvg"`` for regression. The parametric methods take theirs from ``posterior_options``.
    :param prior_std: the standard deviation of ``weight_prior="gaussian"``.
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
    :param keep_epoch: the weights ``fit`` ends with: ``"best"``, those of the evaluated epoch with the
        highest validation log-likelihood (the last epoch without validation rows), or ``"last"``, those of
        the last epoch, as a fixed training length (S²VGD §5.2's 100 MNIST epochs) prescribes; the
        validation rows are evaluated either way (``history_``).
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
        weight_prior: str = "auto",
        prior_std: float = 1.0,
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
        keep_epoch: str = "best",
        n_particles: int | None = None,
    ):
        if n_particles is not None:
            num_particles = _renamed_particles(n_particles, stacklevel=3)  # the caller of BayesianRegressor(…)
        self.method = method
        self.num_particles = num_particles
        self.householder = householder
        self.hidden = tuple(hidden)
        self.activation = activation
        self.prior_a = prior_a
        self.prior_b = prior_b
        self.weight_prior = weight_prior
        self.prior_std = prior_std
        self.kernel = kernel
        self.optimizer = optimizer
        self.lr = lr
        self.lr_schedule = lr_schedule
        self.epochs = epochs
        self.batch_size = batch_size
        self.validation_fraction = validation_fraction
        self.eval_every = eval_every
        self.keep_epoch = keep_epoch
        self.seed = seed
        self.device = device
        self.progress = progress
        self.compile = compile
        self.threads = threads
        self.samples = samples
        self.predict_samples = predict_samples
        self.posterior_options = None if posterior_options is None else dict(posterior_options)
        self.noise_prior = None if noise_prior is None else tuple(noise_prior)

    @property
    def torch_device(self) -> torch.device:
        """``device`` as torch's (SB3's ``"auto"``: CUDA where torch sees it, else the CPU)."""
        return resolve_device(self.device)

    # ---------------------------------------------------------------------------- parameters

    _PARAMS: tuple[str, ...] = (
        "method",
        "num_particles",
        "householder",
        "hidden",
        "activation",
        "prior_a",
        "prior_b",
        "weight_prior",
        "prior_std",
        "kernel",
        "optimizer",
        "lr",
        "lr_schedule",
        "epochs",
        "batch_size",
        "validation_fraction",
        "eval_every",
        "keep_epoch",
        "seed",
        "device",
        "progress",
        "compile",
        "threads",
        "samples",
        "predict_samples",
        "posterior_options",
        "noise_prior",
    )

    def get_params(self, deep: bool = True) -> dict:
        """The constructor arguments (scikit-learn convention)."""
        return {k: getattr(self, k) for k in self._PARAMS}

    def set_params(self, **params) -> _BayesianNN:
        if "n_particles" in params:
            params["num_particles"] = _renamed_particles(params.pop("n_particles"), stacklevel=2)
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
            return cast("tuple[float, float]", tuple(self.noise_prior))  # two numbers: _validate_params checks
        return (
            NOISE_PRIORS.get(self.method, (self.prior_a, self.prior_b))
            if self.variational
            else (self.prior_a, self.prior_b)
        )

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
            problems.append(
                f"epochs, batch_size and eval_every must be ≥ 1, got {self.epochs}, {self.batch_size}, {self.eval_every}"
            )
        if not self.lr > 0:
            problems.append(f"lr must be > 0, got {self.lr}")
        if self.optimizer not in OPTIMIZERS:
            problems.append(f"optimizer {self.optimizer!r}: choose from {', '.join(OPTIMIZERS)}")
        elif self.method == "badam" and self.optimizer != "adam":
            problems.append(
                f"badam reads its posterior off Adam's moments: use optimizer='adam', not {self.optimizer!r}"
            )
        if self.lr_schedule not in LR_SCHEDULES:
            problems.append(f"lr_schedule must be one of {', '.join(LR_SCHEDULES)}, got {self.lr_schedule!r}")
        if not 0 <= self.validation_fraction < 1:
            problems.append(f"validation_fraction must be in [0, 1), got {self.validation_fraction}")
        if self.keep_epoch not in KEEP_EPOCHS:
            problems.append(f"keep_epoch must be one of {', '.join(KEEP_EPOCHS)}, got {self.keep_epoch!r}")
        if self.samples < 1 or self.predict_samples < 1:
            problems.append(f"samples and predict_samples must be ≥ 1, got {self.samples}, {self.predict_samples}")
        if self.method in FAMILIES:
            unknown = sorted(set(self.posterior_options_()) - set(posterior_options(self.method)))
            if unknown:
                problems.append(
                    f"posterior_options {unknown} are not options of {self.method}; it takes "
                    f"{', '.join(posterior_options(self.method))}"
                )
        if self.weight_prior not in WEIGHT_PRIORS:
            problems.append(f"weight_prior must be one of {', '.join(WEIGHT_PRIORS)}, got {self.weight_prior!r}")
        elif self.weight_prior == "gaussian" and self.method in FAMILIES:
            problems.append(
                f"weight_prior={self.weight_prior!r} is a prior of the particle methods; {self.method} takes its "
                "prior from posterior_options"
            )
        if not self.prior_std > 0:
            problems.append(f"prior_std must be > 0, got {self.prior_std}")
        if self.noise_prior is not None and not (len(self.noise_prior) == 2 and min(self.noise_prior) > 0):
            problems.append(f"noise_prior must be two positive numbers (a, b) of a Gamma prior, got {self.noise_prior}")
        if problems:
            raise ValueError(f"invalid {type(self).__name__}: " + "; ".join(problems))

    # ------------------------------------------------------------------------------ posterior

    def _posterior_settings(self) -> PosteriorSettings:
        """What the posterior is built and trained with: these parameters, the task's defaults resolved."""
        return PosteriorSettings(
            task=self._task,
            method=self.method,
            hidden=self.hidden,
            activation=self.activation,
            householder=self.householder,
            weight_prior=self.weight_prior_,
            prior_a=self.prior_a,
            prior_b=self.prior_b,
            prior_std=self.prior_std,
            num_particles=self.num_particles,
            kernel=self.kernel,
            optimizer=self.optimizer,
            lr=self.lr,
            lr_schedule=self.lr_schedule,
            batch_size=self.batch_size,
            epochs=self.epochs,
            eval_every=self.eval_every,
            keep_epoch=self.keep_epoch,
            samples=self.samples,
            predict_samples=self.predict_samples,
            posterior_options=self.posterior_options_(),
            noise_prior=self.noise_prior_(),
            seed=self.seed,
            device=str(self.torch_device),
            compile=self.compile,
            progress=self.progress,
        )

    def __setattr__(self, name: str, value) -> None:
        super().__setattr__(name, value)
        if name in self._PARAMS and "posterior_" in self.__dict__:  # a fitted model predicts with the new value
            self.posterior_.settings = self._posterior_settings()

    def _build(self, n_in: int, n_out: int) -> None:
        """The posterior of this method for a network from n_in inputs to n_out outputs (not yet trained)."""
        self.posterior_ = (_Variational if self.variational else _Particles)(self._posterior_settings(), n_in, n_out)

    def _particles(self) -> _Particles:
        posterior = self.__dict__.get("posterior_")
        if isinstance(posterior, _Particles):
            return posterior
        raise AttributeError(
            f"a fitted particle method ({', '.join(PARTICLE_METHODS)}) has particles; this is {self.method!r}"
        )

    # what the last fit did, as attributes of the estimator
    history_ = property(lambda self: self.posterior_.history, doc="one record per epoch (validation figures)")
    best_epoch_ = property(lambda self: self.posterior_.best_epoch, doc="the epoch whose weights were kept")
    resumed_epoch_ = property(
        lambda self: self.posterior_.resumed_epoch, doc="the epoch a checkpoint continued from (0: none)"
    )
    resumed_seconds_ = property(
        lambda self: self.posterior_.resumed_seconds, doc="the training seconds before that checkpoint"
    )

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

    # what does not change what is fitted (only its speed, or its rounding), so a checkpoint may be continued with other values
    _NOT_IN_FINGERPRINT = ("device", "compile", "progress", "threads")
    # parameters added after checkpoints and saved models existed, at the value every earlier fit had: left
    # out of the fingerprint then, so that a checkpoint saved before them still continues; a file without them
    # loads with these values
    _ADDED_LATER = {"weight_prior": EARLIER_WEIGHT_PRIOR, "prior_std": 1.0}

    @property
    def weight_prior_(self) -> str:
        """The particle methods' weight prior, ``"auto"`` resolved for this task."""
        if self.weight_prior != "auto":
            return self.weight_prior
        return "gaussian" if self._task == "classification" else "mvg"

    def _fit_tensors(self, x, y, x_val, y_val, callback=None, checkpoint=None, checkpoint_minutes=10.0) -> None:
        """Train the posterior for ``epochs`` passes; end with the weights of the epoch ``keep_epoch`` names.
        With ``checkpoint`` (a file path) continue from that file if it holds this fit's state, and save
        the state there every ``checkpoint_minutes`` of training (:class:`TrainingCheckpoint`)."""
        saver = None
        if checkpoint is not None:
            if not checkpoint_minutes > 0:
                raise ValueError(f"checkpoint_minutes must be > 0, got {checkpoint_minutes}")
            params = {
                k: v
                for k, v in {**self.get_params(), "weight_prior": self.weight_prior_}.items()
                if k not in self._NOT_IN_FINGERPRINT and self._ADDED_LATER.get(k, ...) != v
            }
            fingerprint = TrainingCheckpoint.fingerprint_of(params, x, y, x_val, y_val)
            saver = TrainingCheckpoint(Path(checkpoint), float(checkpoint_minutes), fingerprint, x.device.type)
        self.posterior_.fit(x, y, x_val, y_val, self._validation_metrics, callback, saver)

    def _validation_metrics(self, x_val, y_val) -> dict[str, float]:
        """``val_log_likelihood``, the mean validation log predictive density (the epoch ``keep_epoch="best"``
        keeps is the highest), and the task's other validation figures."""
        raise NotImplementedError

    def _check_fitted(self) -> None:
        if "posterior_" not in self.__dict__:
            raise RuntimeError(
                f"this {type(self).__name__} is not fitted yet; call fit(X, y) first or load() a saved model"
            )

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

    def _restore(self, tensors: dict[str, torch.Tensor], meta: dict) -> None:
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
        params = {**cls._ADDED_LATER, **params}  # a file written before these parameters existed
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

    def _validation_metrics(self, x_val, y_val):
        f = self._outputs(x_val)[..., 0]
        logp = gaussian_log_prob(y_val, f, log_var=-self.posterior_.log_noise_precision()[:, None])
        return {"val_log_likelihood": float(log_mean_exp(logp, 0).mean())}

    @torch.no_grad()
    def _refit_noise(self, x_val, y_val) -> None:
        """Per particle: γ̂ = 1 / mean validation squared error; keep it if it raises the validation
        likelihood of that particle (Liu & Wang 2016, ``bayesian_nn.py``). A noise precision shared by
        posterior draws is refitted the same way on all draws pooled."""
        f = self._outputs(x_val)[..., 0]
        s = self.posterior_.log_noise_precision()
        if self.posterior_.shared_noise:
            mse = ((y_val - f) ** 2).mean().clamp_min(1e-8).expand_as(s)

            def ll(s_):
                return gaussian_log_prob(y_val, f, log_var=-s_[:, None]).sum()
        else:
            mse = ((y_val - f) ** 2).mean(1).clamp_min(1e-8)

            def ll(s_):
                return gaussian_log_prob(y_val, f, log_var=-s_[:, None]).sum(1)

        s_hat = -torch.log(mse)
        self.posterior_.set_log_noise_precision(torch.where(ll(s_hat) > ll(s), s_hat, s))

    @_in_threads
    def fit(
        self,
        X,
        y,
        X_val=None,
        y_val=None,
        callback: Callable[[int, dict], None] | None = None,
        checkpoint: str | Path | None = None,
        checkpoint_minutes: float = 10.0,
    ) -> BayesianRegressor:
        """Train on (X, y); validation rows are ``(X_val, y_val)`` or carved from X (``validation_fraction``).

        :param callback: called as ``callback(epoch, scalars)`` after every epoch (e.g. TensorBoard).
        :param checkpoint: a file for the state of the unfinished fit, saved every ``checkpoint_minutes``
            of training; a fit given a file that holds its state continues from there (and ends with the
            weights an uninterrupted fit would have, bit for bit, on the same device). The file is left in
            place: delete it once the fit is done. A file of another fit raises a
            :class:`~svpg.io.CheckpointError`.
        """
        self._validate_params()
        x, y = check_xy(X, y, self._task)
        x_fit, y_fit, x_val, y_val_ = self._split_validation(x, y, X_val, y_val)
        self.x_scaler_ = Standardizer.fit(x_fit)
        self.y_scaler_ = Standardizer.fit(y_fit[:, None])
        self.n_features_in_ = x.shape[1]
        self._build(x.shape[1], 1)

        def t(a):
            return torch.as_tensor(a, dtype=torch.float32, device=self.torch_device)

        xs, ys = t(self.x_scaler_.transform(x_fit)), t(self.y_scaler_.transform(y_fit[:, None])[:, 0])
        if x_val is not None:
            xv, yv = t(self.x_scaler_.transform(x_val)), t(self.y_scaler_.transform(y_val_[:, None])[:, 0])
        else:
            xv = yv = None
        self._fit_tensors(xs, ys, xv, yv, callback, checkpoint, checkpoint_minutes)
        if self.refit_noise and xv is not None:
            self._refit_noise(xv, yv)
        return self

    @_in_threads
    def predict_particles(self, X) -> tuple[np.ndarray, np.ndarray]:
        """Every member's prediction (S, n) and noise std (S,), in the target's original units: the M
        particles, or ``predict_samples`` posterior draws (the same draws every call)."""
        self._check_fitted()
        x = check_features(X, self.n_features_in_)
        xs = torch.as_tensor(self.x_scaler_.transform(x), dtype=torch.float32, device=self.torch_device)
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
        def d(a):
            return torch.as_tensor(np.asarray(a), dtype=torch.float64)

        tensors = {
            "x_mean": d(self.x_scaler_.mean),
            "x_std": d(self.x_scaler_.std),
            "y_mean": d(self.y_scaler_.mean),
            "y_std": d(self.y_scaler_.std),
        }
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

    def __init__(
        self,
        method: str = "s2vgd",
        num_particles: int = 10,
        householder: int = 1,
        hidden: tuple[int, ...] = (400, 400),
        *args,
        **kwargs,
    ):
        kwargs.setdefault("epochs", 20)
        # 20 draws: a 784-400-400-10 network's predictive over 100 draws costs ~10× an SVGD epoch's evaluation
        kwargs.setdefault("predict_samples", 20)
        super().__init__(method, num_particles, householder, hidden, *args, **kwargs)

    def _log_predictive(self, x) -> torch.Tensor:
        """log of the mean of the members' softmax: (n, C)."""
        return log_mean_exp(torch.log_softmax(self._outputs(x).double(), -1), 0)

    def _validation_metrics(self, x_val, y_val):
        logp = self._log_predictive(x_val)
        return {
            "val_log_likelihood": float(logp.gather(1, y_val[:, None])[:, 0].mean()),
            "val_error": float((logp.argmax(1) != y_val).double().mean()),
        }

    @_in_threads
    def fit(
        self,
        X,
        y,
        X_val=None,
        y_val=None,
        callback: Callable[[int, dict], None] | None = None,
        checkpoint: str | Path | None = None,
        checkpoint_minutes: float = 10.0,
    ) -> BayesianClassifier:
        """Train on (X, y) with labels 0..C−1; validation, callback and checkpoint as for
        :meth:`BayesianRegressor.fit`."""
        self._validate_params()
        x, y = check_xy(X, y, self._task)
        x_fit, y_fit, x_val, y_val_ = self._split_validation(x, y, X_val, y_val)
        self.n_features_in_ = x.shape[1]
        self.n_classes_ = int(max(y.max(), y_val_.max() if y_val_ is not None else 0)) + 1
        self.classes_ = np.arange(self.n_classes_)
        self._build(x.shape[1], self.n_classes_)

        def t(a, dt=torch.float32):
            return torch.as_tensor(a, dtype=dt, device=self.torch_device)

        xv = t(x_val) if x_val is not None else None
        yv = t(y_val_, torch.int64) if x_val is not None else None
        self._fit_tensors(t(x_fit), t(y_fit, torch.int64), xv, yv, callback, checkpoint, checkpoint_minutes)
        return self

    @_in_threads
    def predict_proba(self, X) -> np.ndarray:
        """Mean of the members' softmax: (n, C)."""
        self._check_fitted()
        x = torch.as_tensor(check_features(X, self.n_features_in_), dtype=torch.float32, device=self.torch_device)
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
