"""The benchmark harness (svpg.rl.benchmark): rl-zoo3's table, equal budgets, the report, resume."""
import csv
import json
import os
import subprocess
import sys

import pytest

from svpg.rl import benchmark
from svpg.rl.config import load_preset

# Tiny runs: 2 particles × 400 steps (2 Pendulum episodes) per svpg iteration; SB3 PPO shrunk to 2 envs × 32 steps,
# so that every agent's rollout divides the budget and all four take exactly BUDGET environment steps.
BUDGET = 1600
SVPG_TINY = ('{"num_particles": 2, "samples_per_particle": 400, "hidden": [8], "critic_hidden": [8], "ppo_epochs": 1, '
             '"ppo_minibatches": 2, "value_epochs": 1, "value_steps": 2}')
PPO_TINY = {"n_envs": 2, "n_steps": 32, "batch_size": 64, "n_epochs": 1, "gamma": 0.9, "learning_rate": 1e-3}


@pytest.fixture
def tiny_ppo(monkeypatch):
    monkeypatch.setitem(benchmark.ZOO["ppo"], "Pendulum-v1", PPO_TINY)


def run(tmp_path, *extra):
    return benchmark.main(["--tasks", "Pendulum-v1", "--seeds", "0-1", "--total-steps", str(BUDGET), "--eval-episodes", "2",
                           "--svpg-options", SVPG_TINY, "--out", str(tmp_path), *extra])


def table_rows(text: str) -> dict[str, list[str]]:
    """The cells of every Markdown table row, by its first cell (the header rows included)."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines() if line.startswith("|")]
    return {r[0]: r for r in rows}


def test_table_reports_mean_se_and_paired_t_intervals(tmp_path):
    """results.md by hand: s2vgd finals (−200, −210, −190) against PPO's (−220, −215, −230) on seeds 0-2."""
    results = [{"task": "Pendulum-v1", "agent": agent, "seed": s, "env_steps": 1600, "final": final[s],
                "final_particle_mean": final[s] - 10, "wall_s": 60.0}
               for agent, final in (("s2vgd", (-200.0, -210.0, -190.0)), ("ppo", (-220.0, -215.0, -230.0)))
               for s in range(3)]
    text = benchmark.write_table(results, tmp_path / "results.md")
    assert (tmp_path / "results.md").read_text() == text
    assert "mean ± s.e. over seeds; paired difference to PPO by seed with a 95 % t-interval" in text.replace("Mean", "mean")
    table = table_rows(text)
    # s2vgd: mean −200, sd 10, s.e. 10/√3 = 5.77; d = (20, 5, 40): mean 21.67, sd 17.56, t(2) 4.3027 · 17.56/√3 = 43.62
    assert table["s2vgd"][3:6] == ["-200.0 ± 5.8", "-210.0 ± 5.8", "+21.7 [-22.0, +65.3] (n=3)"]
    assert table["ppo"][3:6] == ["-221.7 ± 4.4", "–", "–"] and table["ppo"][6] == "1.00 ± 0.00"


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_every_task_has_a_preset_that_trains_it_for_its_budget():
    """svpg's side of every task is ``train.py --preset <task>``: the task's id, its budget in whole
    iterations of 4 particles (MountainCarContinuous: whole 999-step episodes instead)."""
    from svpg.rl.config import PAPER_TASKS, PRESETS, SVPGConfig

    for task, budget in benchmark.TASK_BUDGETS.items():
        assert task in PRESETS and task not in PAPER_TASKS
        preset = load_preset(task)
        assert (preset["env_id"], preset["total_steps"]) == (task, budget)
        config = SVPGConfig(**preset)
        per_iteration = config.num_particles * config.samples_per_particle
        if task == "MountainCarContinuous-v0":
            assert config.samples_per_particle % 999 == 0
        else:
            assert budget % per_iteration == 0, task
    assert benchmark.svpg_options("Pendulum-v1", {"lr": 0.01}) == {"samples_per_particle": 2000, "lr": 0.01}


