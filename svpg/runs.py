"""Run folders (``runs/<run-name>/``) and TensorBoard logging, shared by every front end.

A run folder is never overwritten: :func:`create_run_dir` refuses an existing one (resume it instead),
and every file in it is written atomically (:func:`svpg.io.atomic_write`). Whoever writes into it takes its
lock (:class:`RunLock`), and every process that trains in it records the code and machine it trains with
(:func:`record_provenance`).
"""

from __future__ import annotations

import functools
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
import typing
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch

from svpg.io import atomic_write


def run_name(*parts) -> str:
    """``<part>__<part>__…__<unix time>`` with characters unsafe in paths replaced."""
    name = "__".join(str(p) for p in (*parts, int(time.time())))
    return re.sub(r"[^A-Za-z0-9_.\-]+", "-", name)


def _os_reason(e: OSError) -> str:
    return e.strerror or type(e).__name__


def create_run_dir(
    log_dir: str | Path, name: str, *, resume_hint: str = "--resume", config: dict | None = None
) -> Path:
    """Create ``log_dir/name`` for a new run; a ValueError if it exists or cannot be written.

    The folder appears atomically with its ``config.json`` (it is prepared under a hidden temporary name
    and renamed), so a run folder always holds the config that ``--resume`` needs, whenever the
    process is killed.

    :param resume_hint: how the command line resumes a run (quoted in the error for an existing folder).
    :param config: written to ``config.json`` inside the new folder.
    """
    path = Path(log_dir) / name
    exists = ValueError(
        f"run folder {path} already exists: continue it with {resume_hint} {path}, "
        f"or pick another --run-name (nothing was written)"
    )
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
        raise ValueError(
            f"cannot write to {path} ({_os_reason(e)}): make it writable (a new run can also use another --log-dir)"
        ) from None


def remove_stray_temporaries(run_dir: Path) -> list[Path]:
    """Delete ``.*.tmp`` files left by a process killed during an atomic write; returns them."""
    stray = [p for p in Path(run_dir).rglob(".*.tmp") if p.is_file()]
    for p in stray:
        p.unlink(missing_ok=True)
    return stray


def unit_files(run_dir: Path, folder: str, pattern: re.Pattern) -> list[tuple[Path, re.Match]]:
    """The result files of finished units of work in ``run_dir/folder`` (each written atomically once its
    unit finished) whose names match ``pattern``, by name; none if the folder does not exist yet."""
    path = Path(run_dir) / folder
    if not path.is_dir():
        return []
    return [(p, m) for p in sorted(path.iterdir()) if (m := pattern.fullmatch(p.name))]


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
        raise ValueError(
            f"{what} {path} must hold a JSON object of option names and values, got a {type(data).__name__}"
        )
    return data


#: what wrote a run folder: one JSON line per change of the code or machine that trained in it
PROVENANCE_FILE = "provenance.jsonl"
#: the checkout svpg runs from (its commit is the code of a run, unless svpg is an installed package)
SOURCE_ROOT = Path(__file__).resolve().parents[1]
#: the files whose changes change results (a checkout differing from its commit in these is "-dirty")
SOURCE_PATHS = ("svpg", "envs", "train.py", "evaluate.py")


