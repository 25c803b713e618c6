"""svpg.stats: Student-t quantiles against tabulated values, paired intervals and standard errors by hand, cells and tables."""
import math
import statistics

import pytest

from svpg.stats import (
    cell,
    convention,
    counted,
    decimals,
    format_difference,
    format_mean_se,
    markdown_table,
    mean_se,
    mean_se_rows,
    paired_difference,
    parse_range_list,
    t_quantile,
)

T_975 = {1: 12.7062047, 2: 4.3026527, 4: 2.7764451, 9: 2.2621572, 19: 2.0930241, 29: 2.0452296}  # printed tables


def test_t_quantile_matches_the_printed_table():
    for df, t in T_975.items():
        assert t_quantile(0.975, df) == pytest.approx(t, abs=1e-6)


def test_mean_se_by_hand_and_skips_non_finite_values():
    mean, se = mean_se([1.0, 2.0, 6.0, math.nan])
    assert mean == pytest.approx(3.0) and se == pytest.approx(math.sqrt(7.0 / 3.0))  # sd² = (4 + 1 + 9) / 2 = 7
    assert mean_se([5.0])[0] == 5.0 and math.isnan(mean_se([5.0])[1])
    assert all(math.isnan(v) for v in mean_se([]))


def test_paired_difference_pairs_by_key():
    a, b = {0: 10.0, 1: 14.0, 2: 9.0, 5: 1.0}, {0: 7.0, 1: 13.0, 2: 5.0, 7: 0.0}  # keys 5 and 7 have no pair
    pairs, mean, lo, hi = paired_difference(a, b)
    d = [3.0, 1.0, 4.0]
    half = T_975[2] * statistics.stdev(d) / math.sqrt(3)
    assert pairs == 3 and mean == pytest.approx(8 / 3) and (lo, hi) == pytest.approx((8 / 3 - half, 8 / 3 + half))
    pairs, mean, lo, hi = paired_difference({0: 3.0}, {0: 1.0})
    assert (pairs, mean) == (1, 2.0) and math.isnan(lo) and math.isnan(hi)


def test_range_lists():
    assert parse_range_list("100-104") == [100, 101, 102, 103, 104]
    assert parse_range_list("0-2,7") == [0, 1, 2, 7] and parse_range_list("3") == [3]
    for bad in ("5-1", "x", "", "1,1", "-3", "0-2,2"):
        with pytest.raises(ValueError, match="--splits"):
            parse_range_list(bad, "--splits")


def test_paired_difference_interval_is_scipys_and_zero_width_for_equal_differences():
    # d = (2, 2, 2): no spread, so the interval is the mean itself
    assert paired_difference({0: 3.0, 1: 4.0, 2: 5.0}, {0: 1.0, 1: 2.0, 2: 3.0}) == (3, 2.0, 2.0, 2.0)
    # 5 seeds, d = (1, 2, 3, 4, 10): mean 4, sd² = (9 + 4 + 1 + 0 + 36) / 4 = 12.5, half width t(4) · √(12.5 / 5)
    a, b = {s: 10.0 + d for s, d in enumerate((1, 2, 3, 4, 10))}, {s: 10.0 for s in range(5)}
    pairs, mean, lo, hi = paired_difference(a, b)
    half = T_975[4] * math.sqrt(12.5 / 5)
    assert (pairs, mean) == (5, 4.0) and (lo, hi) == pytest.approx((4 - half, 4 + half), abs=1e-6)


def test_cells_and_convention():
    assert cell([1.0, 2.0, 6.0], digits=2) == f"3.00 ± {math.sqrt(7 / 3):.2f}"
    assert cell([5.0]) == "5.0" and cell([]) == "–" and format_mean_se(math.nan, 1.0) == "–"
    assert format_difference(3, 8 / 3, -1.128, 6.461) == "+2.7 [-1.1, +6.5] (n=3)"
    assert format_difference(1, 2.0, math.nan, math.nan) == "+2.0 (n=1)" and format_difference(0, math.nan, 0, 0) == "–"
    assert convention("seeds", 5, "ppo") == "mean ± s.e. over 5 seeds; paired difference to ppo by seed with a 95 % t-interval"
    assert convention("splits", [0, 1, 2]) == "mean ± s.e. over 3 splits" and convention("runs") == "mean ± s.e. over runs"
    assert convention("splits", 1) == "mean ± s.e. over 1 split"