def test_every_task_has_every_agent_and_the_zoo_table_builds_sb3_models():
    """Each rl-zoo3 entry parses and its keys are arguments SB3's PPO / A2C accept."""
    from stable_baselines3 import A2C, PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    for agent, cls in (("ppo", PPO), ("a2c", A2C)):
        assert set(benchmark.ZOO[agent]) == set(benchmark.TASKS)
        for task in benchmark.TASKS:
            n_envs, normalize, kwargs = benchmark.sb3_settings(agent, task)
            assert n_envs >= 1 and benchmark.rollout_steps(agent, task) >= 1
            env = make_vec_env("Pendulum-v1", n_envs=n_envs)  # any continuous task checks the argument names
            if normalize is not None:
                env = VecNormalize(env, **normalize)
            cls("MlpPolicy", env, device="cpu", **kwargs)
    _, normalize, kwargs = benchmark.sb3_settings("a2c", "Pendulum-v1")
    assert normalize == {"gamma": 0.9} and callable(kwargs["learning_rate"])  # lin_7e-4: a schedule
    assert kwargs["learning_rate"](1.0) == pytest.approx(7e-4) and kwargs["learning_rate"](0.0) == 0.0
    assert benchmark.sb3_settings("ppo", "Pendulum-v1")[1] is None  # rl-zoo3 does not normalise PPO on Pendulum


def test_a_bad_zoo_entry_is_one_line(monkeypatch):
    monkeypatch.setitem(benchmark.ZOO["a2c"], "Pendulum-v1", {"learning_rate": "cos_1e-3"})
    with pytest.raises(ValueError, match="lin_<initial value>"):
        benchmark.sb3_settings("a2c", "Pendulum-v1")


def test_equal_steps_table_curves_and_skip_when_finished(tmp_path, tiny_ppo, capsys):
    assert run(tmp_path) == 0
    results = read_csv(tmp_path / "results.csv")
    assert {(r["agent"], r["seed"]) for r in results} == {(a, s) for a in benchmark.AGENTS for s in ("0", "1")}
    assert {int(r["env_steps"]) for r in results} == {BUDGET}  # svpg counts all particles' steps
    table = table_rows((tmp_path / "results.md").read_text())
    for agent in benchmark.AGENTS:
        assert table[agent][1:3] == ["2", "1,600"]
    assert "(n=2)" in table["svgd"][5]  # a paired difference to PPO over both seeds
    curves = read_csv(tmp_path / "curves.csv")
    assert {r["agent"] for r in curves} == set(benchmark.AGENTS)
    assert max(int(r["total_steps"]) for r in curves) == BUDGET
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"
    for r in results:  # svpg: the particle chosen on training returns, and the mean over both particles
        svpg = r["agent"] in benchmark.SVPG_AGENTS
        assert (r["best_particle"] in ("0", "1")) == svpg and (r["final_particle_mean"] != "nan") == svpg
    capsys.readouterr()
    assert run(tmp_path) == 0  # every run finished: nothing trains again, the same report
    assert "8 runs, 8 already finished" in capsys.readouterr().out
    assert read_csv(tmp_path / "results.csv") == results


