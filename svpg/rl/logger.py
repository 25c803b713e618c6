"""What :meth:`svpg.SVPG.learn` reports, behind one object (``model.logger``), as SB3's ``Logger``:
lines printed with ``verbose`` ≥ 1, TensorBoard events (one writer per seed) and each iteration's row
of the progress files a :class:`~svpg.rl.callbacks.CheckpointCallback` keeps. Callbacks add values of
their own with SB3's ``self.logger.record(key, value)``.

TensorBoard events go to ``<tensorboard_log>/<tb_log_name>_<n>/`` (``seed<s>/`` below it per seed of a
seed-batched model; ``n`` counts on, or continues the newest folder with ``reset_num_timesteps=False``),
or to the folders the run-folder layer names with :meth:`Logger.log_to`.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

# TensorBoard custom-scalars layout: mean ± std over particles (Figure 4 of S²VGD).
CHART_LAYOUT = {
    "svpg": {
        "return over particles (mean ± std)": [
            "Margin",
            ["rollout/ep_rew_mean", "rollout/ep_rew_lower", "rollout/ep_rew_upper"],
        ],
        "return over particles (mean, max, min)": [
            "Multiline",
            ["rollout/ep_rew_mean", "rollout/ep_rew_max", "rollout/ep_rew_min"],
        ],
        "SVGD terms": ["Multiline", ["svgd/driving_norm", "svgd/repulsive_norm"]],
    }
}


class RowFile(Protocol):
    """Where one seed's iteration rows go (:class:`svpg.rl.checkpoints.ProgressCSV`)."""

    def append(self, row: dict) -> None: ...


