"""``python train.py supervised``: Bayesian neural networks on repeated train/test splits, a Markdown table out.

    python train.py supervised --dataset boston --method s2vgd,svgd --splits 20
    python train.py supervised --dataset boston --protocol standard --method s2vgd,svgd,bbb,vmg,kflow-linear,kflow-diag,badam,map
    python train.py supervised --dataset boston --protocol standard      # the published tables' 20 splits
    python train.py supervised --dataset concrete --method s2vgd --householder 2
    python train.py supervised --dataset csv --data-path my.csv --target price
    python train.py supervised --dataset fashion-mnist --method s2vgd,svgd,map --epochs 20
    python train.py supervised --resume runs/<run-name>              # continue an interrupted run
    python train.py supervised --resume runs/<run-name> --splits 30  # extend it to 30 splits

Regression sets are split 20 times at random 90/10 (split k is the same for every method and every
--splits ≥ k), or, with --protocol standard, into the 20 fixed splits of the PBP, dropout, SVGD and
S²VGD tables (Boston, Concrete); classification sets with an official test set (Fashion-MNIST) use it, and --splits then
counts repeated runs with different seeds. Small regression sets train on every training row of a
split and keep the last epoch of the cosine schedule; large ones and classification hold 10 % of the
training rows out as a validation set that selects the checkpoint (and, for regression, each
particle's noise precision). The test rows are only ever used for the final numbers. Every random
choice (the split, the --max-train subset, the initial particles, the minibatch order of split k) has
its own stream derived from --seed, so a run is bit-identical when repeated or resumed on one machine.

Every run writes runs/<run-name>/ and never overwrites an existing one: config.json, the test metrics
of every finished method and split in splits/<method>_split<k>.json (saved as soon as it finishes, with
its particles in models/<method>_split<k>.safetensors; load with BayesianRegressor.load) and all of them
in results.json, TensorBoard training curves (<method>/split_<k>/: split 0 of a regression set, every
run on classification), the test metrics of every split (summary/) and, once every split has finished,
results.md.
Ctrl-C or SIGTERM discards the split in progress and keeps the finished ones; --resume runs the rest.
With --resume only --splits, --progress, --threads, --device, --compile and --data-dir may be given (and --backend,
--jobs).

--backend local|ray fits the (split, method) pairs at once, one job each (svpg.grid), on --jobs local
processes or as Ray Tune trials; every job loads the data and builds its estimator from config.json and
saves its split file itself, so the results are those of the default in-process loop, bit for bit.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import re
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from svpg.cli import Parser, add_dataclass_arguments, dataclass_from_args, explicit_options
from svpg.cli import option as _f
from svpg.allocator import keep_freed_memory
from svpg.core.svgd import OPTIMIZERS
from svpg.core.variational import FAMILIES
from svpg.grid import add_backend_arguments, gpus_per_job, run_jobs
from svpg.io import atomic_write
from svpg.runs import (RunLock, TensorBoardLogger, check_writable, create_run_dir, read_json_object, read_run_record,
                       remove_stray_temporaries, resumed_config,
                       run_name, write_json)
from svpg.runtime import DEFAULT_THREADS, StopRequest, resolve_device
from svpg.seeding import int_seed, numpy_rng
from svpg.stats import mean_se
from svpg.supervised.data import (DATASETS, PROTOCOLS, STANDARD_SPLIT_ROWS, STANDARD_SPLITS, UCI_SETS, Dataset, load_dataset,
                                  standard_splits, train_test_split)
from svpg.supervised.models import LR_SCHEDULES, METHODS, POSTERIOR_OPTIONS, BayesianClassifier, BayesianRegressor

RESUME_HINT = "python train.py supervised --resume"
# options that leave finished splits' results unchanged, so --resume accepts them (--splits adds splits;
# --device and --compile change float rounding, so splits run after such a change are not bit-identical)
RESUME_OPTIONS = ("splits", "progress", "threads", "device", "compile", "data_dir")
CONFIG_FILE, RESULTS_FILE, TABLE_FILE, MODELS_DIR, SUMMARY_DIR = "config.json", "results.json", "results.md", "models", "summary"
# the unit of work: one method on one split, its row of results.json saved as <method>_split<k>.json
SPLITS_DIR, _SPLIT_FILE = "splits", re.compile(r"(?P<method>[a-z0-9-]+)_split(?P<split>\d+)\.json")
# written to config.json beside the options and checked on --resume: what the options resolve to on the data
BUILT = ("resolved", "data")
# how this invocation runs the splits, not what they are: never part of config.json
DRIVER_OPTIONS = ("resume", "backend", "jobs", "gpus_per_job")
RAY_DIR = ".ray"  # Ray Tune's experiment state (for a restarted driver), inside the run folder

# Defaults chosen on validation rows carved from the training part of Boston/Concrete splits 0–4
# (never on test rows); see docs/supervised.md.
# Small regression sets train on every training row and keep the last epoch of the cosine schedule:
# on held-out rows of splits 0–4 (nested validation, bench/supervised_validation.py) this beat carving
# a 10 % validation split for checkpoint selection (Boston RMSE 2.57 → 2.41, Concrete 4.78 → 4.28).
REGRESSION_DEFAULTS = dict(num_particles=20, lr=3e-3, lr_schedule="cosine", epochs=2400, eval_every=20, batch_size=100,
                           validation_fraction=0.0, predict_samples=100)
# Per-method settings of Boston and Concrete that differ from REGRESSION_DEFAULTS, each the best
# validation log-likelihood of its method's grid on the validation rows of splits 0–4
# (bench/supervised_validation.py --grid; docs/supervised.md, "Defaults and why"). The number of epochs
# is the setting whose best value differs most between data sets and methods.
REGRESSION_METHOD_DEFAULTS: dict[str, dict[str, dict]] = {
    "boston": {
        "svgd": {"epochs": 800},  # plain SVGD overfits Boston when it trains to the end of 2400 epochs without a checkpoint
        # the parametric methods: every setting written out, as the grid scored it
        # the grid's first setting stayed best; the mixture prior's grid (splits 0–2) chose the default (½, 1, e⁻⁶)
        "bbb": {"optimizer": "adam", "lr": 3e-3, "lr_schedule": "cosine", "epochs": 2400},
        # the VMG paper's optimizer (§4: Adam's default settings, temporal averaging), not tuned (a step costs
        # 5x K-Diag's with the pseudo-data): the data set's S²VGD length
        "vmg": {"optimizer": "adam", "lr": 1e-3, "lr_schedule": "constant", "epochs": 2400},
        "kflow-diag": {"optimizer": "adam", "lr": 1e-2, "lr_schedule": "cosine", "epochs": 4800},  # still gaining at 4800 epochs
        "kflow-linear": {"optimizer": "adam", "lr": 1e-2, "lr_schedule": "cosine", "epochs": 2400},  # 1200–4800 epochs within 0.005
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
# VMG's pseudo-data pairs per layer (§4.1 of Louizos & Welling): 10, 5 for Yacht, 20 for Protein; each
# layer caps them at its fan-in (core/variational.py). On images VMG's classification model (§4.2): the
# prior MN(0, I, I) and pseudo-data noise of variance at most 0.25; the paper tuned up to 150 pseudo-data
# pairs per layer on validation images, we fix 10 (not tuned).
VMG_PSEUDO_DATA = {"yacht": 5, "protein": 20}
VMG_CLASSIFICATION_OPTIONS = {"learn_precisions": False, "pseudo_data": 10, "pseudo_dropout": 0.25}
# Posterior draws per training step of bbb, vmg and kflow-*: one, as the VMG paper's regression runs;
# local reparameterisation keeps the gradient's variance low with one draw (badam trains point weights).
VARIATIONAL_SAMPLES = 1
# mid-size sets (kin8nm, naval, power: 5000 to 20000 rows): the small sets' settings with 400 epochs, about the
# number of steps of Concrete's schedule (not tuned on these sets)
MID_REGRESSION_DEFAULTS = {**REGRESSION_DEFAULTS, "epochs": 400}
MID_DATA = 5_000
# ≥ 20000 rows (protein; YearPredict is not available): 100 hidden units and batches of 1000 as in §5.1
LARGE_REGRESSION_DEFAULTS = dict(num_particles=20, lr=1e-3, lr_schedule="cosine", epochs=40, eval_every=2, batch_size=1000,
                                 validation_fraction=0.1, predict_samples=100)
# 20 predictive draws for images: each costs a 784-400-400-10 forward pass of every validation image
CLASSIFICATION_DEFAULTS = dict(num_particles=10, lr=1e-3, lr_schedule="cosine", epochs=20, eval_every=1, batch_size=100,
                               validation_fraction=0.1, predict_samples=20)
LARGE_DATA = 20_000
# MNIST: 100 epochs (S²VGD §5.2); other image sets CLASSIFICATION_DEFAULTS' 20
CLASSIFICATION_EPOCHS = {"mnist": 100}


@dataclass
class SupervisedConfig:
    """Bayesian neural networks (§5.1–5.2 of S²VGD) trained by S²VGD, SVGD, MAP or a parametric posterior."""

    dataset: str = _f("boston", f"{' | '.join(DATASETS)} | a path ending in .csv")
    data_path: str = _f("", "CSV file for --dataset csv")
    data_dir: str = _f("", "folder holding the public data files (uci_splits/<name>/data.txt, mnist/, fashion-mnist/), "
                           "searched before $SVPG_DATA_DIR and the user cache ~/.cache/svpg, where missing files are downloaded")
    target: str = _f("", "name of the target column of a CSV file")
    method: str = _f("s2vgd", f"comma-separated methods out of {', '.join(METHODS)}, e.g. s2vgd,svgd,vmg")
    householder: int = _f(1, "K, Householder reflections per side of every layer (s2vgd; capped at min(ℓ1, ℓ2))")
    num_particles: int = _f(0, "M, the number of particles of s2vgd and svgd (0: 20 for regression as in §5, 10 for classification; "
                               "map always uses 1)")
    hidden: str = _f("auto", "hidden widths, e.g. 50 or 400,400 (auto: 50 ReLU units, 100 from 10000 rows; 400,400 for images)")
    epochs: int = _f(0, "training epochs of every method (0: the method's default on the data set: 2400 for small regression "
                         "sets, 3200 for concrete, 800 for svgd on boston, …; 40 for large regression sets, 20 for classification)")
    lr: float = _f(0.0, "learning rate of every method (0: the method's default: 3e-3 for small regression sets unless tuned "
                        "otherwise, 1e-3 otherwise)")
    lr_schedule: str = _f("auto", "constant | cosine (anneal to 0 over training) | auto (the method's default on the data set)",
                          choices=("auto", *LR_SCHEDULES))
    batch_size: int = _f(0, "minibatch size; the likelihood is scaled by N/B (0: 100, or 1000 for regression sets from 10000 rows)")
    optimizer: str = _f("auto", f"{' | '.join(OPTIMIZERS)} | auto (the method's default: adam unless tuned otherwise; badam "
                                "needs adam)", choices=("auto", *OPTIMIZERS))
    samples: int = _f(0, f"posterior draws per training step of {', '.join(m for m in FAMILIES if m != 'badam')} "
                         f"(0: {VARIATIONAL_SAMPLES})")
    predict_samples: int = _f(0, "posterior draws of the predictive distribution of the parametric methods "
                                 "(0: 100 for regression, 20 for classification)")
    bandwidth: str = _f("median", "RBF kernel bandwidth: 'median' (h = med²/log M) or a fixed positive number")
    prior_a: float = _f(1.0, "shape a of the Gamma(a, b) hyperpriors on all precisions (§5: 1)")
    prior_b: float = _f(0.1, "rate b of the Gamma(a, b) hyperpriors on all precisions (§5: 0.1)")
    validation_fraction: str = _f("auto", "share of each training split held out to select the checkpoint and, for regression, "
                                          "the noise (0: train on every row, keep the last epoch; auto: 0 for small regression "
                                          "sets, 0.1 for large ones and classification)")
    eval_every: int = _f(0, "validate every this many epochs (0: auto)")
    refit_noise: bool = _f(True, "regression: re-estimate each particle's noise precision on the validation rows (Liu & Wang 2016)")
    splits: int = _f(0, "train/test splits (0: 20 for regression and mnist; runs with different seeds on Fashion-MNIST: 1; "
                        f"at most {STANDARD_SPLITS} with --protocol standard); with --resume: run until this many have finished")
    protocol: str = _f("random", "how the rows are split (any letter case): "
                                 + "; ".join(f"{name}: {text}" for name, text in PROTOCOLS.items()))
    test_fraction: float = _f(0.1, "test share of every random split")
    max_train: int = _f(0, "use at most this many training rows per split (0: all), for quick runs")
    seed: int = _f(0, "root of every random stream: each split's test rows, --max-train subset, initial particles and minibatch order")
    device: str = _f("cpu", "torch device, e.g. cpu or cuda")
    threads: int = _f(DEFAULT_THREADS, "torch CPU threads (more help large networks on an idle machine; on shared cores 1 is often fastest)")
    compile: bool = _f(False, "torch.compile the log posterior (regression: 2-3.5x faster steps after a 0.5-2 min compilation)")
    log_dir: str = _f("runs", "parent folder of run folders")
    run_name: str = _f("", "run folder name (default: supervised__<dataset>__<methods>__<time>)")
    save_models: bool = _f(True, "save every split's particles to runs/<name>/models/")
    progress: bool = _f(True, "show progress bars")

    def __post_init__(self):
        self.protocol = self.protocol.lower()  # config.json records one spelling

    def methods(self) -> list[str]:
        names = [m.strip().lower() for m in self.method.split(",") if m.strip()]
        bad = [m for m in names if m not in METHODS]
        if not names or bad:
            raise ValueError(f"--method {self.method!r}: give a comma-separated list out of {', '.join(METHODS)}")
        return list(dict.fromkeys(names))

    def validate(self) -> "SupervisedConfig":
        problems, methods = [], []
        try:
            methods = self.methods()
        except ValueError as e:
            problems.append(str(e))
        if self.householder < 1 and "s2vgd" in methods:
            problems.append(f"--householder must be ≥ 1 for s2vgd, got {self.householder} (use --method svgd for K = 0)")
        if self.threads < 1:
            problems.append(f"--threads must be ≥ 1, got {self.threads}")
        try:
            resolve_device(self.device)
        except ValueError as e:
            problems.append(str(e))
        for name in ("num_particles", "epochs", "batch_size", "eval_every", "splits", "max_train", "samples", "predict_samples"):
            if getattr(self, name) < 0:
                problems.append(f"--{name.replace('_', '-')} must be ≥ 0, got {getattr(self, name)}")
        if self.lr < 0:
            problems.append(f"--lr must be > 0 (or 0 for the default), got {self.lr}")
        if str(self.validation_fraction) != "auto":
            try:
                fraction_ok = 0 <= float(self.validation_fraction) < 1
            except ValueError:
                fraction_ok = False
            if not fraction_ok:  # an explicit check: an assert would vanish under python -O
                problems.append(f"--validation-fraction must be 'auto' or a number in [0, 1), got {self.validation_fraction!r}")
        if not 0 < self.test_fraction < 1:
            problems.append(f"--test-fraction must be in (0, 1), got {self.test_fraction}")
        if self.protocol not in PROTOCOLS:
            problems.append(f"--protocol {self.protocol!r}: choose from {', '.join(PROTOCOLS)}")
        elif self.protocol == "standard" and self.test_fraction != 0.1:
            problems.append(f"--test-fraction {self.test_fraction} does not apply to --protocol standard (its splits are 90/10)")
        if self.hidden != "auto":
            try:
                widths = [int(w) for w in self.hidden.split(",") if w.strip()]
                assert widths and min(widths) >= 1
            except (ValueError, AssertionError):
                problems.append(f"--hidden must be 'auto' or comma-separated positive widths such as 50 or 400,400, got {self.hidden!r}")
        if self.bandwidth != "median":
            try:
                assert float(self.bandwidth) > 0
            except (ValueError, AssertionError):
                problems.append(f"--bandwidth must be 'median' or a positive number, got {self.bandwidth!r}")
        if problems:
            raise ValueError("; ".join(problems))
        return self


def resolve(cfg: SupervisedConfig, data: Dataset) -> dict:
    """The settings actually used for this data set (fills every 'auto'/0 field). ``epochs`` maps each
    method to its number of epochs; ``lr`` and ``lr_schedule`` are the particle methods'; every
    parametric method has its own lr, schedule, optimizer and draws in ``method_settings`` (absent
    when the run has none, so runs of the particle methods resolve as before)."""
    n = len(data.y)
    tuned: dict[str, dict] = {}
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
        m: {"lr": pick(m, "lr", cfg.lr), "lr_schedule": pick(m, "lr_schedule", schedule),
            "optimizer": pick(m, "optimizer", optimizer) or "adam", "samples": cfg.samples or VARIATIONAL_SAMPLES,
            "predict_samples": pick(m, "predict_samples", cfg.predict_samples)}
        for m in cfg.methods() if m in FAMILIES
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
        validation_fraction=defaults["validation_fraction"] if str(cfg.validation_fraction) == "auto" else float(cfg.validation_fraction),
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
        method=method, num_particles=settings["num_particles"], householder=cfg.householder, hidden=settings["hidden"],
        activation="relu", prior_a=cfg.prior_a, prior_b=cfg.prior_b,
        kernel="median" if cfg.bandwidth == "median" else float(cfg.bandwidth),
        optimizer="adam" if cfg.optimizer == "auto" else cfg.optimizer, lr=settings["lr"], lr_schedule=settings["lr_schedule"],
        epochs=settings["epochs"][method], batch_size=settings["batch_size"],
        validation_fraction=settings["validation_fraction"], eval_every=settings["eval_every"], seed=seed,
        device=cfg.device, progress=progress, compile=cfg.compile, threads=cfg.threads,
    )
    kwargs.update(own)
    if data.task == "classification":
        return BayesianClassifier(**kwargs)
    return BayesianRegressor(**kwargs, refit_noise=cfg.refit_noise)


def method_label(method: str, cfg: SupervisedConfig) -> str:
    return {"s2vgd": f"s2vgd (K={cfg.householder})", "map": "map (M=1)"}.get(method, method)


def format_table(results: dict[str, list[dict]], task: str, cfg: SupervisedConfig, title: str = "") -> str:
    """Markdown table: mean ± standard error over splits of every metric, one row per method."""
    if task == "classification":
        cols = [("error", "test error (%)", 100.0, 2), ("nll", "test NLL", 1.0, 4), ("ece", "ECE", 1.0, 4)]
        time_col = ("seconds_per_epoch", "s / epoch (median)")
    else:
        cols = [("rmse", "test RMSE", 1.0, 3), ("test_ll", "test log-likelihood", 1.0, 3)]
        time_col = ("seconds", "s / split (median)")
    count = "runs" if task == "classification" else "splits"
    head = ["method", *[c[1] for c in cols], count, time_col[1]]
    lines = [f"**{title}**\n" if title else "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for method, rows in results.items():
        cells = [method_label(method, cfg)]
        for key, _, scale, digits in cols:
            mean, se = mean_se([r[key] * scale for r in rows])
            cells.append(f"{mean:.{digits}f} ± {se:.{digits}f}" if len(rows) > 1 else f"{mean:.{digits}f}")
        cells.append(str(len(rows)))
        cells.append(f"{np.median([r[time_col[0]] for r in rows]):.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    if task == "regression":
        note = "mean ± standard error over splits; log-likelihood in the target's original units"
    else:
        note = "mean ± standard error over runs; ECE with 15 equal-width confidence bins"
    return "\n".join(line for line in lines if line) + f"\n\n({note})\n"


# ----------------------------------------------------------------------------------- the run folder


def split_data(cfg: SupervisedConfig, data: Dataset, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Training and test rows of split k (the official test set if the data have one; else split k of
    --protocol), with at most --max-train training rows, drawn from a stream of their own."""
    if data.y_test is not None:
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


