"""The data-set problems of the Deep Bayesian Bandits Showdown: Statlog, Covertype, Financial, Adult.

Paper: https://arxiv.org/abs/1802.09127 (Riquelme, Tucker, Snoek, ICLR 2018, appendix)

Each problem is built as the Showdown's published code (``data_sampler.py`` and ``sample_data`` of
its example script) builds it, per seed:

* the rows are shuffled (with the seed's table stream) and the first T are played, each once; T is
  at most the Showdown's cap (Statlog 43500, Covertype 150000, Financial 3713, Adult 45222);
* **classification sets** (Statlog, Covertype, Adult): one arm per class, reward 1 for the right
  class and 0 otherwise, so the optimal reward is 1 in every round; the contexts are standardised
  with the mean and standard deviation of the T rows played (a constant column is left at 0);
* **Financial**: the contexts are the 21 stocks' raw returns; the 8 arms are 8 random portfolios
  β_k ~ U[−1, 1]²¹ normalised to unit length, drawn once per table; arm k pays β_kᵀx + N(0, σ_k²),
  σ_k = 0.01 (k + 1); the optimal reward is max_k β_kᵀx, without noise.

Data files come from :mod:`svpg.datafiles` (``--data-dir``, ``$SVPG_DATA_DIR``, the user cache, or a
download from the canonical home), checked by SHA-256.
"""

from __future__ import annotations

import numpy as np

from svpg.bandits.problems import BanditProblem, BanditTable
from svpg.datafiles import DataFile, fetch

_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
# the copies beside the PyTorch port of the Showdown's code (byte-identical to the files used here)
_PORT = (
    "https://raw.githubusercontent.com/andrewk1/pytorch-deep-bayesian-bandits/{commit}/bandits/data/selected_datasets"
)

SHUTTLE_TRN = DataFile(
    "bandits/shuttle/shuttle.trn",
    "87b24ee9fb5137e1d417659cf905d84d0e15342bbaa60770f1ae83da1a38200a",
    (f"{_PORT.format(commit='9d29d070')}/shuttle.trn",),
    "UCI Statlog (shuttle) training set shuttle.trn",
)
COVTYPE = DataFile(
    "bandits/covertype/covtype.data.gz",
    "45f37c38cbc051c6c3d6f37fe93ed5e9514f1499cbbcdb4da4c47caa265c5878",
    (f"{_UCI}/covtype/covtype.data.gz",),
    "UCI Covertype covtype.data.gz",
    content_sha256="0a9371cef7c964b5475d6053cc3e0894a5aa6f65ad1ed3ecb01c45aa96217945",
)
STOCKS = DataFile(
    "bandits/financial/raw_stock_contexts",
    "cf468e5aae150dfd5c6b096464cd11e85f8b01198f8e49bedb941948850a6315",
    (
        f"{_PORT.format(commit='0d8ea13c232434736ecfdd4051f9685d9f734af7')}/raw_stock_contexts",
        f"{_PORT.format(commit='9d29d070')}/raw_stock_contexts",
    ),
    "the Showdown's stock returns raw_stock_contexts",
)
ADULT_DATA = DataFile(
    "bandits/adult/adult.data",
    "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    (f"{_UCI}/adult/adult.data",),
    "UCI Adult adult.data",
)
ADULT_TEST = DataFile(
    "bandits/adult/adult.test",
    "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
    (f"{_UCI}/adult/adult.test",),
    "UCI Adult adult.test",
)

#: the Showdown's cap on the number of contexts (rounds) of each problem
MAX_ROUNDS = {"statlog": 43500, "covertype": 150000, "financial": 3713, "adult": 45222}
#: Adult's categorical columns (one-hot), as in the Showdown; column 6, the occupation, is the arm
ADULT_CATEGORICAL = (1, 3, 5, 7, 8, 9, 13, 14)
ADULT_ARM_COLUMN = 6


def standardise(x: np.ndarray) -> np.ndarray:
    """(x − mean) / std per column, a constant column divided by 1 (the Showdown's ``safe_std``)."""
    sd = x.std(0)
    return (x - x.mean(0)) / np.where(sd > 0, sd, 1.0)


class ShowdownProblem(BanditProblem):
    """Shared by the four problems: rows shuffled per seed, the first T played once each."""

    max_rounds: int
    files: tuple[DataFile, ...] = ()

    def __init__(self, features: np.ndarray, name: str, max_rounds: int):
        self.features = np.ascontiguousarray(features, dtype=np.float64)
        self.name, self.context_dim = name, self.features.shape[1]
        self.max_rounds = min(int(max_rounds), self.num_rows)

    @property
    def num_rows(self) -> int:
        return self.features.shape[0]

    def check_rounds(self, rounds: int) -> None:
        if int(rounds) > self.max_rounds:
            raise ValueError(
                f"{self.name}: --rounds {rounds} is more than the {self.max_rounds} contexts the Showdown plays "
                f"(each row once); pass --rounds {self.max_rounds} or fewer"
            )

    def shuffled_rows(self, rounds: int, rng: np.random.Generator) -> np.ndarray:
        self.check_rounds(rounds)
        return rng.permutation(self.num_rows)[:rounds]

    def describe(self) -> dict:
        return {
            **super().describe(),
            "rows": self.num_rows,
            "max_rounds": self.max_rounds,
            "files": {f.path: f.sha256 for f in self.files},
        }


