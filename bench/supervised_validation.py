"""Nested validation of the regression protocol: scores settings on held-out *training* rows.

For each of the first ``--splits`` random 90/10 splits, the rows a 10 % validation split would take
from the training part (the rows the CLI's estimator of that split carves with
--validation-fraction 0.1) are held out and used as a pseudo-test set; the model is fitted on the
remaining training rows, with a seed of its own. The test rows of the splits are never loaded, so the
printed figures can choose settings without touching test data.

    python bench/supervised_validation.py --dataset boston --protocol full            # the CLI's protocol for small sets
    python bench/supervised_validation.py --dataset boston --protocol checkpoint      # a validation split picks the checkpoint
    python bench/supervised_validation.py --dataset concrete --method svgd --epochs 800

``--protocol checkpoint`` carves a further 10 % of the remaining rows to select the checkpoint and
refit the noise; ``full`` trains on all of them and keeps the last epoch of the cosine schedule.
Prints one line per split and the mean RMSE and log-likelihood.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from svpg.core.svgd import OPTIMIZERS
from svpg.supervised import load_dataset
from svpg.seeding import int_seed
from svpg.supervised.cli import REGRESSION_DEFAULTS, SupervisedConfig, make_estimator, resolve, split_seed
from svpg.supervised.data import holdout_split, train_test_split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="boston")
    parser.add_argument("--method", default="s2vgd", choices=("s2vgd", "svgd", "map"))
    parser.add_argument("--protocol", default="full", choices=("full", "checkpoint"))
    parser.add_argument("--splits", type=int, default=5, help="use the validation rows of splits 0..N-1")
    parser.add_argument("--epochs", type=int, default=0, help="0: the data set's default")
    parser.add_argument("--lr", type=float, default=REGRESSION_DEFAULTS["lr"])
    parser.add_argument("--optimizer", default=SupervisedConfig.optimizer, choices=sorted(OPTIMIZERS))
    parser.add_argument("--householder", type=int, default=SupervisedConfig.householder, help="K, reflections per side (s2vgd)")
    parser.add_argument("--compile", type=int, default=1)
    args = parser.parse_args()

    data = load_dataset(args.dataset)
    # the CLI's own settings and estimator, so this scores exactly what `train.py supervised` would run
    cfg = SupervisedConfig(dataset=args.dataset, method=args.method, epochs=args.epochs, lr=args.lr,
                           optimizer=args.optimizer, householder=args.householder, compile=bool(args.compile),
                           validation_fraction="0.1" if args.protocol == "checkpoint" else "0")
    settings = resolve(cfg.validate(), data)
    epochs = settings["epochs"][args.method]
    rows = []
    for k in range(args.splits):
        train, _test = train_test_split(len(data.y), k, cfg.test_fraction, cfg.seed)
        fit, held_out = holdout_split(len(train), 0.1, split_seed(cfg.seed, k))
        x, y = data.x[train], data.y[train]
        # not the CLI's seed of split k: with --protocol checkpoint the model carves its own validation
        # rows, which must not be drawn from the stream that chose the held-out rows
        model = make_estimator(cfg, data, settings, args.method, seed=int_seed(cfg.seed, "split", k, "nested"), progress=False)
        t0 = time.perf_counter()
        model.fit(x[fit], y[fit])
        row = {"split": k, **model.evaluate(x[held_out], y[held_out]), "best_epoch": model.best_epoch_,
               "seconds": round(time.perf_counter() - t0, 1)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    rmse, ll = np.mean([r["rmse"] for r in rows]), np.mean([r["test_ll"] for r in rows])
    print(f"{data.name} {args.method} K={args.householder} protocol={args.protocol} epochs={epochs} {args.optimizer} lr={args.lr:g}: "
          f"held-out RMSE {rmse:.3f}, log-likelihood {ll:.3f} (mean over {len(rows)} splits)")


if __name__ == "__main__":
    main()
