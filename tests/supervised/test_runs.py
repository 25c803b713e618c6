"""``train.py supervised`` run folders: never overwritten, resumable after any interruption, one-line errors."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import train
from svpg.supervised import BayesianRegressor
from svpg.supervised.cli import main, split_seed

EPOCHS = 12  # ~0.1 s per split: a signalled subprocess cannot run far ahead of the test
TIMING = ("seconds", "seconds_per_epoch")


def options(csv_file: Path, log_dir: Path, name: str, splits: int = 3) -> list[str]:
    return ["--dataset", "csv", "--data-path", str(csv_file), "--target", "price", "--num-splits", str(splits),
            "--epochs", str(EPOCHS), "--num-particles", "3", "--hidden", "8", "--batch-size", "24",
            "--log-dir", str(log_dir), "--run-name", name, "--progress", "false"]


@pytest.fixture(scope="module")
def reference(csv_file, tmp_path_factory) -> Path:
    """An uninterrupted 3-split run."""
    log_dir = tmp_path_factory.mktemp("reference")
    assert main(options(csv_file, log_dir, "ref")) == 0
    return log_dir / "ref"


def rows(run: Path, timings: bool = False) -> list[dict]:
    found = json.loads((run / "results.json").read_text())["results"]["s2vgd"]
    return [{k: v for k, v in row.items() if timings or k not in TIMING} for row in found]


def assert_same_as(run: Path, reference: Path) -> None:
    """Bit-identical per-split results and particles of the reference's splits (the timings aside)."""
    expected = rows(reference)
    assert rows(run)[: len(expected)] == expected
    for k in range(len(expected)):
        name = f"models/s2vgd_split{k:02d}.safetensors"
        assert torch.equal(load_file(run / name)["theta"], load_file(reference / name)["theta"]), name


def snapshot(folder: Path) -> dict:
    """Every file of a run folder with its time stamp, but the writer's lock (taken and released by a refused command)."""
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.rglob("*")) if p.is_file() and p.name != ".lock"}


def error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err


def test_an_existing_run_is_never_overwritten(csv_file, reference, capsys):
    before = snapshot(reference)
    assert main(options(csv_file, reference.parent, "ref")) == 2
    assert "already exists: continue it with python train.py supervised --resume" in error_line(capsys)
    assert snapshot(reference) == before


def test_interrupted_split_is_run_again_on_resume(csv_file, tmp_path, reference, monkeypatch, capsys):
    """A KeyboardInterrupt in split 0's epoch 2 leaves partial curves; --resume recreates them and gives the
    uninterrupted run's results bit for bit."""
    fit = BayesianRegressor.fit

    def interrupted_fit(self, x, y, callback=None, **kwargs):
        def interrupt(epoch, scalars):
            callback(epoch, scalars)
            if self.seed == split_seed(0, 0) and epoch == 2:
                raise KeyboardInterrupt
        return fit(self, x, y, callback=interrupt if callback else None, **kwargs)

    monkeypatch.setattr(BayesianRegressor, "fit", interrupted_fit)
    assert main(options(csv_file, tmp_path, "run")) == 130
    run = tmp_path / "run"
    assert error_line(capsys) == (f"interrupted: 0 of 3 splits finished and saved; "
                                  f"continue with: python train.py supervised --resume {run}\n")
    assert not (run / "results.json").exists() and list((run / "s2vgd" / "split_00").iterdir())
    monkeypatch.undo()

    assert main(["--resume", str(run)]) == 0
    assert_same_as(run, reference)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    curves = EventAccumulator(str(run / "s2vgd" / "split_00"))
    curves.Reload()
    assert [e.step for e in curves.Scalars("train/log_posterior")] == list(range(1, EPOCHS + 1))


def test_interrupted_split_continues_from_its_checkpoint(csv_file, tmp_path, reference, monkeypatch, capsys):
    """Checkpoints after every epoch, a KeyboardInterrupt in split 0's epoch 7: --resume trains epochs 7-12 of
    split 0 only, gives the uninterrupted run's results bit for bit, curves without repeated steps, and deletes
    the checkpoint once the split's row is saved."""
    fit = BayesianRegressor.fit
    split0_epochs: list[int] = []

    def watched_fit(self, x, y, callback=None, stop_at=None, **kwargs):
        def watch(epoch, scalars):
            callback(epoch, scalars)
            if self.seed == split_seed(0, 0):
                split0_epochs.append(epoch)
                if epoch == stop_at:
                    raise KeyboardInterrupt
        return fit(self, x, y, callback=watch if callback else None, **kwargs)

    monkeypatch.setattr(BayesianRegressor, "fit", lambda self, x, y, **kw: watched_fit(self, x, y, stop_at=7, **kw))
    assert main([*options(csv_file, tmp_path, "run"), "--checkpoint-minutes", "1e-9"]) == 130
    run = tmp_path / "run"
    capsys.readouterr()
    checkpoint = run / "checkpoints" / "s2vgd_split00.pt"
    assert torch.load(checkpoint, weights_only=True)["epoch"] == 6

    split0_epochs.clear()
    monkeypatch.setattr(BayesianRegressor, "fit", lambda self, x, y, **kw: watched_fit(self, x, y, **kw))
    assert main(["--resume", str(run)]) == 0
    assert split0_epochs == list(range(7, EPOCHS + 1))  # split 0 went on from its checkpoint
    assert_same_as(run, reference)
    assert not list((run / "checkpoints").iterdir())
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    curves = EventAccumulator(str(run / "s2vgd" / "split_00"))
    curves.Reload()
    assert [e.step for e in curves.Scalars("train/log_posterior")] == list(range(1, EPOCHS + 1))


