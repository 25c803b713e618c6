"""svpg.runs.RunFolders and Writer, the run-folder layer every front end uses: create or refuse, resume with
the options that may change, one writer, units of work whose result files say what is finished."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from svpg.io import append_csv
from svpg.runs import CONFIG_FILE, RunFolderInUse, RunFolders, RunLock, Writer


@dataclass
class Toy:
    lr: float = 0.1
    seeds: int = 2
    data_path: str = ""
    progress: bool = True


FOLDERS = RunFolders("train.py toy", Toy, resumable=("seeds", "progress"), built=("problem",))


@pytest.fixture
def run(tmp_path) -> Path:
    return FOLDERS.create(tmp_path, "run", Toy(lr=0.5), {"problem": {"rows": 3}})


def test_a_new_folder_appears_with_its_config_and_an_existing_one_is_refused(run, tmp_path):
    assert json.loads((run / CONFIG_FILE).read_text()) == {"lr": 0.5, "seeds": 2, "data_path": "", "progress": True,
                                                          "problem": {"rows": 3}}
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # no staging folder left behind
    before = (run / CONFIG_FILE).read_bytes()
    with pytest.raises(ValueError, match=f"run folder {run} already exists: continue it with python train.py toy --resume {run}"):
        FOLDERS.create(tmp_path, "run", Toy(lr=9.0), {"problem": {}})
    assert (run / CONFIG_FILE).read_bytes() == before
    assert FOLDERS.load(run) == (Toy(lr=0.5), {"problem": {"rows": 3}})


def test_resume_applies_the_options_that_may_change_and_refuses_the_others(run):
    config, recorded = FOLDERS.resume(run, {"seeds", "backend", "jobs"}, {"seeds": 5, "lr": 0.1, "backend": "local"})
    assert config == Toy(lr=0.5, seeds=5) and recorded == {"problem": {"rows": 3}}  # lr from config.json, not the default
    with pytest.raises(ValueError, match=r"^--lr cannot be given with --resume: options cannot change when resuming .*"
                                         r"only --seeds, --progress may change"):
        FOLDERS.resume(run, {"lr", "seeds"}, {"lr": 0.5, "seeds": 5})  # typed, even at the recorded value
    with pytest.raises(ValueError, match="no such run folder"):
        FOLDERS.resume(run.parent / "missing", {"seeds"}, {"seeds": 5})
    with pytest.raises(ValueError, match="its problem differs .* start a new run"):
        FOLDERS.check_built(run, {"problem": {"rows": 3}}, {"problem": {"rows": 4}}, lambda changed: f"{changed[0]} differs")
    FOLDERS.check_built(run, {"problem": {"rows": 3}}, {"problem": {"rows": 3}}, str)


def test_continuing_rewrites_the_config_and_removes_stray_temporaries(run):
    stray = run / "seeds" / ".seed_0.npz.abc.tmp"
    stray.parent.mkdir()
    stray.write_bytes(b"partial")
    FOLDERS.continue_in(run, Toy(lr=0.5, seeds=7), {"problem": {"rows": 3}})
    assert not stray.exists() and json.loads((run / CONFIG_FILE).read_text())["seeds"] == 7


def test_one_writer_per_run_folder(run, tmp_path):
    with Writer(run):  # a resumed folder: locked before it is read
        with pytest.raises(RunFolderInUse, match=f"in use by process {os.getpid()}"):
            RunLock(run).acquire()
    with Writer(None) as writer:  # a new run: locked once its folder exists
        writer.hold(run)
        writer.hold(run)  # idempotent
        with pytest.raises(RunFolderInUse):
            Writer(run)
    RunLock(run).acquire().release()  # released on exit


def test_a_job_reads_the_run_config_with_paths_from_the_drivers_folder(tmp_path):
    run = FOLDERS.create(tmp_path, "rel", Toy(data_path="data/x.csv"), {"problem": {}})
    config, _ = FOLDERS.job_config(run, "/driver/cwd", ("data_path",))
    assert config.data_path == "/driver/cwd/data/x.csv"
    absolute = FOLDERS.create(tmp_path, "abs", Toy(data_path="/data/x.csv"), {"problem": {}})
    assert FOLDERS.job_config(absolute, "/driver/cwd", ("data_path",))[0].data_path == "/data/x.csv"


def test_units_that_leave_no_result_file_are_an_error(run):
    FOLDERS.run_units("svpg.nothing:here", run, [], backend="local", workers=1, gpus=0.0, left=lambda: [])
    with pytest.raises(ValueError, match=r"the jobs of seed\(s\) \[3\] finished but left no result file"):
        FOLDERS.run_units("svpg.nothing:here", run, [], backend="local", workers=1, gpus=0.0, left=lambda: [3],
                          what="seed(s)")


def test_each_process_that_runs_units_records_the_code_and_machine_once_per_change(run, monkeypatch):
    """Running units records what trains (commit, torch, Python, machine) in provenance.jsonl: a process with the
    same provenance adds nothing, one at another commit or on another machine adds a line after the others; one
    with no unit left to run trains nothing and records nothing."""
    import svpg.grid
    import svpg.runs as runs

    monkeypatch.setattr(svpg.grid, "run_jobs", lambda *args, **kwargs: None)  # the units themselves do not matter here

    def run_units(units=({"seed": 0},)):
        FOLDERS.run_units("svpg.nothing:here", run, list(units), backend="local", workers=1, gpus=0.0)

    assert runs.read_provenance(run) == []  # a folder only created (or refused) records nothing
    run_units(units=())
    assert runs.read_provenance(run) == []
    run_units()
    first = runs.read_provenance(run)
    assert first == [runs.provenance()] and first[0]["commit"] and first[0]["machine"]
    run_units()  # resumed by the same code on the same machine
    assert runs.read_provenance(run) == first
    later = {**first[0], "commit": "abc1234", "machine": "elsewhere"}
    monkeypatch.setattr(runs, "provenance", lambda: later)
    run_units()
    assert runs.read_provenance(run) == [*first, later]
    with (run / runs.PROVENANCE_FILE).open("a") as f:
        f.write("{not json\n")  # an edited line is skipped, not an error
    assert runs.read_provenance(run) == [*first, later]


def test_the_source_commit_is_this_checkouts_and_none_inside_another_repository():
    import subprocess

    from svpg.runs import SOURCE_ROOT, source_commit

    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=SOURCE_ROOT, capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("svpg does not run from a git checkout here")
    assert source_commit().removesuffix("-dirty") == head.stdout.strip()
    # a copy installed somewhere inside another repository (a virtual environment in a project) has no commit
    assert source_commit.__wrapped__(SOURCE_ROOT / "svpg") == ""


def test_appended_csv_rows_read_back_in_order_under_one_header(tmp_path):
    path = tmp_path / "progress.csv"
    path.touch()  # an empty file, as a kill between creating and writing leaves it, still gets the header
    append_csv(path, [{"step": 1, "loss": 0.5}])
    append_csv(path, [{"step": 2, "loss": 0.25}, {"step": 3, "loss": 0.125}])
    assert path.read_text().splitlines() == ["step,loss", "1,0.5", "2,0.25", "3,0.125"]
