import os

import pytest
import torch

# Tests run two at a time (pytest -n 2) on two cores: one torch thread each avoids oversubscription.
torch.set_num_threads(1)
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture
def tmp_runs(tmp_path):
    return tmp_path / "runs"


@pytest.fixture
def one_thread():
    """One torch thread for the test (thousands of tiny ops: intra-op threads only add contention);
    the caller's count is restored afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
