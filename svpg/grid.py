"""Run a grid of independent jobs on local worker processes or as Ray Tune trials, resumably.

A job is a JSON-like dict; ``fn`` (given as ``"module:function"`` so that any worker can import it)
runs one job to the end and returns a dict, resuming from whatever the job's own run folders already
hold. So a grid restarted after any crash redoes no finished work on either backend:

* ``local`` (default, no extra dependency): ``workers`` spawned processes.
* ``ray``: one Ray Tune trial per job with the declared CPU / GPU resources, on a local Ray instance
  or on the cluster named by ``RAY_ADDRESS`` (start one with ``ray start --head`` and join machines
  with ``ray start --address=<head>:6379``; the run folders must be on a file system every machine
  shares). The Tune experiment lives in ``<storage>/<name>`` and is restored with
  ``Tuner.restore`` when the driver is started again. ``pip install "svpg[ray]"``.

``fn(job, report)`` may call ``report(metrics)`` during the job (e.g. once per iteration): the Ray
backend forwards it to ``ray.tune.report``; the local backend ignores it.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import multiprocessing as mp
import os
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path

BACKENDS = ("local", "ray")


def add_backend_arguments(parser, units: str, shared: str = "the run folder", default: str | None = None) -> None:
    """``--backend`` and ``--jobs`` of a command that runs ``units`` as :func:`run_jobs` jobs.

    :param shared: what every Ray node must reach on a shared file system.
    :param default: the default backend; None runs the units one after another in the command's process.
    """
    sequential = "one after another in this process" if default is None else default
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default=default,
        help=f"run the {units} at once, one job each: on --jobs local processes, or as Ray Tune trials (a "
        f"local Ray, or the cluster in RAY_ADDRESS: {shared} must then be on a file system every Ray "
        f"node can reach) (default: {sequential})",
    )
    parser.add_argument(
        "--jobs",
        type=_positive_int,
        default=2,
        help=f"{units} run at once (default: 2; 1 runs them one after another in this process)",
    )
    parser.add_argument(
        "--gpus-per-job",
        type=_non_negative_float,
        default=None,
        help="GPUs each Ray trial declares, e.g. 0.5 to run two trials on each GPU; Ray hides the GPUs "
        "from a trial that declares none (default: 1 when --device is cuda, else 0; the local "
        "backend's processes share the devices without declaring them)",
    )


def _positive_int(text: str) -> int:
    import argparse

    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be ≥ 1, got {value}")
    return value


def _non_negative_float(text: str) -> float:
    import argparse

    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be ≥ 0, got {text}")
    return value


def gpus_per_job(requested: float | None, device: str) -> float:
    """What a Ray trial declares: ``requested`` (``--gpus-per-job``), else one GPU for a CUDA ``device``
    (``auto`` on a head that sees one too) and none otherwise."""
    if requested is not None:
        return requested
    if device == "auto":
        from svpg.runtime import resolve_device

        device = str(resolve_device(device))
    return 1.0 if str(device).startswith("cuda") else 0.0


def _resolve(fn: str) -> Callable:
    module, _, name = fn.partition(":")
    return getattr(importlib.import_module(module), name)


def _ignore(metrics: dict) -> None:
    pass


def _ignore_sigint() -> None:
    # Ctrl-C is the driver's to handle (it stops the pool); workers would only print tracebacks
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_local(args: tuple) -> tuple[dict, dict]:
    fn, job = args
    try:
        return job, _resolve(fn)(job, _ignore)
    except KeyboardInterrupt as e:
        # A signal stopped the job after it saved its work; the driver, signalled too, reports it. SystemExit
        # ends the worker quietly: a KeyboardInterrupt would print a traceback, and a result sent after the
        # driver stopped the pool would block the worker on the closed result queue.
        sys.exit(getattr(e, "exit_status", 130))


def _ray_trainable(config: dict) -> dict:
    import ray.tune

    return _resolve(config["fn"])(config["job"], ray.tune.report)


def run_jobs(
    fn: str,
    jobs: list[dict],
    *,
    backend: str = "local",
    workers: int = 2,
    storage: Path | None = None,
    name: str | None = None,
    cpus_per_job: float = 1,
    gpus_per_job: float = 0,
    on_done: Callable[[dict, dict], None] | None = None,
) -> None:
    """Run every job once; ``on_done(job, result)`` after each (in the driver).

    :param fn: ``"module:function"`` with ``function(job, report) -> dict``.
    :param workers: concurrent jobs (local worker processes, or this process alone for 1; for Ray, at most this many trials at a time on a
        local instance, which also gets this many CPUs).
    :param storage: where the Ray backend keeps its experiment state (required for ``ray``); the state
        is removed once every trial finished, and kept after a failure for ``Tuner.restore``.
    :param name: the Ray experiment; by default derived from the jobs, so that the same jobs restore
        the same experiment after a driver crash.
    """
    if backend not in BACKENDS:
        raise ValueError(f"--backend {backend!r}: choose from {', '.join(BACKENDS)}")
    if not jobs:
        return
    if backend == "local":
        if workers == 1:
            # as joblib's n_jobs=1: one job after another in this process, with no worker process to start; a
            # signal reaches the job itself, which saves its work and stops as it does in a worker
            for job in jobs:
                result = _resolve(fn)(job, _ignore)
                if on_done:
                    on_done(job, result)
            return
        with mp.get_context("spawn").Pool(max(1, workers), initializer=_ignore_sigint) as pool:
            for job, result in pool.imap_unordered(_run_local, [(fn, job) for job in jobs]):
                if on_done:
                    on_done(job, result)
            pool.close()
            pool.join()
        return
    if storage is None:
        raise ValueError("the ray backend needs a storage folder for its experiment state")
    name = name or "grid-" + hashlib.sha1(json.dumps(jobs, sort_keys=True).encode()).hexdigest()[:12]
    _run_ray(fn, jobs, workers, Path(storage), name, cpus_per_job, gpus_per_job, on_done)


def _run_ray(fn, jobs, workers, storage, name, cpus_per_job, gpus_per_job, on_done) -> None:
    address = os.environ.get("RAY_ADDRESS")
    # Ray sends this machine's token (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token) on its own only
    # with RAY_ADDRESS=auto; for an explicit head address it needs RAY_AUTH_MODE=token, or the head refuses the
    # driver (InvalidAuthToken). A RAY_AUTH_MODE of the user's own is kept.
    has_token = (
        os.environ.get("RAY_AUTH_TOKEN")
        or os.environ.get("RAY_AUTH_TOKEN_PATH")
        or (Path.home() / ".ray" / "auth_token").is_file()
    )
    token_mode = address and address != "auto" and "RAY_AUTH_MODE" not in os.environ and has_token
    if token_mode:
        os.environ["RAY_AUTH_MODE"] = "token"
    ray_imported = "ray" in sys.modules
    try:
        import ray
        from ray import tune
    except ImportError:
        raise ValueError('--backend ray needs Ray: pip install "svpg[ray]" (or use --backend local)') from None
    if token_mode and ray_imported:  # Ray reads RAY_AUTH_MODE on import: have it read it again, as ray.init does
        from ray._raylet import Config  # type: ignore[attr-defined]  # compiled module without stubs

        Config.initialize("")
    os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = "1"  # Ctrl-C stops the driver (and a restart restores), as locally
    if not ray.is_initialized():
        # a local instance gets `workers` CPUs; an existing cluster brings its own
        ray.init(
            address=address,
            num_cpus=None if address else workers,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
        )
    storage = storage.resolve()
    trainable = tune.with_resources(_ray_trainable, {"cpu": cpus_per_job, "gpu": gpus_per_job})
    path = storage / name
    if tune.Tuner.can_restore(str(path)):  # the driver crashed or was stopped: finished trials stay finished
        tuner = tune.Tuner.restore(str(path), trainable=trainable, resume_unfinished=True, resume_errored=True)
    else:
        tuner = tune.Tuner(
            trainable,
            param_space={"fn": fn, "job": tune.grid_search(jobs)},
            tune_config=tune.TuneConfig(max_concurrent_trials=None if address else workers, reuse_actors=False),
            run_config=tune.RunConfig(name=name, storage_path=str(storage), verbose=0),
        )
    results = tuner.fit()
    trials = [results[i] for i in range(len(results))]  # ResultGrid is indexable and sized
    failed = [r for r in trials if r.error or r.config is None]
    for result in trials:
        if result not in failed and on_done and result.config is not None:
            on_done(result.config["job"], result.metrics or {})
    if failed:
        first = next((r.error for r in failed if r.error), "not started")
        raise RuntimeError(f"{len(failed)} of {len(results)} Ray trials did not finish; the first: {first}")
    shutil.rmtree(path, ignore_errors=True)  # every trial finished: nothing left to restore
    if storage.is_dir() and not any(storage.iterdir()):
        storage.rmdir()
