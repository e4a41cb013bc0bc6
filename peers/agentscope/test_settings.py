"""Generation settings and client tools from agentscope-runtime's own `AgentRequest` and
`HTTPAgentAPIClient`, through a live `agentwire serve` to the model provider: an `openai` agent
whose base URL is a Chat Completions server on port 0 here (the standard library's
http.server), which records each request and streams a documented chunk sequence. What their
client sends (`model`, `temperature`, `top_p`, `max_tokens`, `stop`, `seed`, the penalties,
`n`, `tools` in OpenAI's function format) must be what the provider receives; the model's call
of the client's tool comes back as their `function_call` message, not run by the server; a
value the provider cannot take is refused with a 400 that names it, before the provider is
called."""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
from agentscope_runtime.engine.helpers.agent_api_client import HTTPAgentAPIClient
from agentscope_runtime.engine.schemas.agent_schemas import (
    AgentRequest,
    AgentResponse,
    FunctionTool,
    MessageType,
    RunStatus,
    Tool,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from agentwire_server import AgentwireServer  # noqa: E402


def chunk(delta: dict, finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return f"data: {json.dumps({'object': 'chat.completion.chunk', 'choices': [choice]})}\n\n".encode()


# The model calls the client's tool: a documented Chat Completions stream of one tool call.
CALL = b"".join([
    chunk({"role": "assistant", "content": None, "tool_calls": [
        {"index": 0, "id": "call_loc", "type": "function",
         "function": {"name": "get_location", "arguments": ""}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{\"precise\": true}"}}]}),
    chunk({}, "tool_calls"),
    b'data: {"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}}\n\n',
    b"data: [DONE]\n\n",
])


class FakeOpenAi:
    """A Chat Completions server that records every request body."""

    def __init__(self):
        self.requests: list[dict] = []
        recorded = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                length = int(self.headers["content-length"])
                recorded.append({"path": self.path, "body": json.loads(self.rfile.read(length))})
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(CALL)))
                self.end_headers()
                self.wfile.write(CALL)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def provider():
    fake = FakeOpenAi()
    yield fake
    fake.close()


@pytest.fixture(scope="module")
def server(provider):
    config = f"""
[[agents]]
name = "gpt"
provider = "openai"
model = "gpt-configured"
base_url = "{provider.url}"
temperature = 0.9
tools = []

[[agents]]
name = "locked"
provider = "openai"
base_url = "{provider.url}"
allow_model_override = false
tools = []
"""
    with AgentwireServer(config, {}) as server:
        yield server


LOCATION = Tool(type="function", function=FunctionTool(
    name="get_location",
    description="Where the user is, from the browser",
    parameters={"type": "object", "properties": {"precise": {"type": "boolean"}}, "required": []},
))


def ask(**settings) -> AgentRequest:
    return AgentRequest(
        input=[{"role": "user", "type": "message",
                "content": [{"type": "text", "text": "Where am I?"}]}],
        stream=True,
        **settings,
    )


def test_their_settings_and_tools_reach_the_provider_and_the_call_comes_back(server, provider):
    client = HTTPAgentAPIClient(f"{server.url}/agents/gpt/process", timeout=10)
    request = ask(
        model="gpt-4.1-mini", temperature=0.2, top_p=0.9, max_tokens=128, stop=["Observation:"],
        seed=1234, frequency_penalty=0.5, presence_penalty=-0.25, n=1, tools=[LOCATION],
        session_id="ses-settings",
    )
    before = len(provider.requests)
    events = list(client.stream(request))
    final = events[-1]
    assert isinstance(final, AgentResponse), final
    assert final.status == RunStatus.Completed, final

    [sent] = provider.requests[before:]
    assert sent["path"] == "/v1/chat/completions"
    body = sent["body"]
    assert {key: body.get(key) for key in (
        "model", "temperature", "top_p", "max_tokens", "stop", "seed", "frequency_penalty",
        "presence_penalty", "n",
    )} == {
        "model": "gpt-4.1-mini", "temperature": 0.2, "top_p": 0.9, "max_tokens": 128,
        "stop": ["Observation:"], "seed": 1234, "frequency_penalty": 0.5,
        "presence_penalty": -0.25, "n": 1,
    }
    # Their tool, in OpenAI's function format, is what the model was offered.
    assert body["tools"] == [LOCATION.model_dump()]

    # The model called it; the server did not run it: the call is the turn's last message, for
    # the client to answer.
    calls = [m for m in final.output if m.type == MessageType.FUNCTION_CALL]
    assert [(c.content[0].data["name"], c.content[0].data["arguments"]) for c in calls] == [
        ("get_location", "{\"precise\": true}"),
    ]
    assert not [m for m in final.output if m.type == MessageType.FUNCTION_CALL_OUTPUT]

    # Without settings, the agent's own.
    list(client.stream(ask(session_id="ses-plain")))
    body = provider.requests[-1]["body"]
    assert (body["model"], body["temperature"]) == ("gpt-configured", 0.9)
    assert "seed" not in body and "tools" not in body


def test_what_cannot_be_used_is_refused_naming_it(server, provider):
    before = len(provider.requests)
    cases = [
        ("gpt", ask(temperature=3.0), "`temperature` must be between 0 and 2"),
        ("gpt", ask(stop=["a", "b", "c", "d", "e"]), "`stop` may hold at most 4"),
        ("gpt", ask(tools=[{"type": "function", "function": {"description": "no name"}}]),
         "`tools[0].function.name` is required"),
        ("locked", ask(model="gpt-4.1"), "`model` cannot be chosen"),
    ]
    for agent, request, expected in cases:
        client = HTTPAgentAPIClient(f"{server.url}/agents/{agent}/process", timeout=10)
        with pytest.raises(requests.HTTPError) as raised:
            list(client.stream(request))
        answer = raised.value.response
        assert answer.status_code == 400
        error = answer.json()["error"]
        assert error["code"] == "invalid_request"
        assert expected in error["message"], error
    assert len(provider.requests) == before, "no refused request reached the provider"


def test_a_system_message_in_their_request_reaches_the_provider_as_one(server, provider):
    client = HTTPAgentAPIClient(f"{server.url}/agents/gpt/process", timeout=10)
    request = AgentRequest(
        session_id="ses-system",
        input=[
            {"role": "system", "type": "message",
             "content": [{"type": "text", "text": "Answer in French."}]},
            {"role": "user", "type": "message",
             "content": [{"type": "text", "text": "Where am I?"}]},
        ],
    )
    before = len(provider.requests)
    final = list(client.stream(request))[-1]
    # (The fake model keeps calling a tool this agent lacks; only its first request matters.)
    assert isinstance(final, AgentResponse), final
    messages = provider.requests[before]["body"]["messages"]
    assert [m["role"] for m in messages] == ["system", "user"], messages
    assert "Answer in French." in json.dumps(messages[0])
