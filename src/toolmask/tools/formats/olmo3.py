"""``olmo3``: AllenAI OLMo 3 (vLLM's ``examples/tool_chat_template_olmo3.jinja``, the
``olmo3`` tool parser): Python calls one a line in ``<function_calls>`` tags, a string argument
in single quotes, every other value as JSON (``true``, ``null``, ``[1, 2]``)::

    <function_calls>
    get_weather(city='Paris', days=3)
    get_time(zone='Europe/Paris')
    </function_calls>

The template writes a string between single quotes as it is, unescaped; the grammar writes
Python string literals (backslash escapes), which read back as the same string. The reader
also takes Python's ``True`` / ``False`` / ``None``.
"""

from __future__ import annotations

from toolmask.tools.formats._chat import CHATML_TOOLS
from toolmask.tools.formats._pythonic import PythonCalls
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "olmo3",
    PythonCalls(listed=False, notation="python_json"),
    BlockMarkers("<function_calls>", "</function_calls>", after_open="\n", before_close="\n"),
    Layout(separator="\n", separator_text="\n"),
    template_markers=(*CHATML_TOOLS[:3], "<function_calls>", "</function_calls>", "<functions>"),
)
