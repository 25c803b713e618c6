"""``python train.py supervised``: Bayesian neural networks on repeated train/test splits, a Markdown table out.

    python train.py supervised --dataset boston --method s2vgd,svgd --num-splits 20
    python train.py supervised --dataset boston --method s2vgd,svgd,bbb,vmg,kflow-linear,kflow-diag,badam,map
    python train.py supervised --dataset boston --protocol standard      # the published tables' 20 splits
    python train.py supervised --dataset concrete --method s2vgd --householder 2
    python train.py supervised --dataset csv --data-path my.csv --target price
    python train.py supervised --dataset fashion-mnist --method s2vgd,svgd,map --epochs 20
    python train.py supervised --resume runs/<run-name>              # continue an interrupted run
    python train.py supervised --resume runs/<run-name> --num-splits 30  # extend it to 30 splits

Regression sets are split 20 times at random 90/10 (split k is the same for every method and every
--num-splits ≥ k), or, with --protocol standard, into the 20 fixed splits of the PBP, dropout, SVGD and
S²VGD tables (Boston, Concrete); classification sets with an official test set (Fashion-MNIST) use it, and --num-splits then
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
Ctrl-C or SIGTERM keeps the finished splits and the split in progress as of its last checkpoint
(checkpoints/<method>_split<k>.pt, saved every --checkpoint-minutes of its training); --resume continues
it from there, to the same result as an uninterrupted run, and runs the rest.
With --resume only --num-splits, --progress, --threads, --device, --compile, --data-dir and
--checkpoint-minutes may be given (and --backend, --jobs).

--backend local|ray fits the (split, method) pairs at once, one job each (svpg.grid), on --jobs local
processes or as Ray Tune trials; every job loads the data and builds its estimator from config.json and
saves its split file itself, so the results are those of the default in-process loop, bit for bit.
"""

# This module parses the command line and dispatches: the options are svpg.supervised.config, the run
# folder svpg.supervised.runfolder, the fits svpg.supervised.training and the table svpg.supervised.tables.
from __future__ import annotations

import contextlib
import sys

from svpg.allocator import keep_freed_memory
from svpg.cli import Parser, add_dataclass_arguments, dataclass_from_args, explicit_options
from svpg.grid import add_backend_arguments
from svpg.runs import Writer
from svpg.runtime import StopRequest, flush_denormals

# the names this module had before it was split into modules with one job each, still importable from here
from svpg.supervised.config import (  # noqa: F401
    CLASSIFICATION_DEFAULTS,
    CLASSIFICATION_EPOCHS,
    LARGE_REGRESSION_DEFAULTS,
    MID_REGRESSION_DEFAULTS,
    REGRESSION_DEFAULTS,
    REGRESSION_METHOD_DEFAULTS,
    VARIATIONAL_SAMPLES,
    SupervisedConfig,
    make_estimator,
    posterior_options_for,
    resolve,
    split_data,
    split_seed,
)
from svpg.supervised.models import BNN_METHODS
from svpg.supervised.runfolder import (  # noqa: F401
    BUILT,
    OPTION_NAMES,
    RESUME_OPTIONS,
    RUN_FOLDERS,
    TABLE_FILE,
    load_config,
    new_run,
    read_finished,
    resumed_run,
    split_file,
    write_report,
)
from svpg.supervised.tables import format_table, method_label  # noqa: F401
from svpg.supervised.training import fit_split, fit_split_job, train, train_on_workers  # noqa: F401

CONFIG_FILE = "config.json"
RESUME_HINT = RUN_FOLDERS.resume_hint


def build_parser() -> Parser:
    parser = Parser(prog="train.py supervised", description=__doc__, listed={"methods": BNN_METHODS})
    parser.add_argument(
        "--resume",
        metavar="RUN_DIR",
        default=None,
        help="continue the run in RUN_DIR: run its splits that have no result yet (with --num-splits: extend it); "
        "only --num-splits, --progress, --threads, --device, --compile, --data-dir and --checkpoint-minutes "
        "may be given",
    )
    add_backend_arguments(parser, "(split, method) fits", shared="the run folder and the data")
    add_dataclass_arguments(parser, SupervisedConfig, renamed=OPTION_NAMES)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    keep_freed_memory()
    run = None
    # at once, not at a safe point: the split in progress is discarded anyway, and one epoch can take minutes
    with StopRequest(immediate=True) as stop, contextlib.ExitStack() as held:
        # before any torch work, so that the intra-op threads (started later) inherit it
        held.enter_context(flush_denormals())
        try:
            writer = held.enter_context(Writer(args.resume))  # one writer per run folder, before a resumed one is read
            run = (
                resumed_run(args.resume, explicit_options(parser, argv), vars(args))
                if args.resume
                else new_run(dataclass_from_args(SupervisedConfig, args))
            )
            writer.hold(run.run_dir)
            todo = run.todo()
            print(f"{run.data}\nrun folder: {run.run_dir}\nsettings: {run.settings}", flush=True)
            if args.resume:
                print(
                    f"resuming: {run.count()} finished; "
                    + (f"running the other {len(todo)}" if todo else "nothing to do (rewriting results.md)"),
                    flush=True,
                )
            if args.backend:
                train_on_workers(run, args.backend, args.jobs, args.gpus_per_job)
            else:
                train(run)
            table = write_report(run)
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
                print(
                    f"interrupted: {run.count(saved)} finished and saved; continue with: {RESUME_HINT} {run.run_dir}",
                    file=sys.stderr,
                )
            return stop.exit_status or 130
    print("\n" + table)
    print(f"written to {run.run_dir / TABLE_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
