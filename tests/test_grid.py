"""Grids on local processes and on Ray Tune: the same runs and numbers, and a restarted driver redoes
no finished work."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from svpg.rl import experiments as harness

pytest.importorskip("ray")
ROOT = Path(__file__).resolve().parents[1]
TINY = ["--task", "balance", "--iterations", "2", "--samples-per-particle", "500", "--num-particles", "2",
        "--methods", "s2vgd,independent", "--estimators", "reinforce", "--seeds", "2", "--jobs", "2"]


def table(out: Path) -> list[str]:
    return [line for line in (out / "results.md").read_text().splitlines() if line.startswith("|")]


def test_the_ray_backend_gives_the_local_backends_runs_and_numbers(tmp_path):
    assert harness.main([*TINY, "--out", str(tmp_path / "local")]) == 0
    assert harness.main([*TINY, "--out", str(tmp_path / "ray"), "--backend", "ray"]) == 0
    assert table(tmp_path / "ray") == table(tmp_path / "local")
    runs = sorted(p.name for p in (tmp_path / "ray").glob("*__seed*"))
    assert runs == ["independent__reinforce__seed0", "independent__reinforce__seed1",
                    "s2vgd__reinforce__seed0", "s2vgd__reinforce__seed1"]


@pytest.mark.slow
def test_a_driver_killed_mid_grid_resumes_without_redoing_finished_trials(tmp_path):
    out = tmp_path / "grid"
    args = [sys.executable, "-m", "svpg.rl.experiments", *TINY, "--iterations", "6", "--jobs", "1",
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
