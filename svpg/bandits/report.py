"""Files and figures of a bandit comparison: CSV, Markdown, PNG, TensorBoard.

The metrics and tables themselves are in :mod:`svpg.bandits.results` (normalised regret as Riquelme
et al. 2018, https://arxiv.org/abs/1802.09127: uniform = 100 on the same pre-drawn table).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from svpg.bandits.results import BanditResults, markdown_table, per_seed_frame, summary_frame
from svpg.io import atomic_write
from svpg.runs import TensorBoardLogger
from svpg.stats import convention, mean_se_rows

CHART_LAYOUT = {
    "bandit": {
        "cumulative regret (mean ± s.e. over seeds)": [
            "Margin",
            ["regret/cumulative_mean", "regret/cumulative_lower", "regret/cumulative_upper"],
        ],
        "cumulative regret, every seed": ["Multiline", ["regret/cumulative"]],
    }
}


def log_rounds(rounds: int, points: int = 500) -> np.ndarray:
    """Rounds (1-based counts) at which curves are recorded: ~``points`` evenly spaced, always T."""
    points = max(1, min(int(points), rounds))
    return np.unique(np.linspace(rounds / points, rounds, points).round().astype(np.int64).clip(1, rounds))


def curves_frame(results: BanditResults, points: int = 500):
    """Cumulative regret (and pseudo-regret, reward) of every run at :func:`log_rounds` (long format)."""
    import pandas as pd

    frames = []
    for r in results.runs:
        idx = log_rounds(len(r.actions), points)
        frames.append(
            pd.DataFrame(
                {
                    "agent": r.agent,
                    "seed": r.seed,
                    "round": idx,
                    "cumulative_regret": r.cumulative_regret[idx - 1],
                    "cumulative_pseudo_regret": np.cumsum(r.expected_regret)[idx - 1],
                    "cumulative_reward": np.cumsum(r.rewards)[idx - 1],
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def plot_regret(results: BanditResults, path: str | Path, points: int = 500) -> Path:
    """PNG of cumulative regret against rounds, mean ± standard error over seeds, one line per agent."""
    title = f"{results.problem.get('name', 'bandit')}: cumulative regret ({convention('seeds', results.seeds)})"
    return plot_curves(curves_frame(results, points), path, title, agents=results.agents)


def plot_curves(curves, path: str | Path, title: str = "cumulative regret", agents: list[str] | None = None) -> Path:
    """PNG from a :func:`curves_frame` (or a ``curves.csv`` read back with pandas).

    Left: every agent. Right (when the uniform policy is there): the same without it, so that the
    learning agents, whose regret is orders of magnitude smaller, can be told apart.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    agents = agents or list(dict.fromkeys(curves["agent"]))
    panels = [agents]
    if "uniform" in agents and len(agents) > 1:
        panels.append([a for a in agents if a != "uniform"])
    fig, axes = plt.subplots(1, len(panels), figsize=(7.5 * len(panels), 4.5), dpi=110, squeeze=False)
    colors = {a: f"C{i % 10}" for i, a in enumerate(agents)}
    for ax, names in zip(axes[0], panels):
        for agent in names:
            d = curves[curves["agent"] == agent].pivot(index="round", columns="seed", values="cumulative_regret")
            mean, se = mean_se_rows(d.to_numpy(), axis=1)
            ax.plot(d.index, mean, label=agent, lw=1.6, color=colors[agent])
            ax.fill_between(d.index, mean - se, mean + se, color=colors[agent], alpha=0.18, lw=0)
        ax.set_xlabel("round")
        ax.set_ylabel("cumulative regret")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, ncol=2)
    axes[0][0].set_title(title, fontsize=10)
    if len(panels) > 1:
        axes[0][1].set_title("without the uniform policy", fontsize=10)
    fig.tight_layout()
    try:
        atomic_write(path, lambda tmp: fig.savefig(tmp, format="png"))
    finally:
        plt.close(fig)
    return path


def write_tensorboard_summary(results: BanditResults, run_dir: str | Path, points: int = 500) -> None:
    """Per agent, a run ``<agent>/mean`` with the mean and mean ± standard error of cumulative regret over seeds.

    Earlier summaries in ``run_dir`` are replaced, not appended to (a resumed run writes it again).
    """
    run_dir = Path(run_dir)
    idx = log_rounds(results.rounds, points)
    for old in run_dir.glob("events.out.tfevents.*"):  # the custom-chart layout of an earlier summary
        old.unlink()
    for agent in results.agents:
        mean, se = mean_se_rows(np.stack([r.cumulative_regret[idx - 1] for r in results.runs if r.agent == agent]))
        shutil.rmtree(run_dir / agent / "mean", ignore_errors=True)
        logger = TensorBoardLogger(run_dir / agent / "mean")
        for t, m, s in zip(idx.tolist(), mean.tolist(), se.tolist()):
            for tag, v in (
                ("regret/cumulative_mean", m),
                ("regret/cumulative_lower", m - s),
                ("regret/cumulative_upper", m + s),
            ):
                logger.writer.add_scalar(tag, v, t)
        logger.text("results", markdown_table(results))
        logger.close()
    layout = TensorBoardLogger(run_dir, layout=CHART_LAYOUT)
    layout.close()


def save_results(
    results: BanditResults, run_dir: str | Path, points: int = 500, tensorboard: bool = True
) -> dict[str, Path]:
    """Write ``results.csv`` (per seed), ``summary.csv``, ``curves.csv``, ``results.md``, ``regret.png``
    (and the TensorBoard mean curves) into ``run_dir``, replacing earlier ones; returns the paths.
    Every file is written atomically (:func:`svpg.io.atomic_write`)."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    paths = {
        "per_seed": run_dir / "results.csv",
        "summary": run_dir / "summary.csv",
        "curves": run_dir / "curves.csv",
        "markdown": run_dir / "results.md",
        "figure": run_dir / "regret.png",
    }
    for key, frame in (
        ("per_seed", per_seed_frame(results)),
        ("summary", summary_frame(results)),
        ("curves", curves_frame(results, points)),
    ):
        atomic_write(paths[key], lambda tmp, f=frame: f.to_csv(tmp, index=False))
    atomic_write(paths["markdown"], lambda tmp: Path(tmp).write_text(markdown_table(results)))
    plot_regret(results, paths["figure"], points)
    if tensorboard:
        write_tensorboard_summary(results, run_dir, points)
    return paths
