"""``seed_oss`` on ByteDance-Seed-OSS.jinja's renders (see :mod:`.rendered`)."""

from __future__ import annotations

import pytest

from .checks import check_prefixes, check_rendered, check_truncated, takes, turn_for
from .xml_rendered import FORMAT_OF, cases_for


@pytest.mark.parametrize("key", cases_for("seed_oss"), ids="-".join)
def test_seed_oss_rendered(key: tuple[str, str]) -> None:
    check_rendered(*key)


@pytest.mark.parametrize("key", cases_for("seed_oss"), ids="-".join)
def test_seed_oss_every_prefix(key: tuple[str, str]) -> None:
    check_prefixes(*key)


@pytest.mark.parametrize("template", sorted(t for t, f in FORMAT_OF.items() if f == "seed_oss"))
def test_seed_oss_truncated(template: str) -> None:
    check_truncated(template)


def _call(params: str) -> str:
    return f"<seed:tool_call>\n<function=set_opts>\n{params}</function>\n</seed:tool_call>"


def test_json_spelling_of_values_taken_too() -> None:
    """The template writes ``str(value)``; models write JSON as well (vLLM reads both)."""
    turn = turn_for("seed_oss", "required", "")
    text = _call(
        "<parameter=flag>true</parameter>\n"
        '<parameter=tags>["a", "b c"]</parameter>\n'
        '<parameter=cfg>{"a": 1, "b": "x y"}</parameter>\n'
    )
    assert takes(turn, text)
    (call,) = turn.parse(text).calls
    assert call.arguments == {"flag": True, "tags": ["a", "b c"], "cfg": {"a": 1, "b": "x y"}}


def test_string_values_keep_their_edges() -> None:
    """The reader strips one newline at either end of a value (as vLLM's does), so the grammar
    writes no string that starts or ends with one."""
    turn = turn_for("seed_oss", "required", "")
    ok = "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Pa\nris</parameter>\n"
    assert takes(turn, ok + "</function>\n</seed:tool_call>")
    for city in ("\nParis", "Paris\n"):
        text = f"<seed:tool_call>\n<function=get_weather>\n<parameter=city>{city}</parameter>\n"
        assert not takes(turn, text + "</function>\n</seed:tool_call>")
