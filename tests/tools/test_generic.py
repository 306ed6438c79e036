"""The generic format: where no family format reads the calls a chat template renders,
detection derives a format from the rendering itself and proves it like a family format.

The templates here are written for these tests, each in a notation no family uses (its markers,
its layout): JSON call objects one a block, a JSON list, objects back to back, keys in another
order, an indented list, objects with an id and ``"type": "function"``, OpenAI's tool-call
objects (on one line, indented), arguments as a JSON string, a Python list, Python calls one a
line or one a block, invoke tags with other tag names (in one block, one a block, back to
back), function tags (``<function=NAME>``, values on their own lines or tight), calls
separated by ``;\n``, `` <and> ``, ``, `` and `` && ``, invoke and function tags separated by
``---``, ``,\n``, a line of text or `` | ``, blocks of one call each inside a list wrapper,
function tags without a newline after the tag, invoke tags with values on lines of their own,
OpenAI objects with an index beside the id or a constant in the function object, the name and
arguments under keys of any names (``function`` / ``parameters``, ``tool`` / ``input``, in a
wrapper key), a reasoning channel in markers of its own, constants that are not strings, the id
in the function object, a call id before each call (the client's, a counter from 0 or 1, in an
attribute, on a line of its own or bare), function tags and name attributes holding JSON
arguments (``<tool=NAME>{...}</tool>``, ``<tool name="NAME">{...}</tool>``) and key lines
(``name: NAME`` then ``arguments: {...}``). Each must be
detected as a generic format whose grammar takes the rendered bytes (one call and two,
``required`` and ``auto``, parallel calls off for one), whose parser gives the calls back (batch,
and streamed in chunks), whose renderer writes the template's bytes (its own call ids aside),
and that keeps a malformed or cut block in the content. A template whose calls cannot be read
back stays on ``functools``; a template a family reads is never claimed (the vendored templates:
``test_detect_templates.py``).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

import toolmask as tm
from toolmask.tools import (
    FORMATS,
    FormatGuess,
    StreamParser,
    ToolTurn,
    detect_format,
    detection_report,
    parse_turn,
    probe_template,
    sequential_call_id,
)
from toolmask.tools._detect import FALLBACK, prove_format
from toolmask.tools._generic import derive_formats, is_generic
from toolmask.tools._generic_calls import _same, _settle, call_shape
from toolmask.tools._probe import PROBE_TOOLS, ProbeCase, probe_call_id
from toolmask.tools._template import TemplateRenderer
from toolmask.tools.formats._json import JsonCalls
from toolmask.tools.formats._kit import escape_in_string
from toolmask.tools.formats._tagged import TaggedJson
from toolmask.tools.formats._xml import FunctionParams


def _chat(call: str, between: str = "", before: str = "", after: str = "") -> str:
    """ChatML whose assistant turn writes ``before``, each call (``call``, Jinja) joined by
    ``between``, then ``after``; reasoning in ``<reason>`` tags when the message has it."""
    return (
        "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' }}"
        "{% if m.reasoning_content %}{{ '<reason>' + m.reasoning_content + '</reason>\\n' }}"
        "{% endif %}{% if m.tool_calls %}" + before + "{% for c in m.tool_calls %}"
        "{% if not loop.first %}{{ "
        + json.dumps(between)
        + " }}{% endif %}"
        + call
        + "{% endfor %}"
        + after
        + "{% else %}{{ m.content }}{% endif %}{{ '<|im_end|>\\n' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
    )


def _thinking(call: str, between: str, history: str) -> str:
    """ChatML whose generation prompt opens a ``<reason>`` channel (the reply starts inside
    it); the history writes the last assistant turn's reasoning ``always`` (an empty channel
    where there is none), only where the message ``has`` it, or ``never`` (its text cut at
    ``</reason>``, as DeepSeek R1's template does)."""
    channel = "'<reason>\\n' + (m.reasoning_content or '') + '\\n</reason>\\n\\n'"
    shown = {
        "always": "{% if loop.last %}{{ " + channel + " }}{% endif %}",
        "has": "{% if m.reasoning_content %}{{ " + channel + " }}{% endif %}",
        "never": "",
    }[history]
    text = _chat(call, between)
    for old, new in (
        ("{% if m.reasoning_content %}{{ '<reason>' + m.reasoning_content + '</reason>\\n' }}"
         "{% endif %}", shown),
        ("{{ m.content }}", "{{ (m.content or '').split('</reason>')[-1] }}"),
        ("'<|im_start|>assistant\\n' }}{% endif %}",
         "'<|im_start|>assistant\\n<reason>\\n' }}{% endif %}"),
    ):  # fmt: skip
        assert old in text, old
        text = text.replace(old, new)
    return text


_OBJECT = (
    '\'{"name": "\' + c.function.name + \'", "arguments": \' + (c.function.arguments | tojson)'
    " + '}'"
)
_PY = (
    "{{ c.function.name + '(' }}{% for k, v in c.function.arguments.items() %}"
    "{% if not loop.first %}{{ ', ' }}{% endif %}{{ k + '=' + (v | tojson) }}{% endfor %}{{ ')' }}"
)
_INVOKE = (
    "{{ '<call name=\"' + c.function.name + '\">\\n' }}"
    "{% for k, v in c.function.arguments.items() %}"
    "{{ '<arg name=\"' + k + '\">' + (v | string) + '</arg>\\n' }}{% endfor %}{{ '</call>\\n' }}"
)
_FUNCTION = (
    "{{ '<function=' + c.function.name + '>\\n' }}{% for k, v in c.function.arguments.items() %}"
    "{{ '<parameter=' + k + '>' + SEP + (v if v is string else v | tojson) + SEP "
    "+ '</parameter>\\n' }}{% endfor %}{{ '</function>' }}"
)
_INVOKE_TIGHT = _INVOKE.replace("'</call>\\n'", "'</call>'")  # nothing after </call>
_FN = _FUNCTION.replace("SEP", "'\\n'")  # values on lines of their own
# the parameters right after the function's tag and after each other (no newline)
_FN_LINE = _FUNCTION.replace("'>\\n' }}{% for", "'>' }}{% for").replace(
    "'</parameter>\\n'", "'</parameter>'"
)
_INVOKE_PADDED = _INVOKE.replace(
    "'\">' + (v | string) + '</arg>", "'\">\\n' + (v | string) + '\\n</arg>"
)
_LIST = "{{ m.tool_calls | map(attribute='function') | list | tojson(indent=4) }}"
_ARGS_TEXT = "(c.function.arguments | tojson | tojson)"  # the arguments as a JSON string


def _whole(before: str, after: str) -> str:
    """A template that writes the message's calls at once (a filter of ``m.tool_calls``)
    between ``before`` and ``after`` (Jinja expressions)."""
    return _chat("", "", "{{ " + before + " }}{% if 0 %}", "{% endif %}{{ " + after + " }}")


#: template -> (the Jinja text, the codec the derived format must use)
TEMPLATES: dict[str, tuple[str, str]] = {
    "json blocks": (_chat("{{ '<<call>>' + " + _OBJECT + " + '<</call>>' }}", "\n"), "JsonCalls"),
    "json list": (
        _chat("{{ " + _OBJECT + " }}", ", ", "{{ '<calls>[' }}", "{{ ']</calls>' }}"),
        "JsonCalls",
    ),
    "json back to back": (
        _chat("{{ " + _OBJECT + " }}", "", "{{ '[[CALLS]]' }}", "{{ '[[/CALLS]]' }}"),
        "JsonCalls",
    ),
    "json keys reversed": (
        _chat(
            '{{ \'<%fn>{"args": \' + (c.function.arguments | tojson) + \', "tool": "\' '
            "+ c.function.name + '\"}' }}",
            "\n",
        ),
        "JsonCalls",
    ),
    "json indented list": (
        _chat(
            "",
            "",
            "{{ '<acts>\\n' + (" + _LIST[3:-3] + ") + '\\n</acts>' }}{% if 0 %}",
            "{% endif %}",
        ),
        "JsonCalls",
    ),
    "python list": (_chat(_PY, ", ", "{{ '<<py>>[' }}", "{{ ']<</py>>' }}"), "PythonCalls"),
    "python lines": (
        _chat(_PY, "\n", "{{ '<actions>\\n' }}", "{{ '\\n</actions>' }}"),
        "PythonCalls",
    ),
    "python blocks": (_chat("{{ '<py>' }}" + _PY + "{{ '</py>' }}", "\n"), "PythonCalls"),
    "invoke tags": (
        _chat(_INVOKE, "", "{{ '<<calls>>\\n' }}", "{{ '<</calls>>' }}"),
        "InvokeParams",
    ),
    "invoke blocks": (
        _chat("{{ '<<call>>\\n' }}" + _INVOKE + "{{ '<</call>>' }}", "\n"),
        "InvokeParams",
    ),
    # Qwen3-Coder's function tags in markers of their own
    "function tags": (
        _chat(
            "{{ '<<fn>>\\n' }}" + _FUNCTION.replace("SEP", "'\\n'") + "{{ '\\n<</fn>>' }}",
            "\n",
        ),
        "FunctionParams",
    ),
    "function tags tight, one block": (
        _chat(_FUNCTION.replace("SEP", "''"), "\n", "{{ '[[fns]]\\n' }}", "{{ '\\n[[/fns]]' }}"),
        "FunctionParams",
    ),
    # function tags under other names
    "tool and arg tags": (
        _chat(
            "{{ '<<fn>>\\n' }}"
            + _FUNCTION.replace("SEP", "'\\n'")
            .replace("<function=", "<tool=")
            .replace("</function>", "</tool>")
            .replace("<parameter=", "<arg=")
            .replace("</parameter>", "</arg>")
            + "{{ '\\n<</fn>>' }}",
            "\n",
        ),
        "FunctionParams",
    ),
    # separators of any text between the calls of a block
    "json separated": (
        _chat("{{ " + _OBJECT + " }}", ";\n", "{{ '<<calls>>\\n' }}", "{{ '\\n<</calls>>' }}"),
        "JsonCalls",
    ),
    "json long separator": (
        _chat("{{ " + _OBJECT + " }}", " <and> ", "{{ '<<calls>>' }}", "{{ '<</calls>>' }}"),
        "JsonCalls",
    ),
    "python separated": (_chat(_PY, ", ", "{{ '<<py>>' }}", "{{ '<</py>>' }}"), "PythonCalls"),
    "python long separator": (
        _chat(_PY, " && ", "{{ '<<py>>' }}", "{{ '<</py>>' }}"),
        "PythonCalls",
    ),
    # text between blocks of one call each: the closer, the text and the opener separate
    # the calls of one block
    "json blocks, a rule between": (
        _chat("{{ '<<call>>' + " + _OBJECT + " + '<</call>>' }}", "\n---\n"),
        "JsonCalls",
    ),
    "python blocks, a word between": (
        _chat("{{ '<py>' }}" + _PY + "{{ '</py>' }}", " then "),
        "PythonCalls",
    ),
    # OpenAI's tool-call objects, as the client gave them: an id, "type", the nested function
    "openai objects": (_whole("'<<tc>>' + (m.tool_calls | tojson)", "'<</tc>>'"), "JsonCalls"),
    "openai objects indented": (
        _whole("'<calls>\\n' + (m.tool_calls | tojson(indent=2))", "'\\n</calls>'"),
        "JsonCalls",
    ),
    "json id and type keys": (
        _chat(
            "{{ '<<call>>' + ({'id': c.id, 'type': 'function', 'name': c.function.name, "
            "'arguments': c.function.arguments} | tojson) + '<</call>>' }}",
            "\n",
        ),
        "JsonCalls",
    ),
    "json arguments as a string": (
        _chat(
            '{{ \'<<call>>{"name": "\' + c.function.name + \'", "arguments": \' + '
            + _ARGS_TEXT
            + " + '}<</call>>' }}",
            "\n",
        ),
        "JsonCalls",
    ),
    "openai objects, arguments as a string": (
        _chat(
            "{{ '<<call>>' + ({'id': c.id, 'type': 'function', 'function': {'name': "
            "c.function.name, 'arguments': (c.function.arguments | tojson)}} | tojson) "
            "+ '<</call>>' }}",
            "\n",
        ),
        "JsonCalls",
    ),
    # keys of constant text besides "type", and ids that count the calls of the message
    "json constant key, counter ids": (
        _chat(
            "{{ '<<call>>' + ({'kind': 'tool_use', 'id': 'call_' ~ loop.index0, 'name': "
            "c.function.name, 'arguments': c.function.arguments} | tojson) + '<</call>>' }}",
            "\n",
        ),
        "JsonCalls",
    ),
    "json index ids in a list": (
        _chat(
            "{{ ({'index': loop.index0, 'tool': c.function.name, 'params': c.function.arguments, "
            "'source': 'model'} | tojson) }}",
            ", ",
            "{{ '<calls>[' }}",
            "{{ ']</calls>' }}",
        ),
        "JsonCalls",
    ),
    # OpenAI's objects with more keys: one that counts the calls besides the id, a constant
    # in the function object
    "openai objects with an index": (
        _chat(
            "{{ '<<call>>' + ({'id': c.id, 'type': 'function', 'function': {'name': "
            "c.function.name, 'arguments': c.function.arguments}, 'index': loop.index0} "
            "| tojson) + '<</call>>' }}",
            "\n",
        ),
        "JsonCalls",
    ),
    "openai objects, a constant in the function object": (
        _chat(
            "{{ ({'id': c.id, 'type': 'function', 'function': {'name': c.function.name, "
            "'arguments': (c.function.arguments | tojson), 'kind': 'call'}} | tojson) }}",
            ", ",
            "{{ '<calls>[' }}",
            "{{ ']</calls>' }}",
        ),
        "JsonCalls",
    ),
    # the name and the arguments under keys of the template's own, or in an object of their
    # own under a key of the template's
    "json function and parameters keys": (
        _chat(
            "{{ '<<call>>' + ({'function': c.function.name, 'parameters': "
            "c.function.arguments} | tojson) + '<</call>>' }}",
            "\n",
        ),
        "JsonCalls",
    ),
    "json tool and input keys in a list": (
        _chat(
            "{{ ({'tool': c.function.name, 'input': c.function.arguments} | tojson) }}",
            ", ",
            "{{ '<<calls>>[' }}",
            "{{ ']<</calls>>' }}",
        ),
        "JsonCalls",
    ),
    "json call in a wrapper key": (
        _chat(
            "{{ '<<call>>' + ({'call': {'tool': c.function.name, 'input': "
            "c.function.arguments}, 'id': c.id} | tojson) + '<</call>>' }}",
            "\n",
        ),
        "JsonCalls",
    ),
    # invoke and function tags with text between two calls of a block
    "invoke tags, a rule between": (
        _chat(_INVOKE, "---\n", "{{ '<function_calls>\\n' }}", "{{ '</function_calls>' }}"),
        "InvokeParams",
    ),
    "function tags, a comma between": (
        _chat(_FN, ",\n", "{{ '<tool_call>\\n' }}", "{{ '\\n</tool_call>' }}"),
        "FunctionParams",
    ),
    "function tags, a text line between": (
        _chat(_FN, "\nand then\n", "{{ '<tool_call>\\n' }}", "{{ '\\n</tool_call>' }}"),
        "FunctionParams",
    ),
    "function tags tight, a bar between": (
        _chat(_FUNCTION.replace("SEP", "''"), " | ", "{{ '[[fns]]' }}", "{{ '[[/fns]]' }}"),
        "FunctionParams",
    ),
    # a close that starts with the separator's text: the close, not a separator
    "json separated, the close starts with the separator": (
        _chat("{{ " + _OBJECT + " }}", "\n--\n", "{{ '<<calls>>\\n' }}", "{{ '\\n--end>>' }}"),
        "JsonCalls",
    ),
    "invoke tags, the close starts with the separator": (
        _chat(_INVOKE, "--\n", "{{ '<<calls>>\\n' }}", "{{ '--end>>' }}"),
        "InvokeParams",
    ),
    "function tags, the close starts with the separator": (
        _chat(_FN, "\n--\n", "{{ '<<calls>>\\n' }}", "{{ '\\n--end>>' }}"),
        "FunctionParams",
    ),
    # blocks of one call each, text between them: the closer, the text and the opener again
    # separate the calls of one block
    "invoke blocks, a rule between": (
        _chat("{{ '<<call>>\\n' }}" + _INVOKE + "{{ '<</call>>' }}", "\n---\n"),
        "InvokeParams",
    ),
    "function blocks, a word between": (
        _chat("{{ '<<fn>>\\n' }}" + _FN + "{{ '\\n<</fn>>' }}", " then "),
        "FunctionParams",
    ),
    # a list wrapper around the calls: blocks of one call each inside it (the inner closer
    # and opener separate the calls), or the calls of one block inside it
    "invoke blocks in a list": (
        _chat(
            "{{ '<tc>\\n' }}" + _INVOKE + "{{ '</tc>' }}",
            "\n",
            "{{ '<calls>\\n' }}",
            "{{ '\\n</calls>' }}",
        ),
        "InvokeParams",
    ),
    "function blocks in a list": (
        _chat(
            "{{ '<tc>\\n' }}" + _FN + "{{ '\\n</tc>' }}",
            "\n",
            "{{ '<calls>\\n' }}",
            "{{ '\\n</calls>' }}",
        ),
        "FunctionParams",
    ),
    "invoke tags in a list": (
        _chat(_INVOKE, "", "{{ '<calls>\\n<list>\\n' }}", "{{ '</list>\\n</calls>' }}"),
        "InvokeParams",
    ),
    # the calls of one block back to back, or with whitespace of the template's own between
    "invoke tags back to back": (
        _chat(_INVOKE_TIGHT, "", "{{ '<calls>' }}", "{{ '</calls>' }}"),
        "InvokeParams",
    ),
    "invoke tags, a space between": (
        _chat(_INVOKE_TIGHT, " ", "{{ '<calls>\\n' }}", "{{ '\\n\\n</calls>' }}"),
        "InvokeParams",
    ),
    "function tags back to back": (
        _chat(_FN, "", "{{ '<calls>' }}", "{{ '</calls>' }}"),
        "FunctionParams",
    ),
    # function tags with no newline after the function's tag, values against their tags or
    # on lines of their own; invoke tags with each value on lines of its own
    "function tags on one line": (
        _chat(_FN_LINE.replace("SEP", "''"), "\n", "{{ '<<fn>>' }}", "{{ '<</fn>>' }}"),
        "FunctionParams",
    ),
    "function tags without a newline after the tag": (
        _chat(_FN_LINE.replace("SEP", "'\\n'"), "", "{{ '<calls>\\n' }}", "{{ '\\n</calls>' }}"),
        "FunctionParams",
    ),
    "invoke tags, values on their own lines": (
        _chat(_INVOKE_PADDED, "", "{{ '<<calls>>\\n' }}", "{{ '<</calls>>' }}"),
        "InvokeParams",
    ),
    "invoke blocks, values on their own lines": (
        _chat("{{ '<<call>>\\n' }}" + _INVOKE_PADDED + "{{ '<</call>>' }}", "\n"),
        "InvokeParams",
    ),
    "function tags in a list": (
        _chat(_FN, "\n", "{{ '[[fns]]\\n<list>\\n' }}", "{{ '\\n</list>\\n[[/fns]]' }}"),
        "FunctionParams",
    ),
    # a reasoning channel the generation prompt opens: the reply starts inside it
    "reasoning opened by the prompt": (
        _thinking("{{ '<<call>>' + " + _OBJECT + " + '<</call>>' }}", "\n", "always"),
        "JsonCalls",
    ),
    "reasoning opened by the prompt, shown where given": (
        _thinking("{{ '<<py>>' }}" + _PY + "{{ '<</py>>' }}", "\n", "has"),
        "PythonCalls",
    ),
    "reasoning opened by the prompt, dropped from the history": (
        _thinking("{{ '<<call>>' + " + _OBJECT + " + '<</call>>' }}", "\n", "never"),
        "JsonCalls",
    ),
    # constants that are not strings: a number, a boolean, null
    "json constants that are not strings": (
        _chat(
            "{{ '<<call>>' + ({'name': c.function.name, 'arguments': c.function.arguments, "
            "'version': 1, 'strict': true, 'extra': none, 'weight': 0.5} | tojson) "
            "+ '<</call>>' }}",
            "\n",
        ),
        "JsonCalls",
    ),
    # OpenAI's objects with the id inside the function object
    "openai objects, the id in the function object": (
        _chat(
            "{{ '<<call>>' + ({'type': 'function', 'function': {'id': c.id, 'name': "
            "c.function.name, 'arguments': c.function.arguments}} | tojson) + '<</call>>' }}",
            "\n",
        ),
        "JsonCalls",
    ),
    # a call id written outside the call: the id the client gave, or one that counts
    "json objects after their ids": (
        _chat("{{ '<<call id=\"' + c.id + '\">>' + " + _OBJECT + " + '<</call>>' }}", "\n"),
        "TaggedJson",
    ),
    "json objects after counter ids, in a list": (
        _chat(
            "{{ '<call id=\"call_' ~ loop.index0 ~ '\">' + " + _OBJECT + " + '</call>' }}",
            "\n",
            "{{ '<calls>\\n' }}",
            "{{ '\\n</calls>' }}",
        ),
        "TaggedJson",
    ),
    "json objects after indexes from 1": (
        _chat("{{ '<call n=' ~ loop.index ~ '>' + " + _OBJECT + " + '</call>' }}", "\n"),
        "TaggedJson",
    ),
    "json objects after bare ids, one a line": (
        _chat(
            "{{ c.id + ': ' + " + _OBJECT + " }}", "\n", "{{ '<calls>\\n' }}", "{{ '\\n</calls>' }}"
        ),
        "TaggedJson",
    ),
    # function tags holding the JSON arguments, in markers no family uses
    "function tags holding json": (
        _chat(
            "{{ '<tool=' + c.function.name + '>' + (c.function.arguments | tojson) + '</tool>' }}",
            "",
        ),
        "TaggedJson",
    ),
    "function tags holding compact json, in a block": (
        _chat(
            "{{ '<function=' + c.function.name + '>\\n' + (c.function.arguments | "
            "tojson(separators=(',', ':'))) + '\\n</function>' }}",
            "\n",
            "{{ '<<fns>>\\n' }}",
            "{{ '\\n<</fns>>' }}",
        ),
        "TaggedJson",
    ),
    "name attribute tags holding json": (
        _chat(
            "{{ '<tool name=\"' + c.function.name + '\">' + (c.function.arguments | tojson) "
            "+ '</tool>' }}",
            "\n",
        ),
        "TaggedJson",
    ),
    "name attribute tags holding json, an id before": (
        _chat(
            "{{ '<tool id=\"' + c.id + '\" name=\"' + c.function.name + '\">' + "
            "(c.function.arguments | tojson) + '</tool>' }}",
            "\n",
        ),
        "TaggedJson",
    ),
    # calls as key: value lines, the arguments JSON
    "key lines": (
        _chat(
            "{{ '<<call>>\\nname: ' + c.function.name + '\\narguments: ' + "
            "(c.function.arguments | tojson) + '\\n<</call>>' }}",
            "\n",
        ),
        "TaggedJson",
    ),
    "key lines in a block, a rule between": (
        _chat(
            "{{ 'tool: ' + c.function.name + '\\ninput: ' + (c.function.arguments | tojson) }}",
            "\n---\n",
            "{{ '<calls>\\n' }}",
            "{{ '\\n</calls>' }}",
        ),
        "TaggedJson",
    ),
    "key lines, the name quoted": (
        _chat(
            "{{ '<<call>>\\nname: \"' + c.function.name + '\"\\narguments: ' + "
            "(c.function.arguments | tojson) + '\\n<</call>>' }}",
            "\n",
        ),
        "TaggedJson",
    ),
    "key lines, the arguments indented, an id line": (
        _chat(
            "{{ '<<call>>\\nid: ' + c.id + '\\nname: ' + c.function.name + '\\narguments: ' + "
            "(c.function.arguments | tojson(indent=2)) + '\\n<</call>>' }}",
            "\n",
        ),
        "TaggedJson",
    ),
}


def _tools() -> list[Any]:
    return [tm.Tool.from_openai(t) for t in PROBE_TOOLS]


def _guess(name: str) -> FormatGuess:
    return detect_format(TEMPLATES[name][0])


def _takes(turn: ToolTurn, text: str) -> bool:
    m = tm.compile(turn.grammar()).matcher()
    return m.accept_bytes(text.encode("utf-8")) and m.is_accepting()


def _open(fmt: str, case: ProbeCase) -> bool:
    """Whether the reasoning channel is open where the case's text starts: as the first of
    the prompts it may continue leaves it that reads the calls back (a template that drops
    reasoning from the history renders the turn after the assistant header alone)."""
    for prompt in case.prompts:
        is_open = FORMATS[fmt].prompt_opens_reasoning(prompt)
        got = parse_turn(case.text, FORMATS[fmt], reasoning_open=is_open)
        if [(c.name, c.arguments) for c in got.calls] == list(case.calls):
            return is_open
    return FORMATS[fmt].prompt_opens_reasoning(case.prompts[0])


def _streamed(fmt: str, text: str, is_open: bool, size: int) -> tm.tools.ParsedTurn:
    sp = StreamParser(FORMATS[fmt], reasoning_open=is_open, id_factory=sequential_call_id)
    deltas = [d for i in range(0, len(text), size) for d in sp.feed(text[i : i + size])]
    deltas += sp.finish()
    args: dict[int, str] = {}
    for d in deltas:
        if d.index is not None:
            args[d.index] = args.get(d.index, "") + (d.arguments or "")
    assert [json.loads(args[i]) for i in sorted(args)] == [c.arguments for c in sp.result.calls]
    return sp.result


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_detected_as_a_generic_format(name: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="toolmask.tools"):
        guess = detect_format(TEMPLATES[name][0] + "{# " + name + " #}")  # not the cached one
    assert is_generic(guess.name) and guess.confident, (str(guess), guess.warning)
    assert guess.proven == (guess.name,)
    fmt = FORMATS[guess.name]
    assert type(fmt.codec).__name__ == TEMPLATES[name][1]
    # the warning and the report name the format and the markers it was derived with
    assert "derived from its rendering" in guess.warning and repr(fmt.block.open) in guess.warning
    assert any(guess.warning in r.message for r in caplog.records)
    report = detection_report(guess)
    assert f"{guess.name}: PROVEN" in report and repr(fmt.block.open) in report
    # the same rendering derives the same format
    assert detect_format(TEMPLATES[name][0]).name == guess.name


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_the_generic_format_takes_and_reads_the_rendered_calls(name: str) -> None:
    guess = _guess(name)
    fmt = guess.name
    assert guess.probe is not None and {c.name for c in guess.probe.cases} >= {"one", "two"}
    for case in guess.probe.cases:
        is_open = _open(fmt, case)
        for mode in ("required", "auto"):
            turn = ToolTurn(_tools(), fmt, mode, reasoning_open=is_open)
            assert _takes(turn, case.text), f"{case.name}: {mode} refuses {case.text!r}"
            assert not _takes(turn, case.text.replace("get_weather", "get_wether"))
            lazy = turn.compile(lazy=True).matcher()  # the tools compiled as the reply enters them
            assert lazy.accept_bytes(case.text.encode("utf-8")) and lazy.is_accepting()
        if case.name != "two":
            single = ToolTurn(
                _tools(), fmt, "required", parallel_tool_calls=False, reasoning_open=is_open
            )
            assert _takes(single, case.text), f"{case.name}: one call, parallel off"
        got = parse_turn(case.text, FORMATS[fmt], reasoning_open=is_open,
                         id_factory=sequential_call_id)  # fmt: skip
        assert [(c.name, c.arguments) for c in got.calls] == list(case.calls)
        assert (got.content.strip(), got.malformed, got.reasoning) == ("", (), case.reasoning)
        for size in (1, 3, 7):
            assert _streamed(fmt, case.text, is_open, size) == got
        # the renderer writes the calls as the template does (its own ids where the template
        # writes the ids it was given)
        rendered = FORMATS[fmt].render_calls([(n, a) for n, a in case.calls])
        again = parse_turn(rendered, FORMATS[fmt], id_factory=sequential_call_id)
        assert _named(again) == _named(got), rendered
        if not case.reasoning:
            assert rendered == _with_render_ids(guess, case, is_open), rendered
            for mode in ("required", "auto"):
                assert _takes(ToolTurn(_tools(), fmt, mode), rendered), rendered


def _named(turn: tm.tools.ParsedTurn) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, c.arguments) for c in turn.calls]


