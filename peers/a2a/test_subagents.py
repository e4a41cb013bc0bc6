"""Sub-agents through a live `agentwire serve` (scripted agents with `subagents`), read by the
real a2a-sdk 1.3.0 client and folded by its own TaskManager: a sub-agent's messages are
artifacts of the same task (`<run>:<message>`, naming their run in `metadata.agentwire`), its
lifecycle status updates that keep the task WORKING; an approval three sub-agents down is in the
cleaner's artifact, answered on the task with the approval's own id, after which the task
completes, the file is written and the director's answer is the last artifact's text."""

import asyncio
import sys
import uuid
from pathlib import Path

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers import get_artifact_text, get_data_parts, new_data_part
from a2a.types import a2a_pb2
from google.protobuf.json_format import MessageToDict

from a2a_peer import rebuild

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from agentwire_server import AgentwireServer  # noqa: E402

FILE = {"path": "logs/cleaned.txt", "content": "old.log was here"}


def say(text):
    return [{"type": "text_delta", "text": text}, {"type": "finish", "reason": "stop"}]


def calling(call_id, agent, task):
    args = f'{{"input": "{task}"}}'
    return [
        {"type": "tool_call_start", "id": call_id, "name": agent},
        {"type": "tool_call_delta", "id": call_id, "args": args},
        {"type": "tool_call_end", "id": call_id},
        {"type": "finish", "reason": "tool_calls"},
    ]


SCRIPTS = {
    "cleaner.json": {"turns": [
        [
            {"type": "tool_call_start", "id": "c1", "name": "write_file"},
            {"type": "tool_call_delta", "id": "c1",
             "args": '{"path": "logs/cleaned.txt", "content": "old.log was here"}'},
            {"type": "tool_call_end", "id": "c1"},
            {"type": "finish", "reason": "tool_calls"},
        ],
        say("Cleaned."),
    ]},
    "manager.json": {"turns": [calling("m1", "cleaner", "Clean the logs."), say("The cleaner cleaned.")]},
    "director.json": {"turns": [calling("d1", "manager", "Get the logs cleaned."), say("All clean.")]},
}

CONFIG = """
[[agents]]
name = "cleaner"
provider = "scripted"
script = "cleaner.json"
tools = ["write_file"]
approval = ["write_file"]
workspace = "ws"

[[agents]]
name = "manager"
provider = "scripted"
script = "manager.json"
subagents = ["cleaner"]

[[agents]]
name = "director"
provider = "scripted"
script = "director.json"
subagents = ["manager"]
"""


@pytest.fixture(scope="module")
def server():
    with AgentwireServer(CONFIG, SCRIPTS, dirs=("ws",)) as server:
        yield server


def send(server, message):
    async def go():
        async with httpx.AsyncClient(timeout=10) as http:
            config = ClientConfig(httpx_client=http, streaming=True)
            client = await create_client(f"{server.url}/agents/director", config)
            request = a2a_pb2.SendMessageRequest(message=message)
            return [response async for response in client.send_message(request)]

    return asyncio.run(go())


def ours(metadata) -> dict:
    return MessageToDict(metadata).get("agentwire", {})


def test_an_approval_three_sub_agents_down_is_answered_on_the_task(server):
    responses = send(server, a2a_pb2.Message(
        message_id=f"msg-{uuid.uuid4().hex[:8]}",
        role=a2a_pb2.ROLE_USER,
        parts=[a2a_pb2.Part(text="Clean up")],
    ))
    waiting = rebuild(responses)
    assert a2a_pb2.TaskState.Name(waiting.status.state) == "TASK_STATE_INPUT_REQUIRED"

    # The sub-agents' lifecycles keep the task working until the director itself waits.
    updates = [r.status_update for r in responses if r.HasField("status_update")]
    nested = [ours(u.metadata) for u in updates if "namespace" in ours(u.metadata)]
    created = [(u["agent"], len(u["namespace"])) for u in nested if u["event"] == "run_created"]
    assert created == [("manager", 1), ("cleaner", 2)]
    states = [a2a_pb2.TaskState.Name(u.status.state) for u in updates]
    assert states[-1] == "TASK_STATE_INPUT_REQUIRED"
    assert set(states[:-1]) == {"TASK_STATE_WORKING"}

    # What the cleaner asks is in its artifact, with its own ids.
    cleaner = [a for a in waiting.artifacts if len(ours(a.metadata).get("namespace", [])) == 2]
    assert len(cleaner) == 1
    [request] = [d for d in get_data_parts(cleaner[0].parts) if d.get("type") == "approval_request"]
    assert request["tool_call_id"] == "c1"
    run_id = ours(cleaner[0].metadata)["namespace"][-1]
    assert cleaner[0].artifact_id.startswith(f"{run_id}:")

    then = send(server, a2a_pb2.Message(
        message_id=f"answer-{uuid.uuid4().hex[:8]}",
        role=a2a_pb2.ROLE_USER,
        task_id=waiting.id,
        context_id=waiting.context_id,
        parts=[new_data_part({
            "type": "approval_response",
            "approval_id": request["approval_id"],
            "approved": True,
        })],
    ))
    assert then[0].HasField("task") and then[0].task.id == waiting.id
    task = rebuild(then)
    assert a2a_pb2.TaskState.Name(task.status.state) == "TASK_STATE_COMPLETED"
    assert (server.dir / "ws" / FILE["path"]).read_text() == FILE["content"]
    own = [a for a in task.artifacts if "namespace" not in ours(a.metadata)]
    assert get_artifact_text(own[-1], delimiter="") == "All clean."
    # The cleaner's result, in its run's new message.
    results = [
        d
        for a in task.artifacts
        if ours(a.metadata).get("namespace", [None])[-1] == run_id
        for d in get_data_parts(a.parts)
        if d.get("type") == "tool_result"
    ]
    assert [r["tool_call_id"] for r in results] == ["c1"]
