"""train.py and evaluate.py as a user runs them, and what lands in TensorBoard.

The scripts run in this process (as ``python train.py …`` would run them: their ``__main__`` with these
arguments), which saves an interpreter start per call; one test runs them as real processes."""
import contextlib
import io
import json
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

import svpg
from svpg.rl.config import load_preset
from tests.conftest import CLASSIC_ARGS

ROOT = Path(__file__).resolve().parents[2]

REQUIRED_TAGS = {
    "rollout/ep_rew_mean", "rollout/ep_rew_max", "rollout/ep_rew_min", "rollout/ep_len_mean",
    "svgd/bandwidth", "svgd/driving_norm", "svgd/repulsive_norm", "svgd/particle_spread",
    "policy/entropy", "time/fps",
}


def run(script, *args, check=True):
    """``python script *args``, in this process: (returncode, stdout, stderr) like subprocess.run's result."""
    stdout, stderr, argv = io.StringIO(), io.StringIO(), sys.argv
    sys.argv = [str(ROOT / script), *map(str, args)]
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            runpy.run_path(str(ROOT / script), run_name="__main__")
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv = argv
    out = subprocess.CompletedProcess(args, code, stdout.getvalue(), stderr.getvalue())
    if check and out.returncode != 0:
        raise AssertionError(f"{args} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return out


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("runs")
    out = run(
        "train.py", *CLASSIC_ARGS, "--num-particles", "3", "--samples-per-particle", "500", "--iterations", "3",
        "--eval-episodes", "2", "--log-dir", str(log_dir), "--run-name", "cli", "--progress", "false",
        "--threads", "1",
    )
    return log_dir / "cli", out.stdout


def test_train_prints_an_evaluation_table_and_writes_the_run_folder(trained):
    path, stdout = trained
    assert "| particle | mean return |" in stdout and "**ensemble**" in stdout
    assert (path / "config.json").exists() and (path / "model.safetensors").exists()
    assert list(path.glob("events.out.tfevents.*"))


def test_tensorboard_has_the_documented_tags_and_the_custom_chart(trained):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(trained[0]))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert REQUIRED_TAGS <= tags, REQUIRED_TAGS - tags
    assert len(acc.Scalars("rollout/ep_rew_mean")) == 3
    from tensorboard.plugins.custom_scalar import layout_pb2

    proto = acc.Tensors("custom_scalars__config__")[0].tensor_proto
    layout = layout_pb2.Layout.FromString(proto.string_val[0])
    margin = layout.category[0].chart[0].margin.series[0]
    assert (margin.value, margin.lower, margin.upper) == ("rollout/ep_rew_mean", "rollout/ep_rew_lower", "rollout/ep_rew_upper")


def test_evaluate_reports_every_particle_and_one_chosen(trained):
    path, _ = trained
    out = run("evaluate.py", str(path), "--eval-episodes", "3", "--seed", "1")
    assert all(f"| {i} |" in out.stdout for i in range(3)) and "**ensemble**" in out.stdout
    one = run("evaluate.py", str(path), "--eval-episodes", "3", "--particle", "1")
    assert "| 1 |" in one.stdout and "| 0 |" not in one.stdout
    again = run("evaluate.py", str(path), "--eval-episodes", "3", "--particle", "1")
    assert again.stdout == one.stdout, "same seed, same numbers"


def process(*args):
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_bad_input_gives_a_message_not_a_traceback(tmp_path):
    # in this process an uncaught exception would fail the test; the real process below shows the exit status
    out = run("train.py", "--env-id", "NoSuchEnv-v0", "--log-dir", str(tmp_path), check=False)
    assert out.returncode == 2 and "NoSuchEnv-v0" in out.stderr and "Traceback" not in out.stderr
    out = run("train.py", "--alpha", "-1", "--log-dir", str(tmp_path), check=False)
    assert out.returncode == 2 and "--alpha" in out.stderr
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"not a checkpoint")
    out = process("evaluate.py", str(bad))
    assert out.returncode == 2 and "corrupt or truncated" in out.stderr and "Traceback" not in out.stderr


def test_help_documents_every_option():
    out = run("train.py", "--help").stdout
    for opt in ("--env-id", "--method", "--num-particles", "--householder", "--alpha", "--prior", "--lr",
                "--optimizer", "--samples-per-particle", "--horizon", "--iterations", "--total-steps", "--seed",
                "--device", "--log-dir", "--run-name", "--checkpoint-every", "--resume"):
        assert opt in out, opt


def test_preset_fills_in_and_command_line_overrides(tmp_path):
    out = run(
        "train.py", "--preset", "swingup", "--iterations", "1", "--num-particles", "2", "--samples-per-particle", "500",
        "--eval-episodes", "1", "--log-dir", str(tmp_path), "--run-name", "p", "--progress", "false", "--threads", "1",
    )
    cfg = json.loads((tmp_path / "p" / "config.json").read_text())
    assert cfg["env_id"] == "svpg/CartPoleSwingUp-v0" and cfg["alpha"] == 1000.0 and cfg["prior"] == "flat" and cfg["anneal_lr"] is True and cfg["horizon"] == 500
    assert cfg["iterations"] == 1 and cfg["num_particles"] == 2, "typed options win over the preset"
    assert "svpg/CartPoleSwingUp-v0" in out.stdout


