"""``minimax_m2`` and ``minicpm5`` on MiniMax-M2.jinja's and openbmb-MiniCPM5-1B.jinja's renders."""

from __future__ import annotations

import pytest

from .checks import check_prefixes, check_rendered, check_truncated, takes, turn_for
from .xml_rendered import FORMAT_OF, cases_for


@pytest.mark.parametrize("key", cases_for("minimax_m2"), ids="-".join)
def test_minimax_m2_rendered(key: tuple[str, str]) -> None:
    check_rendered(*key)


@pytest.mark.parametrize("key", cases_for("minimax_m2"), ids="-".join)
def test_minimax_m2_every_prefix(key: tuple[str, str]) -> None:
    check_prefixes(*key)


@pytest.mark.parametrize("template", sorted(t for t, f in FORMAT_OF.items() if f == "minimax_m2"))
def test_minimax_m2_truncated(template: str) -> None:
    check_truncated(template)


@pytest.mark.parametrize("key", cases_for("minicpm5"), ids="-".join)
def test_minicpm5_rendered(key: tuple[str, str]) -> None:
    check_rendered(*key)


@pytest.mark.parametrize("key", cases_for("minicpm5"), ids="-".join)
def test_minicpm5_every_prefix(key: tuple[str, str]) -> None:
    check_prefixes(*key)


@pytest.mark.parametrize("template", sorted(t for t, f in FORMAT_OF.items() if f == "minicpm5"))
def test_minicpm5_truncated(template: str) -> None:
    check_truncated(template)


def test_minicpm5_cdata() -> None:
    """A string holding ``<``, ``&`` or a newline is wrapped in CDATA, as the template does."""
    turn = turn_for("minicpm5", "required", "")
    text = (
        '<function name="get_weather"><param name="city"><![CDATA[a<b & c\nd]]></param></function>'
    )
    assert takes(turn, text)
    assert [c.arguments for c in turn.parse(text).calls] == [{"city": "a<b & c\nd"}]
    assert not takes(turn, '<function name="get_weather"><param name="city">a<b</param></function>')


def test_minimax_m2_value_holding_tag_text() -> None:
    """The reader ends a value only where the structure confirms it."""
    turn = turn_for("minimax_m2", "auto", "")
    text = (
        '<minimax:tool_call>\n<invoke name="get_weather">\n'
        '<parameter name="city">a </invoke> b</parameter>\n</invoke>\n</minimax:tool_call>'
    )
    assert takes(turn, text)
    assert [c.arguments for c in turn.parse(text).calls] == [{"city": "a </invoke> b"}]
