"""``functionary_v32``: MeetKai Functionary v3.2 (Llama 3.1 base): the turn is messages, each
``>>>RECIPIENT\n`` and its content: ``all`` for text to the user, a function's name for a call
(its JSON arguments), back to back, text first::

    >>>all\nLet me check.>>>get_weather\n{"city": "Paris"}>>>get_time\n{"zone": "UTC"}

The template's generation prompt ends with ``>>>``: it opens the first message, so the reply
starts with its recipient (``get_weather\n{...}``, ``all\n...``). The grammar and the reader
take both, the first ``>>>`` written by the prompt or by the reply (a prompt of toolmask's own
renders none), so they need not know which prompt the reply continues. Its template reads the
arguments as a JSON string (OpenAI's shape, not transformers' dict).

Reader and grammar: :class:`~toolmask.tools.formats._recipient.RecipientMessages`. ``>>>``
overlaps itself: the turn grammar keeps the text before a ``>>>`` from ending with ``>``, so
the first ``>>>`` the reader finds is the one meant.
"""

from __future__ import annotations

from toolmask.tools.formats._recipient import RecipientMessages
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Values

__all__ = ["SPEC"]

_GT = ">>>"

SPEC = FormatSpec(
    "functionary_v32",
    RecipientMessages(_GT, _GT, "all\n", "\n"),
    BlockMarkers(_GT, bare_start="{", overlaps=True),
    values=Values(extra_layouts=("compact",)),
    template_markers=(
        "<|begin_of_text|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "<|eot_id|>",
        "<|eom_id|>",
        "<|python_tag|>",
    ),
)