def _with_render_ids(guess: FormatGuess, case: ProbeCase, is_open: bool = False) -> str:
    """The case's text with the ids the probe gave its calls replaced by the renderer's, and
    without the empty reasoning channel it starts with where the prompt opened one."""
    assert guess.probe is not None
    text = case.text
    end = FORMATS[guess.name].reasoning.end
    if is_open and text.lstrip().startswith(end):
        text = text.lstrip()[len(end) :].lstrip()
    for i, (name, _) in enumerate(case.calls):  # in a JSON string or written raw
        text = text.replace(probe_call_id(guess.probe.variant, name, i), f"call_{i}")
    return text


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_a_malformed_or_cut_block_stays_in_the_content(name: str) -> None:
    guess = _guess(name)
    fmt = FORMATS[guess.name]
    assert guess.probe is not None
    one = next(c for c in guess.probe.cases if c.name == "one")
    cut = one.text[: one.text.index("Paris") + 3]
    broken = fmt.block.open + " {not a call( " + fmt.block.close
    for text in (cut, "Let me see. " + broken):
        got = parse_turn(text, fmt, id_factory=sequential_call_id)
        assert got.calls == () and got.malformed, text
        assert text.startswith(got.content.strip()) or got.content == text, (got.content, text)
        assert got.malformed[-1].text in got.content
        assert _streamed(guess.name, text, False, 3) == got


