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


# SB3's get_parameters / set_parameters and policy.state_dict: the parameters alone, from a model or a file
SMALL_SAC = dict(estimator="sac", hidden=(32,), critic_hidden=(32,), train_freq=8, learning_starts=200, verbose=0)


def flat(state):
    """Every tensor of a nested state, by its path."""
    if isinstance(state, torch.Tensor):
        return {(): state}
    items = state.items() if isinstance(state, dict) else enumerate(state) if isinstance(state, (list, tuple)) else ()
    return {(key, *path): t for key, value in items for path, t in flat(value).items()}


def test_set_parameters_from_a_saved_file_takes_its_parameters_and_keeps_this_model_s_data(tmp_path):
    trained = svpg.SVPG("Pendulum-v1", **SMALL_SAC).learn(800)  # 1 iteration: 4 particles × 200 steps
    fresh = svpg.SVPG("Pendulum-v1", seed=1, **SMALL_SAC)
    fresh.set_parameters(trained.save(tmp_path / "trained"))
    ours, theirs = flat(fresh.get_parameters()), flat(trained.get_parameters())
    assert ours.keys() == theirs.keys() and {p[0] for p in ours} == {"policy", "policy.optimizer", "estimator"}
    assert {p[1] for p in ours if p[0] == "estimator"} == {"critic", "target", "critic_optimizer", "log_ent_coef", "ent_optimizer"}
    assert all(torch.equal(ours[p], theirs[p]) for p in ours)
    assert torch.equal(fresh.policy.theta, trained.policy.theta)
    assert fresh.iteration == 0 and fresh.replay_buffer.size() == 0 and trained.replay_buffer.size() > 0


def test_get_parameters_are_copies_and_a_dict_round_trips():
    model = svpg.SVPG("Pendulum-v1", **SMALL_SAC)
    params = model.get_parameters()
    params["policy"]["pi.0.bias"].fill_(1.0)
    params["estimator"]["critic"].zero_()
    assert not (model.policy.state_dict()["pi.0.bias"] == 1).all()  # the model's own θ and critics are untouched
    assert model.estimator.critic.abs().sum() > 0
    other = svpg.SVPG("Pendulum-v1", seed=3, **SMALL_SAC)
    other.set_parameters(params)
    assert (other.policy.state_dict()["pi.0.bias"] == 1).all() and (other.estimator.critic == 0).all()


def test_policy_state_dict_names_every_block_with_its_particle_axis():
    model = svpg.SVPG("Pendulum-v1", method="svgd", hidden=(8,), num_particles=3, verbose=0)
    state = model.policy.state_dict()
    assert {k: tuple(v.shape) for k, v in state.items()} == {
        "pi.0.C": (3, 3, 8), "pi.0.bias": (3, 8), "pi.1.C": (3, 8, 1), "pi.1.bias": (3, 1), "pi.log_std": (3, 1)
    }
    theta = model.policy.theta.detach().clone()
    assert torch.equal(torch.cat([v.reshape(3, -1) for v in state.values()], 1), theta)  # θ's blocks, in θ's order
    with pytest.raises(ValueError, match=r"missing \['pi.log_std'\], unexpected \['pi.2.bias'\]"):
        model.policy.load_state_dict({**{k: v for k, v in state.items() if k != "pi.log_std"}, "pi.2.bias": state["pi.1.bias"]})
    assert model.policy.load_state_dict({"pi.log_std": torch.full((3, 1), -1.0)}, strict=False)[0] == list(state)[:4]
    assert (model.policy.theta[:, -1] == -1).all() and torch.equal(model.policy.theta[:, :-1], theta[:, :-1])


def test_parameters_of_another_network_or_part_are_refused_and_nothing_changes(tmp_path):
    model = svpg.SVPG("Pendulum-v1", **SMALL_SAC)
    before = flat(model.get_parameters())
    wider = svpg.SVPG("Pendulum-v1", **(SMALL_SAC | {"critic_hidden": (16,)})).get_parameters()
    wider["policy"] = model.get_parameters()["policy"]  # the same policy, other critics: refused after the policy loaded
    with pytest.raises(ValueError, match=r"^set_parameters: these parameters do not fit this model \(.*\); nothing was changed$"):
        model.set_parameters(wider)
    with pytest.raises(ValueError, match=r"^set_parameters: these parameters do not fit this model \(block .pi.0.C. has shape \(4, 3, 64\), the policy.s \(4, 3, 32\)"):
        model.set_parameters(svpg.SVPG("Pendulum-v1", **(SMALL_SAC | {"hidden": (64,)})).get_parameters())
    with pytest.raises(ValueError, match=r"missing \['policy.optimizer', 'estimator'\], unexpected \['critic'\]"):
        model.set_parameters({"policy": wider["policy"], "critic": {}})
    a2c = svpg.SVPG("Pendulum-v1", estimator="a2c", verbose=0).get_parameters()
    with pytest.raises(ValueError, match=r"^set_parameters: estimator 'sac' keeps \['critic', .*the parameters give \['optimizer', 'theta'\]"):
        model.set_parameters({"estimator": a2c["estimator"]}, exact_match=False)
    after = flat(model.get_parameters())
    assert all(torch.equal(after[p], before[p]) for p in before)
    batched = svpg.SVPG("Pendulum-v1", num_seeds=2, **SMALL_SAC)
    with pytest.raises(ValueError, match="trains 2 seeds and a saved file holds one: pass a dict"):
        batched.set_parameters(model.save(tmp_path / "one"))
