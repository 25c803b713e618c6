"""svpg.bandits.compare: paired differences by hand, and the checks that keep unlike runs apart."""
import json
import math

import numpy as np
import pytest

from svpg.bandits import compare

PROBLEM = {"problem": "mushroom", "rounds": 100, "seed": 0, "delta": 0.95, "wheel_sigma": 0.01, "data_path": "",
           "reward_no_eat": 0.0, "reward_eat_edible": 5.0, "reward_eat_poisonous_bad": -35.0,
           "reward_eat_poisonous_good": 5.0, "prob_poisonous_bad": 0.5, "problem_description": {"rows": 10}}


def write_run(path, rows, **problem):
    path.mkdir()
    (path / "config.json").write_text(json.dumps({**PROBLEM, **problem, "agents": "x"}))
    lines = ["agent,seed,rounds,cumulative_regret,normalised_regret,cumulative_pseudo_regret,cumulative_reward,reward_ratio,seconds"]
    lines += [f"{a},{s},100,{10 * r},{r},0,0,{1 - r / 100},1.5" for a, s, r in rows]
    (path / "results.csv").write_text("\n".join(lines) + "\n")
    return path


def test_paired_difference_is_the_t_interval_by_hand():
    mean, lo, hi = compare.paired_difference(np.array([3.0, 5.0, 7.0]), np.array([2.0, 3.0, 4.0]))  # d = 1, 2, 3
    half = 4.302653 * 1.0 / math.sqrt(3)  # t_{0.975, 2} × sd / √n
    assert mean == pytest.approx(2.0) and lo == pytest.approx(2.0 - half, abs=1e-5) and hi == pytest.approx(2.0 + half, abs=1e-5)
    assert math.isnan(compare.paired_difference(np.array([1.0]), np.array([0.0]))[1])


def test_runs_of_one_problem_merge_paired_by_seed(tmp_path):
    a = write_run(tmp_path / "a", [("s2vgd", 0, 2.0), ("s2vgd", 1, 4.0), ("uniform", 0, 100), ("uniform", 1, 100)])
    b = write_run(tmp_path / "b", [("bbb", 0, 3.0), ("bbb", 1, 3.0), ("bbb", 2, 9.0), ("uniform", 0, 100), ("uniform", 1, 100)])
    _, table = compare.load_runs([a, b])
    text = compare.compare_table(table, "s2vgd")
    bbb = next(line for line in text.splitlines() if line.startswith("| bbb "))
    # bbb over its 3 seeds: mean 5; paired with s2vgd on seeds 0, 1 only: differences +1, −1
    assert "| 3 | 5.00 ± 3.46 |" in bbb and "+0.00 [" in bbb and "| 1/2 |" in bbb
    only_first = compare.compare_table(table, "s2vgd", seeds=[0])
    assert "| bbb | 1 | 3.00 ± 0.00 |" in only_first


def test_unlike_runs_are_refused_in_one_line(tmp_path):
    a = write_run(tmp_path / "a", [("s2vgd", 0, 2.0)])
    other_rounds = write_run(tmp_path / "b", [("bbb", 0, 3.0)], rounds=200)
    with pytest.raises(compare.CompareError, match="rounds"):
        compare.load_runs([a, other_rounds])
    disagree = write_run(tmp_path / "c", [("s2vgd", 0, 2.5)])
    with pytest.raises(compare.CompareError, match="did not play the same table"):
        compare.load_runs([a, disagree])
    with pytest.raises(compare.CompareError, match="--reference"):
        compare.compare_table(compare.load_runs([a])[1], "svgd")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "config.json").write_text(json.dumps(PROBLEM))
    with pytest.raises(compare.CompareError, match="--resume"):
        compare.load_runs([tmp_path / "d"])


def test_cli_exits_2_with_one_line(tmp_path, capsys):
    a = write_run(tmp_path / "a", [("s2vgd", 0, 2.0), ("bbb", 0, 1.0)])
    assert compare.main([str(a), "--out", str(tmp_path / "t.md")]) == 0
    assert "| bbb | 1 | 1.00" in (tmp_path / "t.md").read_text()
    with pytest.raises(SystemExit) as e:
        compare.main([str(a), "--seeds", "zero"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--seeds" in err[0]