class Logger:
    """The output of a model's ``learn``: printed lines, TensorBoard events and progress rows.

    :param verbose: 0 silent, 1 a line at the start of ``learn`` and every ``log_interval`` iterations.
    :param tensorboard_log: a folder for TensorBoard events (``<tb_log_name>_<n>/``); ``None`` writes
        none unless :meth:`log_to` names folders.
    """

    def __init__(self, verbose: int = 0, tensorboard_log: str | Path | None = None):
        self.verbose = int(verbose)
        self.tensorboard_log = tensorboard_log
        self.folders: list[Path] | None = None  # log_to's folders, one per seed
        self.purge_step: int | None = None
        self.writers: list = []  # svpg.runs.TensorBoardLogger, one per seed, while learn runs
        self.row_files: list[list[RowFile]] = []  # per write_rows_to call, one file per seed
        self.step = 0  # the environment steps of the latest iteration: where dump() writes by default
        # record / record_mean / dump go through an SB3 Logger: by default one that writes to this logger's
        # TensorBoard writer (made when first needed: SB3 is imported then), after use() the user's
        self._sb3_logger = None
        self.custom = False

    @property
    def sb3_logger(self):
        """The SB3 ``Logger`` that :meth:`record` and :meth:`dump` go through."""
        if self._sb3_logger is None:
            from stable_baselines3.common.logger import Logger as SB3Logger

            self._sb3_logger = SB3Logger(folder=None, output_formats=[_current_writer(self)])
        return self._sb3_logger

    def use(self, logger) -> None:
        """Send every iteration's scalars, and what callbacks record, to SB3's ``logger`` (SB3's
        ``set_logger``): its formats (stdout, csv, json, tensorboard, log) replace svpg's TensorBoard events
        and printed line; progress rows still go where :meth:`write_rows_to` says."""
        if self._sb3_logger is not None:
            self.dump()
        self._sb3_logger, self.custom = logger, True

    # -- where to log ------------------------------------------------------------------------
    def log_to(self, folders: list[Path], purge_step: int | None = None) -> None:
        """Write TensorBoard events into ``folders`` (one per seed, in the model's seed order) instead of
        numbered folders under ``tensorboard_log``: a run folder's events.

        :param purge_step: the first step a resumed run has not checkpointed: the next ``learn`` drops
            the events an interrupted run wrote at or after it, so curves have no duplicated steps.
        """
        self.folders = [Path(p) for p in folders]
        self.purge_step = purge_step

    def write_rows_to(self, files: list[RowFile]) -> None:
        """Append every iteration's row (iteration, total steps, the scalars) to ``files``, one per seed,
        until the current ``learn`` ends."""
        self.row_files.append(list(files))

    def open(self, seeds: list[int], tb_log_name: str, reset_num_timesteps: bool) -> None:
        """Start the TensorBoard writers of a ``learn`` call (none without ``tensorboard_log`` or
        :meth:`log_to`)."""
        from svpg.runs import TensorBoardLogger

        dirs = self.folders
        if dirs is None and self.tensorboard_log is not None:
            root = Path(self.tensorboard_log)
            taken = [
                int(p.name.rsplit("_", 1)[1])
                for p in root.glob(f"{tb_log_name}_*")
                if p.name.rsplit("_", 1)[1].isdigit()
            ]
            n = max(taken, default=0) + (1 if reset_num_timesteps or not taken else 0)
            base = root / f"{tb_log_name}_{n}"
            dirs = [base] if len(seeds) == 1 else [base / f"seed{s}" for s in seeds]
        if dirs is None or self.custom:
            return
        self.writers = [TensorBoardLogger(d, CHART_LAYOUT, purge_step=self.purge_step) for d in dirs]
        self.purge_step = None

    def close(self) -> None:
        """End a ``learn`` call's output: write what callbacks recorded, flush and close the writers; rows
        go nowhere until told again."""
        if self._sb3_logger is not None:
            self.dump()
        for writer in self.writers:
            writer.close()
        self.writers = []
        self.row_files = []

    # -- what to log ---------------------------------------------------------------------------
    def info(self, text: str) -> None:
        """Print ``text`` with ``verbose`` ≥ 1."""
        if self.verbose >= 1:
            print(text)

    def record_iteration(
        self,
        scalars: list[dict[str, float]],
        particle_returns: torch.Tensor,
        step: int,
        iteration: int,
        total_steps: int,
    ) -> None:
        """One iteration's output: every seed's scalars and per-particle returns (S, M) to TensorBoard at
        ``step``, and its row to the progress files; with :meth:`use`, the first seed's scalars to that
        logger, dumped with what the callbacks record."""
        self.step = step
        if self.custom:
            for key, value in scalars[0].items():
                self.sb3_logger.record(key, value)
            self.sb3_logger.record("time/iterations", iteration)
            self.sb3_logger.record("time/total_timesteps", total_steps)
            self.sb3_logger.record("rollout/particle_returns", particle_returns[0].cpu(), exclude=NOT_TENSORBOARD)
        if self.writers:
            returns = particle_returns.cpu()
            for k, writer in enumerate(self.writers):
                writer.write(scalars[k], step)
                writer.writer.add_histogram("rollout/particle_returns", returns[k], step)
        for files in self.row_files:
            for rows, values in zip(files, scalars):
                rows.append({"iteration": iteration, "total_steps": total_steps, **values})

    def print_iteration(self, iteration: int, num_timesteps: int, scalars: dict[str, float], log_interval: int) -> None:
        """The iteration's line (of the first seed) every ``log_interval`` iterations, with ``verbose`` ≥ 1
        (not with :meth:`use`, whose formats print)."""
        if not self.custom and self.verbose >= 1 and log_interval and iteration % log_interval == 0:
            print(
                f"iteration {iteration}: {num_timesteps:,} steps, return mean {scalars['rollout/ep_rew_mean']:.1f} "
                f"max {scalars['rollout/ep_rew_max']:.1f}, {scalars['time/fps']:,.0f} steps/s"
            )

    @property
    def writer(self):
        """The TensorBoard writer of the first seed (``torch.utils.tensorboard.SummaryWriter``) while
        ``learn`` writes events; ``None`` otherwise."""
        return self.writers[0].writer if self.writers else None

    # -- SB3's Logger, for callbacks -------------------------------------------------------------
    def record(self, key: str, value: Any, exclude: str | tuple[str, ...] | None = None) -> None:
        """Log ``value`` under ``key`` at the next :meth:`dump` (SB3's ``Logger.record``; the last value
        recorded wins). A number goes to TensorBoard as a scalar, a string as text, a tensor or array as a
        histogram, SB3's ``Video``, ``Figure``, ``Image`` and ``HParam`` as SB3 writes them. ``learn``
        dumps after every iteration's callbacks, at the iteration's environment steps; recorded values go
        to TensorBoard (the first seed's writer), not to ``progress.csv`` (after :meth:`use`, to that
        logger's formats).

        :param exclude: SB3's output formats to leave out; ``"tensorboard"`` keeps the value in
            :attr:`name_to_value` only.
        """
        _check_value(key, value)
        self.sb3_logger.record(key, value, exclude)

    def record_mean(self, key: str, value: float | None, exclude: str | tuple[str, ...] | None = None) -> None:
        """As :meth:`record`, averaging the values recorded under ``key`` until the next :meth:`dump`
        (SB3's); ``None`` is skipped."""
        self.sb3_logger.record_mean(key, value, exclude)

    def dump(self, step: int | None = None) -> None:
        """Write the recorded values at ``step`` (default: the latest iteration's environment steps) and
        forget them (SB3's ``Logger.dump``); without TensorBoard (or :meth:`use`'s logger) they are dropped."""
        if self.sb3_logger.name_to_value:  # nothing recorded: no empty row in a csv format
            self.sb3_logger.dump(self.step if step is None else int(step))

    def end_iteration(self, iteration: int, log_interval: int) -> None:
        """After an iteration's callbacks: dump what was recorded, every iteration to svpg's TensorBoard
        events, every ``log_interval`` iterations to :meth:`use`'s logger (as SB3's ``learn`` dumps)."""
        if not self.custom or (log_interval and iteration % log_interval == 0):
            self.dump()

    @property
    def name_to_value(self) -> dict[str, Any]:
        """The values recorded since the last :meth:`dump` (SB3's)."""
        return self.sb3_logger.name_to_value

    def get_dir(self) -> str | None:
        """The first seed's TensorBoard folder while ``learn`` writes events, else ``None``; with :meth:`use`,
        that logger's folder (SB3's)."""
        if self.custom:
            return self.sb3_logger.get_dir()
        return self.writer.log_dir if self.writer is not None else None

    def __getattr__(self, name: str):
        # a callback written for svpg's former ``self.logger`` (the SummaryWriter) keeps working
        if name.startswith("add_") and hasattr(_summary_writer(), name):
            warnings.warn(
                f"self.logger.{name} is deprecated: self.logger is the model's Logger, as in SB3; use "
                f"self.logger.record(key, value), or self.logger.writer.{name} while TensorBoard is written",
                DeprecationWarning,
                stacklevel=2,
            )
            writer = self.writer
            return getattr(writer, name) if writer is not None else lambda *args, **kwargs: None
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


