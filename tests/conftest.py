import os
from pathlib import Path

import numpy as np
import pytest
import torch

# Tests run two at a time (pytest -n 2) on two cores: one torch thread each avoids oversubscription.
torch.set_num_threads(1)
os.environ.setdefault("OMP_NUM_THREADS", "1")


#: RL settings cheap enough for tests (REINFORCE, the 25-10 policy, no normalisation); tests of the
#: defaults (PPO, normalisation) say so. A test's own options override these.
CLASSIC = dict(estimator="reinforce", hidden=(25, 10), prior="mvg", alpha=1.0, lr=5e-3, anneal_lr=True,
               normalize_obs=False, normalize_reward=False, critic_hidden=(32, 32), critic_lr=5e-3, value_steps=8,
               value_epochs=2)
#: the same as train.py options
CLASSIC_ARGS = [f"--{k.replace('_', '-')}={','.join(map(str, v)) if isinstance(v, tuple) else str(v).lower() if isinstance(v, bool) else v}"
                for k, v in CLASSIC.items()]


@pytest.fixture
def tmp_runs(tmp_path):
    return tmp_path / "runs"


@pytest.fixture(autouse=True)
def registries_restored():
    """Whatever a test registers (the recipes of docs/architecture.md and tests/core/test_registries.py add a bandit
    problem, a data set and an estimator), the next test sees the registries as they were."""
    from svpg.bandits import problem_registry
    from svpg.rl import estimators
    from svpg.supervised import data

    tables = (problem_registry.PROBLEMS, data.DATASETS, data.DATA_FILES, data.UCI_SETS, data.STANDARD_SPLIT_ROWS,
              estimators.ESTIMATORS)
    saved = [dict(table) for table in tables]
    yield
    for table, before in zip(tables, saved):
        if table != before:
            table.clear()
            table.update(before)


@pytest.fixture
def one_thread():
    """One torch thread for the test (thousands of tiny ops: intra-op threads only add contention);
    the caller's count is restored afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory) -> Path:
    """A small regression CSV (3 features, target "price", 80 rows) for the supervised command line."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(80, 3))
    y = x @ np.array([1.0, -2.0, 0.5]) + 10 + rng.normal(0, 0.1, 80)
    path = tmp_path_factory.mktemp("data") / "toy.csv"
    path.write_text("a,b,c,price\n" + "".join(f"{r[0]},{r[1]},{r[2]},{t}\n" for r, t in zip(x, y)))
    return path


# The longest test files first: `make test` hands whole files to its two workers (--dist loadfile) in
# collection order, so starting the long ones early lets both workers finish at about the same time.
LONGEST_FIRST = ("core/test_docs.py", "rl/test_benchmark.py", "rl/test_api.py", "rl/test_sac.py",
                 "supervised/test_models.py", "rl/test_obs_spaces.py", "rl/test_training.py", "bandits/test_agents.py",
                 "rl/test_faults.py", "bandits/test_showdown.py", "rl/test_benchmark_spaces.py", "supervised/test_runs.py",
                 "rl/test_runs.py", "core/test_variational.py", "bandits/test_runs.py", "supervised/test_variational.py")
TESTS = Path(__file__).resolve().parent
assert all((TESTS / name).exists() for name in LONGEST_FIRST), "LONGEST_FIRST names a test file that moved"


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.relative_to(TESTS).as_posix(), len(rank)))  # stable: the others keep their order