def _prepare(cfg: SupervisedConfig) -> tuple[Dataset, dict]:
    """The data and the resolved settings, with everything checked before a file is written."""
    cfg.validate()
    data = load_dataset(cfg.dataset, cfg.data_path or None, cfg.target or None, data_dir=cfg.data_dir or None,
                        progress=cfg.progress)
    settings = resolve(cfg, data)
    if cfg.protocol == "standard":
        standard_splits(data.name)  # raises for a data set without them
        if len(data.y) != STANDARD_SPLIT_ROWS[data.name]:
            raise ValueError(f"{data.name} has {len(data.y)} rows, but its standard splits index "
                             f"{STANDARD_SPLIT_ROWS[data.name]}; use --protocol random")
        if settings["splits"] > UCI_SETS[data.name].splits:
            raise ValueError(f"--splits {settings['splits']}: {data.name} has {UCI_SETS[data.name].splits} standard splits")
    elif data.y_test is None:
        train_test_split(len(data.y), 0, cfg.test_fraction, cfg.seed)  # raises if the set is too small for it
    for method in cfg.methods():
        make_estimator(cfg, data, settings, method, seed=cfg.seed, progress=False)._validate_params()
    return data, settings


def _built(data: Dataset, settings: dict) -> dict:
    """What the options resolve to on the data, as config.json records it (JSON-normalised, so that it
    compares with a read-back). The data's digest catches a CSV file edited between a run and its resume."""
    digest = hashlib.sha256()
    for a in (data.x, data.y, data.x_test, data.y_test):
        if a is not None:
            digest.update(np.ascontiguousarray(a).tobytes())
    resolved = {k: v for k, v in settings.items() if k != "splits"}  # --resume may change the number of splits
    return json.loads(json.dumps({"resolved": resolved, "data": {"description": repr(data), "sha256": digest.hexdigest()}}))


