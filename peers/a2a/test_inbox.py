"""The real a2a-sdk 1.3.0 client sending a message while a task of its context streams, against
a live `agentwire serve`, in every mode: the mode is the request's own `metadata.mode`
(`SendMessageRequest.metadata`), and the message names the context (`contextId`) or the working
task itself (`taskId`). A second client sends it once the first client's stream has brought the
task's first text chunk, and both streams are read to their ends:

- steer: the second stream is the working task (its `task` item WORKING, every status WORKING
  until COMPLETED), the steer a status update whose message is the user's (which the SDK's
  TaskManager keeps in the task's history) and its outcome `delivered` at step 1 in
  `metadata.agentwire.input`; the first stream shows both too;
- queue: a new task of the context, streamed once the first has completed (which heard the
  message `queued`), its outcome `delivered` at step 0;
- interrupt, rollback: the first task ends CANCELED, cut short, and the message's new task runs
  at once; the context's history keeps what the canceled task said (interrupt) or holds no
  trace of it (rollback);
- reject: the SDK raises `InvalidParamsError`, whose data says `session_busy`.

A blocking `SendMessage` (the client with `streaming=False`) is answered with the task once it
has settled: the working task for a steer, the message's own task for a queued message.

Each case also checks the session's history (`GET /v1/sessions/{context}`) and inbox
(`GET /v1/sessions/{context}/messages`) on the server afterwards."""

import asyncio
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers import get_artifact_text
from a2a.types import a2a_pb2
from a2a.utils.errors import InvalidParamsError
from google.protobuf.json_format import MessageToDict
from google.protobuf.struct_pb2 import Struct

from a2a_peer import rebuild

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from agentwire_server import AgentwireServer  # noqa: E402

WORDS = [f"word{n} " for n in range(40)]
SAID = "".join(WORDS)

# Every task: paced text and a `list_files` call (a step boundary, where a steer joins), then
# an answer. 40 words at 20 tokens/s: the first task still streams for about two seconds after
# its first text chunk reaches the client, long after the second message is in.
SCRIPTS = {
    "worker.json": {"turns": [
        [
            *({"type": "text_delta", "text": text} for text in WORDS),
            {"type": "tool_call_start", "id": "l1", "name": "list_files"},
            {"type": "tool_call_delta", "id": "l1", "args": '{"path": "."}'},
            {"type": "tool_call_end", "id": "l1"},
            {"type": "finish", "reason": "tool_calls"},
        ],
        [{"type": "text_delta", "text": "done"}, {"type": "finish", "reason": "stop"}],
    ]},
}

CONFIG = """
[[agents]]
name = "worker"
provider = "scripted"
script = "worker.json"
tokens_per_second = 20.0
tools = ["list_files"]
workspace = "ws"
"""

TARGETS = ("context", "task")
WORKING = "TASK_STATE_WORKING"
COMPLETED = "TASK_STATE_COMPLETED"


@pytest.fixture(scope="module")
def server():
    with AgentwireServer(CONFIG, SCRIPTS, dirs=("ws",)) as server:
        yield server


@dataclass
class Busy:
    """What a busy-context round left: the context, the first task's id, the message sent while
    it streamed, and each client's stream (the second's, or the error the SDK raised)."""

    context: str
    first_task: str
    sent: a2a_pb2.Message
    first: list[a2a_pb2.StreamResponse]
    second: list[a2a_pb2.StreamResponse] | Exception


def user(text: str, **ids) -> a2a_pb2.Message:
    return a2a_pb2.Message(
        message_id=f"msg-{uuid.uuid4().hex[:8]}",
        role=a2a_pb2.ROLE_USER,
        parts=[a2a_pb2.Part(text=text)],
        **ids,
    )


def has_text(response: a2a_pb2.StreamResponse) -> bool:
    return response.HasField("artifact_update") and any(
        part.HasField("text") for part in response.artifact_update.artifact.parts
    )


def busy(server, mode: str, target: str, text: str, streaming: bool = True) -> Busy:
    """Starts a streaming task in a fresh context and, once its first text chunk is in, sends
    `text` with `mode` from a second client (`streaming=False`: a blocking `SendMessage`),
    naming the context or the task (`target`); reads both answers to their ends."""
    context = f"ctx-{mode}-{target}-{uuid.uuid4().hex[:6]}"

    async def go() -> Busy:
        async with httpx.AsyncClient(timeout=60) as http:
            config = ClientConfig(httpx_client=http, streaming=True)
            first_client = await create_client(server.url, config)
            second_client = await create_client(
                server.url, ClientConfig(httpx_client=http, streaming=streaming)
            )
            start = a2a_pb2.SendMessageRequest(message=user("start", context_id=context))
            stream = first_client.send_message(start)
            first = []
            # The task streams once its first text chunk is here; no clock involved.
            while not first or not has_text(first[-1]):
                first.append(await anext(stream))
            task_id = first[0].task.id
            ids = {"context_id": context} if target == "context" else {"task_id": task_id}
            sent = user(text, **ids)
            metadata = Struct()
            metadata.update({"mode": mode})
            request = a2a_pb2.SendMessageRequest(message=sent, metadata=metadata)

            async def rest():
                first.extend([response async for response in stream])

            async def second():
                try:
                    return [response async for response in second_client.send_message(request)]
                except Exception as error:  # noqa: BLE001: the SDK's typed error is the point
                    return error

            _, answer = await asyncio.gather(rest(), second())
            return Busy(context, task_id, sent, first, answer)

    return asyncio.run(go())


