"""The studies' former module names (svpg.rl.benchmark, …, now svpg.studies.*): importing one or running it with
python -m still works, gives the study's module itself, and warns with a DeprecationWarning naming the new path."""
import runpy
import sys

import pytest

import svpg.studies.benchmark
import svpg.studies.sb3

MOVED = ("benchmark", "experiments", "ablation", "ablation_analysis", "ablation_cells", "sb3")


@pytest.mark.parametrize("name", MOVED)
def test_a_former_module_is_the_study_module_and_warns_at_the_import(monkeypatch, name):
    import importlib

    current = importlib.import_module(f"svpg.studies.{name}")
    monkeypatch.delitem(sys.modules, f"svpg.rl.{name}", raising=False)
    with pytest.warns(DeprecationWarning) as caught:
        exec(f"import svpg.rl.{name} as former", namespace := {})
    assert namespace["former"] is current and sys.modules[f"svpg.rl.{name}"] is current
    (warning,) = caught
    assert str(warning.message) == f"svpg.rl.{name} is deprecated: use svpg.studies.{name} (the same module)"
    assert warning.filename == "<string>"  # the importer's line, not the shim's


def test_from_a_former_module_import_a_name(monkeypatch):
    monkeypatch.delitem(sys.modules, "svpg.rl.sb3", raising=False)
    with pytest.warns(DeprecationWarning, match="use svpg.studies.sb3"):
        from svpg.rl.sb3 import train_one
    assert train_one is svpg.studies.sb3.train_one


def test_python_m_a_former_module_runs_the_study(monkeypatch, capsys):
    monkeypatch.delitem(sys.modules, "svpg.rl.benchmark", raising=False)  # as in a fresh interpreter
    monkeypatch.setattr(sys, "argv", ["benchmark.py", "--help"])
    with pytest.warns(DeprecationWarning, match=r"^python -m svpg.rl.benchmark is deprecated: use python -m "
                      r"svpg.studies.benchmark"), pytest.raises(SystemExit) as stop:
        runpy.run_module("svpg.rl.benchmark", run_name="__main__")
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith("usage: python -m svpg.studies.benchmark")
