"""The `svpg` command, the checkout's shortcuts (train.py, evaluate.py, envs/) and what the wheel carries."""
import contextlib
import io
from pathlib import Path

import pytest

import svpg.envs
from svpg import commands
from svpg.rl.config import TASKS, load_preset

ROOT = Path(__file__).resolve().parents[2]
tomllib = pytest.importorskip("tomllib")  # Python 3.11+


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = commands.main(argv)
        except SystemExit as e:  # argparse's --help and usage errors
            status = e.code
    return status, out.getvalue(), err.getvalue()


def test_every_subcommand_shows_its_front_ends_own_help():
    status, out, _ = run(["train", "--help"])
    assert status == 0 and out.startswith("usage: svpg train") and "svpg train --resume runs/<run-name>" in out
    assert "python train.py" not in out  # the examples name the command that was run
    status, out, _ = run(["evaluate", "--help"])
    assert status == 0 and out.startswith("usage: svpg evaluate") and "--gif" in out
    for name, option in (("bandit", "--problem"), ("supervised", "--dataset"), ("export", "--particle")):
        status, out, _ = run([name, "--help"])
        assert status == 0 and option in out, name


def test_the_overview_and_unknown_commands():
    status, out, _ = run(["--help"])
    assert status == 0 and all(name in out for name in commands.COMMANDS)
    assert run([])[0] == 2
    status, _, err = run(["trian"])
    assert status == 2 and "did you mean train?" in err and "Traceback" not in err
    status, _, err = run(["train", "--iterations", "x"])
    assert status == 2 and err.startswith("svpg train: error: argument --iterations")


def test_a_bad_option_value_names_the_command_that_was_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, _, err = run(["train", "--preset", "nope"])
    assert status == 2 and err.startswith("svpg train: error: unknown preset 'nope'")
    status, _, err = run(["evaluate", str(tmp_path / "missing")])
    assert status == 2 and err.startswith("svpg evaluate: error:")


def test_the_checkout_shortcuts_are_the_package_itself():
    import envs.xp
    from envs.render import draw_cartpole

    import envs
    import evaluate
    import train

    assert envs is svpg.envs and envs.xp is svpg.envs.xp and draw_cartpole is svpg.envs.render.draw_cartpole
    assert train.main.__module__ == "svpg.rl.train_cli" and evaluate.main.__module__ == "svpg.rl.evaluate_cli"


def test_pendulum_is_an_alias_of_double_pendulum_with_a_note(capsys, monkeypatch):
    from svpg.rl import config

    monkeypatch.setattr(config, "_noted_aliases", set())
    assert "double-pendulum" in TASKS and "pendulum" in TASKS and "pendulum" not in list(TASKS)
    assert load_preset("pendulum") == load_preset("double-pendulum")
    load_preset("pendulum")
    err = capsys.readouterr().err
    assert err == "note: preset 'pendulum' is now called 'double-pendulum'\n"  # once per process
    assert load_preset("double-pendulum")["env_id"] == "svpg/DoublePendulum-v0"


def test_the_wheel_installs_only_svpg_with_every_data_file():
    """Package discovery and package data cover every file svpg reads at run time (the wheel itself is
    built and installed by .ci/package-check)."""
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert cfg["packages"]["find"]["include"] == ["svpg", "svpg.*"] and "py-modules" not in cfg
    data = [p for p in (ROOT / "svpg").rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")]
    assert data, "svpg ships data files (the presets)"
    for path in data:
        package = path.parent.relative_to(ROOT).as_posix().replace("/", ".")
        owners = {pkg: globs for pkg, globs in cfg["package-data"].items() if package.startswith(pkg)}
        rel = {pkg: path.relative_to(ROOT / pkg.replace(".", "/")) for pkg in owners}
        assert any(rel[pkg].match(g) for pkg, globs in owners.items() for g in globs), f"{path} is not package data"
    for folder in ("svpg", *(p.relative_to(ROOT).as_posix() for p in (ROOT / "svpg").rglob("*") if p.is_dir()
                             and p.name != "__pycache__" and any(p.glob("*.py")))):
        assert (ROOT / folder / "__init__.py").is_file(), f"{folder} is not a package: find would skip it"
