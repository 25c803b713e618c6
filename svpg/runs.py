"""Run folders (``runs/<run-name>/``) and TensorBoard logging, shared by every front end.

A run folder is never overwritten: :func:`create_run_dir` refuses an existing one (resume it instead),
and every file in it is written atomically (:func:`svpg.io.atomic_write`).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

import torch

from svpg.io import atomic_write


def run_name(*parts) -> str:
    """``<part>__<part>__…__<unix time>`` with characters unsafe in paths replaced."""
    name = "__".join(str(p) for p in (*parts, int(time.time())))
    return re.sub(r"[^A-Za-z0-9_.\-]+", "-", name)


def _os_reason(e: OSError) -> str:
    return e.strerror or type(e).__name__


def create_run_dir(log_dir: str | Path, name: str, *, resume_hint: str = "--resume", config: dict | None = None) -> Path:
    """Create ``log_dir/name`` for a new run; a ValueError if it exists or cannot be written.

    The folder appears atomically with its ``config.json`` (it is prepared under a hidden temporary name
    and renamed), so a run folder always holds the config that ``--resume`` needs, whenever the
    process is killed.

    :param resume_hint: how the command line resumes a run (quoted in the error for an existing folder).
    :param config: written to ``config.json`` inside the new folder.
    """
    path = Path(log_dir) / name
    exists = ValueError(f"run folder {path} already exists: continue it with {resume_hint} {path}, "
                        f"or pick another --run-name (nothing was written)")
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise exists
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(f"cannot create run folder {path} ({_os_reason(e)}): pass a writable --log-dir") from None
    check_writable(path.parent)
    staging = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        os.chmod(staging, 0o777 & ~_umask())
        if config is not None:
            write_json(staging / "config.json", config)
        os.rename(staging, path)  # atomic; replaces only an empty folder
    except OSError:
        raise exists from None
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_writable(path: Path) -> None:
    """A ValueError naming the folder if files cannot be created in it (permissions, read-only mounts)."""
    try:
        probe = path / f".write-test-{os.getpid()}.tmp"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise ValueError(f"cannot write to {path} ({_os_reason(e)}): make it writable (a new run can also use another --log-dir)") from None


def remove_stray_temporaries(run_dir: Path) -> list[Path]:
    """Delete ``.*.tmp`` files left by a process killed during an atomic write; returns them."""
    stray = [p for p in Path(run_dir).rglob(".*.tmp") if p.is_file()]
    for p in stray:
        p.unlink(missing_ok=True)
    return stray


def write_json(path: Path, obj) -> None:
    atomic_write(Path(path), lambda tmp: Path(tmp).write_text(json.dumps(obj, indent=2)))


def read_json_object(path: Path, what: str) -> dict:
    """A JSON object from ``path``, or a one-line ValueError naming the file."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ValueError(f"{what} {path} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{what} {path} is not readable JSON ({e})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{what} {path} must hold a JSON object of option names and values, got a {type(data).__name__}")
    return data


def refuse_on_resume(run_dir: Path, typed: set[str], allowed: tuple[str, ...], config_file: str = "config.json") -> None:
    """A one-line ValueError naming every option the user typed with ``--resume`` that it cannot change."""
    refused = [f"--{k.replace('_', '-')}" for k in sorted(typed - set(allowed))]
    if refused:
        raise ValueError(f"{', '.join(refused)} cannot be given with --resume: {run_dir} continues with the options in its "
                         f"{config_file} (only {', '.join('--' + k.replace('_', '-') for k in allowed)} may change); "
                         f"start a new run to change them")
    if not Path(run_dir).is_dir():
        raise ValueError(f"--resume {run_dir}: no such run folder")


def read_run_record(run_dir: Path, cls, built: tuple[str, ...], command: str, config_file: str = "config.json"):
    """A run folder's config.json as (the options as ``cls``, what they built: the ``built`` entries),
    with one-line errors naming the file for anything unreadable, missing or wrongly typed."""
    from svpg.cli import dataclass_from_dict

    path = Path(run_dir) / config_file
    record = read_json_object(path, f"{command} run config")
    missing = [k for k in built if k not in record]
    if missing:
        raise ValueError(f"{path} has no {missing[0]!r} entry: it was not written by {command}")
    recorded = {k: record.pop(k) for k in built}
    return dataclass_from_dict(cls, record, str(path)), recorded