def test_gif_of_the_best_particle(trained, tmp_path):
    path, _ = trained
    gif = tmp_path / "best.gif"
    out = run("evaluate.py", str(path), "--eval-episodes", "2", "--particle", "best", "--gif", str(gif))
    with Image.open(gif) as im:
        assert im.n_frames >= 2 and im.size[0] > 100
    assert "rendered to" in out.stdout


def test_obs_scale_from_the_command_line_and_the_double_pendulum_preset(tmp_path):
    out = run(
        "train.py", "--preset", "double-pendulum", "--obs-scale", "1,1,0.2,1,1,0.2", "--iterations", "1", "--num-particles", "2",
        "--samples-per-particle", "500", "--eval-episodes", "0", "--log-dir", str(tmp_path), "--run-name", "o",
        "--progress", "false",
    )
    cfg = json.loads((tmp_path / "o" / "config.json").read_text())
    assert cfg["obs_scale"] == [1.0, 1.0, 0.2, 1.0, 1.0, 0.2]
    assert svpg.load(tmp_path / "o").spec.obs_scale == (1.0, 1.0, 0.2, 1.0, 1.0, 0.2)
    assert load_preset("double-pendulum")["obs_scale"] == (1.0, 1.0, 0.1, 1.0, 1.0, 0.1)
    bad = run("train.py", "--preset", "double-pendulum", "--obs-scale", "1,0.1", "--iterations", "1", "--log-dir", str(tmp_path), check=False)
    assert bad.returncode == 2 and "--obs-scale needs 6" in bad.stderr and "Traceback" not in bad.stderr
    assert out.returncode == 0


# -- svpg.cli: renamed options and what the user typed ----------------------------------------------
def _alias_parser():
    import dataclasses

    from svpg.cli import Parser, add_dataclass_arguments, option

    @dataclasses.dataclass
    class Options:
        seeds: int = option(1, "how many seeds")
        progress: bool = option(True, "show a progress bar")

    p = Parser(prog="tool")
    p.add_argument("--eval-episodes", deprecated=("--episodes",), dest="episodes", type=int, default=20)
    p.add_argument("--quiet", deprecated=("--silent",), action="store_true")
    add_dataclass_arguments(p.add_argument_group("options"), Options, renamed={"seeds": "--num-seeds"})
    return p


def test_an_old_option_name_works_with_a_one_line_note(capsys):
    from svpg.cli import explicit_options

    p = _alias_parser()
    argv = ["--episodes", "3", "--silent", "--seeds", "7"]
    assert vars(p.parse_args(argv)) == {"episodes": 3, "quiet": True, "seeds": 7, "progress": True}
    err = capsys.readouterr().err.splitlines()
    assert err == [f"tool: note: --{old} is deprecated, use --{new} (same meaning)"
                   for old, new in (("episodes", "eval-episodes"), ("silent", "quiet"), ("seeds", "num-seeds"))]
    assert explicit_options(p, argv) == {"episodes", "quiet", "seeds"}  # typed, under either name
    assert explicit_options(p, ["--num-seeds", "2", "--progress", "false"]) == {"seeds", "progress"}
    assert vars(p.parse_args([])) == {"episodes": 20, "quiet": False, "seeds": 1, "progress": True}  # one default each
    assert capsys.readouterr().err == ""
    assert "--seeds SEEDS" in p.format_help() and "deprecated name of --num-seeds" in p.format_help()
    assert (p.option_name("seeds"), p.option_name("quiet"), p.option_name("no_such")) == ("--num-seeds", "--quiet", "--no-such")
    with pytest.raises(SystemExit):
        p.parse_args(["--seeds", "x"])  # the old name checks its value as the new one does
    assert "argument --seeds: invalid int value: 'x'" in capsys.readouterr().err


def test_renaming_an_unknown_field_is_refused():
    import argparse

    from svpg.cli import Parser, add_dataclass_arguments, explicit_options
    from svpg.rl.config import SVPGConfig

    with pytest.raises(ValueError, match=r"renamed: \['nope'\] are not fields of SVPGConfig"):
        add_dataclass_arguments(Parser(prog="x"), SVPGConfig, renamed={"nope": "--nope"})
    with pytest.raises(TypeError, match="svpg.cli.Parser"):
        explicit_options(argparse.ArgumentParser(), [])


def test_experiments_harness_keeps_its_old_seed_count_option(capsys):
    from svpg.studies import experiments

    with pytest.raises(SystemExit):
        experiments.main(["--help"])
    out = capsys.readouterr().out
    assert "--num-seeds SEEDS" in out and "deprecated name of --num-seeds" in out
