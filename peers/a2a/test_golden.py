"""The real a2a-sdk 1.3.0 client reads every golden A2A transcript of agentwire over HTTP, and
rebuilds the canonical scenario's messages; it rejects malformed items; the requests it sends
are kept as a golden file that the Rust request decoder reads."""

import json
import os

import pytest
from a2a.client import A2AClientError
from a2a.helpers import get_artifact_text, new_data_part
from a2a.types import a2a_pb2
from a2a.utils.errors import TaskNotFoundError
from google.protobuf.json_format import MessageToDict, ParseError

from a2a_peer import GOLDEN, TranscriptServer, expected_parts, fold, rebuild, send, task_state

SCENARIOS = sorted(path.stem for path in (GOLDEN / "scenarios").glob("*.json"))
CARD = json.loads((GOLDEN / "a2a" / "agent-card.json").read_text())


def user_message(text="Hi", **ids) -> a2a_pb2.Message:
    return a2a_pb2.Message(
        message_id="msg_user", role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text=text)], **ids
    )


@pytest.fixture
def server():
    with TranscriptServer(CARD) as server:
        yield server


def test_every_scenario_has_a_transcript():
    assert len(SCENARIOS) >= 9
    for name in SCENARIOS:
        assert (GOLDEN / "a2a" / f"{name}.sse").exists(), name


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_client_rebuilds_the_scenario(server, name):
    scenario = json.loads((GOLDEN / "scenarios" / f"{name}.json").read_text())
    server.transcript = (GOLDEN / "a2a" / f"{name}.sse").read_bytes()
    responses = send(server, user_message(scenario["input"][0]["parts"][0]["text"]))

    assert responses[0].HasField("task"), "a task stream begins with the task"
    assert server.requests[0]["method"] == "SendStreamingMessage"
    task = rebuild(responses)
    assert (task.id, task.context_id) == ("run_1", "ses_1")
    assert a2a_pb2.TaskState.Name(task.status.state) == task_state(scenario["status"])

    # The answer is the artifacts: one per message, its parts in order. A sub-agent's messages
    # are artifacts of the same task, `<run>:<message>`, naming their run in their metadata.
    def run_of(artifact):
        ours = MessageToDict(artifact.metadata).get("agentwire", {})
        return tuple(ours.get("namespace", ()))

    own = [artifact for artifact in task.artifacts if not run_of(artifact)]
    messages = [message for message in scenario["messages"] if message["parts"]]
    assert [artifact.artifact_id for artifact in own] == [m["id"] for m in messages]
    for artifact, message in zip(own, messages):
        assert fold(artifact) == expected_parts(message), artifact.artifact_id
        texts = [part["text"] for part in message["parts"] if part["type"] == "text"]
        assert get_artifact_text(artifact, delimiter="") == "".join(texts)
    nested = {artifact.artifact_id: artifact for artifact in task.artifacts if run_of(artifact)}
    expected_nested = {
        f"{run['run_id']}:{message['id']}": (run, message)
        for run in scenario.get("subagents", [])
        for message in run["messages"]
        if message["parts"]
    }
    assert sorted(nested) == sorted(expected_nested)
    for artifact_id, (run, message) in expected_nested.items():
        artifact = nested[artifact_id]
        assert run_of(artifact) == tuple(run["namespace"]), artifact_id
        assert fold(artifact) == expected_parts(message), artifact_id

    # A failure's reason is the status message, for A2A clients to show.
    error = scenario["status"].get("error")
    if error:
        assert task.status.message.parts[0].text == error["message"]
        assert task.status.message.role == a2a_pb2.ROLE_AGENT
    else:
        assert not task.status.HasField("message")
    # agentwire's own run status rides along in the status metadata.
    status_update = [r.status_update for r in responses if r.HasField("status_update")][-1]
    assert MessageToDict(status_update.metadata)["agentwire"]["status"] == scenario["status"]["status"]


def test_sub_agents_report_their_runs_in_status_updates_that_keep_the_tasks_state(server):
    scenario = json.loads((GOLDEN / "scenarios" / "subagent_approval.json").read_text())
    server.transcript = (GOLDEN / "a2a" / "subagent_approval.sse").read_bytes()
    responses = send(server, user_message("Clean up the logs"))
    updates = [r.status_update for r in responses if r.HasField("status_update")]
    nested = [MessageToDict(u.metadata)["agentwire"] for u in updates if "namespace" in MessageToDict(u.metadata)["agentwire"]]
    created = [(u["run_id"], u["agent"], u["parent_tool_call_id"]) for u in nested if u["event"] == "run_created"]
    assert created == [(run["run_id"], run["agent"], run["parent_tool_call_id"]) for run in scenario["subagents"]]
    waiting = [tuple(u["namespace"]) for u in nested if u.get("status") == "awaiting"]
    assert waiting == [("run_b", "run_c", "run_d"), ("run_b", "run_c"), ("run_b",)], "innermost first"
    # The task works until the run itself waits: a sub-agent's status never moves it.
    states = [a2a_pb2.TaskState.Name(u.status.state) for u in updates]
    assert states[-1] == "TASK_STATE_INPUT_REQUIRED"
    assert set(states[:-1]) == {"TASK_STATE_WORKING"}
    # The approval the client must answer is in the cleaner's artifact, with its own ids.
    task = rebuild(responses)
    cleaner = next(a for a in task.artifacts if a.artifact_id == "run_d:msg_1")
    request = MessageToDict(cleaner.parts[-1])["data"]
    assert request == {
        "type": "approval_request",
        "approval_id": "apr_1",
        "tool_call_id": "call_del",
        "reason": "delete_file changes the workspace",
    }


