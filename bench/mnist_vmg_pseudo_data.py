"""VMG's pseudo-data count on MNIST, scored on the validation images (the test images are never loaded).

Louizos & Welling (§4.2, https://arxiv.org/abs/1603.04733) tune the pseudo-data pairs per layer (the same
count in every layer, at most 150) on the last 10,000 official training images. This fits `train.py
supervised --dataset mnist --method vmg` as the CLI would (the same settings and streams; only the
pseudo-data count differs) on the 50,000 training images for each count given, and prints the
validation log-likelihood and error of the epoch the CLI would keep (the best by validation
log-likelihood) and of the last epoch.

    python bench/mnist_vmg_pseudo_data.py --pseudo-data 50 --results vmg-pseudo.jsonl
    python bench/mnist_vmg_pseudo_data.py --pseudo-data 10,50,150 --results vmg-pseudo.jsonl

Each count's row (its scores, the epochs trained, seconds, machine and commit) is appended to ``--results``
when its fit ends; docs/supervised.md's pseudo-data table is built from
bench/results/mnist_vmg_pseudo_data.jsonl. Each fit saves its state every 10 minutes in ``--work-dir``
(``P<count>.pt``), so an interrupted fit continues where it stopped; a count already in ``--results`` is not
fitted again. The fitted model is saved there too (``P<count>.safetensors``): only the count chosen here is
then scored on the test images (``BayesianClassifier.load(path).evaluate(...)``), as the CLI would score it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from svpg.cli import Parser, _parse_bool
from svpg.runs import describe_machine, source_commit
from svpg.supervised.cli import SupervisedConfig, make_estimator, split_seed
from svpg.supervised.runfolder import prepare


def main() -> None:
    parser = Parser(prog="python bench/mnist_vmg_pseudo_data.py", description=__doc__)
    parser.add_argument("--pseudo-data", default="10,50,150", help="comma-separated pseudo-data pairs per layer")
    parser.add_argument("--results", required=True, help="JSONL file the scores are appended to")
    parser.add_argument(
        "--work-dir",
        default="runs/mnist-vmg-pseudo-data",
        help="folder of the fits' checkpoints and fitted models (default: runs/mnist-vmg-pseudo-data)",
    )
    parser.add_argument("--epochs", type=int, default=0, help="training epochs (0: the CLI's 100)")
    parser.add_argument("--data-dir", default="", help="folder holding mnist/ (else $SVPG_DATA_DIR, the cache)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--compile", type=_parse_bool, default=False, help="torch.compile the steps, as the CLI's")
    args = parser.parse_args()
    counts = [int(p) for p in args.pseudo_data.split(",")]
    results, work = Path(args.results), Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    done = {json.loads(line)["pseudo_data"] for line in results.read_text().splitlines()} if results.exists() else set()
    cfg = SupervisedConfig(
        dataset="mnist",
        method="vmg",
        epochs=args.epochs,
        data_dir=args.data_dir,
        threads=args.threads,
        compile=args.compile,
        progress=False,
    )
    data, settings = prepare(cfg)  # the training and validation images only are used below
    for count in counts:
        if count in done:
            continue
        model = make_estimator(cfg, data, settings, "vmg", split_seed(cfg.seed, 0), progress=False)
        model.set_params(posterior_options={**model.posterior_options_(), "pseudo_data": count})
        checkpoint = work / f"P{count}.pt"
        start = time.perf_counter()
        model.fit(data.x, data.y, X_val=data.x_val, y_val=data.y_val, checkpoint=checkpoint)
        best = next(h for h in model.history_ if h["epoch"] == model.best_epoch_)
        last = model.history_[-1]
        row = {
            "pseudo_data": count,
            "best_epoch": model.best_epoch_,
            "val_log_likelihood": best["val_log_likelihood"],
            "val_error": best["val_error"],
            "last_val_log_likelihood": last["val_log_likelihood"],
            "last_val_error": last["val_error"],
            "epochs": last["epoch"],
            "seconds": time.perf_counter() - start + model.resumed_seconds_,
            "machine": describe_machine(),
            "commit": source_commit(),
        }
        model.save(work / f"P{count}.safetensors")  # the chosen count's test score
        results.parent.mkdir(parents=True, exist_ok=True)
        with results.open("a") as f:
            f.write(json.dumps(row) + "\n")
        checkpoint.unlink(missing_ok=True)
        print(
            f"pseudo-data {count}: validation LL {row['val_log_likelihood']:.4f}, error {row['val_error']:.4f} "
            f"at epoch {row['best_epoch']}; at the last epoch {row['last_val_log_likelihood']:.4f}, "
            f"{row['last_val_error']:.4f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
