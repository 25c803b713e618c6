"""The run folder of ``train.py bandit``, built so that a run can be interrupted and resumed.

    runs/<run-name>/config.json            the options, and the problem and agents they build
    runs/<run-name>/seeds/seed_<s>.npz     every agent's actions, regrets and rewards on seed s's table
    runs/<run-name>/<agent>/seed_<s>/      TensorBoard: that agent's live curves on seed s
    runs/<run-name>/results.csv, …         the reports of all finished seeds (:func:`~svpg.bandits.report.save_results`)

The unit of work is one seed: all agents on that seed's table. Its file is written atomically once the
last agent has finished, so a seed either has a complete file or is played again from round 0 (its
live TensorBoard curves are deleted first, so no step is logged twice).
"""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from pathlib import Path

import numpy as np

from svpg.bandits.results import AgentRun, BanditResults
from svpg.io import atomic_write
from svpg.runs import unit_files

SEEDS_DIR = "seeds"
_SEED_FILE = re.compile(r"seed_(\d+)\.npz")


def seed_file(run_dir: Path, seed: int) -> Path:
    return Path(run_dir) / SEEDS_DIR / f"seed_{seed}.npz"


def finished_seeds(run_dir: Path) -> list[int]:
    """Seeds with a saved result, ascending."""
    return sorted(int(m.group(1)) for _, m in unit_files(run_dir, SEEDS_DIR, _SEED_FILE))


def clear_live_curves(run_dir: Path, seed: int, agents: list[str]) -> None:
    """Delete the TensorBoard curves an interrupted attempt at ``seed`` left behind."""
    for agent in agents:
        shutil.rmtree(Path(run_dir) / agent / f"seed_{seed}", ignore_errors=True)


def save_seed(run_dir: Path, runs: list[AgentRun]) -> Path:
    """Write one seed's runs (every agent, one table) atomically; returns the file."""
    (seed,) = {r.seed for r in runs}
    arrays = {
        "agents": np.array([r.agent for r in runs]),
        "actions": np.stack([r.actions for r in runs]),
        "regret": np.stack([r.regret for r in runs]),
        "expected_regret": np.stack([r.expected_regret for r in runs]),
        "rewards": np.stack([r.rewards for r in runs]),
        "optimal_reward_total": np.array([r.optimal_reward_total for r in runs]),
        "seconds": np.array([r.seconds for r in runs]),
        "hyperparameters": np.array(json.dumps([r.hyperparameters for r in runs])),
    }
    path = seed_file(run_dir, seed)

    def write(tmp):
        with open(tmp, "wb") as f:  # a file object: np.savez would append .npz to a path
            np.savez(f, **arrays)

    atomic_write(path, write)
    return path


def load_seed(run_dir: Path, seed: int, agents: list[str], rounds: int) -> list[AgentRun]:
    """One seed's runs, checked against the run's agents and rounds; a one-line ValueError otherwise."""
    path = seed_file(run_dir, seed)
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
        names = data["agents"].tolist()
        hyperparameters = json.loads(str(data["hyperparameters"]))
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
        raise ValueError(
            f"{path} is damaged or was not written by train.py bandit ({type(e).__name__}); "
            f"delete it and --resume to play seed {seed} again"
        ) from None
    if names != agents or data["actions"].shape[1] != rounds:
        raise ValueError(
            f"{path} holds {names} × {data['actions'].shape[1]} rounds, but this run plays {agents} × {rounds} "
            f"rounds; delete it and --resume to play seed {seed} again"
        )
    return [
        AgentRun(
            name,
            seed,
            data["actions"][i],
            data["regret"][i],
            data["expected_regret"][i],
            data["rewards"][i],
            float(data["optimal_reward_total"][i]),
            float(data["seconds"][i]),
            hyperparameters[i],
        )
        for i, name in enumerate(names)
    ]


def load_results(run_dir: Path, problem: dict, rounds: int, seeds: list[int], agents: list[str]) -> BanditResults:
    """The results of ``seeds`` (all finished) as one :class:`BanditResults`."""
    runs = [r for s in seeds for r in load_seed(run_dir, s, agents, rounds)]
    return BanditResults(problem, rounds, list(seeds), list(agents), runs)
