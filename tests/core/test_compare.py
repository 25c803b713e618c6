"""python -m svpg.compare: RL, bandit and supervised runs recognised from config.json, paired differences
checked by hand, runs of two kinds or unlike runs refused with one line."""
from __future__ import annotations

import json
import math
import runpy
import statistics
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from svpg import compare
from svpg.rl.config import SVPGConfig
from svpg.supervised.config import SupervisedConfig

T_975 = {1: 12.7062047, 2: 4.3026527}  # Student-t 97.5 % quantiles by degrees of freedom


def ci(d: list[float], digits: int) -> str:
    mean = statistics.mean(d)
    half = T_975[len(d) - 1] * statistics.stdev(d) / math.sqrt(len(d))
    return f"{mean:+.{digits}f} [{mean - half:+.{digits}f}, {mean + half:+.{digits}f}]"


def rows(out: str) -> dict[str, str]:
    return {line.split(" | ")[0].strip("| "): line for line in out.splitlines() if line.startswith("| ") and "---" not in line}


def refused(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as e:
        compare.main([str(a) for a in argv])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def rl_run(root: Path, name: str, returns: list[tuple[float, float]], **options) -> Path:
    """A train.py run folder: config.json and a progress.csv with (mean, max) returns per iteration."""
    run = root / name
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps(asdict(SVPGConfig(**options))))
    lines = ["iteration,total_steps,rollout/ep_rew_mean,rollout/ep_rew_max,time/fps"]
    lines += [f"{i},{400 * i},{mean},{mx},1000" for i, (mean, mx) in enumerate(returns, 1)]
    (run / "progress.csv").write_text("\n".join(lines) + "\n")
    return run


@pytest.fixture
def rl_grid(tmp_path) -> Path:
    """An experiments --out folder: s2vgd and svgd, seeds 0-2, final returns chosen by hand."""
    out = tmp_path / "grid"
    finals = {"s2vgd": [(10.0, 20.0), (12.0, 21.0), (14.0, 25.0)], "svgd": [(9.0, 18.0), (13.0, 19.0), (11.0, 20.0)]}
    for method, values in finals.items():
        for seed, final in enumerate(values):
            rl_run(out, f"{method}__reinforce__seed{seed}", [(0.0, 0.0), final], method=method, seed=seed)
    return out


def test_rl_runs_are_paired_by_seed(rl_grid, capsys):
    assert compare.main([str(rl_grid)]) == 0
    out = capsys.readouterr().out
    assert "mean ± standard error over seeds" in out and "95 % t-intervals" in out and "iteration 2 (800 steps)" in out
    table = rows(out)
    # svgd − s2vgd by seed: mean return −1, +1, −3; max −2, −2, −5
    assert table["svgd"].startswith(f"| svgd | 3 | 11.0 ± {statistics.stdev([9, 13, 11]) / math.sqrt(3):.1f} |")
    assert ci([-1.0, 1.0, -3.0], 1) in table["svgd"] and ci([-2.0, -2.0, -5.0], 1) in table["svgd"]
    assert table["svgd"].endswith("| 1/3 |")
    # train.py run folders given one by one, seeds 0-1 only, the sample std instead
    runs = sorted(str(p) for p in rl_grid.iterdir())
    assert compare.main([*runs, "--reference", "svgd", "--seeds", "0-1", "--spread", "std"]) == 0
    s2vgd = rows(capsys.readouterr().out)["s2vgd"]
    assert s2vgd.startswith(f"| s2vgd | 2 | 11.0 ± {statistics.stdev([10, 12]):.1f} |") and ci([1.0, -1.0], 1) in s2vgd


def test_unlike_rl_runs_are_refused(rl_grid, tmp_path, capsys):
    other = rl_run(tmp_path, "pendulum", [(1.0, 2.0), (1.0, 2.0)], env_id="Pendulum-v1")
    assert "train on different environments" in refused(capsys, rl_grid / "s2vgd__reinforce__seed0", other)
    short = rl_run(tmp_path, "short", [(1.0, 2.0)], method="svgd", seed=5)
    assert "stopped at iteration 1" in refused(capsys, rl_grid, short)
    again = rl_run(tmp_path, "again", [(1.0, 2.0), (1.0, 2.0)], method="svgd", seed=0)
    assert "are both seed 0 of svgd" in refused(capsys, rl_grid, again)
    assert "--reference 'bbb' is in none of the runs" in refused(capsys, rl_grid, "--reference", "bbb")
    assert "is not a run folder" in refused(capsys, tmp_path / "missing")


