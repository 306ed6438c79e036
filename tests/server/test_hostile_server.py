"""The hostile schemas of ``tests/schema/hostile_cases.py`` through the HTTP API.

Each case goes to the app (FastAPI's test client, a backend that answers "ok" without a model)
as a ``response_format`` schema, and the wrapped object ones also as a tool's parameters. Every
request must be answered: 200 (it compiled, and the backend ran), or a 400 that says what and
where: ``invalid_schema`` with the JSON pointer, ``schema_too_complex`` with the ``Limits``
field and the JSON pointer where the cap was hit, ``invalid_json`` for a body nested past what a
JSON parser takes. A tool's error names the tool's parameters (``param``) and points into them,
below the property that holds the case. Meanwhile, another
thread keeps asking ``/health`` and a plain chat: the server must answer those while it
compiles (compilation runs off the event loop). The compile-time cap is lowered to 2 s so the
file runs in bounded time.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
from typing import Any

import pytest

import toolmask as tm

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient

from tests.schema.hostile_cases import CASES
from tests.server.test_defaults import Recorder
from toolmask.server._app import create_app

LIMITS = dataclasses.replace(tm.SERVER_LIMITS, max_compile_seconds=2.0)
#: caps of a schema or grammar as a whole, answered at ``#`` when they are hit
_WHOLE = {"max_schema_bytes", "max_automaton_states", "max_compile_seconds"}
USER = [{"role": "user", "content": "hi"}]


def _body(**fields: Any) -> bytes:
    """The request JSON; the deepest cases nest past the encoder's default recursion limit."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 50_000))
    try:
        return json.dumps({"model": "m", "messages": USER, **fields}).encode()
    finally:
        sys.setrecursionlimit(old)


def _check(name: str, r: Any, *, param: str, at: str) -> str:
    """The outcome of one hostile request, after checking it is a clear one: a schema error
    names ``param`` and points at ``at`` or below it (for a cap of the schema as a whole, at
    ``#``)."""
    if r.status_code == 200:
        assert r.json()["choices"][0]["message"]["content"] == "ok", (name, r.text)
        return "compiled"
    assert r.status_code == 400, (name, r.status_code, r.text[:300])
    err = r.json()["error"]
    assert err["message"], name
    if err["code"] == "invalid_json":
        assert "recursion" in err["message"], (name, err)
        return "invalid_json"
    assert err["code"] in ("invalid_schema", "schema_too_complex"), (name, err)
    assert err["param"] == param, (name, err)
    if err["code"] == "schema_too_complex":
        assert err["limit"] in {f.name for f in dataclasses.fields(tm.Limits)}, (name, err)
    pointer = err["pointer"]
    assert pointer == at or pointer.startswith(at + "/") or pointer == "#", (name, err)
    assert pointer in err["message"], (name, err)
    if pointer == "#" != at:  # only a cap of the whole schema (or grammar) is not below ``at``
        assert err.get("limit") in _WHOLE, (name, err)
    return f"{err['code']} at {pointer}"


def test_hostile_schemas_get_clear_answers_and_the_server_stays_responsive() -> None:
    app = create_app(Recorder(), model_name="m", limits=LIMITS)
    outcomes: dict[str, str] = {}
    tool_outcomes: dict[str, str] = {}
    side: list[int] = []
    done = threading.Event()
    with TestClient(app) as client:

        def bystander() -> None:
            while not done.is_set():
                side.append(client.get("/health").status_code)
                r = client.post("/v1/chat/completions", json={"model": "m", "messages": USER})
                side.append(r.status_code)

        t = threading.Thread(target=bystander)
        t.start()
        try:
            for name, build in CASES:
                schema = build()
                rf = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
                r = client.post(
                    "/v1/chat/completions",
                    content=_body(response_format=rf),
                    headers={"content-type": "application/json"},
                )
                outcomes[name] = _check(name, r, param="response_format.json_schema.schema", at="#")
                params = {"type": "object", "properties": {"x": schema}, "required": ["x"]}
                tool = {"type": "function", "function": {"name": "f", "parameters": params}}
                r = client.post(
                    "/v1/chat/completions",
                    content=_body(tools=[tool], tool_choice="required"),
                    headers={"content-type": "application/json"},
                )
                tool_outcomes[name] = _check(
                    name + " (tool)", r, param="tools[0].function.parameters", at="#/properties/x"
                )
        finally:
            done.set()
            t.join(60)
    assert side and set(side) == {200}, side
    # a backreference compiles (the grammar a superset, the validator the exact pattern)
    assert outcomes["backreference"] == tool_outcomes["backreference"] == "compiled"
    # the cases that must be refused under any limits are refused, located
    assert outcomes["ref_cycle"] == "invalid_schema at #/$defs/a"
    assert outcomes["deep_regex_groups"] == "schema_too_complex at #"
    assert outcomes["ref_chain_3000"].startswith("schema_too_complex at #/$defs/d")
    assert outcomes["catastrophic_regex"] == "compiled"
    # the same caps in a tool's parameters, below the property that holds the case
    for name in ("deep_regex_groups", "product_of_any_ofs", "overlapping_pattern_properties"):
        assert tool_outcomes[name] == "schema_too_complex at #/properties/x", name


def test_request_caps_are_limits_fields() -> None:
    """The body size and the stop sequences are bounded by the server's ``Limits``, and the
    answer names the field; raising a field raises the cap."""
    small = dataclasses.replace(
        tm.SERVER_LIMITS, max_request_bytes=2_000, max_stop_sequences=2, max_stop_chars=5
    )
    with TestClient(create_app(Recorder(), model_name="m", limits=small)) as client:
        big = _body(user="x" * 3_000)
        r = client.post(
            "/v1/chat/completions", content=big, headers={"content-type": "application/json"}
        )
        assert r.status_code == 413 and "Limits.max_request_bytes" in r.text
        r = client.post("/v1/chat/completions", content=_body(stop=["a", "b", "c"]))
        assert r.status_code == 400 and "Limits.max_stop_sequences" in r.text
        assert r.json()["error"]["param"] == "stop"
        r = client.post("/v1/chat/completions", content=_body(stop=["a", "abcdef"]))
        assert r.status_code == 400 and "Limits.max_stop_chars" in r.text
        assert r.json()["error"]["param"] == "stop[1]"
        r = client.post("/v1/chat/completions", content=_body(stop=["a", "b"]))
        assert r.status_code == 200, r.text
    wide = dataclasses.replace(tm.SERVER_LIMITS, max_stop_sequences=6)
    with TestClient(create_app(Recorder(), model_name="m", limits=wide)) as client:
        r = client.post("/v1/chat/completions", content=_body(stop=list("abcdef")))
        assert r.status_code == 200, r.text
