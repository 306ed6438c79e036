"""Model backends. Each lives in its own module and imports its engine lazily, behind an error
that names the extra to install: ``toolmask.backends.llama_cpp`` (extra ``llama``)."""

from __future__ import annotations

__all__: list[str] = []