@functools.cache
def source_commit(root: Path = SOURCE_ROOT) -> str:
    """The short commit of the git checkout svpg runs from, ``-dirty`` when its code differs from that commit;
    ``""`` when svpg does not run from a checkout of its own (an installed package, no git)."""

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    top = git("rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != Path(root).resolve():  # not an enclosing repository's HEAD
        return ""
    commit = git("rev-parse", "--short", "HEAD") or ""
    changed = git("status", "--porcelain", "--untracked-files=no", "--", *SOURCE_PATHS)
    return f"{commit}-dirty" if commit and changed else commit


@functools.cache
def describe_machine() -> str:
    """``<architecture>, <n> CPUs (<CPU model>)[, <n> GPU(s) (<GPU models>)], <OS>``: the machine a run trained
    on, as its rows record it (the GPUs as ``nvidia-smi`` names them, where it is installed)."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = f" ({line.partition(':')[2].strip()})"
                break
    except OSError:
        model = f" ({platform.processor()})" if platform.processor() else ""
    gpus = describe_gpus(_nvidia_smi_names())
    return f"{platform.machine() or 'unknown'}, {os.cpu_count()} CPUs{model}{', ' + gpus if gpus else ''}, {platform.system()}"


def _nvidia_smi_names() -> str:
    """``nvidia-smi``'s GPU names, one per line ("" without it): read without initialising CUDA here."""
    if shutil.which("nvidia-smi") is None:
        return ""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=10)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout if out.returncode == 0 else ""


def describe_gpus(names: str) -> str:
    """``"2 GPUs (NVIDIA H200)"`` from ``nvidia-smi``'s names, one per line; ``""`` for none."""
    found = [n.strip() for n in names.splitlines() if n.strip()]
    if not found:
        return ""
    models = ", ".join(dict.fromkeys(found))
    return f"{len(found)} GPU{'s' if len(found) > 1 else ''} ({models})"


