"""RL checkpoints: one file per saved iteration, and the choice of where to resume.

A checkpoint of iteration n is ``<run>/checkpoints/iter_<n>.safetensors``, a :meth:`svpg.SVPG.save`
file (θ, the SVGD optimizer, the critics, the last returns, the config and the iteration) stamped with
``{iteration, progress_rows, theta_sha256}``. It is written atomically after ``progress.csv`` is
durable up to row n, and a run folder's ``model.safetensors`` is then a copy of it. A process killed at
any moment therefore leaves complete checkpoints only (and perhaps a ``.*.tmp`` file, removed on
resume), and ``progress.csv`` is never behind one.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch

from svpg.io import CheckpointError, load_tensors, save_tensors
from svpg.rl.policies import POLICY_KIND

CHECKPOINT_DIR = "checkpoints"
MODEL_SUFFIX = ".safetensors"
_NAME = re.compile(r"^iter_(\d+)\.safetensors$")


def checkpoint_name(iteration: int) -> str:
    return f"iter_{iteration:06d}"


def theta_digest(theta: torch.Tensor) -> str:
    """SHA-256 of θ's bytes: ties a stamp to the exact particles it was saved with."""
    return hashlib.sha256(theta.detach().cpu().contiguous().numpy().tobytes()).hexdigest()


def save_checkpoint(run_dir: Path, model, seed_index: int, progress_rows: int) -> Path:
    """Write seed ``seed_index``'s state of ``model`` as the checkpoint of its iteration, then refresh
    ``model.safetensors``."""
    tensors, metadata = model.seed_state(seed_index)
    metadata["stamp"] = {
        "iteration": int(model.iteration),
        "progress_rows": int(progress_rows),
        "theta_sha256": theta_digest(tensors["theta"]),
    }
    path = Path(run_dir) / CHECKPOINT_DIR / (checkpoint_name(model.iteration) + MODEL_SUFFIX)
    save_tensors(path, tensors, POLICY_KIND, metadata)
    save_tensors(Path(run_dir) / "model.safetensors", tensors, POLICY_KIND, metadata)
    return path


@dataclass
class Checkpoint:
    """A verified checkpoint file and its stamp."""

    path: Path
    stamp: dict

    @property
    def iteration(self) -> int:
        return self.stamp["iteration"]


def listed(run_dir: Path) -> list[tuple[int, Path]]:
    """(iteration, path) of every checkpoint file, newest first."""
    folder = Path(run_dir) / CHECKPOINT_DIR
    found = [(int(m.group(1)), p) for p in folder.glob("iter_*" + MODEL_SUFFIX) if (m := _NAME.match(p.name))]
    return sorted(found, reverse=True)


def load_checkpoint(path: Path, progress_rows: int, device="cpu") -> Checkpoint:
    """Read and verify one checkpoint; a CheckpointError says what disagrees."""
    path = Path(path)
    tensors, meta, _ = load_tensors(path, expected_kind=POLICY_KIND)
    stamp = meta.get("stamp")
    if not isinstance(stamp, dict) or "optimizer" not in meta:
        raise CheckpointError(f"{path.name} is not a complete checkpoint (no stamp or training state)")
    if "theta" not in tensors or theta_digest(tensors["theta"]) != stamp.get("theta_sha256"):
        raise CheckpointError(f"θ in {path.name} does not match its stamp")
    if progress_rows < stamp["progress_rows"]:
        raise CheckpointError(
            f"progress.csv has {progress_rows} rows but {path.name} was saved after {stamp['progress_rows']}"
        )
    return Checkpoint(path, stamp)


def refresh_model(run_dir: Path, point: Checkpoint) -> bool:
    """Make ``model.safetensors`` the resume point's model if it is not already (a process killed
    between a checkpoint and the copy leaves it one checkpoint behind); True if it was rewritten."""
    path = Path(run_dir) / "model.safetensors"
    try:
        if load_tensors(path)[1].get("stamp") == point.stamp:
            return False
    except (CheckpointError, FileNotFoundError):
        pass
    tensors, meta, _ = load_tensors(point.path)
    save_tensors(path, tensors, POLICY_KIND, meta)
    return True


def prune(run_dir: Path, keep: int) -> list[Path]:
    """Delete all but the newest ``keep`` checkpoints (a CheckpointCallback with ``keep_last``)."""
    old = [p for _, p in listed(run_dir)[keep:]]
    for p in old:
        p.unlink(missing_ok=True)
    return old


def parse_checkpoint(text: str) -> int:
    """The iteration named by ``iter_000040``, ``iter_40``, ``40``, a file name or a path."""
    name = Path(str(text)).name
    m = re.fullmatch(r"(?:iter_)?0*(\d+)(?:\.safetensors)?", name)
    if not m:
        raise ValueError(f"--from {text!r} does not name a checkpoint: use e.g. iter_000040 or 40")
    return int(m.group(1))


def find_resume_point(run_dir: Path, progress_rows: int, iteration: int | None = None, device="cpu"):
    """The checkpoint to resume from and the notes to print about skipped ones.

    :param iteration: a chosen checkpoint (``--from``); default: the newest consistent one.
    :raises CheckpointError: when the chosen one, or every one, is inconsistent or missing.
    """
    run_dir = Path(run_dir)
    available = listed(run_dir)
    if not available:
        raise CheckpointError(f"{run_dir} has no complete checkpoint to resume from; start a new run instead")
    if iteration is not None:
        chosen = [p for it, p in available if it == iteration]
        if not chosen:
            names = ", ".join(checkpoint_name(it) for it, _ in sorted(available)[-5:])
            raise CheckpointError(f"{run_dir} has no checkpoint {checkpoint_name(iteration)}; the latest are: {names}")
        try:
            return load_checkpoint(chosen[0], progress_rows, device), []
        except CheckpointError as e:
            raise CheckpointError(f"cannot resume from {chosen[0]}: {e}; choose another with --from") from None
    notes: list[str] = []
    for _, path in available:
        try:
            return load_checkpoint(path, progress_rows, device), notes
        except CheckpointError as e:
            notes.append(f"skipped {path.name}: {e}")
    raise CheckpointError(
        f"no consistent checkpoint in {run_dir / CHECKPOINT_DIR} ({'; '.join(notes)}); start a new run"
    )


def files_after(run_dir: Path, iteration: int) -> list[Path]:
    """Checkpoint files of iterations after ``iteration`` (also other files named ``iter_<n>.*``)."""
    found = []
    for p in (Path(run_dir) / CHECKPOINT_DIR).glob("iter_*"):
        m = re.match(r"^iter_(\d+)\.", p.name)
        if m and int(m.group(1)) > iteration and p.is_file():
            found.append(p)
    return sorted(found)


def set_aside(run_dir: Path, iteration: int, later: list[Path]) -> Path:
    """Move ``later`` to ``checkpoints/discarded_after_<n>[_k]/`` (resuming from an earlier checkpoint
    never deletes a later one); returns that folder."""
    folder = Path(run_dir) / CHECKPOINT_DIR
    target = folder / f"discarded_after_{checkpoint_name(iteration)}"
    k = 1
    while target.exists():
        k += 1
        target = folder / f"discarded_after_{checkpoint_name(iteration)}_{k}"
    target.mkdir()
    for p in later:
        shutil.move(str(p), target / p.name)
    return target
