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
``{"name"``. Where the turn forces a call (the fence is not admitted there), the model's next
choice is ``<tools>\n{...}\n</tools>`` (vLLM's Qwen2.5-Coder markers): a second habit, admitted
in forced turns too.
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
        # ... only where it names a tool: a reply that is a JSON object ({"name": "Alice", ...})
        # answers the user
        bare_named=True,
    ),
    template_markers=CHATML_TOOLS,
    prompt=Prompt(section=qwen_tools),
    habits=(
        # where a call is forced, the model's next choice after its fence (which a forced turn
        # does not admit) is <tools>: the markers vLLM's Qwen2.5-Coder template writes
        Habit(
            "<tools>",
            "</tools>",
            after_open="\n",
            before_close="\n",
            evidence="Qwen2.5-Coder-1.5B-Instruct under tool_choice required on BFCL dev: the "
            "distortion meter (bench/faithfulness.py --model qwen2.5-coder-1.5b) shows the mask "
            "removing its <tools> opener on 8 of 10 replies (2026-11-29)",
            forced=True,
        ),
        Habit(
            "```json",
            "```",
            after_open="\n",
            before_close="\n",
            # a pretty-printer's layout: up to 12 whitespace bytes between JSON tokens covers
            # the envelope and four levels of indented arguments
            values=Values(whitespace="flexible", max_whitespace=12),
            # the same fence holds any JSON it shows the user: a call only where it names a tool
            prose=True,
            evidence="Qwen2.5-Coder-0.5B and -1.5B-Instruct under tool_choice auto, unconstrained, "
            "on BFCL dev (bench/quality.py, toolmask-free): every call it wrote (2026-11-29)",
        ),
    ),
)
