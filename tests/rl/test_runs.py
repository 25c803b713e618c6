"""RL run folders a researcher can trust: independent random streams, no overwritten runs, checkpoints
that are one consistent unit, exact resume, honest resume options and one-line errors."""
import csv
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from svpg import envs
from svpg.io import CheckpointError
from svpg.rl import checkpoints
from svpg.rl.config import SVPGConfig
from svpg.rl.policies import load_policy, save_policy
from svpg.rl.trainer import NonFiniteError, SVPGTrainer
from svpg.seeding import int_seed, torch_generator
from tests.conftest import CLASSIC, CLASSIC_ARGS

ROOT = Path(__file__).resolve().parents[2]
SMALL = [*CLASSIC_ARGS, "--num-particles", "2", "--samples-per-particle", "200", "--eval-episodes", "0", "--progress", "false",
         "--threads", "1"]


def small(tmp_runs, **kw):
    base = CLASSIC | dict(num_particles=2, samples_per_particle=200, iterations=4, checkpoint_every=2, log_dir=str(tmp_runs),
                          progress=False, eval_episodes=0, threads=1)
    return SVPGConfig(**(base | kw))


class Result:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def cli(capsys):
    """Run ``train.py`` / ``evaluate.py`` in this process, as the command line does (no start-up cost)."""
    import evaluate
    import train

    def run(script, *args):
        main = {"train.py": train.main, "evaluate.py": evaluate.main}[script]
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:  # argparse
            code = e.code
        out = capsys.readouterr()
        return Result(code, out.out, out.err)

    return run


def one_line_error(out, *fragments):
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


# -- random streams ------------------------------------------------------------------------------
def test_initial_particles_and_reset_states_come_from_independent_streams(tmp_runs):
    # Seeded with the same number, CartPole's first reset states (U(−0.05, 0.05)) mapped back to U(−1, 1)
    # used to equal the first-layer weights of particle 0 (U(−b, b)) to 4 decimals.
    trainer = SVPGTrainer(small(tmp_runs, method="svgd", num_particles=4, run_name="streams"))
    (w0, _), *_ = trainer.policy.net.weights(trainer.policy.theta.detach())
    weights = w0[0].flatten()[:16]
    weights = weights / weights.abs().max()
    resets = trainer.model.env.reset(seed=int_seed(0, "env_reset", 0)).flatten()[:16] / 0.05
    assert not torch.allclose(weights, resets, atol=1e-2)
    assert abs(torch.corrcoef(torch.stack([weights, resets]))[0, 1]) < 0.6


def test_evaluation_start_states_and_action_noise_are_independent():
    env = envs.make_batched("CartPole-v1", 64, seed=int_seed(3, "env_reset"))
    states = env.reset().flatten() / 0.05
    noise = torch.rand(states.shape, generator=torch_generator(3, "action_noise")) * 2 - 1
    assert abs(torch.corrcoef(torch.stack([states, noise]))[0, 1]) < 0.2


def test_neighbouring_seeds_and_iterations_share_no_stream():
    draws = {(s, n): torch.rand(8, generator=torch_generator(s, "action_noise", n)) for s in (0, 1) for n in (0, 1)}
    values = list(draws.values())
    assert all(not torch.equal(a, b) for i, a in enumerate(values) for b in values[i + 1:])
    assert int_seed(0, "env_reset", 1) != int_seed(1, "env_reset", 0)


def test_training_leaves_the_global_torch_rng_alone(tmp_runs):
    before = torch.get_rng_state()
    SVPGTrainer(small(tmp_runs, estimator="a2c", iterations=1, run_name="global")).train()
    assert torch.equal(torch.get_rng_state(), before)


# -- run folders are never overwritten -----------------------------------------------------------
def test_an_existing_run_name_is_refused_and_left_untouched(tmp_path, cli):
    args = ["train.py", *SMALL, "--iterations", "1", "--log-dir", tmp_path, "--run-name", "x"]
    assert cli(*args).returncode == 0
    before = {p: p.read_bytes() for p in (tmp_path / "x").rglob("*") if p.is_file()}
    out = cli(*args)
    one_line_error(out, "already exists", "--resume", "--run-name")
    assert {p: p.read_bytes() for p in (tmp_path / "x").rglob("*") if p.is_file()} == before


