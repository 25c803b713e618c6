"""The benchmark harness (svpg.studies.benchmark): rl-zoo3's table, equal budgets, the report, resume."""
import csv
import json
import math
import os
import subprocess
import sys

import pytest

from svpg.rl.config import load_preset
from svpg.studies import benchmark, sb3

# Tiny runs: 2 particles × 400 steps (2 Pendulum episodes) per svpg iteration; SB3 PPO shrunk to 2 envs × 32 steps,
# so that every agent's rollout divides the budget and all four take exactly BUDGET environment steps.
BUDGET = 1600
SVPG_TINY = ('{"num_particles": 2, "samples_per_particle": 400, "hidden": [8], "critic_hidden": [8], "ppo_epochs": 1, '
             '"ppo_minibatches": 2, "value_epochs": 1, "value_steps": 2}')
ON_POLICY = benchmark.BUDGETS["on-policy"].agents  # s2vgd, svgd, ppo, a2c
PPO_TINY = {"n_envs": 2, "n_steps": 32, "batch_size": 64, "n_epochs": 1, "gamma": 0.9, "learning_rate": 1e-3}
# The off-policy agents, tiny: svpg's SAC estimator with 2 particles × one 200-step episode per iteration and 300
# warm-up steps; SB3 SAC and TD3 with small networks and buffers, 300 warm-up steps: 100 updates in 400 steps
SAC_TINY = ('{"num_particles": 2, "learning_starts": 300, "buffer_size": 2000, "hidden": [16], "critic_hidden": [16], '
            '"batch_size": 32}')
SB3_OFF_TINY = {"buffer_size": 1000, "batch_size": 32, "learning_starts": 300, "policy_kwargs": {"net_arch": [32, 32]}}


@pytest.fixture
def tiny_off_policy(monkeypatch):
    monkeypatch.setitem(benchmark.ZOO["sac"], "Pendulum-v1", {**SB3_OFF_TINY, "learning_rate": 1e-3})
    monkeypatch.setitem(benchmark.ZOO["td3"], "Pendulum-v1", {**SB3_OFF_TINY, "noise_type": "normal", "noise_std": 0.1})


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


def test_wall_clock_gives_each_machines_runs_apart():
    """Minutes per run, mean ± s.e.; runs of two machines (labelled by their CPU) are not averaged together:
    AMD (120, 126 min) → 123.00 ± 3.00, Intel (90 min) alone."""
    amd, intel = "x86_64, 2 CPUs (AMD EPYC), Linux", "x86_64, 2 CPUs (Intel(R) Xeon(R) Processor), Linux"
    assert benchmark.machine_label(intel) == "Intel Xeon" and benchmark.machine_label("2-core VM (AMD EPYC)") == "AMD EPYC"
    assert benchmark.machine_label("a laptop") == "a laptop" and benchmark.machine_label(None) == "an unrecorded machine"
    runs = [{"wall_s": 7200.0, "machine": amd}, {"wall_s": 7560.0, "machine": amd}, {"wall_s": 5400.0, "machine": intel}]
    assert benchmark.wall_clock_cell(runs) == "123.00 ± 3.00 on AMD EPYC, 90.00 on Intel Xeon"
    assert benchmark.wall_clock_cell(runs[:2]) == "123.00 ± 3.00"
    # a GPU machine's runs (its host's CPU and the GPU named) apart from the same CPU's without one
    gpu = "x86_64, 16 CPUs (Intel(R) Xeon(R) Processor), 1 GPU (NVIDIA H200), Linux"
    assert benchmark.machine_label(gpu) == "Intel Xeon + NVIDIA H200"
    assert benchmark.wall_clock_cell([*runs[2:], {"wall_s": 1500.0, "machine": gpu}]) == (
        "90.00 on Intel Xeon, 25.00 on Intel Xeon + NVIDIA H200")


