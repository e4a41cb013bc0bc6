"""agentscope-runtime's own `HTTPAgentAPIClient` and pydantic models against a live
`agentwire serve` (`POST /process`, scripted agents): a streamed response their client parses
into its models, with text, a tool call and its result (the tool really runs), then a second
request in the same session that continues the conversation; the raw wire of a live response
passes the strict checks of `agentscope_peer.validate`."""

import sys
from pathlib import Path

import pytest
import requests
from agentscope_runtime.engine.helpers.agent_api_client import HTTPAgentAPIClient
from agentscope_runtime.engine.schemas.agent_schemas import (
    AgentRequest,
    AgentResponse,
    Content,
    DataContent,
    Message,
    MessageType,
    RunStatus,
    TextContent,
)

from agentscope_peer import validate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from agentwire_server import AgentwireServer  # noqa: E402

FILE = {"path": "notes/agentscope.txt", "content": "written by the tool"}
ARGS = '{"path": "notes/agentscope.txt", "content": "written by the tool"}'

SCRIPTS = {
    # The first model call of a run: a text and a write_file call (no approval); the second,
    # after its result: the answer. (A scripted brain plays its turns per run, so every request
    # gets this pair; the session's history is what shows the conversation going on.)
    "writer.json": {"turns": [
        [
            {"type": "text_delta", "text": "Writing "},
            {"type": "text_delta", "text": "it."},
            {"type": "tool_call_start", "id": "c1", "name": "write_file"},
            {"type": "tool_call_delta", "id": "c1", "args": ARGS[:25]},
            {"type": "tool_call_delta", "id": "c1", "args": ARGS[25:]},
            {"type": "tool_call_end", "id": "c1"},
            {"type": "finish", "reason": "tool_calls"},
        ],
        [
            {"type": "text_delta", "text": "Done."},
            {"type": "finish", "reason": "stop", "usage": {"input_tokens": 9, "output_tokens": 1}},
        ],
    ]},
    "talker.json": {"turns": [[
        {"type": "text_delta", "text": "Hello "},
        {"type": "text_delta", "text": "there."},
        {"type": "finish", "reason": "stop"},
    ]] * 4},
}

CONFIG = """
[[agents]]
name = "talker"
provider = "scripted"
script = "talker.json"

[[agents]]
name = "writer"
provider = "scripted"
script = "writer.json"
tools = ["write_file"]
workspace = "ws"
"""


@pytest.fixture(scope="module")
def server():
    with AgentwireServer(CONFIG, SCRIPTS, dirs=("ws",)) as server:
        yield server


def ask(text: str, session_id: str) -> AgentRequest:
    return AgentRequest(
        session_id=session_id,
        stream=True,
        input=[{"role": "user", "type": "message", "content": [{"type": "text", "text": text}]}],
    )


def check_stream(events: list) -> AgentResponse:
    """What every live stream must be in their models: gapless sequence numbers from 0, one
    response first and last, contents of announced messages."""
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert isinstance(events[0], AgentResponse) and events[0].status == RunStatus.Created
    last = events[-1]
    assert isinstance(last, AgentResponse), type(last)
    announced = {event.id for event in events if isinstance(event, Message)}
    for event in events:
        if isinstance(event, Content):
            assert event.msg_id in announced, event
    return last


def texts(messages: list[Message]) -> list[str]:
    return [
        content.text
        for message in messages
        if message.type == MessageType.MESSAGE
        for content in message.content or []
        if isinstance(content, TextContent)
    ]