def split_file(run_dir: Path, method: str, k: int) -> Path:
    return Path(run_dir) / SPLITS_DIR / f"{method}_split{k:02d}.json"


def read_finished(run_dir: Path, methods: list[str]) -> dict[str, dict[int, dict]]:
    """The saved row of every finished (method, split), by method and split."""
    finished: dict[str, dict[int, dict]] = {m: {} for m in methods}
    folder = Path(run_dir) / SPLITS_DIR
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        match = _SPLIT_FILE.fullmatch(path.name)
        if not match or match["method"] not in finished:
            continue
        row = read_json_object(path, "split result")
        if row.get("split") != int(match["split"]):
            raise ValueError(f"{path} does not hold the row of split {int(match['split'])}; "
                             f"delete it and --resume to run that split again")
        finished[match["method"]][row["split"]] = row
    return finished


@dataclass
class _Run:
    """A run folder and what is needed to fill it."""

    cfg: SupervisedConfig
    data: Dataset
    settings: dict
    run_dir: Path
    finished: dict[str, dict[int, dict]]  # method -> split -> its row of results.json

    @property
    def methods(self) -> list[str]:
        return self.cfg.methods()

    def todo(self) -> list[tuple[int, str]]:
        """(split, method) pairs without a result, split by split so that methods compare early."""
        return [(k, m) for k in range(self.settings["splits"]) for m in self.methods if k not in self.finished[m]]

    def rows(self) -> dict[str, list[dict]]:
        return {m: [rows[k] for k in sorted(rows)] for m, rows in self.finished.items()}

    def count(self, finished: dict[str, dict] | None = None) -> str:
        """'7 of 20 splits' (one method) or '27 of 40 fits (2 methods × 20 splits)'."""
        done = sum(map(len, (self.finished if finished is None else finished).values()))
        n, m = self.settings["splits"], len(self.methods)
        return f"{done} of {n} splits" if m == 1 else f"{done} of {m * n} fits ({m} methods × {n} splits)"

    def save_results(self) -> None:
        write_json(self.run_dir / RESULTS_FILE, {"dataset": self.data.name, "task": self.data.task,
                                                 "settings": self.settings, "results": self.rows()})


