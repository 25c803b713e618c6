"""Run folders (``runs/<run-name>/``) and TensorBoard logging, shared by every front end."""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

import torch


def run_name(*parts) -> str:
    """``<part>__<part>__…__<unix time>`` with characters unsafe in paths replaced."""
    name = "__".join(str(p) for p in (*parts, int(time.time())))
    return re.sub(r"[^A-Za-z0-9_.\-]+", "-", name)


def make_run_dir(log_dir: str | Path, name: str) -> Path:
    path = Path(log_dir) / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_json(path: Path, obj) -> None:
    from svpg.io import _atomic_write

    _atomic_write(Path(path), lambda tmp: Path(tmp).write_text(json.dumps(obj, indent=2)))


class TensorBoardLogger:
    """Scalars to TensorBoard with one host sync per call (values may be 0-d tensors)."""

    def __init__(self, run_dir: Path, layout: dict | None = None):
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(run_dir))
        if layout:
            self.writer.add_custom_scalars(layout)

    def log(self, scalars: dict[str, torch.Tensor | float], step: int) -> dict[str, float]:
        keys = list(scalars)
        tensors = [torch.as_tensor(scalars[k], dtype=torch.float64).detach().cpu().reshape(()) for k in keys]
        values = dict(zip(keys, torch.stack(tensors).tolist()))
        for k, v in values.items():
            self.writer.add_scalar(k, v, step)
        return values

    def text(self, tag: str, text: str) -> None:
        self.writer.add_text(tag, text)

    def close(self) -> None:
        self.writer.flush()
        self.writer.close()
