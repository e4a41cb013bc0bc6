"""AgentScope's Agent API in full, through a live `agentwire serve` and agentscope-runtime's own
client and strict models: calls of an MCP server's tool as `mcp_call`/`mcp_call_output`, tools
declared as plugins and components as `plugin_call`/`component_call`, a failure as an `error`
message, `stream: false` answered with one `AgentResponse` as JSON with real times, a waiting
run answered through `/process` with their `McpApprovalResponse`, and a `system` message in the
input. Every raw stream also passes `agentscope_peer.validate`."""

import sys
import time
from pathlib import Path

import pytest
import requests
from agentscope_runtime.engine.helpers.agent_api_client import HTTPAgentAPIClient
from agentscope_runtime.engine.schemas.agent_schemas import (
    AgentRequest,
    AgentResponse,
    DataContent,
    FunctionCall,
    FunctionCallOutput,
    McpApprovalResponse,
    McpCall,
    McpCallOutput,
    Message,
    MessageType,
    RunStatus,
)

from agentscope_peer import validate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from agentwire_server import REPO, AgentwireServer  # noqa: E402

EVERYTHING = REPO / "peers" / "mcp" / "node_modules" / ".bin" / "mcp-server-everything"

WRITE = '{"path": "note.txt", "content": "hi"}'
SCRIPTS = {
    "echoer.json": {"turns": [
        [
            {"type": "tool_call_start", "id": "m1", "name": "ev_echo"},
            {"type": "tool_call_delta", "id": "m1", "args": '{"message": "hello mcp"}'},
            {"type": "tool_call_end", "id": "m1"},
            {"type": "finish", "reason": "tool_calls"},
        ],
        [{"type": "text_delta", "text": "Echoed."}, {"type": "finish", "reason": "stop"}],
    ]},
    "kinds.json": {"turns": [
        [
            {"type": "tool_call_start", "id": "p1", "name": "write_file"},
            {"type": "tool_call_delta", "id": "p1", "args": WRITE},
            {"type": "tool_call_end", "id": "p1"},
            {"type": "finish", "reason": "tool_calls"},
        ],
        [
            {"type": "tool_call_start", "id": "k1", "name": "list_files"},
            {"type": "tool_call_delta", "id": "k1", "args": "{}"},
            {"type": "tool_call_end", "id": "k1"},
            {"type": "finish", "reason": "tool_calls"},
        ],
        [{"type": "text_delta", "text": "Done."}, {"type": "finish", "reason": "stop"}],
    ]},
    "failer.json": {"turns": [[
        {"type": "text_delta", "text": "Let me"},
        {"type": "error", "message": "upstream broke"},
    ]]},
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
name = "kinds"
provider = "scripted"
script = "kinds.json"
tools = ["write_file", "list_files"]
workspace = "ws"
tool_kinds = { write_file = "plugin", list_files = "component" }

[[agents]]
name = "approver"
provider = "scripted"
script = "kinds.json"
tools = ["write_file", "list_files"]
workspace = "ws"
approval = ["write_file"]

[[agents]]
name = "failer"
provider = "scripted"
script = "failer.json"
tools = []
"""

MCP_CONFIG = f"""
[[agents]]
name = "echoer"
provider = "scripted"
script = "echoer.json"
tools = []

[[agents.mcp]]
name = "ev"
command = ["{EVERYTHING}", "stdio"]
"""


@pytest.fixture(scope="module")
def server():
    with AgentwireServer(CONFIG, SCRIPTS, dirs=("ws",)) as server:
        yield server


def ask(text: str, session_id: str | None = None, **fields) -> AgentRequest:
    return AgentRequest(
        session_id=session_id,
        input=[{"role": "user", "type": "message", "content": [{"type": "text", "text": text}]}],
        **fields,
    )


def stream(url: str, request: AgentRequest) -> tuple[list, AgentResponse]:
    """Their client's events for `request`, and the raw wire of the same request checked
    strictly (a fresh session for it, so both get the same answer)."""
    events = list(HTTPAgentAPIClient(url, timeout=30).stream(request))
    final = events[-1]
    assert isinstance(final, AgentResponse), final
    return events, final


def completed(events: list) -> list[Message]:
    return [e for e in events if isinstance(e, Message) and e.status == RunStatus.Completed]


def test_an_mcp_servers_tool_is_called_as_mcp_call():
    if not EVERYTHING.exists():
        pytest.skip(f"{EVERYTHING} is missing: run scripts/peers.sh (it installs peers/mcp)")
    with AgentwireServer(MCP_CONFIG, SCRIPTS) as live:
        events, final = stream(f"{live.url}/process", ask("Echo it", "ses-mcp"))
        assert final.status == RunStatus.Completed, final
        kinds = [message.type for message in final.output]
        assert kinds == [MessageType.MCP_TOOL_CALL, "mcp_call_output", MessageType.MESSAGE], kinds
        # The payloads are their McpCall and McpCallOutput.
        call = McpCall.model_validate(final.output[0].content[0].data)
        assert (call.call_id, call.name, call.server_label) == ("m1", "ev_echo", "ev")
        assert call.arguments.replace(" ", "") == '{"message":"hellomcp"}'
        output = McpCallOutput.model_validate(final.output[1].content[0].data)
        assert output.call_id == "m1" and "hello mcp" in output.output
        assert final.output[1].role == "tool"
        wire = requests.post(
            f"{live.url}/process", json=ask("Echo it", "ses-mcp-2").model_dump(exclude_none=True),
            timeout=30,
        ).content
        assert validate(wire).status == RunStatus.Completed


def test_tools_declared_as_plugin_and_component_are_called_so(server):
    events, final = stream(f"{server.url}/agents/kinds/process", ask("Write it", "ses-kinds"))
    assert final.status == RunStatus.Completed, final
    kinds = [message.type for message in final.output]
    assert kinds == [
        MessageType.PLUGIN_CALL, MessageType.PLUGIN_CALL_OUTPUT,
        MessageType.COMPONENT_CALL, MessageType.COMPONENT_CALL_OUTPUT, MessageType.MESSAGE,
    ], kinds
    call = FunctionCall.model_validate(final.output[0].content[0].data)
    assert (call.call_id, call.name) == ("p1", "write_file")
    FunctionCallOutput.model_validate(final.output[1].content[0].data)
    assert (server.dir / "ws" / "note.txt").read_text() == "hi"
    wire = requests.post(
        f"{server.url}/agents/kinds/process",
        json=ask("Write it", "ses-kinds-2").model_dump(exclude_none=True), timeout=30,
    ).content
    assert validate(wire).status == RunStatus.Completed


def test_a_failure_is_an_error_message_and_a_failed_response(server):
    events, final = stream(f"{server.url}/agents/failer/process", ask("Hi", "ses-fail"))
    assert final.status == RunStatus.Failed
    assert final.error is not None and "upstream broke" in final.error.message
    [error] = [e for e in events if isinstance(e, Message) and e.type == MessageType.ERROR]
    assert (error.code, error.message) == (final.error.code, final.error.message)
    assert final.output[-1].type == MessageType.ERROR
    wire = requests.post(
        f"{server.url}/agents/failer/process",
        json=ask("Hi", "ses-fail-2").model_dump(exclude_none=True), timeout=30,
    ).content
    assert validate(wire).status == RunStatus.Failed


def test_stream_false_answers_one_agent_response_as_json_with_real_times(server):
    before = int(time.time())
    answer = requests.post(
        f"{server.url}/process",
        json=ask("Hi", "ses-json", stream=False).model_dump(exclude_none=True), timeout=30,
    )
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    response = AgentResponse.model_validate_json(answer.content)
    assert response.status == RunStatus.Completed
    assert response.session_id == "ses-json"
    assert before <= response.created_at <= response.completed_at <= int(time.time())
    [message] = response.output
    assert message.content[0].text == "Hello there."

    # Streamed, the times are real too.
    events, final = stream(f"{server.url}/process", ask("Hi", "ses-times"))
    assert events[0].created_at >= before and final.completed_at >= final.created_at


def test_a_waiting_run_is_answered_through_process_with_their_models(server):
    url = f"{server.url}/agents/approver/process"
    events, first = stream(url, ask("Write it", "ses-wait"))
    assert first.status == RunStatus.Completed
    request = first.output[-1]
    assert request.type == MessageType.MCP_APPROVAL_REQUEST
    approval_id = request.content[0].data["id"]

    approve = Message(
        type=MessageType.MCP_APPROVAL_RESPONSE,
        role="user",
        content=[DataContent(data=McpApprovalResponse(
            approval_request_id=approval_id, approve=True,
        ).model_dump(exclude_none=True))],
    )
    events, final = stream(url, AgentRequest(input=[approve], session_id="ses-wait"))
    assert final.status == RunStatus.Completed, final
    assert final.id == first.id, "the same run goes on"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    kinds = [message.type for message in final.output]
    assert MessageType.FUNCTION_CALL_OUTPUT in kinds, kinds
    assert (server.dir / "ws" / "note.txt").read_text() == "hi"


def test_a_system_message_in_the_input_is_taken(server):
    request = AgentRequest(
        session_id="ses-system",
        input=[
            {"role": "system", "type": "message", "content": [{"type": "text", "text": "Be brief."}]},
            {"role": "user", "type": "message", "content": [{"type": "text", "text": "Hi"}]},
        ],
    )
    events, final = stream(f"{server.url}/process", request)
    assert final.status == RunStatus.Completed, final
    history = requests.get(f"{server.url}/v1/sessions/ses-system", timeout=10).json()["messages"]
    assert [message["role"] for message in history] == ["system", "user", "assistant"]