def test_table_names_each_rows_machine_when_its_rows_ran_on_several():
    """A task whose agents ran on different machines names the machine in every wall-clock cell, so 79
    minutes on one VM is not read against 115 on another; a task on one machine names none."""
    amd, intel = "x86_64, 2 CPUs (AMD EPYC), Linux", "x86_64, 2 CPUs (Intel(R) Xeon(R) Processor), Linux"
    results = [{"task": "Pendulum-v1", "agent": agent, "seed": 0, "env_steps": 1600, "final": -200.0,
                "final_particle_mean": -210.0, "wall_s": wall, "machine": machine}
               for agent, wall, machine in (("s2vgd", 4800.0, intel), ("ppo", 6900.0, amd))]
    _, rows = benchmark.task_table(results, "Pendulum-v1")
    assert [row[-2] for row in rows] == ["80.00 on Intel Xeon", "115.00 on AMD EPYC"]
    same = [{**r, "machine": amd} for r in results]
    assert [row[-2] for row in benchmark.task_table(same, "Pendulum-v1")[1]] == ["80.00", "115.00"]


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

    on_policy = benchmark.BUDGETS["on-policy"].tasks
    assert set(benchmark.TASKS) == set(on_policy) | set(benchmark.BUDGETS["spaces"].tasks)
    assert set(benchmark.ZOO["ppo"]) == set(benchmark.TASKS) and set(benchmark.ZOO["a2c"]) == set(on_policy)
    for agent, cls in (("ppo", PPO), ("a2c", A2C)):
        for task in on_policy:  # the spaces tasks' SB3 models are built by tests/rl/test_benchmark_spaces.py
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


def test_sac_and_td3_take_rl_zoo3s_settings():
    """rl-zoo3's sac.yml and td3.yml: learning_starts 10,000 on the MuJoCo tasks, SB3's defaults otherwise;
    TD3's Gaussian action noise of std 0.1 on every action dimension; SAC on Pendulum-v1 lr 1e-3."""
    import numpy as np
    from stable_baselines3 import SAC, TD3
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.noise import NormalActionNoise

    pytest.importorskip("mujoco")
    for task in ("Hopper-v5", "HalfCheetah-v5", "Walker2d-v5", "Ant-v5"):
        for agent in ("sac", "td3"):
            n_envs, normalize, kwargs = benchmark.sb3_settings(agent, task)
            assert (n_envs, normalize, kwargs["learning_starts"]) == (1, None, 10_000)
            assert benchmark.rollout_steps(agent, task) == 1
        _, _, sac = benchmark.sb3_settings("sac", task)
        assert set(sac) == {"learning_starts"}  # everything else is SB3's default
        noise = benchmark.sb3_settings("td3", task)[2]["action_noise"]
        assert isinstance(noise, NormalActionNoise)
        dim = {"Hopper-v5": 3, "HalfCheetah-v5": 6, "Walker2d-v5": 6, "Ant-v5": 8}[task]
        assert np.array_equal(noise._sigma, np.full(dim, 0.1)) and np.array_equal(noise._mu, np.zeros(dim))
    assert benchmark.training_shape("sac", "Hopper-v5", 300_000) == ("256 × 256 ReLU", 290_000)
    assert benchmark.training_shape("td3", "Walker2d-v5", 300_000) == ("400 × 300 ReLU", 290_000)
    n_envs, normalize, kwargs = benchmark.sb3_settings("sac", "Pendulum-v1")
    assert kwargs == {"learning_rate": 1e-3} and normalize is None
    env = make_vec_env("Pendulum-v1", n_envs=n_envs)
    SAC("MlpPolicy", env, device="cpu", **kwargs)  # the entries are arguments SB3 accepts
    TD3("MlpPolicy", env, device="cpu", **benchmark.sb3_settings("td3", "Pendulum-v1")[2])


