"""JSON Pointer (RFC 6901) text, the one place it is written.

``json_pointer(["properties", "a/b", 0])`` is ``"/properties/a~1b/0"``; the root is ``""``.
Used for the locations errors carry (``SchemaError.pointer``), the post-decode validator's
messages and the tool-call validator's instance and schema paths.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["escape_token", "fragment", "json_pointer"]


def escape_token(part: str | int) -> str:
    """One reference token: ``~`` becomes ``~0`` and ``/`` becomes ``~1`` (in that order)."""
    return str(part).replace("~", "~0").replace("/", "~1")


def json_pointer(parts: Iterable[str | int]) -> str:
    """The pointer to the value reached by ``parts`` (object keys, array indices)."""
    out = ""
    for p in parts:  # escape_token, inlined: the schema compiler writes one per subschema
        t = str(p)
        if "~" in t or "/" in t:
            t = t.replace("~", "~0").replace("/", "~1")
        out += "/" + t
    return out


def fragment(pointer: str) -> str:
    """A pointer as a URI fragment, how errors show it: ``#`` for the root, ``#/a`` below it."""
    return pointer if pointer.startswith("#") else "#" + pointer
