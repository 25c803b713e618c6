"""Seed-batched training: S seeds in one computation are S single-seed runs (up to float summation
order), each with an ordinary run folder that evaluates, loads and resumes on its own."""
import pytest
import torch

import svpg
from svpg import envs
from svpg.rl.config import SVPGConfig
from svpg.rl.trainer import SVPGTrainer
from svpg.seeding import int_seed
from tests.conftest import CLASSIC

CASES = [  # (task, estimator, method, horizon)
    ("CartPole-v1", "reinforce", "s2vgd", 100),
    ("svpg/CartPoleSwingUp-v0", "a2c", "s2vgd", 100),
    # the double pendulum is chaotic: a summation-order difference in μ grows along an episode past any
    # fixed tolerance on some CPUs, so its episodes are kept short
    ("svpg/DoublePendulum-v0", "reinforce", "svgd", 25),
    ("Pendulum-v1", "a2c", "independent", 100),  # the generic Gymnasium path
]


def config(tmp_runs, env_id, estimator, method, **kw):
    base = CLASSIC | dict(env_id=env_id, estimator=estimator, method=method, num_particles=3, samples_per_particle=400,
                horizon=100, checkpoint_every=2, eval_episodes=0, progress=False, log_dir=str(tmp_runs))
    return SVPGConfig(**(base | kw))


@pytest.mark.parametrize("env_id, estimator, method, horizon", CASES)
def test_each_seed_of_a_batch_is_its_single_seed_run(tmp_runs, env_id, estimator, method, horizon):
    batched = SVPGTrainer(config(tmp_runs, env_id, estimator, method, horizon=horizon, iterations=3, seed=4,
                                 num_seeds=3, run_name="b"))
    singles = [SVPGTrainer(config(tmp_runs, env_id, estimator, method, horizon=horizon, iterations=3, seed=s,
                                  run_name=f"s{s}")) for s in (4, 5, 6)]
    # the first iteration's rollout is the same: identical discrete actions; Gaussian actions μ + σε
    # whose μ is computed by a batched product of another size (float summation order)
    both = batched.model.collect()
    for k, single in enumerate(singles):
        alone = single.model.collect()
        rows = slice(3 * k, 3 * k + 3)
        if alone.actions.is_floating_point():
            torch.testing.assert_close(both.actions[:, rows], alone.actions, rtol=0, atol=1e-5)
        else:
            assert torch.equal(both.actions[:, rows], alone.actions) and torch.equal(both.rewards[:, rows], alone.rewards)
    batched.train()
    for k, single in enumerate(singles):
        single.train()
        torch.testing.assert_close(batched.seed_policy(k).theta, single.policy.theta, rtol=1e-4, atol=1e-5)
        assert batched.run_dirs[k].name == f"b__seed{4 + k}"
        saved = svpg.load(batched.run_dirs[k])
        assert saved.metadata["config"]["seed"] == 4 + k and saved.metadata["config"]["num_seeds"] == 1


def test_grouped_env_resets_equal_lone_batches():
    seeds = [int_seed(0, "env_reset", 0), int_seed(1, "env_reset", 0)]
    together = envs.make_batched("svpg/CartPoleSwingUp-v0", 2 * 40)
    obs = together.reset(seed=seeds)
    for k, s in enumerate(seeds):
        alone = envs.make_batched("svpg/CartPoleSwingUp-v0", 40)
        assert torch.equal(obs[40 * k: 40 * (k + 1)], alone.reset(seed=s))
    with pytest.raises(ValueError, match="equal seed groups"):
        together.reset(seed=[1, 2, 3])


def test_a_batch_resumes_as_a_batch_and_each_seed_alone(tmp_runs):
    settings = dict(iterations=4, seed=0, num_seeds=2, anneal_lr=False)  # a shorter first run keeps the same lr
    straight = SVPGTrainer(config(tmp_runs, "CartPole-v1", "a2c", "s2vgd", **settings, run_name="x"))
    straight.train()
    first = SVPGTrainer(config(tmp_runs, "CartPole-v1", "a2c", "s2vgd", **settings, run_name="y"))
    first.iterations = 2
    first.train()
    resumed = SVPGTrainer.resume(first.run_dirs, iterations=4)
    assert resumed.iteration == 2 and resumed.seeds == [0, 1]
    resumed.train()
    for k in range(2):
        assert torch.equal(resumed.seed_policy(k).theta, straight.seed_policy(k).theta)
    # one seed's folder resumes on its own as an ordinary single-seed run
    alone = SVPGTrainer.resume(first.run_dirs[1], "iter_000002")
    assert alone.seeds == [1]
    torch.testing.assert_close(alone.train().theta, straight.seed_policy(1).theta, rtol=1e-4, atol=1e-5)


