"""Fault injection: SIGKILL a training process at many moments, including inside every checkpoint
file's write, and check after each kill that the run folder is consistent and that resuming ends
with exactly the uninterrupted run's particles, progress rows and TensorBoard curve."""
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from svpg.rl import checkpoints
from svpg.rl.config import SVPGConfig
from svpg.rl.policies import load_policy
from svpg.rl.trainer import ProgressCSV, SVPGTrainer
from tests.conftest import CLASSIC, CLASSIC_ARGS

ROOT = Path(__file__).resolve().parents[2]
ITERATIONS, EVERY = 6, 2
SETTINGS = CLASSIC | dict(num_particles=2, samples_per_particle=200, iterations=ITERATIONS, checkpoint_every=EVERY,
                eval_episodes=0, progress=False, threads=1)
ARGS = [*CLASSIC_ARGS, *(f"--{k.replace('_', '-')}={str(v).lower() if isinstance(v, bool) else v}"
                         for k, v in SETTINGS.items() if k not in CLASSIC)]
# atomic renames of one uninterrupted process: config.json twice, then (checkpoint, model.safetensors) per checkpoint
RENAMES = 2 + 2 * ITERATIONS // EVERY


def deterministic(row: dict) -> dict:
    return {k: v for k, v in row.items() if k != "time/fps"}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    trainer = SVPGTrainer(SVPGConfig(**SETTINGS, log_dir=str(tmp_path_factory.mktemp("ref")), run_name="ref"))
    trainer.train()
    rows = [deterministic(r) for r in ProgressCSV.read(trainer.run_dir / "progress.csv")]
    return trainer.policy.theta.detach().clone(), rows


def check_consistent(run: Path, reference_rows: list[dict]) -> int:
    """Every complete checkpoint verifies; model.safetensors is one of the two newest; progress backs them."""
    rows = ProgressCSV.read(run / "progress.csv")
    count = ProgressCSV.count(run / "progress.csv")
    assert [deterministic(r) for r in rows[:count]] == reference_rows[:count], "rows equal the uninterrupted run's"
    complete = checkpoints.listed(run)
    thetas = [load_policy(checkpoints.load_checkpoint(path, count).path).theta for _, path in complete]  # raises if inconsistent
    if (run / "model.safetensors").exists():
        model = load_policy(run).theta
        assert any(torch.equal(model, t) for t in thetas[:2]), "model.safetensors is the newest or the one before"
    return complete[0][0] if complete else 0


def kill_and_resume(run: Path, plans: list[str], reference) -> list[tuple[str, int]]:
    """Start ``run`` and kill it with the first plan, resume and kill it with the next one, and so on;
    then resume it to the end. Returns (plan, newest complete checkpoint) of every kill that happened."""
    theta, reference_rows = reference
    moments = []
    for plan in [*plans, None]:
        start = ["--resume", run] if (run / "config.json").exists() else [*ARGS, "--log-dir", run.parent, "--run-name", run.name]
        driver = ["tests/kill_driver.py", plan, "--"] if plan else ["train.py"]
        out = subprocess.run([sys.executable, *driver, *map(str, start)], cwd=ROOT, capture_output=True, text=True,
                             timeout=120)
        assert "Traceback" not in out.stderr, out.stderr
        if plan is None or out.returncode != -9:  # the moment never came: finished, or nothing to do
            assert out.returncode == 0, out.stderr
        at = check_consistent(run, reference_rows)
        if plan and out.returncode == -9:
            moments.append((plan, at))
    assert torch.equal(load_policy(run).theta, theta), "the resumed run ends with the uninterrupted run's θ"
    rows = [deterministic(r) for r in ProgressCSV.read(run / "progress.csv")]
    assert rows == reference_rows, "progress.csv holds each iteration once, with the uninterrupted run's values"
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run))
    events.Reload()
    steps = [e.step for e in events.Scalars("rollout/ep_rew_mean")]
    assert steps == sorted(set(steps)) and len(steps) == ITERATIONS, "no duplicated TensorBoard steps after resumes"
    assert not list(run.rglob(".*.tmp")), "no temporary files left behind"
    return moments


def test_a_kill_inside_a_checkpoint_write_resumes_to_the_uninterrupted_run(tmp_path, reference):
    # inside the second checkpoint's write (the slow test below kills inside and right after every atomic
    # write, before the run folder has its config, and at random moments)
    assert kill_and_resume(tmp_path / "a", ["replace:5:before"], reference) == [("replace:5:before", 2)]


@pytest.mark.slow
def test_kills_at_every_write_and_at_random_moments(tmp_path, reference):
    """A new run killed inside or right after each of its atomic writes, then resumed and killed again at a
    random moment, then resumed to the end: 2 × RENAMES scenarios of two kills each."""
    rng = random.Random(0)
    moments = []
    for k in range(1, RENAMES + 1):
        for phase in ("before", "after"):
            plans = [f"replace:{k}:{phase}", f"time:{rng.uniform(0.3, 2.0):.2f}"]
            moments += kill_and_resume(tmp_path / f"{k}-{phase}", plans, reference)
    print(f"\n{len(moments)} kills at {len(set(moments))} distinct (plan, last complete checkpoint) moments, all consistent:")
    print(", ".join(f"{plan}@{at}" for plan, at in moments))
    assert len(moments) >= 2 * RENAMES
