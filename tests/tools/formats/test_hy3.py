"""``hy3`` on tencent-Hy3.jinja's renders."""

from __future__ import annotations

import pytest

from .checks import check_prefixes, check_rendered, check_truncated, streamed, takes, turn_for
from .xml_rendered import FORMAT_OF, RENDERED, cases_for


@pytest.mark.parametrize("key", cases_for("hy3"), ids="-".join)
def test_hy3_rendered(key: tuple[str, str]) -> None:
    check_rendered(*key)


@pytest.mark.parametrize("key", cases_for("hy3"), ids="-".join)
def test_hy3_every_prefix(key: tuple[str, str]) -> None:
    check_prefixes(*key)


@pytest.mark.parametrize("template", sorted(t for t, f in FORMAT_OF.items() if f == "hy3"))
def test_hy3_truncated(template: str) -> None:
    check_truncated(template)


def test_reasoning_mode_marker_after_the_block() -> None:
    """The system prompt asks for ``<｜reasoning_mode:opensource｜>reasoning_effort:...`` after
    the block; the history render leaves it out. Both are taken, and the marker stays out of
    the content."""
    tail, text = RENDERED["llama.cpp/tencent-Hy3.jinja", "one"]
    turn = turn_for("hy3", "required", tail)
    marked = text + "<｜reasoning_mode:opensource｜>reasoning_effort:no_think"
    assert takes(turn, marked)
    assert not takes(turn, text + "<｜reasoning_mode:opensource｜>reasoning_effort:max")
    parsed = turn.parse(marked)
    assert parsed.content == "" and [c.name for c in parsed.calls] == ["get_weather"]
    assert streamed(turn, marked, size=2)[0] == parsed