def test_the_off_policy_budget_plans_300k_steps_of_its_own_agents(tmp_path):
    """--budget off-policy: Hopper-v5, HalfCheetah-v5 and Walker2d-v5 at 300,000 steps, svpg's SAC estimator
    with its own defaults (no task preset) against SB3 SAC (the reference) and TD3."""
    budget = benchmark.BUDGETS["off-policy"]
    assert budget.tasks == ("Hopper-v5", "HalfCheetah-v5", "Walker2d-v5") and budget.reference == "sac"
    jobs = benchmark.plan(tmp_path, list(budget.tasks), list(budget.agents), [0, 1], budget="off-policy")
    assert len(jobs) == 3 * 6 * 2 and {j["total_steps"] for j in jobs} == {300_000}
    assert [j["agent"] for j in jobs[:4]] == ["sac", "sac", "td3", "td3"]  # SB3 first
    assert benchmark.svpg_options("Hopper-v5", {"lr": 0.01}, "svgd-sac") == {"estimator": "sac", "lr": 0.01}
    assert benchmark.SVPG_AGENT_SETTINGS["s2vgd-sac"] == ("s2vgd", "sac")
    assert benchmark.SVPG_AGENT_SETTINGS["svgd-td3"] == ("svgd", "td3")
    assert {"s2vgd-td3", "svgd-td3"} <= set(budget.agents)
    assert benchmark.svpg_options("Hopper-v5", None, "s2vgd-td3") == {"estimator": "td3"}
    # svpg's TD3 rows get seeds 0–2, the others 0–4: 3 tasks × (4 × 5 + 2 × 3) runs, and the table's
    # command runs exactly those
    assert budget.planned_runs() == 78 and benchmark.BUDGETS["spaces"].planned_runs() == 3 * 2 * 5
    run = "python -m svpg.studies.benchmark --budget off-policy --tasks all"
    assert budget.commands() == [
        f"{run} --agents s2vgd-sac,svgd-sac,sac,td3 --seeds 0-4",
        f"{run} --agents s2vgd-td3,svgd-td3 --seeds 0-2",
    ]
    assert benchmark.BUDGETS["spaces"].commands() == ["python -m svpg.studies.benchmark --budget spaces --tasks all --seeds 0-4"]
    # the on-policy budget is unchanged: each task's preset budget, Walker2d-v5 and Ant-v5 among them
    on = benchmark.plan(tmp_path, ["Walker2d-v5", "Ant-v5"], ["s2vgd", "ppo"], [0])
    assert {j["total_steps"] for j in on} == {1_000_000}
    # one SVGD step per vector step of the 4 particles after the warm-up (learning_starts: the estimator's default)
    from svpg.rl.config import SVPGConfig, with_estimator_defaults

    config = SVPGConfig(**with_estimator_defaults({"estimator": "sac"}))
    steps = (300_000 - config.learning_starts) // 4 // config.train_freq * config.gradient_steps
    assert benchmark.training_shape("s2vgd-sac", "Hopper-v5", 300_000) == ("256 × 256 tanh, 4 particles", steps)
    # td3: its critic updates, as SB3's TD3 row counts them (an SVGD step every policy_delay-th)
    assert benchmark.training_shape("svgd-td3", "Hopper-v5", 300_000) == ("400 × 300 tanh, 4 particles", steps)


def test_off_policy_table_has_auc_and_sac_differences(tmp_path):
    """The off-policy results.md by hand: d = (200, 200, −100), mean 100, s.e. 100, t(2) 4.3027: ±430.3;
    the AUCs are half the finals, so are their differences."""
    results = [{"task": "Hopper-v5", "agent": agent, "seed": s, "env_steps": 300_000, "final": final[s],
                "final_particle_mean": final[s] - 10, "auc": final[s] / 2, "wall_s": 60.0}
               for agent, final in (("s2vgd-sac", (2000.0, 2100.0, 1900.0)), ("sac", (1800.0, 1900.0, 2000.0)))
               for s in range(3)]
    text = benchmark.write_table(results, tmp_path / "results.md", "off-policy")
    table = table_rows(text)
    assert table["agent"][5:8] == ["− SAC (95 % CI)", "AUC (mean training return)", "AUC − SAC (95 % CI)"]
    assert table["s2vgd-sac"][3:8] == ["2000.0 ± 57.7", "1990.0 ± 57.7", "+100.0 [-330.3, +530.3] (n=3)",
                                       "1000.0 ± 28.9", "+50.0 [-165.1, +265.1] (n=3)"]
    assert table["sac"][5:8] == ["–", "950.0 ± 28.9", "–"]
    # the on-policy table of the same runs lists none of them; its columns stay as they were without AUCs
    assert "Hopper-v5" not in benchmark.write_table(results, tmp_path / "on.md")
    header, _ = benchmark.task_table([{**r, "agent": "s2vgd", "auc": ""} for r in results], "Hopper-v5")
    assert "AUC (mean training return)" not in header


def test_area_under_the_curve_is_the_step_weighted_mean_training_return():
    curve = [{"total_steps": 100, "return_mean": math.nan}, {"total_steps": 200, "return_mean": -10.0},
             {"total_steps": 400, "return_mean": -4.0}]
    assert benchmark.area_under_curve(curve) == pytest.approx((100 * -10 + 200 * -4) / 300)
    assert math.isnan(benchmark.area_under_curve([{"total_steps": 10, "return_mean": math.nan}]))


