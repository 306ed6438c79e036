"""``functionary_v2``: MeetKai Functionary v2 (v2.2 to v2.4, Mistral base): the turn is
messages, each ``<|from|>assistant\n<|recipient|>RECIPIENT\n<|content|>`` and its content:
``all`` for text to the user, a function's name for a call (its JSON arguments), a newline
before each message after the first, text first::

    all\n<|content|>Let me check.\n<|from|>assistant\n<|recipient|>get_weather\n<|content|>{...}

The template's generation prompt ends with ``<|from|>assistant\n<|recipient|>``: the reply
starts with its first recipient. The turn ends with ``<|stop|>``. Reader and grammar:
:class:`~toolmask.tools.formats._recipient.RecipientMessages` (Functionary v3.2's, with these
headers). Its template reads the arguments as a JSON string (OpenAI's shape), and renders a
text message for a content of ``""``: the probe proves the format with a null content.
"""

from __future__ import annotations

from toolmask.tools.formats._recipient import RecipientMessages
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec

__all__ = ["SPEC"]

_FROM = "<|from|>assistant\n<|recipient|>"

SPEC = FormatSpec(
    "functionary_v2",
    RecipientMessages("\n" + _FROM, _FROM, "all\n<|content|>", "\n<|content|>"),
    BlockMarkers("\n" + _FROM, bare_start="{"),
    template_markers=("<s>", "</s>", "<|from|>", "<|recipient|>", "<|content|>", "<|stop|>"),
)