def status_updates(responses) -> list[a2a_pb2.TaskStatusUpdateEvent]:
    return [r.status_update for r in responses if r.HasField("status_update")]


def states(responses) -> list[str]:
    return [a2a_pb2.TaskState.Name(update.status.state) for update in status_updates(responses)]


def state(task: a2a_pb2.Task) -> str:
    return a2a_pb2.TaskState.Name(task.status.state)


def outcomes(responses) -> list[dict]:
    """The `metadata.agentwire.input` of the status updates: what became of messages sent."""
    found = []
    for update in status_updates(responses):
        ours = MessageToDict(update.metadata).get("agentwire", {})
        if "input" in ours:
            found.append(ours["input"])
    return found


def steers(responses) -> list[a2a_pb2.Message]:
    """The user's messages shown in status updates: steers the task took."""
    return [
        update.status.message
        for update in status_updates(responses)
        if update.status.HasField("message") and update.status.message.role == a2a_pb2.ROLE_USER
    ]


def texts(task: a2a_pb2.Task) -> list[str]:
    return [get_artifact_text(artifact, delimiter="") for artifact in task.artifacts]


def history(server, context: str) -> list[str]:
    """The context's history on the server, a `role: text` line per message."""
    session = httpx.get(f"{server.url}/v1/sessions/{context}", timeout=10).json()
    return [
        f"{message['role']}: " + "".join(
            part["text"] for part in message["parts"] if part["type"] == "text"
        )
        for message in session["messages"]
    ]


def inbox(server, context: str) -> list[dict]:
    """The messages sent into the context while it was busy, as the server keeps them."""
    return httpx.get(f"{server.url}/v1/sessions/{context}/messages", timeout=10).json()["messages"]


def get_task(server, task_id: str) -> a2a_pb2.Task:
    async def go():
        async with httpx.AsyncClient(timeout=10) as http:
            client = await create_client(server.url, ClientConfig(httpx_client=http))
            return await client.get_task(a2a_pb2.GetTaskRequest(id=task_id))

    return asyncio.run(go())


@pytest.mark.parametrize("target", TARGETS)
def test_steer_joins_the_working_task(server, target):
    busy_round = busy(server, "steer", target, "answer in French")
    sent, second = busy_round.sent, busy_round.second
    assert not isinstance(second, Exception), repr(second)
    # The stream is the working task, from the moment of the post, and it stays WORKING.
    assert second[0].HasField("task"), second[0]
    assert second[0].task.id == busy_round.first_task
    assert state(second[0].task) == WORKING
    assert states(second)[-1] == COMPLETED
    assert set(states(second)[:-1]) == {WORKING}, states(second)
    delivered = {"client_message_id": sent.message_id, "outcome": "delivered", "step": 1}
    assert outcomes(second) == [delivered]
    for responses in (second, busy_round.first):
        [steer] = steers(responses)
        assert steer.message_id == sent.message_id
        assert (steer.task_id, steer.context_id) == (busy_round.first_task, busy_round.context)
        assert [part.text for part in steer.parts] == ["answer in French"]
    assert outcomes(busy_round.first) == [delivered]
    # The SDK's TaskManager keeps the steer in the task's history, never in an artifact (the
    # agent's output): the words before it, then the answer after it.
    for responses in (second, busy_round.first):
        task = rebuild(responses)
        assert (task.id, state(task)) == (busy_round.first_task, COMPLETED)
        assert [m.message_id for m in task.history if m.role == a2a_pb2.ROLE_USER] == [
            sent.message_id
        ]
        assert texts(task)[-1] == "done"
        assert all("French" not in said for said in texts(task))
    assert texts(rebuild(busy_round.first)) == [SAID, "done"]
    assert history(server, busy_round.context) == [
        "user: start", f"assistant: {SAID}", "user: answer in French", "assistant: done",
    ]
    [entry] = inbox(server, busy_round.context)
    assert (entry["client_message_id"], entry["mode"]) == (sent.message_id, "steer")
    assert (entry["outcome"], entry["run_id"], entry["step"]) == (
        "delivered", busy_round.first_task, 1,
    )


