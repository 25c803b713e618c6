"""The run-folder layer of RL training: ``train.py``, ``--resume``, ``--num-seeds`` and the grids.

:class:`SVPGTrainer` is :class:`svpg.SVPG` (the algorithm, which touches no files) plus one run folder
per seed: created or refused, locked while written (:class:`svpg.runs.RunLock`), ``config.json``,
TensorBoard events, ``progress.csv`` and stamped checkpoints (:class:`~svpg.rl.callbacks.CheckpointCallback`),
and resume from the newest consistent checkpoint.
"""

from __future__ import annotations

import math
from dataclasses import asdict, replace
from pathlib import Path

from svpg.io import WriteError
from svpg.rl import checkpoints
from svpg.rl.algorithm import SVPG, NonFiniteError
from svpg.rl.callbacks import CheckpointCallback, StopOnRequest
from svpg.rl.checkpoints import PROGRESS_FILE, ProgressCSV
from svpg.rl.config import RESUMABLE_OPTIONS, SVPGConfig
from svpg.rl.logger import CHART_LAYOUT
from svpg.runs import (
    CONFIG_FILE,
    RunLock,
    check_writable,
    create_run_dir,
    read_json_object,
    refuse_options,
    run_name,
    write_json,
)
from svpg.runtime import StopRequest

__all__ = ["SVPGTrainer", "TrainingInterrupted", "NonFiniteError", "ProgressCSV", "CHART_LAYOUT", "PROGRESS_FILE"]


class TrainingInterrupted(KeyboardInterrupt):
    """SIGINT / SIGTERM stopped training after a checkpoint of the last finished iteration was saved."""

    def __init__(self, signal_name: str, exit_status: int, iteration: int):
        super().__init__(f"{signal_name} at iteration {iteration}")
        self.signal_name, self.exit_status, self.iteration = signal_name, exit_status, iteration


