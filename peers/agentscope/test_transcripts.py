"""agentscope-runtime's own models and HTTP client read every golden AgentScope transcript of
agentwire's scenarios, and rebuild the scenario's messages; broken transcripts are refused."""

from __future__ import annotations

import json
import os
import pathlib

import pydantic
import pytest

from agentscope_peer import (
    TranscriptError,
    as_agentscope,
    client_events,
    comparable,
    data_objects,
    model_for,
    validate,
)
from agentscope_runtime.engine.helpers.agent_api_client import parse_event_from_json
from agentscope_runtime.engine.schemas.agent_schemas import AgentResponse, Message

REPO = pathlib.Path(__file__).resolve().parents[2]
GOLDEN = REPO / "crates/dialects/tests/golden"
SCENARIOS = sorted(p.stem for p in (GOLDEN / "scenarios").glob("*.json"))
EXAMPLES = pathlib.Path(
    os.environ.get(
        "AGENTWIRE_AGENTSCOPE_EXAMPLES",
        REPO.parent / "shared/protocols/agentscope-examples",
    )
)


def transcript(name: str) -> bytes:
    return (GOLDEN / "agentscope" / f"{name}.sse").read_bytes()


def scenario(name: str) -> dict:
    return json.loads((GOLDEN / "scenarios" / f"{name}.json").read_text(encoding="utf-8"))


def test_every_scenario_has_a_transcript():
    assert len(SCENARIOS) >= 9
    for name in SCENARIOS:
        assert (GOLDEN / "agentscope" / f"{name}.sse").exists(), name


@pytest.mark.parametrize("name", SCENARIOS)
def test_their_models_accept_every_frame(name):
    final = validate(transcript(name))
    expected = scenario(name)["status"]
    want = "failed" if expected["status"] == "failed" else "completed"
    assert final.status == want
    if "error" in expected:
        assert final.error.model_dump() == expected["error"]


@pytest.mark.parametrize("name", SCENARIOS)
def test_their_client_rebuilds_the_scenario_messages(name):
    wire = transcript(name)
    events, sent = client_events(wire)
    # Their client parsed every frame (it drops what its models refuse).
    assert len(events) == len(data_objects(wire))
    assert sent["input"][0]["content"][0]["text"] == "hi"
    final = events[-1]
    assert isinstance(final, AgentResponse)
    expected = [m for message in scenario(name)["messages"] for m in as_agentscope(message)]
    if final.error is not None:
        # Why the run did not complete is also an `error` message, the output's last.
        expected.append({"type": "error", "role": "assistant", "content": []})
    # From the final response's output …
    assert [comparable(m) for m in final.output] == expected
    # … and from the completed message events, which are the same.
    completed = [e for e in events if isinstance(e, Message) and e.status == "completed"]
    assert [comparable(m) for m in completed] == expected


def test_usage_is_on_the_final_response():
    events, _ = client_events(transcript("tool_call"))
    assert events[-1].usage == {"input_tokens": 80, "output_tokens": 31, "total_tokens": 111}


def frames_of(objects: list[dict]) -> bytes:
    return b"".join(
        b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n" for obj in objects
    )


def with_frame_changed(name: str, change) -> bytes:
    objects = data_objects(transcript(name))
    change(objects)
    return frames_of(objects)


def first(objects, **keys):
    return next(o for o in objects if all(o.get(k) == v for k, v in keys.items()))


# Broken transcripts their models refuse: their client drops the frame (parse_event_from_json
# returns None and logs), and the strict parse raises.
REFUSED_BY_THEIR_MODELS = {
    "text that is not a string": lambda objs: first(objs, object="content", type="text").update(text=5),
    "a role they do not define": lambda objs: first(objs, object="message").update(role="robot"),
    "an error without message": lambda objs: objs[-1].update(status="failed", error={"code": "X"}),
    "a content of a type they do not define": lambda objs: first(
        objs, object="message", status="completed"
    )["content"][0].update(type="hologram"),
    "a sequence number that is not a number": lambda objs: objs[3].update(sequence_number="four"),
}


@pytest.mark.parametrize("what", sorted(REFUSED_BY_THEIR_MODELS))
def test_their_models_refuse(what):
    wire = with_frame_changed("text", REFUSED_BY_THEIR_MODELS[what])
    with pytest.raises(pydantic.ValidationError):
        validate(wire)
    events, _ = client_events(wire)
    assert len(events) == len(data_objects(wire)) - 1, "their client drops the broken frame"
    broken = [o for o in data_objects(wire) if parse_event_from_json(o) is None]
    assert len(broken) == 1


# Broken transcripts their models accept (status is a free string; sequence numbers are not
# checked by the client): the harness refuses them.
REFUSED_BY_THE_HARNESS = {
    "a status that is not a RunStatus": lambda objs: first(objs, object="content").update(
        status="finished"
    ),
    "a gap in sequence_number": lambda objs: [
        o.update(sequence_number=o["sequence_number"] + 1) for o in objs[4:]
    ],
    "deltas that do not add up to the completed text": lambda objs: first(
        objs, object="content", delta=True
    ).update(text="Goodbye"),
    "an output that is not the completed messages": lambda objs: objs[-1].update(output=[]),
    "a content for an unannounced message": lambda objs: first(objs, object="content").update(
        msg_id="msg_nowhere"
    ),
}


@pytest.mark.parametrize("what", sorted(REFUSED_BY_THE_HARNESS))
def test_the_harness_refuses(what):
    wire = with_frame_changed("text", REFUSED_BY_THE_HARNESS[what])
    for obj in data_objects(wire):
        model_for(obj).model_validate(obj)  # their models accept every frame
    with pytest.raises(TranscriptError):
        validate(wire)


CAPTURED = sorted(p.name for p in EXAMPLES.glob("*.sse")) if EXAMPLES.is_dir() else []


@pytest.mark.skipif(not CAPTURED, reason="the captured streams are not beside the checkout")
@pytest.mark.parametrize("name", CAPTURED)
def test_the_captured_streams_pass_the_same_checks(name):
    wire = (EXAMPLES / name).read_bytes()
    if name == "agentscope_badrequest.sse":
        # AgentApp's refusal is not a protocol event: no `object`, so their client yields nothing.
        events, _ = client_events(wire)
        assert events == []
        return
    if name == "textfw_text.sse":
        # The `text` framework streams contents of a message it never announces.
        with pytest.raises(TranscriptError, match="unannounced"):
            validate(wire)
        return
    final = validate(wire)
    assert final.status in ("completed", "failed")
