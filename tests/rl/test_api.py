"""svpg.SVPG as a library: learn / predict / save / load, custom environments, callbacks, bad input."""
import math
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

import svpg
from svpg.rl.algorithm import NonFiniteError
from svpg.rl.callbacks import BaseCallback
from svpg.rl.policies import load_policy
from tests.conftest import CLASSIC

ROOT = Path(__file__).resolve().parents[2]
# the defaults (PPO, normalisation) with fewer minibatch steps, so that each iteration is cheap
CHEAP_PPO = dict(ppo_epochs=2, ppo_minibatches=4, value_epochs=2, value_steps=4)
SMALL = dict(num_particles=4, samples_per_particle=500, verbose=0, **CHEAP_PPO)


class Chase(gym.Env):
    """An unregistered task: say on which side of 0 the observation is (reward 1 when right); 20 steps."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, bad_reward_at: int | None = None):
        self.bad_reward_at = bad_reward_at

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.x = self.np_random.uniform(-1, 1, 1).astype(np.float32)
        return self.x, {}

    def step(self, action):
        reward = float(int(action) == int(self.x[0] > 0))
        if self.t == self.bad_reward_at:
            reward = float("nan")
        self.t += 1
        self.x = self.np_random.uniform(-1, 1, 1).astype(np.float32)
        return self.x, reward, False, self.t >= 20, {}


def test_learn_predict_save_load_round_trip(tmp_path):
    model = svpg.SVPG("CartPole-v1", seed=0, **SMALL).learn(4000)
    assert model.iteration == 2 and model.num_timesteps == 4000
    path = model.save(tmp_path / "cartpole")
    assert path.name == "cartpole.safetensors"
    loaded = svpg.SVPG.load(tmp_path / "cartpole")
    assert torch.equal(loaded.policy.theta, model.policy.theta) and loaded.iteration == 2
    obs = np.zeros((3, 4), np.float32)
    assert np.array_equal(loaded.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0])
    acting = svpg.load(path)  # the rollout-only loader reads the same file
    assert torch.equal(acting.theta, model.policy.theta) and acting.particle == model.policy.particle


@pytest.mark.slow
@pytest.mark.parametrize("estimator", ["reinforce", "a2c"])
def test_save_load_learn_equals_one_uninterrupted_learn(tmp_path, estimator):
    settings = dict(SMALL, estimator=estimator, seed=3)
    straight = svpg.SVPG("CartPole-v1", **settings, anneal_lr=True).learn(8000, callback=svpg.CheckpointCallback(2, tmp_path / "run"))
    # continue from the iteration-2 checkpoint, with the learning-rate schedule of the whole run
    resumed = svpg.SVPG.load(tmp_path / "run" / "checkpoints" / "iter_000002.safetensors", verbose=0)
    resumed.learn(4000, reset_num_timesteps=False)
    assert torch.equal(resumed.policy.theta, straight.policy.theta)
    # without annealing, two learn calls of a saved and reloaded model equal one call
    first = svpg.SVPG("CartPole-v1", **settings, anneal_lr=False).learn(4000)
    first.save(tmp_path / "half")
    second = svpg.SVPG.load(tmp_path / "half", verbose=0).learn(4000, reset_num_timesteps=False)
    whole = svpg.SVPG("CartPole-v1", **settings, anneal_lr=False).learn(8000)
    assert torch.equal(second.policy.theta, whole.policy.theta)
    assert torch.equal(second.estimator.state_dict().get("theta", torch.zeros(1)),
                       whole.estimator.state_dict().get("theta", torch.zeros(1)))


def test_the_library_and_train_py_give_the_same_run(tmp_path):
    import train

    args = ["--num-particles", "4", "--samples-per-particle", "500",
            "--value-epochs", "2", "--value-steps", "4", "--iterations", "2", "--seed", "5", "--estimator", "a2c",
            "--eval-episodes", "0", "--progress", "false", "--log-dir", str(tmp_path), "--run-name", "cli"]
    assert train.main(args) == 0
    a2c = {k: v for k, v in SMALL.items() if not k.startswith("ppo_")}
    model = svpg.SVPG("CartPole-v1", seed=5, estimator="a2c", **a2c).learn(4000)
    assert torch.equal(load_policy(tmp_path / "cli").theta, model.policy.theta)


def test_learn_writes_nothing_unless_asked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    svpg.SVPG("CartPole-v1", **SMALL).learn(2000)
    assert list(tmp_path.iterdir()) == []


def test_an_unregistered_env_instance_must_be_given_again_to_load(tmp_path, monkeypatch):
    # (that such a task learns: docs/api.md trains the same one, and tests/core/test_docs.py checks that it
    # reaches 18 of 20 and that the saved and loaded model acts so on a fresh episode)
    monkeypatch.chdir(tmp_path)
    # an env instance is copied per environment; its model must be given the env again to load
    instance = svpg.SVPG(Chase(), **SMALL)
    instance.save(tmp_path / "chase")
    with pytest.raises(ValueError, match="pass it again"):
        svpg.SVPG.load(tmp_path / "chase")
    assert svpg.SVPG.load(tmp_path / "chase", env=Chase).iteration == 0
    assert list(tmp_path.iterdir()) == [tmp_path / "chase.safetensors"]


def test_env_instances_of_registered_ids_and_vector_envs():
    model = svpg.SVPG(gym.make("Pendulum-v1", g=9.0), **SMALL)
    assert model.config.env_id == "Pendulum-v1" and model.config.env_kwargs == {"g": 9.0}
    vec = gym.make_vec("CartPole-v1", num_envs=8, vectorization_mode="sync",
                       vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP})
    model = svpg.SVPG(vec, num_particles=4, samples_per_particle=100, verbose=0)
    assert model.envs_per_particle == 2 and model.steps_per_env == 50
    model.learn(400)
    with pytest.raises(ValueError, match="same step"):
        svpg.SVPG(gym.make_vec("CartPole-v1", num_envs=4, vectorization_mode="sync"), num_particles=4, verbose=0)
    with pytest.raises(ValueError, match="multiple of"):
        svpg.SVPG(vec, num_particles=3, verbose=0)


ASYNC = dict(vec_env="async", num_particles=2, samples_per_particle=400, verbose=0, **CHEAP_PPO)  # 4 envs


def test_close_ends_the_async_workers_once_and_stops_learn():
    model = svpg.SVPG("Pendulum-v1", n_workers=3, **ASYNC)
    workers = model.env.vec_env.workers.processes  # 3 groups: this process's and 2 workers'
    assert len(workers) == 2 and set(workers) <= set(multiprocessing.active_children())
    model.close()
    assert model.closed and model.env.vec_env.closed and not any(p.is_alive() for p in workers)
    assert not set(workers) & set(multiprocessing.active_children())
    model.close()  # again: nothing left to do
    with pytest.raises(RuntimeError, match=r"this model was closed \(SVPG.close\)"):
        model.learn(800)
    action, _ = model.predict(np.zeros(3, np.float32), deterministic=True)  # acting needs no environment
    assert action.shape == (1,)


def test_a_with_block_closes_what_the_model_built_not_a_vector_env_passed_in():
    with svpg.SVPG("Pendulum-v1", n_workers=2, **ASYNC) as model:
        workers = model.env.vec_env.workers.processes
        assert len(workers) == 1 and workers[0].is_alive()
    assert model.closed and not workers[0].is_alive()
    vec = gym.make_vec("Pendulum-v1", num_envs=2, vectorization_mode="sync",
                       vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP})
    with svpg.SVPG(vec, num_particles=2, verbose=0) as model:
        assert model.env.vec_env is vec
    assert model.closed and not vec.closed  # the caller's to close, as in Stable-Baselines3
    vec.close()


def test_train_py_closes_its_async_workers(tmp_path):
    import train

    before = set(multiprocessing.active_children())
    args = ["--env-id", "Pendulum-v1", "--vec-env", "async", "--n-workers", "2", "--num-particles", "2",
            "--samples-per-particle", "400", "--ppo-epochs", "2", "--ppo-minibatches", "4", "--value-epochs", "2",
            "--value-steps", "4", "--iterations", "1", "--eval-episodes", "0", "--progress", "false",
            "--log-dir", str(tmp_path), "--run-name", "r"]
    assert train.main(args) == 0
    assert set(multiprocessing.active_children()) <= before


def test_a_callback_returning_false_stops_at_that_iteration():
    class StopAt(BaseCallback):
        def _on_step(self):
            return self.model.iteration < 3

    calls = []
    model = svpg.SVPG("CartPole-v1", **SMALL).learn(20_000, callback=[StopAt(), lambda loc, glob: calls.append(1)])
    assert model.iteration == 3 and len(calls) == 3
    assert svpg.SVPG("CartPole-v1", **SMALL).learn(20_000, callback=lambda loc, glob: False).iteration == 1


def test_callback_lifecycle_and_scalars():
    seen = []

    class Record(BaseCallback):
        def _on_training_start(self):
            seen.append("start")

        def _on_rollout_end(self):
            seen.append(("rollout", self.model.iteration, round(self.scalars["train/learning_rate"], 6)))

        def _on_step(self):
            seen.append(("step", self.n_calls, self.num_timesteps))
            return True

        def _on_training_end(self):
            seen.append("end")

    svpg.SVPG("CartPole-v1", lr=0.01, anneal_lr=True, **SMALL).learn(4000, callback=Record())
    assert seen == ["start", ("rollout", 1, 0.01), ("step", 1, 2000), ("rollout", 2, 0.005), ("step", 2, 4000), "end"]


def test_eval_callback_saves_the_best_and_stops_on_a_threshold(tmp_path):
    stop = svpg.StopTrainingOnRewardThreshold(reward_threshold=-math.inf)  # any evaluation reaches it
    evaluation = svpg.EvalCallback("CartPole-v1", callback_on_new_best=stop, eval_freq=2, n_eval_episodes=3,
                                   best_model_save_path=tmp_path, log_path=tmp_path, verbose=0)
    model = svpg.SVPG("CartPole-v1", tensorboard_log=tmp_path / "tb", **SMALL).learn(20_000, callback=evaluation)
    assert model.iteration == 2 and evaluation.best_mean_reward > 0
    best = svpg.SVPG.load(tmp_path / "best_model.safetensors", verbose=0)
    returns = svpg.rl.evaluation.evaluate_particles(best.policy, "CartPole-v1", 3, seed=99)
    assert best.policy.particle in range(4) and returns.shape == (4, 3)
    data = np.load(tmp_path / "evaluations.npz")
    assert list(data["timesteps"]) == [4000] and data["particle_results"].shape == (1, 4, 3)
    # SB3's layout: the evaluated policy's (the best particle's) returns and episode lengths, (n_evals, episodes)
    best_particle = int(data["best_particle"][0])
    assert best_particle == int(data["particle_results"][0].mean(1).argmax())
    np.testing.assert_array_equal(data["results"], data["particle_results"][:, best_particle])
    assert data["ep_lengths"].shape == (1, 3) and (data["ep_lengths"] >= 1).all()
    np.testing.assert_array_equal(data["ep_lengths"], data["results"])  # CartPole-v1: +1 per step
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path / "tb" / "SVPG_1")).Reload()
    tags = set(events.Tags()["scalars"])
    assert {"eval/mean_reward", "eval/mean_reward_particles", "eval/mean_ep_length", "train/policy_loss", "train/learning_rate",
            "rollout/ep_rew_mean"} <= tags
    assert "rollout/particle_returns" in events.Tags()["histograms"]


def test_the_logger_numbers_tensorboard_folders_and_logs_where_it_is_told(tmp_path, capsys):
    from svpg.rl.callbacks import CheckpointCallback
    from svpg.rl.checkpoints import ProgressCSV

    model = svpg.SVPG("CartPole-v1", tensorboard_log=tmp_path / "tb", **(SMALL | {"verbose": 1}))
    model.learn(2000, log_interval=1)
    model.learn(2000, reset_num_timesteps=False)  # continues SVPG_1
    model.learn(2000)
    assert sorted(p.name for p in (tmp_path / "tb").iterdir()) == ["SVPG_1", "SVPG_2"]
    out = capsys.readouterr().out
    assert "SVPG: 1 iterations × 4 particles" in out and "iteration 1: 2,000 steps, return mean" in out
    # told where: events and one progress row per iteration in the run folder, none under tensorboard_log
    model.verbose = 0
    model.logger.log_to([tmp_path / "run"])
    model.learn(4000, callback=CheckpointCallback(0, tmp_path / "run"))
    assert sorted(p.name for p in (tmp_path / "tb").iterdir()) == ["SVPG_1", "SVPG_2"]
    assert list((tmp_path / "run").glob("events.out.tfevents.*")) and not capsys.readouterr().out
    rows = ProgressCSV.read(tmp_path / "run" / "progress.csv")
    assert [(r["iteration"], r["total_steps"]) for r in rows] == [("4", "8000"), ("5", "10000")]
    assert model.logger.writer is None and model.logger.row_files == []  # until the next learn


def test_no_model_improvement_stops_training():
    stop = svpg.StopTrainingOnNoModelImprovement(max_no_improvement_evals=0, min_evals=1)
    evaluation = svpg.EvalCallback(callback_after_eval=stop, eval_freq=1, n_eval_episodes=1, verbose=0)

    class NeverBetter(BaseCallback):  # fixes the evaluations' best so that none after the first improves it
        def _on_step(self):
            evaluation.best_mean_reward = max(evaluation.best_mean_reward, 1e9) if self.n_calls > 1 else evaluation.best_mean_reward
            return True

    model = svpg.SVPG("CartPole-v1", **SMALL).learn(20_000, callback=[NeverBetter(), evaluation])
    assert model.iteration < 10


def test_checkpoint_callback_keeps_the_last_n(tmp_path):
    svpg.SVPG("CartPole-v1", num_particles=2, samples_per_particle=100, verbose=0, **CHEAP_PPO).learn(
        1200, callback=svpg.CheckpointCallback(1, tmp_path, keep_last=2))
    names = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert names == ["iter_000005.safetensors", "iter_000006.safetensors"]
    assert len(list(open(tmp_path / "progress.csv"))) == 7


def test_sb3_s_model_attributes_spaces_n_envs_and_seed():
    from stable_baselines3 import PPO

    model = svpg.SVPG("Pendulum-v1", num_particles=2, samples_per_particle=200, horizon=100, seed=5, verbose=0)
    sb3 = PPO("MlpPolicy", "Pendulum-v1", n_steps=64, batch_size=64, seed=5, device="cpu")
    assert model.observation_space == sb3.observation_space and model.action_space == sb3.action_space
    assert model.n_envs == 4 and model.seed == 5  # 2 particles × 200 samples // horizon 100 environments each


def test_set_env_to_the_same_task_continues_exactly():
    options = dict(estimator="a2c", num_particles=2, samples_per_particle=250, verbose=0)
    straight = svpg.SVPG("CartPole-v1", **options).learn(1_000)
    model = svpg.SVPG("CartPole-v1", **options).learn(500)
    model.close()  # set_env gives a closed model environments again
    model.set_env(gym.make("CartPole-v1"))  # an instance: copied into as many environments as before
    assert model.n_envs == 2 and not model.closed and model.config.env_id == "CartPole-v1"
    model.learn(500, reset_num_timesteps=False)
    assert torch.equal(model.policy.theta, straight.policy.theta)  # each iteration starts from seeded resets


def test_set_env_takes_an_env_of_the_model_s_spaces_refuses_others_and_save_records_it(tmp_path):
    from gymnasium.envs.classic_control.cartpole import CartPoleEnv

    model = svpg.SVPG(CartPoleEnv, estimator="a2c", num_particles=2, samples_per_particle=250, horizon=250, verbose=0)
    with pytest.raises(ValueError, match=r"^the new env's observation space Box\(-1.0, 1.0, \(1,\), float32\) differs"):
        model.set_env(Chase())
    vec = gym.make_vec("CartPole-v1", num_envs=3, vectorization_mode="sync",
                       vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP})
    with pytest.raises(ValueError, match=r"^the vector env has 3 environments and the model trains 2: give one of 2"):
        model.set_env(vec)
    assert not vec.closed and model.config.env_id.startswith("custom:")  # refused: nothing changed
    vec.close()
    model.learn(500)
    model.set_env("CartPole-v1")
    model.learn(500, reset_num_timesteps=False)
    loaded = svpg.SVPG.load(model.save(tmp_path / "m"), verbose=0)  # an id now: no env needed to load
    assert loaded.config.env_id == "CartPole-v1" and loaded.horizon == 250 and loaded.num_timesteps == 1_000


def test_set_random_seed_respawns_the_streams_and_a_saved_model_continues_with_them(tmp_path):
    options = dict(estimator="a2c", num_particles=2, samples_per_particle=250, verbose=0)
    straight = svpg.SVPG("CartPole-v1", **options).learn(1_000)
    model = svpg.SVPG("CartPole-v1", **options).learn(500)
    model.set_random_seed(None)  # SB3's: nothing
    assert model.seed == 0
    model.set_random_seed(7)
    assert model.seed == 7 and model.seeds == [7]
    resumed = svpg.SVPG.load(model.save(tmp_path / "m"), verbose=0)
    for m in (model, resumed):
        m.learn(500, reset_num_timesteps=False)
    assert torch.equal(model.policy.theta, resumed.policy.theta)  # bit for bit with the new seed
    assert not torch.equal(model.policy.theta, straight.policy.theta)  # the second iteration drew other episodes
    with pytest.raises(ValueError, match="seed"):
        model.set_random_seed(-1)


def test_an_sb3_vec_env_is_one_line_naming_its_id_and_what_replaces_vec_normalize():
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    env = make_vec_env("Pendulum-v1", n_envs=2)
    with pytest.raises(ValueError, match=r"^env is Stable-Baselines3's DummyVecEnv: .*pass its id 'Pendulum-v1' \(vec_env='async'.*\)$"):
        svpg.SVPG("MlpPolicy", env)
    with pytest.raises(ValueError, match=r"^env is Stable-Baselines3's VecNormalize: .*'Pendulum-v1'.*normalize_obs=True / normalize_reward=True instead of VecNormalize$"):
        svpg.SVPG(VecNormalize(env))
    env.close()


def test_sb3_s_policy_kwargs_size_the_networks_as_sb3_s_net_arch_does():
    def config(**kwargs):
        return svpg.SVPG("Pendulum-v1", verbose=0, **kwargs).config

    ppo = dict(policy_kwargs=dict(net_arch=[32, 32], log_std_init=-0.5, activation_fn=torch.nn.Tanh))
    assert config(**ppo) == config(hidden=(32, 32), critic_hidden=(32, 32), log_std_init=-0.5)  # a list: both, as SB3
    split = dict(policy_kwargs=dict(net_arch=dict(pi=[16], vf=[48, 48])))
    assert config(**split) == config(hidden=(16,), critic_hidden=(48, 48))
    sac = dict(estimator="sac", policy_kwargs=dict(net_arch=dict(pi=[64], qf=[128, 128]), n_critics=2))
    assert config(**sac) == config(estimator="sac", hidden=(64,), critic_hidden=(128, 128))
    # REINFORCE has no critic: a list sizes the policy alone (critic_hidden would be refused as an option it ignores)
    assert config(estimator="reinforce", policy_kwargs=dict(net_arch=[8])).hidden == (8,)


def test_every_n_timesteps_fires_after_each_n_steps_at_an_iteration_s_end():
    seen = []

    class Seen(BaseCallback):
        def _on_step(self):
            seen.append(self.num_timesteps)
            return self.num_timesteps < 4000  # a child's False stops training, as in SB3

    model = svpg.SVPG("CartPole-v1", estimator="a2c", samples_per_particle=250, verbose=0)  # 1,000 steps an iteration
    model.learn(10_000, callback=svpg.EveryNTimesteps(n_steps=1500, callback=Seen()))
    assert seen == [2000, 4000] and model.num_timesteps == 4000
    with pytest.raises(ValueError, match="n_steps must be a positive integer, got 0"):
        svpg.EveryNTimesteps(0, Seen())


def test_get_env_is_an_sb3_vec_env_that_sb3_s_readme_loop_and_evaluate_policy_run_on():
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import VecEnv

    model = svpg.SVPG("MlpPolicy", gym.make("CartPole-v1"), estimator="a2c", samples_per_particle=500, verbose=0)
    model.learn(2_000)
    vec_env = model.get_env()
    assert isinstance(vec_env, VecEnv) and vec_env is model.get_env() and vec_env.num_envs == model.n_envs
    vec_env.seed(3)
    first = vec_env.reset()
    vec_env.seed(3)
    assert isinstance(first, np.ndarray) and first.shape == (model.n_envs, 4) and np.array_equal(vec_env.reset(), first)
    ended = []
    obs = first
    for _ in range(60):  # SB3's README loop
        action, _states = model.predict(obs, deterministic=True)
        obs, rewards, dones, infos = vec_env.step(action)
        assert rewards.shape == dones.shape == (model.n_envs,) and len(infos) == model.n_envs
        ended += [(obs[i], infos[i]["terminal_observation"]) for i in np.flatnonzero(dones)]
    assert ended and all(next_start.shape == last.shape == (4,) and not np.array_equal(next_start, last)
                         for next_start, last in ended)  # the next episode's start, the ended one's last state
    assert evaluate_policy(model, vec_env, n_eval_episodes=4, warn=False)[0] > 9  # SB3's loop over SB3's VecEnv
    model.set_env("CartPole-v1")
    assert model.get_env() is not vec_env  # a view of the new environments


def test_get_env_gives_the_environments_own_observations():
    model = svpg.SVPG(Chase, num_particles=2, samples_per_particle=20, verbose=0)  # a factory: the generic path
    obs = model.get_env().reset()
    assert obs.shape == (2, 1) and obs.dtype == np.float32
    discrete = svpg.SVPG("FrozenLake-v1", estimator="a2c", num_particles=2, samples_per_particle=100, verbose=0)
    obs = discrete.get_env().reset()
    assert obs.dtype.kind == "i" and obs.shape == (2,) and (obs == 0).all()  # the start square, not a one-hot
    actions, _ = discrete.predict(obs)
    assert discrete.get_env().step(actions)[0].shape == (2,)


def test_an_sb3_callback_is_one_line_naming_svpg_s():
    from stable_baselines3.common.callbacks import BaseCallback, CheckpointCallback

    class Mine(BaseCallback):
        def _on_step(self):
            return True

    model = svpg.SVPG("CartPole-v1", num_particles=2, samples_per_particle=100, verbose=0)
    for callback, name in ((Mine(), "Mine"), (CheckpointCallback(100, "x"), "CheckpointCallback")):
        with pytest.raises(ValueError, match=rf"^{name} is Stable-Baselines3's callback, .*subclass svpg.BaseCallback"):
            model.learn(200, callback=callback)
    assert model.num_timesteps == 0


def test_sb3_s_load_options_are_one_line_saying_none_is_needed(tmp_path):
    path = svpg.SVPG("CartPole-v1", num_particles=2, samples_per_particle=100, verbose=0).save(tmp_path / "m")
    for name, value in (("custom_objects", {"learning_rate": 0.0}), ("print_system_info", True), ("force_reset", True)):
        with pytest.raises(ValueError, match=rf"^\['{name}'\] are SB3's options for its zip files; .*drop them$"):
            svpg.SVPG.load(path, **{name: value})
    with pytest.raises(ValueError, match=r"^\['alpha'\] cannot change when loading a model"):
        svpg.SVPG.load(path, alpha=3.0)


def test_eval_callback_takes_sb3_s_keywords_as_its_docs_pass_them():
    callback = svpg.EvalCallback("CartPole-v1", eval_freq=500, deterministic=True, render=False, warn=True)
    assert callback.eval_freq == 500 and callback.deterministic
    with pytest.raises(ValueError, match=r"^render=True: .*evaluate.py <model> --gif out.gif$"):
        svpg.EvalCallback("CartPole-v1", render=True)


def test_checkpoint_callback_takes_sb3_s_keywords(tmp_path):
    # save_replay_buffer / save_vecnormalize: the checkpoint holds the whole state either way
    model = svpg.SVPG("Pendulum-v1", estimator="sac", hidden=(16,), critic_hidden=(16,), batch_size=32,
                      learning_starts=100, train_freq=2, horizon=50, verbose=0)
    callback = svpg.CheckpointCallback(save_freq=2, save_path=tmp_path, save_replay_buffer=False, save_vecnormalize=True)
    model.learn(400, callback=callback)
    loaded = svpg.SVPG.load(tmp_path / "checkpoints" / "iter_000002.safetensors", verbose=0)
    assert loaded.replay_buffer.size() == 400 and torch.equal(loaded.replay_buffer.obs, model.replay_buffer.obs)
    with pytest.raises(ValueError, match=r"^name_prefix='rl_model': svpg names its checkpoints .*iter_NNNNNN") as err:
        svpg.CheckpointCallback(save_freq=2, save_path="x", name_prefix="rl_model")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(num_particles="16"), "num_particles"),
    (dict(alpha=-1.0), "--alpha"),
    (dict(estimator="ppo", clip_range=1.5), "--clip-range"),
    (dict(lr="fast"), "'lr' must be a number"),
    (dict(iterations=3), "not SVPG options"),
    (dict(learning_rate=0.1), r"unknown option\(s\) \['learning_rate'\]; for SB3's learning_rate pass lr "),
    (dict(estimator="sac", use_sde=True), r"for SB3's use_sde pass nothing \(no gSDE: SAC explores with its policy's"),
    (dict(estimator="sac", target_update_interval=2), r"for SB3's target_update_interval pass nothing \(the targets"),
    (dict(n_epochs=3, n_steps=64), r"for SB3's n_epochs pass ppo_epochs; for SB3's n_steps pass samples_per_particle "),
    (dict(policy_kwargs=dict(activation_fn=torch.nn.ReLU)), r"^policy_kwargs activation_fn=.*ReLU'>: svpg's policies are tanh"),
    (dict(policy_kwargs=dict(ortho_init=False)), r"^policy_kwargs ortho_init=False: svpg has no counterpart for it; svpg reads"),
    (dict(policy_kwargs=dict(net_arch=[8]), hidden=(4,)), r"^policy_kwargs and \['hidden'\] set the same option: pass one"),
    (dict(colour=1), r"unknown option\(s\) \['colour'\]: see help"),
    (dict(log_std_init=float("nan")), "--log-std-init must be a finite number"),
    (dict(log_std_init=-2.0), r"--log-std-init sets the log-std of a Gaussian Box head, which ppo on Discrete\(2\)"),
])
def test_bad_arguments_are_one_line_value_errors(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment) as err:
        svpg.SVPG("CartPole-v1", **kwargs)
    assert "\n" not in str(err.value)


def test_sb3_s_policy_name_before_the_env_gives_the_same_model():
    options = dict(seed=2, verbose=0, num_particles=2, samples_per_particle=200, hidden=(8,))
    ours, sb3_form = svpg.SVPG("Pendulum-v1", **options), svpg.SVPG("MlpPolicy", "Pendulum-v1", **options)
    assert sb3_form.config == ours.config and torch.equal(sb3_form.policy.theta, ours.policy.theta)
    with pytest.raises(ValueError, match=r"^'MlpPolicy' is SB3's policy name, not an environment: pass SVPG\('MlpPolicy', env\)"):
        svpg.SVPG("MlpPolicy")
    for args in (("Pendulum-v1", "CartPole-v1"), ("MlpPolicy", "Pendulum-v1", 3)):
        with pytest.raises(ValueError, match=r"^SVPG takes one env \(positional or env=\), after SB3's policy"):
            svpg.SVPG(*args, **options)
    with pytest.raises(ValueError, match=r"^SVPG takes one env"):
        svpg.SVPG("Pendulum-v1", env="Pendulum-v1", **options)
    # the env by keyword, after SB3's policy name, and rl-zoo3's keywords policy= and env=
    for model in (svpg.SVPG(env="Pendulum-v1", **options), svpg.SVPG("MlpPolicy", env="Pendulum-v1", **options),
                  svpg.SVPG(policy="MlpPolicy", env="Pendulum-v1", **options)):
        assert model.config == ours.config and torch.equal(model.policy.theta, ours.policy.theta)
    assert svpg.SVPG(verbose=0).config.env_id == "CartPole-v1"
    from stable_baselines3.sac.policies import SACPolicy

    for policy, args in (("LstmPolicy", ()), (SACPolicy, ()), ("MlpPolicy", ("MlpPolicy",))):
        with pytest.raises(ValueError, match=r"^policy=") as err:
            svpg.SVPG(*args, "Pendulum-v1", policy=policy, **options)
        assert "\n" not in str(err.value)


def test_log_std_init_starts_every_particle_at_that_log_std_and_changes_nothing_else():
    options = dict(seed=3, verbose=0, num_particles=2, samples_per_particle=200, hidden=(8,))
    default, narrow = svpg.SVPG("Pendulum-v1", **options), svpg.SVPG("Pendulum-v1", log_std_init=-2.0, **options)
    layout = narrow.policy.layout
    assert layout.get(narrow.policy.theta, "pi.log_std").tolist() == [[-2.0], [-2.0]]
    assert layout.get(default.policy.theta, "pi.log_std").tolist() == [[0.0], [0.0]]
    rest = [name for name in layout if name != "pi.log_std"]
    assert rest and all(torch.equal(layout.get(narrow.policy.theta, n), layout.get(default.policy.theta, n)) for n in rest)
    with pytest.raises(ValueError, match=r"^--log-std-init sets the log-std of a Gaussian Box head, which sac"):
        svpg.SVPG("Pendulum-v1", estimator="sac", log_std_init=-1.0, **options)


def test_bad_environments_are_named():
    with pytest.raises(ValueError, match="not registered"):
        svpg.SVPG("CartPol-v1")
    with pytest.raises(ValueError, match="cannot import 'no_such_module'"):
        svpg.SVPG("no_such_module:Thing-v0")
    with pytest.raises(ValueError, match="env must be"):
        svpg.SVPG(42)
    with pytest.raises(ValueError, match="env_kwargs"):
        svpg.SVPG("svpg/CartPoleSwingUp-v0", env_kwargs={"x": 1})
    try:
        import Box2D  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match="needs a package that is not installed.*box2d"):
            svpg.SVPG("CarRacing-v3", verbose=0)
    with pytest.raises(ValueError, match="total_timesteps"):
        svpg.SVPG("CartPole-v1", **SMALL).learn(0)


def test_a_non_finite_reward_is_reported_as_the_environment_s(tmp_path):
    model = svpg.SVPG(lambda: Chase(bad_reward_at=3), **SMALL)
    with pytest.raises(NonFiniteError, match=r"non-finite reward at step 3 of particle 0"):
        model.learn(1000)
    assert model.iteration == 0


@pytest.mark.slow
def test_custom_env_module_id_and_kwargs_on_the_command_line(tmp_path, monkeypatch, capsys):
    import evaluate
    import train

    (tmp_path / "my_tasks.py").write_text(
        "import gymnasium as gym\n"
        "gym.register('Tilted-v0', entry_point='gymnasium.envs.classic_control:PendulumEnv', max_episode_steps=50)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    args = ["--env-id", "my_tasks:Tilted-v0", "--env-kwargs", '{"g": 3.0}', "--num-particles", "2", "--samples-per-particle",
            "100", "--iterations", "2", "--eval-episodes", "2", "--progress", "false", "--log-dir", str(tmp_path),
            "--run-name", "tilted"]
    assert train.main(args) == 0
    run = tmp_path / "tilted"
    import json

    config = json.loads((run / "config.json").read_text())
    assert config["env_id"] == "my_tasks:Tilted-v0" and config["env_kwargs"] == {"g": 3.0}
    assert evaluate.main([str(run), "--eval-episodes", "2"]) == 0
    assert train.main(["--resume", str(run), "--iterations", "3", "--progress", "false"]) == 0
    assert "my_tasks:Tilted-v0" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        train.main(["--env-kwargs", "[1]"])
    assert exit_.value.code == 2 and "JSON object" in capsys.readouterr().err


@pytest.mark.slow
def test_a_second_writer_of_a_run_folder_is_refused(tmp_path, capsys):
    import train
    from svpg.runs import RunLock

    args = ["--num-particles", "2", "--samples-per-particle", "100", "--iterations", "2", "--eval-episodes", "0",
            "--progress", "false", "--log-dir", str(tmp_path), "--run-name", "r"]
    assert train.main(args) == 0
    run = tmp_path / "r"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom svpg.runs import RunLock\n"
                               f"lock = RunLock({str(run)!r}).acquire(); print('held', flush=True); time.sleep(60)"],
                              cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        capsys.readouterr()
        assert train.main(["--resume", str(run), "--iterations", "4"]) == 2
        err = capsys.readouterr().err
        assert f"in use by process {holder.pid}" in err and err.count("\n") == 1
    finally:
        holder.kill()
        holder.wait()
    # the killed holder's lock is stale: the next writer takes it over
    assert train.main(["--resume", str(run), "--iterations", "4", "--progress", "false"]) == 0
    assert RunLock(run).acquire().previous is None  # released cleanly by the resumed run
    assert os.path.exists(run / "checkpoints" / "iter_000004.safetensors")


@pytest.mark.slow
def test_two_concurrent_resumes_one_is_refused_and_the_folder_stays_consistent(tmp_path):
    import json
    import time

    from svpg.rl.callbacks import ProgressCSV

    base = [sys.executable, "train.py"]
    settings = ["--num-particles", "2", "--samples-per-particle", "200", "--eval-episodes", "0", "--progress", "false"]
    subprocess.run([*base, *settings, "--iterations", "2", "--log-dir", str(tmp_path), "--run-name", "r"], cwd=ROOT, check=True,
                   capture_output=True)
    run = tmp_path / "r"
    resume = [*base, "--resume", str(run), "--iterations", "10"]  # PPO's 320 SVGD steps per iteration: ~3 s each
    first = subprocess.Popen(resume, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline:  # until the first one holds the folder
        text = (run / ".lock").read_text() if (run / ".lock").exists() else ""
        if text and json.loads(text)["pid"] == first.pid:
            break
        time.sleep(0.05)
    second = subprocess.run(resume, cwd=ROOT, capture_output=True, text=True)
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert second.returncode == 2 and f"in use by process {first.pid}" in second.stderr
    assert "Traceback" not in second.stderr
    iterations = [int(r["iteration"]) for r in ProgressCSV.read(run / "progress.csv")]
    assert iterations == list(range(1, 11))


@pytest.mark.slow
def test_a_callback_that_raises_leaves_a_checkpoint_that_resumes_exactly(tmp_path):
    from svpg.rl.config import SVPGConfig
    from svpg.rl.trainer import SVPGTrainer

    class Boom(BaseCallback):
        def _on_step(self):
            if self.model.iteration == 3:
                raise RuntimeError("boom")
            return True

    config = SVPGConfig(**CLASSIC, num_particles=2, samples_per_particle=200, iterations=6, checkpoint_every=5, progress=False,
                        log_dir=str(tmp_path), run_name="boom")
    with pytest.raises(RuntimeError, match="boom"):
        SVPGTrainer(config).train(callback=Boom())
    resumed = SVPGTrainer.resume(tmp_path / "boom")
    assert resumed.iteration == 3  # the iteration that finished before the callback raised was saved
    straight = SVPGTrainer(SVPGConfig(**{**config.__dict__, "run_name": "straight"})).train()
    assert torch.equal(resumed.train().theta, straight.theta)
