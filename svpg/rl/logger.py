"""What :meth:`svpg.SVPG.learn` reports, behind one object (``model.logger``), as SB3's ``Logger``:
lines printed with ``verbose`` ≥ 1, TensorBoard events (one writer per seed) and each iteration's row
of the progress files a :class:`~svpg.rl.callbacks.CheckpointCallback` keeps.

TensorBoard events go to ``<tensorboard_log>/<tb_log_name>_<n>/`` (``seed<s>/`` below it per seed of a
seed-batched model; ``n`` counts on, or continues the newest folder with ``reset_num_timesteps=False``),
or to the folders the run-folder layer names with :meth:`Logger.log_to`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

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
        if dirs is None:
            return
        self.writers = [TensorBoardLogger(d, CHART_LAYOUT, purge_step=self.purge_step) for d in dirs]
        self.purge_step = None

    def close(self) -> None:
        """End a ``learn`` call's output: flush and close the writers; rows go nowhere until told again."""
        for writer in self.writers:
            writer.close()
        self.writers = []
        self.row_files = []

    # -- what to log ---------------------------------------------------------------------------
    def info(self, text: str) -> None:
        """Print ``text`` with ``verbose`` ≥ 1."""
        if self.verbose >= 1:
            print(text)

    def record(
        self,
        scalars: list[dict[str, float]],
        particle_returns: torch.Tensor,
        step: int,
        iteration: int,
        total_steps: int,
    ) -> None:
        """One iteration's output: every seed's scalars and per-particle returns (S, M) to TensorBoard at
        ``step``, and its row to the progress files."""
        if self.writers:
            returns = particle_returns.cpu()
            for k, writer in enumerate(self.writers):
                writer.write(scalars[k], step)
                writer.writer.add_histogram("rollout/particle_returns", returns[k], step)
        for files in self.row_files:
            for rows, values in zip(files, scalars):
                rows.append({"iteration": iteration, "total_steps": total_steps, **values})

    def dump(self, iteration: int, num_timesteps: int, scalars: dict[str, float], log_interval: int) -> None:
        """The iteration's line (of the first seed) every ``log_interval`` iterations, with ``verbose`` ≥ 1."""
        if self.verbose >= 1 and log_interval and iteration % log_interval == 0:
            print(
                f"iteration {iteration}: {num_timesteps:,} steps, return mean {scalars['rollout/ep_rew_mean']:.1f} "
                f"max {scalars['rollout/ep_rew_max']:.1f}, {scalars['time/fps']:,.0f} steps/s"
            )

    @property
    def writer(self):
        """The TensorBoard writer of the first seed (``torch.utils.tensorboard.SummaryWriter``) while
        ``learn`` writes events; ``None`` otherwise. Callbacks log through it."""
        return self.writers[0].writer if self.writers else None
