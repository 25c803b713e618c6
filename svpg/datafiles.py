"""Public data files: where they are looked up, how they are checked, where they are downloaded from.

One home for data-file lookup in the whole package. A :class:`DataFile` names a file by its path
relative to a *data root* (``bandits/shuttle/shuttle.trn``, ``mnist/train-images-idx3-ubyte.gz``, …),
its SHA-256 and the addresses of its canonical copies. :func:`fetch` returns a verified local path:

1. ``data_dir`` (the command lines' ``--data-dir``), if given;
2. the environment variable ``SVPG_DATA_DIR``, if set;
3. the user cache, ``$XDG_CACHE_HOME/svpg`` (default ``~/.cache/svpg``), where downloads go.

The first root holding the file wins; its SHA-256 must match, else a one-line ``ValueError`` says
which file is corrupt and where to get a good copy (a corrupt file is never silently skipped). A
file found nowhere is downloaded into the cache (to a temporary file in the same folder, checked,
then renamed, so an interrupted or corrupt download never leaves a file under the final name).
With ``download=False``, or when every address fails, a one-line ``ValueError`` says what to fetch,
from where, and where to put it.

Hashing a large file takes a second or so; a successful check is remembered as a stamp (path, size,
modification time) in the cache's ``verified/`` folder, so a later :func:`fetch` of the unchanged file
does not read it again. A file that is changed in place gets a new modification time and is checked
again.

>>> f = DataFile("bandits/adult/adult.names", "c248284c…", ("https://…/adult.names",), "UCI Adult, attribute list")
>>> path = fetch(f, data_dir="data")              # doctest: +SKIP  (data/bandits/adult/adult.names)
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ENV_VAR = "SVPG_DATA_DIR"
CHUNK = 1 << 20
TIMEOUT_S = 60


@dataclass(frozen=True)
class DataFile:
    """A public data file.

    :param path: path relative to the data root, ``/``-separated (the layout of the offline copies:
        ``bandits/shuttle/shuttle.trn``, ``uci_splits/…``, ``mnist/…``).
    :param sha256: SHA-256 (hex) of the file as stored under ``path``.
    :param urls: canonical addresses, tried in order when the file must be downloaded.
    :param what: a few words naming the file for messages (``"UCI Statlog (shuttle), training part"``).
    :param content_sha256: for a gzipped file, the SHA-256 of its decompressed bytes; if given, a file
        whose own hash differs but whose content matches is accepted too (another gzip of the same
        data, e.g. the canonical site's own compression).
    """

    path: str
    sha256: str
    urls: tuple[str, ...]
    what: str
    content_sha256: str = field(default="")

    def __post_init__(self):
        if not self.path or Path(self.path).is_absolute() or ".." in Path(self.path).parts:
            raise ValueError(f"DataFile path must be relative to the data root without '..', got {self.path!r}")
        for name in ("sha256", "content_sha256"):
            value = getattr(self, name)
            if (value or name == "sha256") and (len(value) != 64 or any(c not in "0123456789abcdef" for c in value)):
                raise ValueError(f"DataFile {self.path}: {name} must be 64 lower-case hex digits, got {value!r}")
        if isinstance(self.urls, str):
            raise ValueError(f"DataFile {self.path}: urls must be a tuple of addresses, got the string {self.urls!r}")


def cache_dir() -> Path:
    """The user cache root: ``$XDG_CACHE_HOME/svpg``, else ``~/.cache/svpg``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "svpg"


def data_roots(data_dir: str | Path | None = None) -> list[Path]:
    """The roots searched, in order: ``data_dir``, ``$SVPG_DATA_DIR``, :func:`cache_dir`."""
    roots = []
    if data_dir:
        roots.append(Path(data_dir).expanduser())
    env = os.environ.get(ENV_VAR)
    if env:
        roots.append(Path(env).expanduser())
    roots.append(cache_dir())
    return roots


def sha256_of(path: str | Path, decompress: bool = False) -> str:
    """SHA-256 (hex) of a file's bytes, or of its gunzipped bytes with ``decompress``."""
    h = hashlib.sha256()
    opener = gzip.open if decompress else open
    with opener(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


# ----------------------------------------------------------------------------- verification stamps
def _stamp_path(path: Path) -> Path:
    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:32]
    return cache_dir() / "verified" / f"{key}.json"


def _stamp(path: Path, sha: str) -> dict:
    st = path.stat()
    return {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha}


def _stamped(path: Path, sha: str) -> bool:
    try:
        return json.loads(_stamp_path(path).read_text()) == _stamp(path, sha)
    except (OSError, ValueError):
        return False


def _write_stamp(path: Path, sha: str) -> None:
    """Best effort: a cache that cannot be written only costs a re-check next time."""
    try:
        stamp = _stamp_path(path)
        stamp.parent.mkdir(parents=True, exist_ok=True)
        tmp = stamp.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(_stamp(path, sha)))
        os.replace(tmp, stamp)
    except OSError:
        pass