def test_streamed_text_arrives_in_chunks(server):
    server.transcript = (GOLDEN / "a2a" / "text.sse").read_bytes()
    responses = send(server, user_message())
    chunks = [r.artifact_update for r in responses if r.HasField("artifact_update")]
    assert [chunk.artifact.parts[0].text for chunk in chunks] == [
        "Hello! ", "How can I ", "help you today?"
    ]
    assert [(chunk.append, chunk.last_chunk) for chunk in chunks] == [
        (False, False), (True, False), (True, True)
    ]


def corrupt(name: str, old: str, new: str) -> bytes:
    wire = (GOLDEN / "a2a" / f"{name}.sse").read_text()
    assert old in wire
    return wire.replace(old, new, 1).encode()


@pytest.mark.parametrize(
    ("transcript", "error"),
    [
        (lambda: b"data: {not json\n\n", A2AClientError),
        (lambda: b'data: {"jsonrpc":"2.0","id":1}\n\n', A2AClientError),
        (lambda: corrupt("text", '"append":true', '"append":"yes"'), ParseError),
        (lambda: corrupt("text", '{"text":"How can I "}', '{"text":5}'), ParseError),
        (lambda: corrupt("tool_call", '"artifactId":"msg_1"', '"artifactId":7'), ParseError),
        (lambda: corrupt("text", '"lastChunk":true', '"lastChunk":"yes"'), ParseError),
        (
            lambda: b'data: {"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Task not found"}}\n\n',
            TaskNotFoundError,
        ),
        (
            lambda: b'event: error\ndata: {"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}\n\n',
            Exception,
        ),
    ],
)
def test_the_client_rejects_malformed_items(server, transcript, error):
    server.transcript = transcript()
    with pytest.raises(error):
        send(server, user_message())


def data_message(message_id: str, data: dict, **ids) -> a2a_pb2.Message:
    return a2a_pb2.Message(
        message_id=message_id, role=a2a_pb2.ROLE_USER, parts=[new_data_part(data)], **ids
    )


def test_requests_the_client_sends_are_golden(server):
    """The bodies the SDK client posts (ids made stable), for `tests/a2a.rs` to decode."""
    server.transcript = (GOLDEN / "a2a" / "text.sse").read_bytes()
    recorded = []

    def record(name, message, **options):
        send(server, message, **options)
        body = server.requests[-1]
        body["id"] = "sdk-request-id"
        recorded.append({"name": name, "body": body})

    record("text", user_message(context_id="ses_1"))
    record(
        "approval_answer",
        data_message(
            "msg_user_2",
            {"type": "approval_response", "approval_id": "apr_1", "approved": True, "reason": "fine"},
            task_id="run_1",
            context_id="ses_1",
        ),
    )
    record(
        "tool_output",
        data_message(
            "msg_user_3",
            {"type": "tool_result", "tool_call_id": "call_1", "tool_name": "get_location",
             "result": {"city": "Paris"}},
            task_id="run_1",
        ),
    )
    message = a2a_pb2.Message(
        message_id="msg_user_4",
        role=a2a_pb2.ROLE_USER,
        parts=[
            a2a_pb2.Part(text="See the attached files."),
            a2a_pb2.Part(raw=b"buy milk", media_type="text/plain", filename="notes.txt"),
            a2a_pb2.Part(url="https://example.com/chart.png", media_type="image/png"),
            new_data_part({"rows": 2}),
        ],
    )
    message.metadata.update({"origin": "peer"})
    server.reply = json.dumps({
        "jsonrpc": "2.0", "id": 1,
        "result": {"task": {"id": "run_2", "contextId": "ses_2", "status": {"state": "TASK_STATE_COMPLETED"}}},
    }).encode()
    record("file_and_data", message, streaming=False, metadata={"trace": "t-1"})

    actual = json.dumps(recorded, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    path = GOLDEN / "a2a" / "sdk_requests.json"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.write_text(actual)
    assert path.read_text() == actual, "run with UPDATE_SNAPSHOTS=1 to accept the new requests"
    assert recorded[0]["body"]["method"] == "SendStreamingMessage"
    assert recorded[3]["body"]["method"] == "SendMessage"