def test_benchmark_runs_are_paired_by_seed(rl_grid, tmp_path, capsys):
    out = tmp_path / "benchmark"
    finals = {"s2vgd": [-200.0, -210.0], "ppo": [-230.0, -220.0]}
    for agent, values in finals.items():
        for seed, final in enumerate(values):
            run = out / "Pendulum-v1" / f"{agent}__seed{seed}"
            run.mkdir(parents=True)
            job = {"task": "Pendulum-v1", "agent": agent, "seed": seed, "total_steps": 4000, "eval_episodes": 5}
            (run / "job.json").write_text(json.dumps(job))
            (run / "result.json").write_text(json.dumps({**job, "final": final, "env_steps": 4000}))
    assert compare.main([str(out), "--reference", "ppo"]) == 0
    text = capsys.readouterr().out
    assert "**Pendulum-v1**, 4000 environment steps, 5 evaluation episodes" in text
    # s2vgd − ppo by seed: +30, +10
    assert ci([30.0, 10.0], 1) in rows(text)["s2vgd"] and rows(text)["s2vgd"].endswith("| 2/2 |")
    assert "compare runs of one command" in refused(capsys, out, rl_grid)


def supervised_run(root: Path, name: str, results: dict[str, list[tuple[float, float]]], **options) -> Path:
    """A train.py supervised run folder: config.json and a split file per (method, split) with (RMSE, LL)."""
    run = root / name
    (run / "splits").mkdir(parents=True)
    config = asdict(SupervisedConfig(method=",".join(results), **options))
    config.update(resolved={}, data={"description": "toy", "sha256": "0" * 64})
    (run / "config.json").write_text(json.dumps(config))
    for method, values in results.items():
        for k, (rmse, ll) in enumerate(values):
            row = {"split": k, "rmse": rmse, "test_ll": ll, "seconds": 1.0}
            (run / "splits" / f"{method}_split{k:02d}.json").write_text(json.dumps(row))
    return run


