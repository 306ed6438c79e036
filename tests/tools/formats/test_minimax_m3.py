"""``minimax_m3`` on MiniMax-M3.jinja's renders: recursive XML values behind the namespace
marker, and the reasoning channel or its bare close at the start of every reply."""

from __future__ import annotations

from typing import Any

import pytest

import toolmask as tm
from toolmask.tools.formats.minimax_m3 import NS, to_xml

from .checks import check_prefixes, check_rendered, check_truncated, takes, turn_for
from .xml_rendered import FORMAT_OF, cases_for


@pytest.mark.parametrize("key", cases_for("minimax_m3"), ids="-".join)
def test_minimax_m3_rendered(key: tuple[str, str]) -> None:
    check_rendered(*key)


@pytest.mark.parametrize("key", cases_for("minimax_m3"), ids="-".join)
def test_minimax_m3_every_prefix(key: tuple[str, str]) -> None:
    check_prefixes(*key)


@pytest.mark.parametrize("template", sorted(t for t, f in FORMAT_OF.items() if f == "minimax_m3"))
def test_minimax_m3_truncated(template: str) -> None:
    check_truncated(template)


NESTED: dict[str, Any] = {
    "type": "object",
    "properties": {
        "rows": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {"id": {"type": "integer"}, "tags": {"$ref": "#/$defs/tags"}},
                "required": ["id"],
            },
        },
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "mode": {"enum": ["fast", "slow"]},
    },
    "required": ["rows"],
    "$defs": {"tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2}},
}
TOOL = {"type": "function", "function": {"name": "put", "parameters": NESTED}}


def _call(args: dict[str, Any]) -> str:
    invoke = f'{NS}<invoke name="put">{to_xml(args)}{NS}</invoke>\n'
    return f"</mm:think>{NS}<tool_call>\n{invoke}{NS}</tool_call>"


@pytest.mark.parametrize(
    ("args", "ok"),
    [
        ({"rows": [{"id": 1}]}, True),
        ({"rows": [{"id": 1, "tags": ["a", "b"]}, {"id": 2, "tags": []}], "code": "ABC"}, True),
        ({"rows": [{"id": 1}], "mode": "slow"}, True),
        ({"rows": []}, False),  # minItems
        ({"rows": [{"tags": ["a"]}]}, False),  # id is required
        ({"rows": [{"id": 1, "tags": ["a", "b", "c"]}]}, False),  # maxItems through $ref
        ({"rows": [{"id": "x"}]}, False),
        ({"rows": [{"id": 1}], "code": "abc"}, False),  # the pattern is enforced on the text
        ({"rows": [{"id": 1}], "mode": "medium"}, False),
        ({"rows": [{"id": 1}], "other": 1}, False),  # an undeclared member
    ],
)
def test_nested_values_follow_the_schema(args: dict[str, Any], ok: bool) -> None:
    turn = tm.ToolTurn([TOOL], "minimax_m3", "required")
    text = _call(args)
    assert takes(turn, text) == ok, text
    if ok:
        (call,) = turn.parse(text).calls
        assert call.arguments == args


def test_marker_text_cannot_be_in_a_string() -> None:
    turn = turn_for("minimax_m3", "required", "")
    text = (
        f'</mm:think>{NS}<tool_call>\n{NS}<invoke name="get_weather">{NS}<city>a{NS}b{NS}</city>'
        f"{NS}</invoke>\n{NS}</tool_call>"
    )
    assert not takes(turn, text)
    assert turn.parse(text).calls == ()


def test_reply_starts_with_the_channel_or_its_close() -> None:
    """In the template's adaptive mode the model reasons or writes ``</mm:think>`` first; its
    disabled mode puts the close in the prompt, so the reply may start with the block."""
    turn = turn_for("minimax_m3", "auto", "")
    assert takes(turn, "</mm:think>Hello.") and takes(turn, "<mm:think>Hm.</mm:think>Hello.")
    assert takes(turn, "Hello.")
    parsed = turn.parse("</mm:think>Hello.")
    assert parsed.content == "Hello." and parsed.reasoning == ""
    assert not takes(turn, "</mm:think></mm:think>Hello.")
    assert not takes(turn_for("minimax_m3", "auto", "", reasoning=False), "<mm:think>x</mm:think>")