def _new_run(args: argparse.Namespace) -> _Run:
    """Check everything, then create the run folder with its config.json."""
    cfg = dataclass_from_args(SupervisedConfig, args)
    data, settings = _prepare(cfg)
    name = cfg.run_name or run_name("supervised", data.name, "-".join(cfg.methods()))
    run_dir = create_run_dir(cfg.log_dir, name, resume_hint=RESUME_HINT, config={**asdict(cfg), **_built(data, settings)})
    return _Run(cfg, data, settings, run_dir, {m: {} for m in cfg.methods()})


def _load_config(run_dir: Path) -> tuple[SupervisedConfig, dict]:
    """The options in a run folder's config.json, and what they resolved to when it was written."""
    return read_run_record(run_dir, SupervisedConfig, BUILT, "train.py supervised", CONFIG_FILE)


def _resumed_run(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str]) -> _Run:
    """The run in ``--resume``'s folder with the options allowed on resume applied; checked before anything is written."""
    run_dir = Path(args.resume)
    typed = explicit_options(parser, argv) - set(DRIVER_OPTIONS)
    cfg, recorded = resumed_config(run_dir, SupervisedConfig, typed, vars(args), RESUME_OPTIONS, BUILT,
                                   "train.py supervised", CONFIG_FILE)
    path = run_dir / CONFIG_FILE
    data, settings = _prepare(cfg)
    built = _built(data, settings)
    changed = [k for k in BUILT if recorded[k] != built[k]]
    if changed:
        what = "data set" if "data" in changed else "resolved settings"
        raise ValueError(f"{path}: its {what} differ from what its options give now (it was edited, or the data or svpg "
                         f"changed since the run started); start a new run")
    finished = read_finished(run_dir, cfg.methods())
    needed = 1 + max((k for rows in finished.values() for k in rows), default=-1)
    if needed > settings["splits"]:
        raise ValueError(f"--splits {settings['splits']} is fewer than the {needed} splits {run_dir} has (partly) finished; "
                         f"pass --splits {needed} or more (finished results are never deleted)")
    check_writable(run_dir)
    remove_stray_temporaries(run_dir)
    write_json(path, {**asdict(cfg), **built})  # a later --resume continues with these --splits
    return _Run(cfg, data, settings, run_dir, finished)