def test_off_policy_agents_train_end_to_end(tmp_path, tiny_off_policy, capsys):
    """Every off-policy agent on Pendulum-v1 for 400 steps (one seed; the paired columns by hand above):
    results, AUC, curves, the table against SAC, skipped when finished."""
    argv = ["--budget", "off-policy", "--tasks", "Pendulum-v1", "--seeds", "0", "--total-steps", "400",
            "--eval-episodes", "1", "--svpg-options", SAC_TINY, "--out", str(tmp_path)]
    assert benchmark.main(argv) == 0
    results = read_csv(tmp_path / "results.csv")
    agents = benchmark.BUDGETS["off-policy"].agents
    assert {(r["agent"], r["seed"]) for r in results} == {(a, "0") for a in agents}
    assert {int(r["env_steps"]) for r in results} == {400}
    assert all(math.isfinite(float(r["auc"])) for r in results)
    for r in results:
        svpg = r["agent"] in benchmark.SVPG_AGENTS
        assert (r["best_particle"] in ("0", "1")) == svpg
        if not svpg:  # a finished SB3 run keeps no replay buffer
            folder = benchmark.run_folder(tmp_path, "Pendulum-v1", r["agent"], int(r["seed"]))
            assert not (folder / "checkpoint" / benchmark.REPLAY_BUFFER).exists()
    job = json.loads((benchmark.run_folder(tmp_path, "Pendulum-v1", "svgd-sac", 0) / benchmark.JOB).read_text())
    assert job["svpg_options"] == json.loads(SAC_TINY)
    table = table_rows((tmp_path / "results.md").read_text())
    assert "− SAC (95 % CI)" in table["agent"] and "AUC − SAC (95 % CI)" in table["agent"] and set(agents) <= set(table)
    assert {r["agent"] for r in read_csv(tmp_path / "curves.csv")} == set(agents)
    capsys.readouterr()
    assert benchmark.main(argv) == 0
    assert f"{len(agents)} runs, {len(agents)} already finished" in capsys.readouterr().out


def test_a_bad_zoo_entry_is_one_line(monkeypatch):
    monkeypatch.setitem(benchmark.ZOO["a2c"], "Pendulum-v1", {"learning_rate": "cos_1e-3"})
    with pytest.raises(ValueError, match="lin_<initial value>"):
        benchmark.sb3_settings("a2c", "Pendulum-v1")


def test_equal_steps_table_curves_and_skip_when_finished(tmp_path, tiny_ppo, capsys):
    assert run(tmp_path) == 0  # --budget on-policy, the default
    results = read_csv(tmp_path / "results.csv")
    assert {(r["agent"], r["seed"]) for r in results} == {(a, s) for a in ON_POLICY for s in ("0", "1")}
    assert {int(r["env_steps"]) for r in results} == {BUDGET}  # svpg counts all particles' steps
    table = table_rows((tmp_path / "results.md").read_text())
    for agent in ON_POLICY:
        assert table[agent][1:3] == ["2", "1,600"]
    assert "(n=2)" in table["svgd"][5]  # a paired difference to PPO over both seeds
    curves = read_csv(tmp_path / "curves.csv")
    assert {r["agent"] for r in curves} == set(ON_POLICY)
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


def test_same_seed_same_run(tmp_path):
    for agent in ("s2vgd", "a2c"):  # two runs of each into folders of their own: the same result but the time
        a, b = ({**benchmark.run_job({**job(tmp_path / out, agent), "seed": 3}), "wall_s": None} for out in "ab")
        assert json.dumps(a) == json.dumps(b) and math.isfinite(a["final"])  # (json: SB3's NaN mean over particles)


class Interrupt:
    """Raises KeyboardInterrupt at the n-th row written to a run's ``name`` file, as a kill would."""

    def __init__(self, monkeypatch, name, n):
        self.calls, self.name, self.n, self.write = 0, name, n, sb3.append_csv
        for module in (benchmark, sb3):  # the benchmark's and the SB3 runner's rows
            monkeypatch.setattr(module, "append_csv", self)

    def __call__(self, path, rows):
        if path.name == self.name:
            self.calls += 1
            if self.calls == self.n:
                raise KeyboardInterrupt
        self.write(path, rows)


def job(tmp_path, agent, total=BUDGET):
    tiny = SAC_TINY if agent.endswith("-sac") else SVPG_TINY
    extra = {"svpg_options": json.loads(tiny)} if agent in benchmark.SVPG_AGENTS else {}
    return {"out": str(tmp_path), "task": "Pendulum-v1", "agent": agent, "seed": 0, "total_steps": total,
            "eval_episodes": 2, **extra}


