"""Fitting the (split, method) pairs of a supervised run folder: in this process, or as jobs of
:mod:`svpg.grid` on local processes or Ray (``--backend``)."""

from __future__ import annotations

import dataclasses
import shutil
import time
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from svpg.allocator import keep_freed_memory
from svpg.grid import gpus_per_job
from svpg.runs import TensorBoardLogger, record_provenance, write_json
from svpg.supervised.config import make_estimator, split_data, split_seed
from svpg.supervised.runfolder import (
    MODELS_DIR,
    RUN_FOLDERS,
    SupervisedRun,
    built,
    checkpoint_file,
    curves_dir,
    prepare,
    read_finished,
    split_file,
)


def fit_split(run: SupervisedRun, method: str, k: int, progress: bool) -> dict:
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
    curves = curves_dir(run.run_dir, method, k)
    model_file = run.run_dir / MODELS_DIR / f"{method}_split{k:02d}.safetensors"
    checkpoint_path = checkpoint_file(run.run_dir, method, k)
    checkpoint = checkpoint_path if cfg.checkpoint_minutes > 0 else None  # --checkpoint-minutes 0: none used
    if checkpoint is None or not checkpoint.exists():
        # An interrupted attempt without a checkpoint left curves; the split runs again from epoch 1, so they go.
        shutil.rmtree(curves, ignore_errors=True)
    # killed between saving its model and its row: the model is fitted again
    model_file.unlink(missing_ok=True)
    log_curves = k == 0 or classification  # regression: split 0's curves only
    logger = None

    def callback(epoch: int, scalars: dict) -> None:
        nonlocal logger
        if logger is None:  # at the first epoch this attempt trains: curves an interrupted one wrote from there on go
            logger = TensorBoardLogger(curves, purge_step=epoch)
        logger.log({key: v for key, v in scalars.items() if key != "epoch"}, epoch)

    t0 = time.perf_counter()
    try:
        # fixed validation rows (MNIST's last 10,000 training images), else carved by --validation-fraction
        validation = {"X_val": data.x_val, "y_val": data.y_val} if data.y_val is not None else {}
        model.fit(
            x_tr,
            y_tr,
            callback=callback if log_curves else None,
            checkpoint=checkpoint,
            checkpoint_minutes=cfg.checkpoint_minutes,
            **validation,
        )
    finally:
        if logger is not None:
            logger.close()
    seconds = time.perf_counter() - t0 + model.resumed_seconds_  # an interrupted attempt's training counts
    row = {
        "split": k,
        "seed": seed,
        "n_train": len(y_tr),
        "n_test": len(y_te),
        **model.evaluate(x_te, y_te),
        "best_epoch": model.best_epoch_,
        "seconds": seconds,
        "seconds_per_epoch": float(np.mean([h["epoch_seconds"] for h in model.history_])),
    }
    if cfg.save_models:
        model.save(model_file)  # before the row: a saved row implies its model file
    write_json(split_file(run.run_dir, method, k), row)
    checkpoint_path.unlink(missing_ok=True)  # after the row: a finished split never starts again
    return row


def train(run: SupervisedRun) -> None:
    """Fit every (split, method) without a result; each is saved as soon as it finishes."""
    todo = run.todo()
    if todo:
        record_provenance(run.run_dir)
    bar = tqdm(total=len(todo), disable=not (run.cfg.progress and todo), unit="fit", dynamic_ncols=True)
    try:
        for k, method in todo:
            row = fit_split(run, method, k, progress=run.cfg.progress and run.data.task == "classification")
            run.finished[method][k] = row
            run.save_results()
            _show(bar, run, method, row)
    finally:
        bar.close()


def _show(bar: tqdm, run: SupervisedRun, method: str, row: dict | None) -> None:
    """Count a finished fit on the bar, with its test error (classification) or the method's mean so far."""
    bar.update(1)
    if row is None:  # not (yet) visible to this process: a network file system's cached folder listing
        return
    if run.data.task == "classification":
        bar.set_postfix(method=method, error=f"{row['error']:.4f}", ece=f"{row['ece']:.4f}")
    else:
        done = run.finished[method].values()
        bar.set_postfix(
            method=method,
            rmse=f"{np.mean([r['rmse'] for r in done]):.3f}",
            ll=f"{np.mean([r['test_ll'] for r in done]):.3f}",
        )


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
        cfg, recorded = RUN_FOLDERS.job_config(run_dir, job["cwd"], ("data_path", "data_dir"))
        if cfg.dataset.lower().endswith(".csv"):
            cfg = dataclasses.replace(cfg, dataset=str(Path(job["cwd"]) / cfg.dataset))
        data, settings = prepare(cfg)
        if built(data, settings)["data"] != recorded["data"]:
            raise ValueError(
                f"the data set {data.name!r} this job loaded differs from the one {run_dir} was started "
                f"with (a Ray node needs the same data files)"
            )
        fit_split(SupervisedRun(cfg, data, settings, run_dir, {}), method, k, progress=False)
    return {"seconds": time.perf_counter() - start}


def train_on_workers(run: SupervisedRun, backend: str, workers: int, gpus: float | None = None) -> None:
    """Fit every (split, method) without a result as jobs of :func:`svpg.grid.run_jobs`, one per pair;
    results.json follows the split files as they appear."""
    todo = run.todo()
    bar = tqdm(total=len(todo), disable=not (run.cfg.progress and todo), unit="fit", dynamic_ncols=True)

    def done(job: dict, result: dict) -> None:
        run.finished = read_finished(run.run_dir, run.methods)
        run.save_results()
        _show(bar, run, job["method"], run.finished[job["method"]].get(job["split"]))

    def left() -> list[tuple[int, str]]:
        run.finished = read_finished(run.run_dir, run.methods)
        return run.todo()

    try:
        RUN_FOLDERS.run_units(
            "svpg.supervised.training:fit_split_job",
            run.run_dir,
            [{"method": m, "split": k} for k, m in todo],
            backend=backend,
            workers=workers,
            gpus=gpus_per_job(gpus, run.cfg.device),
            on_done=done,
            left=left,
            what="(split, method)",
        )
    finally:
        bar.close()