class ShowdownClassification(ShowdownProblem):
    """A classification set as the Showdown's bandit: arm = class, reward 1 if right, 0 otherwise.

    Paper: https://arxiv.org/abs/1802.09127 (``classification_to_bandit_problem``)

    :param features: (n, d) raw features (categorical columns already one-hot).
    :param labels: (n,) arms 0…K−1.
    """

    def __init__(self, features, labels, name: str, num_actions: int, max_rounds: int):
        super().__init__(features, name, max_rounds)
        self.labels = np.asarray(labels, dtype=np.int64)
        self.num_actions = int(num_actions)
        if self.labels.shape != (self.num_rows,) or self.labels.min() < 0 or self.labels.max() >= self.num_actions:
            raise ValueError(f"{name}: need one label in [0, {self.num_actions}) per row")

    def sample(self, rounds: int, rng: np.random.Generator) -> BanditTable:
        rows = self.shuffled_rows(rounds, rng)
        rewards = np.zeros((rounds, self.num_actions))
        rewards[np.arange(rounds), self.labels[rows]] = 1.0
        return BanditTable(standardise(self.features[rows]).astype(np.float32), rewards, rewards.copy())


class StatlogBandit(ShowdownClassification):
    """Statlog (shuttle): 9 features, 7 arms (the classes 1–7 of ``shuttle.trn``), 43500 contexts."""

    files = (SHUTTLE_TRN,)

    @classmethod
    def load(cls, data_dir=None, download: bool = True) -> StatlogBandit:
        data = np.loadtxt(fetch(SHUTTLE_TRN, data_dir=data_dir, download=download))
        return cls(data[:, :-1], data[:, -1].astype(np.int64) - 1, "statlog", 7, MAX_ROUNDS["statlog"])


class CovertypeBandit(ShowdownClassification):
    """Covertype: 54 features (10 quantitative, 44 binary), 7 arms (the cover types), T ≤ 150000 of
    581011 rows (the Showdown reads ``covtype.data`` with ``header=0``, so its first row is not used)."""

    files = (COVTYPE,)

    @classmethod
    def load(cls, data_dir=None, download: bool = True) -> CovertypeBandit:
        import pandas as pd

        frame = pd.read_csv(
            fetch(COVTYPE, data_dir=data_dir, download=download), header=None, skiprows=1, dtype=np.int32
        )
        data = frame.to_numpy()
        return cls(data[:, :-1], data[:, -1].astype(np.int64) - 1, "covertype", 7, MAX_ROUNDS["covertype"])


class AdultBandit(ShowdownClassification):
    """Adult (census income), 45222 rows without missing values of ``adult.data`` and ``adult.test``;
    the occupation (14 values) is the arm, the other 14 columns the context: 6 quantitative, 8 one-hot
    (94 columns in all: the income column has 4 values, ``<=50K``, ``>50K`` and the test file's
    ``<=50K.``, ``>50K.``, as in the Showdown's concatenated ``adult.full``)."""

    files = (ADULT_DATA, ADULT_TEST)

    @classmethod
    def load(cls, data_dir=None, download: bool = True) -> AdultBandit:
        import pandas as pd

        frames = [
            pd.read_csv(
                fetch(f, data_dir=data_dir, download=download),
                header=None,
                names=list(range(15)),
                skipinitialspace=True,
                na_values=["?"],
            )
            for f in (ADULT_DATA, ADULT_TEST)
        ]
        frame = pd.concat(frames, ignore_index=True).dropna()  # also drops adult.test's "|1x3 Cross validator" line
        labels = frame[ADULT_ARM_COLUMN].astype("category").cat.codes.to_numpy()
        features = pd.get_dummies(frame.drop(columns=[ADULT_ARM_COLUMN]), columns=list(ADULT_CATEGORICAL))
        return cls(features.to_numpy(dtype=np.float64), labels, "adult", 14, MAX_ROUNDS["adult"])


class FinancialBandit(ShowdownProblem):
    """Financial: contexts the 21 stocks' returns (3713 rows, not standardised), 8 arms = 8 random
    unit-length portfolios drawn per table, arm k's reward β_kᵀx + N(0, (0.01 (k + 1))²).

    Paper: https://arxiv.org/abs/1802.09127 (``sample_stock_data``)
    """

    files = (STOCKS,)
    num_actions = 8

    def __init__(self, contexts, max_rounds: int = MAX_ROUNDS["financial"]):
        super().__init__(contexts, "financial", max_rounds)
        self.noise_std = 0.01 * (np.arange(self.num_actions) + 1)

    @classmethod
    def load(cls, data_dir=None, download: bool = True) -> FinancialBandit:
        return cls(np.loadtxt(fetch(STOCKS, data_dir=data_dir, download=download), skiprows=1))

    def portfolios(self, rng: np.random.Generator) -> np.ndarray:
        """(21, 8) unit-length columns β_k, uniform in [−1, 1] before normalising."""
        betas = rng.uniform(-1, 1, (self.context_dim, self.num_actions))
        return betas / np.linalg.norm(betas, axis=0)

    def sample(self, rounds: int, rng: np.random.Generator) -> BanditTable:
        rows = self.shuffled_rows(rounds, rng)
        x = self.features[rows]
        mean = x @ self.portfolios(rng)
        rewards = mean + rng.standard_normal(mean.shape) * self.noise_std
        return BanditTable(x.astype(np.float32), rewards, mean)
