"""Tool specs from OpenAI dicts, typed functions and Pydantic models; tool_choice parsing."""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, Any, Literal

import pytest

from toolmask.errors import ToolmaskError
from toolmask.schema import compile_json_schema
from toolmask.tools import Tool, ToolChoice, ToolError, ToolTurn

from .toolset import NAMES, OPENAI_TOOLS


def test_from_openai_round_trip() -> None:
    for spec in OPENAI_TOOLS:
        tool = Tool.from_openai(spec)
        again = Tool.from_openai(tool.to_openai())
        assert again == tool and hash(again) == hash(tool)


def test_from_openai_shapes() -> None:
    flat = Tool.from_openai({"type": "function", "name": "f", "parameters": {"type": "object"}})
    assert flat.parameters == {"type": "object"}
    bare = Tool.from_openai({"name": "g", "description": "d", "strict": True})
    assert bare.parameters["properties"] == {} and bare.strict and bare.description == "d"


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "function", "function": {"name": "has space"}},
        {"type": "function", "function": {"name": "x" * 65}},
        {"type": "function", "function": {"name": ""}},
        {"type": "function", "function": {}},
        {"type": "code_interpreter"},
        {"type": "function", "function": {"name": "f", "parameters": []}},
    ],
)
def test_from_openai_rejects(spec: dict[str, Any]) -> None:
    with pytest.raises(ToolError) as e:
        Tool.from_openai(spec)
    assert isinstance(e.value, ToolmaskError) and isinstance(e.value, ValueError)


class Unit(enum.Enum):
    C = "celsius"
    F = "fahrenheit"


@dataclasses.dataclass
class Passenger:
    name: str
    age: int | None = None


def get_weather(
    city: str,
    unit: Unit = Unit.C,
    days: int = 1,
    detail: Literal["short", "long"] = "short",
    hourly: bool = False,
) -> str:
    """Get the weather forecast.

    Second paragraph is not part of the description.

    Args:
        city: The city name,
            for example "Paris".
        days: How many days ahead.

    Returns:
        A forecast.
    """
    return city


def test_from_function_schema() -> None:
    tool = Tool.from_function(get_weather)
    assert tool.name == "get_weather"
    assert tool.description == "Get the weather forecast."
    assert tool.function is get_weather
    p = tool.parameters
    assert p["required"] == ["city"]
    assert p["additionalProperties"] is False
    assert p["properties"]["city"] == {
        "type": "string",
        "description": 'The city name, for example "Paris".',
    }
    assert p["properties"]["unit"] == {
        "type": "string",
        "enum": ["celsius", "fahrenheit"],
        "default": "celsius",
    }
    assert p["properties"]["days"]["description"] == "How many days ahead."
    assert p["properties"]["detail"]["enum"] == ["short", "long"]
    assert p["properties"]["hourly"] == {"type": "boolean", "default": False}
    compile_json_schema(p)


def book(
    passengers: list[Passenger],
    seats: dict[str, int],
    note: Annotated[str | None, "free text"] = None,
    pair: tuple[int, str] = (1, "a"),
    score: float = 0.5,
    tags: list[str] | None = None,
    extra: Any = None,
) -> None:
    """Book seats.

    :param seats: seat counts by class
    """


def test_from_function_containers_and_dataclasses() -> None:
    p = Tool.from_function(book).parameters
    props = p["properties"]
    assert props["passengers"]["items"]["required"] == ["name"]
    assert props["passengers"]["items"]["properties"]["age"] == {
        "anyOf": [{"type": "integer"}, {"type": "null"}]
    }
    assert props["seats"] == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
        "description": "seat counts by class",
    }
    assert props["note"]["description"] == "free text"
    assert props["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    assert props["score"]["type"] == "number"
    assert props["extra"] == {"default": None}
    assert p["required"] == ["passengers", "seats"]
    compile_json_schema(p)


def test_from_function_errors() -> None:
    def star(*args: int) -> None: ...

    def untyped(x) -> None:  # type: ignore[no-untyped-def]
        ...

    def weird(x: complex) -> None: ...

    for fn, where in [(star, "star.args"), (untyped, "untyped.x"), (weird, "weird.x")]:
        with pytest.raises(ToolError) as e:
            Tool.from_function(fn)
        assert e.value.where == where
    with pytest.raises(ToolError):
        Tool.from_function(lambda: None)  # "<lambda>" is not a valid name


def test_from_pydantic() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Address(pydantic.BaseModel):
        street: str
        zip_code: str

    class CreateUser(pydantic.BaseModel):
        """Create a user account."""

        name: str
        age: int = pydantic.Field(ge=0)
        address: Address

    tool = Tool.from_pydantic(CreateUser)
    assert tool.name == "CreateUser" and tool.description == "Create a user account."
    assert tool.parameters["required"] == ["name", "age", "address"]
    compile_json_schema(tool.parameters)

    def register(user: CreateUser) -> None:
        """Register."""

    register.__annotations__ = {"user": CreateUser, "return": None}  # a local class
    nested = Tool.from_function(register).parameters["properties"]["user"]
    assert "$defs" not in nested
    assert nested["properties"]["address"]["required"] == ["street", "zip_code"]


def test_tool_choice_parsing() -> None:
    assert ToolChoice.parse("auto", NAMES) == ToolChoice("auto")
    forced = ToolChoice.parse({"type": "function", "function": {"name": "get_time"}}, NAMES)
    assert forced == ToolChoice("required", ("get_time",))
    allowed = ToolChoice.parse(
        {
            "type": "allowed_tools",
            "allowed_tools": {"mode": "auto", "tools": ["calculate", "get_weather"]},
        },
        NAMES,
    )
    assert allowed == ToolChoice("auto", ("get_weather", "calculate"))  # tool-list order
    for bad in ["sometimes", {"type": "function", "function": {"name": "nope"}}, 3, {"type": "x"}]:
        with pytest.raises(ToolError):
            ToolChoice.parse(bad, NAMES)  # type: ignore[arg-type]
    with pytest.raises(ToolError):
        ToolChoice.parse("required", [])


def test_allowed_tools_in_tool_order_once_each_whatever_their_spelling() -> None:
    def allowed(*tools: object, mode: str = "required") -> ToolChoice:
        body = {"type": "allowed_tools", "mode": mode, "tools": list(tools)}
        return ToolChoice.parse(body, NAMES)

    order = tuple(n for n in NAMES if n in {"calculate", "get_weather", "get_time"})
    assert allowed("get_time", "calculate", "get_weather", "calculate").allowed == order
    mixed = allowed(
        {"type": "function", "function": {"name": "get_time"}},
        {"type": "function", "name": "calculate"},
        "get_weather",
        "get_weather",
    )
    assert mixed.allowed == order
    assert allowed("calculate").allowed == ("calculate",)
    assert allowed(mode="auto").allowed == ()
    with pytest.raises(ToolError, match=r"unknown tools \['nope', 'nada'\]"):
        allowed("calculate", "nope", "nada")
    with pytest.raises(ToolError, match="no tool can be called"):
        allowed()


def test_tool_turn_accepts_mixed_inputs_and_rejects_duplicates() -> None:
    turn = ToolTurn([get_weather, OPENAI_TOOLS[5]])
    assert [t.name for t in turn.tools] == ["get_weather", "get_time"]
    with pytest.raises(ToolError):
        ToolTurn([OPENAI_TOOLS[0], OPENAI_TOOLS[0]])
    with pytest.raises(ToolError):
        ToolTurn(OPENAI_TOOLS, fmt="nonexistent")
