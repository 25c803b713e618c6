"""The regret protocol (Riquelme et al. 2018), the report files and the CLI."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from svpg.bandits import Agent, WheelBandit, make_agent, make_problem, run, save_results
from svpg.bandits.cli import main


class Spy(Agent):
    """Wraps an agent and records every context it is shown and every reward it is given."""

    def __init__(self, inner: Agent):
        super().__init__(inner.num_actions, inner.context_dim, inner.name)
        self.inner, self.contexts, self.rewards, self.actions = inner, [], [], []

    def window(self, t):
        return self.inner.window(t)

    def act(self, contexts, t):
        self.contexts.append(np.array(contexts))
        return self.inner.act(contexts, t)

    def update(self, contexts, actions, rewards, t):
        self.actions.append(np.array(actions))
        self.rewards.append(np.array(rewards))
        return self.inner.update(contexts, actions, rewards, t)


def test_all_agents_see_identical_contexts_and_reward_draws():
    problem = make_problem("wheel", delta=0.7)
    spies = {}

    def spy(name):
        def factory(problem, seed):
            s = Spy(make_agent(name, problem.num_actions, problem.context_dim, seed=seed, num_particles=4,
                               train_every=20, train_steps=2))
            spies[(name, seed)] = s
            return s

        factory.name = name
        return factory

    names = ["s2vgd", "svgd", "eps-greedy-0.03", "linucb", "uniform"]
    results = run(problem, [spy(n) for n in names], rounds=120, seeds=2)
    for seed in (0, 1):
        table = problem.table(120, seed)  # the table is a function of the seed alone
        for name in names:
            s = spies[(name, seed)]
            np.testing.assert_array_equal(np.concatenate(s.contexts), table.contexts)
            actions = np.concatenate(s.actions)
            # the rewards each agent received are the pre-drawn ones of the arms it played
            np.testing.assert_array_equal(np.concatenate(s.rewards), table.rewards[np.arange(120), actions])
            run_ = results.get(name, seed)
            np.testing.assert_array_equal(run_.actions, actions)
            np.testing.assert_allclose(run_.regret, table.optimal_expected - table.rewards[np.arange(120), actions])
    # different seeds draw different tables
    assert not np.array_equal(spies[("uniform", 0)].contexts[0], spies[("uniform", 1)].contexts[0])


def test_normalised_regret_and_summary():
    results = run(WheelBandit(0.5), ["linucb"], rounds=300, seeds=[4, 5])
    assert results.agents == ["linucb", "uniform"] and results.seeds == [4, 5]
    for seed in (4, 5):
        expect = 100 * results.get("linucb", seed).final_regret / results.get("uniform", seed).final_regret
        assert results.normalised_regret("linucb", seed) == pytest.approx(expect)
        assert results.normalised_regret("uniform", seed) == pytest.approx(100.0)
    s = results.summary().set_index("agent")
    per_seed = [results.normalised_regret("linucb", k) for k in (4, 5)]
    assert s.loc["linucb", "normalised_regret_mean"] == pytest.approx(np.mean(per_seed))
    assert s.loc["linucb", "normalised_regret_std"] == pytest.approx(np.std(per_seed, ddof=1))
    md = results.to_markdown()
    assert any(c.strip() in ("linucb", "**linucb**") for c in md.split("|"))
    assert "uniform = 100" in md


def test_protocol_rejects_bad_input():
    problem = make_problem("wheel")
    with pytest.raises(ValueError, match="unknown agent 'nope'"):
        run(problem, ["nope"], rounds=10)
    with pytest.raises(ValueError, match="no agents"):
        run(problem, [], rounds=10)
    with pytest.raises(ValueError, match="BanditProblem"):
        run("wheel", ["uniform"], rounds=10)

    class Bad(Agent):
        name = "bad"

        def act(self, contexts, t):
            return np.full(len(contexts), 7)

    with pytest.raises(ValueError, match=r"act\(\) must return"):
        run(problem, [lambda p, s: Bad(p.num_actions, p.context_dim)], rounds=5)


def test_save_results_writes_csv_markdown_png_and_tensorboard(tmp_path):
    results = run(WheelBandit(0.9), ["linucb"], rounds=200, seeds=2)
    paths = save_results(results, tmp_path)
    per_seed = pd.read_csv(paths["per_seed"])
    assert len(per_seed) == 4 and set(per_seed.agent) == {"linucb", "uniform"}
    curves = pd.read_csv(paths["curves"])
    final = curves[curves["round"] == 200].set_index(["agent", "seed"])
    assert final.loc[("linucb", 1), "cumulative_regret"] == pytest.approx(results.get("linucb", 1).final_regret)
    assert paths["figure"].stat().st_size > 10_000
    assert "normalised regret" in paths["markdown"].read_text()
    assert list((tmp_path / "linucb" / "mean").glob("events.out.tfevents.*"))


def test_cli_end_to_end(tmp_path, capsys):
    code = main(["--problem", "wheel", "--delta", "0.9", "--agents", "s2vgd,linucb", "--rounds", "150", "--num-seeds", "2",
                 "--num-particles", "4", "--train-every", "25", "--train-steps", "2", "--log-dir", str(tmp_path),
                 "--run-name", "cli", "--progress", "false", "--log-points", "20"])
    assert code == 0
    run_dir = tmp_path / "cli"
    for name in ("config.json", "seeds/seed_0.npz", "seeds/seed_1.npz", "results.csv", "summary.csv", "curves.csv", "results.md", "regret.png"):
        assert (run_dir / name).is_file(), name
    config = json.loads((run_dir / "config.json").read_text())
    assert config["delta"] == 0.9 and config["agent_names"] == ["s2vgd", "linucb", "uniform"]
    hp = config["agent_hyperparameters"]["s2vgd"]
    assert hp["householder"] == config["householder"] == 2 and hp["structural_output"] is False
    assert hp["structural_lr_scale"] == 0.1 and hp["lr"] == config["s2vgd_lr"] == 1e-3  # the tuned defaults
    for agent in ("s2vgd", "linucb", "uniform"):
        for sub in ("seed_0", "seed_1", "mean"):
            assert list((run_dir / agent / sub).glob("events.out.tfevents.*")), (agent, sub)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir / "s2vgd" / "seed_0"))
    acc.Reload()
    assert {"regret/cumulative", "svgd/bandwidth", "svgd/repulsive_norm"} <= set(acc.Tags()["scalars"])
    out = capsys.readouterr().out
    assert "normalised regret (uniform = 100)" in out


def test_cli_runs_and_resumes_the_variational_agents(tmp_path, capsys):
    agents = "bbb,vmg,kflow-linear,kflow-diag,badam"
    common = ["--progress", "false", "--log-points", "10"]
    assert main(["--problem", "mushroom", "--agents", agents, "--rounds", "300", "--num-seeds", "1",
                 "--log-dir", str(tmp_path), "--run-name", "variational", *common]) == 0
    run_dir = tmp_path / "variational"
    config = json.loads((run_dir / "config.json").read_text())
    assert config["agent_names"] == [*agents.split(","), "uniform"] and config["variational_lr"] == 0
    hp = config["agent_hyperparameters"]
    assert hp["kflow-linear"]["method"] == "kflow-linear" and hp["badam"]["train_every"] == 50
    assert list((run_dir / "badam" / "seed_0").glob("events.out.tfevents.*"))
    first = pd.read_csv(run_dir / "results.csv")
    assert set(first.agent) == {*agents.split(","), "uniform"}
    assert main(["--resume", str(run_dir), "--num-seeds", "2", *common]) == 0  # extends the run by seed 1
    assert (run_dir / "seeds" / "seed_1.npz").is_file()
    again = pd.read_csv(run_dir / "results.csv")
    assert len(again) == 2 * len(first)
    pd.testing.assert_frame_equal(again[again.seed == 0].reset_index(drop=True), first)
    assert "normalised regret (uniform = 100)" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--problem", "nope"], "unknown problem 'nope'"),
        (["--problem", "wheel", "--agents", "s2vgd,nope"], "unknown agent 'nope'"),
        (["--problem", "wheel", "--delta", "1.2"], "delta must lie in"),
        (["--problem", "mushroom", "--data-path", "/nonexistent/agaricus-lepiota.data"], "no file at"),
        (["--problem", "wheel", "--rounds", "0"], "--rounds must be ≥ 1"),
        (["--problem", "wheel", "--agents", "greedy,eps-greedy-0"], "an agent is named twice"),
        (["--problem", "wheel", "--s2vgd-lr", "-1"], "--s2vgd-lr must be ≥ 0"),
        (["--problem", "wheel", "--variational-lr", "-1"], "--variational-lr must be ≥ 0"),
    ],
)
def test_cli_bad_input_exits_2_with_a_clear_message(argv, message, capsys, tmp_path):
    assert main([*argv, "--log-dir", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing written for a rejected configuration

