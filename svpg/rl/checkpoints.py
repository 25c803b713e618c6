"""RL checkpoints: one consistent unit per saved iteration, and the choice of where to resume.

A checkpoint of iteration n is a pair in ``<run>/checkpoints/``:

* ``iter_<n>.safetensors``: the particles θ with the policy spec and config (what ``svpg.load`` reads),
* ``iter_<n>.state.pt``: the optimizer, the critics and the last returns,

both stamped with the same ``{iteration, progress_rows, theta_sha256}``. The pair is written state first,
model second, each atomically, after ``progress.csv`` is durable up to row n; a run folder's
``model.safetensors`` is a copy of the newest pair's model. A process killed at any moment therefore
leaves either a complete pair or a state file without its model (an incomplete checkpoint, skipped on
resume), and ``progress.csv`` is never behind a complete pair.
"""
from __future__ import annotations

import hashlib
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch

from svpg.io import CheckpointError, load_state, save_state
from svpg.rl.policies import ParticlePolicy, load_policy, save_policy

CHECKPOINT_DIR = "checkpoints"
MODEL_SUFFIX = ".safetensors"
STATE_SUFFIX = ".state.pt"
_NAME = re.compile(r"^iter_(\d+)\.safetensors$")


def checkpoint_name(iteration: int) -> str:
    return f"iter_{iteration:06d}"


def theta_digest(theta: torch.Tensor) -> str:
    """SHA-256 of θ's bytes: ties a state file to the exact particles it was saved with."""
    return hashlib.sha256(theta.detach().cpu().contiguous().numpy().tobytes()).hexdigest()


def stamp(policy: ParticlePolicy, iteration: int, progress_rows: int) -> dict:
    return {"iteration": int(iteration), "progress_rows": int(progress_rows), "theta_sha256": theta_digest(policy.theta)}


def save_checkpoint(run_dir: Path, policy: ParticlePolicy, state: dict, metadata: dict, stamp_: dict) -> Path:
    """Write the pair for ``stamp_['iteration']`` (state, then model), then refresh ``model.safetensors``."""
    folder = Path(run_dir) / CHECKPOINT_DIR
    base = folder / checkpoint_name(stamp_["iteration"])
    save_state(base.with_name(base.name + STATE_SUFFIX), {**state, "stamp": stamp_})
    model = save_policy(policy, base.with_name(base.name + MODEL_SUFFIX), {**metadata, "stamp": stamp_})
    save_policy(policy, Path(run_dir) / "model.safetensors", {**metadata, "stamp": stamp_})
    return model


@dataclass
class Checkpoint:
    """A verified pair: the loaded policy and state, and the stamp they share."""

    path: Path  # the model file
    policy: ParticlePolicy
    state: dict
    stamp: dict

    @property
    def iteration(self) -> int:
        return self.stamp["iteration"]


def listed(run_dir: Path) -> list[tuple[int, Path]]:
    """(iteration, model path) of every checkpoint model file, newest first."""
    folder = Path(run_dir) / CHECKPOINT_DIR
    found = [(int(m.group(1)), p) for p in folder.glob("iter_*" + MODEL_SUFFIX) if (m := _NAME.match(p.name))]
    return sorted(found, reverse=True)


def load_checkpoint(model_path: Path, progress_rows: int, device="cpu") -> Checkpoint:
    """Load and verify one pair; a CheckpointError says what disagrees."""
    model_path = Path(model_path)
    state_path = model_path.with_name(model_path.name[: -len(MODEL_SUFFIX)] + STATE_SUFFIX)
    policy = load_policy(model_path, device=device)
    model_stamp = policy.metadata.get("stamp")
    if not state_path.exists():
        raise CheckpointError(f"{model_path.name} has no {state_path.name}")
    state = load_state(state_path)
    if model_stamp is None or state.get("stamp") != model_stamp:
        raise CheckpointError(f"{model_path.name} and {state_path.name} carry different stamps")
    if theta_digest(policy.theta) != model_stamp["theta_sha256"]:
        raise CheckpointError(f"θ in {model_path.name} does not match its stamp")
    if progress_rows < model_stamp["progress_rows"]:
        raise CheckpointError(
            f"progress.csv has {progress_rows} rows but {model_path.name} was saved after {model_stamp['progress_rows']}"
        )
    return Checkpoint(model_path, policy, state, model_stamp)


def refresh_model(run_dir: Path, point: Checkpoint) -> bool:
    """Make ``model.safetensors`` the resume point's model if it is not already (a process killed
    between a checkpoint and the copy leaves it one checkpoint behind); True if it was rewritten."""
    path = Path(run_dir) / "model.safetensors"
    try:
        if load_policy(path).metadata.get("stamp") == point.stamp:
            return False
    except (CheckpointError, FileNotFoundError):
        pass
    save_policy(point.policy, path, point.policy.metadata)
    return True


def parse_checkpoint(text: str) -> int:
    """The iteration named by ``iter_000040``, ``iter_40``, ``40``, a file name or a path."""
    name = Path(str(text)).name
    m = re.fullmatch(r"(?:iter_)?0*(\d+)(?:\.safetensors|\.state\.pt)?", name)
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
    notes = []
    for _, path in available:
        try:
            return load_checkpoint(path, progress_rows, device), notes
        except CheckpointError as e:
            notes.append(f"skipped {path.name}: {e}")
    raise CheckpointError(f"no consistent checkpoint in {run_dir / CHECKPOINT_DIR} ({'; '.join(notes)}); start a new run")


def files_after(run_dir: Path, iteration: int) -> list[Path]:
    """Checkpoint files (complete or not) of iterations after ``iteration``."""
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