# -- checkpoints and resume ----------------------------------------------------------------------
@pytest.mark.parametrize("estimator", ["reinforce", "a2c"])
def test_resume_from_a_periodic_checkpoint_is_bit_identical(tmp_runs, estimator):
    straight = SVPGTrainer(small(tmp_runs, estimator=estimator, run_name="straight"))
    straight.train()
    branch = SVPGTrainer.resume(straight.run_dir, "iter_000002")
    assert branch.iteration == 2 and any("discarded_after_iter_000002" in n for n in branch.notes)
    assert (straight.run_dir / "checkpoints" / "discarded_after_iter_000002" / "iter_000004.safetensors").exists()
    assert torch.equal(branch.train().theta, straight.policy.theta)
    rows = list(csv.DictReader(open(straight.run_dir / "progress.csv")))
    assert [int(r["iteration"]) for r in rows] == [1, 2, 3, 4]


def test_an_incomplete_latest_checkpoint_falls_back_to_the_newest_consistent_one(tmp_runs):
    straight = SVPGTrainer(small(tmp_runs, run_name="straight"))
    straight.train()
    folder = straight.run_dir / "checkpoints"
    # as if the disk lost the end of iteration 4's checkpoint
    data = (folder / "iter_000004.safetensors").read_bytes()
    (folder / "iter_000004.safetensors").write_bytes(data[: len(data) // 2])
    resumed = SVPGTrainer.resume(straight.run_dir, iterations=4)
    assert resumed.iteration == 2
    assert any("skipped iter_000004.safetensors" in n and "corrupt or truncated" in n for n in resumed.notes)
    assert torch.equal(resumed.train().theta, straight.policy.theta)


def test_a_model_file_left_behind_its_checkpoint_is_refreshed_on_resume(tmp_runs):
    trainer = SVPGTrainer(small(tmp_runs, run_name="behind"))
    trainer.train()
    # as if killed between iteration 4's checkpoint and the copy to model.safetensors
    (trainer.run_dir / "model.safetensors").write_bytes((trainer.run_dir / "checkpoints" / "iter_000002.safetensors").read_bytes())
    resumed = SVPGTrainer.resume(trainer.run_dir)
    assert resumed.finished and any("model.safetensors now holds iter_000004" in n for n in resumed.notes)
    assert torch.equal(load_policy(trainer.run_dir).theta, trainer.policy.theta)


def test_no_consistent_checkpoint_is_a_one_line_refusal(tmp_runs):
    trainer = SVPGTrainer(small(tmp_runs, checkpoint_every=0, run_name="broken"))
    trainer.train()
    (trainer.run_dir / "checkpoints" / "iter_000004.safetensors").write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="no consistent checkpoint"):
        SVPGTrainer.resume(trainer.run_dir, iterations=6)


def test_a_policy_only_file_is_not_a_checkpoint(tmp_runs):
    # svpg.load's format (θ and spec only) carries no training state: resume refuses it, saying so
    trainer = SVPGTrainer(small(tmp_runs, checkpoint_every=0, run_name="foreign"))
    trainer.train()
    save_policy(load_policy(trainer.run_dir), trainer.run_dir / "checkpoints" / "iter_000004.safetensors")
    with pytest.raises(CheckpointError) as err:
        SVPGTrainer.resume(trainer.run_dir, iterations=6)
    assert "not a complete checkpoint" in str(err.value)


@pytest.mark.parametrize("spelling", ["iter_000002", "iter_2", "2", "iter_000002.safetensors",
                                      "runs/x/checkpoints/iter_000002.safetensors"])
def test_from_accepts_any_spelling_of_a_checkpoint(spelling):
    assert checkpoints.parse_checkpoint(spelling) == 2


def test_from_names_what_exists_when_the_checkpoint_does_not(tmp_runs):
    trainer = SVPGTrainer(small(tmp_runs, run_name="x"))
    trainer.train()
    with pytest.raises(CheckpointError, match="no checkpoint iter_000003.*iter_000002, iter_000004"):
        SVPGTrainer.resume(trainer.run_dir, "3")
    with pytest.raises(ValueError, match="does not name a checkpoint"):
        SVPGTrainer.resume(trainer.run_dir, "latest")


def test_a_non_finite_theta_stops_the_run_and_saves_nothing(tmp_runs):
    trainer = SVPGTrainer(small(tmp_runs, run_name="nan"))
    trainer.train()
    files = {p: p.read_bytes() for p in trainer.run_dir.rglob("*.s*") if p.is_file()}
    trainer.iterations = 8
    with torch.no_grad():
        trainer.policy.theta[0, 0] = float("nan")
    with pytest.raises(NonFiniteError, match="iteration 5"):
        trainer.train()
    assert {p: p.read_bytes() for p in trainer.run_dir.rglob("*.s*") if p.is_file()} == files
    assert SVPGTrainer.resume(trainer.run_dir, iterations=8).iteration == 4


def test_interrupted_before_the_first_checkpoint_starts_over_in_the_same_folder(tmp_runs):
    trainer = SVPGTrainer(small(tmp_runs, run_name="early"))  # folder and config.json exist, nothing trained
    straight = SVPGTrainer(small(tmp_runs, run_name="straight")).train()
    resumed = SVPGTrainer.resume(trainer.run_dir)
    assert resumed.iteration == 0 and torch.equal(resumed.train().theta, straight.theta)


# -- resume options: typed ones are honoured or refused, never dropped ---------------------------
def test_resume_honours_typed_options_even_at_their_defaults_and_refuses_the_rest(tmp_path, cli):
    run = tmp_path / "r"
    assert cli("train.py", *SMALL, "--total-steps", "800", "--checkpoint-every", "1", "--log-dir", tmp_path,
               "--run-name", "r").returncode == 0  # 800 steps = 2 iterations of 2 × 200
    # --checkpoint-every 10 is the default, but typed: honoured; a run defined by --total-steps is extendable
    out = cli("train.py", "--resume", run, "--iterations", "3", "--checkpoint-every", "10", "--progress", "false")
    assert out.returncode == 0, out.stderr
    config = json.loads((run / "config.json").read_text())
    assert (config["iterations"], config["total_steps"], config["checkpoint_every"]) == (3, 0, 10)
    assert (run / "checkpoints" / "iter_000003.safetensors").exists()
    # --lr 0.005 equals the default, but typed: refused, as are other options that define the run
    for option, value in (("--lr", "0.005"), ("--env-id", "Pendulum-v1"), ("--hidden", "8"), ("--method", "svgd")):
        one_line_error(cli("train.py", "--resume", run, option, value), option, "cannot change")
    one_line_error(cli("train.py", "--resume", run, "--iterations", "2"), "at iteration 3")
    done = cli("train.py", "--resume", run)
    assert done.returncode == 0 and "nothing to do" in done.stdout


# -- bad input: one line, status 2, nothing written ----------------------------------------------
BAD_INPUTS = [
    (["train.py", "--device", "banana"], "is not a torch device"),
    (["train.py", "--device", "tpu"], "is not a torch device"),
    (["train.py", "--iterations", "ten"], "invalid int value"),
    (["train.py", "--preset", "{bad}.json"], "unknown preset"),
    (["evaluate.py", "{trained}", "--device", "banana"], "is not a torch device"),
    (["evaluate.py", "{trained}", "--gif", "{bad}/missing/x.gif"], "does not exist"),
    (["evaluate.py", "{trained}", "--gif", "{bad}/x.png"], "must end in .gif"),
    (["train.py", "--resume", "{bad}/nothing"], "has no config.json"),
]
if not torch.cuda.is_available():
    BAD_INPUTS += [(["train.py", "--device", "cuda"], "sees no CUDA device"),
                   (["evaluate.py", "{trained}", "--device", "cuda"], "sees no CUDA device")]


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("trained")
    SVPGTrainer(small(log_dir, iterations=1, run_name="t")).train()
    return log_dir / "t"


@pytest.mark.parametrize("argv, message", BAD_INPUTS, ids=[" ".join(a) for a, _ in BAD_INPUTS])
def test_bad_input_is_one_line_with_status_2(argv, message, trained_run, tmp_path, cli):
    argv = [a.format(trained=trained_run, bad=tmp_path) for a in argv]
    log_dir = tmp_path / "runs"
    out = cli(*argv, *(["--log-dir", log_dir] if argv[0] == "train.py" and "--resume" not in argv else []))
    one_line_error(out, message)
    assert not log_dir.exists(), "bad input must not create a run folder"


def test_garbage_presets_and_configs_name_the_file(tmp_path, trained_run, cli):
    for text, message in (("not json", "is not readable JSON"), ("[1, 2]", "must hold a JSON object"),
                          ('{"lr": "fast"}', "'lr' must be a number"), ('{"hidden": 5}', "'hidden' must be a list")):
        preset = tmp_path / "p.json"
        preset.write_text(text)
        one_line_error(cli("train.py", "--preset", preset, "--log-dir", tmp_path / "runs"), str(preset), message)
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(trained_run), str(copy)], check=True)
    (copy / "config.json").write_text("{")
    one_line_error(cli("train.py", "--resume", copy), str(copy / "config.json"), "not readable JSON")


