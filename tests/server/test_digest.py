"""The keyed digest the server's tool lists compare (``_native.digest``, ``tm_digest.h``): its
AVX2 and AVX-512 paths compute exactly the scalar path's digest, every byte and the length
count, and blocks in another order give another digest."""

from __future__ import annotations

import os
import random

import pytest

from toolmask import _kernel

if _kernel._native is None:
    pytest.skip("the compiled kernel is not built", allow_module_level=True)

digest = _kernel._native.digest
KEY = random.Random(5).randbytes(192)


def test_the_vector_path_is_the_scalar_path() -> None:
    rng = random.Random(1)
    data = rng.randbytes(40_000)
    lengths = [0, 1, 7, 8, 9, 127, 128, 129, 1023, 1024, 1025, 1151, 2048, 8193, 30_001]
    for n in lengths:
        for start in (0, 1, 13):
            a = digest(data, start, start + n, KEY)
            for level in (0, 1, 2):  # scalar, AVX2, AVX-512 (each where the CPU has it)
                assert a == digest(data, start, start + n, KEY, level), (n, start, level)
            assert a == digest(data[start : start + n], 0, n, KEY)  # only the range counts
            assert len(a) == 16


def test_every_byte_and_the_length_count() -> None:
    rng = random.Random(2)
    data = bytearray(rng.randbytes(3_000))
    base = digest(bytes(data), 0, len(data), KEY)
    seen = {base}
    for i in range(len(data)):
        for bit in (0, 7):
            data[i] ^= 1 << bit
            d = digest(bytes(data), 0, len(data), KEY)
            assert d not in seen, (i, bit)
            seen.add(d)
            data[i] ^= 1 << bit
    zeros = bytes(300)
    lengths = {digest(zeros, 0, n, KEY) for n in range(300)}
    assert len(lengths) == 300  # a zero-padded tail does not hide the length


def test_blocks_in_another_order_differ() -> None:
    rng = random.Random(3)
    blocks = [rng.randbytes(128) for _ in range(20)]
    data = b"".join(blocks)
    base = digest(data, 0, len(data), KEY)
    for i, j in [(0, 1), (0, 8), (3, 11), (7, 16), (2, 19)]:
        swapped = list(blocks)
        swapped[i], swapped[j] = swapped[j], swapped[i]
        assert digest(b"".join(swapped), 0, len(data), KEY) != base, (i, j)
    assert digest(data, 0, len(data), os.urandom(192)) != base  # the key counts
    # a secret of one repeated byte still gives each block of a window its own key words
    flat = bytes(192)
    for i, j in [(0, 1), (2, 5)]:
        swapped = list(blocks)
        swapped[i], swapped[j] = swapped[j], swapped[i]
        assert digest(b"".join(swapped), 0, len(data), flat) != digest(data, 0, len(data), flat)


def test_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError, match="192 bytes"):
        digest(b"abc", 0, 3, b"short")
    with pytest.raises(ValueError, match="outside"):
        digest(b"abc", 2, 5, KEY)
    with pytest.raises(ValueError, match="outside"):
        digest(b"abc", 2, 1, KEY)
