"""The official `openai` Python client's `client.responses` against a live `agentwire serve`
(started by ../agentwire_server.py on scripted agents, the same as ../openai/agents.mjs): text
with and without a stream (raw events and the SDK's `responses.stream()` accumulator), a
function tool the client runs, three turns chained by `previous_response_id`, the agent's own
tool as an `mcp_call`, background + retrieve + a resumed stream, a stream cut short and
resumed after the last event seen, cancel, and OpenAI's errors."""

import json
import sys
import time
import urllib.request
from pathlib import Path

import openai
import pytest
from openai import OpenAI

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from agentwire_server import AgentwireServer  # noqa: E402

ANSWER = ["Hello ", "from ", "agentwire."]
FILE = {"path": "notes/openai.txt", "content": "written by the agent"}
FINISH = {"type": "finish", "reason": "stop", "usage": {"input_tokens": 3, "output_tokens": 4}}
SLOW = [f"w{i} " for i in range(40)]

SCRIPTS = {
    "talker.json": {
        "turns": [
            [{"type": "reasoning_delta", "text": "The user says hello."}]
            + [{"type": "text_delta", "text": text} for text in ANSWER]
            + [FINISH]
        ]
    },
    "asker.json": {
        "turns": [
            [
                {"type": "text_delta", "text": "Let me look."},
                {"type": "tool_call_start", "id": "call_w1", "name": "get_weather"},
                {"type": "tool_call_delta", "id": "call_w1", "args": '{"city":'},
                {"type": "tool_call_delta", "id": "call_w1", "args": '"Paris"}'},
                {"type": "tool_call_end", "id": "call_w1"},
                {"type": "finish", "reason": "tool_calls"},
            ],
            [{"type": "text_delta", "text": "It is sunny in Paris."}, FINISH],
        ]
    },
    "writer.json": {
        "turns": [
            [
                {"type": "tool_call_start", "id": "call_f1", "name": "write_file"},
                {"type": "tool_call_delta", "id": "call_f1", "args": json.dumps(FILE)},
                {"type": "tool_call_end", "id": "call_f1"},
                {"type": "finish", "reason": "tool_calls"},
            ],
            [{"type": "text_delta", "text": "Written."}, FINISH],
        ]
    },
    "slow.json": {"turns": [[{"type": "text_delta", "text": text} for text in SLOW] + [FINISH]]},
}

CONFIG = """
[[agents]]
name = "talker"
provider = "scripted"
script = "talker.json"

[[agents]]
name = "asker"
provider = "scripted"
script = "asker.json"
tools = []
schema = "function_calling"

[[agents]]
name = "writer"
provider = "scripted"
script = "writer.json"
tools = ["write_file"]
workspace = "ws"

[[agents]]
name = "slow"
provider = "scripted"
script = "slow.json"
tokens_per_second = 10.0
"""

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
    "strict": False,
}


@pytest.fixture(scope="module")
def server():
    with AgentwireServer(CONFIG, SCRIPTS, dirs=("ws",)) as server:
        yield server


@pytest.fixture(scope="module")
def client(server):
    with OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0) as client:
        yield client


def test_a_response_without_a_stream(client):
    response = client.responses.create(model="talker", input="hello")
    assert response.status == "completed"
    assert response.model == "talker"
    assert response.output_text == "".join(ANSWER)
    assert [item.type for item in response.output] == ["reasoning", "message"]
    assert response.output[0].summary[0].text == "The user says hello."
    assert (response.usage.input_tokens, response.usage.output_tokens) == (3, 4)
    assert response.usage.output_tokens_details.reasoning_tokens == 0