# ------------------------------------------------------------------------------------------ training


def fit_split(run: _Run, method: str, k: int, progress: bool) -> dict:
    """Fit ``method`` on split k and save its particles and then its row (atomically: the run folder's
    unit of work); returns the row. The one way a split is fitted: by the in-process loop and by the
    jobs of ``--backend``.

    :param progress: a bar over epochs (classification in the in-process loop).
    """
    cfg, data = run.cfg, run.data
    classification = data.task == "classification"
    x_tr, y_tr, x_te, y_te = split_data(cfg, data, k)
    seed = split_seed(cfg.seed, k)
    model = make_estimator(cfg, data, run.settings, method, seed, progress=progress)
    curves = run.run_dir / method / f"split_{k:02d}"
    model_file = run.run_dir / MODELS_DIR / f"{method}_split{k:02d}.safetensors"
    # An interrupted attempt at this split left curves (and, if it was killed between saving its model
    # and its row, a model file); the split runs again from epoch 1, so they go.
    shutil.rmtree(curves, ignore_errors=True)
    model_file.unlink(missing_ok=True)
    logger = TensorBoardLogger(curves) if k == 0 or classification else None  # regression: split 0's curves only
    callback = None
    if logger is not None:
        def callback(epoch: int, scalars: dict) -> None:
            logger.log({key: v for key, v in scalars.items() if key != "epoch"}, epoch)

    t0 = time.perf_counter()
    try:
        # fixed validation rows (MNIST's last 10,000 training images), else carved by --validation-fraction
        validation = {"X_val": data.x_val, "y_val": data.y_val} if data.y_val is not None else {}
        model.fit(x_tr, y_tr, callback=callback, **validation)
    finally:
        if logger is not None:
            logger.close()
    seconds = time.perf_counter() - t0
    row = {"split": k, "seed": seed, "n_train": len(y_tr), "n_test": len(y_te), **model.evaluate(x_te, y_te),
           "best_epoch": model.best_epoch_, "seconds": seconds,
           "seconds_per_epoch": float(np.mean([h["epoch_seconds"] for h in model.history_]))}
    if cfg.save_models:
        model.save(model_file)  # before the row: a saved row implies its model file
    write_json(split_file(run.run_dir, method, k), row)
    return row


