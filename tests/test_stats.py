"""svpg.stats: Student-t quantiles against tabulated values, paired intervals and standard errors by hand."""
import math
import statistics

import pytest

from svpg.stats import mean_se, paired_difference, parse_range_list, t_quantile

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