def test_a_streamed_response_with_a_tool_then_the_same_session_goes_on(server):
    client = HTTPAgentAPIClient(f"{server.url}/agents/writer/process", timeout=10)
    events = list(client.stream(ask("Write the note", "ses-as")))
    final = check_stream(events)
    assert final.status == RunStatus.Completed, final
    assert final.session_id == "ses-as"

    # Their client typed every frame with their models: text deltas, then the call and result.
    deltas = [e.text for e in events if isinstance(e, TextContent) and e.delta]
    assert deltas == ["Writing ", "it.", "Done."]
    output = final.output
    kinds = [message.type for message in output]
    assert kinds == [
        MessageType.MESSAGE, MessageType.FUNCTION_CALL, MessageType.FUNCTION_CALL_OUTPUT,
        MessageType.MESSAGE,
    ], kinds
    assert texts(output) == ["Writing it.", "Done."]
    [call] = output[1].content
    assert isinstance(call, DataContent)
    assert (call.data["call_id"], call.data["name"]) == ("c1", "write_file")
    assert call.data["arguments"].replace(" ", "") == ARGS.replace(" ", "")
    [result] = output[2].content
    assert output[2].role == "tool"
    assert result.data["call_id"] == "c1"
    assert "error_type" not in result.data
    assert (server.dir / "ws" / FILE["path"]).read_text() == FILE["content"]
    # The completed messages the stream announced are the output, in order.
    completed = [e for e in events if isinstance(e, Message) and e.status == RunStatus.Completed]
    assert [m.model_dump() for m in completed] == [m.model_dump() for m in output]

    # The same session: the next request is the next turn of the conversation.
    first_ids = {message.id for message in output}
    events = list(client.stream(ask("Again, please", "ses-as")))
    again = check_stream(events)
    assert again.status == RunStatus.Completed
    assert again.session_id == "ses-as"
    assert again.id != final.id, "a new run"
    assert texts(again.output) == ["Writing it.", "Done."]
    assert not first_ids & {message.id for message in again.output}
    assert again.usage is not None and again.usage["output_tokens"] == 1
    history = requests.get(f"{server.url}/v1/sessions/ses-as", timeout=10).json()["messages"]
    users = [
        part["text"]
        for message in history
        if message["role"] == "user"
        for part in message["parts"]
    ]
    # The server kept both turns in the session: the second run had the first as its history.
    assert users == ["Write the note", "Again, please"]
    assert [message["role"] for message in history] == ["user", "assistant", "user", "assistant"]


def test_the_root_process_answers_for_the_default_agent_and_passes_the_strict_checks(server):
    client = HTTPAgentAPIClient(f"{server.url}/process", timeout=10)
    events = list(client.stream(ask("hi", "ses-root")))
    final = check_stream(events)
    assert final.status == RunStatus.Completed
    assert texts(final.output) == ["Hello there."]

    # The raw bytes of a live response, through every model strictly (what their client's
    # lenient parse would drop silently is an error here).
    body = ask("hi", "ses-strict").model_dump(exclude_none=True)
    wire = requests.post(f"{server.url}/process", json=body, timeout=10).content
    strict = validate(wire)
    assert strict.status == RunStatus.Completed
    assert texts(strict.output) == ["Hello there."]


SLOW_CONFIG = """
[server]
heartbeat_seconds = 1

[[agents]]
name = "slow"
provider = "scripted"
script = "slow.json"
tokens_per_second = 0.5
"""

SLOW_SCRIPT = {"turns": [[
    {"type": "text_delta", "text": "Hello "},
    {"type": "text_delta", "text": "there."},
    {"type": "finish", "reason": "stop"},
]] * 2}


def test_a_quiet_stream_gets_heartbeat_messages_their_models_accept():
    """A model that pauses longer than `heartbeat_seconds` between words: the stream carries
    messages of their own `heartbeat` type, which their client yields as `Message`s and their
    models accept strictly, numbered in the gapless sequence; the output leaves them out."""
    with AgentwireServer(SLOW_CONFIG, {"slow.json": SLOW_SCRIPT}) as slow:
        client = HTTPAgentAPIClient(f"{slow.url}/process", timeout=30)
        events = list(client.stream(ask("hi", "ses-hb")))
        heartbeats = [
            event for event in events
            if isinstance(event, Message) and event.type == MessageType.HEARTBEAT
        ]
        assert heartbeats, events
        final = check_stream(events)
        assert final.status == RunStatus.Completed
        assert texts(final.output) == ["Hello there."]
        assert all(message.type != MessageType.HEARTBEAT for message in final.output)

        body = ask("hi", "ses-hb-strict").model_dump(exclude_none=True)
        wire = requests.post(f"{slow.url}/process", json=body, timeout=30).content
        assert b'"type":"heartbeat"' in wire
        assert validate(wire).status == RunStatus.Completed
