"""``hermes``: Qwen 2.5 / Qwen 3, Hermes 2 Pro / 3, SmolLM2/3 (ChatML templates).

One call per block, blocks joined by a newline::

    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call>

In Qwen vocabularies ``<tool_call>`` and ``</tool_call>`` are single special tokens.

Qwen2.5-Coder, asked by this template for ``<tool_call>`` tags, writes its call as a fenced JSON
block, the object pretty-printed (two-space indent, short arrays on one line)::

    ```json
    {
      "name": "calculate_density",
      "arguments": {
        "mass": 45,
        "volume": 15
      }
    }
    ```

That is a :class:`~toolmask.tools.formats.Habit` of the family: the grammar admits the fence
wherever a block may start (with whitespace between JSON tokens, as a pretty-printer writes it),
and the parser reads it as a call. The 0.5B also writes the call object bare, as the first thing
in its reply; a reply may start with a bare block (no marker), and prose may not start with
``{"name"``.
"""

from __future__ import annotations

from toolmask.tools.formats._chat import CHATML_TOOLS, qwen_tools
from toolmask.tools.formats._json import JsonEnvelope
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Habit, Prompt, Values

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "hermes",
    JsonEnvelope(),
    BlockMarkers(
        "<tool_call>",
        "</tool_call>",
        after_open="\n",
        before_close="\n",
        # Qwen2.5-Coder-0.5B also starts a reply with the call object itself, no marker around
        # it ({"name": "get_weather", "arguments": {...}}; toolmask serve, auto, greedy: see
        # tests/server/test_default_model.py): a bare block at the start of the reply
        bare_start='{"name"',
    ),
    template_markers=CHATML_TOOLS,
    prompt=Prompt(section=qwen_tools),
    habits=(
        Habit(
            "```json",
            "```",
            after_open="\n",
            before_close="\n",
            # a pretty-printer's layout: up to 12 whitespace bytes between JSON tokens covers
            # the envelope and four levels of indented arguments
            values=Values(whitespace="flexible", max_whitespace=12),
            evidence="Qwen2.5-Coder-0.5B and -1.5B-Instruct under tool_choice auto, unconstrained, "
            "on BFCL dev (bench/quality.py, toolmask-free): every call it wrote (2026-11-29)",
        ),
    ),
)
