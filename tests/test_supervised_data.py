"""Supervised front end: data loaders, splits, standardisation, input checks and metrics."""
from __future__ import annotations

import gzip
import math
import struct
from pathlib import Path

import numpy as np
import pytest

from svpg.supervised.data import (
    Standardizer,
    check_xy,
    holdout_split,
    load_boston,
    load_concrete,
    load_csv,
    load_dataset,
    load_fashion_mnist,
    read_idx,
    standard_splits,
    train_test_split,
    train_test_splits,
)
from svpg.supervised.metrics import (
    classification_metrics,
    expected_calibration_error,
    mixture_log_likelihood,
    regression_metrics,
    test_log_likelihood,
)


# ------------------------------------------------------------------------------------ loaders


def test_boston_and_concrete_shapes():
    boston = load_boston()
    assert boston.x.shape == (506, 13) and boston.target_name == "medv" and boston.task == "regression"
    concrete = load_concrete()
    assert concrete.x.shape == (1030, 8) and concrete.target_name == "compressive_strength"
    assert np.isfinite(concrete.x).all() and np.isfinite(concrete.y).all()


def test_mnist_digits():
    d = load_dataset("mnist")
    assert d.x.shape == (5000, 784) and d.n_classes == 10 and d.x.max() <= 1.0
    assert set(np.unique(d.y)) == set(range(10))


def test_csv_loader_and_missing_target(tmp_path):
    path = tmp_path / "toy.csv"
    path.write_text("a,b,price\n1,2,3\n4,5,6\n7,8,9\n")
    d = load_csv(path, "price")
    np.testing.assert_array_equal(d.y, [3, 6, 9])
    assert d.feature_names == ["a", "b"]
    with pytest.raises(ValueError, match=r"target column 'cost' is not in toy.csv.*\['a', 'b', 'price'\].*--target"):
        load_csv(path, "cost")
    with pytest.raises(ValueError, match="--target"):
        load_dataset("csv", str(path), None)
    with pytest.raises(ValueError, match="does not exist"):
        load_csv(tmp_path / "nope.csv", "price")


def test_csv_with_missing_values_names_the_fix(tmp_path):
    path = tmp_path / "holes.csv"
    path.write_text("a,b,y\n1,2,3\n4,,6\n7,8,9\n")
    with pytest.raises(ValueError, match=r"1 row\(s\) have missing/NaN values \(first: data row 1\).*dropna"):
        load_csv(path, "y")


def _write_idx(path, arr: np.ndarray) -> None:
    header = struct.pack(">HBB", 0, 0x08, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + arr.astype(np.uint8).tobytes())


def test_idx_reader_and_fashion_loader(tmp_path):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (6, 28, 28))
    labels = rng.integers(0, 10, 6)
    for prefix in ("train", "t10k"):
        _write_idx(tmp_path / f"{prefix}-images-idx3-ubyte.gz", images)
        _write_idx(tmp_path / f"{prefix}-labels-idx1-ubyte.gz", labels)
    np.testing.assert_array_equal(read_idx(tmp_path / "train-images-idx3-ubyte.gz"), images)
    d = load_fashion_mnist(tmp_path)
    assert d.x.shape == (6, 784) and d.x_test.shape == (6, 784) and d.x.max() <= 1.0
    np.testing.assert_array_equal(d.y_test, labels)


def test_fashion_mnist_missing_gives_install_hint(tmp_path):
    with pytest.raises(ValueError, match=r"apt-get install -y dataset-fashion-mnist.*--data-path"):
        load_fashion_mnist(tmp_path / "absent")


def test_unknown_dataset():
    with pytest.raises(ValueError, match="unknown dataset 'iris'"):
        load_dataset("iris")


# ------------------------------------------------------------------------ splits and scaling


def test_splits_are_seeded_disjoint_and_prefix_stable():
    a = train_test_splits(506, 20, 0.1, seed=0)
    b = train_test_splits(506, 5, 0.1, seed=0)
    assert len(a) == 20
    for (tr, te), (tr2, te2) in zip(a[:5], b):
        np.testing.assert_array_equal(tr, tr2)
        np.testing.assert_array_equal(te, te2)
    tr, te = a[0]
    assert len(te) == 51 and len(tr) == 455 and not set(tr) & set(te)
    assert not np.array_equal(a[0][1], a[1][1])  # different splits differ
    assert not np.array_equal(train_test_splits(506, 1, seed=1)[0][1], a[0][1])


#: the upstream index files (see the README there); not part of the repository
UCI_SPLITS = Path(__file__).resolve().parents[2] / "shared" / "data" / "uci_splits"


@pytest.mark.parametrize("name, load", [("boston", load_boston), ("concrete", load_concrete)])
def test_standard_splits_are_the_published_index_files(name, load):
    folder = UCI_SPLITS / name
    if not folder.is_dir():
        pytest.skip(f"the published UCI split files are not at {folder}")
    data = np.loadtxt(folder / "data.txt")  # the same rows in the same order: the indices apply to ours
    np.testing.assert_array_equal(data[:, :-1], load().x)
    np.testing.assert_array_equal(data[:, -1], load().y)
    splits = standard_splits(name)
    assert len(splits) == 20
    for k, (train, test) in enumerate(splits):
        np.testing.assert_array_equal(train, np.loadtxt(folder / f"index_train_{k}.txt", dtype=np.int64), err_msg=f"split {k}")
        np.testing.assert_array_equal(test, np.loadtxt(folder / f"index_test_{k}.txt", dtype=np.int64), err_msg=f"split {k}")


