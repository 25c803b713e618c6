"""The observation- and action-space comparison (``--budget spaces``): its tasks, agents and SB3 settings, tiny
runs of S²VGD and SB3 PPO on each task that finish and resume, the two package tasks, and its report table."""
import json

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import svpg.envs  # noqa: F401  (registers the tasks)
from svpg.envs.spaces_tasks import Knobs, PointReach, minatar_installed
from svpg.studies import benchmark, sb3
from tests.rl.test_benchmark import Interrupt, read_csv, table_rows

BUDGET = 400
# svpg: 2 particles × 100 steps per iteration, 2 iterations; SB3 PPO: 4 rollouts of 100 steps, a checkpoint after each
SVPG_TINY = {"num_particles": 2, "samples_per_particle": 100, "hidden": [8], "critic_hidden": [8], "ppo_epochs": 1,
             "ppo_minibatches": 2, "value_epochs": 1, "value_steps": 2}
PPO_TINY = {"n_steps": 100, "batch_size": 50, "n_epochs": 1}
PACKAGE_TASKS = ("svpg/PointReach-v0", "svpg/Knobs-v0")
needs_minatar = pytest.mark.skipif(not minatar_installed(), reason='MinAtar is not installed: pip install "svpg[minatar]"')
# MinAtar's tiny runs are slow-marked (its CNN: about 2 s each); its wrapper and registration are tested below
TASKS = (*PACKAGE_TASKS, pytest.param("MinAtar/Breakout-v1", marks=[needs_minatar, pytest.mark.slow]))


@pytest.fixture
def tiny_ppo(monkeypatch):
    for task in benchmark.SPACES_TASKS:  # the task's policy (and MinAtar's CNN) kept, the rollout shrunk
        monkeypatch.setitem(benchmark.ZOO["ppo"], task, {**benchmark.ZOO["ppo"][task], **PPO_TINY})


def job(out, task, agent):
    extra = {"svpg_options": SVPG_TINY} if agent in benchmark.SVPG_AGENTS else {}
    return {"out": str(out), "task": task, "agent": agent, "seed": 0, "total_steps": BUDGET, "eval_episodes": 2,
            **extra}


def test_the_spaces_budget_lists_its_tasks_agents_and_budgets():
    budget = benchmark.BUDGETS["spaces"]
    assert budget.tasks == ("MinAtar/Breakout-v1", "svpg/PointReach-v0", "svpg/Knobs-v0")
    assert budget.agents == ("s2vgd", "ppo") and budget.reference == "ppo" and budget.auc
    assert budget.steps("MinAtar/Breakout-v1") == 1_000_000
    assert budget.steps("svpg/PointReach-v0") == 100_000 and budget.steps("svpg/Knobs-v0") == 100_000
    # svpg's presets: whole episodes per particle (50 and 20 steps), whole iterations of 4 particles per budget
    for task, episode in (("svpg/PointReach-v0", 50), ("svpg/Knobs-v0", 20)):
        preset = benchmark.load_preset(task)
        assert preset["samples_per_particle"] % episode == 0
        assert budget.steps(task) % (4 * preset["samples_per_particle"]) == 0
    # SB3 PPO: SB3's defaults with the policy each space needs (rl-zoo3 has no entries for these tasks)
    policies = {task: benchmark.sb3_settings("ppo", task)[2].get("policy", "MlpPolicy") for task in budget.tasks}
    assert policies == {"MinAtar/Breakout-v1": "CnnPolicy", "svpg/PointReach-v0": "MultiInputPolicy",
                        "svpg/Knobs-v0": "MlpPolicy"}
    n_envs, normalize, kwargs = benchmark.sb3_settings("ppo", "MinAtar/Breakout-v1")
    assert (n_envs, normalize) == (1, None)
    assert kwargs["policy_kwargs"]["features_extractor_class"].__name__ == "MinAtarCNN"
    # the tables name both networks; 1 M steps of PPO's defaults: 489 rollouts of 2,048 × 10 epochs × 32 minibatches
    assert benchmark.training_shape("ppo", "MinAtar/Breakout-v1", 1_001_472) == (
        "CNN 16 × 3×3 → 128 ReLU, 64 × 64 tanh", 489 * 10 * 32)
    # S²VGD: 25 iterations × 10 PPO epochs × 32 minibatches
    assert benchmark.training_shape("s2vgd", "svpg/Knobs-v0", 100_000) == ("64 × 64 tanh, 4 particles", 25 * 10 * 32)