def test_a_streamed_response_raw_and_through_the_helper(client):
    events = list(client.responses.create(model="talker", input="hello", stream=True))
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert events[0].type == "response.created"
    assert events[-1].type == "response.completed"
    deltas = [event.delta for event in events if event.type == "response.output_text.delta"]
    assert deltas == ANSWER
    summary = [e.delta for e in events if e.type == "response.reasoning_summary_text.delta"]
    assert summary == ["The user says hello."]
    with client.responses.stream(model="talker", input="hello") as stream:
        snapshots = [e.snapshot for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert snapshots[-1] == "".join(ANSWER)
    assert final.output_text == "".join(ANSWER)


def test_a_function_tool_the_client_runs(client):
    first = client.responses.create(model="asker", input="weather?", tools=[WEATHER])
    calls = [item for item in first.output if item.type == "function_call"]
    assert len(calls) == 1
    assert calls[0].name == "get_weather"
    assert json.loads(calls[0].arguments) == {"city": "Paris"}
    output = {"type": "function_call_output", "call_id": calls[0].call_id, "output": '{"sky": "sunny"}'}
    with client.responses.stream(
        model="asker", previous_response_id=first.id, input=[output], tools=[WEATHER]
    ) as stream:
        second = stream.get_final_response()
    assert second.id != first.id
    assert second.previous_response_id == first.id
    assert second.output_text == "It is sunny in Paris."
    assert client.responses.retrieve(first.id).output_text == "Let me look."


def test_three_turns_chained_by_previous_response_id(client, server):
    previous = None
    ids = []
    for text in ["one", "two", "three"]:
        kwargs = {"previous_response_id": previous} if previous else {}
        response = client.responses.create(model="talker", input=text, **kwargs)
        assert response.output_text == "".join(ANSWER)
        ids.append(response.id)
        previous = response.id
    sessions = {get(server, f"/v1/runs/{id}")["run"]["session_id"] for id in ids}
    assert len(sessions) == 1
    messages = get(server, f"/v1/sessions/{sessions.pop()}")["messages"]
    assert [message["role"] for message in messages] == ["user", "assistant"] * 3


def test_the_agents_own_tool_is_an_mcp_call(client, server):
    response = client.responses.create(model="writer", input="write it")
    call = next(item for item in response.output if item.type == "mcp_call")
    assert (call.name, call.server_label, call.status) == ("write_file", "writer", "completed")
    assert json.loads(call.arguments) == FILE
    assert response.output_text == "Written."
    assert (server.dir / "ws" / FILE["path"]).read_text() == FILE["content"]


def test_background_retrieve_and_resume(client):
    queued = client.responses.create(model="slow", input="go", background=True)
    assert queued.status in ("queued", "in_progress")
    assert queued.background is True
    resumed = list(client.responses.retrieve(queued.id, stream=True, starting_after=4))
    assert [e.sequence_number for e in resumed] == list(range(5, 5 + len(resumed)))
    assert resumed[-1].type == "response.completed"
    deadline = time.monotonic() + 30
    done = client.responses.retrieve(queued.id)
    while done.status != "completed" and time.monotonic() < deadline:
        time.sleep(0.1)
        done = client.responses.retrieve(queued.id)
    assert done.status == "completed"
    assert done.output_text == "".join(SLOW)


def test_a_stream_cut_short_is_resumed_after_the_last_event_seen(client):
    stream = client.responses.create(model="slow", input="go", stream=True)
    seen = []
    for event in stream:
        seen.append(event)
        if len(seen) == 8:
            break
    # Closing the response cuts the connection mid-answer.
    stream.close()
    assert seen[0].type == "response.created"
    last = seen[-1].sequence_number
    resumed = list(client.responses.retrieve(seen[0].response.id, stream=True, starting_after=last))
    assert [e.sequence_number for e in resumed] == list(range(last + 1, last + 1 + len(resumed)))
    assert resumed[-1].type == "response.completed"
    deltas = [e.delta for e in seen + resumed if e.type == "response.output_text.delta"]
    assert "".join(deltas) == "".join(SLOW)


def test_cancel(client):
    queued = client.responses.create(model="slow", input="go", background=True)
    canceled = client.responses.cancel(queued.id)
    assert canceled.id == queued.id
    assert canceled.status == "cancelled"


def test_errors_in_openais_shape(client):
    with pytest.raises(openai.NotFoundError) as raised:
        client.responses.create(model="nobody", input="hi")
    assert raised.value.code == "model_not_found"
    assert raised.value.param == "model"
    assert raised.value.type == "invalid_request_error"
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve("run_nothing")
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(model="talker", input="hi", temperature=7)
    assert raised.value.param == "temperature"


def get(server, path):
    with urllib.request.urlopen(f"{server.url}{path}") as answer:
        return json.load(answer)