def test_standard_splits_partition_the_rows_and_leave_numpys_global_state_alone():
    np.random.seed(7)
    before = np.random.get_state()[1].copy()
    splits = standard_splits("Concrete")
    np.testing.assert_array_equal(np.random.get_state()[1], before)
    for train, test in splits:
        assert len(train) == 927 and len(test) == 103
        np.testing.assert_array_equal(np.sort(np.concatenate([train, test])), np.arange(1030))
    with pytest.raises(ValueError, match="the standard splits exist for boston and concrete, not 'mnist'"):
        standard_splits("mnist")


def test_split_and_validation_rows_come_from_independent_streams():
    """One shared stream would make the validation rows of a 10 % hold-out the test rows of split 0;
    ``seed + k`` arithmetic would make split 1 of seed 0 split 0 of seed 1."""
    _, test = train_test_split(500, 0, 0.1, seed=3)
    _, validation = holdout_split(500, 0.1, seed=3)
    assert len(test) == len(validation) == 50
    assert len(set(test) & set(validation)) < 20  # independent draws overlap in ~5 rows
    assert len(set(train_test_split(500, 1, seed=0)[1]) & set(train_test_split(500, 0, seed=1)[1])) < 20


def test_standardizer_uses_training_statistics():
    x = np.array([[1.0, 5.0], [3.0, 5.0]])
    s = Standardizer.fit(x)
    np.testing.assert_allclose(s.transform(x), [[-1.0, 0.0], [1.0, 0.0]])  # constant column keeps std 1
    np.testing.assert_allclose(s.transform([[5.0, 7.0]]), [[3.0, 2.0]])
    np.testing.assert_allclose(s.inverse(s.transform(x)), x)


# ----------------------------------------------------------------------------------- checks


def test_bad_inputs_give_clear_errors():
    x = np.ones((10, 3))
    y = np.ones(10)
    x_nan = x.copy()
    x_nan[4, 2] = np.nan
    with pytest.raises(ValueError, match=r"NaN/inf value\(s\) \(first at row 4, column 2\).*drop or impute"):
        check_xy(x_nan, y)
    with pytest.raises(ValueError, match="X has 10 rows but y has 9"):
        check_xy(x, y[:9])
    with pytest.raises(ValueError, match=r"reshape\(-1, 1\)"):
        check_xy(np.ones(10), y)
    with pytest.raises(ValueError, match="y must be 1-D"):
        check_xy(x, np.ones((10, 2)))
    with pytest.raises(ValueError, match="y contains 1 NaN"):
        check_xy(x, np.r_[np.ones(9), np.nan])
    with pytest.raises(ValueError, match="class labels must be integers"):
        check_xy(x, np.linspace(0, 1, 10), "classification")
    with pytest.raises(ValueError, match="numeric"):
        check_xy(np.array([["a", "b"]] * 10), y)


# ----------------------------------------------------------------------------------- metrics


def test_mixture_log_likelihood_is_log_mean_exp_over_particles():
    """Direct computation, point by point and particle by particle, in float64."""
    rng = np.random.default_rng(1)
    m, n = 7, 30
    y = rng.normal(20, 5, n)
    means = y + rng.normal(0, 3, (m, n))
    stds = rng.uniform(1, 4, m)
    direct = np.empty(n)
    for i in range(n):
        dens = [math.exp(-0.5 * ((y[i] - means[j, i]) / stds[j]) ** 2) / (stds[j] * math.sqrt(2 * math.pi)) for j in range(m)]
        direct[i] = math.log(sum(dens) / m)
    np.testing.assert_allclose(mixture_log_likelihood(y, means, stds), direct, rtol=1e-12)
    assert test_log_likelihood(y, means, stds) == pytest.approx(direct.mean(), rel=1e-12)
    r = regression_metrics(y, means, stds)
    assert r["rmse"] == pytest.approx(np.sqrt(np.mean((means.mean(0) - y) ** 2)))


def test_mixture_log_likelihood_is_stable_far_in_the_tails():
    # every particle's density underflows to 0 in float64; log-mean-exp must still be exact
    y, means, stds = np.array([0.0]), np.array([[100.0], [101.0]]), np.array([1.0, 1.0])
    expected = np.logaddexp(-0.5 * 100**2, -0.5 * 101**2) - math.log(2) - 0.5 * math.log(2 * math.pi)
    assert mixture_log_likelihood(y, means, stds)[0] == pytest.approx(expected, rel=1e-12)


def test_expected_calibration_error_by_hand():
    # two points at confidence 0.9 (one right, one wrong) → bin acc 0.5, |0.5 − 0.9| = 0.4, weight 2/4;
    # two at confidence 0.6, both right → |1 − 0.6| = 0.4, weight 2/4. ECE = 0.4.
    probs = np.array([[0.9, 0.1], [0.9, 0.1], [0.6, 0.4], [0.4, 0.6]])
    y = np.array([0, 1, 0, 1])
    assert expected_calibration_error(y, probs) == pytest.approx(0.4)
    m = classification_metrics(y, probs)
    assert m["error"] == 0.25
    assert m["nll"] == pytest.approx(-(np.log(0.9) + np.log(0.1) + 2 * np.log(0.6)) / 4)
    # a perfectly calibrated predictor: confidence 0.75, 3 of 4 right
    assert expected_calibration_error([0, 0, 0, 1], np.tile([0.75, 0.25], (4, 1))) == pytest.approx(0.0)
