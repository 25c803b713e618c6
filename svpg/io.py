"""Checkpoint files: safetensors tensors + JSON metadata, written atomically, loaded safely.

Nothing here unpickles arbitrary objects: tensors come from safetensors and auxiliary state (the
optimizer, RNG states) from ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

FORMAT = "svpg-checkpoint-v1"
MODEL_FILE = "model.safetensors"


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: corrupt, truncated, foreign or of the wrong shape."""


class WriteError(ValueError):
    """A file could not be written (full disk, permissions); its previous version is intact."""


_UMASK = os.umask(0)
os.umask(_UMASK)


def atomic_write(path: str | Path, write) -> None:
    """Write ``path`` through ``write(tmp_path)`` so that readers (and a crash at any moment) see the
    old file or the new one, never part of one. A failed write leaves the old file and no temporary.

    :raises WriteError: naming the file and the reason (e.g. no space left on the device).
    """
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp's 0600 would hide run files from the rest of a group
        write(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)  # make the rename itself durable
    except OSError as e:
        raise WriteError(f"could not write {path} ({e.strerror or e}); the previous version is unchanged") from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.remove(tmp)


def write_csv(path: str | Path, rows: list[dict]) -> None:
    """``rows`` (dicts with the first row's keys as the header) as a CSV file, written atomically; nothing for
    no rows."""
    if not rows:
        return
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    atomic_write(path, lambda tmp: Path(tmp).write_text(buf.getvalue()))


def append_csv(path: str | Path, rows: list[dict]) -> None:
    """Append ``rows`` to the CSV file ``path``, its header (the first row's keys) first when the file is
    new or empty: the rows of a resumable log or table, each kept as soon as it is written."""
    path = Path(path)
    new = not path.exists() or path.stat().st_size == 0
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        if new:
            writer.writeheader()
        writer.writerows(rows)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # not supported on every platform
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def save_tensors(path: str | Path, tensors: dict[str, torch.Tensor], kind: str, metadata: dict) -> Path:
    """Write tensors and JSON-serialisable metadata to a .safetensors file atomically."""
    path = Path(path)
    tensors = {k: v.detach().contiguous().cpu() for k, v in tensors.items()}
    header = {"format": FORMAT, "kind": kind, "metadata": json.dumps(metadata)}
    try:
        atomic_write(path, lambda tmp: save_file(tensors, tmp, metadata=header))
    except SafetensorError as e:  # safetensors reports I/O errors (a full disk) as its own type, not OSError
        raise WriteError(f"could not write {path} ({e}); the previous version is unchanged") from None
    return path


def resolve_checkpoint(path: str | Path) -> Path:
    """A run folder means its ``model.safetensors``; a file means itself."""
    path = Path(path)
    if path.is_dir():
        path = path / MODEL_FILE
    if not path.exists() and not path.suffix and path.with_suffix(".safetensors").exists():
        path = path.with_suffix(".safetensors")  # model.save("name") wrote name.safetensors
    if not path.exists():
        raise FileNotFoundError(
            f"no checkpoint at {path}: pass a run folder (runs/<run-name>) or a .safetensors file written by svpg"
        )
    return path


def load_tensors(path: str | Path, expected_kind: str | None = None) -> tuple[dict[str, torch.Tensor], dict, str]:
    """Read a checkpoint: (tensors, metadata, kind), with a clear error for a bad file."""
    path = resolve_checkpoint(path)
    try:
        tensors = load_file(str(path))
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as f:
            header = f.metadata() or {}
    except (SafetensorError, OSError, ValueError) as e:
        earlier = sorted((path.parent / "checkpoints").glob("iter_*.safetensors"))  # an RL run's checkpoints
        fix = (
            f"load a checkpoint instead, e.g. {earlier[-1]} (resuming the run also rewrites {path.name} from it)"
            if earlier
            else "pass a .safetensors file written by svpg (a run's model.safetensors or model.save(...))"
        )
        raise CheckpointError(f"{path} is corrupt or truncated ({e}); {fix}") from None
    if header.get("format") != FORMAT:
        raise CheckpointError(
            f"{path} is not an svpg checkpoint (format {header.get('format')!r}, expected {FORMAT!r})"
        )
    kind = header.get("kind", "")
    if expected_kind is not None and kind != expected_kind:
        raise CheckpointError(f"{path} holds a {kind!r} checkpoint, not a {expected_kind!r} one")
    try:
        metadata = json.loads(header["metadata"])
    except (KeyError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path} has unreadable metadata ({e})") from None
    return tensors, metadata, kind


def save_state(path: str | Path, state: dict) -> None:
    """Auxiliary training state (optimizer, RNG) with torch.save, atomically."""
    atomic_write(Path(path), lambda tmp: torch.save(state, tmp))


def load_state(path: str | Path) -> dict:
    """Auxiliary state written by :func:`save_state`; tensors and plain containers only."""
    import pickle

    if not Path(path).exists():
        raise CheckpointError(f"{path} does not exist")
    try:
        return torch.load(path, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError:
        # weights_only refused an object: never loaded, whatever torch's own message suggests
        raise CheckpointError(
            f"{path} holds Python objects that svpg does not load (it was not written by svpg); it was not loaded"
        ) from None
    except Exception as e:  # torch raises several types for damaged zip files
        raise CheckpointError(f"{path} is corrupt or truncated ({type(e).__name__})") from None


def flatten_state(state, prefix: str) -> tuple[dict[str, torch.Tensor], object]:
    """A nested state (dicts, lists, tensors, numbers, strings) as safetensors tensors plus a JSON
    skeleton that names them, so optimizer and critic state is saved without pickle.

    Dict keys keep their type (an optimizer's state is keyed by int); see :func:`unflatten_state`.
    """
    tensors: dict[str, torch.Tensor] = {}

    def walk(obj, path: str):
        if isinstance(obj, torch.Tensor):
            tensors[path] = obj.detach()
            return {"__tensor__": path}
        if isinstance(obj, dict):
            return {"__dict__": [[k, walk(v, f"{path}.{k}")] for k, v in obj.items()]}
        if isinstance(obj, (list, tuple)):
            return {"__list__": [walk(v, f"{path}.{i}") for i, v in enumerate(obj)], "tuple": isinstance(obj, tuple)}
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return obj
        raise TypeError(f"cannot save a {type(obj).__name__} in a checkpoint ({path})")

    return tensors, walk(state, prefix)


def unflatten_state(skeleton, tensors: dict[str, torch.Tensor]):
    """The inverse of :func:`flatten_state`; a CheckpointError if a named tensor is missing."""
    if isinstance(skeleton, dict):
        if "__tensor__" in skeleton:
            try:
                return tensors[skeleton["__tensor__"]]
            except KeyError:
                raise CheckpointError(f"the checkpoint lacks the tensor {skeleton['__tensor__']!r}") from None
        if "__dict__" in skeleton:
            return {k: unflatten_state(v, tensors) for k, v in skeleton["__dict__"]}
        if "__list__" in skeleton:
            items = [unflatten_state(v, tensors) for v in skeleton["__list__"]]
            return tuple(items) if skeleton.get("tuple") else items
    return skeleton
