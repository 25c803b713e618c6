"""Save → load round trips, bad checkpoints, and the Stable-Baselines3 predict convention."""
import shutil

import gymnasium as gym
import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

import svpg
from svpg.io import CheckpointError
from svpg.rl.config import SVPGConfig
from svpg.rl.policies import ParticlePolicy, PolicySpec, load_policy, save_policy
from svpg.rl.trainer import SVPGTrainer
from tests.conftest import CLASSIC


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    cfg = SVPGConfig(
        **CLASSIC, num_particles=3, samples_per_particle=500, iterations=2, log_dir=str(tmp_path_factory.mktemp("runs")),
        run_name="saved", progress=False, eval_episodes=0, threads=1,
    )
    trainer = SVPGTrainer(cfg)
    trainer.train()
    return trainer.run_dir, trainer.policy


def test_load_gives_identical_actions(run_dir):
    path, policy = run_dir
    loaded = svpg.load(path)
    assert torch.equal(loaded.theta, policy.theta)
    obs = np.random.default_rng(0).normal(size=(64, 4)).astype(np.float32)
    for i in range(policy.num_particles):
        a, state = policy.set_particle(i).predict(obs, deterministic=True)
        b, _ = loaded.set_particle(i).predict(obs, deterministic=True)
        assert state is None and a.shape == (64,) and np.array_equal(a, b)
    one, _ = loaded.predict(obs[0], deterministic=True)
    assert np.ndim(one) == 0


def test_load_chooses_particle_and_works_with_sb3_evaluate_policy(run_dir):
    from stable_baselines3.common.evaluation import evaluate_policy

    path, _ = run_dir
    policy = svpg.load(path, particle=2)
    assert policy.particle == 2
    mean, std = evaluate_policy(policy, gym.make("CartPole-v1"), n_eval_episodes=3, deterministic=True)
    assert 1 <= mean <= 500 and std >= 0


def test_wrong_observation_shape_is_a_clear_error(run_dir):
    policy = svpg.load(run_dir[0])
    with pytest.raises(ValueError, match=r"expects \(4,\) or \(n_envs, 4\)"):
        policy.predict(np.zeros((2, 3)))


def test_corrupt_truncated_and_foreign_checkpoints_are_refused(run_dir, tmp_path):
    good = (run_dir[0] / "model.safetensors").read_bytes()
    truncated = tmp_path / "truncated.safetensors"
    truncated.write_bytes(good[: len(good) // 2])
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        svpg.load(truncated)
    # a damaged model file inside a run folder points at the run's own earlier checkpoints
    damaged_run = tmp_path / "damaged_run"
    shutil.copytree(run_dir[0], damaged_run)
    (damaged_run / "model.safetensors").write_bytes(good[:100])
    with pytest.raises(CheckpointError, match=r"load a checkpoint instead, e.g. .*damaged_run/checkpoints/iter_000002"):
        svpg.load(damaged_run)
    garbage = tmp_path / "garbage.safetensors"
    garbage.write_bytes(b"\x00" * 100)
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        svpg.load(garbage)
    foreign = tmp_path / "foreign.safetensors"
    save_file({"w": torch.zeros(3)}, str(foreign))
    with pytest.raises(CheckpointError, match="not an svpg checkpoint"):
        svpg.load(foreign)
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        svpg.load(tmp_path / "missing")


def test_mismatched_theta_is_refused(run_dir, tmp_path):
    policy = svpg.load(run_dir[0])
    path = save_policy(policy, tmp_path / "m.safetensors")
    # rewrite the file with θ of the wrong width but the original metadata
    with safe_open(str(path), framework="pt") as f:
        header = f.metadata()
    save_file({"theta": torch.zeros(3, 7)}, str(path), metadata=header)
    with pytest.raises(CheckpointError, match="does not match"):
        svpg.load(path)


def test_checkpoint_writes_are_atomic(run_dir):
    path, _ = run_dir
    leftovers = [p.name for p in path.rglob("*.tmp")]
    assert leftovers == []
    assert sorted(p.name for p in (path / "checkpoints").iterdir()) == ["iter_000002.safetensors"]


def test_obs_scale_survives_save_and_load_and_old_checkpoints_load_without_it(tmp_path):
    spec = PolicySpec.for_spaces(gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2), dict(hidden=(5,)), 2,
                                 obs_scale=(1, 1, 0.1, 0.1))
    policy = ParticlePolicy(spec, seed=0)
    save_policy(policy, tmp_path / "m.safetensors")
    loaded = load_policy(tmp_path / "m.safetensors")
    assert loaded.spec == spec and loaded.spec.obs_scale == (1.0, 1.0, 0.1, 0.1)
    old = spec.to_dict()
    del old["obs_scale"]  # a checkpoint written before the option existed
    assert PolicySpec.from_dict(old).obs_scale == ()
