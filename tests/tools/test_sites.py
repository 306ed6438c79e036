"""The distortion meter's sites: every byte of a reply is attributed to one part of the turn."""

from __future__ import annotations

import pytest

from toolmask.tools import FORMATS, SITES, site_at, sites_of
from toolmask.tools.formats._json import JsonEnvelope

from .completions import render, text_of
from .toolset import VALID

#: the formats with a generation grammar (the others parse only, see test_canitoolcall)
GRAMMAR_FORMATS = sorted(n for n, f in FORMATS.items() if f.has_grammar)
#: the formats whose calls are plain JSON call objects: the sites name their parts (the formats
#: with their own call encoding are not attributed yet)
JSON_CALL_FORMATS = [n for n in GRAMMAR_FORMATS if FORMATS[n].codec == JsonEnvelope()]


def _runs(fmt_name: str, text: str) -> list[tuple[str, str]]:
    """(site, text written there) runs over the whole reply."""
    fmt = FORMATS[fmt_name]
    runs: list[tuple[str, str]] = []
    for i, ch in enumerate(text):
        site = site_at(fmt, text[:i])
        if runs and runs[-1][0] == site:
            runs[-1] = (site, runs[-1][1] + ch)
        else:
            runs.append((site, ch))
    return runs


def test_hermes_call_sites() -> None:
    text = '<tool_call>\n{"name": "f", "arguments": {"a": "x, y", "b": [1, {"c": 2}]}}\n'
    text += "</tool_call>\n"
    runs = _runs("hermes", text)
    assert [s for s, _ in runs] == [
        "turn_start",
        "block_open",
        "envelope",
        "key",
        "value",
        "separator",
        "key",
        "value",
        "separator",
        "envelope",
        "block_close",
        "after_block",
    ]
    assert dict((s, t) for s, t in runs)["value"] == ' [1, {"c": 2}]'
    assert runs[3] == ("key", '"a":') and runs[4] == ("value", ' "x, y"')


def test_prose_and_after_block() -> None:
    fmt = FORMATS["hermes"]
    assert site_at(fmt, "") == "turn_start"
    assert site_at(fmt, "Sure") == "prose"
    call = text_of(render(fmt, [("get_weather", VALID["get_weather"][0])]))
    assert site_at(fmt, call) == "after_block"
    assert site_at(fmt, call + "\n") == "after_block"
    assert site_at(fmt, call + "\n<tool") == "block_open"
    assert site_at(fmt, call + "\nThanks") == "prose"


@pytest.mark.parametrize("fmt_name", JSON_CALL_FORMATS)
def test_every_format_reaches_every_call_site(fmt_name: str) -> None:
    fmt = FORMATS[fmt_name]
    text = text_of(render(fmt, [("get_weather", {"city": "Oslo", "unit": "celsius"})]))
    sites = set(sites_of(text.encode(), range(len(text.encode()) + 1), fmt))
    assert {"turn_start", "envelope", "key", "value", "separator", "after_block"} <= sites
    assert sites <= set(SITES)


def test_unconstrained_garbage_never_raises() -> None:
    fmt = FORMATS["hermes"]
    for text in ['<tool_call>{"a": }}]]', "<tool_call>\n{{{{", '<tool_call>"\\', "<tool_call>]"]:
        for i in range(len(text) + 1):
            assert site_at(fmt, text[:i]) in SITES