@pytest.mark.parametrize("target", TARGETS)
def test_queue_runs_a_new_task_after_the_working_one(server, target):
    busy_round = busy(server, "queue", target, "then this")
    sent, second = busy_round.sent, busy_round.second
    assert not isinstance(second, Exception), repr(second)
    queued = {"client_message_id": sent.message_id, "outcome": "queued"}
    assert outcomes(busy_round.first) == [queued]
    first = rebuild(busy_round.first)
    assert state(first) == COMPLETED
    assert "".join(texts(first)) == f"{SAID}done"
    # A task of its own in the same context, from its start.
    assert second[0].HasField("task"), second[0]
    task = second[0].task
    assert task.id != busy_round.first_task
    assert task.context_id == busy_round.context
    assert outcomes(second) == [
        {"client_message_id": sent.message_id, "outcome": "delivered", "step": 0}
    ]
    assert not steers(second) and not steers(busy_round.first)
    answer = rebuild(second)
    assert (answer.id, state(answer)) == (task.id, COMPLETED)
    assert "".join(texts(answer)) == f"{SAID}done"
    assert history(server, busy_round.context) == [
        "user: start", f"assistant: {SAID}done", "user: then this", f"assistant: {SAID}done",
    ]
    [entry] = inbox(server, busy_round.context)
    assert (entry["client_message_id"], entry["mode"]) == (sent.message_id, "queue")
    assert (entry["outcome"], entry["run_id"], entry["step"]) == ("delivered", task.id, 0)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("mode", ["interrupt", "rollback"])
def test_interrupt_and_rollback_cancel_the_working_task(server, mode, target):
    busy_round = busy(server, mode, target, "do this instead")
    sent, second = busy_round.sent, busy_round.second
    assert not isinstance(second, Exception), repr(second)
    # The first task ends CANCELED, cut short, as its client and GetTask see it.
    first = rebuild(busy_round.first)
    assert state(first) == "TASK_STATE_CANCELED"
    [cut] = texts(first)
    assert cut and SAID.startswith(cut) and cut != SAID, cut
    assert state(get_task(server, busy_round.first_task)) == "TASK_STATE_CANCELED"
    # The message runs at once, as a new task of the context.
    assert second[0].HasField("task"), second[0]
    task = second[0].task
    assert task.id != busy_round.first_task
    assert task.context_id == busy_round.context
    assert outcomes(second) == [
        {"client_message_id": sent.message_id, "outcome": "delivered", "step": 0}
    ]
    answer = rebuild(second)
    assert (answer.id, state(answer)) == (task.id, COMPLETED)
    assert "".join(texts(answer)) == f"{SAID}done"
    # Interrupt keeps what the canceled task said; rollback takes the task out of the history.
    kept = ["user: start", f"assistant: {cut}"] if mode == "interrupt" else []
    assert history(server, busy_round.context) == [
        *kept, "user: do this instead", f"assistant: {SAID}done",
    ]
    [entry] = inbox(server, busy_round.context)
    assert (entry["client_message_id"], entry["mode"]) == (sent.message_id, mode)
    assert (entry["outcome"], entry["run_id"]) == ("delivered", task.id)
    rolled_back = busy_round.first_task if mode == "rollback" else None
    assert entry.get("rollback_of") == rolled_back


@pytest.mark.parametrize("target", TARGETS)
def test_reject_is_the_sdks_typed_error(server, target):
    busy_round = busy(server, "reject", target, "now!")
    assert isinstance(busy_round.second, InvalidParamsError), repr(busy_round.second)
    assert busy_round.second.data == {"code": "session_busy"}
    assert busy_round.first_task in str(busy_round.second)
    # The working task goes on as if nothing was sent.
    first = rebuild(busy_round.first)
    assert state(first) == COMPLETED
    assert "".join(texts(first)) == f"{SAID}done"
    assert outcomes(busy_round.first) == []
    assert history(server, busy_round.context) == ["user: start", f"assistant: {SAID}done"]
    assert inbox(server, busy_round.context) == []


@pytest.mark.parametrize("target", TARGETS)
def test_a_blocking_send_message_answers_with_the_task_once_settled(server, target):
    # A steer's answer is the working task once it has completed; a queued message's is its own.
    steered = busy(server, "steer", target, "answer in French", streaming=False)
    assert not isinstance(steered.second, Exception), repr(steered.second)
    [response] = steered.second
    assert response.task.id == steered.first_task
    assert state(response.task) == COMPLETED
    assert texts(response.task) == [SAID, "done"]
    assert history(server, steered.context) == [
        "user: start", f"assistant: {SAID}", "user: answer in French", "assistant: done",
    ]
    queued = busy(server, "queue", target, "then this", streaming=False)
    assert not isinstance(queued.second, Exception), repr(queued.second)
    [response] = queued.second
    assert response.task.id != queued.first_task
    assert response.task.context_id == queued.context
    assert state(response.task) == COMPLETED
    assert "".join(texts(response.task)) == f"{SAID}done"
