"""The ``plain`` mode: mask, renormalise and draw (or take the argmax of) each token; jump over
the text the grammar forces. One model call per sampled token. See ``docs/sampling.md``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolmask.decoding._loop import TokenLoop

if TYPE_CHECKING:
    from toolmask.decoding._engine import ModelEngine
    from toolmask.decoding._protocol import DecodeRequest
    from toolmask.decoding._result import Generation

__all__ = ["PlainDecoder"]


class PlainDecoder:
    """Token by token under the mask (:class:`~toolmask.decoding._loop.TokenLoop`). Ignores
    ``request.opening``: an ``auto`` turn is decoded as it is. Keeps nothing across
    requests."""

    def decode(self, engine: ModelEngine, request: DecodeRequest) -> Generation:
        return TokenLoop(engine, request).run()
