"""The real a2a-sdk 1.3.0 client (JSON-RPC transport) against a live `agentwire serve` with
scripted agents: the card from /.well-known/agent-card.json, blocking `SendMessage`, streamed
`SendStreamingMessage` (items as the SDK types them, folded by its own TaskManager), the approval
answered on the task (approved: the file is written; denied: it is not), `GetTask`, `CancelTask`
and `SubscribeToTask`, `returnImmediately` (the SDK's polling mode: a background task) and
`ListTasks` paged by `pageToken`, and the SDK's typed errors for unknown, finished and
uncancelable tasks and a bad page token."""

import asyncio
import sys
import uuid
from pathlib import Path

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.client.card_resolver import A2ACardResolver
from a2a.helpers import get_artifact_text, get_data_parts, new_data_part
from a2a.types import a2a_pb2
from a2a.utils.errors import (
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from google.protobuf.json_format import MessageToDict

from a2a_peer import rebuild

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from agentwire_server import AgentwireServer  # noqa: E402

ANSWER = ["Hello ", "from ", "agentwire."]
FILE = {"path": "notes/a2a.txt", "content": "written after approval"}
ARGS = '{"path": "notes/a2a.txt", "content": "written after approval"}'

SCRIPTS = {
    "talker.json": {"turns": [[
        *({"type": "text_delta", "text": text} for text in ANSWER),
        {"type": "finish", "reason": "stop", "usage": {"input_tokens": 3, "output_tokens": 3}},
    ]] * 8},
    "writer.json": {"turns": [
        [
            {"type": "text_delta", "text": "Let me write it."},
            {"type": "tool_call_start", "id": "c1", "name": "write_file"},
            {"type": "tool_call_delta", "id": "c1", "args": ARGS[:20]},
            {"type": "tool_call_delta", "id": "c1", "args": ARGS[20:]},
            {"type": "tool_call_end", "id": "c1"},
            {"type": "finish", "reason": "tool_calls"},
        ],
        [{"type": "text_delta", "text": "Done."}, {"type": "finish", "reason": "stop"}],
    ]},
    # Still working when `returnImmediately` answers (20 words at 20 tokens/s).
    "background.json": {"turns": [[
        *({"type": "text_delta", "text": f"bg{i} "} for i in range(20)),
        {"type": "finish", "reason": "stop"},
    ]] * 4},
    # Long enough at 5 tokens/s that a cancel always lands mid-run.
    "slow.json": {"turns": [[
        *({"type": "text_delta", "text": f"word{i} "} for i in range(200)),
        {"type": "finish", "reason": "stop"},
    ]]},
}

CONFIG = """
[[agents]]
name = "talker"
description = "Says hello."
provider = "scripted"
script = "talker.json"

[[agents]]
name = "writer"
provider = "scripted"
script = "writer.json"
tools = ["write_file"]
approval = ["write_file"]
workspace = "ws-approve"

[[agents]]
name = "denied"
provider = "scripted"
script = "writer.json"
tools = ["write_file"]
approval = ["write_file"]
workspace = "ws-deny"

[[agents]]
name = "background"
provider = "scripted"
script = "background.json"
tokens_per_second = 20.0

[[agents]]
name = "slow"
provider = "scripted"
script = "slow.json"
tokens_per_second = 5.0
"""


@pytest.fixture(scope="module")
def server():
    with AgentwireServer(CONFIG, SCRIPTS, dirs=("ws-approve", "ws-deny")) as server:
        yield server


def run(coroutine):
    return asyncio.run(coroutine)


async def client_for(
    http: httpx.AsyncClient, url: str, streaming: bool = True, polling: bool = False
):
    config = ClientConfig(httpx_client=http, streaming=streaming, polling=polling)
    return await create_client(url, config)


def user(text: str, **ids) -> a2a_pb2.Message:
    return a2a_pb2.Message(
        message_id=f"msg-{uuid.uuid4().hex[:8]}",
        role=a2a_pb2.ROLE_USER,
        parts=[a2a_pb2.Part(text=text)],
        **ids,
    )


def state(task: a2a_pb2.Task) -> str:
    return a2a_pb2.TaskState.Name(task.status.state)


def data_parts(task: a2a_pb2.Task) -> list[dict]:
    return [data for artifact in task.artifacts for data in get_data_parts(artifact.parts)]


def test_the_card_is_resolved_from_the_well_known_path(server):
    async def go():
        async with httpx.AsyncClient(timeout=10) as http:
            root = await A2ACardResolver(http, server.url).get_agent_card()
            writer = await A2ACardResolver(http, f"{server.url}/agents/writer").get_agent_card()
        return root, writer

    root, writer = run(go())
    assert root.name == "talker"
    assert root.description == "Says hello."
    assert root.capabilities.streaming
    [interface] = root.supported_interfaces
    assert (interface.url, interface.protocol_binding) == (f"{server.url}/a2a", "JSONRPC")
    assert writer.name == "writer"
    assert writer.supported_interfaces[0].url == f"{server.url}/agents/writer/a2a"


def test_send_message_blocks_until_the_task_is_done(server):
    async def go():
        async with httpx.AsyncClient(timeout=10) as http:
            client = await client_for(http, server.url, streaming=False)
            request = a2a_pb2.SendMessageRequest(message=user("hello", context_id="ctx-blocking"))
            return [response async for response in client.send_message(request)]

    [response] = run(go())
    assert response.HasField("task")
    task = response.task
    assert state(task) == "TASK_STATE_COMPLETED"
    assert task.context_id == "ctx-blocking"
    [artifact] = task.artifacts
    assert get_artifact_text(artifact, delimiter="") == "".join(ANSWER)


def test_send_streaming_message_streams_typed_items(server):
    async def go():
        async with httpx.AsyncClient(timeout=10) as http:
            client = await client_for(http, server.url)
            request = a2a_pb2.SendMessageRequest(message=user("hello"))
            return [response async for response in client.send_message(request)]

    responses = run(go())
    kinds = [response.WhichOneof("payload") for response in responses]
    assert kinds[0] == "task", kinds
    assert "artifact_update" in kinds and kinds[-1] == "status_update", kinds
    first = responses[0].task
    assert state(first) == "TASK_STATE_SUBMITTED"
    chunks = [r.artifact_update for r in responses if r.HasField("artifact_update")]
    # The message's step start (a DataPart), then its text as it streamed.
    [step] = get_data_parts(chunks[0].artifact.parts)
    assert step["type"] == "step_start"
    assert [chunk.artifact.parts[0].text for chunk in chunks[1:]] == ANSWER
    assert [(chunk.append, chunk.last_chunk) for chunk in chunks] == [
        (False, False), (True, False), (True, False), (True, True)
    ]
    assert all(chunk.task_id == first.id for chunk in chunks)
    task = rebuild(responses)
    assert (task.id, task.context_id) == (first.id, first.context_id)
    assert state(task) == "TASK_STATE_COMPLETED"
    assert get_artifact_text(task.artifacts[0], delimiter="") == "".join(ANSWER)


@pytest.mark.parametrize("approved", [True, False])
def test_an_approval_answered_on_the_task_continues_it(server, approved):
    agent = "writer" if approved else "denied"

    async def send(message):
        async with httpx.AsyncClient(timeout=10) as http:
            client = await client_for(http, f"{server.url}/agents/{agent}")
            request = a2a_pb2.SendMessageRequest(message=message)
            return [response async for response in client.send_message(request)]

    waiting = rebuild(run(send(user("Write the note"))))
    [request] = [d for d in data_parts(waiting) if d.get("type") == "approval_request"]
    answer = a2a_pb2.Message(
        message_id=f"answer-{agent}",
        role=a2a_pb2.ROLE_USER,
        task_id=waiting.id,
        context_id=waiting.context_id,
        parts=[new_data_part({
            "type": "approval_response",
            "approval_id": request["approval_id"],
            "approved": approved,
            **({} if approved else {"reason": "not now"}),
        })],
    )
    then = run(send(answer))
    assert state(waiting) == "TASK_STATE_INPUT_REQUIRED"
    calls = [d for d in data_parts(waiting) if d.get("type") == "tool_call"]
    assert [(c["tool_name"], c["args"]) for c in calls] == [("write_file", FILE)]
    assert request["tool_call_id"] == "c1"
    # The answer's stream is the same task, continued to its end.
    assert then[0].HasField("task") and then[0].task.id == waiting.id
    task = rebuild(then)
    assert state(task) == "TASK_STATE_COMPLETED"
    assert get_artifact_text(task.artifacts[-1], delimiter="") == "Done."
    results = [d for d in data_parts(task) if d.get("type") in ("tool_result", "tool_error")]
    assert [r["tool_call_id"] for r in results] == ["c1"]
    written = server.dir / ("ws-approve" if approved else "ws-deny") / FILE["path"]
    if approved:
        assert results[0]["type"] == "tool_result"
        assert written.read_text() == FILE["content"]
    else:
        assert not written.exists(), "a denied write leaves no file"


def test_get_task_and_subscribe(server):
    async def go():
        async with httpx.AsyncClient(timeout=10) as http:
            client = await client_for(http, f"{server.url}/agents/writer")
            ask = a2a_pb2.SendMessageRequest(message=user("Write it again", context_id="ctx-get"))
            streamed = [response async for response in client.send_message(ask)]
            task_id = streamed[0].task.id
            got = await client.get_task(a2a_pb2.GetTaskRequest(id=task_id))
            short = await client.get_task(a2a_pb2.GetTaskRequest(id=task_id, history_length=0))
            again = [r async for r in client.subscribe(a2a_pb2.SubscribeToTaskRequest(id=task_id))]
            errors = {}
            for name, call in {
                "unknown": client.get_task(a2a_pb2.GetTaskRequest(id="run_nope")),
                "other_agent": (await client_for(http, server.url)).get_task(
                    a2a_pb2.GetTaskRequest(id=task_id)
                ),
            }.items():
                try:
                    await call
                except Exception as error:  # noqa: BLE001: the SDK's typed error is the point
                    errors[name] = error
            return streamed, got, short, again, errors

    streamed, got, short, again, errors = run(go())
    folded = rebuild(streamed)
    assert (got.id, got.context_id) == (folded.id, "ctx-get")
    assert state(got) == "TASK_STATE_INPUT_REQUIRED"
    # The same artifacts as the SDK folded from the stream. (Their metadata differs: the SDK
    # replaces a top-level metadata key on append, so it keeps only the last chunk's
    # `agentwire`; the server merges it, keeping the first chunk's `created_at` too.)
    assert [(a.artifact_id, [MessageToDict(p) for p in a.parts]) for a in got.artifacts] == [
        (a.artifact_id, [MessageToDict(p) for p in a.parts]) for a in folded.artifacts
    ]
    [asked] = got.history
    assert asked.role == a2a_pb2.ROLE_USER and asked.parts[0].text == "Write it again"
    assert asked.task_id == got.id
    assert len(short.history) == 0
    # A resubscription begins with the task and ends where the task waits.
    assert again[0].HasField("task") and again[0].task.id == got.id
    assert state(rebuild(again)) == "TASK_STATE_INPUT_REQUIRED"
    assert isinstance(errors["unknown"], TaskNotFoundError), errors
    assert isinstance(errors["other_agent"], TaskNotFoundError), errors


def test_cancel_task_stops_a_running_task(server):
    async def go():
        async with httpx.AsyncClient(timeout=10) as http:
            client = await client_for(http, f"{server.url}/agents/slow")
            stream = client.send_message(a2a_pb2.SendMessageRequest(message=user("Talk")))
            responses = [await anext(stream)]
            task_id = responses[0].task.id
            # The run streams; cancel it from the side, then read the stream to its end.
            responses.append(await anext(stream))
            canceled = await client.cancel_task(a2a_pb2.CancelTaskRequest(id=task_id))
            responses += [response async for response in stream]
            got = await client.get_task(a2a_pb2.GetTaskRequest(id=task_id))
            errors = {}
            calls = {
                "cancel_again": client.cancel_task(a2a_pb2.CancelTaskRequest(id=task_id)),
                "cancel_unknown": client.cancel_task(a2a_pb2.CancelTaskRequest(id="run_nope")),
                "subscribe_over": anext(client.subscribe(a2a_pb2.SubscribeToTaskRequest(id=task_id))),
            }
            for name, call in calls.items():
                try:
                    await call
                except Exception as error:  # noqa: BLE001: the SDK's typed error is the point
                    errors[name] = error
            return task_id, responses, canceled, got, errors

    task_id, responses, canceled, got, errors = run(go())
    assert canceled.id == task_id
    assert state(canceled) == "TASK_STATE_CANCELED"
    assert state(got) == "TASK_STATE_CANCELED"
    task = rebuild(responses)
    assert state(task) == "TASK_STATE_CANCELED"
    said = get_artifact_text(task.artifacts[0], delimiter="") if task.artifacts else ""
    assert len(said.split()) < 200, "the run stopped early"
    assert isinstance(errors["cancel_again"], TaskNotCancelableError), errors
    assert isinstance(errors["cancel_unknown"], TaskNotFoundError), errors
    assert isinstance(errors["subscribe_over"], UnsupportedOperationError), errors


def test_return_immediately_answers_at_once_and_list_tasks_pages_every_task_once(server):
    async def go():
        async with httpx.AsyncClient(timeout=10) as http:
            url = f"{server.url}/agents/background"
            client = await client_for(http, url, streaming=False, polling=True)
            first, done = None, []
            # One task at a time: a context takes its next message once its task has ended.
            for n in range(3):
                request = a2a_pb2.SendMessageRequest(message=user(f"job {n}", context_id="ctx-bg"))
                [response] = [r async for r in client.send_message(request)]
                first = first or response.task
                # Nobody waits on the task; polling sees it end.
                for _ in range(200):
                    task = await client.get_task(a2a_pb2.GetTaskRequest(id=response.task.id))
                    if state(task) == "TASK_STATE_COMPLETED":
                        break
                    await asyncio.sleep(0.05)
                done.append(task)
            pages, token = [], ""
            while True:
                page = await client.list_tasks(
                    a2a_pb2.ListTasksRequest(context_id="ctx-bg", page_size=2, page_token=token)
                )
                pages.append(page)
                token = page.next_page_token
                if not token:
                    break
            whole = await client.list_tasks(
                a2a_pb2.ListTasksRequest(
                    context_id="ctx-bg",
                    status=a2a_pb2.TASK_STATE_COMPLETED,
                    include_artifacts=True,
                    history_length=1,
                )
            )
            working = await client.list_tasks(
                a2a_pb2.ListTasksRequest(context_id="ctx-bg", status=a2a_pb2.TASK_STATE_WORKING)
            )
            other = await client_for(http, server.url, streaming=False)
            elsewhere = await other.list_tasks(a2a_pb2.ListTasksRequest(context_id="ctx-bg"))
            with pytest.raises(InvalidParamsError):
                await client.list_tasks(a2a_pb2.ListTasksRequest(page_token="not-a-token"))
        return first, done, pages, whole, working, elsewhere

    first, done, pages, whole, working, elsewhere = run(go())
    assert state(first) in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    assert first.context_id == "ctx-bg"
    assert [state(task) for task in done] == ["TASK_STATE_COMPLETED"] * 3
    assert get_artifact_text(done[0].artifacts[0], delimiter="") == "".join(
        f"bg{i} " for i in range(20)
    )
    listed = [task.id for page in pages for task in page.tasks]
    # Newest first, every task once, two a page.
    assert listed == [task.id for task in reversed(done)]
    assert [len(page.tasks) for page in pages] == [2, 1]
    assert all(page.total_size == 3 and page.page_size == 2 for page in pages)
    assert not any(task.artifacts for page in pages for task in page.tasks)
    assert whole.total_size == 3 and whole.next_page_token == ""
    assert [task.id for task in whole.tasks] == listed
    assert all(len(task.artifacts) == 1 and len(task.history) == 1 for task in whole.tasks)
    assert whole.tasks[0].history[0].parts[0].text == "job 2"
    assert working.total_size == 0 and not working.tasks
    # Each agent lists only its own tasks.
    assert elsewhere.total_size == 0
