"""svpg.datafiles: lookup order, checksums, downloads from a local HTTP server (never the internet)."""
import functools
import gzip
import hashlib
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest

from svpg import datafiles
from svpg.datafiles import DataFile, fetch

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
NAMES = "bandits/adult/adult.names"
NAMES_SHA = "c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a"  # /work/shared/data/README.md

needs_shared = pytest.mark.skipif(not (SHARED / NAMES).is_file(), reason="the shared offline data are not present")


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A private user cache and no SVPG_DATA_DIR."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(datafiles.ENV_VAR, raising=False)
    return tmp_path


@pytest.fixture
def server(tmp_path):
    """A local HTTP server over tmp_path/www, holding a copy of adult.names and a tampered copy."""
    www = tmp_path / "www"
    www.mkdir()
    if (SHARED / NAMES).is_file():
        shutil.copy(SHARED / NAMES, www / "adult.names")
        data = (www / "adult.names").read_bytes()
        (www / "tampered.names").write_bytes(data[:-1] + b"!")
        (www / "adult.names.gz").write_bytes(gzip.compress(data, mtime=0))
    handler = functools.partial(_QuietHandler, directory=str(www))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def names_file(*urls) -> DataFile:
    return DataFile(NAMES, NAMES_SHA, tuple(urls), "UCI Adult attribute list")


@needs_shared
def test_the_shared_copy_is_found_through_data_dir_and_verified(env):
    path = fetch(names_file(), data_dir=SHARED, download=False)
    assert path == SHARED / NAMES
    # the check is remembered as a stamp in the cache, so the next fetch does not hash the file again
    assert list((datafiles.cache_dir() / "verified").glob("*.json"))


@needs_shared
def test_download_goes_to_the_cache_atomically_and_is_verified(env, server):
    path = fetch(names_file(f"{server}/missing.names", f"{server}/adult.names"), progress=False)
    assert path == env / "xdg" / "svpg" / NAMES
    assert hashlib.sha256(path.read_bytes()).hexdigest() == NAMES_SHA
    assert [p.name for p in path.parent.iterdir()] == ["adult.names"]  # no temporary left behind
    # the second fetch finds the cached copy (the server is not needed any more)
    assert fetch(names_file(), download=False) == path


@needs_shared
def test_a_download_with_the_wrong_checksum_is_refused_and_not_kept(env, server):
    with pytest.raises(ValueError) as e:
        fetch(names_file(f"{server}/tampered.names"), progress=False)
    msg = str(e.value)
    assert "\n" not in msg and "tampered.names" in msg and NAMES_SHA in msg and NAMES in msg
    folder = env / "xdg" / "svpg" / "bandits" / "adult"
    assert not folder.exists() or not list(folder.iterdir())


@needs_shared
def test_a_gzip_of_the_same_content_is_accepted_with_content_sha256(env, server):
    gz = DataFile(NAMES + ".gz", "0" * 64, (f"{server}/adult.names.gz",), "gzipped attribute list", content_sha256=NAMES_SHA)
    path = fetch(gz, progress=False)
    assert gzip.decompress(path.read_bytes()) == (SHARED / NAMES).read_bytes()


def test_missing_without_download_says_what_from_where_and_where_to(env):
    f = DataFile("bandits/x/x.data", "a" * 64, ("https://example.org/x.data",), "the X data")
    with pytest.raises(ValueError) as e:
        fetch(f, data_dir=env / "nowhere", download=False)
    msg = str(e.value)
    assert "\n" not in msg
    assert "the X data is missing" in msg and "https://example.org/x.data" in msg
    assert "bandits/x/x.data" in msg and "--data-dir" in msg and str(env / "xdg" / "svpg" / "bandits/x/x.data") in msg


def test_a_failed_download_is_one_line(env, server):
    f = DataFile("bandits/x/x.data", "a" * 64, (f"{server}/absent.data",), "the X data")
    with pytest.raises(ValueError) as e:
        fetch(f, progress=False)
    assert "\n" not in str(e.value) and "download failed" in str(e.value) and "absent.data" in str(e.value)


def _write(root: Path, rel: str, data: bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_lookup_order_data_dir_then_environment_then_cache(env, monkeypatch):
    data = b"0123456789\n"
    f = DataFile("d/f.txt", hashlib.sha256(data).hexdigest(), (), "a test file")
    given, environ = env / "given", env / "environ"
    monkeypatch.setenv(datafiles.ENV_VAR, str(environ))
    in_cache = _write(datafiles.cache_dir(), f.path, data)
    assert fetch(f, data_dir=given, download=False) == in_cache
    in_env = _write(environ, f.path, data)
    assert fetch(f, data_dir=given, download=False) == in_env
    in_given = _write(given, f.path, data)
    assert fetch(f, data_dir=given, download=False) == in_given
    assert datafiles.data_roots(given) == [given, environ, datafiles.cache_dir()]


def test_a_corrupt_file_is_an_error_not_skipped(env):
    data = b"good\n"
    f = DataFile("d/f.txt", hashlib.sha256(data).hexdigest(), ("https://example.org/f.txt",), "a test file")
    _write(datafiles.cache_dir(), f.path, data)
    bad = _write(env / "given", f.path, b"bad\n")
    with pytest.raises(ValueError) as e:
        fetch(f, data_dir=env / "given", download=False)
    msg = str(e.value)
    assert "\n" not in msg and str(bad) in msg and "corrupt" in msg and "https://example.org/f.txt" in msg


def test_a_file_changed_after_its_check_is_checked_again(env):
    data = b"good\n"
    f = DataFile("d/f.txt", hashlib.sha256(data).hexdigest(), (), "a test file")
    path = _write(env / "given", f.path, data)
    assert fetch(f, data_dir=env / "given", download=False) == path
    mtime = path.stat().st_mtime_ns
    path.write_bytes(b"evil\n")  # same size, a later modification time
    os.utime(path, ns=(mtime + 10**9, mtime + 10**9))
    with pytest.raises(ValueError, match="corrupt"):
        fetch(f, data_dir=env / "given", download=False)


@pytest.mark.parametrize("kwargs, match", [
    ({"path": "/abs/f"}, "relative"),
    ({"path": "../f"}, "relative"),
    ({"sha256": "xyz"}, "64 lower-case hex"),
    ({"urls": "https://example.org/f"}, "tuple"),
])
def test_bad_data_file_definitions(kwargs, match):
    args = {"path": "d/f", "sha256": "a" * 64, "urls": (), "what": "f", **kwargs}
    with pytest.raises(ValueError, match=match):
        DataFile(**args)
