"""fast_init: a frozen, slotted dataclass's constructor through its slots' descriptors."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from toolmask._frozen import fast_init

_DEFAULT = frozenset({1})


@fast_init
@dataclass(frozen=True, slots=True)
class _Point:
    x: int
    tags: frozenset[int] = _DEFAULT
    seen: list[int] = field(default_factory=list)
    _h: int = field(default=0, init=False, repr=False, compare=False)
    checked: bool = field(default=False, init=False, compare=False)

    def __post_init__(self) -> None:
        if self.x < 0:
            raise ValueError("x must be >= 0")
        object.__setattr__(self, "checked", True)


@dataclass(frozen=True, slots=True)
class _Plain:
    x: int
    tags: frozenset[int] = _DEFAULT
    seen: list[int] = field(default_factory=list)


def test_same_fields_defaults_and_post_init() -> None:
    p = _Point(3)
    assert (p.x, p.tags, p.seen, p._h, p.checked) == (3, _DEFAULT, [], 0, True)
    assert p.tags is _DEFAULT  # the default object itself, as dataclasses passes it
    assert _Point(3).seen is not p.seen  # a factory's value per instance
    assert _Point(x=4, tags=frozenset(), seen=[9]) == _Point(4, frozenset(), [9])
    assert repr(_Point(1)) == "_Point(x=1, tags=frozenset({1}), seen=[], checked=True)"
    assert dataclasses.replace(p, x=5) == _Point(5)
    with pytest.raises(ValueError, match="x must be"):
        _Point(-1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2  # type: ignore[misc]


def test_argument_errors_read_as_the_dataclass_ones() -> None:
    for cls in (_Point, _Plain):
        with pytest.raises(TypeError) as missing:
            cls()  # type: ignore[call-arg]
        with pytest.raises(TypeError) as extra:
            cls(1, _DEFAULT, [], 4)  # type: ignore[call-arg]
        name = cls.__qualname__
        assert str(missing.value).replace(name, "C") == (
            "C.__init__() missing 1 required positional argument: 'x'"
        )
        assert "takes from 2 to 4 positional arguments but 5 were given" in str(extra.value)


def test_refuses_other_classes() -> None:
    @dataclass
    class Mutable:
        x: int

    @dataclass(frozen=True)
    class NoSlots:
        x: int

    @dataclass(frozen=True, slots=True, kw_only=True)
    class KwOnly:
        x: int

    for cls in (Mutable, NoSlots, KwOnly, int):
        with pytest.raises(ValueError):
            fast_init(cls)