def test_an_unwritable_log_dir_is_one_line(tmp_path, cli):
    blocker = tmp_path / "file"
    blocker.write_text("")  # a log dir under a regular file cannot be created, even by root
    one_line_error(cli("train.py", *SMALL, "--log-dir", blocker / "runs"), "cannot create run folder", "--log-dir")


def test_a_truncated_model_points_to_checkpoints_resume_can_use(trained_run, tmp_path, cli):
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(trained_run), str(copy)], check=True)
    model = copy / "model.safetensors"
    model.write_bytes(model.read_bytes()[:100])
    one_line_error(cli("evaluate.py", copy), "corrupt or truncated", "checkpoints")
    out = cli("train.py", "--resume", copy, "--iterations", "2")  # resume reads the checkpoints, not model.safetensors
    assert out.returncode == 0, out.stderr


# -- interruptions -------------------------------------------------------------------------------
@pytest.mark.parametrize("sig, status", [pytest.param(signal.SIGINT, 130, marks=pytest.mark.slow), (signal.SIGTERM, 143)])
def test_a_signal_saves_a_checkpoint_of_the_last_iteration_and_exits_nonzero(tmp_path, sig, status):
    run = tmp_path / "s"
    proc = subprocess.Popen([sys.executable, "train.py", *SMALL, "--iterations", "100000", "--eval-episodes", "5",
                             "--log-dir", str(tmp_path), "--run-name", "s"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and len((run / "progress.csv").read_text().splitlines() if (run / "progress.csv").exists() else []) < 3:
        time.sleep(0.05)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == status, stderr
    assert "Traceback" not in stderr and "--resume" in stderr and "evaluation" not in stdout
    (iteration, _), = checkpoints.listed(run)
    rows = list(csv.DictReader(open(run / "progress.csv")))
    assert int(rows[-1]["iteration"]) == iteration
    assert checkpoints.load_checkpoint(run / "checkpoints" / f"iter_{iteration:06d}.safetensors", len(rows)).iteration == iteration


def test_a_full_disk_is_one_line_and_keeps_the_last_checkpoint(tmp_path, cli, monkeypatch):
    import errno

    args = ["train.py", *SMALL, "--iterations", "4", "--checkpoint-every", "2", "--log-dir", tmp_path, "--run-name", "d"]
    import svpg.io

    real_save = svpg.io.save_file
    calls = []

    def save(tensors, f, *a, **kw):  # the second checkpoint (after iteration 2's and its model copy) hits a full disk
        calls.append(f)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_save(tensors, f, *a, **kw)

    monkeypatch.setattr(svpg.io, "save_file", save)
    out = cli(*args)
    one_line_error(out, "No space left on device", "--resume")
    run = tmp_path / "d"
    assert [it for it, _ in checkpoints.listed(run)] == [2] and not list(run.rglob(".*.tmp"))
    monkeypatch.setattr(svpg.io, "save_file", real_save)
    assert cli("train.py", "--resume", run).returncode == 0
    assert [it for it, _ in checkpoints.listed(run)] == [4, 2]


def test_train_py_help_names_every_option_resume_accepts():
    import re

    from svpg.rl import train_cli
    from svpg.rl.config import RESUMABLE_OPTIONS

    listed = re.search(r"With --resume only these options may be given:\s*(.*?)\.\n", train_cli.__doc__, re.S).group(1)
    assert sorted(o.strip().removeprefix("--").replace("-", "_") for o in listed.split(",")) == sorted(RESUMABLE_OPTIONS)
