"""A cheaper ``__init__`` for frozen, slotted dataclasses (the grammar IR's nodes, the schema
compiler's terms and shapes: thousands are made per compiled schema).

``@dataclass(frozen=True, slots=True)`` writes an ``__init__`` that stores each field through
``object.__setattr__`` (a global, an attribute and a call per field, since the class's own
``__setattr__`` refuses). :func:`fast_init` replaces it by one with the same signature, the
same defaults (the same objects) and the same ``__post_init__`` call, that stores each field
through its slot's descriptor (one call per field, about half the cost): equality, hashing,
``repr``, ``dataclasses.replace`` and immutability are the dataclass's, unchanged.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, TypeVar

__all__ = ["fast_init"]

T = TypeVar("T")


def fast_init(cls: type[T]) -> type[T]:
    """Give the frozen, slotted dataclass ``cls`` an ``__init__`` that sets its slots through
    their descriptors (see the module docstring). ValueError for any other class, or for
    arguments this does not write (``InitVar``, keyword-only fields)."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise ValueError(f"{cls.__name__} is not a frozen, slotted dataclass")
    # the dataclass's own __init__ takes exactly the init fields (no InitVar)
    own = list(inspect.signature(cls.__init__).parameters)[1:]
    if own != [f.name for f in dataclasses.fields(cls) if f.init]:  # type: ignore[arg-type]
        raise ValueError(f"{cls.__name__}'s __init__ takes other arguments than its fields")
    ns: dict[str, Any] = {"_MISSING": dataclasses.MISSING}
    args: list[str] = []
    body: list[str] = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.kw_only:
            raise ValueError(f"{cls.__name__}.{f.name} is keyword-only")
        ns[f"_set_{f.name}"] = cls.__dict__[f.name].__set__  # the slot's member descriptor
        if f.default is not dataclasses.MISSING:
            ns[f"_dflt_{f.name}"] = f.default
            value = f"_dflt_{f.name}"
        elif f.default_factory is not dataclasses.MISSING:
            ns[f"_fact_{f.name}"] = f.default_factory
            value = f"_fact_{f.name}()"
        else:
            value = ""
        if f.init:
            if value and f.default_factory is not dataclasses.MISSING:
                args.append(f"{f.name}=_MISSING")
                body.append(f"if {f.name} is _MISSING: {f.name} = {value}")
            else:
                args.append(f"{f.name}={value}" if value else f.name)
            body.append(f"_set_{f.name}(self, {f.name})")
        elif value:
            body.append(f"_set_{f.name}(self, {value})")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    src = f"def __init__(self, {', '.join(args)}):\n    " + "\n    ".join(body or ["pass"])
    exec(src, ns)  # generated from the class's own fields, as dataclasses does
    init = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