def test_minatar_cnn_reads_channel_last_bool_images():
    """SB3's side of MinAtar: 16 3×3 filters (padding 1) and a dense layer to 128 on a 10 × 10 × 4 bool image."""
    import torch

    from svpg.studies.sb3_extractors import MinAtarCNN

    space = gym.spaces.Box(0.0, 1.0, (10, 10, 4), bool)  # as MinAtar declares it
    net = MinAtarCNN(space)
    assert net.conv[0].weight.shape == (16, 4, 3, 3) and net.linear[0].in_features == 16 * 10 * 10
    obs = torch.zeros(2, 10, 10, 4)
    obs[1, 3, 5, 2] = 1.0  # one lit cell in channel 2 changes the features of that observation only
    out = net(obs)
    assert out.shape == (2, 128) and not torch.equal(out[0], out[1])


def test_the_package_tasks_pass_gymnasiums_checks():
    for env_id, cls, steps in (("svpg/PointReach-v0", PointReach, 50), ("svpg/Knobs-v0", Knobs, 20)):
        env = gym.make(env_id)
        assert isinstance(env.unwrapped, cls) and env.spec.max_episode_steps == steps
        check_env(env.unwrapped, skip_render_check=False)
        env.close()
    reach = gym.make("svpg/PointReach-v0")
    assert isinstance(reach.observation_space, gym.spaces.Dict)
    assert set(reach.observation_space.spaces) == {"observation", "achieved_goal", "desired_goal"}
    knobs = gym.make("svpg/Knobs-v0")
    assert np.array_equal(knobs.action_space.nvec, [3, 3, 3])


@needs_minatar
def test_minatar_ids_are_registered_and_take_svpgs_63_bit_seeds():
    """``import svpg`` registers MinAtar's ids (Gymnasium 1.x loads no plugins); a seed of 2³² and more, which
    MinAtar's RandomState refuses, is taken modulo 2³²."""
    env = gym.make("MinAtar/Breakout-v1")
    assert env.observation_space.shape == (10, 10, 4) and env.action_space.n == 3  # v1: the minimal action set
    big, _ = env.reset(seed=2**40 + 7)
    steps_big = [env.step(1)[0] for _ in range(5)]
    small, _ = env.reset(seed=7)
    steps_small = [env.step(1)[0] for _ in range(5)]
    assert np.array_equal(big, small) and all(np.array_equal(a, b) for a, b in zip(steps_big, steps_small))
    assert env.unwrapped.np_random is not None


def test_point_reach_rewards_the_negative_distance_to_the_goal():
    env = PointReach()
    obs, _ = env.reset(seed=0)
    env._pos, env._goal = np.array([0.0, 0.0]), np.array([0.5, 0.0])
    obs, reward, terminated, truncated, info = env.step(np.array([1.0, 0.0]))  # 0.1 to the right
    assert reward == pytest.approx(-0.4) and not terminated and not truncated
    assert np.allclose(obs["achieved_goal"], [0.1, 0.0]) and np.allclose(obs["desired_goal"], [0.5, 0.0])
    assert np.allclose(obs["observation"], [0.1, 0.0, 1.0, 0.0])  # position, velocity per unit of step
    env._pos = np.array([0.98, 0.0])
    obs, _, _, _, _ = env.step(np.array([1.0, 0.0]))  # clipped at the wall
    assert np.allclose(obs["achieved_goal"], [1.0, 0.0]) and np.allclose(obs["observation"][2:], [0.2, 0.0])


