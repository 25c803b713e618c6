"""What each front end's Ray trials declare: ``--gpus-per-job``, by default one GPU per trial for a CUDA
device (Ray hides every GPU from a trial that declares none), none for the CPU. No Ray needed: the grid
runner is replaced by one that records its arguments."""
from __future__ import annotations

import pytest

from svpg import grid
from svpg.bandits import cli as bandit_cli
from svpg.studies import ablation
from svpg.studies import experiments as harness
from svpg.supervised import cli as supervised_cli


def test_a_cuda_device_declares_one_gpu_per_trial_unless_told_otherwise():
    assert grid.gpus_per_job(None, "cuda") == grid.gpus_per_job(None, "cuda:1") == 1.0
    assert grid.gpus_per_job(None, "cpu") == 0.0
    assert grid.gpus_per_job(0.5, "cuda") == 0.5 and grid.gpus_per_job(0.0, "cuda") == 0.0


@pytest.mark.parametrize("cuda", [True, False])
def test_auto_declares_a_gpu_where_the_head_sees_cuda_and_resolves_to_it(monkeypatch, cuda):
    import torch

    import svpg
    from svpg.runtime import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    assert grid.gpus_per_job(None, "auto") == (1.0 if cuda else 0.0)
    assert resolve_device("auto") == torch.device("cuda" if cuda else "cpu")
    if not cuda:  # SB3's device="auto" on a machine without CUDA trains on the CPU
        assert svpg.SVPG("CartPole-v1", device="auto", num_particles=2, verbose=0).device == torch.device("cpu")


@pytest.fixture
def recorded(monkeypatch):
    """Replace the grid runner of every front end; it records its keyword arguments and stops the run."""
    seen = {}

    def run_jobs(fn, jobs, **kwargs):
        seen.update(kwargs, jobs=len(jobs))
        raise ValueError("recorded")

    for module in (harness, grid):  # the bandit and supervised run folders call svpg.grid.run_jobs
        monkeypatch.setattr(module, "run_jobs", run_jobs)
    return seen


RL = ["--task", "balance", "--iterations", "1", "--samples-per-particle", "200", "--num-particles", "2",
      "--estimators", "reinforce", "--seeds", "1", "--backend", "ray"]


@pytest.mark.parametrize("extra, gpus", [([], 0.0), (["--gpus-per-job", "0.5"], 0.5)])
def test_rl_grids_declare_the_gpus_asked_for(recorded, tmp_path, extra, gpus):
    assert harness.main([*RL, "--methods", "svgd", "--out", str(tmp_path / "grid"), *extra]) == 2
    assert recorded["gpus_per_job"] == gpus and recorded["backend"] == "ray"
    recorded.clear()
    assert ablation.main([*RL, "--cells", "svgd", "--out", str(tmp_path / "ablation"), *extra]) == 2
    assert recorded["gpus_per_job"] == gpus and recorded["jobs"] == 1


def test_bandit_and_supervised_runs_declare_the_gpus_asked_for(recorded, tmp_path, csv_file):
    bandit = ["--problem", "wheel", "--rounds", "20", "--agents", "uniform", "--seeds", "1", "--progress", "false",
              "--log-dir", str(tmp_path), "--backend", "ray", "--gpus-per-job", "0.25"]
    assert bandit_cli.main([*bandit, "--run-name", "bandit"]) == 2
    assert recorded["gpus_per_job"] == 0.25
    recorded.clear()
    supervised = ["--dataset", "csv", "--data-path", str(csv_file), "--target", "price", "--method", "map",
                  "--num-splits", "1", "--epochs", "2", "--log-dir", str(tmp_path), "--run-name", "supervised",
                  "--progress", "false", "--backend", "ray"]
    assert supervised_cli.main(supervised) == 2
    assert recorded["gpus_per_job"] == 0.0
    # a driver option, not part of the run: allowed on resume
    assert supervised_cli.main(["--resume", str(tmp_path / "supervised"), "--backend", "ray", "--gpus-per-job", "1"]) == 2
    assert recorded["gpus_per_job"] == 1.0


def test_a_negative_gpu_count_is_refused(capsys, tmp_path):
    with pytest.raises(SystemExit) as stop:
        harness.main([*RL, "--out", str(tmp_path), "--gpus-per-job", "-1"])
    assert stop.value.code == 2
    assert "argument --gpus-per-job: must be ≥ 0, got -1" in capsys.readouterr().err


@pytest.mark.parametrize("stop, status", [(KeyboardInterrupt(), 130), (SystemExit(143), 143)])
def test_an_interrupted_grid_says_how_to_resume_in_one_line(monkeypatch, capsys, tmp_path, stop, status):
    """Ctrl-C, or SIGTERM (the driver's handler exits with 143) while the grid runs: one line and the
    signal's exit status, no traceback. The workers, signalled too, save a checkpoint and exit quietly."""
    def run_jobs(fn, jobs, **kwargs):
        raise stop

    monkeypatch.setattr(harness, "run_jobs", run_jobs)
    assert harness.main([*RL[:-2], "--methods", "svgd", "--out", str(tmp_path / "grid")]) == status
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("python -m svpg.studies.experiments: interrupted; every run keeps its last checkpoint, "
                       "and the same command resumes the grid")
    assert not any("Traceback" in line for line in err)


def record_pid(job: dict, report) -> dict:
    """A job function for :func:`svpg.grid.run_jobs`: the process it ran in."""
    import os

    return {"job": job["k"], "pid": os.getpid()}


def test_one_local_job_at_a_time_runs_in_this_process_in_order():
    import os

    done = []
    grid.run_jobs("tests.core.test_grid_resources:record_pid", [{"k": k} for k in range(3)], backend="local", workers=1,
                  on_done=lambda job, result: done.append((job["k"], result["job"], result["pid"])))
    assert done == [(0, 0, os.getpid()), (1, 1, os.getpid()), (2, 2, os.getpid())]