# svgd-sac: the harness's path to the SAC estimator's checkpoints (their own exact resume is tested with the estimator)
@pytest.mark.parametrize("agent, total", [("svgd", BUDGET), pytest.param("svgd-sac", 800, marks=pytest.mark.slow)])
def test_svpg_resumes_bit_for_bit(tmp_path, monkeypatch, agent, total):
    """Killed in the second of two iterations, after the first checkpoint (svgd-sac: its replay buffer in it)."""
    straight = benchmark.run_job(job(tmp_path / "straight", agent, total))
    Interrupt(monkeypatch, benchmark.WALL, 2)
    with pytest.raises(KeyboardInterrupt):
        benchmark.run_job(job(tmp_path / "cut", agent, total))
    folder = benchmark.run_folder(tmp_path / "cut", "Pendulum-v1", agent, 0)
    assert not (folder / benchmark.RESULT).exists() and (folder / "checkpoints").exists()
    monkeypatch.undo()
    resumed = benchmark.run_job(job(tmp_path / "cut", agent, total))
    for key in ("env_steps", "final", "final_particle_mean", "best_particle", "auc"):
        assert resumed[key] == straight[key]
    steps = [int(r["total_steps"]) for r in read_csv(folder / benchmark.WALL)]
    assert steps == [total // 2, total]  # the interrupted iteration's row was dropped and written again once


def test_sb3_sac_resumes_from_its_checkpoint_with_the_replay_buffer(tmp_path, monkeypatch, tiny_off_policy):
    """SB3 SAC: model.zip and replay_buffer.pkl every tenth of the budget; a resumed run loads both."""
    from stable_baselines3 import SAC

    total = 400  # a checkpoint after every 40 steps, a progress row every 4
    Interrupt(monkeypatch, benchmark.PROGRESS, 30)
    with pytest.raises(KeyboardInterrupt):
        benchmark.run_job(job(tmp_path, "sac", total))
    folder = benchmark.run_folder(tmp_path, "Pendulum-v1", "sac", 0)
    at = json.loads((folder / "checkpoint" / "state.json").read_text())["total_steps"]
    assert 0 < at < total and (folder / "checkpoint" / benchmark.REPLAY_BUFFER).exists()
    monkeypatch.undo()
    monkeypatch.setitem(benchmark.ZOO["sac"], "Pendulum-v1", {**SB3_OFF_TINY, "learning_rate": 1e-3})
    loaded = []
    load = SAC.load_replay_buffer

    def load_and_count(self, path, **kwargs):
        load(self, path, **kwargs)
        loaded.append(self.replay_buffer.size())

    monkeypatch.setattr(SAC, "load_replay_buffer", load_and_count)
    result = benchmark.run_job(job(tmp_path, "sac", total))
    assert result["env_steps"] == total and loaded == [at]  # the checkpoint's transitions are back
    steps = [int(r["total_steps"]) for r in read_csv(folder / benchmark.PROGRESS)]
    assert steps == sorted(set(steps)) and steps[-1] == total  # rows after the checkpoint were redone once
    assert not (folder / "checkpoint" / benchmark.REPLAY_BUFFER).exists()  # finished: the buffer is gone


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
    for argv, message in ((["--tasks", "Humanoid-v5"], "--tasks"), (["--agents", "sac"], "--agents"),
                          (["--budget", "off-policy", "--agents", "ppo"], "ppo belongs to --budget on-policy, spaces"),
                          (["--budget", "off-policy", "--svpg-options", '{"estimator": "ppo"}'], "estimator"),
                          (["--seeds", "3-110"], "mixes reported seeds"),
                          (["--svpg-options", '{"method": "svgd"}'], "--svpg-options"),
                          (["--svpg-options", '{"alpha": -1}'], "alpha"),
                          (["--budget", "off-policy", "--svpg-options", '{"ppo_epochs": 3}'],
                           "--svpg-options for s2vgd-sac: ppo_epochs is an option of ppo, and estimator sac does not"),
                          (["--svpg-options", '{"device": "cpu"}'], "--device the device"),
                          (["--device", "tpu"], "--device 'tpu'"),
                          (["--agents", "a2c", "--sb3-options", '{"n_epoch": 3}'], "--sb3-options: ['n_epoch']")):
        assert benchmark.main([*argv, "--out", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_device_moves_svpgs_runs_only_and_is_not_part_of_a_runs_record(tmp_path):
    """--device cuda trains svpg's agents there (SB3's stay on the CPU) and is left out of the run's record,
    so a run begun on a GPU resumes on the CPU into the same folder and the same result rows."""
    jobs = benchmark.plan(tmp_path, ["Hopper-v5"], ["s2vgd-sac", "sac"], [0], budget="off-policy", device="cuda")
    by_agent = {j["agent"]: j for j in jobs}
    assert by_agent["s2vgd-sac"]["device"] == "cuda" and "device" not in by_agent["sac"]
    cpu = benchmark.plan(tmp_path, ["Hopper-v5"], ["s2vgd-sac"], [0], budget="off-policy")[0]
    assert "device" not in cpu and benchmark.job_record(by_agent["s2vgd-sac"]) == benchmark.job_record(cpu)


def test_sb3_options_replace_the_rl_zoo3_entrys_keys(tmp_path, monkeypatch):
    """--sb3-options, as rl-zoo3's --hyperparams: top-level keys replace the entry's, in SB3 jobs only, kept in
    their record (so a folder of rl-zoo3's own settings is not mixed in) and passed to the SB3 model."""
    assert benchmark.sb3_settings("a2c", "HalfCheetah-v5")[1] == {"gamma": 0.99}
    n_envs, normalize, kwargs = benchmark.sb3_settings("a2c", "HalfCheetah-v5", {"normalize": {"norm_reward": False},
                                                                               "n_steps": 8})
    assert normalize == {"gamma": 0.99, "norm_reward": False} and kwargs["n_steps"] == 8 and n_envs == 1
    extra = {"normalize": False}
    jobs = benchmark.plan(tmp_path, ["HalfCheetah-v5"], ["a2c", "s2vgd"], [100], sb3_extra=extra)
    a2c, s2vgd = sorted(jobs, key=lambda j: j["agent"])
    assert benchmark.job_record(a2c)["sb3_options"] == extra and "sb3_options" not in s2vgd
    assert "sb3_options" not in benchmark.plan(tmp_path, ["HalfCheetah-v5"], ["a2c"], [100])[0]
    seen = {}

    def train_resumably(agent, task, seed, total, folder, n_envs, normalize, kwargs, **_):
        seen.update(normalize=normalize, n_steps=kwargs.get("n_steps"))
        raise RuntimeError("stop")

    # the frozen evaluation env of a run that set norm_reward itself scores raw returns, without a clash
    env = sb3.evaluation_env("Pendulum-v1", 0, sb3.make_model("a2c", "Pendulum-v1", 0, 1, {"norm_reward": False}),
                             {"gamma": 0.99, "norm_reward": False})
    assert env.norm_obs and not env.norm_reward and not env.training
    monkeypatch.setattr(sb3, "train_resumably", train_resumably)
    with pytest.raises(RuntimeError, match="stop"):
        benchmark.run_job({**a2c, "sb3_options": {"normalize": False, "n_steps": 3}})
    assert seen == {"normalize": None, "n_steps": 3}


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


def test_the_off_policy_report_table(tmp_path):
    """docs/benchmarks.md's off-policy table (python -m svpg.report): a row per task and agent of the budget,
    "not measured yet" until runs are gathered into its result file, then task_table's cells."""
    from svpg.report import _tables, write_rows

    table = _tables()["benchmark-off-policy"]
    rows = table_rows(table.render())
    assert rows["task"][1:3] == ["agent", "seeds"] and "AUC − SAC (95 % CI)" in rows["task"]
    (tmp_path / "bench" / "results").mkdir(parents=True)
    run = {"env_steps": 300000, "final": 3000.0, "final_particle_mean": 2500.0, "best_particle": 1, "wall_s": 600.0,
           "task": "Walker2d-v5", "agent": "s2vgd-sac", "seed": 0, "eval_episodes": 10, "auc": 1500.0}
    write_rows(tmp_path / table.source, [run])
    text = table.render(tmp_path)
    line = next(line for line in text.splitlines() if line.startswith("| Walker2d-v5 | s2vgd-sac |"))
    assert "| 1 | 300,000 | 3000.0 | 2500.0 | – | 1500.0 | – | 10.00 |" in line
    assert "| Walker2d-v5 | sac | not measured yet |" in text and "1 of 78 runs, 0.2 core-hours" in text
