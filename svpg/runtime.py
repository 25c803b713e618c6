"""Process-level settings shared by every front end: devices, CPU threads and graceful interruption."""

from __future__ import annotations

import contextlib
import signal
import threading

import torch

#: torch CPU threads of every front end and Python API unless told otherwise. Small batched ops gain
#: nothing from more threads, and on shared cores a second thread can make a step several times slower.
DEFAULT_THREADS = 1

_DEVICE_TYPES = ("cpu", "cuda", "mps")


def resolve_device(device: str | torch.device) -> torch.device:
    """``device`` as a torch.device (SB3's ``"auto"``: CUDA where torch sees it, else the CPU), or a one-line
    ValueError naming what to pass instead."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"--device {device!r} is not a torch device; use cpu, cuda, cuda:N or auto") from None
    if dev.type not in _DEVICE_TYPES:
        raise ValueError(f"--device {device!r}: svpg runs on {', '.join(_DEVICE_TYPES)}; use --device cpu")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"--device {device!r}: this torch build sees no CUDA device; use --device cpu")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"--device {device!r}: only {torch.cuda.device_count()} CUDA device(s); use cuda:0")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"--device {device!r}: MPS is not available in this torch build; use --device cpu")
    return dev


@contextlib.contextmanager
def torch_threads(threads: int | None):
    """Run the block with ``threads`` torch CPU threads (None or 0: leave as is), then restore."""
    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(int(threads))
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def flush_denormals():
    """Run the block with subnormal floats (magnitude below 1.2e-38 in float32) flushed to zero on the CPU,
    then restore the caller's setting (``torch.set_flush_denormal``: x86's FTZ / DAZ).

    A ReLU network's dead units feel only the prior's pull, which shrinks their weights (and Adam's moments)
    into subnormals; CPUs handle those in microcode, tens of times slower per operation, so a long fit
    slows down as they pile up. Only values below that bound change. The flag belongs to the calling thread
    and is inherited by the threads it starts; torch's intra-op threads started before the block keep their own.
    """
    before = flushing_denormals()
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(before)


def flushing_denormals() -> bool:
    """Whether this thread flushes subnormals (torch has no getter: a subnormal then reads as 0)."""
    return torch.tensor([1e-40], dtype=torch.float32).mul(1.0).item() == 0.0


class StopRequest:
    """SIGINT / SIGTERM ask a training loop to stop at its next safe point instead of killing it.

    Used as a context manager around the loop; ``requested`` is the signal's name once one arrived.
    A second signal raises KeyboardInterrupt at once (nothing is saved then; the last checkpoint stays).
    Outside the main thread (where handlers cannot be installed) it does nothing.

    :param immediate: raise KeyboardInterrupt at the first signal too (still recording which one), for
        loops whose unit of work is long and is discarded when interrupted (a bandit seed, a data split).
    """

    def __init__(self, immediate: bool = False):
        self.immediate = immediate
        self.requested: str | None = None
        self._previous: dict = {}

    def _handle(self, signum, frame):
        again = self.requested is not None
        self.requested = signal.Signals(signum).name
        if again or self.immediate:
            raise KeyboardInterrupt

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    @property
    def exit_status(self) -> int:
        """The shell's convention: 128 + signal number."""
        return 128 + int(getattr(signal, self.requested)) if self.requested else 0
