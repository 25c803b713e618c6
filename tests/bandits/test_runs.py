"""``train.py bandit`` run folders: never overwritten, resumable after any interruption, one-line errors."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import svpg.bandits.cli as cli
import svpg.bandits.runfolder as runfolder
from svpg.bandits.cli import main
from svpg.io import WriteError

ROOT = Path(__file__).resolve().parents[2]
SEEDS = 6
OPTIONS = ["--problem", "wheel", "--delta", "0.7", "--agents", "s2vgd,linucb", "--rounds", "120", "--num-particles", "3",
           "--train-every", "30", "--train-steps", "2", "--log-points", "10", "--progress", "false", "--num-seeds", str(SEEDS)]
RESULT_KEYS = ("agents", "actions", "regret", "expected_regret", "rewards", "optimal_reward_total", "hyperparameters")


def new_run(log_dir: Path, name: str, *extra: str) -> int:
    return main([*OPTIONS, "--log-dir", str(log_dir), "--run-name", name, *extra])


def seed_results(run_dir: Path) -> dict:
    """The bytes of everything the seed files hold except the wall-clock."""
    out = {}
    for path in sorted((run_dir / "seeds").glob("seed_*.npz")):
        with np.load(path) as z:
            out[path.name] = {k: z[k].tobytes() for k in RESULT_KEYS}
    return out


def assert_same_results(run_dir: Path, reference: Path) -> None:
    assert seed_results(run_dir) == seed_results(reference)
    per_seed = [pd.read_csv(d / "results.csv").drop(columns="seconds") for d in (run_dir, reference)]
    pd.testing.assert_frame_equal(*per_seed, check_exact=True)
    assert (run_dir / "curves.csv").read_bytes() == (reference / "curves.csv").read_bytes()


def assert_no_repeated_steps(folder: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(folder))
    acc.Reload()
    for tag in acc.Tags()["scalars"]:
        steps = [e.step for e in acc.Scalars(tag)]
        assert len(steps) == len(set(steps)), (folder, tag)


def snapshot(folder: Path) -> dict:
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file() and p.name != ".lock"}  # not the writer's lock


def one_line(text: str) -> str:
    assert text.count("\n") == 1 and "Traceback" not in text, text
    return text


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """A run that was never interrupted."""
    log_dir = tmp_path_factory.mktemp("reference")
    assert new_run(log_dir, "ref") == 0
    return log_dir / "ref"


@pytest.mark.skipif(torch.cuda.is_available(), reason="auto is the GPU here")
def test_device_auto_plays_on_the_cpu_without_cuda(reference, tmp_path):
    assert new_run(tmp_path, "auto", "--device", "auto") == 0
    assert_same_results(tmp_path / "auto", reference)


def test_an_existing_run_folder_is_refused_and_left_untouched(reference, capsys):
    before = snapshot(reference)
    capsys.readouterr()
    assert new_run(reference.parent, "ref", "--rounds", "50") == 2
    err = one_line(capsys.readouterr().err)
    assert f"run folder {reference} already exists" in err and f"--resume {reference}" in err
    assert snapshot(reference) == before


@pytest.mark.parametrize("sig, moment", [(signal.SIGINT, "between seeds"), (signal.SIGTERM, "within a seed")])
def test_an_interrupted_run_resumes_to_the_uninterrupted_results(sig, moment, reference, tmp_path, monkeypatch, capsys):
    if moment == "between seeds":
        save = cli.save_seed

        def hook(run_dir, runs):
            path = save(run_dir, runs)
            signal.raise_signal(sig)
            return path

        monkeypatch.setattr(cli, "save_seed", hook)
    else:
        call = cli._Monitor.__call__

        def hook(self, agent, seed, t, regret, info):
            if (agent, seed, t) == ("linucb", 1, 60):
                signal.raise_signal(sig)
            call(self, agent, seed, t, regret, info)

        monkeypatch.setattr(cli._Monitor, "__call__", hook)
    run_dir = tmp_path / "run"
    assert new_run(tmp_path, "run") == 128 + sig
    assert capsys.readouterr().err == (f"interrupted: 1 of {SEEDS} seeds finished and saved; "
                                       f"continue with: python train.py bandit --resume {run_dir}\n")
    assert runfolder.finished_seeds(run_dir) == [0] and not (run_dir / "results.csv").exists()
    monkeypatch.undo()
    assert main(["--resume", str(run_dir)]) == 0
    assert_same_results(run_dir, reference)
    for agent in ("s2vgd", "linucb"):
        assert_no_repeated_steps(run_dir / agent / "seed_1")


def start(cwd: Path, *argv: str) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, str(ROOT / "train.py"), "bandit", *argv], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(path: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.002)


@pytest.mark.slow  # real processes killed twice; the default suite interrupts runs in-process (above)
def test_ctrl_c_then_sigkill_leave_a_folder_that_resumes_to_the_uninterrupted_results(reference, tmp_path):
    run_dir = tmp_path / "runs" / "r"
    proc = start(tmp_path, *OPTIONS, "--log-dir", "runs", "--run-name", "r")
    wait_for(run_dir / "seeds" / "seed_0.npz", proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert re.fullmatch(rf"interrupted: [12] of {SEEDS} seeds finished and saved; "
                        r"continue with: python train\.py bandit --resume runs/r\n", one_line(err))

    proc = start(tmp_path, "--resume", "runs/r")
    wait_for(run_dir / "seeds" / "seed_2.npz", proc)
    proc.kill()  # SIGKILL: no handler runs
    proc.communicate(timeout=120)
    assert 3 <= len(runfolder.finished_seeds(run_dir)) < SEEDS

    assert main(["--resume", str(run_dir)]) == 0
    assert_same_results(run_dir, reference)
    assert not list(run_dir.rglob(".*.tmp"))
    for agent in ("s2vgd", "linucb"):
        assert_no_repeated_steps(run_dir / agent / "seed_3")


def test_resume_extends_a_run_with_more_seeds_and_refuses_fewer(reference, tmp_path, capsys):
    run_dir = tmp_path / "grow"
    assert new_run(tmp_path, "grow", "--num-seeds", "2") == 0
    assert main(["--resume", str(run_dir), "--num-seeds", str(SEEDS), "--threads", "1", "--device", "cpu",
                 "--log-points", "10", "--progress", "false"]) == 0
    assert_same_results(run_dir, reference)
    assert json.loads((run_dir / "config.json").read_text())["seeds"] == SEEDS
    capsys.readouterr()
    assert main(["--resume", str(run_dir), "--num-seeds", "3"]) == 2
    assert "drops seed(s) [3, 4, 5]" in one_line(capsys.readouterr().err)
    assert main(["--resume", str(run_dir)]) == 0
    assert "nothing to do" in capsys.readouterr().out


@pytest.mark.parametrize("argv, refused", [
    (["--rounds", "50"], "--rounds"),
    (["--agents", "linucb"], "--agents"),
    (["--seed", "3"], "--seed"),
    (["--delta", "0.7"], "--delta"),  # typed, even if equal to the run's value
    (["--problem=wheel", "--lr", "0.01"], "--lr, --problem"),
    (["--run-name", "other"], "--run-name"),
])
def test_options_that_would_change_finished_results_are_refused_on_resume(argv, refused, reference, capsys):
    before = snapshot(reference)
    capsys.readouterr()
    assert main(["--resume", str(reference), *argv]) == 2
    assert one_line(capsys.readouterr().err).startswith(f"train.py bandit: error: {refused} cannot be given with --resume")
    assert snapshot(reference) == before


def _edit(key, value):
    def edit(config: dict) -> dict:
        return {**config, key: value}
    return edit


@pytest.mark.parametrize("content, message", [
    ("not json {", "is not readable JSON"),
    ("[1, 2]", "must hold a JSON object"),
    (_edit("rounds", "many"), "'rounds' must be an integer"),
    (_edit("banana", 1), "unknown option(s) ['banana']"),
    (_edit("rounds", -5), "--rounds must be ≥ 1"),
    (_edit("delta", 0.5), "problem description differs"),
    (lambda c: {k: v for k, v in c.items() if k != "agent_names"}, "has no 'agent_names'"),
])
def test_a_bad_config_json_is_a_one_line_error_naming_the_file(content, message, reference, tmp_path, capsys):
    run_dir = tmp_path / "run"
    shutil.copytree(reference / "seeds", run_dir / "seeds")
    path = run_dir / "config.json"
    config = json.loads((reference / "config.json").read_text())
    path.write_text(content if isinstance(content, str) else json.dumps(content(config)))
    before = snapshot(run_dir)
    assert main(["--resume", str(run_dir)]) == 2
    err = one_line(capsys.readouterr().err)
    assert message in err and str(path) in err
    assert snapshot(run_dir) == before


@pytest.mark.parametrize("argv, message", [
    (["--device", "banana"], "--device 'banana' is not a torch device"),
    (["--device", "tpu"], "--device 'tpu'"),
    (["--device", "cuda:99"], "--device 'cuda:99'"),
    (["--seed", "-1"], "--seed must be ≥ 0"),
])
def test_bad_input_is_a_one_line_error_and_writes_nothing(argv, message, tmp_path, capsys):
    assert new_run(tmp_path, "run", *argv) == 2
    assert message in one_line(capsys.readouterr().err)
    assert not any(tmp_path.iterdir())


def test_an_unknown_optimizer_is_a_short_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        new_run(tmp_path, "run", "--optimizer", "lbfgs")
    assert exit_.value.code == 2
    err = one_line(capsys.readouterr().err)
    assert "invalid choice: 'lbfgs'" in err and "adam" in err


def test_an_unwritable_log_dir_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "a-file").write_text("")
    assert new_run(tmp_path / "a-file" / "runs", "run") == 2
    assert "cannot create run folder" in one_line(capsys.readouterr().err)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes to read-only folders")
def test_a_read_only_run_folder_is_a_one_line_error_on_resume(reference, tmp_path, capsys):
    run_dir = tmp_path / "run"
    shutil.copytree(reference, run_dir)
    run_dir.chmod(0o555)
    try:
        assert main(["--resume", str(run_dir)]) == 2
    finally:
        run_dir.chmod(0o755)
    assert f"cannot write to {run_dir}" in one_line(capsys.readouterr().err)


def test_a_full_disk_is_a_one_line_error_and_the_run_resumes(reference, tmp_path, monkeypatch, capsys):
    def full(path, write):
        raise WriteError(f"could not write {path} (No space left on device); the previous version is unchanged")

    monkeypatch.setattr(runfolder, "atomic_write", full)
    run_dir = tmp_path / "run"
    assert new_run(tmp_path, "run") == 2
    err = one_line(capsys.readouterr().err)
    assert "No space left on device" in err and f"continue with: python train.py bandit --resume {run_dir}" in err
    monkeypatch.undo()
    assert main(["--resume", str(run_dir)]) == 0
    assert_same_results(run_dir, reference)


def test_a_run_folder_in_use_is_refused(reference, capsys):
    from svpg.runs import RunLock

    before = snapshot(reference)
    with RunLock(reference):
        capsys.readouterr()
        assert main(["--resume", str(reference)]) == 2
        assert f"in use by process {os.getpid()}" in one_line(capsys.readouterr().err)
    assert snapshot(reference) == before
