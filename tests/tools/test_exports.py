"""``toolmask.tools`` exports a sorted ``__all__`` of names that exist."""

from __future__ import annotations

import toolmask.tools as tools


def test_all_sorted_and_importable() -> None:
    assert tools.__all__ == sorted(tools.__all__, key=lambda n: (not n.isupper(), n))
    for name in tools.__all__:
        assert getattr(tools, name) is not None
