"""Nested validation of the regression protocol: scores settings on held-out *training* rows.

For each of the first ``--splits`` random 90/10 splits, the rows a 10 % validation split would take
from the training part (the rows the CLI's estimator of that split carves with
--validation-fraction 0.1) are held out and used as a pseudo-test set; the model is fitted on the
remaining training rows, with a seed of its own. The test rows of the splits are never loaded, so the
printed figures can choose settings without touching test data.

    python bench/supervised_validation.py --dataset boston --protocol full            # the CLI's protocol for small sets
    python bench/supervised_validation.py --dataset boston --protocol checkpoint      # a validation split picks the checkpoint
    python bench/supervised_validation.py --dataset concrete --method svgd --epochs 800
    python bench/supervised_validation.py --dataset boston --method vmg --grid --results vmg-boston.jsonl

``--protocol checkpoint`` carves a further 10 % of the remaining rows to select the checkpoint and
refit the noise; ``full`` trains on all of them and keeps the last epoch of the cosine schedule.
Prints one line per split and the mean RMSE and log-likelihood.

``--grid`` scores the grid every method gets, 8 settings on the same 5 splits, one stage after another,
each stage starting from the best setting so far (mean held-out log-likelihood):

1. optimizer and learning rate, cosine schedule, the data set's S²VGD length E (Boston 2400, Concrete
   3200): Adam 1e-3, 3e-3, 1e-2 and RMSprop 1e-3, 3e-3 (badam is Adam by definition: Adam 2e-3 and 5e-3
   instead of RMSprop);
2. the best of 1 with a constant learning rate;
3. the best so far with E/2 and 2E epochs.

``--prior-grid`` (bbb) scores Bayes by Backprop's scale-mixture prior (π, σ1, σ2) from the grid of
Blundell et al. §5 (π ∈ {1/4, 1/2, 3/4}, −log σ1 ∈ {0, 1, 2}, −log σ2 ∈ {6, 7, 8}) with the method's
tuned optimizer settings, one coordinate after another, each from the best so far: π at (σ1, σ2) =
(1, e⁻⁶), then −log σ1 ∈ {1, 2}, then −log σ2 ∈ {7, 8}: 7 settings.

It prints the winner as the line to put into ``REGRESSION_METHOD_DEFAULTS`` (svpg/supervised/cli.py).
With ``--results FILE`` every (setting, split) is appended to FILE as it finishes, and a rerun skips
what FILE holds, so an interrupted grid continues where it stopped.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np

from svpg.cli import Parser
from svpg.core.svgd import OPTIMIZERS
from svpg.core.variational import BBB_PRIOR_GRID
from svpg.seeding import int_seed
from svpg.supervised import BNN_METHODS, load_dataset
from svpg.supervised.cli import SupervisedConfig, make_estimator, resolve, split_seed
from svpg.supervised.data import holdout_split, train_test_split

STAGE1 = [("adam", 1e-3), ("adam", 3e-3), ("adam", 1e-2), ("rmsprop", 1e-3), ("rmsprop", 3e-3)]
STAGE1_ADAM_ONLY = [("adam", 1e-3), ("adam", 2e-3), ("adam", 3e-3), ("adam", 5e-3), ("adam", 1e-2)]


def score_setting(args, data, setting: dict, done: dict, log) -> dict:
    """Fit ``setting`` (optimizer, lr, lr_schedule, epochs) on the fit rows of splits 0..N-1 and score it
    on their held-out rows; returns the mean held-out RMSE and log-likelihood."""
    # the CLI's own settings and estimator, so this scores exactly what `train.py supervised` would run
    options = setting.get("posterior_options")
    cfg = SupervisedConfig(dataset=args.dataset, data_dir=args.data_dir, method=args.method, householder=args.householder,
                           compile=bool(args.compile),
                           validation_fraction="0.1" if args.protocol == "checkpoint" else "0",
                           **{k: v for k, v in setting.items() if k != "posterior_options"})
    settings = resolve(cfg.validate(), data)
    if options is not None:
        settings["method_settings"][args.method]["posterior_options"] = options
    key = json.dumps({"method": args.method, "protocol": args.protocol, **setting}, sort_keys=True)
    rows = []
    for k in range(args.splits):
        if (key, k) in done:
            rows.append(done[key, k])
            continue
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
        if log is not None:
            log.write(json.dumps({"setting": key, **row}) + "\n")
            log.flush()
    rmse, ll = np.mean([r["rmse"] for r in rows]), np.mean([r["test_ll"] for r in rows])
    print(f"{data.name} {args.method} K={args.householder} protocol={args.protocol} {setting}: "
          f"held-out RMSE {rmse:.3f}, log-likelihood {ll:.3f} (mean over {len(rows)} splits)", flush=True)
    return {**setting, "rmse": float(rmse), "log_likelihood": float(ll)}


def grid(args, data, done, log) -> None:
    """The 8-setting staged grid of the module docstring; prints every setting's score and the winner."""
    base = resolve(SupervisedConfig(dataset=args.dataset, method="s2vgd").validate(), data)["epochs"]["s2vgd"]
    scored = []

    def run(setting):
        scored.append(score_setting(args, data, setting, done, log))
        return scored[-1]

    def best():
        return max(scored, key=lambda r: r["log_likelihood"])

    for optimizer, lr in STAGE1_ADAM_ONLY if args.method == "badam" else STAGE1:
        run({"optimizer": optimizer, "lr": lr, "lr_schedule": "cosine", "epochs": base})
    run({**_setting(best()), "lr_schedule": "constant"})
    winner = _setting(best())
    for epochs in (base // 2, 2 * base):
        run({**winner, "epochs": epochs})
    print("\n| optimizer | lr | schedule | epochs | held-out RMSE | held-out log-lik. |\n|---|---|---|---|---|---|")
    for r in scored:
        print(f"| {r['optimizer']} | {r['lr']:g} | {r['lr_schedule']} | {r['epochs']} | {r['rmse']:.3f} | {r['log_likelihood']:.3f} |")
    print(f"\nwinner for REGRESSION_METHOD_DEFAULTS[{data.name!r}][{args.method!r}]: {_setting(best())}")


def prior_grid(args, data, done, log) -> None:
    """bbb: the 7-setting coordinate search over Blundell et al.'s mixture grid of the module docstring."""
    tuned = resolve(SupervisedConfig(dataset=args.dataset, method=args.method).validate(), data)
    own = tuned["method_settings"][args.method]
    base = {"optimizer": own["optimizer"], "lr": own["lr"], "lr_schedule": own["lr_schedule"],
            "epochs": tuned["epochs"][args.method]}
    grid_values = BBB_PRIOR_GRID
    scored = []

    def run(prior):
        scored.append({**score_setting(args, data, {**base, "posterior_options": prior}, done, log), "prior": prior})

    def best():
        return dict(max(scored, key=lambda r: r["log_likelihood"])["prior"])

    for pi in grid_values["pi"]:
        run({"pi": pi, "sigma1": grid_values["sigma1"][0], "sigma2": grid_values["sigma2"][0]})
    for sigma1 in grid_values["sigma1"][1:]:
        run({**best(), "sigma1": sigma1})
    for sigma2 in grid_values["sigma2"][1:]:
        run({**best(), "sigma2": sigma2})
    print("\n| π | −log σ1 | −log σ2 | held-out RMSE | held-out log-lik. |\n|---|---|---|---|---|")
    for r in scored:
        p = r["prior"]
        print(f"| {p['pi']:g} | {round(-math.log(p['sigma1'])) + 0} | {round(-math.log(p['sigma2']))} | {r['rmse']:.3f} | "
              f"{r['log_likelihood']:.3f} |")
    print(f"\nwinner for REGRESSION_METHOD_DEFAULTS[{data.name!r}][{args.method!r}]: "
          f"{{**{base}, 'posterior_options': {best()}}}")


def _setting(row: dict) -> dict:
    return {k: row[k] for k in ("optimizer", "lr", "lr_schedule", "epochs")}


def main() -> None:
    parser = Parser(prog="python bench/supervised_validation.py", description=__doc__)
    parser.add_argument("--dataset", default="boston")
    parser.add_argument("--data-dir", default="", help="folder of the public data files (see train.py supervised --help)")
    parser.add_argument("--method", default="s2vgd", choices=tuple(BNN_METHODS))
    parser.add_argument("--protocol", default="full", choices=("full", "checkpoint"))
    parser.add_argument("--num-splits", deprecated=("--splits",), dest="splits", type=int, default=5,
                        help="use the validation rows of splits 0..N-1")
    parser.add_argument("--epochs", type=int, default=0, help="0: the method's default on the data set")
    parser.add_argument("--lr", type=float, default=0.0, help="0: the method's default on the data set")
    parser.add_argument("--lr-schedule", default="auto", choices=("auto", "constant", "cosine"))
    parser.add_argument("--optimizer", default=SupervisedConfig.optimizer, choices=("auto", *sorted(OPTIMIZERS)))
    parser.add_argument("--householder", type=int, default=SupervisedConfig.householder, help="K, reflections per side (s2vgd)")
    parser.add_argument("--compile", type=int, default=1)
    parser.add_argument("--grid", action="store_true", help="score the 8-setting grid of the docstring instead of one setting")
    parser.add_argument("--prior-grid", action="store_true", help="bbb: score Blundell et al.'s mixture-prior grid (7 settings)")
    parser.add_argument("--results", type=Path, default=None, help="append every (setting, split) here; a rerun skips them")
    args = parser.parse_args()

    data = load_dataset(args.dataset, data_dir=args.data_dir or None)
    done = {}
    if args.results is not None and args.results.exists():
        for line in args.results.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                done[row.pop("setting"), row["split"]] = row
    log = None if args.results is None else args.results.open("a")
    try:
        if args.prior_grid:
            if args.method != "bbb":
                parser.error("--prior-grid is Bayes by Backprop's mixture prior: use it with --method bbb")
            prior_grid(args, data, done, log)
        elif args.grid:
            grid(args, data, done, log)
        else:
            score_setting(args, data, {"optimizer": args.optimizer, "lr": args.lr, "lr_schedule": args.lr_schedule,
                                       "epochs": args.epochs}, done, log)
    finally:
        if log is not None:
            log.close()


if __name__ == "__main__":
    main()
