"""The README's cluster recipe on one machine: a head node started with ``ray start --head`` (token
authentication on, as Ray enables it by default) and a grid driver that finds it through RAY_ADDRESS."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")
ROOT = Path(__file__).resolve().parents[2]
RAY = Path(sys.executable).with_name("ray")
TINY = ["--task", "balance", "--iterations", "1", "--samples-per-particle", "200", "--num-particles", "2",
        "--methods", "s2vgd", "--estimators", "reinforce", "--seeds", "1", "--jobs", "1", "--backend", "ray"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(head: subprocess.Popen, folder: str) -> None:
    """The head's process group, then any process of this head's session left outside it (by its id)."""
    try:
        os.killpg(head.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    head.wait()
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and folder.encode() in (proc / "cmdline").read_bytes():
                os.kill(int(proc.name), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass


@pytest.fixture
def head():
    """A head node with token authentication, its own HOME (token) and temp dir; yields (address, env)."""
    folder = tempfile.mkdtemp(prefix="svpg-ray-")  # short: Ray's socket paths must fit in 107 characters
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")} | {"HOME": folder}
    port = free_port()
    token = subprocess.run([RAY, "get-auth-token", "--generate"], env=env, capture_output=True, text=True, check=True)
    assert (Path(folder) / ".ray" / "auth_token").read_text().strip() in token.stdout
    log = open(Path(folder) / "head.log", "w")
    head = subprocess.Popen([RAY, "start", "--head", "--port", str(port), "--temp-dir", f"{folder}/t", "--num-cpus", "1",
                             "--include-dashboard", "false", "--disable-usage-stats", "--block"],
                            env=env | {"RAY_AUTH_MODE": "token"}, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.time() + 120
        while "Ray runtime started" not in (Path(folder) / "head.log").read_text():
            assert head.poll() is None and time.time() < deadline, (Path(folder) / "head.log").read_text()
            time.sleep(0.5)
        yield f"127.0.0.1:{port}", env
    finally:
        stop(head, folder)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_a_grid_runs_on_a_head_node_named_by_its_address(head, tmp_path):
    address, env = head
    out = tmp_path / "grid"
    driver = subprocess.run([sys.executable, "-m", "svpg.studies.experiments", *TINY, "--out", str(out)], cwd=ROOT,
                            env=env | {"RAY_ADDRESS": address}, capture_output=True, text=True, timeout=300)
    assert driver.returncode == 0, driver.stderr[-3000:]
    assert (out / "s2vgd__reinforce__seed0" / "model.safetensors").is_file()
    assert "InvalidAuthToken" not in driver.stderr
