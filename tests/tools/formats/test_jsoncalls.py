"""The shared reader of the JSON-call families: prefixes, chunkings and garbage."""

from __future__ import annotations

import random

import pytest

from toolmask.tools import FORMATS, FormatSpec, StreamParser, parse_turn, sequential_call_id
from toolmask.tools.formats._json import JsonCalls
from toolmask.tools.formats._marked import HeadTail, MarkedJson
from toolmask.tools.formats._messages import ProseMessages

from .rendered import TWO


def _json_calls(fmt: FormatSpec) -> bool:
    """Whether the format's calls are JSON objects read whole, between their markers."""
    codec = fmt.codec.calls if isinstance(fmt.codec, ProseMessages) else fmt.codec
    return isinstance(codec, JsonCalls) or (
        isinstance(codec, MarkedJson) and isinstance(codec.reader, HeadTail)
    )


JSON_CALL_FORMATS = sorted(n for n, f in FORMATS.items() if _json_calls(f))


def test_the_families() -> None:
    assert JSON_CALL_FORMATS == [
        "apertus", "apriel", "cohere2", "command_r7b", "command_r_plus", "falcon3",
        "functionary_v25", "functionary_v31", "gigachat3", "gigachat31", "granite",
        "granite_20b_fc", "hunyuan_a13b", "internlm2", "jamba", "llama4", "llama4_json",
        "minimax_m1", "nemotron_v2", "solar_open", "xlam",
    ]  # fmt: skip


def _streamed(fmt_name: str, text: str, cuts: list[int]) -> object:
    s = StreamParser(FORMATS[fmt_name], id_factory=sequential_call_id)
    last = 0
    for c in [*cuts, len(text)]:
        s.feed(text[last:c])
        last = c
    s.finish()
    return s.result


@pytest.mark.parametrize("fmt_name", JSON_CALL_FORMATS)
def test_every_prefix_and_chunking(fmt_name: str) -> None:
    fmt = FORMATS[fmt_name]
    calls = TWO if fmt.layout.parallel_calls else TWO[:1]
    text = (
        "Checking.\n" + fmt.render_calls(calls)
        if not fmt.block.bare_start
        else fmt.render_calls(calls)
    )
    full = parse_turn(text, fmt, id_factory=sequential_call_id)
    assert [(c.name, c.arguments) for c in full.calls] == calls
    rng = random.Random(fmt_name)
    for end in range(len(text) + 1):
        prefix = text[:end]
        batch = parse_turn(prefix, fmt, id_factory=sequential_call_id)
        if not batch.calls:  # nothing the model wrote is lost
            assert batch.content == prefix, prefix
        cuts = sorted(rng.sample(range(1, end), min(3, end - 1))) if end > 1 else []
        assert _streamed(fmt_name, prefix, cuts) == batch


@pytest.mark.parametrize("fmt_name", JSON_CALL_FORMATS)
def test_garbage_never_raises_and_stays_in_the_content(fmt_name: str) -> None:
    fmt = FORMATS[fmt_name]
    text = fmt.render_calls(TWO)
    rng = random.Random(fmt_name)
    for _ in range(200):
        chars = list(text)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(chars))
            chars[i] = rng.choice(['"', "{", "}", "[", "]", ",", "\\", "<", ">", "x", "\n"])
        garbled = "".join(chars)
        got = parse_turn(garbled, fmt, id_factory=sequential_call_id)
        for m in got.malformed:
            assert m.text in got.content
        assert _streamed(fmt_name, garbled, [len(garbled) // 3, len(garbled) // 2]) == got
