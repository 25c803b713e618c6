"""The options of ``train.py supervised`` and what they resolve to on a data set: the defaults per data
set and method, the estimator of a method, and the rows and random streams of split k."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from svpg.cli import option as _f
from svpg.core.svgd import OPTIMIZERS
from svpg.core.variational import FAMILIES
from svpg.runtime import DEFAULT_THREADS, resolve_device
from svpg.seeding import int_seed, numpy_rng
from svpg.supervised.data import (
    DATASETS,
    PROTOCOLS,
    STANDARD_SPLITS,
    UCI_SETS,
    Dataset,
    standard_splits,
    train_test_split,
)
from svpg.supervised.models import (
    BNN_METHODS,
    KEEP_EPOCHS,
    LR_SCHEDULES,
    PARTICLE_METHODS,
    POSTERIOR_OPTIONS,
    WEIGHT_PRIORS,
    BayesianClassifier,
    BayesianRegressor,
)

# Defaults chosen on validation rows carved from the training part of Boston/Concrete splits 0–4
# (never on test rows); see docs/supervised.md.
# Small regression sets train on every training row and keep the last epoch of the cosine schedule:
# on held-out rows of splits 0–4 (nested validation, bench/supervised_validation.py) this beat carving
# a 10 % validation split for checkpoint selection (Boston RMSE 2.57 → 2.41, Concrete 4.78 → 4.28).
REGRESSION_DEFAULTS = dict(
    num_particles=20,
    lr=3e-3,
    lr_schedule="cosine",
    epochs=2400,
    eval_every=20,
    batch_size=100,
    validation_fraction=0.0,
    predict_samples=100,
)
# Per-method settings of Boston and Concrete that differ from REGRESSION_DEFAULTS, each the best
# validation log-likelihood of its method's grid on the validation rows of splits 0–4
# (bench/supervised_validation.py --grid; docs/supervised.md, "Defaults and why"). The number of epochs
# is the setting whose best value differs most between data sets and methods.
REGRESSION_METHOD_DEFAULTS: dict[str, dict[str, dict]] = {
    "boston": {
        "svgd": {
            "epochs": 800
        },  # plain SVGD overfits Boston when it trains to the end of 2400 epochs without a checkpoint
        # the parametric methods: every setting written out, as the grid scored it
        # the grid's first setting stayed best; the mixture prior's grid (splits 0–2) chose the default (½, 1, e⁻⁶)
        "bbb": {"optimizer": "adam", "lr": 3e-3, "lr_schedule": "cosine", "epochs": 2400},
        # the VMG paper's optimizer (§4: Adam's default settings, temporal averaging), not tuned (a step costs
        # 5x K-Diag's with the pseudo-data): the data set's S²VGD length
        "vmg": {"optimizer": "adam", "lr": 1e-3, "lr_schedule": "constant", "epochs": 2400},
        "kflow-diag": {
            "optimizer": "adam",
            "lr": 1e-2,
            "lr_schedule": "cosine",
            "epochs": 4800,
        },  # still gaining at 4800 epochs
        "kflow-linear": {
            "optimizer": "adam",
            "lr": 1e-2,
            "lr_schedule": "cosine",
            "epochs": 2400,
        },  # 1200–4800 epochs within 0.005
        # eq. 14 with N = the training rows; the grid on splits 0–2: held-out log-likelihood −2.73, the cosine
        # schedules −2.95 to −3.42
        "badam": {"optimizer": "adam", "lr": 5e-3, "lr_schedule": "constant", "epochs": 2400},
    },
    "concrete": {
        "s2vgd": {"epochs": 3200},  # Concrete's validation curves still rise at 2400 epochs
        "svgd": {"epochs": 3200},
        "map": {"epochs": 3200},
        "bbb": {"optimizer": "rmsprop", "lr": 3e-3, "lr_schedule": "cosine", "epochs": 1600},
        "vmg": {"optimizer": "adam", "lr": 1e-3, "lr_schedule": "constant", "epochs": 3200},  # as on Boston
        "kflow-linear": {"optimizer": "rmsprop", "lr": 1e-3, "lr_schedule": "cosine", "epochs": 1600},
        "kflow-diag": {"optimizer": "adam", "lr": 1e-2, "lr_schedule": "cosine", "epochs": 6400},
        # eq. 14 with N = the training rows; the grid on splits 0–1: the constant rate by 0.17 over the cosine schedules
        "badam": {"optimizer": "adam", "lr": 5e-3, "lr_schedule": "constant", "epochs": 1600},
    },
}
# A regression set without a grid of its own: VMG trains with its paper's optimizer (§4: Adam at its default
# rate, constant, with the temporal average), as it does on Boston and Concrete; the other methods take the
# data set's defaults.
UNTUNED_METHOD_DEFAULTS: dict[str, dict] = {"vmg": {"optimizer": "adam", "lr": 1e-3, "lr_schedule": "constant"}}
# VMG's pseudo-data pairs per layer (§4.1 of Louizos & Welling): 10, 5 for Yacht, 20 for Protein; each
# layer caps them at its fan-in (core/variational.py). On images VMG's classification model (§4.2): the
# prior MN(0, I, I), pseudo-data noise of variance at most 0.25, and 150 pseudo-data pairs per layer, the
# best of 10, 50 and 150 on MNIST's validation images (bench/mnist_vmg_pseudo_data.py), as the paper tuned
# them (at most 150).
VMG_PSEUDO_DATA = {"yacht": 5, "protein": 20}
VMG_CLASSIFICATION_OPTIONS = {"learn_precisions": False, "pseudo_data": 150, "pseudo_dropout": 0.25}
# Posterior draws per training step of bbb, vmg and kflow-*: one, as the VMG paper's regression runs;
# local reparameterisation keeps the gradient's variance low with one draw (badam trains point weights).
VARIATIONAL_SAMPLES = 1
# mid-size sets (kin8nm, naval, power: 5000 to 20000 rows): the small sets' settings with 400 epochs, about the
# number of steps of Concrete's schedule (not tuned on these sets)
MID_REGRESSION_DEFAULTS = {**REGRESSION_DEFAULTS, "epochs": 400}
MID_DATA = 5_000
# ≥ 20000 rows (protein; YearPredict is not available): 100 hidden units and batches of 1000 as in §5.1; 800
# epochs are about Concrete's number of steps, like the mid-size sets' 400 (not tuned on protein)
LARGE_REGRESSION_DEFAULTS = dict(
    num_particles=20,
    lr=1e-3,
    lr_schedule="cosine",
    epochs=800,
    eval_every=20,
    batch_size=1000,
    validation_fraction=0.1,
    predict_samples=100,
)
# 20 predictive draws for images: each costs a 784-400-400-10 forward pass of every validation image
CLASSIFICATION_DEFAULTS = dict(
    num_particles=10,
    lr=1e-3,
    lr_schedule="cosine",
    epochs=20,
    eval_every=1,
    batch_size=100,
    validation_fraction=0.1,
    predict_samples=20,
)
LARGE_DATA = 20_000
# MNIST: 100 epochs (S²VGD §5.2); other image sets CLASSIFICATION_DEFAULTS' 20
CLASSIFICATION_EPOCHS = {"mnist": 100}


@dataclass
class SupervisedConfig:
    """Bayesian neural networks (§5.1–5.2 of S²VGD) trained by S²VGD, SVGD, MAP or a parametric posterior."""

    dataset: str = _f("boston", f"{' | '.join(DATASETS)} | a path ending in .csv")
    data_path: str = _f("", "CSV file for --dataset csv")
    data_dir: str = _f(
        "",
        "folder holding the public data files (uci_splits/<name>/data.txt, mnist/, fashion-mnist/), "
        "searched before $SVPG_DATA_DIR and the user cache ~/.cache/svpg, where missing files are downloaded",
    )
    target: str = _f("", "name of the target column of a CSV file")
    method: str = _f("s2vgd", f"comma-separated methods out of {', '.join(BNN_METHODS)}, e.g. s2vgd,svgd,vmg")
    householder: int = _f(1, "K, Householder reflections per side of every layer (s2vgd; capped at min(ℓ1, ℓ2))")
    num_particles: int = _f(
        0,
        "M, the number of particles of s2vgd and svgd (0: 20 for regression as in §5, 10 for classification; "
        "map always uses 1)",
    )
    hidden: str = _f(
        "auto", "hidden widths, e.g. 50 or 400,400 (auto: 50 ReLU units, 100 from 10000 rows; 400,400 for images)"
    )
    epochs: int = _f(
        0,
        "training epochs of every method (0: the method's default on the data set: 2400 for small regression "
        "sets, 3200 for concrete, 800 for svgd on boston, …; 800 for large regression sets, 20 for classification)",
    )
    lr: float = _f(
        0.0,
        "learning rate of every method (0: the method's default: 3e-3 for small regression sets unless tuned "
        "otherwise, 1e-3 otherwise)",
    )
    lr_schedule: str = _f(
        "auto",
        "constant | cosine (anneal to 0 over training) | auto (the method's default on the data set)",
        choices=("auto", *LR_SCHEDULES),
    )
    batch_size: int = _f(
        0, "minibatch size; the likelihood is scaled by N/B (0: 100, or 1000 for regression sets from 10000 rows)"
    )
    optimizer: str = _f(
        "auto",
        f"{' | '.join(OPTIMIZERS)} | auto (the method's default: adam unless tuned otherwise; badam needs adam)",
        choices=("auto", *OPTIMIZERS),
    )
    samples: int = _f(
        0,
        f"posterior draws per training step of {', '.join(m for m in FAMILIES if m != 'badam')} "
        f"(0: {VARIATIONAL_SAMPLES})",
    )
    predict_samples: int = _f(
        0,
        "posterior draws of the predictive distribution of the parametric methods "
        "(0: 100 for regression, 20 for classification)",
    )
    bandwidth: str = _f("median", "RBF kernel bandwidth: 'median' (h = med²/log M) or a fixed positive number")
    prior_a: float = _f(1.0, "shape a of the Gamma(a, b) hyperpriors on all precisions (§5: 1)")
    prior_b: float = _f(0.1, "rate b of the Gamma(a, b) hyperpriors on all precisions (§5: 0.1)")
    weight_prior: str = _f(
        "auto",
        "prior on the weights of s2vgd, svgd and map: mvg (eq. 14: every group's variance learned, with an "
        "Inv-Gamma(a, b) hyperprior) | gaussian (every weight N(0, prior-std²), as the S²VGD authors' MNIST code) | "
        "auto (gaussian for classification, where eq. 14 collapses wide layers on MNIST; mvg for regression)",
        choices=WEIGHT_PRIORS,
    )
    prior_std: float = _f(1.0, "standard deviation of --weight-prior gaussian")
    validation_fraction: str = _f(
        "auto",
        "share of each training split held out to select the checkpoint and, for regression, "
        "the noise (0: train on every row, keep the last epoch; auto: 0 for small regression "
        "sets, 0.1 for large ones and classification)",
    )
    eval_every: int = _f(0, "validate every this many epochs (0: auto)")
    keep_epoch: str = _f(
        "best",
        "the weights a fit ends with: best (the epoch with the highest validation log-likelihood; the last "
        "without validation rows) | last (the last epoch: a fixed training length, as S²VGD's MNIST table)",
        choices=KEEP_EPOCHS,
    )
    refit_noise: bool = _f(
        True, "regression: re-estimate each particle's noise precision on the validation rows (Liu & Wang 2016)"
    )
    splits: int = _f(
        0,
        "train/test splits (0: 20 for regression and mnist; runs with different seeds on Fashion-MNIST: 1; "
        f"at most {STANDARD_SPLITS} with --protocol standard); with --resume: run until this many have finished",
    )
    protocol: str = _f(
        "random",
        "how the rows are split (any letter case): " + "; ".join(f"{name}: {text}" for name, text in PROTOCOLS.items()),
    )
    test_fraction: float = _f(0.1, "test share of every random split")
    max_train: int = _f(0, "use at most this many training rows per split (0: all), for quick runs")
    seed: int = _f(
        0,
        "root of every random stream: each split's test rows, --max-train subset, initial particles and "
        "minibatch order",
    )
    device: str = _f("cpu", "torch device: cpu, cuda, cuda:N, or auto (CUDA where torch sees it, else the CPU)")
    threads: int = _f(
        DEFAULT_THREADS,
        "torch CPU threads (more help large networks on an idle machine; on shared cores 1 is often fastest)",
    )
    compile: bool = _f(
        False, "torch.compile the log posterior (regression: 2-3.5x faster steps after a 0.5-2 min compilation)"
    )
    checkpoint_minutes: float = _f(
        10.0,
        "save the state of the fit in progress every this many minutes of its training, so that an "
        "interrupted split continues from there on --resume (0: never; it then starts again from epoch 1)",
    )
    log_dir: str = _f("runs", "parent folder of run folders")
    run_name: str = _f("", "run folder name (default: supervised__<dataset>__<methods>__<time>)")
    save_models: bool = _f(True, "save every split's particles to runs/<name>/models/")
    progress: bool = _f(True, "show progress bars")

    def __post_init__(self):
        self.protocol = self.protocol.lower()  # config.json records one spelling

    def methods(self) -> list[str]:
        names = [m.strip().lower() for m in self.method.split(",") if m.strip()]
        bad = [m for m in names if m not in BNN_METHODS]
        if not names or bad:
            raise ValueError(f"--method {self.method!r}: give a comma-separated list out of {', '.join(BNN_METHODS)}")
        return list(dict.fromkeys(names))

    def validate(self) -> SupervisedConfig:
        problems, methods = [], []
        try:
            methods = self.methods()
        except ValueError as e:
            problems.append(str(e))
        if self.householder < 1 and "s2vgd" in methods:
            problems.append(
                f"--householder must be ≥ 1 for s2vgd, got {self.householder} (use --method svgd for K = 0)"
            )
        if self.threads < 1:
            problems.append(f"--threads must be ≥ 1, got {self.threads}")
        try:
            resolve_device(self.device)
        except ValueError as e:
            problems.append(str(e))
        for name in (
            "num_particles",
            "epochs",
            "batch_size",
            "eval_every",
            "splits",
            "max_train",
            "samples",
            "predict_samples",
        ):
            if getattr(self, name) < 0:
                problems.append(f"--{name.replace('_', '-')} must be ≥ 0, got {getattr(self, name)}")
        if self.lr < 0:
            problems.append(f"--lr must be > 0 (or 0 for the default), got {self.lr}")
        if not self.prior_std > 0:
            problems.append(f"--prior-std must be > 0, got {self.prior_std}")
        if not self.checkpoint_minutes >= 0:
            problems.append(f"--checkpoint-minutes must be ≥ 0 (0: no checkpoints), got {self.checkpoint_minutes}")
        if str(self.validation_fraction) != "auto":
            try:
                fraction_ok = 0 <= float(self.validation_fraction) < 1
            except ValueError:
                fraction_ok = False
            if not fraction_ok:  # an explicit check: an assert would vanish under python -O
                problems.append(
                    f"--validation-fraction must be 'auto' or a number in [0, 1), got {self.validation_fraction!r}"
                )
        if not 0 < self.test_fraction < 1:
            problems.append(f"--test-fraction must be in (0, 1), got {self.test_fraction}")
        if self.protocol not in PROTOCOLS:
            problems.append(f"--protocol {self.protocol!r}: choose from {', '.join(PROTOCOLS)}")
        elif self.protocol == "standard" and self.test_fraction != 0.1:
            problems.append(
                f"--test-fraction {self.test_fraction} does not apply to --protocol standard (its splits are 90/10)"
            )
        if self.hidden != "auto" and not _positive_widths(self.hidden):
            problems.append(
                f"--hidden must be 'auto' or comma-separated positive widths such as 50 or 400,400, got {self.hidden!r}"
            )
        if self.bandwidth != "median" and not _positive_number(self.bandwidth):
            problems.append(f"--bandwidth must be 'median' or a positive number, got {self.bandwidth!r}")
        if problems:
            raise ValueError("; ".join(problems))
        return self


def _positive_widths(text: str) -> bool:
    try:
        widths = [int(w) for w in text.split(",") if w.strip()]
    except ValueError:
        return False
    return bool(widths) and min(widths) >= 1


def _positive_number(text: str) -> bool:
    try:
        return float(text) > 0
    except ValueError:
        return False


def resolve(cfg: SupervisedConfig, data: Dataset) -> dict:
    """The settings actually used for this data set (fills every 'auto'/0 field). ``epochs`` maps each
    method to its number of epochs; ``lr`` and ``lr_schedule`` are the particle methods'; every
    parametric method has its own lr, schedule, optimizer and draws in ``method_settings`` (absent
    when the run has none, so runs of the particle methods resolve as before)."""
    n = len(data.y)
    tuned: dict[str, dict] = {}
    hidden: tuple[int, ...]
    if data.task == "classification":
        defaults, hidden = CLASSIFICATION_DEFAULTS, (400, 400)
        if data.name in CLASSIFICATION_EPOCHS:
            defaults = {**defaults, "epochs": CLASSIFICATION_EPOCHS[data.name]}
    elif n >= LARGE_DATA:
        defaults, hidden = LARGE_REGRESSION_DEFAULTS, (100,)
    elif n >= MID_DATA:
        defaults, hidden = MID_REGRESSION_DEFAULTS, (50,)
    else:
        defaults, hidden = REGRESSION_DEFAULTS, (50,)
        tuned = REGRESSION_METHOD_DEFAULTS.get(data.name, {})
    if data.task == "regression" and not tuned:
        tuned = UNTUNED_METHOD_DEFAULTS

    def pick(method: str, key: str, given):
        """--option if given, else the method's tuned value on this data set, else the data set's default."""
        return given or tuned.get(method, {}).get(key, defaults.get(key))

    epochs = {m: pick(m, "epochs", cfg.epochs) for m in cfg.methods()}
    if cfg.hidden != "auto":
        hidden = tuple(int(w) for w in cfg.hidden.split(",") if w.strip())
    standard = data.name in UCI_SETS and cfg.protocol == "standard"
    splits = cfg.splits or (1 if data.y_test is not None else UCI_SETS[data.name].splits if standard else 20)
    schedule = None if cfg.lr_schedule == "auto" else cfg.lr_schedule
    optimizer = None if cfg.optimizer == "auto" else cfg.optimizer
    method_settings = {
        m: {
            "lr": pick(m, "lr", cfg.lr),
            "lr_schedule": pick(m, "lr_schedule", schedule),
            "optimizer": pick(m, "optimizer", optimizer) or "adam",
            "samples": cfg.samples or VARIATIONAL_SAMPLES,
            "predict_samples": pick(m, "predict_samples", cfg.predict_samples),
        }
        for m in cfg.methods()
        if m in FAMILIES
    }
    for m, own in method_settings.items():
        options = posterior_options_for(m, data, tuned.get(m, {}).get("posterior_options"))
        if options is not None:
            own["posterior_options"] = options
    return dict(
        hidden=hidden,
        num_particles=cfg.num_particles or defaults["num_particles"],
        lr=cfg.lr or defaults["lr"],
        lr_schedule=schedule or defaults["lr_schedule"],
        epochs=epochs,
        eval_every=cfg.eval_every or defaults["eval_every"],
        batch_size=cfg.batch_size or defaults["batch_size"],
        validation_fraction=defaults["validation_fraction"]
        if str(cfg.validation_fraction) == "auto"
        else float(cfg.validation_fraction),
        splits=splits,
        **({"method_settings": method_settings} if method_settings else {}),
    )


def posterior_options_for(method: str, data: Dataset, tuned: dict | None = None) -> dict | None:
    """The options of a parametric method's posterior on this data set, when they differ from the
    estimator's defaults (``POSTERIOR_OPTIONS`` of svpg/supervised/models/methods.py): VMG's pseudo-data count
    (``VMG_PSEUDO_DATA``) and classification model, and what a grid chose on validation rows (``tuned``,
    e.g. BBB's scale mixture)."""
    options = dict(POSTERIOR_OPTIONS.get(method, {}))
    if method == "vmg" and data.task == "classification":
        options.update(VMG_CLASSIFICATION_OPTIONS)
    elif method == "vmg" and data.name in VMG_PSEUDO_DATA:
        options["pseudo_data"] = VMG_PSEUDO_DATA[data.name]
    options.update(tuned or {})
    return options if options != POSTERIOR_OPTIONS.get(method, {}) else None


def split_seed(seed: int, split: int) -> int:
    """The ``seed`` of split k's estimators, which derive their own streams from it (validation rows,
    initial particles, minibatch order); a stream of its own, like the split's test rows."""
    return int_seed(seed, "split", split, "estimator")


def make_estimator(cfg: SupervisedConfig, data: Dataset, settings: dict, method: str, seed: int, progress: bool):
    own = settings.get("method_settings", {}).get(method, {})  # a parametric method's lr, schedule, optimizer, draws
    kwargs = dict(
        method=method,
        num_particles=settings["num_particles"],
        householder=cfg.householder,
        hidden=settings["hidden"],
        activation="relu",
        prior_a=cfg.prior_a,
        prior_b=cfg.prior_b,
        **({"weight_prior": cfg.weight_prior, "prior_std": cfg.prior_std} if method in PARTICLE_METHODS else {}),
        kernel="median" if cfg.bandwidth == "median" else float(cfg.bandwidth),
        optimizer="adam" if cfg.optimizer == "auto" else cfg.optimizer,
        lr=settings["lr"],
        lr_schedule=settings["lr_schedule"],
        epochs=settings["epochs"][method],
        batch_size=settings["batch_size"],
        validation_fraction=settings["validation_fraction"],
        eval_every=settings["eval_every"],
        keep_epoch=cfg.keep_epoch,
        seed=seed,
        device=cfg.device,
        progress=progress,
        compile=cfg.compile,
        threads=cfg.threads,
    )
    kwargs.update(own)
    if data.task == "classification":
        return BayesianClassifier(**kwargs)
    return BayesianRegressor(**kwargs, refit_noise=cfg.refit_noise)


def split_data(cfg: SupervisedConfig, data: Dataset, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Training and test rows of split k (the official test set if the data have one; else split k of
    --protocol), with at most --max-train training rows, drawn from a stream of their own."""
    if data.y_test is not None:
        assert data.x_test is not None  # an official test set has both
        x_tr, y_tr, x_te, y_te = data.x, data.y, data.x_test, data.y_test
    else:
        if cfg.protocol == "standard":
            tr, te = standard_splits(data.name)[k]
        else:
            tr, te = train_test_split(len(data.y), k, cfg.test_fraction, cfg.seed)
        x_tr, y_tr, x_te, y_te = data.x[tr], data.y[tr], data.x[te], data.y[te]
    if cfg.max_train and len(y_tr) > cfg.max_train:
        keep = np.sort(numpy_rng(cfg.seed, "split", k, "max_train").choice(len(y_tr), cfg.max_train, replace=False))
        x_tr, y_tr = x_tr[keep], y_tr[keep]
    return x_tr, y_tr, x_te, y_te