def test_supervised_runs_are_paired_by_split_and_kinds_do_not_mix(rl_grid, tmp_path, capsys):
    a = supervised_run(tmp_path, "a", {"s2vgd": [(2.0, -2.0), (3.0, -3.0), (4.0, -2.5)]})
    b = supervised_run(tmp_path, "b", {"map": [(2.5, -2.5), (2.0, -3.5), (5.0, -3.0)]})
    assert compare.main([str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "mean ± standard error over splits" in out and "95 % t-intervals" in out
    # map − s2vgd by split: RMSE +0.5, −1.0, +1.0; LL −0.5 on each (an interval of width 0)
    map_row = rows(out)["map (M=1)"]
    assert map_row.startswith(f"| map (M=1) | 3 | 3.167 ± {statistics.stdev([2.5, 2.0, 5.0]) / math.sqrt(3):.3f} |")
    assert ci([0.5, -1.0, 1.0], 3) in map_row and "| -0.500 [-0.500, -0.500] |" in map_row
    assert "| 1 / 0 of 3 |" in map_row
    assert "do not fit the same rows (seed differ)" in refused(
        capsys, a, supervised_run(tmp_path, "c", {"map": [(1.0, -1.0)]}, seed=1))
    assert "a run of train.py supervised and" in refused(capsys, a, rl_grid)
    assert "--spread std" in refused(capsys, a, b, "--spread", "std")


def bandit_run(root: Path, name: str, regrets: dict[str, list[float]]) -> Path:
    """A train.py bandit run folder: config.json and seed files in which each agent's cumulative regret on
    seed s is ``regrets[agent][s]`` (two rounds; uniform is the normalisation reference)."""
    from svpg.bandits.cli import BanditConfig
    from svpg.bandits.results import AgentRun
    from svpg.bandits.runfolder import save_seed

    run = root / name
    run.mkdir(parents=True)
    config = asdict(BanditConfig(problem="wheel", rounds=2, seeds=3, agents=",".join(regrets)))
    config.update(problem_description={"name": "wheel"}, agent_names=list(regrets), agent_hyperparameters={})
    (run / "config.json").write_text(json.dumps(config))
    for seed in range(3):
        save_seed(run, [AgentRun(agent, seed, np.zeros(2, dtype=np.int64), np.array([v[seed] / 2] * 2), np.zeros(2),
                                 np.ones(2), 2.0, 1.0) for agent, v in regrets.items()])
    return run


def test_bandit_runs_are_paired_by_seed(tmp_path, capsys):
    uniform = [10.0, 10.0, 20.0]
    a = bandit_run(tmp_path, "a", {"linucb": [2.0, 4.0, 3.0], "uniform": uniform})
    b = bandit_run(tmp_path, "b", {"eps-greedy-0.5": [3.0, 3.0, 12.0], "uniform": uniform})
    assert compare.main([str(a), str(b), "--reference", "linucb"]) == 0
    out = capsys.readouterr().out
    assert "mean ± standard error over seeds" in out and "95 % t-intervals" in out
    # normalised regret (uniform = 100): linucb 20, 40, 15; eps-greedy-0.5 30, 30, 60: differences +10, −10, +45
    eps = rows(out)["eps-greedy-0.5"]
    assert eps.startswith(f"| eps-greedy-0.5 | 3 | 40.00 ± {statistics.stdev([30, 30, 60]) / math.sqrt(3):.2f} |")
    assert ci([10.0, -10.0, 45.0], 2) in eps and "| 1/3 |" in eps
    rl = rl_run(tmp_path, "rl", [(1.0, 2.0)])
    assert "compare runs of one kind" in refused(capsys, a, rl)


@pytest.mark.parametrize("module", ["svpg.bandits.compare", "svpg.supervised.compare"])
def test_the_former_commands_say_they_are_deprecated_and_run_this_one(module, tmp_path, monkeypatch, capsys):
    a = supervised_run(tmp_path, "a", {"s2vgd": [(2.0, -2.0), (3.0, -3.0)]})
    monkeypatch.setattr(sys, "argv", [module, str(a)])
    monkeypatch.delitem(sys.modules, module, raising=False)  # run afresh as __main__, as python -m does
    with pytest.raises(SystemExit) as e:
        runpy.run_module(module, run_name="__main__")
    err = capsys.readouterr().err
    assert err.splitlines()[0] == f"python -m {module} is deprecated: use python -m svpg.compare"
    if module == "svpg.supervised.compare":
        assert e.value.code == 0
    else:  # a supervised run given to the bandit command: refused in one line after the note
        assert e.value.code == 2 and "is a run of train.py supervised, not of train.py bandit" in err.splitlines()[1]


def names_in_order(text: str) -> list[str]:
    return [line.split(" | ")[0].strip("| ") for line in text.splitlines()[2:]]


def test_the_reference_row_comes_first_and_the_others_best_first():
    from svpg.bandits.compare import compare_table as bandit_table
    from svpg.rl.compare import compare_table as rl_table
    from svpg.supervised.compare import compare_table as supervised_table

    # RL: higher return is better; the reference is neither the best nor the worst
    rl = {arm: {0: {"final": r, "rollout/ep_rew_max": r}} for arm, r in [("a", 5.0), ("ref", 7.0), ("c", 9.0)]}
    assert names_in_order(rl_table(rl, "ref", metrics=[("final", "return")])) == ["ref", "c", "a"]
    # bandits: lower regret is better
    regret = {"a": 9.0, "ref": 5.0, "c": 1.0}
    bandit = {(a, 0): {"normalised_regret": r, "reward_ratio": 0.5, "seconds": 1.0} for a, r in regret.items()}
    assert names_in_order(bandit_table(bandit, "ref")) == ["ref", "c", "a"]
    # supervised regression: lower RMSE is better
    rmse = {"a": 3.0, "ref": 2.0, "c": 1.0}
    sup = {m: {0: {"rmse": r, "test_ll": -r, "seconds": 1.0}} for m, r in rmse.items()}
    assert names_in_order(supervised_table(sup, "ref")) == ["ref", "c", "a"]