#: SB3's output formats other than TensorBoard: where a histogram of values has no place
NOT_TENSORBOARD = ("stdout", "log", "json", "csv")


def _current_writer(logger: Logger):
    """SB3's ``KVWriter`` onto the first seed's TensorBoard writer of ``logger``, while it has one."""
    from stable_baselines3.common.logger import KVWriter

    class CurrentWriter(KVWriter):
        def write(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0) -> None:
            writer = logger.writer
            if writer is None:
                return
            for key, value in key_values.items():
                if "tensorboard" not in (key_excluded.get(key) or ()):
                    _write_value(writer, key, value, step)
            writer.flush()

        def close(self) -> None:
            pass

    return CurrentWriter()


def _summary_writer():
    from torch.utils.tensorboard import SummaryWriter

    return SummaryWriter


def _write_value(writer, key: str, value: Any, step: int) -> None:
    """One recorded value, as SB3's ``TensorBoardOutputFormat`` writes it."""
    from stable_baselines3.common.logger import Figure, HParam, Image, Video

    if isinstance(value, str):
        writer.add_text(key, value, step)
    elif (
        isinstance(value, (torch.Tensor, np.ndarray))
        and (value.numel() if isinstance(value, torch.Tensor) else value.size) > 1
    ):
        writer.add_histogram(key, torch.as_tensor(value), step)
    elif isinstance(value, (bool, int, float, np.number, np.bool_, torch.Tensor, np.ndarray)):
        writer.add_scalar(key, float(value), step)
    elif isinstance(value, Video):
        writer.add_video(key, value.frames, step, value.fps)
    elif isinstance(value, Figure):
        writer.add_figure(key, value.figure, step, close=value.close)
    elif isinstance(value, Image):
        writer.add_image(key, value.image, step, dataformats=value.dataformats)
    elif isinstance(value, HParam):
        from torch.utils.tensorboard.summary import hparams

        for summary in hparams(value.hparam_dict, metric_dict=value.metric_dict):
            writer.file_writer.add_summary(summary)


def _check_value(key: str, value: Any) -> None:
    from stable_baselines3.common.logger import Figure, HParam, Image, Video

    if not isinstance(
        value, (str, bool, int, float, np.number, np.bool_, torch.Tensor, np.ndarray, Video, Figure, Image, HParam)
    ):
        raise TypeError(
            f"logger.record({key!r}, <{type(value).__name__}>): record a number, a string, a tensor or array, or "
            f"SB3's Video, Figure, Image or HParam"
        )
