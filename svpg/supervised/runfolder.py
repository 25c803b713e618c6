"""The run folder of ``train.py supervised``, built so that a run can be interrupted and resumed.

    runs/<run-name>/config.json                         the options, and what they resolve to on the data
    runs/<run-name>/splits/<method>_split<k>.json       the test metrics of one finished (method, split)
    runs/<run-name>/models/<method>_split<k>.safetensors   its particles (--save-models)
    runs/<run-name>/<method>/split_<k>/                 TensorBoard training curves
    runs/<run-name>/checkpoints/<method>_split<k>.pt    the state of an unfinished fit (--checkpoint-minutes)
    runs/<run-name>/results.json, results.md, summary/  every finished split's results (:func:`write_report`)

The unit of work is one method on one split; its split file is written atomically once it has
finished, so a (method, split) either has a result or is fitted again, from its checkpoint if it has
one, else from epoch 1.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from svpg.io import atomic_write
from svpg.runs import RunFolders, TensorBoardLogger, read_json_object, run_name, unit_files, write_json
from svpg.supervised.config import SupervisedConfig, make_estimator, resolve
from svpg.supervised.data import STANDARD_SPLIT_ROWS, UCI_SETS, Dataset, load_dataset, standard_splits, train_test_split
from svpg.supervised.models.methods import EARLIER_WEIGHT_PRIOR
from svpg.supervised.tables import format_table

# options that leave finished splits' results unchanged, so --resume accepts them (--num-splits adds splits;
# --device and --compile change float rounding, so splits run after such a change are not bit-identical)
RESUME_OPTIONS = ("splits", "progress", "threads", "device", "compile", "data_dir", "checkpoint_minutes")
RESULTS_FILE, TABLE_FILE, MODELS_DIR, SUMMARY_DIR = "results.json", "results.md", "models", "summary"
CHECKPOINTS_DIR = "checkpoints"
# the unit of work: one method on one split, its row of results.json saved as <method>_split<k>.json
SPLITS_DIR, _SPLIT_FILE = "splits", re.compile(r"(?P<method>[a-z0-9-]+)_split(?P<split>\d+)\.json")
# written to config.json beside the options and checked on --resume: what the options resolve to on the data
BUILT = ("resolved", "data")
OPTION_NAMES = {"splits": "--num-splits"}  # the split count: --splits still works, with a note
# a run folder from before --weight-prior trained every particle method under eq. 14
LEGACY_OPTIONS = {"weight_prior": EARLIER_WEIGHT_PRIOR}
RUN_FOLDERS = RunFolders("train.py supervised", SupervisedConfig, RESUME_OPTIONS, BUILT, OPTION_NAMES, LEGACY_OPTIONS)


def prepare(cfg: SupervisedConfig) -> tuple[Dataset, dict]:
    """The data and the resolved settings, with everything checked before a file is written."""
    cfg.validate()
    data = load_dataset(
        cfg.dataset, cfg.data_path or None, cfg.target or None, data_dir=cfg.data_dir or None, progress=cfg.progress
    )
    settings = resolve(cfg, data)
    if cfg.protocol == "standard":
        standard_splits(data.name)  # raises for a data set without them
        if len(data.y) != STANDARD_SPLIT_ROWS[data.name]:
            raise ValueError(
                f"{data.name} has {len(data.y)} rows, but its standard splits index "
                f"{STANDARD_SPLIT_ROWS[data.name]}; use --protocol random"
            )
        if settings["splits"] > UCI_SETS[data.name].splits:
            raise ValueError(
                f"--num-splits {settings['splits']}: {data.name} has {UCI_SETS[data.name].splits} standard splits"
            )
    elif data.y_test is None:
        train_test_split(len(data.y), 0, cfg.test_fraction, cfg.seed)  # raises if the set is too small for it
    for method in cfg.methods():
        make_estimator(cfg, data, settings, method, seed=cfg.seed, progress=False)._validate_params()
    return data, settings


def built(data: Dataset, settings: dict) -> dict:
    """What the options resolve to on the data, as config.json records it (JSON-normalised, so that it
    compares with a read-back). The data's digest catches a CSV file edited between a run and its resume."""
    digest = hashlib.sha256()
    for a in (data.x, data.y, data.x_test, data.y_test):
        if a is not None:
            digest.update(np.ascontiguousarray(a).tobytes())
    resolved = {k: v for k, v in settings.items() if k != "splits"}  # --resume may change the number of splits
    return json.loads(
        json.dumps({"resolved": resolved, "data": {"description": repr(data), "sha256": digest.hexdigest()}})
    )


def split_file(run_dir: Path, method: str, k: int) -> Path:
    return Path(run_dir) / SPLITS_DIR / f"{method}_split{k:02d}.json"


def checkpoint_file(run_dir: Path, method: str, k: int) -> Path:
    """The training state of an unfinished (method, split)."""
    return Path(run_dir) / CHECKPOINTS_DIR / f"{method}_split{k:02d}.pt"


