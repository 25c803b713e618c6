"""The RL grid on Ray Tune: a restarted driver redoes no finished work. (That the Ray backend gives the
local backend's runs and numbers is checked in test_frontend_backends.py, which shares one Ray instance.)"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")
ROOT = Path(__file__).resolve().parents[2]
TINY = ["--task", "balance", "--iterations", "2", "--samples-per-particle", "500", "--num-particles", "2",
        "--methods", "s2vgd,independent", "--estimators", "reinforce", "--seeds", "2", "--jobs", "2"]


@pytest.mark.slow
def test_a_driver_killed_mid_grid_resumes_without_redoing_finished_trials(tmp_path):
    out = tmp_path / "grid"
    args = [sys.executable, "-m", "svpg.studies.experiments", *TINY, "--iterations", "6", "--jobs", "1",
            "--backend", "ray", "--out", str(out)]
    driver = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    first = out / "s2vgd__reinforce__seed1" / "checkpoints" / "iter_000006.safetensors"
    deadline = time.time() + 180
    while not first.exists() and time.time() < deadline:
        time.sleep(0.2)
    os.kill(driver.pid, signal.SIGKILL)  # the driver only: its Ray workers die with their session below
    driver.wait()
    os.killpg(driver.pid, signal.SIGKILL)
    assert first.exists(), "the first trial finished before the kill"
    finished = {p: p.stat().st_mtime_ns for p in (out / "s2vgd__reinforce__seed0").rglob("*") if p.is_file()}
    assert subprocess.run(args, cwd=ROOT, capture_output=True, timeout=300).returncode == 0
    assert {p: p.stat().st_mtime_ns for p in (out / "s2vgd__reinforce__seed0").rglob("*") if p.is_file()} == finished
    assert (out / "independent__reinforce__seed1" / "checkpoints" / "iter_000006.safetensors").exists()
