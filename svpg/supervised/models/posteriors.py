"""How an estimator's posterior is held and trained: M particles moved by SVGD, or a parametric posterior of
:mod:`svpg.core.variational` trained by a torch optimizer; the epoch loop both share."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from svpg.core.networks import NetworkSpec
from svpg.core.probability import LOG_2PI, gamma_log_prob_of_log
from svpg.core.svgd import SVGD, make_optimizer
from svpg.core.variational import gamma_kl, make_posterior
from svpg.io import CheckpointError, load_state, save_state
from svpg.seeding import torch_generator
from svpg.supervised.models.methods import FOREACH, NOISE_POSTERIORS, POLYAK
from svpg.supervised.models.objective import row_log_likelihood, shared_objective


@dataclass(frozen=True)
class PosteriorSettings:
    """What a posterior is built and trained with: the estimator's parameters (see
    :class:`~svpg.supervised.models.estimators._BayesianNN`), the task's defaults resolved.

    :param task: ``"regression"`` or ``"classification"``.
    :param weight_prior: the particle methods' weight prior, ``"auto"`` resolved for the task.
    :param posterior_options: the options of :func:`~svpg.core.variational.make_posterior` (parametric methods).
    :param noise_prior: (a, b) of the Gamma prior of the regression noise precision.
    """

    task: str
    method: str
    hidden: tuple[int, ...]
    activation: str
    householder: int
    weight_prior: str
    prior_a: float
    prior_b: float
    prior_std: float
    num_particles: int
    kernel: str | float
    optimizer: str
    lr: float
    lr_schedule: str
    batch_size: int
    epochs: int
    eval_every: int
    keep_epoch: str
    samples: int
    predict_samples: int
    posterior_options: dict
    noise_prior: tuple[float, float]
    seed: int
    device: str | torch.device
    compile: bool
    progress: bool


def _cosine(optimizer: torch.optim.Optimizer, total_steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    """lr × ½(1 + cos(π t / T)): from the peak rate to 0 over all T steps."""
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: 0.5 * (1 + math.cos(math.pi * min(step, total_steps) / total_steps))
    )


def _row_chunks(n: int, size: int) -> list[slice]:
    """Slices of at most ``size`` rows covering n, none of one row unless n = 1 (a one-row batch is drawn
    input by input, see :meth:`~svpg.core.variational.WeightPosterior.forward`, not with whole weight draws)."""
    starts = list(range(0, n, size))
    if len(starts) > 1 and n - starts[-1] == 1:
        starts.pop()
    return [slice(a, b) for a, b in zip(starts, starts[1:] + [n])]


@dataclass
class TrainingCheckpoint:
    """Where and how often the state of an unfinished fit is saved, so that an interrupted fit continues
    from its last save and ends with the same weights, bit for bit, as one that was never interrupted.

    The file holds everything the epoch loop carries: the weights, the optimizer's and the learning-rate
    schedule's state, every random stream's position, the Polyak average, the validation history and the
    best epoch's weights. ``fingerprint`` names the fit (the estimator's parameters and the training and
    validation rows); a file of another fit is refused, never silently continued, and so is one saved on
    another kind of device (its random streams are of another kind: a CUDA generator's state is not a CPU
    one's).
    """

    path: Path
    minutes: float
    fingerprint: str
    device: str  # the device type, "cpu" or "cuda"

    @staticmethod
    def fingerprint_of(params: dict, *tensors: torch.Tensor | None) -> str:
        """SHA-256 of the parameters that shape the fit and of the bytes of its data tensors."""
        digest = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode())
        for t in tensors:
            digest.update(b"none" if t is None else t.detach().cpu().contiguous().numpy().tobytes())
        return digest.hexdigest()

    def load(self) -> dict | None:
        """The saved state, or None when there is no file yet."""
        if not self.path.exists():
            return None
        state = load_state(self.path)
        if state.get("fingerprint") != self.fingerprint:
            raise CheckpointError(
                f"{self.path} is the checkpoint of a different fit (other parameters or data); "
                "delete it to train from epoch 1"
            )
        if state.get("device") != self.device:
            raise CheckpointError(
                f"{self.path} was saved by a fit on {state.get('device')}, this one runs on {self.device}: "
                f"continue it on {state.get('device')}, or delete it to train from epoch 1"
            )
        return state

    def save(self, state: dict) -> None:
        save_state(self.path, {**state, "fingerprint": self.fingerprint, "device": self.device})


class _Posterior:
    """How an estimator's posterior is held and trained; the estimator owns the data handling.

    Members are what the predictive distribution mixes: the M particles, or S posterior draws.
    :meth:`_train_epochs` is the epoch loop both kinds share (minibatch order, validation, checkpoint,
    callback); each subclass supplies one epoch of steps.
    """

    shared_noise = False  # one noise precision for every member (True) or one per member

    def __init__(self, settings: PosteriorSettings, n_in: int, n_out: int):
        self.settings, self.task = settings, settings.task

    def _train_epochs(
        self,
        n: int,
        device,
        run_epoch,
        snapshot,
        restore,
        x_val,
        y_val,
        validate,
        callback,
        loop_state,
        checkpoint: TrainingCheckpoint | None,
        evaluated=contextlib.nullcontext,
    ) -> bool:
        """``epochs`` passes, each over a fresh permutation of the n rows from the stream
        ``"minibatch"``; ``run_epoch(perm, diagnose)`` takes the steps and returns diagnostics (when
        ``diagnose``). ``validate(x_val, y_val)`` scores the validation rows (``val_log_likelihood`` and the
        task's other figures). With validation rows and ``keep_epoch == "best"`` the best epoch by validation
        log-likelihood is kept (``snapshot()`` / ``restore(state)``, both inside ``evaluated()``, the
        weights the model would be fitted with at that epoch); otherwise the last. Returns whether a
        best epoch's weights were restored.

        With a ``checkpoint`` the loop starts from its file when there is one, and saves to it every
        ``checkpoint.minutes`` of training; ``loop_state`` is the subclass's ``(save, load)`` pair for
        what its ``run_epoch`` carries from epoch to epoch (weights, optimizer, schedule, streams)."""
        cfg = self.settings
        save_loop, load_loop = loop_state
        history: list[dict] = []
        best, best_state, best_epoch = -math.inf, None, cfg.epochs
        keep_best = cfg.keep_epoch == "best"
        order = torch_generator(cfg.seed, "minibatch")  # on the CPU: the same order on every device
        done, earlier_seconds = 0, 0.0
        saved = checkpoint.load() if checkpoint is not None else None
        if saved is not None:
            done, earlier_seconds, history = saved["epoch"], saved["seconds"], saved["history"]
            best, best_state, best_epoch = saved["best"], saved["best_state"], saved["best_epoch"]
            order.set_state(saved["order"])
            load_loop(saved["loop"])
        # where this fit took over from an interrupted one, and that one's training seconds
        self.resumed_epoch, self.resumed_seconds = done, earlier_seconds
        start = last_save = time.perf_counter()
        bar = tqdm(
            range(done + 1, cfg.epochs + 1),
            initial=done,
            total=cfg.epochs,
            disable=not cfg.progress,
            unit="epoch",
            leave=False,
            dynamic_ncols=True,
        )
        for epoch in bar:
            t0 = time.perf_counter()
            perm = torch.randperm(n, generator=order).to(device)
            diagnostics = run_epoch(perm, callback is not None)
            record = {"epoch": epoch, "epoch_seconds": time.perf_counter() - t0}
            if x_val is not None and (epoch % cfg.eval_every == 0 or epoch == cfg.epochs):
                with evaluated():
                    metrics = validate(x_val, y_val)
                    score = metrics["val_log_likelihood"]
                    if keep_best and score > best:
                        best, best_state, best_epoch = score, snapshot(), epoch
                record.update(metrics)
                bar.set_postfix(val_ll=f"{score:.3f}", best=best_epoch)
            if callback is not None:
                callback(epoch, {**record, **{k: float(v) for k, v in diagnostics.items()}})
            history.append(record)
            if (
                checkpoint is not None
                and epoch < cfg.epochs
                and time.perf_counter() - last_save >= 60 * checkpoint.minutes
            ):
                checkpoint.save(
                    {
                        "epoch": epoch,
                        "seconds": earlier_seconds + time.perf_counter() - start,
                        "history": history,
                        "best": best,
                        "best_state": best_state,
                        "best_epoch": best_epoch,
                        "order": order.get_state(),
                        "loop": save_loop(),
                    }
                )
                last_save = time.perf_counter()
        bar.close()
        if best_state is not None:
            restore(best_state)
        self.history, self.best_epoch = history, best_epoch
        return best_state is not None


class _Particles(_Posterior):
    """M particles θ (M, D) moved by SVGD (eq. 9) on the log posterior: the home of the SVGD loop."""

    def __init__(self, settings, n_in, n_out):
        super().__init__(settings, n_in, n_out)
        cfg = settings
        structural = cfg.method == "s2vgd"
        self.spec = NetworkSpec(
            (n_in, *cfg.hidden, n_out),
            activation=cfg.activation,
            householder=cfg.householder if structural else 0,
            learn_scales=structural,
            prior=cfg.weight_prior,
            prior_a=cfg.prior_a,
            prior_b=cfg.prior_b,
            prior_std=cfg.prior_std,
        )
        self.objective, self.log_posterior = shared_objective(self.task, self.spec, cfg.compile)
        self.layout, self.net = self.objective.layout, self.objective.net
        self.theta = torch.zeros(1 if cfg.method == "map" else cfg.num_particles, self.layout.size, device=cfg.device)

    def fit(self, x, y, x_val, y_val, validate, callback, checkpoint=None) -> None:
        cfg = self.settings
        self.net.init_(self.theta, torch_generator(cfg.seed, "init", device=self.theta.device))
        if self.task == "regression":
            with torch.no_grad():
                self.log_noise_precision().zero_()  # noise std = 1 target std
        theta = self.theta.requires_grad_(True)
        svgd = SVGD(theta, cfg.kernel if theta.shape[0] > 1 else "median", cfg.optimizer, cfg.lr, network=self.net)
        n, bs = len(x), min(cfg.batch_size, len(x))
        scale = torch.tensor(n / bs, device=x.device)  # a tensor: a compiled objective is not specialised on N
        schedule = _cosine(svgd.optimizer, cfg.epochs * (n // bs)) if cfg.lr_schedule == "cosine" else None

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

        def save_loop():
            return {
                "theta": theta.detach(),  # written out at once: no copy
                "optimizer": svgd.optimizer.state_dict(),
                "schedule": schedule.state_dict() if schedule is not None else None,
            }

        def load_loop(state):
            restore(state["theta"])
            svgd.optimizer.load_state_dict(state["optimizer"])
            if schedule is not None:
                schedule.load_state_dict(state["schedule"])

        self._train_epochs(
            n,
            x.device,
            run_epoch,
            lambda: theta.detach().clone(),
            restore,
            x_val,
            y_val,
            validate,
            callback,
            (save_loop, load_loop),
            checkpoint,
        )
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
        if (
            theta is None
            or self.layout.describe() != meta.get("layout")
            or tuple(theta.shape) != tuple(self.theta.shape)
        ):
            raise CheckpointError(
                f"{path}: particle layout does not match its metadata (file written by another version?)"
            )
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

    def __init__(self, settings, n_in, n_out):
        super().__init__(settings, n_in, n_out)
        cfg = settings
        self.sizes = (n_in, *cfg.hidden, n_out)
        self.options = dict(cfg.posterior_options)
        self.post = make_posterior(
            cfg.method, self.sizes, cfg.activation, generator=torch_generator(cfg.seed, "init"), **self.options
        ).to(cfg.device)
        self.noise_posterior = self.task == "regression" and cfg.method in NOISE_POSTERIORS
        self.log_noise = self.noise_gamma = None
        if self.noise_posterior:
            a, b = cfg.noise_prior  # q(γ) starts at the prior (the reference code's a1, b1 = a0, b0)
            self.noise_gamma = torch.nn.Parameter(torch.tensor([math.log(a), math.log(b)], device=cfg.device))
        elif self.task == "regression":
            self.log_noise = torch.nn.Parameter(torch.zeros(1, device=cfg.device))

    def _noise_params(self) -> list[torch.nn.Parameter]:
        return [p for p in (self.log_noise, self.noise_gamma) if p is not None]

    def parameters(self) -> list[torch.nn.Parameter]:
        return [*self.post.parameters(), *self._noise_params()]

    def _noise_regulariser(self) -> torch.Tensor | float:
        """−log p(γ) of the point estimate, or KL(q(γ) ‖ p(γ)) of the Gamma posterior; 0 for classification."""
        a0, b0 = self.settings.noise_prior
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

    def fit(self, x, y, x_val, y_val, validate, callback, checkpoint=None) -> None:
        cfg, post = self.settings, self.post
        params = self.parameters()
        optimizer = make_optimizer(cfg.optimizer, params, cfg.lr)
        if cfg.method in FOREACH:
            for group in optimizer.param_groups:  # one multi-tensor update for the many small parameters
                group["foreach"] = True
        draws = torch_generator(cfg.seed, "posterior", "train", device=x.device)
        n, bs = len(x), min(cfg.batch_size, len(x))
        schedule = _cosine(optimizer, cfg.epochs * (n // bs)) if cfg.lr_schedule == "cosine" else None
        beta = POLYAK.get(cfg.method)
        average = [p.detach().clone().zero_() for p in params] if beta else []
        steps = 0

        def run_epoch(perm, diagnose):
            nonlocal steps
            for start in range(0, n - bs + 1, bs):  # drop the last partial batch: every step sees B rows
                idx = perm[start : start + bs]
                out = post.train_forward(x[idx], cfg.samples, draws)
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
                    p.copy_(avg / (1.0 - beta**steps))
            try:
                yield
            finally:
                with torch.no_grad():
                    for value, p in zip(current, params):
                        p.copy_(value)

        def snapshot():
            return {k: v.detach().clone() for k, v in self.state()[0].items()}

        def save_loop():
            return {
                "posterior": snapshot(),
                "optimizer": optimizer.state_dict(),
                "schedule": schedule.state_dict() if schedule is not None else None,
                "average": average,
                "steps": steps,
                "draws": draws.get_state(),
            }

        def load_loop(state):
            nonlocal steps
            self._load_tensors(state["posterior"])
            optimizer.load_state_dict(state["optimizer"])
            if schedule is not None:
                schedule.load_state_dict(state["schedule"])
            with torch.no_grad():
                for a, saved in zip(average, state["average"]):
                    a.copy_(saved)
            steps = state["steps"]
            draws.set_state(state["draws"])

        restored = self._train_epochs(
            n,
            x.device,
            run_epoch,
            snapshot,
            self._load_tensors,
            x_val,
            y_val,
            validate,
            callback,
            (save_loop, load_loop),
            checkpoint,
            averaged,
        )
        if beta and not restored:  # a restored best epoch's weights are averaged already
            with torch.no_grad():
                for avg, p in zip(average, params):
                    p.copy_(avg / (1.0 - beta**steps))

    def outputs(self, x: torch.Tensor, chunk: int = 2048, samples_per_pass: int = 10) -> torch.Tensor:
        """Network outputs under ``predict_samples`` posterior draws for inputs x (n, d): (S, n, out).

        Every row chunk restarts the stream ``("posterior", "predict")``, so draw s is the same weight
        sample for every row (coherent functions) and the result depends on the fitted model only."""
        s_total = self.settings.predict_samples
        parts = []
        with torch.no_grad():
            for rows in _row_chunks(len(x), chunk):
                draws = torch_generator(self.settings.seed, "posterior", "predict", device=x.device)
                parts.append(
                    torch.cat(
                        [
                            self.post(x[rows], min(samples_per_pass, s_total - s), draws)
                            for s in range(0, s_total, samples_per_pass)
                        ],
                        0,
                    )
                )
        return torch.cat(parts, 1)

    def log_noise_precision(self) -> torch.Tensor:
        """log γ for every draw: (S,), the one shared estimate, or the S quantiles (s + ½)/S of q(γ)."""
        s_total = self.settings.predict_samples
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
        self.post.load_state_dict(
            {k.removeprefix("posterior."): v for k, v in tensors.items() if k.startswith("posterior.")}
        )
        with torch.no_grad():
            if self.log_noise is not None:
                self.log_noise.copy_(tensors["log_noise_precision"].to(self.log_noise.device))
            if self.noise_gamma is not None:
                self.noise_gamma.copy_(tensors["noise_posterior_log_shape_rate"].to(self.noise_gamma.device))

    def load(self, tensors, meta, path) -> None:
        expected = set(self.state()[0])
        given = {
            k
            for k in tensors
            if k.startswith("posterior.") or k in ("log_noise_precision", "noise_posterior_log_shape_rate")
        }
        if given != expected or meta.get("sizes") != list(self.sizes):
            raise CheckpointError(
                f"{path}: its tensors do not match a {self.settings.method} posterior of sizes "
                f"{self.sizes} (file written by another version?)"
            )
        self._load_tensors(tensors)