def test_a_batch_whose_seeds_stopped_at_different_checkpoints_resumes_from_the_common_one(tmp_runs):
    trainer = SVPGTrainer(config(tmp_runs, "CartPole-v1", "reinforce", "s2vgd", iterations=4, seed=0, num_seeds=2, run_name="z"))
    trainer.train()
    for p in (trainer.run_dirs[1] / "checkpoints").glob("iter_000004.*"):  # as if killed between the seeds' writes
        p.unlink()
    resumed = SVPGTrainer.resume(trainer.run_dirs)
    assert resumed.iteration == 2
    assert (trainer.run_dirs[0] / "checkpoints" / "discarded_after_iter_000002" / "iter_000004.safetensors").exists()


def test_folders_of_different_runs_are_not_batched(tmp_runs):
    a = SVPGTrainer(config(tmp_runs, "CartPole-v1", "reinforce", "s2vgd", iterations=1, run_name="a"))
    b = SVPGTrainer(config(tmp_runs, "CartPole-v1", "reinforce", "svgd", iterations=1, seed=1, run_name="b"))
    with pytest.raises(ValueError, match="different configurations"):
        SVPGTrainer.resume([a.run_dir, b.run_dir])
    with pytest.raises(ValueError, match="repeat a seed"):
        SVPGTrainer.resume([a.run_dir, a.run_dir])


def test_an_existing_seed_folder_refuses_the_whole_batch_before_creating_any(tmp_runs):
    SVPGTrainer(config(tmp_runs, "CartPole-v1", "reinforce", "s2vgd", iterations=1, seed=1, run_name="w__seed1"))
    with pytest.raises(ValueError, match="already exists"):
        SVPGTrainer(config(tmp_runs, "CartPole-v1", "reinforce", "s2vgd", iterations=1, seed=0, num_seeds=2, run_name="w"))
    assert not (tmp_runs / "w__seed0").exists()


def test_the_names_of_the_counts_say_what_they_count():
    from svpg.rl.estimators import A2C

    model = svpg.SVPG("CartPole-v1", num_particles=3, num_seeds=2, samples_per_particle=1000, horizon=500, verbose=0)
    # M (the config's num_particles), S·M (every seed's particles: the rows of θ and of the critics)
    assert model.config.num_particles == 3 and model.spec.num_particles == 3
    assert model.total_particles == 6 == model.policy.theta.shape[0] == model.estimator.theta.shape[0]
    # T (each environment's steps), N (environments per particle), M·N·T (one seed's steps per iteration)
    assert (model.steps_per_env, model.envs_per_particle, model.steps_per_update) == (500, 2, 3 * 2 * 500)
    with pytest.warns(DeprecationWarning, match=r"SVPG.steps_per_iteration is deprecated: use SVPG.steps_per_env"):
        assert model.steps_per_iteration == 500
    options = dict(hidden=(8,), seed=3, gae_lambda=0.95, lr=3e-4, value_steps=1, value_epochs=1)
    with pytest.warns(DeprecationWarning, match=r"A2C\(num_particles=...\) is deprecated: use total_particles="):
        former = A2C(4, num_particles=6, gamma=0.99, **options)
    assert torch.equal(former.theta, A2C(4, 6, 0.99, **options).theta)
    with pytest.raises(TypeError, match="total_particles"):
        A2C(4, gamma=0.99, **options)


@pytest.mark.parametrize("k", [2, -1, True, "0"])
def test_a_seed_index_out_of_the_batch_is_one_line(k, tmp_path):
    model = svpg.SVPG("Pendulum-v1", num_seeds=2, verbose=0, samples_per_particle=200, hidden=(8,))
    for call in (lambda: model.save(tmp_path / "m", seed_index=k), lambda: model.seed_policy(k),
                 lambda: model.seed_config(k)):
        with pytest.raises(ValueError, match=r"seed_index must be an integer from 0 to 1 \(the model runs 2 seed\(s\)\)"):
            call()
    assert not any(tmp_path.iterdir())
