"""A shared tool set for the tool-layer tests: flat, nested, enums, arrays of objects.

``VALID[name]`` lists argument objects that satisfy the tool's schema, keys in schema order (the
compact grammar emits keys in that order); ``INVALID[name]`` lists ones that must not.
"""

from __future__ import annotations

from typing import Any

from toolmask.tools import Tool

_SPECS: list[dict[str, Any]] = [
    {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    },
    {
        "name": "search_web",
        "description": "Search the web.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
    {
        "name": "create_event",
        "description": "Create a calendar event.",
        "parameters": {
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "start": {"type": "string"},
                "attendees": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "email": {"type": "string"},
                        },
                        "required": ["name"],
                        "additionalProperties": False,
                    },
                },
            },
            "required": ["title", "start"],
            "additionalProperties": False,
        },
    },
    {
        "name": "send_email",
        "description": "Send an email.",
        "parameters": {
            "type": "object",
            "properties": {
                "to": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "subject": {"type": "string"},
                "body": {"type": "string"},
            },
            "required": ["to", "subject"],
            "additionalProperties": False,
        },
    },
    {
        "name": "set_thermostat",
        "description": "Set the thermostat.",
        "parameters": {
            "type": "object",
            "properties": {
                "temperature": {"type": "number"},
                "mode": {"type": "string", "enum": ["heat", "cool", "auto"]},
            },
            "required": ["temperature", "mode"],
            "additionalProperties": False,
        },
    },
    {"name": "get_time", "description": "The current time."},
    {
        "name": "book_flight",
        "description": "Book a flight.",
        "parameters": {
            "type": "object",
            "properties": {
                "origin": {"type": "string"},
                "destination": {"type": "string"},
                "passengers": {
                    "type": "object",
                    "properties": {
                        "adults": {"type": "integer", "minimum": 1},
                        "children": {"type": "integer", "minimum": 0},
                    },
                    "required": ["adults"],
                    "additionalProperties": False,
                },
                "cabin": {"enum": ["economy", "business", "first"]},
            },
            "required": ["origin", "destination", "passengers"],
            "additionalProperties": False,
        },
    },
    {
        "name": "add_todos",
        "description": "Add items to the todo list.",
        "parameters": {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "text": {"type": "string"},
                            "done": {"type": "boolean"},
                        },
                        "required": ["text", "done"],
                        "additionalProperties": False,
                    },
                },
            },
            "required": ["items"],
            "additionalProperties": False,
        },
    },
    {
        "name": "calculate",
        "description": "Evaluate an arithmetic expression.",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string"}},
            "required": ["expression"],
            "additionalProperties": False,
        },
    },
]

TOOLS: list[Tool] = [Tool.from_openai({"type": "function", "function": s}) for s in _SPECS]
OPENAI_TOOLS: list[dict[str, Any]] = [{"type": "function", "function": s} for s in _SPECS]
NAMES: list[str] = [t.name for t in TOOLS]

VALID: dict[str, list[dict[str, Any]]] = {
    "get_weather": [{"city": "Paris"}, {"city": "Zürich", "unit": "celsius"}],
    "search_web": [{"query": "toolmask <tool_call> docs", "limit": 5}],
    "create_event": [
        {
            "title": "Standup",
            "start": "2025-01-02T09:00",
            "attendees": [{"name": "Ann", "email": "ann@example.com"}, {"name": "Bo"}],
        }
    ],
    "send_email": [{"to": ["a@example.com"], "subject": "Hi", "body": "[TOOL_CALLS] </tool_call>"}],
    "set_thermostat": [{"temperature": 21.5, "mode": "heat"}],
    "get_time": [{}],
    "book_flight": [
        {
            "origin": "CDG",
            "destination": "JFK",
            "passengers": {"adults": 2, "children": 1},
            "cabin": "economy",
        }
    ],
    "add_todos": [{"items": [{"text": "milk", "done": False}, {"text": "eggs", "done": True}]}],
    "calculate": [{"expression": "2 * (3 + 4)"}],
}

INVALID: dict[str, list[dict[str, Any]]] = {
    "get_weather": [{}, {"city": "Paris", "unit": "kelvin"}, {"city": 3}],
    "search_web": [{"limit": 3}, {"query": "x", "limit": "many"}],
    "create_event": [{"title": "x", "start": "y", "attendees": [{"email": "a@b"}]}],
    "send_email": [{"subject": "x"}],
    "set_thermostat": [{"temperature": 20, "mode": "off"}],
    "get_time": [{"city": "Paris"}],
    "book_flight": [{"origin": "A", "destination": "B", "passengers": {"children": 1}}],
    "add_todos": [{"items": [{"text": "milk"}]}],
    "calculate": [{"expression": 42}],
}
