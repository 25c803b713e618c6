"""svpg.supervised.compare: real runs merged and paired by split, unlike runs kept apart, a table by hand."""
from __future__ import annotations

import json
import math
import statistics

import numpy as np
import pytest

from svpg.supervised import compare
from svpg.supervised.cli import main as supervised_main

T_975_DF2 = 4.3026527


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(50, 3))
    y = x @ np.array([1.0, -2.0, 0.5]) + rng.normal(0, 0.3, 50)
    path = tmp_path_factory.mktemp("data") / "toy.csv"
    path.write_text("\n".join(["a,b,c,y"] + [f"{r[0]},{r[1]},{r[2]},{t}" for r, t in zip(x, y)]) + "\n")
    return path


def fit(root, csv_file, name, methods, *extra):
    argv = ["--dataset", "csv", "--data-path", str(csv_file), "--target", "y", "--method", methods, "--num-splits", "3",
            "--epochs", "4", "--num-particles", "3", "--log-dir", str(root), "--run-name", name, "--progress", "false",
            "--save-models", "false", *extra]
    assert supervised_main(argv) == 0
    return root / name


@pytest.fixture(scope="module")
def runs(tmp_path_factory, csv_file):
    root = tmp_path_factory.mktemp("runs")
    return root, fit(root, csv_file, "particles", "s2vgd,svgd"), fit(root, csv_file, "parametric", "svgd,bbb")


def split_rows(run, method):
    return {int(p.stem[-2:]): json.loads(p.read_text()) for p in (run / "splits").glob(f"{method}_split*.json")}


def test_two_runs_are_one_table_paired_by_split(runs, capsys):
    _, particles, parametric = runs
    assert compare.main([str(particles), str(parametric), "--reference", "s2vgd"]) == 0
    out = capsys.readouterr().out
    rows = {line.split(" | ")[0].strip("| "): line for line in out.splitlines() if line.startswith("| ") and "---" not in line}
    assert set(rows) == {"method", "s2vgd (K=1)", "svgd", "bbb"}
    bbb, s2vgd = split_rows(parametric, "bbb"), split_rows(particles, "s2vgd")
    d = [bbb[k]["rmse"] - s2vgd[k]["rmse"] for k in range(3)]
    half = T_975_DF2 * statistics.stdev(d) / math.sqrt(3)
    mean = statistics.mean(d)
    assert f"{mean:+.3f} [{mean - half:+.3f}, {mean + half:+.3f}]" in rows["bbb"]
    better_rmse = sum(x < 0 for x in d)
    better_ll = sum(bbb[k]["test_ll"] > s2vgd[k]["test_ll"] for k in range(3))
    assert f"| {better_rmse} / {better_ll} of 3 |" in rows["bbb"]
    assert "| 3 |" in rows["svgd"]  # svgd is in both runs and counted once per split


def refused(capsys, *argv) -> str:
    """The one-line error of a comparison that must exit with status 2."""
    with pytest.raises(SystemExit) as e:
        compare.main([str(a) for a in argv])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def test_runs_on_other_rows_or_with_other_results_are_refused(runs, csv_file, capsys):
    root, particles, _ = runs
    other_seed = fit(root, csv_file, "seed1", "svgd", "--seed", "1")
    assert "do not fit the same rows (seed differ)" in refused(capsys, particles, other_seed)
    longer = fit(root, csv_file, "longer", "svgd", "--epochs", "6")
    assert "method svgd split 0 gave different results in two runs" in refused(capsys, particles, longer)
    assert "--reference 'vmg' is in none of the runs" in refused(capsys, particles, "--reference", "vmg")
    assert "is not a supervised run folder" in refused(capsys, root / "missing")
    assert "--splits '0-x'" in refused(capsys, particles, "--splits", "0-x")


def test_table_by_hand_with_a_split_subset():
    def row(rmse, ll, seconds=2.0):
        return {"rmse": rmse, "test_ll": ll, "seconds": seconds}

    table = {"s2vgd": {0: row(2.0, -2.0), 1: row(3.0, -3.0), 2: row(9.0, -9.0)},
             "map": {0: row(2.5, -1.0), 1: row(2.0, -3.5), 2: row(1.0, -1.0)}}
    text = compare.compare_table(table, "s2vgd", splits=[0, 1])
    map_row = next(line for line in text.splitlines() if line.startswith("| map "))
    # splits 0 and 1 only: RMSE d = +0.5, −1.0 (mean −0.25); LL d = +1.0, −0.5 (mean +0.25)
    half = 12.7062047 * statistics.stdev([0.5, -1.0]) / math.sqrt(2)
    assert map_row.startswith("| map | 2 | 2.250 ± 0.250 | -2.250 ± 1.250 |")
    assert f"{-0.25:+.3f} [{-0.25 - half:+.3f}, {-0.25 + half:+.3f}]" in map_row
    assert "| 1 / 1 of 2 |" in map_row
    with pytest.raises(compare.CompareError, match="--reference 'svgd'"):
        compare.compare_table(table, "svgd")


def test_paired_cells_of_a_tiny_rmse_keep_their_digits():
    table = {"s2vgd": {0: {"rmse": 1.0e-4, "test_ll": 7.0, "seconds": 1.0}, 1: {"rmse": 2.0e-4, "test_ll": 7.2, "seconds": 1.0}},
             "svgd": {0: {"rmse": 3.0e-4, "test_ll": 6.9, "seconds": 1.0}, 1: {"rmse": 3.0e-4, "test_ll": 6.8, "seconds": 1.0}}}
    row = next(line for line in compare.compare_table(table, "s2vgd").splitlines() if line.startswith("| svgd "))
    # the smallest mean RMSE 1.5e-4: six decimals for the RMSE and its difference (+1.5e-4; d = +2e-4, +1e-4)
    half = 12.7062047 * statistics.stdev([2.0e-4, 1.0e-4]) / math.sqrt(2)  # t(0.975, 1 degree of freedom)
    assert row.startswith("| svgd | 2 | 0.000300 ± 0.000000 | 6.850 ± 0.050 |")
    assert f"{1.5e-4:+.6f} [{1.5e-4 - half:+.6f}, {1.5e-4 + half:+.6f}]" in row
