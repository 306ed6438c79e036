"""The pull's progress bar on stderr: redrawn in place on a terminal, a line per chunk in a log."""

from __future__ import annotations

import sys
from typing import TextIO

from toolmask.models._pull import Progress

__all__ = ["ProgressBar"]

_MB = 1_000_000


class ProgressBar:
    """A ``progress`` callback for :func:`toolmask.models.pull` that draws
    ``pulling NAME [#####-----] 12/22 chunks 610/1117 MB 21.0 s``."""

    def __init__(self, stream: TextIO | None = None, width: int = 30) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last_chunk = -1

    def line(self, p: Progress) -> str:
        done = self.width * p.bytes_done // max(p.bytes_total, 1)
        bar = "#" * done + "-" * (self.width - done)
        what = "verified" if p.step == "done" else "pulling"
        return (
            f"{what} {p.model} [{bar}] {p.chunks_done}/{p.chunks} chunks "
            f"{p.bytes_done // _MB}/{p.bytes_total // _MB} MB {p.elapsed:.1f} s"
        )

    def __call__(self, p: Progress) -> None:
        if self._tty:
            end = "\n" if p.step == "done" else ""
            self.stream.write("\r\x1b[K" + self.line(p) + end)
            self.stream.flush()
        elif p.step == "done" or (p.step == "fetch" and p.chunks_done != self._last_chunk):
            self._last_chunk = p.chunks_done
            print(self.line(p), file=self.stream, flush=True)
