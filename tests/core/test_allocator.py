"""keep_freed_memory: a process-wide performance knob that is safe to call more than once."""
import platform
import sys

from svpg.allocator import keep_freed_memory


def test_keep_freed_memory_reports_the_same_outcome_on_every_call():
    first = keep_freed_memory()
    assert isinstance(first, bool)
    assert keep_freed_memory() is first  # idempotent: the thresholds are set once per process
    # glibc's mallopt accepts both thresholds; other C libraries (musl) or systems have nothing to tune
    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert first is glibc