def _train(run: _Run) -> None:
    """Fit every (split, method) without a result; each is saved as soon as it finishes."""
    todo = run.todo()
    bar = tqdm(total=len(todo), disable=not (run.cfg.progress and todo), unit="fit", dynamic_ncols=True)
    try:
        for k, method in todo:
            row = fit_split(run, method, k, progress=run.cfg.progress and run.data.task == "classification")
            run.finished[method][k] = row
            run.save_results()
            _show(bar, run, method, row)
    finally:
        bar.close()


def _show(bar: tqdm, run: _Run, method: str, row: dict | None) -> None:
    """Count a finished fit on the bar, with its test error (classification) or the method's mean so far."""
    bar.update(1)
    if row is None:  # not (yet) visible to this process: a network file system's cached folder listing
        return
    if run.data.task == "classification":
        bar.set_postfix(method=method, error=f"{row['error']:.4f}", ece=f"{row['ece']:.4f}")
    else:
        done = run.finished[method].values()
        bar.set_postfix(method=method, rmse=f"{np.mean([r['rmse'] for r in done]):.3f}",
                        ll=f"{np.mean([r['test_ll'] for r in done]):.3f}")


def fit_split_job(job: dict, report=None) -> dict:
    """One (split, method) of a run folder as a job of :func:`svpg.grid.run_jobs` (``--backend``).

    The data and the estimator come from the run's config.json (relative data paths are taken from the
    driver's working folder ``job["cwd"]``: a Ray trial runs in a folder of its own). A pair that has its
    split file is not fitted again.
    """
    run_dir, method, k = Path(job["run_dir"]), job["method"], int(job["split"])
    start = time.perf_counter()
    keep_freed_memory()  # a worker process is an entry point too
    if not split_file(run_dir, method, k).exists():
        cfg, recorded = _load_config(run_dir)
        cwd = Path(job["cwd"])
        if cfg.data_path:
            cfg = dataclasses.replace(cfg, data_path=str(cwd / cfg.data_path))
        if cfg.data_dir:
            cfg = dataclasses.replace(cfg, data_dir=str(cwd / Path(cfg.data_dir).expanduser()))
        if cfg.dataset.lower().endswith(".csv"):
            cfg = dataclasses.replace(cfg, dataset=str(cwd / cfg.dataset))
        data, settings = _prepare(cfg)
        if _built(data, settings)["data"] != recorded["data"]:
            raise ValueError(f"the data set {data.name!r} this job loaded differs from the one {run_dir} was started "
                             f"with (a Ray node needs the same data files)")
        fit_split(_Run(cfg, data, settings, run_dir, {}), method, k, progress=False)
    return {"seconds": time.perf_counter() - start}


