"""The public surface: everything in ``toolmask.__all__`` exists, once (ruff keeps it sorted)."""

from __future__ import annotations

import toolmask


def test_all_is_unique() -> None:
    assert len(toolmask.__all__) == len(set(toolmask.__all__))


def test_all_members_exist() -> None:
    for name in toolmask.__all__:
        assert hasattr(toolmask, name), name


def test_public_names_are_exported() -> None:
    public = {
        n
        for n in dir(toolmask)
        if not n.startswith("_")
        and n[0].isupper()
        and not isinstance(getattr(toolmask, n), type(toolmask))
    }
    assert public <= set(toolmask.__all__)
