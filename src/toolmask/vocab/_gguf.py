"""GGUF files: the metadata and tensor table, read with :mod:`struct` over a memory map.

One reader for the whole project: :func:`toolmask.vocab._loaders.read_gguf` takes the tokenizer
from it, :mod:`toolmask.backends.transformers` the weights too. Unlike ``gguf.GGUFReader`` it
does not build a numpy view per metadata element, so a 49k-token vocabulary with its merges
reads in about 0.1 s instead of several seconds; string arrays not asked for are skipped.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from toolmask.errors import ToolmaskError

__all__ = [
    "BYTE",
    "CONTROL",
    "NORMAL",
    "UNKNOWN",
    "UNUSED",
    "USER_DEFINED",
    "GgufFile",
    "gguf_metadata",
]

#: llama.cpp token types (``tokenizer.ggml.token_type``)
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

# GGUF metadata value types: fixed-size scalars (struct format), 8 = string, 9 = array
_GGUF_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}


@dataclass(frozen=True, slots=True)
class _GgufTensor:
    name: str
    shape: tuple[int, ...]  # ggml order: fastest-moving dimension first
    ggml_type: int
    offset: int  # absolute, in the file


class GgufFile:
    """A GGUF file's metadata and tensor table, read with ``struct`` over a memory map.

    String arrays are kept only for the keys in ``keep`` (the vocabulary); others are skipped.
    Cost: one pass over the metadata (about 0.1 s for a 49k-token vocabulary with its merges).
    """

    def __init__(self, path: Path, keep: frozenset[str]) -> None:
        self.path = path
        with open(path, "rb") as f:
            self.buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            self._read(keep)
        except (struct.error, OverflowError, MemoryError) as e:  # truncated or absurd counts
            self.buf.close()
            raise ToolmaskError(f"{path}: malformed GGUF ({type(e).__name__}: {e})") from e
        except ToolmaskError:
            self.buf.close()
            raise

    def _read(self, keep: frozenset[str]) -> None:
        path = self.path
        buf = self.buf
        if buf[:4] != b"GGUF":
            raise ToolmaskError(f"{path} is not a GGUF file")
        version, n_tensors, n_kv = struct.unpack_from("<IQQ", buf, 4)
        if version not in (2, 3):
            raise ToolmaskError(f"{path}: GGUF version {version} is not supported")
        pos = 24
        self.meta: dict[str, Any] = {}
        for _ in range(n_kv):
            key, pos = self._string(pos)
            (vtype,) = struct.unpack_from("<I", buf, pos)
            self.meta[key], pos = self._value(pos + 4, vtype, key in keep)
        infos: list[tuple[str, tuple[int, ...], int, int]] = []
        for _ in range(n_tensors):
            name, pos = self._string(pos)
            (ndim,) = struct.unpack_from("<I", buf, pos)
            dims = struct.unpack_from(f"<{ndim}Q", buf, pos + 4)
            ggml_type, offset = struct.unpack_from("<IQ", buf, pos + 4 + 8 * ndim)
            pos += 4 + 8 * ndim + 12
            infos.append((name, tuple(int(d) for d in dims), ggml_type, offset))
        align = int(self.meta.get("general.alignment", 32))
        start = (pos + align - 1) // align * align
        self.tensors = {n: _GgufTensor(n, s, t, start + o) for n, s, t, o in infos}

    def close(self) -> None:
        """Release the memory map (arrays returned by :meth:`array` are copies)."""
        self.buf.close()

    def _string(self, pos: int) -> tuple[str, int]:
        (n,) = struct.unpack_from("<Q", self.buf, pos)
        end = pos + 8 + n
        return self.buf[pos + 8 : end].decode("utf-8", "replace"), end

    def _value(self, pos: int, vtype: int, keep: bool) -> tuple[Any, int]:
        fmt = _GGUF_SCALARS.get(vtype)
        if fmt is not None:
            return struct.unpack_from(fmt, self.buf, pos)[0], pos + struct.calcsize(fmt)
        if vtype == 8:
            return self._string(pos)
        if vtype != 9:
            raise ToolmaskError(f"{self.path}: unknown GGUF metadata type {vtype}")
        etype, count = struct.unpack_from("<IQ", self.buf, pos)
        pos += 12
        efmt = _GGUF_SCALARS.get(etype)
        if efmt is not None:
            size = struct.calcsize(efmt)
            values = list(struct.unpack_from(f"<{count}{efmt[1]}", self.buf, pos))
            return values, pos + count * size
        if etype != 8:
            raise ToolmaskError(f"{self.path}: GGUF arrays of type {etype} are not supported")
        strings: list[str] = []
        for _ in range(count):
            (n,) = struct.unpack_from("<Q", self.buf, pos)
            if keep:
                strings.append(self.buf[pos + 8 : pos + 8 + n].decode("utf-8", "replace"))
            pos += 8 + n
        return (strings if keep else count), pos

    def array(self, name: str) -> Any:
        """The tensor ``name`` as float32 numpy, in torch order (dequantised; needs ``gguf``)."""
        try:
            from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
            from gguf.quants import dequantize
        except ImportError as e:
            raise ToolmaskError(
                "loading GGUF weights needs the gguf package: pip install gguf"
            ) from e
        t = self.tensors[name]
        qtype = GGMLQuantizationType(t.ggml_type)
        block, block_bytes = GGML_QUANT_SIZES[qtype]
        rows = int(np.prod(t.shape[1:], dtype=np.int64))
        row_bytes = t.shape[0] // block * block_bytes
        raw = np.frombuffer(self.buf, dtype=np.uint8, count=rows * row_bytes, offset=t.offset)
        out = dequantize(raw.reshape(rows, row_bytes), qtype)
        out = np.asarray(out, dtype=np.float32).reshape(tuple(reversed(t.shape)))
        # F32 tensors are views of the read-only map: torch wants memory it may write
        return out if out.flags.writeable and out.flags.c_contiguous else out.copy()


def gguf_metadata(path: str | Path, keep: tuple[str, ...] = ()) -> dict[str, Any]:
    """The metadata of the GGUF file ``path`` (key -> value). String arrays are read only for
    the keys in ``keep`` (others hold their element count); numeric arrays are lists. Raises
    :class:`ToolmaskError` for a file that is not a readable GGUF. Cost: one pass over the
    metadata, the tensors untouched."""
    f = GgufFile(Path(path), frozenset(keep))
    try:
        return dict(f.meta)
    finally:
        f.close()