def read_finished(run_dir: Path, methods: list[str]) -> dict[str, dict[int, dict]]:
    """The saved row of every finished (method, split), by method and split."""
    finished: dict[str, dict[int, dict]] = {m: {} for m in methods}
    for path, match in unit_files(run_dir, SPLITS_DIR, _SPLIT_FILE):
        if match["method"] not in finished:
            continue
        row = read_json_object(path, "split result")
        if row.get("split") != int(match["split"]):
            raise ValueError(
                f"{path} does not hold the row of split {int(match['split'])}; "
                f"delete it and --resume to run that split again"
            )
        finished[match["method"]][row["split"]] = row
    return finished


#: the validation figures of every evaluated epoch in a fit's TensorBoard curves (``<method>/split_<k>/``)
VALIDATION_TAGS = ("val_log_likelihood", "val_error")


def curves_dir(run_dir: Path, method: str, k: int) -> Path:
    """The TensorBoard curves of one (method, split): every classification fit, split 0 of a regression set."""
    return Path(run_dir) / method / f"split_{k:02d}"


def validation_curves(run_dir: Path, method: str, k: int) -> dict[str, list[list[float]]]:
    """``{tag: [[epoch, value], …]}`` of :data:`VALIDATION_TAGS` in the curves of one (method, split), in epoch
    order; a tag the curves lack (no validation rows, no curves) is left out."""
    folder = curves_dir(run_dir, method, k)
    if not folder.is_dir():
        return {}
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder), size_guidance={"scalars": 0})  # every point, not a sample of them
    # A resumed fit rewrites the epochs after its checkpoint; the reader drops the stale ones as it should, and
    # its warning about "a TensorFlow restart" would only puzzle whoever gathers the run.
    tb_logger = logging.getLogger("tensorboard")
    level = tb_logger.level
    tb_logger.setLevel(logging.ERROR)
    try:
        events.Reload()
    finally:
        tb_logger.setLevel(level)
    found = set(events.Tags().get("scalars", ()))
    return {
        tag: [[e.step, e.value] for e in sorted(events.Scalars(tag), key=lambda e: e.step)]
        for tag in VALIDATION_TAGS
        if tag in found
    }


@dataclass
class SupervisedRun:
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
        write_json(
            self.run_dir / RESULTS_FILE,
            {"dataset": self.data.name, "task": self.data.task, "settings": self.settings, "results": self.rows()},
        )


def new_run(cfg: SupervisedConfig) -> SupervisedRun:
    """Check everything, then create the run folder with its config.json."""
    data, settings = prepare(cfg)
    name = cfg.run_name or run_name("supervised", data.name, "-".join(cfg.methods()))
    run_dir = RUN_FOLDERS.create(cfg.log_dir, name, cfg, built(data, settings))
    return SupervisedRun(cfg, data, settings, run_dir, {m: {} for m in cfg.methods()})


def load_config(run_dir: Path) -> tuple[SupervisedConfig, dict]:
    """The options in a run folder's config.json, and what they resolved to when it was written."""
    return RUN_FOLDERS.load(run_dir)


def resumed_run(run_dir: Path, typed: set[str], values: dict) -> SupervisedRun:
    """The run in ``--resume``'s folder with the options typed on the command line (``typed``, their
    parsed ``values``) applied; checked before anything is written."""
    run_dir = Path(run_dir)
    cfg, recorded = RUN_FOLDERS.resume(run_dir, typed, values)
    data, settings = prepare(cfg)
    made = built(data, settings)
    RUN_FOLDERS.check_built(
        run_dir,
        recorded,
        made,
        lambda changed: (
            ("data set" if "data" in changed else "resolved settings") + " differ from what its options give now"
        ),
    )
    finished = read_finished(run_dir, cfg.methods())
    needed = 1 + max((k for rows in finished.values() for k in rows), default=-1)
    if needed > settings["splits"]:
        raise ValueError(
            f"--num-splits {settings['splits']} is fewer than the {needed} splits {run_dir} has (partly) finished; "
            f"pass --num-splits {needed} or more (finished results are never deleted)"
        )
    RUN_FOLDERS.continue_in(run_dir, cfg, made)  # a later --resume continues with these --num-splits
    return SupervisedRun(cfg, data, settings, run_dir, finished)


def write_report(run: SupervisedRun) -> str:
    """results.json, results.md and the TensorBoard summary of test metrics, rebuilt from the split files."""
    run.save_results()  # also after a process killed between a split file and results.json
    data, settings = run.data, run.settings
    kind = "run(s) on the official test set" if data.y_test is not None else f"{run.cfg.protocol} 90/10 splits"
    epochs = ", ".join(f"{n} ({m})" for m, n in settings["epochs"].items())
    title = (
        f"{data.name}: {settings['splits']} {kind}, M = {settings['num_particles']}, "
        f"hidden {','.join(map(str, settings['hidden']))}, epochs {epochs}"
    )
    rows = run.rows()
    table = format_table(rows, data.task, run.cfg, title)
    atomic_write(run.run_dir / TABLE_FILE, lambda tmp: Path(tmp).write_text(table))
    summary = run.run_dir / SUMMARY_DIR
    shutil.rmtree(summary, ignore_errors=True)  # one point per split, however often the run was resumed
    logger = TensorBoardLogger(summary)
    for method, method_rows in rows.items():
        for row in method_rows:
            logger.log(
                {f"{method}/test/{key}": row[key] for key in ("rmse", "test_ll", "error", "nll", "ece") if key in row},
                row["split"],
            )
    logger.text("results", table)
    logger.close()
    return table