def _train_on_workers(run: _Run, backend: str, workers: int, gpus: float | None = None) -> None:
    """Fit every (split, method) without a result as jobs of :func:`svpg.grid.run_jobs`, one per pair;
    results.json follows the split files as they appear."""
    todo = run.todo()
    jobs = [{"run_dir": str(run.run_dir.resolve()), "method": m, "split": k, "cwd": str(Path.cwd())} for k, m in todo]
    bar = tqdm(total=len(todo), disable=not (run.cfg.progress and todo), unit="fit", dynamic_ncols=True)

    def done(job: dict, result: dict) -> None:
        run.finished = read_finished(run.run_dir, run.methods)
        run.save_results()
        _show(bar, run, job["method"], run.finished[job["method"]].get(job["split"]))

    try:
        run_jobs("svpg.supervised.cli:fit_split_job", jobs, backend=backend, workers=workers,
                 storage=run.run_dir / RAY_DIR, gpus_per_job=gpus_per_job(gpus, run.cfg.device), on_done=done)
    finally:
        bar.close()
    run.finished = read_finished(run.run_dir, run.methods)
    missing = run.todo()
    if missing:
        raise ValueError(f"the jobs of {missing} (split, method) finished but left no split file in {run.run_dir}: with "
                         f"Ray, the run folder must be on a file system every node can reach")


