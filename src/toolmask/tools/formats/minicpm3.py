"""``minicpm3``: OpenBMB MiniCPM3 (vLLM's ``examples/tool_chat_template_minicpm3.jinja``, the
``minicpm`` tool parser): Python calls one a line in a ```` ```python ```` fence between
``<|tool_call_start|>`` and ``<|tool_call_end|>``, every value written with ``tojson``, the
keyword arguments joined by a bare comma; the reasoning before, in ``<|thought_start|>`` …
``<|thought_end|>``, and the answer (or a question to the user) may follow the calls::

    <|thought_start|>
    The user wants the weather.
    <|thought_end|>
    <|tool_call_start|>
    ```python
    get_weather(city="Paris",days=3)
    get_time(zone="Europe/Paris")
    ```
    <|tool_call_end|>

The reader takes the calls with or without the fence; ``minicpm5`` is MiniCPM 5's XML calls.
"""

from __future__ import annotations

from toolmask.tools.formats._pythonic import PythonCalls
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Reasoning

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "minicpm3",
    PythonCalls(listed=False, notation="json", arg_sep=","),
    BlockMarkers("<|tool_call_start|>", "<|tool_call_end|>", after_open="\n", before_close="\n"),
    Layout(
        list_open="```python\n",
        list_close="\n```",
        separator="\n",
        separator_text="\n",
        prose_after_calls=True,
    ),
    Reasoning("<|thought_start|>", "<|thought_end|>"),
    template_markers=(
        "<|im_start|>",
        "<|im_end|>",
        "<|thought_start|>",
        "<|thought_end|>",
        "<|tool_call_start|>",
        "<|tool_call_end|>",
    ),
)