def test_resume_extends_keeps_finished_splits_and_refuses_fewer(csv_file, tmp_path, reference, capsys):
    assert main(options(csv_file, tmp_path, "run", splits=2)) == 0
    run = tmp_path / "run"
    first_two, models = rows(run, timings=True), snapshot(run / "models")
    assert train.main(["supervised", "--resume", str(run), "--num-splits", "3", "--progress", "false"]) == 0
    assert rows(run, timings=True)[:2] == first_two and snapshot(run / "models").items() >= models.items()
    assert_same_as(run, reference)
    assert "resuming: 2 of 3 splits finished; running the other 1" in capsys.readouterr().out

    assert main(["--resume", str(run)]) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert main(["--resume", str(run), "--num-splits", "2"]) == 2
    assert "--num-splits 2 is fewer than the 3 splits" in error_line(capsys)


@pytest.mark.parametrize("extra", [["--epochs", str(EPOCHS)], ["--seed", "0", "--lr", "0.01"], ["--dataset", "boston"],
                                   ["--method", "svgd"], ["--run-name", "other"]])
def test_options_that_change_results_are_refused_on_resume(reference, capsys, extra):
    """Refused when typed, even with the value the run already has (--epochs 12)."""
    before = snapshot(reference)
    assert main(["--resume", str(reference), *extra]) == 2
    err = error_line(capsys)
    assert f"{extra[0]}" in err and "cannot be given with --resume" in err
    assert snapshot(reference) == before


@pytest.mark.parametrize("content, message", [
    ("{not json", "is not readable JSON"),
    ("[1, 2]", "must hold a JSON object"),
    ("wrong type", "'epochs' must be an integer, got 'ten'"),
    ("unknown option", "unknown option(s) ['colour']"),
])
def test_garbage_config_is_a_one_line_error(reference, tmp_path, capsys, content, message):
    run = tmp_path / "run"
    run.mkdir()
    config = json.loads((reference / "config.json").read_text())
    if content == "wrong type":
        content = json.dumps({**config, "epochs": "ten"})
    elif content == "unknown option":
        content = json.dumps({**config, "colour": "red"})
    (run / "config.json").write_text(content)
    assert main(["--resume", str(run)]) == 2
    err = error_line(capsys)
    assert str(run / "config.json") in err and message in err


def test_a_damaged_split_file_is_a_one_line_error_naming_it(reference, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(reference, run)
    damaged = run / "splits" / "s2vgd_split01.json"
    damaged.write_text("{trunc")
    assert main(["--resume", str(run)]) == 2
    assert f"split result {damaged} is not readable JSON" in error_line(capsys)


@pytest.mark.parametrize("device", ["banana", "tpu", "cuda"])
def test_bad_device_is_refused_before_anything_is_written(csv_file, tmp_path, capsys, device):
    if device == "cuda" and torch.cuda.is_available():
        pytest.skip("this torch build has CUDA")
    assert main([*options(csv_file, tmp_path / "runs", "run"), "--device", device]) == 2
    assert f"--device {device!r}" in error_line(capsys)
    assert not (tmp_path / "runs").exists()


def test_unwritable_places_are_one_line_errors(csv_file, reference, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert main(options(csv_file, blocker / "runs", "run")) == 2
    assert "cannot create run folder" in error_line(capsys)
    if os.geteuid() == 0:
        return  # root writes into read-only folders
    run = tmp_path / "read-only"
    run.mkdir()
    (run / "config.json").write_bytes((reference / "config.json").read_bytes())
    run.chmod(0o555)
    try:
        assert main(["--resume", str(run)]) == 2
        assert f"cannot write to {run}" in error_line(capsys)
    finally:
        run.chmod(0o755)


def test_sigint_saves_finished_splits_and_resumes_bit_identical(csv_file, tmp_path, reference):
    """Ctrl-C in a real process: exit 130, one line naming the command that continues, no traceback."""
    run = tmp_path / "run"
    cmd = [sys.executable, train.__file__, "supervised", *options(csv_file, tmp_path, "run", splits=100)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (run / "results.json").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err, err
    finished = len(rows(run))
    assert err.splitlines()[-1] == (f"interrupted: {finished} of 100 splits finished and saved; "
                                    f"continue with: python train.py supervised --resume {run}")
    assert main(["--resume", str(run), "--splits", str(max(3, finished))]) == 0  # 3 unless the subprocess ran ahead
    assert_same_as(run, reference)


@pytest.mark.slow  # a killed real process; the default suite has the Ctrl-C one above and RL's kill inside a write
def test_sigkill_between_a_model_file_and_its_row_resumes_bit_identical(csv_file, tmp_path, reference):
    """Killed while split 1's row is saved (7th atomic write: config, provenance, then model, row and
    results.json of each split): split 1's model file has no row and a temporary is left; --resume redoes
    split 1."""
    run = tmp_path / "run"
    driver = Path(__file__).resolve().parents[1] / "kill_driver.py"
    done = subprocess.run([sys.executable, str(driver), "replace:7:before", "--", "supervised",
                           *options(csv_file, tmp_path, "run")], capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert len(rows(run)) == 1 and (run / "models" / "s2vgd_split01.safetensors").exists()
    assert list((run / "splits").glob(".s2vgd_split01.json.*.tmp"))
    assert main(["--resume", str(run)]) == 0
    assert_same_as(run, reference)
    assert not list(run.rglob(".*.tmp"))


def test_a_run_folder_in_use_is_refused(reference, capsys):
    from svpg.runs import RunLock

    before = snapshot(reference)
    with RunLock(reference):
        assert main(["--resume", str(reference)]) == 2
        assert f"in use by process {os.getpid()}" in error_line(capsys)
    assert snapshot(reference) == before