def _report(run: _Run) -> str:
    """results.json, results.md and the TensorBoard summary of test metrics, rebuilt from the split files."""
    run.save_results()  # also after a process killed between a split file and results.json
    data, settings = run.data, run.settings
    kind = "run(s) on the official test set" if data.y_test is not None else f"{run.cfg.protocol} 90/10 splits"
    epochs = ", ".join(f"{n} ({m})" for m, n in settings["epochs"].items())
    title = (f"{data.name}: {settings['splits']} {kind}, M = {settings['num_particles']}, "
             f"hidden {','.join(map(str, settings['hidden']))}, epochs {epochs}")
    rows = run.rows()
    table = format_table(rows, data.task, run.cfg, title)
    atomic_write(run.run_dir / TABLE_FILE, lambda tmp: Path(tmp).write_text(table))
    summary = run.run_dir / SUMMARY_DIR
    shutil.rmtree(summary, ignore_errors=True)  # one point per split, however often the run was resumed
    logger = TensorBoardLogger(summary)
    for method, method_rows in rows.items():
        for row in method_rows:
            logger.log({f"{method}/test/{key}": row[key] for key in ("rmse", "test_ll", "error", "nll", "ece") if key in row},
                       row["split"])
    logger.text("results", table)
    logger.close()
    return table


# ------------------------------------------------------------------------------------- command line


def build_parser() -> Parser:
    parser = Parser(prog="train.py supervised", description=__doc__, listed={"methods": METHODS})
    parser.add_argument("--resume", metavar="RUN_DIR", default=None,
                        help="continue the run in RUN_DIR: run its splits that have no result yet (with --splits: extend it); "
                             "only --splits, --progress, --threads, --device, --compile and --data-dir may be given")
    add_backend_arguments(parser, "(split, method) fits", shared="the run folder and the data")
    add_dataclass_arguments(parser, SupervisedConfig)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    keep_freed_memory()
    run = None
    locks = []  # one writer per run folder (svpg.runs.RunLock): taken before a resumed folder is read
    # at once, not at a safe point: the split in progress is discarded anyway, and one epoch can take minutes
    with StopRequest(immediate=True) as stop, contextlib.ExitStack() as held:
        try:
            if args.resume and Path(args.resume).is_dir():
                locks.append(held.enter_context(RunLock(args.resume)))
            run = _resumed_run(parser, args, argv) if args.resume else _new_run(args)
            if not locks:
                locks.append(held.enter_context(RunLock(run.run_dir)))
            todo = run.todo()
            print(f"{run.data}\nrun folder: {run.run_dir}\nsettings: {run.settings}", flush=True)
            if args.resume:
                print(f"resuming: {run.count()} finished; "
                      + (f"running the other {len(todo)}" if todo else "nothing to do (rewriting results.md)"), flush=True)
            if args.backend:
                _train_on_workers(run, args.backend, args.jobs, args.gpus_per_job)
            else:
                _train(run)
            table = _report(run)
        except (ValueError, OSError) as e:  # bad input, or a file that cannot be written (svpg.io.WriteError)
            message, hint = str(e), ""
            if run is not None:
                hint = f"; once fixed, continue with: {RESUME_HINT} {run.run_dir}"
                if not isinstance(e, ValueError):  # TensorBoard's event writer: a bare OSError without the file
                    message = f"could not write to {run.run_dir} ({e.strerror or e})"
            print(f"train.py supervised: error: {message}{hint}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            if run is None:
                print("interrupted before the run started", file=sys.stderr)
            else:  # counted from the split files: exact even if the signal came while one was being written
                saved = read_finished(run.run_dir, run.methods)
                print(f"interrupted: {run.count(saved)} finished and saved; continue with: {RESUME_HINT} {run.run_dir}",
                      file=sys.stderr)
            return stop.exit_status or 130
    print("\n" + table)
    print(f"written to {run.run_dir / TABLE_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