def test_mean_se_rows_matches_mean_se_per_column():
    import numpy as np

    y = np.array([[1.0, 0.0], [2.0, 0.0], [6.0, 3.0]])  # 3 seeds × 2 iterations
    mean, se = mean_se_rows(y)
    assert mean.tolist() == pytest.approx([3.0, 1.0]) and se.tolist() == pytest.approx([mean_se(y[:, 0])[1], mean_se(y[:, 1])[1]])
    assert mean_se_rows(y[:1])[1].tolist() == [0.0, 0.0]


def test_counted_is_plural_unless_one():
    assert [counted(n, "local worker") for n in (0, 1, 2)] == ["0 local workers", "1 local worker", "2 local workers"]


def test_markdown_table_keeps_cells_as_given_and_aligns():
    text = markdown_table(["agent", "return"], [["s2vgd", "-212.50 ± 3.00"], ["ppo", "007"]])
    lines = text.splitlines()
    assert [c.strip() for c in lines[0].strip("|").split("|")] == ["agent", "return"]
    assert lines[1].replace("-", "") == "|:|:|"  # first column left, the other right
    assert "-212.50 ± 3.00" in lines[2] and "007" in lines[3] and text.endswith("\n")
    with pytest.raises(ValueError, match="align"):
        markdown_table(["a", "b"], [], align="l")


def test_supervised_table_by_hand():
    from types import SimpleNamespace

    from svpg.supervised.tables import format_table

    rows = {"s2vgd": [{"rmse": 1.0, "test_ll": -1.0, "seconds": 2.0}, {"rmse": 2.0, "test_ll": -2.0, "seconds": 4.0},
                      {"rmse": 6.0, "test_ll": -3.0, "seconds": 3.0}],
            "map": [{"rmse": 5.0, "test_ll": -4.0, "seconds": 1.0}]}
    text = format_table(rows, "regression", SimpleNamespace(householder=2), "boston")
    assert text.startswith("**boston**\n\n(mean ± s.e. over splits; ")  # unequal split counts: no count in the header
    cells = {r[0]: r for r in ([c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("|"))}
    # rmse (1, 2, 6): mean 3, s.e. √(7/3) = 1.528; test_ll (−1, −2, −3): s.e. 1/√3 = 0.577
    assert cells["s2vgd (K=2)"] == ["s2vgd (K=2)", "3.000 ± 1.528", "-2.000 ± 0.577", "3", "3.00"]
    assert cells["map (M=1)"] == ["map (M=1)", "5.000", "-4.000", "1", "1.00"]


def test_decimals_keep_three_significant_digits_of_the_smallest_value():
    assert decimals([2.644, 4.464], least=3) == 3  # 2.64: 2 decimals would do, the column's least is 3
    assert decimals([0.0707, 0.0779], least=3) == 4  # 0.0707
    assert decimals([0.000127, 0.00097, -3.0], least=3) == 6  # 0.000127
    assert decimals([0.0, math.nan], least=2) == 2  # nothing to size: the least


def test_supervised_table_shows_tiny_rmse_digits():
    from types import SimpleNamespace

    from svpg.supervised.tables import format_table

    rows = {"s2vgd": [{"rmse": 1.2e-4, "test_ll": 7.3, "seconds": 1.0}, {"rmse": 1.4e-4, "test_ll": 7.2, "seconds": 1.0}]}
    text = format_table(rows, "regression", SimpleNamespace(householder=1))
    # mean 1.3e-4, s.e. 1e-5: six decimals; the log-likelihood keeps its three
    cells = [c.strip() for c in text.splitlines()[-1].strip("|").split("|")]
    assert cells[1:3] == ["0.000130 ± 0.000010", "7.250 ± 0.050"]