def test_knobs_turn_each_knob_by_its_own_action():
    env = Knobs()
    env.reset(seed=0)
    env._pos, env._target = np.array([0, 3, 6]), np.array([2, 3, 6])
    obs, reward, *_ = env.step(np.array([2, 1, 2]))  # up, hold, up (clipped at 6)
    assert np.array_equal(env._pos, [1, 3, 6])
    assert reward == pytest.approx(-(1 / 3) / 6)  # one knob one position off, over 3 knobs and 6 positions
    assert np.allclose(obs, np.array([1, 3, 6, 2, 3, 6]) / 6)
    with pytest.raises(ValueError, match="outside MultiDiscrete"):
        env.step(np.array([3, 1, 1]))


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("agent", ["s2vgd", "ppo"])
def test_tiny_runs_write_their_result_and_are_skipped_when_finished(tmp_path, tiny_ppo, task, agent):
    result = benchmark.run_job(job(tmp_path, task, agent))
    folder = benchmark.run_folder(tmp_path, task, agent, 0)
    assert folder.parent.name == task.replace("/", "_")
    written = json.loads((folder / benchmark.RESULT).read_text())
    written_at = (folder / benchmark.RESULT).stat().st_mtime_ns
    keys = ("task", "agent", "seed", "env_steps", "final", "best_particle", "wall_s")
    assert [written[k] for k in keys] == [result[k] for k in keys]
    assert result["env_steps"] == BUDGET and np.isfinite(result["final"]) and result["task"] == task
    if agent == "s2vgd":
        assert result["best_particle"] in (0, 1) and np.isfinite(result["final_particle_mean"])
    again = benchmark.run_job(job(tmp_path, task, agent))  # finished: read back, not trained again
    assert [again[k] for k in keys] == [result[k] for k in keys]
    assert (folder / benchmark.RESULT).stat().st_mtime_ns == written_at


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("agent", ["s2vgd", "ppo"])
def test_an_interrupted_run_resumes_from_its_checkpoint(tmp_path, monkeypatch, tiny_ppo, task, agent):
    """Killed after its first checkpoint (svpg: in its second iteration; SB3: in its third rollout), the same
    job continues from the checkpoint to the budget."""
    name, n = (benchmark.WALL, 2) if agent == "s2vgd" else (benchmark.PROGRESS, 60)  # SB3: a row every 4 steps
    Interrupt(monkeypatch, name, n)
    with pytest.raises(KeyboardInterrupt):
        benchmark.run_job(job(tmp_path, task, agent))
    folder = benchmark.run_folder(tmp_path, task, agent, 0)
    assert not (folder / benchmark.RESULT).exists()
    if agent == "ppo":
        at = json.loads((folder / sb3.CHECKPOINT / "state.json").read_text())["total_steps"]
        assert 0 < at < BUDGET
    else:
        assert (folder / "checkpoints").exists()
    monkeypatch.undo()
    for t in benchmark.SPACES_TASKS:
        monkeypatch.setitem(benchmark.ZOO["ppo"], t, {**benchmark.ZOO["ppo"][t], **PPO_TINY})
    result = benchmark.run_job(job(tmp_path, task, agent))
    assert result["env_steps"] == BUDGET
    rows = benchmark.WALL if agent == "s2vgd" else benchmark.PROGRESS
    steps = [int(r["total_steps"]) for r in read_csv(folder / rows)]
    assert steps == sorted(set(steps)) and steps[-1] == BUDGET  # rows after the checkpoint were redone once


def test_the_command_runs_the_budget_and_reports_it(tmp_path, tiny_ppo, capsys):
    argv = ["--budget", "spaces", "--tasks", "svpg/Knobs-v0", "--seeds", "0", "--total-steps", str(BUDGET),
            "--eval-episodes", "2", "--svpg-options", json.dumps(SVPG_TINY), "--out", str(tmp_path)]
    assert benchmark.main(argv) == 0
    text = (tmp_path / "results.md").read_text()
    assert "## svpg/Knobs-v0" in text and "AUC − PPO (95 % CI)" in text
    rows = table_rows(text)
    assert rows["s2vgd"][1:3] == ["1", "400"] and rows["ppo"][1:3] == ["1", "400"]
    capsys.readouterr()
    assert benchmark.main(argv) == 0  # the same command again: every run finished, nothing retrained
    assert "2 runs, 2 already finished; running 0" in capsys.readouterr().out
    # --tasks all takes the budget's tasks; the on-policy budget's agents are refused here
    assert benchmark.main(["--budget", "spaces", "--agents", "a2c", "--out", str(tmp_path)]) == 2
    assert "(a2c belongs to --budget on-policy)" in capsys.readouterr().err


def test_minatar_missing_is_one_line(tmp_path, monkeypatch, capsys):
    import svpg.envs.spaces_tasks as spaces_tasks

    monkeypatch.setattr(spaces_tasks, "minatar_installed", lambda: False)
    assert benchmark.main(["--budget", "spaces", "--tasks", "MinAtar/Breakout-v1", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and 'pip install "svpg[minatar]"' in err


def test_the_spaces_report_table(tmp_path):
    """docs/benchmarks.md's spaces table: a row per task and agent, "not measured yet" until runs are gathered."""
    from svpg.report import _tables, write_rows

    table = _tables()["benchmark-spaces"]
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / table.source).write_text("")  # no run gathered yet
    text = table.render(tmp_path)
    for task in benchmark.SPACES_TASKS:
        for agent in ("s2vgd", "ppo"):
            assert f"| {task} | {agent} | not measured yet |" in text
    assert "AUC − PPO (95 % CI)" in table_rows(text)["task"] and "30 runs, not measured yet" in text
    run = {"env_steps": 100000, "final": -1.5, "final_particle_mean": -2.0, "best_particle": 0, "wall_s": 120.0,
           "task": "svpg/Knobs-v0", "agent": "s2vgd", "seed": 0, "eval_episodes": 10, "auc": -3.0}
    write_rows(tmp_path / table.source, [run])
    text = table.render(tmp_path)
    line = next(line for line in text.splitlines() if line.startswith("| svpg/Knobs-v0 | s2vgd |"))
    assert line.endswith("| 1 | 100,000 | −1.5 | −2.0 | – | −3.0 | – | 2.00 | 64 × 64 tanh, 4 particles, 8,000 |")
    assert "| svpg/Knobs-v0 | ppo | not measured yet |" in text