def provenance() -> dict:
    """What trains now: the code (:func:`source_commit`, else the installed svpg's version), its torch and
    Python, and the machine."""
    return {
        "commit": source_commit() or _installed_version(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": describe_machine(),
    }


def _installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"svpg {version('svpg')}"
    except PackageNotFoundError:
        return "svpg, not installed"


def record_provenance(run_dir: str | Path) -> None:
    """Add :func:`provenance` to the run folder's :data:`PROVENANCE_FILE` unless its last line says the same,
    so a run resumed at another commit or on another machine names both (``python -m svpg.report gather``
    reads them into its rows)."""
    path = Path(run_dir) / PROVENANCE_FILE
    records = read_provenance(run_dir)
    now = provenance()
    if records and records[-1] == now:
        return
    text = "".join(json.dumps(r) + "\n" for r in [*records, now])
    atomic_write(path, lambda tmp: Path(tmp).write_text(text))


def read_provenance(run_dir: str | Path) -> list[dict]:
    """The records of :func:`record_provenance` in ``run_dir``, oldest first (none for a folder written before)."""
    try:
        lines = (Path(run_dir) / PROVENANCE_FILE).read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    records = []
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # an edited line: the others still say what they say
        if isinstance(record, dict):
            records.append(record)
    return records


CONFIG_FILE = "config.json"
RAY_DIR = ".ray"  # Ray Tune's experiment state (for a restarted driver), inside the run folder
#: how an invocation runs the units of work, not what they are: never part of config.json, always allowed on resume
DRIVER_OPTIONS = ("resume", "backend", "jobs", "gpus_per_job")


def refuse_options(
    run_dir: Path,
    typed: set[str],
    allowed: tuple[str, ...],
    config_file: str = CONFIG_FILE,
    option_names: dict[str, str] | None = None,
) -> None:
    """A one-line ValueError naming every option given on resume that it cannot change (every front end's
    one check of what may change on resume).

    :param option_names: field → its command-line name where that is not ``--field-name``."""

    def name(k: str) -> str:
        return (option_names or {}).get(k, "--" + k.replace("_", "-"))

    refused = [name(k) for k in sorted(set(typed) - set(allowed))]
    if refused:
        may = ", ".join(name(k) for k in allowed)
        raise ValueError(
            f"{', '.join(refused)} cannot be given with --resume: options cannot change when resuming {run_dir}, "
            f"which continues with those in its {config_file} (it would be a different run; only {may} may change); "
            f"start a new run to change them"
        )


def read_run_record(
    run_dir: Path, cls, built: tuple[str, ...], command: str, config_file: str = CONFIG_FILE, legacy: dict | None = None
):
    """A run folder's config.json as (the options as ``cls``, what they built: the ``built`` entries),
    with one-line errors naming the file for anything unreadable, missing or wrongly typed. ``legacy``:
    the values of options that a config.json written before they existed ran with (else their defaults)."""
    from svpg.cli import dataclass_from_dict

    path = Path(run_dir) / config_file
    record = {**(legacy or {}), **read_json_object(path, f"{command} run config")}
    missing = [k for k in built if k not in record]
    if missing:
        raise ValueError(f"{path} has no {missing[0]!r} entry: it was not written by {command}")
    recorded = {k: record.pop(k) for k in built}
    return dataclass_from_dict(cls, record, str(path)), recorded


def resumed_config(
    run_dir: Path,
    cls,
    typed: set[str],
    values: dict,
    allowed: tuple[str, ...],
    built: tuple[str, ...],
    command: str,
    config_file: str = CONFIG_FILE,
    option_names: dict[str, str] | None = None,
    legacy: dict | None = None,
):
    """``--resume``'s run: refuse options it cannot change, read its config.json, apply the typed ones.
    Returns (the config with the typed ``values`` applied, what the recorded options built)."""
    import dataclasses

    refuse_options(run_dir, typed, allowed, config_file, option_names)
    if not Path(run_dir).is_dir():
        raise ValueError(f"--resume {run_dir}: no such run folder")
    config, recorded = read_run_record(run_dir, cls, built, command, config_file, legacy)
    return dataclasses.replace(config, **{k: values[k] for k in typed}), recorded


@dataclass(frozen=True)
class RunFolders:
    """The run folders of one command (``train.py bandit``, ``train.py supervised``): created or refused,
    resumed with the options that may change, one writer, and units of work run on a :mod:`svpg.grid` backend.

    A run folder holds ``config.json``: the options (``config_cls`` as a dict) and, under the ``built``
    keys, what they built (checked on resume, so a run whose data or code changed is not continued).
    Each unit of work (a seed, a split) writes its own result file atomically; a unit without one is
    run (again) from its start.

    :param resumable: the options ``--resume`` accepts (they leave finished units' results unchanged).
    :param option_names: field → its command-line name where that is not ``--field-name`` (the ``renamed``
        of :func:`svpg.cli.add_dataclass_arguments`).
    :param legacy: options added later whose default differs from what earlier runs did: the value a
        config.json without them ran with.
    """

    command: str
    config_cls: type
    resumable: tuple[str, ...]
    built: tuple[str, ...] = ()
    option_names: dict[str, str] = field(default_factory=dict)
    legacy: dict = field(default_factory=dict)

    @property
    def resume_hint(self) -> str:
        return f"python {self.command} --resume"

    def create(self, log_dir: str | Path, name: str, config, built: dict) -> Path:
        """A new run folder, appearing atomically with its config.json; a ValueError naming --resume if it exists."""
        return create_run_dir(log_dir, name, resume_hint=self.resume_hint, config={**asdict(config), **built})

    def load(self, run_dir: str | Path):
        """(the options in the folder's config.json, what they built when it was written)."""
        return read_run_record(Path(run_dir), self.config_cls, self.built, self.command, CONFIG_FILE, self.legacy)

    def resume(self, run_dir: str | Path, typed: set[str], values: dict):
        """The folder's own config with the options typed on the command line applied (``typed``: their
        names, ``values``: the parsed values), after refusing those that may not change; and what the
        recorded options built. The driver options (``--backend``, ``--jobs``, …) are always allowed."""
        typed = set(typed) - set(DRIVER_OPTIONS)
        return resumed_config(
            Path(run_dir),
            self.config_cls,
            typed,
            values,
            self.resumable,
            self.built,
            self.command,
            CONFIG_FILE,
            self.option_names,
            self.legacy,
        )

    def check_built(self, run_dir: str | Path, recorded: dict, built: dict, what) -> None:
        """A ValueError if the options now build something else than when the run started;
        ``what(changed_keys)`` says what differs."""
        changed = [k for k in self.built if recorded[k] != built[k]]
        if changed:
            raise ValueError(
                f"{Path(run_dir) / CONFIG_FILE}: its {what(changed)} (it was edited, or the data or svpg "
                f"changed since the run started); start a new run"
            )

    def continue_in(self, run_dir: str | Path, config, built: dict) -> None:
        """Ready a resumed folder for writing: writable, no stray temporaries, config.json with the
        options of this invocation (a later --resume continues with them)."""
        run_dir = Path(run_dir)
        check_writable(run_dir)
        remove_stray_temporaries(run_dir)
        write_json(run_dir / CONFIG_FILE, {**asdict(config), **built})

    def job_config(self, run_dir: str | Path, cwd: str | Path, paths: tuple[str, ...]):
        """A unit's (config, recorded) from the folder's config.json, with the relative paths in the
        ``paths`` options taken from the driver's working folder ``cwd`` (a Ray trial runs in a folder of its own)."""
        config, recorded = self.load(run_dir)
        rebased = {
            name: str(Path(cwd) / Path(getattr(config, name)).expanduser()) for name in paths if getattr(config, name)
        }
        return replace(config, **rebased), recorded

    def run_units(
        self,
        fn: str,
        run_dir: Path,
        units: list[dict],
        *,
        backend: str,
        workers: int,
        gpus: float,
        on_done=None,
        left=None,
        what: str = "units",
    ) -> None:
        """Run ``units`` (each a job dict; ``run_dir`` and ``cwd`` are added) as :func:`svpg.grid.run_jobs`
        jobs of ``fn``; then a ValueError if ``left()`` still names units without a result file."""
        from svpg.grid import run_jobs

        if units:
            record_provenance(run_dir)  # the driver's: with --backend ray its units may run on other machines
        jobs = [{"run_dir": str(Path(run_dir).resolve()), **unit, "cwd": str(Path.cwd())} for unit in units]
        run_jobs(
            fn,
            jobs,
            backend=backend,
            workers=workers,
            storage=Path(run_dir) / RAY_DIR,
            gpus_per_job=gpus,
            on_done=on_done,
        )
        missing = left() if left is not None else []
        if missing:
            raise ValueError(
                f"the jobs of {what} {missing} finished but left no result file in {run_dir}: with Ray, the run "
                f"folder must be on a file system every node can reach"
            )


class Writer:
    """One writer per run folder for a command: a resumed folder is locked before anything in it is read
    or written, a new one as soon as it exists (:meth:`hold`). Released on exit."""

    def __init__(self, resume: str | Path | None = None):
        self.lock: RunLock | None = None
        if resume is not None and Path(resume).is_dir():
            self.lock = RunLock(resume).acquire()

    def hold(self, run_dir: Path) -> None:
        if self.lock is None:
            self.lock = RunLock(run_dir).acquire()

    def release(self) -> None:
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


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
        self.file: typing.IO[str] | None = None
        self.previous: dict | None = None  # the holder recorded by a process that has ended

    @property
    def held(self) -> bool:
        return self.file is not None

    def acquire(self) -> RunLock:
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
            who = (
                f"process {holder.get('pid', '?')} on {holder.get('host', '?')} ({holder.get('command', '?')})"
                if holder
                else "another process"
            )
            raise RunFolderInUse(
                f"run folder {self.path.parent} is in use by {who}: wait for it to finish or stop it "
                f"(one writer per run folder)"
            ) from None
        f.seek(0)
        self.previous = _parse_holder(f.read()) or None
        record = json.dumps(
            {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "command": " ".join(sys.argv)[:200],
                "since": int(time.time()),
            }
        ).encode()
        os.ftruncate(f.fileno(), 0)
        os.pwrite(f.fileno(), record, 0)  # at offset 0 whatever the file position (append mode)
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

    def __enter__(self) -> RunLock:
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
