#!/usr/bin/env python
"""Wall-clock of the supervised BNNs: seconds per regression split and per classification epoch.

    python bench/supervised_timing.py                       # Boston split + Fashion-MNIST epoch estimate
    python bench/supervised_timing.py --compile --threads 1                 # as the figures in docs/supervised.md

Regression: one Boston split (455 training rows, 10 % of them for validation) with the CLI defaults
(50 ReLU units, M = 20, batch 100, validation every epoch here); a fit of --regression-epochs epochs
is timed after a warm-up fit and scaled linearly to Boston's default number of epochs.
Classification: 784-400-400-10 ReLU on Fashion-MNIST (or random pixels if it is not installed), batch
100; one epoch on --classification-rows training rows is timed and scaled to the 54000 rows (60000
less 10 % validation) of a real epoch. Regression runs on the estimators' default threads (as the CLI
does), classification on --threads threads.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from svpg.runtime import DEFAULT_THREADS  # noqa: E402
from svpg.supervised import BayesianClassifier, BayesianRegressor, load_dataset, train_test_splits  # noqa: E402
from svpg.supervised.cli import CLASSIFICATION_DEFAULTS, REGRESSION_DEFAULTS  # noqa: E402

FULL_EPOCH_ROWS = 54_000


def regression(methods, epochs, particles, compile_modes):
    data = load_dataset("boston")
    tr, te = train_test_splits(len(data.y), 1)[0]
    full = REGRESSION_DEFAULTS["epochs"]  # Boston's
    print(f"\nregression: boston split 0 ({len(tr)} train rows), 13-50-1 ReLU, M = {particles}, batch 100, "
          f"{epochs} epochs timed (median epoch, validation included), scaled to {full} epochs; {DEFAULT_THREADS} thread(s)")
    print(f"| method | torch.compile | s / epoch | s / split ({full} epochs) | steps / s |\n|---|---|---|---|---|")
    for method in methods:
        for compiled in compile_modes:
            model = BayesianRegressor(method=method, num_particles=particles, epochs=epochs, lr=REGRESSION_DEFAULTS["lr"],
                                      lr_schedule=REGRESSION_DEFAULTS["lr_schedule"], validation_fraction=0.1, eval_every=1,
                                      seed=0, compile=compiled)
            model.fit(data.x[tr], data.y[tr])  # the first fit of a structure pays the compilation
            t0 = time.perf_counter()
            model.fit(data.x[tr], data.y[tr])
            per_epoch = (time.perf_counter() - t0) / epochs
            steps = (len(tr) - round(0.1 * len(tr))) // 100
            print(f"| {method} | {compiled} | {per_epoch:.4f} | {per_epoch * full:.1f} | {steps / per_epoch:.0f} |", flush=True)


def classification(methods, rows, particles, threads, data_path):
    try:
        data = load_dataset("fashion-mnist", data_path)
        x, y, source = data.x[:rows], data.y[:rows], "Fashion-MNIST"
    except ValueError:
        rng = np.random.default_rng(0)
        x, y, source = rng.random((rows, 784), dtype=np.float32), rng.integers(0, 10, rows), "random pixels"
    print(f"\nclassification: 784-400-400-10 ReLU on {source}, M = {particles} (map: 1), batch 100, one epoch of "
          f"{rows} rows timed and scaled to {FULL_EPOCH_ROWS}; {threads} thread(s)")
    print("| method | s / epoch (54000 rows) | images / s (all particles) |\n|---|---|---|")
    for method in methods:
        model = BayesianClassifier(method=method, num_particles=particles, epochs=1, lr=CLASSIFICATION_DEFAULTS["lr"],
                                   validation_fraction=0.0, seed=0, threads=threads)
        model.fit(x, y)
        seconds = model.history_[0]["epoch_seconds"]
        per_row = seconds / (rows // 100 * 100)
        print(f"| {method} | {per_row * FULL_EPOCH_ROWS:.1f} | {1 / per_row:.0f} |", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--methods", default="s2vgd,svgd,map")
    p.add_argument("--regression-epochs", type=int, default=50, help="epochs actually timed (default 50)")
    p.add_argument("--regression-particles", type=int, default=20)
    p.add_argument("--classification-rows", type=int, default=5000, help="rows of the timed epoch (default 5000)")
    p.add_argument("--classification-particles", type=int, default=10)
    p.add_argument("--threads", type=int, default=DEFAULT_THREADS, help="classification threads (default %(default)s)")
    p.add_argument("--data-path", default=None, help="Fashion-MNIST IDX folder")
    p.add_argument("--compile", action="store_true", help="also time regression with torch.compile")
    p.add_argument("--skip", choices=("regression", "classification"), default=None)
    a = p.parse_args()
    methods = [m for m in a.methods.split(",") if m]
    print(f"torch {torch.__version__}, {os.cpu_count()} CPU cores visible")
    if a.skip != "regression":
        regression(methods, a.regression_epochs, a.regression_particles, (False, True) if a.compile else (False,))
    if a.skip != "classification":
        classification(methods, a.classification_rows, a.classification_particles, a.threads, a.data_path)


if __name__ == "__main__":
    main()
