"""The allocator tweak is a pure performance knob: it must be idempotent and leave results unchanged."""
import sys

import pytest
import torch

from svpg.core.allocator import keep_freed_memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_keep_freed_memory_is_accepted_and_idempotent():
    assert keep_freed_memory() is True
    assert keep_freed_memory() is True
    # large tensors still allocate, compute and free normally afterwards
    x = torch.randn(4096, 1024)
    torch.testing.assert_close((x @ x.T).diagonal(), x.square().sum(1), rtol=1e-4, atol=1e-3)