def resumed_config(run_dir: Path, cls, typed: set[str], values: dict, allowed: tuple[str, ...], built: tuple[str, ...],
                   command: str, config_file: str = "config.json"):
    """``--resume``'s run: refuse options it cannot change, read its config.json, apply the typed ones.
    Returns (the config with the typed ``values`` applied, what the recorded options built)."""
    import dataclasses

    refuse_on_resume(run_dir, typed, allowed, config_file)
    config, recorded = read_run_record(run_dir, cls, built, command, config_file)
    return dataclasses.replace(config, **{k: values[k] for k in typed}), recorded


LOCK_FILE = ".lock"


class RunFolderInUse(ValueError):
    """Another process is writing the run folder."""


class RunLock:
    """One writer per run folder: an advisory lock (``flock``) on ``<run>/.lock`` that names its holder.

    The kernel releases it whenever the holding process ends, however it ends, so a lock file left by
    a killed process is stale by construction and the next writer simply takes it over. Every front end
    takes it before it trains, resumes or grids into a folder.

    >>> lock = RunLock(run_dir).acquire()    # RunFolderInUse if another process holds it
    >>> lock.release()
    """

    def __init__(self, run_dir: str | Path):
        self.path = Path(run_dir) / LOCK_FILE
        self.file = None
        self.previous: dict | None = None  # the holder recorded by a process that has ended

    @property
    def held(self) -> bool:
        return self.file is not None

    def acquire(self) -> "RunLock":
        import fcntl
        import socket
        import sys

        if self.file is not None:
            return self
        try:
            f = open(self.path, "a+")
        except OSError as e:
            raise ValueError(f"cannot lock {self.path.parent} ({_os_reason(e)}): make it writable") from None
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.seek(0)
            holder = _parse_holder(f.read())
            f.close()
            who = (f"process {holder.get('pid', '?')} on {holder.get('host', '?')} ({holder.get('command', '?')})"
                   if holder else "another process")
            raise RunFolderInUse(f"run folder {self.path.parent} is in use by {who}: wait for it to finish or stop it "
                                 f"(one writer per run folder)") from None
        f.seek(0)
        self.previous = _parse_holder(f.read()) or None
        holder = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "command": " ".join(sys.argv)[:200],
                             "since": int(time.time())}).encode()
        os.ftruncate(f.fileno(), 0)
        os.pwrite(f.fileno(), holder, 0)  # at offset 0 whatever the file position (append mode)
        self.file = f
        return self

    def release(self) -> None:
        if self.file is not None:
            import fcntl

            try:
                os.ftruncate(self.file.fileno(), 0)
                fcntl.flock(self.file.fileno(), fcntl.LOCK_UN)
            finally:
                self.file.close()
                self.file = None

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _parse_holder(text: str) -> dict:
    try:
        holder = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return holder if isinstance(holder, dict) else {}


class TensorBoardLogger:
    """Scalars to TensorBoard with one host sync per call (values may be 0-d tensors).

    :param purge_step: on resume, the first step not yet covered by the checkpoint: events from an
        interrupted run at or after it are dropped, so curves have no duplicated steps.
    """

    def __init__(self, run_dir: Path, layout: dict | None = None, purge_step: int | None = None):
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(run_dir), purge_step=purge_step)
        if layout:
            self.writer.add_custom_scalars(layout)

    def log(self, scalars: dict[str, torch.Tensor | float], step: int) -> dict[str, float]:
        keys = list(scalars)
        tensors = [torch.as_tensor(scalars[k], dtype=torch.float64).detach().cpu().reshape(()) for k in keys]
        values = dict(zip(keys, torch.stack(tensors).tolist()))
        self.write(values, step)
        return values

    def write(self, values: dict[str, float], step: int) -> None:
        """Scalars already on the host."""
        for k, v in values.items():
            self.writer.add_scalar(k, v, step)

    def text(self, tag: str, text: str) -> None:
        self.writer.add_text(tag, text)

    def close(self) -> None:
        self.writer.flush()
        self.writer.close()