class SVPGTrainer:
    """An :class:`svpg.SVPG` model trained in run folders (one per seed) under ``config.log_dir``.

    >>> trainer = SVPGTrainer(SVPGConfig(iterations=5, progress=False))
    >>> policy = trainer.train()
    >>> trainer = SVPGTrainer.resume(trainer.run_dir, iterations=10)   # continue it later

    The algorithm is :attr:`model` (an :class:`svpg.SVPG`); :attr:`policy`, :attr:`iteration`,
    :attr:`seeds` and :meth:`seed_policy` are the trainer's too.

    :param run_dirs: existing run folders to continue in, one per seed (used by :meth:`resume`); by
        default new folders under ``log_dir`` are created, and an existing one is refused.
    :param seeds: the seeds (default ``seed, …, seed + num_seeds − 1``).
    """

    def __init__(
        self,
        config: SVPGConfig,
        *,
        run_dirs: list[Path] | None = None,
        seeds: list[int] | None = None,
        model: SVPG | None = None,
    ):
        if model is None:
            model = SVPG.from_config(config, seeds=seeds)  # validates the config
            config = model.config
        else:  # a loaded model: the run folder's config, with the options that may change on resume
            config = config.validate()
        self.config = cfg = config
        self.model = model
        spu = self.model.steps_per_update
        self.iterations = math.ceil(cfg.total_steps / spu) if cfg.total_steps else cfg.iterations
        self.resumed = False
        self.resumed_from: list[Path] = []  # the checkpoints a resumed run continues from
        self.notes: list[str] = []  # what resuming found and did, for the user
        self.locks: list[RunLock] = []
        if run_dirs is None:  # last, so that bad input creates no folder
            run_dirs = self._create_run_dirs()
        self.run_dirs = [Path(p) for p in run_dirs]

    def _create_run_dirs(self) -> list[Path]:
        cfg = self.config
        names = [cfg.run_name or run_name(cfg.env_id.rpartition(":")[2], cfg.method, seed) for seed in self.model.seeds]
        if len(self.model.seeds) > 1:
            names = [f"{name}__seed{seed}" if cfg.run_name else name for name, seed in zip(names, self.model.seeds)]
        for name in names:  # refuse before creating any
            path = Path(cfg.log_dir) / name
            if path.exists() and (not path.is_dir() or any(path.iterdir())):
                create_run_dir(cfg.log_dir, name)  # raises the one-line error
        return [
            create_run_dir(cfg.log_dir, name, config=asdict(cfg.for_seed(seed)))
            for name, seed in zip(names, self.model.seeds)
        ]

    @property
    def run_dir(self) -> Path:
        """The run folder of a single-seed trainer (a seed-batched one has :attr:`run_dirs`)."""
        if len(self.run_dirs) != 1:
            raise AttributeError(f"this trainer runs {len(self.run_dirs)} seeds: use run_dirs")
        return self.run_dirs[0]

    @property
    def finished(self) -> bool:
        return self.model.iteration >= self.iterations

    @property
    def iteration(self) -> int:
        """The model's iteration (SVGD updates so far)."""
        return self.model.iteration

    @property
    def seeds(self) -> list[int]:
        return self.model.seeds

    @property
    def policy(self):
        """All S·M particles (:meth:`seed_policy` gives one seed's)."""
        return self.model.policy

    def seed_policy(self, k: int = 0):
        """Seed k's M particles, acting with its best one (:meth:`svpg.SVPG.seed_policy`)."""
        return self.model.seed_policy(k)

    def lock(self) -> None:
        """Take every run folder's lock (a ValueError naming the holder if another process has one)."""
        try:
            for run_dir in self.run_dirs:
                if not any(lock.path.parent == run_dir for lock in self.locks):
                    self.locks.append(RunLock(run_dir).acquire())
        except ValueError:
            self.unlock()
            raise

    def unlock(self) -> None:
        for lock in self.locks:
            lock.release()
        self.locks = []

    def close(self) -> None:
        """Close the model's environments (:meth:`svpg.SVPG.close`); ``train.py`` does at the end of a run."""
        self.model.close()

    def __enter__(self) -> SVPGTrainer:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- the loop ----------------------------------------------------------------------------
    def train(self, callback=None):
        """Train until ``self.iterations``; checkpoints every ``checkpoint_every`` iterations and at the end.

        :param callback: SB3-style callbacks (:mod:`svpg.rl.callbacks`) run after the run folder's own.

        SIGINT / SIGTERM finish the current iteration, save a checkpoint and raise
        :class:`TrainingInterrupted`; a second signal stops at once without saving (the last
        checkpoint stays consistent). A non-finite θ raises :class:`NonFiniteError` without saving; any
        other exception (a callback's, say) saves the last finished iteration first.
        Returns the policy of all S·M particles (:meth:`seed_policy` gives one seed's).
        """
        cfg, model = self.config, self.model
        self.lock()
        checkpoint = CheckpointCallback(cfg.checkpoint_every, self.run_dirs, keep_last=cfg.keep_checkpoints)
        checkpoint.locks = self.locks
        try:
            for run_dir, seed in zip(self.run_dirs, model.seeds):
                write_json(run_dir / CONFIG_FILE, asdict(cfg.for_seed(seed)))  # a resumed run may have been extended
            # the run folders get the TensorBoard events; a resumed run drops those logged after its checkpoint
            model.logger.log_to(
                self.run_dirs, purge_step=model.iteration * model.steps_per_update + 1 if self.resumed else None
            )
            remaining = (self.iterations - model.iteration) * model.steps_per_update
            with StopRequest() as stop:
                if remaining > 0:
                    try:
                        model.learn(
                            remaining,
                            callback=[checkpoint, StopOnRequest(stop), *_as_list(callback)],
                            reset_num_timesteps=model.iteration == 0,
                            progress_bar=cfg.progress,
                        )
                    except (NonFiniteError, WriteError):  # nothing more to save / saving is what failed
                        raise
                    except Exception:
                        if (
                            checkpoint.progress
                            and checkpoint.saved != model.iteration
                            and all(rows.rows == model.iteration for rows in checkpoint.progress)
                        ):
                            checkpoint.save()  # the iteration finished: resume continues after it
                        raise
                if stop.requested and not self.finished:
                    raise TrainingInterrupted(stop.requested, stop.exit_status, model.iteration)
        finally:
            checkpoint.close()
            self.unlock()
        if len(model.seeds) == 1:
            model.set_best_particles()
        return model.policy

    def best_particles(self) -> list[int]:
        """Per seed, the particle (0…M−1) with the highest return in the latest iteration."""
        return self.model.last_returns.view(len(self.model.seeds), -1).argmax(-1).tolist()

    # -- resume ------------------------------------------------------------------------------
    @classmethod
    def resume(cls, run_dirs: str | Path | list, checkpoint: str | int | None = None, **overrides) -> SVPGTrainer:
        """Continue the run in ``run_dirs`` from its newest consistent checkpoint (or ``checkpoint``).

        :param run_dirs: a run folder, or several runs of one configuration that differ only in their
            seed, resumed as one seed-batched computation from the newest checkpoint all of them have.
        :param checkpoint: ``iter_000040``, ``40`` or a checkpoint path: resume from that one; later
            checkpoints are moved to ``checkpoints/discarded_after_iter_000040/``, never deleted.
        :param overrides: only :data:`~svpg.rl.config.RESUMABLE_OPTIONS` (``iterations``,
            ``total_steps``, ``eval_episodes``, ``progress``, ``threads``, ``device``,
            ``checkpoint_every``, ``keep_checkpoints``); anything else would make the run a different
            one and is refused.
        """
        from svpg.cli import dataclass_from_dict

        run_dirs = [Path(run_dirs)] if isinstance(run_dirs, (str, Path)) else [Path(p) for p in run_dirs]
        refuse_options(run_dirs[0], set(overrides), RESUMABLE_OPTIONS)
        configs = []
        for run_dir in run_dirs:
            if not (run_dir / CONFIG_FILE).exists():
                raise ValueError(
                    f"cannot resume {run_dir}: it has no {CONFIG_FILE} (pass a run folder, runs/<run-name>)"
                )
            check_writable(run_dir)
            saved = read_json_object(run_dir / CONFIG_FILE, "run config")
            configs.append(dataclass_from_dict(SVPGConfig, saved, f"run config {run_dir / CONFIG_FILE}"))
        config = configs[0]
        for run_dir, other in zip(run_dirs[1:], configs[1:]):
            if replace(other, seed=config.seed, run_name=config.run_name) != config:
                raise ValueError(
                    f"{run_dir} and {run_dirs[0]} are runs of different configurations: resume them separately"
                )
        seeds = [c.seed for c in configs]
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"the run folders repeat a seed ({seeds}): pass each seed's folder once")
        if "iterations" in overrides and "total_steps" not in overrides:
            overrides["total_steps"] = 0  # a typed --iterations redefines the run's length
        config = replace(config, **overrides)
        locks = []
        try:
            for run_dir in run_dirs:  # before anything in the folders is moved
                locks.append(RunLock(run_dir).acquire())
            wanted = None if checkpoint is None else checkpoints.parse_checkpoint(str(checkpoint))
            notes: list[str] = []
            points = checkpoints.resume_points(run_dirs, wanted, notes)
            start = points[0].iteration if points else 0
            for run_dir in run_dirs:  # incomplete checkpoints, or later ones when --from chose an earlier one
                prefix = f"{run_dir}: " if len(run_dirs) > 1 else ""
                notes += [prefix + note for note in checkpoints.prepare_run_dir(run_dir, start)]
            if points:
                model = SVPG.load_seeds([p.path for p in points], device=config.device, threads=config.threads)
                trainer = cls(replace(config, env_id=model.config.env_id), run_dirs=run_dirs, seeds=seeds, model=model)
                if trainer.iterations < start:
                    raise ValueError(
                        f"{run_dirs[0]} is at iteration {start}; --iterations {trainer.iterations} would "
                        f"not extend it (give more, or --from an earlier checkpoint)"
                    )
                for run_dir, point in zip(run_dirs, points):
                    if checkpoints.refresh_model(run_dir, point):
                        notes.append(f"{run_dir / 'model.safetensors'} now holds {point.path.name}")
                trainer.resumed_from = [p.path for p in points]
            else:
                trainer = cls(config, run_dirs=run_dirs, seeds=seeds)
                notes.append("no complete checkpoint yet: starting from iteration 0")
        except BaseException:
            for lock in locks:
                lock.release()
            raise
        trainer.locks = locks
        trainer.resumed = True
        trainer.notes = notes
        return trainer


def _as_list(callback) -> list:
    if callback is None:
        return []
    return list(callback) if isinstance(callback, (list, tuple)) else [callback]
