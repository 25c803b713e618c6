"""``train.py bandit`` and ``train.py supervised`` with ``--backend local|ray``: one job per unit of the run
folder (a seed; a method on a split), and the numbers of the default in-process loop, bit for bit; and the
RL grid harness on Ray with the local backend's runs and numbers.

The Ray cases share this module so that the test process starts Ray once (svpg.grid keeps it running).
Each backend and each front end is checked by the default suite; the other pairs, which start another
round of worker processes, are marked slow."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import load_file

from svpg.bandits import cli as bandit_cli
from svpg.studies import experiments as harness
from svpg.supervised import cli as supervised_cli

pytest.importorskip("ray")

BANDIT = ["--problem", "wheel", "--delta", "0.7", "--agents", "s2vgd,linucb,eps-greedy-0.01", "--rounds", "200",
          "--num-particles", "3", "--train-every", "50", "--train-steps", "2", "--log-points", "10", "--num-seeds", "2",
          "--progress", "false"]
SEED_KEYS = ("agents", "actions", "regret", "expected_regret", "rewards", "optimal_reward_total", "hyperparameters")
TIMING = ("seconds", "seconds_per_epoch")


def bandit_run(log_dir: Path, name: str, *extra: str) -> Path:
    assert bandit_cli.main([*BANDIT, "--log-dir", str(log_dir), "--run-name", name, *extra]) == 0
    return log_dir / name


def assert_same_bandit_results(run: Path, reference: Path) -> None:
    """Every seed file's arrays, results.csv without its wall-clock column and curves.csv."""
    for seed in (0, 1):
        with np.load(run / "seeds" / f"seed_{seed}.npz") as a, np.load(reference / "seeds" / f"seed_{seed}.npz") as b:
            for key in SEED_KEYS:
                np.testing.assert_array_equal(a[key], b[key], err_msg=f"seed {seed}: {key}")
    per_seed = [pd.read_csv(d / "results.csv").drop(columns="seconds") for d in (run, reference)]
    pd.testing.assert_frame_equal(*per_seed, check_exact=True)
    assert (run / "curves.csv").read_bytes() == (reference / "curves.csv").read_bytes()
    assert (run / "s2vgd" / "seed_1").is_dir() and not (run / ".ray").exists()


@pytest.fixture(scope="module")
def bandit_reference(tmp_path_factory) -> Path:
    """The default in-process loop."""
    return bandit_run(tmp_path_factory.mktemp("bandit"), "sequential")


@pytest.mark.slow
@pytest.mark.parametrize("backend", [pytest.param("local", marks=pytest.mark.slow), "ray"])
def test_a_bandit_run_on_a_backend_gives_the_in_process_results(backend, bandit_reference, tmp_path):
    assert_same_bandit_results(bandit_run(tmp_path, backend, "--backend", backend), bandit_reference)


@pytest.mark.slow
def test_a_bandit_run_resumed_on_ray_plays_only_the_seeds_without_a_file(bandit_reference, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(bandit_reference, run)
    for path in [run / "seeds" / "seed_1.npz", run / "results.csv", run / "curves.csv"]:
        path.unlink()
    kept = (run / "seeds" / "seed_0.npz").stat().st_mtime_ns
    assert bandit_cli.main(["--resume", str(run), "--backend", "ray", "--jobs", "1"]) == 0
    assert (run / "seeds" / "seed_0.npz").stat().st_mtime_ns == kept
    assert_same_bandit_results(run, bandit_reference)


def supervised_run(csv_file: Path, log_dir: Path, name: str, *extra: str) -> Path:
    argv = ["--dataset", "csv", "--data-path", str(csv_file), "--target", "price", "--method", "s2vgd,map",
            "--num-splits", "2", "--epochs", "8", "--num-particles", "3", "--hidden", "8", "--batch-size", "24",
            "--log-dir", str(log_dir), "--run-name", name, "--progress", "false", *extra]
    assert supervised_cli.main(argv) == 0
    return log_dir / name


def assert_same_supervised_results(run: Path, reference: Path) -> None:
    """Every (method, split)'s row without its timings, and its particles."""
    def rows(folder: Path) -> dict:
        found = json.loads((folder / "results.json").read_text())["results"]
        return {m: [{k: v for k, v in row.items() if k not in TIMING} for row in r] for m, r in found.items()}

    assert rows(run) == rows(reference) and sorted(rows(run)) == ["map", "s2vgd"]
    for name in ("s2vgd_split00", "s2vgd_split01", "map_split00", "map_split01"):
        theta = [load_file(folder / "models" / f"{name}.safetensors")["theta"] for folder in (run, reference)]
        assert torch.equal(*theta), name
    assert (run / "s2vgd" / "split_00").is_dir() and not (run / ".ray").exists()


@pytest.fixture(scope="module")
def supervised_reference(csv_file, tmp_path_factory) -> Path:
    """The default in-process loop."""
    return supervised_run(csv_file, tmp_path_factory.mktemp("supervised"), "sequential")


@pytest.mark.parametrize("backend", [pytest.param(b, marks=pytest.mark.slow) for b in ("local", "ray")])
def test_a_supervised_run_on_a_backend_gives_the_in_process_results(backend, csv_file, supervised_reference, tmp_path):
    assert_same_supervised_results(supervised_run(csv_file, tmp_path, backend, "--backend", backend), supervised_reference)


def test_backend_options_are_not_part_of_the_run(csv_file, supervised_reference, tmp_path, capsys):
    """--backend and --jobs may be given on resume, are not written to config.json, and --jobs 0 is refused."""
    assert "backend" not in json.loads((supervised_reference / "config.json").read_text())
    assert supervised_cli.main(["--resume", str(supervised_reference), "--backend", "local", "--jobs", "1"]) == 0
    assert "nothing to do" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        bandit_cli.main([*BANDIT, "--log-dir", str(tmp_path), "--backend", "local", "--jobs", "0"])
    assert "argument --jobs: must be ≥ 1, got 0" in capsys.readouterr().err and not any(tmp_path.iterdir())


# -- the RL grid harness --------------------------------------------------------------------------
TINY = ["--task", "balance", "--iterations", "2", "--samples-per-particle", "500", "--num-particles", "2",
        "--methods", "s2vgd,independent", "--estimators", "reinforce", "--num-seeds", "2", "--jobs", "2"]


def table(out: Path) -> list[str]:
    return [line for line in (out / "results.md").read_text().splitlines() if line.startswith("|")]


@pytest.mark.slow
def test_the_ray_backend_gives_the_local_backends_runs_and_numbers(tmp_path):
    assert harness.main([*TINY, "--out", str(tmp_path / "local")]) == 0
    assert harness.main([*TINY, "--out", str(tmp_path / "ray"), "--backend", "ray"]) == 0
    assert table(tmp_path / "ray") == table(tmp_path / "local")
    runs = sorted(p.name for p in (tmp_path / "ray").glob("*__seed*"))
    assert runs == ["independent__reinforce__seed0", "independent__reinforce__seed1",
                    "s2vgd__reinforce__seed0", "s2vgd__reinforce__seed1"]
