"""svpg.bandits.compare: real runs merged and paired by seed, unlike runs kept apart."""

import pytest

from svpg.bandits import compare
from svpg.bandits.cli import main as bandit_main


def play(tmp_path, name, agents, *extra, seeds=2):
    argv = ["--problem", "wheel", "--delta", "0.9", "--agents", agents, "--rounds", "120", "--num-seeds", str(seeds),
            "--log-dir", str(tmp_path), "--run-name", name, "--progress", "false", "--log-points", "10", *extra]
    assert bandit_main(argv) == 0
    return tmp_path / name


def test_table_pairs_by_seed():
    def m(r):
        return {"normalised_regret": r, "reward_ratio": 1 - r / 100, "cumulative_regret": 10 * r, "seconds": 1.0}

    table = {("s2vgd", 0): m(2.0), ("s2vgd", 1): m(4.0), ("bbb", 0): m(3.0), ("bbb", 1): m(3.0), ("bbb", 2): m(9.0)}
    bbb = next(line for line in compare.compare_table(table, "s2vgd").splitlines() if line.startswith("| bbb "))
    # bbb over its 3 seeds: mean 5, sd √12; paired with s2vgd on seeds 0 and 1 only: differences +1, −1
    assert "| 3 | 5.00 ± 3.46 |" in bbb and "+0.00 [" in bbb and "| 1/2 |" in bbb
    assert "| bbb | 1 | 3.00 ± 0.00 |" in compare.compare_table(table, "s2vgd", seeds=[0])
    with pytest.raises(compare.CompareError, match="--reference"):
        compare.compare_table(table, "svgd")


def test_runs_of_one_problem_merge_and_unlike_runs_are_refused(tmp_path, capsys):
    a = play(tmp_path, "a", "linucb,uniform")
    b = play(tmp_path, "b", "eps-greedy-0.5,uniform", "--hidden", "8", "--train-every", "40", "--train-steps", "1", seeds=3)
    _, table = compare.load_runs([a, b])  # uniform is in both: it played the same tables, so the check passes
    assert {k for k in table if k[0] == "uniform"} == {("uniform", 0), ("uniform", 1), ("uniform", 2)}
    assert compare.main([str(a), str(b), "--reference", "linucb", "--out", str(tmp_path / "t.md")]) == 0
    text = (tmp_path / "t.md").read_text()
    assert "| eps-greedy-0.5 | 3 |" in text and "| linucb | 2 |" in text and "/2 |" in text
    other = play(tmp_path, "c", "linucb", "--delta", "0.5")
    with pytest.raises(compare.CompareError, match="delta"):
        compare.load_runs([a, other])
    retuned = play(tmp_path, "d", "linucb", "--linucb-alpha", "5")
    with pytest.raises(compare.CompareError, match="did not play the same table"):
        compare.load_runs([a, retuned])
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        compare.main([str(a), "--seeds", "zero"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--seeds" in err[0]


def test_standard_errors_instead_of_standard_deviations():
    # normalised regret 2 and 4 on two seeds: std √2 = 1.41, standard error √2 / √2 = 1.00
    table = {("s2vgd", s): {"normalised_regret": v, "reward_ratio": 0.5, "cumulative_regret": v, "seconds": 1.0}
             for s, v in ((0, 2.0), (1, 4.0))}
    assert "| s2vgd | 2 | 3.00 ± 1.41 |" in compare.compare_table(table, "s2vgd")
    assert "| s2vgd | 2 | 3.00 ± 1.00 |" in compare.compare_table(table, "s2vgd", spread="se")
    with pytest.raises(compare.CompareError, match="--spread"):
        compare.compare_table(table, "s2vgd", spread="iqr")