def test_an_svpg_overshoot_is_said_before_training(tmp_path, capsys):
    # 1,000 steps are not whole iterations of 2 particles × 400 steps: the run takes 1,600 and says so first
    assert benchmark.main(["--tasks", "Pendulum-v1", "--agents", "s2vgd", "--seeds", "0", "--total-steps", "1000",
                           "--eval-episodes", "1", "--svpg-options", SVPG_TINY, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    said = "Pendulum-v1 s2vgd seed 0: 1,600 steps, 600 past the budget of 1,000 (whole iterations of 800 steps)"
    assert said in out and out.index(said) < out.index("final")
    assert read_csv(tmp_path / "results.csv")[0]["env_steps"] == "1600"


def test_same_seed_same_run(tmp_path, tiny_ppo):
    for out in ("a", "b"):
        assert benchmark.main(["--tasks", "Pendulum-v1", "--agents", "s2vgd,a2c", "--seeds", "3", "--total-steps",
                               str(BUDGET), "--eval-episodes", "2", "--svpg-options", SVPG_TINY, "--out",
                               str(tmp_path / out)]) == 0
    a, b = (read_csv(tmp_path / out / "results.csv") for out in ("a", "b"))
    assert [(r["agent"], r["final"]) for r in a] == [(r["agent"], r["final"]) for r in b]


class Interrupt:
    """Raises KeyboardInterrupt at the n-th row written to a run's ``name`` file, as a kill would."""

    def __init__(self, monkeypatch, name, n):
        self.calls, self.name, self.n, self.write = 0, name, n, benchmark._append_rows
        monkeypatch.setattr(benchmark, "_append_rows", self)

    def __call__(self, path, rows):
        if path.name == self.name:
            self.calls += 1
            if self.calls == self.n:
                raise KeyboardInterrupt
        self.write(path, rows)


def job(tmp_path, agent, total=BUDGET):
    extra = {"svpg_options": json.loads(SVPG_TINY)} if agent in benchmark.SVPG_AGENTS else {}
    return {"out": str(tmp_path), "task": "Pendulum-v1", "agent": agent, "seed": 0, "total_steps": total,
            "eval_episodes": 2, **extra}


def test_svpg_resumes_bit_for_bit(tmp_path, monkeypatch):
    straight = benchmark.run_job(job(tmp_path / "straight", "svgd"))
    Interrupt(monkeypatch, benchmark.WALL, 2)  # killed in the second of two iterations, after the first checkpoint
    with pytest.raises(KeyboardInterrupt):
        benchmark.run_job(job(tmp_path / "cut", "svgd"))
    folder = benchmark.run_folder(tmp_path / "cut", "Pendulum-v1", "svgd", 0)
    assert not (folder / benchmark.RESULT).exists() and (folder / "checkpoints").exists()
    monkeypatch.undo()
    resumed = benchmark.run_job(job(tmp_path / "cut", "svgd"))
    for key in ("env_steps", "final", "final_particle_mean", "best_particle"):
        assert resumed[key] == straight[key]
    steps = [int(r["total_steps"]) for r in read_csv(folder / benchmark.WALL)]
    assert steps == [800, 1600]  # the interrupted iteration's row was dropped and written again once


@pytest.mark.slow
def test_sb3_resumes_from_its_checkpoint(tmp_path, monkeypatch, tiny_ppo):
    total = 3_200  # 50 rollouts of 64 steps; a checkpoint at the first rollout boundary after every 320 steps
    Interrupt(monkeypatch, benchmark.PROGRESS, 20)  # a row every rollout: killed after a few checkpoints
    with pytest.raises(KeyboardInterrupt):
        benchmark.run_job(job(tmp_path, "ppo", total))
    folder = benchmark.run_folder(tmp_path, "Pendulum-v1", "ppo", 0)
    at = json.loads((folder / "checkpoint" / "state.json").read_text())["total_steps"]
    assert 0 < at < total
    monkeypatch.undo()
    monkeypatch.setitem(benchmark.ZOO["ppo"], "Pendulum-v1", PPO_TINY)
    result = benchmark.run_job(job(tmp_path, "ppo", total))
    assert result["env_steps"] == total
    steps = [int(r["total_steps"]) for r in read_csv(folder / benchmark.PROGRESS)]
    assert steps == sorted(set(steps)) and steps[-1] == total  # rows after the checkpoint were redone once


def test_bad_input_exits_2_with_one_line(tmp_path, capsys):
    for argv, message in ((["--tasks", "Walker2d-v5"], "--tasks"), (["--agents", "sac"], "--agents"),
                          (["--seeds", "3-110"], "mixes reported seeds"),
                          (["--svpg-options", '{"method": "svgd"}'], "--svpg-options"),
                          (["--svpg-options", '{"alpha": -1}'], "alpha")):
        assert benchmark.main([*argv, "--out", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_folder_of_other_settings_is_refused(tmp_path, tiny_ppo, capsys):
    assert benchmark.main(["--agents", "s2vgd", "--seeds", "0", "--total-steps", "800", "--eval-episodes", "1",
                           "--svpg-options", SVPG_TINY, "--out", str(tmp_path)]) == 0
    assert benchmark.main(["--agents", "s2vgd", "--seeds", "0", "--total-steps", "1600", "--eval-episodes", "1",
                           "--svpg-options", SVPG_TINY, "--out", str(tmp_path)]) == 2
    assert "other settings (total_steps)" in capsys.readouterr().err


def test_mujoco_hopper_steps_and_renders_headless():
    """The mujoco extra: Hopper-v5 steps and renders rgb_array frames (EGL; skipped where no GL is available)."""
    pytest.importorskip("mujoco")
    code = ("import gymnasium as gym\n"
            "env = gym.make('Hopper-v5', render_mode='rgb_array')\n"
            "env.reset(seed=0)\n"
            "for _ in range(5): env.step(env.action_space.sample())\n"
            "frame = env.render()\n"
            "print(frame.shape, frame.dtype, int(frame.std() > 0))\n")
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    if done.returncode and any(s in done.stderr for s in ("EGL", "OpenGL", "GL", "display")):
        pytest.skip(f"no headless OpenGL here (MUJOCO_GL={env['MUJOCO_GL']}): {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["(480,", "480,", "3)", "uint8", "1"]