def test_the_reasoning_channel_is_derived_from_its_markers() -> None:
    guess = _guess("json blocks")
    assert guess.probe is not None and "reasoning" in {c.name for c in guess.probe.cases}
    fmt = FORMATS[guess.name]
    assert (fmt.reasoning.start, fmt.reasoning.end) == ("<reason>", "</reason>")
    assert "reasoning '<reason>' ... '</reason>'" in guess.warning


def test_a_rendering_that_cannot_be_read_back_stays_on_functools(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # the markers are consistent, but string values are written unquoted: no notation reads
    # the arguments back, so no generic format proves itself
    unquoted = (
        "{{ '<<call>>' + c.function.name + '(' }}{% for k, v in c.function.arguments.items() %}"
        "{% if not loop.first %}{{ ', ' }}{% endif %}{{ k + '=' + (v | string) }}{% endfor %}"
        "{{ ')<</call>>' }}"
    )
    with caplog.at_level(logging.WARNING, logger="toolmask.tools"):
        guess = detect_format(_chat(unquoted, "\n"))
    assert (guess.name, guess.source, guess.confident) == (FALLBACK, "fallback", False)
    assert "no format reads" in guess.warning and "--format" in guess.warning
    assert any(guess.warning in r.message for r in caplog.records)
    assert not any(e.proven for e in guess.evidence)
    assert not any(is_generic(n) for n in guess.proven)


def test_a_family_format_comes_first() -> None:
    # Hermes' own shape: a generic format derived from it proves itself too, but the family
    # format is detected, and no generic format is tried
    hermes = (
        _chat("{{ '<tool_call>\\n' + " + _OBJECT + " + '\\n</tool_call>' }}", "\n")
        .replace("<reason>", "<think>")
        .replace("</reason>", "</think>")
    )
    guess = detect_format(hermes)
    assert guess.name == "qwen3" and not any(is_generic(e.format) for e in guess.evidence)
    probe = probe_template(TemplateRenderer(hermes))
    derived = derive_formats(probe)
    assert derived and prove_format(derived[0], probe).proven
    # and a registered generic format is never tried as a family
    generic = _guess("json blocks").name
    assert not any(e.format == generic for e in detect_format(hermes + " ").evidence)


@pytest.mark.parametrize(
    "name", ["json arguments as a string", "openai objects, arguments as a string"]
)
def test_arguments_in_a_json_string_are_the_schema_s_json_escaped(name: str) -> None:
    # the string's contents are the arguments' JSON as json.dumps writes it, escaped as
    # json.dumps escapes a string: quotes, backslashes, control characters, any other text
    fmt = FORMATS[_guess(name).name]
    turn = ToolTurn(_tools(), fmt.name, "required")
    city = 'Pa"ris\\ \n\t\x01 é ☃ \U0001f600'
    text = fmt.render_calls([("get_weather", {"city": city, "days": 3})])
    assert '\\"city\\": \\"Pa\\\\\\"ris\\\\\\\\ \\\\n\\\\t\\\\u0001 é' in text, text
    assert _takes(turn, text), text
    got = parse_turn(text, fmt, id_factory=sequential_call_id)
    assert _named(got) == [("get_weather", {"city": city, "days": 3})]
    # what the schema refuses, inside the string as outside: a string for the integer, a
    # missing required key, a key it does not declare; and the arguments as an object
    for bad in (
        {"city": "Paris", "days": "3"},
        {"city": "Paris"},
        {"city": "P", "days": 1, "x": 1},
    ):
        assert not _takes(turn, fmt.render_calls([("get_weather", bad)])), bad
    unquoted = text.replace(json.dumps(json.dumps({"city": city, "days": 3}, ensure_ascii=False),
                                       ensure_ascii=False),
                            json.dumps({"city": city, "days": 3}, ensure_ascii=False))  # fmt: skip
    assert unquoted != text and not _takes(turn, unquoted)
    # a needless escape is not json.dumps' text (the grammar writes canonical JSON)
    assert not _takes(turn, text.replace('Pa\\\\\\"ris', "Pa\\\\u0022ris"))


def test_escape_in_string_writes_what_json_dumps_writes() -> None:
    grammar = tm.Grammar.from_json_schema({"type": "array", "items": {"type": "string"}})
    quoted = escape_in_string(grammar)
    values = [[], ["a"], ['"\\/\b\f\n\r\t\x00\x1f\x7f', "é☃\U0001f600"], ["x", ""]]
    for v in values:
        m = tm.compile(quoted).matcher()
        text = json.dumps(v, ensure_ascii=False, separators=(",", ":"))  # the grammar's layout
        inner = json.dumps(text, ensure_ascii=False)[1:-1]
        assert m.accept_bytes(inner.encode("utf-8")) and m.is_accepting(), inner
        # the text unescaped is refused where escaping changes it
        raw = tm.compile(quoted).matcher()
        taken = raw.accept_bytes(text.encode("utf-8")) and raw.is_accepting()
        assert taken == (inner == text), text


@pytest.mark.parametrize(
    "name", [n for n in sorted(TEMPLATES) if n.startswith("reasoning opened by the prompt")]
)
def test_a_reasoning_channel_the_generation_prompt_opens(name: str) -> None:
    # the prompt ends with <reason>: the reply starts inside the channel, closes it, then
    # calls or answers; the channel's close is the marker after the reasoning text (or, where
    # the history drops reasoning, the paired close tag the template's own text cuts at)
    guess = _guess(name)
    fmt = FORMATS[guess.name]
    assert guess.probe is not None
    assert (fmt.reasoning.start, fmt.reasoning.end) == ("<reason>", "</reason>")
    assert fmt.prompt_opens_reasoning(guess.probe.prompt)
    call = fmt.render_calls([("get_weather", {"city": "Paris", "days": 3})])
    thought = "I should look it up.\n</reason>\n\n"
    prose = thought + "It will be sunny, I think."
    for mode, texts in (("required", [thought + call]), ("auto", [thought + call, prose])):
        turn = ToolTurn(_tools(), fmt.name, mode, reasoning_open=True)
        for text in texts:
            assert _takes(turn, text), (mode, text)
        # the channel must be closed before a call: a call inside it is reasoning text
        assert not _takes(turn, call), (mode, call)
    got = parse_turn(thought + call, fmt, reasoning_open=True, id_factory=sequential_call_id)
    assert _named(got) == [("get_weather", {"city": "Paris", "days": 3})]
    assert (got.reasoning, got.content.strip()) == ("I should look it up.", "")
    assert _streamed(guess.name, thought + call, True, 3) == got
    # prose is not a call: it stays the content, the reasoning read apart
    said = parse_turn(prose, fmt, reasoning_open=True, id_factory=sequential_call_id)
    assert (said.calls, said.content.strip()) == ((), "It will be sunny, I think.")
    assert said.reasoning == "I should look it up."
    # a prompt that leaves the channel closed (the history's assistant header) reads the
    # call with no reasoning
    header = ToolTurn(_tools(), fmt.name, "required", reasoning_open=False)
    assert _takes(header, call)


def test_a_prompt_opener_without_a_close_in_sight_derives_no_channel() -> None:
    # the history drops reasoning and the template never writes the close tag: nothing shows
    # where the channel ends, so the derived format has no reasoning channel
    text = TEMPLATES["reasoning opened by the prompt, dropped from the history"][0]
    text = text.replace("(m.content or '').split('</reason>')[-1]", "m.content")
    assert "</reason>" not in text
    fmt = FORMATS[detect_format(text).name]
    assert is_generic(fmt.name) and (fmt.reasoning.start, fmt.reasoning.end) == ("", "")


def test_constant_keys_and_counter_ids_are_told_apart() -> None:
    # "kind" is the same text in every call: a constant the grammar writes; "id" counts the
    # calls: "call_" then any number (a counter over the conversation passes the message's)
    fmt = FORMATS[_guess("json constant key, counter ids").name]
    codec = fmt.codec
    assert isinstance(codec, JsonCalls)
    assert (codec.constants, codec.id_shape, codec.id_prefix) == (
        (("kind", "tool_use"),),
        "counter",
        "call_",
    )
    turn = ToolTurn(_tools(), fmt.name, "required")
    text = fmt.render_calls([("get_weather", {"city": "Paris", "days": 3})])
    assert '"kind": "tool_use", "id": "call_0"' in text and _takes(turn, text), text
    assert _takes(turn, text.replace('"call_0"', '"call_17"'))
    for bad in ('"call_x"', '"id_0"', '""'):
        assert not _takes(turn, text.replace('"call_0"', bad)), bad
    assert not _takes(turn, text.replace('"tool_use"', '"tool_result"'))
    got = parse_turn(text.replace('"call_0"', '"call_17"'), fmt)
    assert [(c.id, c.name) for c in got.calls] == [("call_17", "get_weather")]
    # an integer index: bare digits, not a string
    listed = FORMATS[_guess("json index ids in a list").name]
    assert isinstance(listed.codec, JsonCalls) and listed.codec.id_shape == "index"
    turn = ToolTurn(_tools(), listed.name, "required")
    text = listed.render_calls([("get_time", {"city": "Oslo"}), ("get_time", {"city": "Rome"})])
    assert '"index": 1, "tool": "get_time"' in text and _takes(turn, text), text
    assert not _takes(turn, text.replace('"index": 1', '"index": "1"'))


def test_a_key_that_neither_stays_nor_counts_derives_nothing() -> None:
    # a key whose text changes from call to call without counting them (the call's name
    # again, in upper case) is neither a constant nor an id: no JSON format is derived
    shout = _chat(
        "{{ '<<call>>' + ({'tag': c.function.name | upper, 'name': c.function.name, "
        "'arguments': c.function.arguments} | tojson) + '<</call>>' }}",
        "\n",
    )
    probe = probe_template(TemplateRenderer(shout))
    assert not any(isinstance(f.codec, JsonCalls) for f in derive_formats(probe))


@pytest.mark.parametrize(
    "name",
    [
        "json blocks, a rule between",
        "python blocks, a word between",
        "invoke blocks, a rule between",
        "function blocks, a word between",
    ],
)
def test_text_between_blocks_separates_calls_and_nothing_else(name: str) -> None:
    # the closer, the text between and the opener again separate two calls; the same text
    # followed by prose is no call: one call, the rest content
    fmt = FORMATS[_guess(name).name]
    sep = fmt.layout.separator_text.strip()  # the whitespace around it is the block's
    assert sep not in ("", fmt.block.close, fmt.block.open), sep
    assert sep.startswith(fmt.block.close) and sep.endswith(fmt.block.open)
    one = fmt.render_calls([("get_time", {"city": "Oslo"})])
    sep_text = sep[len(fmt.block.close) : len(sep) - len(fmt.block.open)]
    text = one + sep_text + "and that is all."
    got = parse_turn(text, fmt, id_factory=sequential_call_id)
    assert _named(got) == [("get_time", {"city": "Oslo"})] and not got.malformed, got
    assert got.content.strip() == (sep_text + "and that is all.").strip()
    assert _streamed(fmt.name, text, False, 2) == got


def test_function_tags_keep_the_template_s_tag_names() -> None:
    fmt = FORMATS[_guess("tool and arg tags").name]
    codec = fmt.codec
    assert isinstance(codec, FunctionParams) and (codec.function, codec.param) == ("tool", "arg")
    turn = ToolTurn(_tools(), fmt.name, "required")
    text = fmt.render_calls([("get_time", {"city": "Oslo"})])
    assert "<tool=get_time>\n<arg=city>\nOslo\n</arg>\n</tool>" in text, text
    assert _takes(turn, text)
    # Qwen3-Coder's own tag names are another notation here
    qwen = text.replace("<tool=", "<function=").replace("</tool>", "</function>")
    assert not _takes(turn, qwen.replace("<arg=", "<parameter=").replace("</arg>", "</parameter>"))
    # tag text inside a value stays the value's
    tricky = fmt.render_calls([("get_time", {"city": "a </arg> b"})])
    got = parse_turn(tricky, fmt, id_factory=sequential_call_id)
    assert _named(got) == [("get_time", {"city": "a </arg> b"})], got


#: the templates whose calls of one block have text between them (a separator, or the closer
#: and the opener of blocks inside a list wrapper) in the invoke and function notations
_SEPARATED_TAGS = [
    "invoke tags, a rule between",
    "function tags, a comma between",
    "function tags, a text line between",
    "function tags tight, a bar between",
    "invoke blocks in a list",
    "function blocks in a list",
    "invoke tags, the close starts with the separator",
    "function tags, the close starts with the separator",
    "function tags holding compact json, in a block",
    "key lines in a block, a rule between",
    "json objects after counter ids, in a list",
]


@pytest.mark.parametrize("name", _SEPARATED_TAGS)
def test_tags_with_text_between_two_calls(name: str) -> None:
    # the calls of one block, the template's text between two: the grammar writes exactly
    # that text (not another, not none), the parser reads it, and three calls round-trip
    fmt = FORMATS[_guess(name).name]
    lay = fmt.layout
    assert lay.separator and not lay.list_calls and lay.separator == lay.separator_text.strip()
    calls = [
        ("get_weather", {"city": "Paris", "days": 3}),
        ("get_time", {"city": "Tokyo"}),
        ("get_time", {"city": "Oslo"}),
    ]
    text = fmt.render_calls(calls)
    assert text.count(lay.separator_text) == 2 and text.startswith(fmt.block.open), text
    got = parse_turn(text, fmt, id_factory=sequential_call_id)
    assert _named(got) == calls and (got.content, got.malformed) == ("", ())
    for size in (1, 3, 7):
        assert _streamed(fmt.name, text, False, size) == got
    for mode in ("required", "auto"):
        turn = ToolTurn(_tools(), fmt.name, mode)
        assert _takes(turn, text), (mode, text)
        assert not _takes(turn, text.replace(lay.separator_text, "\n"))  # the text left out
        assert not _takes(turn, text.replace(lay.separator_text, "\n;;\n"))  # another text
    single = ToolTurn(_tools(), fmt.name, "required", parallel_tool_calls=False)
    assert _takes(single, fmt.render_calls(calls[:1])) and not _takes(single, text)


@pytest.mark.parametrize("name", _SEPARATED_TAGS)
def test_a_cut_separator_is_held_and_a_bad_one_is_content(name: str) -> None:
    fmt = FORMATS[_guess(name).name]
    sep = fmt.layout.separator
    calls = [("get_time", {"city": "Tokyo"}), ("get_time", {"city": "Oslo"})]
    text = fmt.render_calls(calls)
    cut = text[: text.index(sep) + len(sep) - 1]  # the reply stops inside the separator
    # streamed, the text from the block's opener is held: no content, no call yet
    sp = StreamParser(fmt, id_factory=sequential_call_id)
    deltas = [d for i in range(0, len(cut), 2) for d in sp.feed(cut[i : i + 2])]
    assert deltas == [], deltas
    # and the rest of the reply completes it
    rest = [d for d in sp.feed(text[len(cut) :]) + sp.finish()]
    assert [d.name for d in rest if d.name] == ["get_time", "get_time"]
    assert not any(d.content for d in rest) and _named(sp.result) == calls
    # a reply that ends inside the separator, or right after it, is a cut block: kept in the
    # content, no call (a separator of one character cut is a function the reply ends with)
    whole = text[: text.index(sep) + len(sep)]
    for end in (cut, whole) if len(sep) > 1 else (whole,):
        got = parse_turn(end, fmt, id_factory=sequential_call_id)
        assert got.calls == () and got.malformed and got.content == end, end
        assert _streamed(fmt.name, end, False, 3) == got
    # the separator followed by anything but a call: malformed, kept in the content
    bad = whole + "\nnothing more" + fmt.block.close
    got = parse_turn(bad, fmt, id_factory=sequential_call_id)
    assert got.calls == () and got.malformed and got.content == bad


@pytest.mark.parametrize("name", _SEPARATED_TAGS)
def test_prose_with_the_separator_or_the_tags_is_no_call(name: str) -> None:
    # the block's opener starts a call; the separator's text and the call tags without it
    # are prose, in the grammar (auto) and in the parser
    fmt = FORMATS[_guess(name).name]
    inner = fmt.render_calls([("get_time", {"city": "Oslo"})])[len(fmt.block.open) :]
    prose = f"Sure {fmt.layout.separator} here is how a call looks: {inner}"
    assert fmt.block.open not in prose
    got = parse_turn(prose, fmt, id_factory=sequential_call_id)
    assert (got.calls, got.malformed, got.content) == ((), (), prose)
    assert _streamed(fmt.name, prose, False, 3) == got
    assert _takes(ToolTurn(_tools(), fmt.name, "auto"), prose)
    assert not _takes(ToolTurn(_tools(), fmt.name, "required"), prose)


@pytest.mark.parametrize("call", [_INVOKE, _FN], ids=["invoke", "function"])
def test_tags_one_call_a_turn(call: str) -> None:
    # a template that renders only the first call: one call a turn, in the block's markers
    text = _chat("{% if loop.first %}" + call + "{% endif %}", "", "{{ '<calls>\\n' }}",
                 "{{ '</calls>' }}")  # fmt: skip
    guess = detect_format(text)
    assert is_generic(guess.name) and guess.probe is not None, guess.warning
    fmt = FORMATS[guess.name]
    assert not fmt.layout.parallel_calls
    one = next(c for c in guess.probe.cases if c.name == "one")
    assert fmt.render_calls(list(one.calls)) == one.text
    for parallel in (True, False):
        turn = ToolTurn(_tools(), fmt.name, "required", parallel_tool_calls=parallel)
        assert _takes(turn, one.text)
        assert not _takes(turn, one.text + one.text)  # never a second block
    got = parse_turn(one.text, fmt, id_factory=sequential_call_id)
    assert _named(got) == list(one.calls) and got.content == ""


@pytest.mark.parametrize(
    ("name", "call", "other"),
    [
        (
            "function tags on one line",
            "<function=get_weather><parameter=city>Oslo</parameter><parameter=days>2</parameter>"
            "</function>",
            "<function=get_weather>\n<parameter=city>Oslo</parameter>\n<parameter=days>2"
            "</parameter>\n</function>",
        ),
        (
            "function tags without a newline after the tag",
            "<function=get_weather><parameter=city>\nOslo\n</parameter><parameter=days>\n2\n"
            "</parameter></function>",
            "<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n<parameter=days>\n2\n"
            "</parameter>\n</function>",
        ),
        (
            "invoke tags, values on their own lines",
            '<call name="get_weather">\n<arg name="city">\nOslo\n</arg>\n<arg name="days">\n2\n'
            "</arg>\n</call>",
            '<call name="get_weather">\n<arg name="city">Oslo</arg>\n<arg name="days">2</arg>\n'
            "</call>",
        ),
    ],
)
def test_the_whitespace_around_tags_and_values_is_the_template_s(
    name: str, call: str, other: str
) -> None:
    # the grammar writes the template's whitespace after the function's tag, between the
    # parameters and around each value, and no other; the reader takes the layout's newlines
    # off a value and keeps the value's own
    fmt = FORMATS[_guess(name).name]
    text = fmt.render_calls([("get_weather", {"city": "Oslo", "days": 2})])
    assert call in text, text
    turn = ToolTurn(_tools(), fmt.name, "required")
    assert _takes(turn, text) and not _takes(turn, text.replace(call, other))
    got = parse_turn(text, fmt, id_factory=sequential_call_id)
    assert _named(got) == [("get_weather", {"city": "Oslo", "days": 2})]
    for city in ("two\nlines", "\nOslo", "Oslo\n") if "own lines" in name else ("a\nb",):
        text = fmt.render_calls([("get_time", {"city": city})])
        assert _takes(turn, text), text
        got = parse_turn(text, fmt, id_factory=sequential_call_id)
        assert _named(got) == [("get_time", {"city": city})], text
        assert _streamed(fmt.name, text, False, 3) == got


def test_a_key_that_counts_the_calls_beside_the_id() -> None:
    # "index" counts the calls of the message next to the id the client gave: the grammar
    # writes any index there (an integer), the renderer the call's, the reader the id
    fmt = FORMATS[_guess("openai objects with an index").name]
    codec = fmt.codec
    assert isinstance(codec, JsonCalls)
    assert (codec.id_shape, codec.counts) == ("string", (("index", "index", ""),))
    assert "index counting the calls" in _guess("openai objects with an index").warning
    calls = [("get_time", {"city": c}) for c in ("Oslo", "Rome", "Lima")]
    text = fmt.render_calls(calls)
    assert all(f'"index": {i}}}' in text for i in range(3)), text
    turn = ToolTurn(_tools(), fmt.name, "required")
    assert _takes(turn, text) and _takes(turn, text.replace('"index": 2', '"index": 12'))
    for bad in ('"index": "2"', '"index": -2', '"index": x'):
        assert not _takes(turn, text.replace('"index": 2', bad)), bad
    got = parse_turn(text, fmt)
    assert [(c.id, c.name) for c in got.calls] == [(f"call_{i}", "get_time") for i in range(3)]


def test_a_constant_in_the_function_object() -> None:
    fmt = FORMATS[_guess("openai objects, a constant in the function object").name]
    codec = fmt.codec
    assert isinstance(codec, JsonCalls) and codec.args_string
    assert codec.function_keys == (("name", "name"), ("arguments", "args"), ("kind", "const"))
    assert codec.constants == (("kind", "call"),)
    text = fmt.render_calls([("get_time", {"city": "Oslo"})])
    assert '"arguments": "{\\"city\\": \\"Oslo\\"}", "kind": "call"}}' in text, text
    turn = ToolTurn(_tools(), fmt.name, "required")
    assert _takes(turn, text) and not _takes(turn, text.replace('"call"}', '"cell"}'))
    assert not _takes(turn, text.replace(', "kind": "call"}', "}"))


def test_objects_that_are_not_exactly_a_call() -> None:
    args = {"city": "Paris", "days": 3}
    schema = PROBE_TOOLS[0]["function"]["parameters"]
    # a tool's definition (no arguments), a call with a schema beside its arguments, the id
    # in both objects, a nested object of its own in the function object, a list or an
    # object beside the call (no JSON scalar), a key whose text holds the call's id: no call
    for obj in (
        {"type": "function", "function": {"name": "get_weather", "description": "d",
                                          "parameters": schema}},
        {"type": "function", "function": {"name": "get_weather", "arguments": args,
                                          "parameters": schema}},
        {"id": "c1", "function": {"name": "get_weather", "arguments": args, "id": "c1"}},
        {"function": {"call": {"name": "get_weather", "arguments": args}}},
        {"name": "get_weather", "arguments": args, "tags": ["a"]},
        {"name": "get_weather", "arguments": args, "meta": {"v": 1}},
        {"name": "get_weather", "arguments": args, "ref": "ref-c1"},
    ):  # fmt: skip
        assert call_shape(obj, "get_weather", args, "c1") is None, obj
    # the id in the function object alone is the id; a boolean, a number, null beside the
    # call are kept for the message's calls to settle
    shape = call_shape({"function": {"name": "get_weather", "arguments": args, "id": "c1"}},
                   "get_weather", args, "c1")  # fmt: skip
    assert shape is not None and ("id", "id") in shape.function_keys
    flagged = {"name": "get_weather", "arguments": args, "strict": True, "v": 1, "x": None}
    shape = call_shape(flagged, "get_weather", args, "c1")
    assert shape is not None and shape.others == (("strict", True), ("v", 1), ("x", None))
    # a string key in both the call object and the function object: not told apart
    both = {"kind": "a", "function": {"name": "get_weather", "arguments": args, "kind": "b"}}
    shape = call_shape(both, "get_weather", args, "c1")
    assert shape is not None and _settle([shape]) is None
    # the same key in the function object alone is a constant
    inner = {"function": {"name": "get_weather", "arguments": args, "kind": "b"}}
    shape = call_shape(inner, "get_weather", args, "c1")
    assert shape is not None
    settled = _settle([shape])
    assert settled is not None and settled.constants == (("kind", "b"),)


@pytest.mark.parametrize(
    "call",
    [
        # after the call, not before it
        "{{ '<<call>>' + " + _OBJECT + " + '<</call id=\"' + c.id + '\">>' }}",
        # before the call and inside it: two ids
        "{{ '<<call id=\"' + c.id + '\">>' + ({'id': c.id, 'name': c.function.name, "
        "'arguments': c.function.arguments} | tojson) + '<</call>>' }}",
        # the first call's id in the block's opener (not one before each call)
        "{% if loop.first %}{{ '<<calls id=\"' + c.id + '\">>' }}{% endif %}{{ "
        + _OBJECT
        + " }}{% if loop.last %}{{ '<</calls>>' }}{% endif %}",
        # before Python calls and invoke tags: no notation of them takes an id before it
        "{{ '<<call id=\"' + c.id + '\">>' }}" + _PY + "{{ '<</call>>' }}",
        "{{ '<<call id=\"' + c.id + '\">>\\n' }}" + _INVOKE + "{{ '<</call>>' }}",
    ],
    ids=["after", "twice", "in the opener", "python", "invoke"],
)
def test_a_call_id_in_the_text_around_the_calls_derives_nothing(call: str) -> None:
    # a call's id in the text around the calls, other than right before each call: that
    # text is no marker (the id is the call's), so no format is derived from it
    text = _chat(call, "\n")
    guess = detect_format(text)
    assert (guess.name, guess.confident) == (FALLBACK, False), guess.warning
    probe = probe_template(TemplateRenderer(text))
    assert derive_formats(probe) == []


@pytest.mark.parametrize(
    "call",
    [
        "{{ '<<CALL ' + c.function.name | upper + '>>' + " + _OBJECT + " + '<</call>>' }}",
        "{{ '<tool=' + c.function.name + '>' + (c.function.arguments | tojson) + '</tool:' "
        "+ c.function.name + '>' }}",
        "{{ '<<call about=\"' + (c.function.arguments.city | lower) + '\">>' + "
        + _OBJECT
        + " + '<</call>>' }}",
    ],
    ids=["upper case in the opener", "in the close", "a value in the opener"],
)
def test_a_call_s_name_in_the_text_around_the_calls_derives_nothing(call: str) -> None:
    # the template echoes the call's name or a value around it: that text changes from
    # call to call, so it is no marker
    probe = probe_template(TemplateRenderer(_chat(call, "\n")))
    assert probe.renders_calls and derive_formats(probe) == []


@pytest.mark.parametrize(
    "name",
    [
        "function tags on one line",
        "function tags without a newline after the tag",
        "invoke tags, values on their own lines",
        "invoke blocks, values on their own lines",
        "openai objects with an index",
        "openai objects, a constant in the function object",
        "json function and parameters keys",
        "json tool and input keys in a list",
        "json call in a wrapper key",
        "json constants that are not strings",
        "json objects after their ids",
        "json objects after counter ids, in a list",
        "json objects after bare ids, one a line",
        "function tags holding json",
        "name attribute tags holding json, an id before",
        "key lines",
    ],
)
def test_prose_that_shows_a_call_without_the_opener_is_no_call(name: str) -> None:
    fmt = FORMATS[_guess(name).name]
    inner = fmt.render_calls([("get_time", {"city": "Oslo"})])[len(fmt.block.open) :]
    prose = f"A call looks like this: {inner} and that is all."
    assert fmt.block.open not in prose
    got = parse_turn(prose, fmt, id_factory=sequential_call_id)
    assert (got.calls, got.malformed, got.content) == ((), (), prose)
    assert _streamed(fmt.name, prose, False, 3) == got
    assert _takes(ToolTurn(_tools(), fmt.name, "auto"), prose)
    assert not _takes(ToolTurn(_tools(), fmt.name, "required"), prose)


def test_constants_that_are_not_strings_are_written_exactly() -> None:
    # a number, a boolean, null: the same JSON value in every call, type included
    fmt = FORMATS[_guess("json constants that are not strings").name]
    codec = fmt.codec
    assert isinstance(codec, JsonCalls)
    assert codec.constants == (("version", 1), ("strict", True), ("extra", None), ("weight", 0.5))
    assert (
        "version 1, strict true, extra null, weight 0.5"
        in _guess("json constants that are not strings").warning
    )
    text = fmt.render_calls([("get_time", {"city": "Oslo"})])
    assert '"version": 1, "strict": true, "extra": null, "weight": 0.5}' in text, text
    turn = ToolTurn(_tools(), fmt.name, "required")
    assert _takes(turn, text)
    for old, new in (
        ('"version": 1', '"version": 2'),
        ('"version": 1', '"version": "1"'),
        ('"version": 1', '"version": 1.0'),
        ('"strict": true', '"strict": false'),
        ('"strict": true', '"strict": 1'),
        ('"extra": null', '"extra": "null"'),
        ('"weight": 0.5', '"weight": 0.50'),
    ):
        assert not _takes(turn, text.replace(old, new)), new
    # values that agree only up to their type are no constant
    assert _same([1, 1]) and not _same([1, True]) and not _same([1, 1.0]) and not _same([0, None])


@pytest.mark.parametrize(
    "name", ["json objects after their ids", "name attribute tags holding json, an id before"]
)
def test_an_id_before_each_call_is_generated_and_read(name: str) -> None:
    # the id the client gave, written before the call: the grammar writes any id of 1 to 64
    # token characters there, the parser reads it as the call's id
    fmt = FORMATS[_guess(name).name]
    codec = fmt.codec
    assert isinstance(codec, TaggedJson) and codec.id_shape == "token"
    calls = [("get_time", {"city": "Oslo"}), ("get_time", {"city": "Rome"})]
    text = fmt.render_calls(calls)
    assert text.count("call_1") == 1 and fmt.block.open + "call_0" in text, text
    turn = ToolTurn(_tools(), fmt.name, "required")
    for cid in ("call_17", "toolu_01A-bC", "x" * 64):
        other = text.replace("call_1", cid)
        assert _takes(turn, other), other
        got = parse_turn(other, fmt)
        assert [c.id for c in got.calls] == ["call_0", cid] and _named(got) == calls
        assert _streamed(fmt.name, other, False, 3) == parse_turn(
            other, fmt, id_factory=sequential_call_id
        )
    for bad in ("", "call 1", 'call"1', "call.1", "x" * 65):
        other = text.replace("call_1", bad)
        assert not _takes(turn, other), bad
        got = parse_turn(other, fmt)  # the first call, the second block malformed
        assert _named(got) == calls[:1] and got.malformed, bad


def test_ids_that_count_the_calls_before_each() -> None:
    # "call_" and the call's index from 0, in a list of blocks: any number in the grammar,
    # the call's index in the renderer, the text read as the id
    fmt = FORMATS[_guess("json objects after counter ids, in a list").name]
    codec = fmt.codec
    assert isinstance(codec, TaggedJson)
    assert (codec.id_shape, codec.id_prefix, codec.id_base) == ("counter", "call_", 0)
    calls = [("get_time", {"city": c}) for c in ("Oslo", "Rome", "Lima")]
    text = fmt.render_calls(calls)
    assert all(f'<call id="call_{i}">' in text for i in range(3)), text
    turn = ToolTurn(_tools(), fmt.name, "required")
    assert _takes(turn, text) and _takes(turn, text.replace('"call_2"', '"call_12"'))
    for bad in ('"call_x"', '"id_2"', '"call_"', '"call_1234567"', '"2"'):
        assert not _takes(turn, text.replace('"call_2"', bad)), bad
    got = parse_turn(text.replace('"call_2"', '"call_12"'), fmt)
    assert [c.id for c in got.calls] == ["call_0", "call_1", "call_12"] and _named(got) == calls
    # an index from 1, written bare
    fmt = FORMATS[_guess("json objects after indexes from 1").name]
    codec = fmt.codec
    assert isinstance(codec, TaggedJson)
    assert (codec.id_shape, codec.id_prefix, codec.id_base) == ("index", "", 1)
    assert "'' and the index from 1" in _guess("json objects after indexes from 1").warning
    text = fmt.render_calls(calls)
    assert all(f"<call n={i + 1}>" in text for i in range(3)), text
    turn = ToolTurn(_tools(), fmt.name, "required")
    assert _takes(turn, text) and _takes(turn, text.replace("n=3", "n=42"))
    for bad in ("n=x", "n=-3", 'n="3"', "n=", "n= 3"):
        assert not _takes(turn, text.replace("n=3", bad)), bad
    got = parse_turn(text.replace("n=3", "n=42"), fmt)
    assert [c.id for c in got.calls] == ["1", "2", "42"] and _named(got) == calls


def test_the_id_in_the_function_object_is_the_call_s() -> None:
    fmt = FORMATS[_guess("openai objects, the id in the function object").name]
    codec = fmt.codec
    assert isinstance(codec, JsonCalls) and codec.id_shape == "string"
    assert codec.call_keys == (("type", "type"), ("function", "function"))
    assert codec.function_keys == (("id", "id"), ("name", "name"), ("arguments", "args"))
    text = fmt.render_calls([("get_time", {"city": "Oslo"})])
    assert '{"type": "function", "function": {"id": "call_0", "name": "get_time"' in text, text
    turn = ToolTurn(_tools(), fmt.name, "required")
    assert _takes(turn, text.replace('"call_0"', '"abc 1"'))
    assert [c.id for c in parse_turn(text.replace('"call_0"', '"abc 1"'), fmt).calls] == ["abc 1"]
    # the id in the call object instead is another shape
    moved = text.replace('{"type": "function", "function": {"id": "call_0", ',
                         '{"id": "call_0", "type": "function", "function": {')  # fmt: skip
    assert moved != text and not _takes(turn, moved)


def test_tags_holding_json_arguments() -> None:
    fmt = FORMATS[_guess("function tags holding json").name]
    codec = fmt.codec
    assert isinstance(codec, TaggedJson) and (codec.mid, codec.call_object) == (">", None)
    assert (fmt.block.open, fmt.block.close) == ("<tool=", "</tool>")
    text = fmt.render_calls([("get_weather", {"city": "Oslo", "days": 2})])
    assert text == '<tool=get_weather>{"city": "Oslo", "days": 2}</tool>', text
    turn = ToolTurn(_tools(), fmt.name, "required")
    assert _takes(turn, text)
    for bad in (
        text.replace(">{", " >{"),
        text.replace(">{", ">\n{"),
        text.replace('"days": 2', '"days": "2"'),
        text.replace('"days": 2', '"days": 2, "x": 1'),
        text.replace("get_weather", "get_weather_2"),
    ):
        assert not _takes(turn, bad), bad
    # a close tag inside a string value stays the value's
    tricky = fmt.render_calls([("get_time", {"city": "a</tool><tool=b>{}"})])
    assert _takes(turn, tricky)
    got = parse_turn(tricky, fmt, id_factory=sequential_call_id)
    assert _named(got) == [("get_time", {"city": "a</tool><tool=b>{}"})] and got.content == ""
    assert _streamed(fmt.name, tricky, False, 2) == got
    # compact JSON where the template writes it so, spaced JSON refused
    compact = FORMATS[_guess("function tags holding compact json, in a block").name]
    assert compact.values.whitespace == "compact"
    text = compact.render_calls([("get_time", {"city": "Oslo"})])
    assert '<function=get_time>\n{"city":"Oslo"}\n</function>' in text, text
    turn = ToolTurn(_tools(), compact.name, "required")
    assert _takes(turn, text) and not _takes(turn, text.replace('{"city":', '{"city": '))


def test_key_lines_hold_the_name_and_the_json_arguments() -> None:
    fmt = FORMATS[_guess("key lines").name]
    codec = fmt.codec
    assert isinstance(codec, TaggedJson) and codec.mid == "\narguments: "
    text = fmt.render_calls([("get_weather", {"city": "Oslo", "days": 2})])
    assert text == '<<call>>\nname: get_weather\narguments: {"city": "Oslo", "days": 2}\n<</call>>'
    turn = ToolTurn(_tools(), fmt.name, "required")
    assert _takes(turn, text)
    for bad in (
        text.replace("name: get_weather", 'name: "get_weather"'),
        text.replace("name: get_weather", "Name: get_weather"),
        text.replace(
            'arguments: {"city": "Oslo", "days": 2}', "arguments:\n  city: Oslo\n  days: 2"
        ),
        text.replace('{"city": "Oslo", "days": 2}', "{city: Oslo, days: 2}"),
    ):
        assert not _takes(turn, bad), bad
        assert parse_turn(bad, fmt).calls == (), bad
    got = parse_turn(text, fmt, id_factory=sequential_call_id)
    assert _named(got) == [("get_weather", {"city": "Oslo", "days": 2})]
    # the arguments over the lines tojson(indent=2) writes, the id on a line of its own
    fmt = FORMATS[_guess("key lines, the arguments indented, an id line").name]
    codec = fmt.codec
    assert isinstance(codec, TaggedJson) and (codec.indent, codec.id_shape) == (2, "token")
    text = fmt.render_calls([("get_weather", {"city": "Oslo", "days": 2})])
    assert '\nid: call_0\nname: get_weather\narguments: {\n  "city": "Oslo",\n' in text, text
    turn = ToolTurn(_tools(), fmt.name, "required")
    assert _takes(turn, text)
    assert not _takes(
        turn, text.replace('{\n  "city": "Oslo",\n  "days": 2\n}', '{"city": "Oslo", "days": 2}')
    )
    got = parse_turn(text.replace("call_0", "abc"), fmt)
    assert [(c.id, c.name) for c in got.calls] == [("abc", "get_weather")]


def test_key_lines_with_yaml_arguments_derive_nothing() -> None:
    # the arguments as YAML lines: a string "3" and the integer 3 are written alike, and how
    # a string that needs quoting is written the probe cannot show; so no notation reads the
    # arguments back exactly, and detection falls back
    yaml = (
        "{{ '<<call>>\\nname: ' + c.function.name + '\\narguments:' }}"
        "{% for k, v in c.function.arguments.items() %}{{ '\\n  ' + k + ': ' + (v | string) }}"
        "{% endfor %}{{ '\\n<</call>>' }}"
    )
    guess = detect_format(_chat(yaml, "\n"))
    assert (guess.name, guess.confident) == (FALLBACK, False), guess.warning
    assert guess.probe is not None and derive_formats(guess.probe) == []


def test_calls_back_to_back_need_a_close_told_from_a_call() -> None:
    # ids before calls one a line: a close that starts like an id ("end_calls") cannot be
    # told from the next call's id, so no format is derived; "</calls>" can
    template = TEMPLATES["json objects after bare ids, one a line"][0]
    fmt = FORMATS[detect_format(template).name]
    assert fmt.layout.list_calls and fmt.block.close == "</calls>"
    ending = template.replace("\\n</calls>", "\\nend_calls")
    assert ending != template
    probe = probe_template(TemplateRenderer(ending))
    assert probe.renders_calls and derive_formats(probe) == []


def test_a_family_reads_its_own_function_tags_first() -> None:
    # Functionary v3.1's calls (<function=NAME>{json}</function>, back to back): a generic
    # format derived from them proves itself too, but the family is detected
    text = _chat(
        "{{ '<function=' + c.function.name + '>' + (c.function.arguments | tojson) "
        "+ '</function>' }}",
        "",
    ).replace(
        "{% if m.reasoning_content %}{{ '<reason>' + m.reasoning_content + '</reason>\\n' }}"
        "{% endif %}",
        "",
    )
    guess = detect_format(text)
    assert guess.name == "functionary_v31" and not any(is_generic(e.format) for e in guess.evidence)
    probe = probe_template(TemplateRenderer(text))
    derived = derive_formats(probe)
    assert derived and isinstance(derived[0].codec, TaggedJson)
    assert prove_format(derived[0], probe).proven


def test_markers_that_number_the_calls_otherwise_derive_nothing() -> None:
    # the blocks are numbered from 11: no counter of the calls, and the second block's
    # number is no separator to write every time, so nothing is derived
    numbered = (
        "{{ '<call n=' ~ (loop.index + 10) ~ '>\\n<!-- note -->\\n' + "
        + _OBJECT
        + " + '</call>' }}"
    )
    probe = probe_template(TemplateRenderer(_chat(numbered, "\n")))
    assert probe.renders_calls and derive_formats(probe) == []
    # numbered from 1, the text up to the call however long: a counter
    counted = numbered.replace("(loop.index + 10)", "loop.index")
    fmt = FORMATS[detect_format(_chat(counted, "\n")).name]
    codec = fmt.codec
    assert isinstance(codec, TaggedJson) and (codec.id_shape, codec.id_base) == ("index", 1)
    assert codec.id_text == ">\n<!-- note -->\n"