def matches(file: DataFile, path: str | Path, remember: bool = True) -> bool:
    """Whether the file at ``path`` has ``file``'s SHA-256 (or its gunzipped content's ``content_sha256``);
    with ``remember``, a match is stamped so that the unchanged file is not hashed again."""
    path = Path(path)
    if remember and _stamped(path, file.sha256):
        return True
    ok = sha256_of(path) == file.sha256
    if not ok and file.content_sha256:
        try:
            ok = sha256_of(path, decompress=True) == file.content_sha256
        except (OSError, EOFError, gzip.BadGzipFile):
            ok = False
    if ok and remember:
        _write_stamp(path, file.sha256)
    return ok


# ----------------------------------------------------------------------------- fetch
def _sources(file: DataFile) -> str:
    return " or ".join(file.urls) if file.urls else "its publisher"


def _download(file: DataFile, target: Path, progress: bool) -> str | None:
    """Download ``file`` to ``target`` (atomically, verified); None on success, else why it failed."""
    from tqdm.auto import tqdm

    target.parent.mkdir(parents=True, exist_ok=True)
    errors = []
    for url in file.urls:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
                total = int(response.headers.get("Content-Length") or 0) or None
                with tqdm(
                    total=total,
                    unit="B",
                    unit_scale=True,
                    unit_divisor=1024,
                    desc=target.name,
                    disable=not progress,
                    leave=False,
                ) as bar:
                    while chunk := response.read(CHUNK):
                        out.write(chunk)
                        bar.update(len(chunk))
            if not matches(file, tmp, remember=False):
                errors.append(f"{url} sent a file whose SHA-256 is not {file.sha256}")
                continue
            os.replace(tmp, target)
            _write_stamp(target, file.sha256)
            return None
        except (OSError, urllib.error.URLError, ValueError) as e:
            errors.append(f"{url}: {getattr(e, 'reason', None) or e}")
        finally:
            tmp.unlink(missing_ok=True)
    return "; ".join(errors) or "no address to download from"


def fetch(file: DataFile, *, data_dir: str | Path | None = None, download: bool = True, progress: bool = True) -> Path:
    """A verified local copy of ``file``: the first of ``data_dir``, ``$SVPG_DATA_DIR`` and the user
    cache that holds it, else a fresh download into the cache (see the module docstring).

    :raises ValueError: one line, when the file found is corrupt, or is found nowhere and cannot be
        downloaded (``download=False`` or every address failed); it says what to fetch, from where and
        where to put it.
    """
    roots = data_roots(data_dir)
    for root in roots:
        path = root / file.path
        if path.is_file():
            if matches(file, path):
                return path
            raise ValueError(
                f"{path} ({file.what}) is corrupt: its SHA-256 is not {file.sha256}; delete it and fetch {file.path} "
                f"again from {_sources(file)}"
            )
    cache = roots[-1] / file.path
    searched = ", ".join(str(r) for r in roots)
    where = f"put it at <data dir>/{file.path} (--data-dir or ${ENV_VAR}) or at {cache}"
    if not download:
        raise ValueError(
            f"{file.what} is missing: no {file.path} under {searched}; download {_sources(file)} and {where}"
        )
    why = _download(file, cache, progress)
    if why is None:
        return cache
    raise ValueError(
        f"{file.what} is missing (no {file.path} under {searched}) and the download failed ({why}); "
        f"download it by hand and {where}"
    )


def fetch_all(files, **options) -> list[Path]:
    """:func:`fetch` of every file, in order."""
    return [fetch(f, **options) for f in files]
