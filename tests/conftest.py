import os

import pytest
import torch

# Tests run two at a time (pytest -n 2) on two cores: one torch thread each avoids oversubscription.
torch.set_num_threads(1)
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture
def tmp_runs(tmp_path):
    return tmp_path / "runs"
