"""agentwire as a client of A2A: a live `agentwire serve` whose scripted agent calls the
a2a-sdk's own sample server (sample_agent.py: the SDK's AgentExecutor, TaskUpdater, request
handler and routes, on port 0) as a `[[agents.remote]]`. The test drives agentwire over its
native HTTP API and reads the SSE it streams: the remote task's run nested under the call,
its artifact chunks as the nested run's streamed text, its text the call's result; a failed
task and a task that asks for input are tool errors the model reads; and canceling the
agentwire run cancels the SDK's task."""

import json
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from sample_agent import DESCRIPTION, POEM, SKILL, SampleAgent

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from agentwire_server import AgentwireServer  # noqa: E402


def calling(*calls):
    turn = []
    for n, (tool, text) in enumerate(calls, start=1):
        turn += [
            {"type": "tool_call_start", "id": f"call_{n}", "name": tool},
            {"type": "tool_call_delta", "id": f"call_{n}", "args": json.dumps({"input": text})},
            {"type": "tool_call_end", "id": f"call_{n}"},
        ]
    return turn + [{"type": "finish", "reason": "tool_calls"}]


def say(text):
    return [{"type": "text_delta", "text": text}, {"type": "finish", "reason": "stop"}]


def config(card_url):
    agents = ""
    for name in ("poet", "critic", "patient"):
        agents += f"""
[[agents]]
name = "{name}"
provider = "scripted"
script = "{name}.json"
tools = []

[[agents.remote]]
name = "sample"
url = "{card_url}"
allow_private = true
"""
    return agents


SCRIPTS = {
    "poet.json": {"turns": [calling(("sample", "a haiku about a pond")), say("Here is the poem.")]},
    "critic.json": {"turns": [
        calling(("sample", "please fail"), ("sample", "ask me something")),
        say("The sample could not help."),
    ]},
    "patient.json": {"turns": [calling(("sample", "slow poem")), say("-")]},
}


@pytest.fixture(scope="module")
def servers():
    with SampleAgent() as sample:
        with AgentwireServer(config(sample.card_url), SCRIPTS) as agentwire:
            yield sample, agentwire


class Run:
    """One agentwire run read from its native SSE: every event, and the nested runs' events by
    the run id at the end of their namespace."""

    def __init__(self, response):
        self.response = response
        self.lines = response.iter_lines()
        self.events = []

    def read(self, until=lambda run: False):
        data = []
        for line in self.lines:
            if line.startswith("data:"):
                data.append(line[5:].strip())
            elif line == "" and data:
                event = json.loads("\n".join(data))
                data = []
                if event["event"] != "heartbeat":
                    self.events.append(event)
                if until(self):
                    return
        return

    def own(self, name):
        return [e for e in self.events if not e.get("namespace") and e["event"] == name]

    def nested(self):
        """The nested runs, by run id: their events in order."""
        runs = {}
        for event in self.events:
            if event.get("namespace"):
                runs.setdefault(event["namespace"][-1], []).append(event)
        return runs

    def status(self):
        return self.own("run_status")[-1]["status"]

    def answers(self):
        """The parts answering the top run's tool calls, by call id."""
        parts = [p for e in self.own("message_complete") for p in e["message"]["parts"]]
        return {p["tool_call_id"]: p for p in parts if p["type"] in ("tool_result", "tool_error")}


@contextmanager
def start(agentwire, agent, text):
    """A run of `agent` on `text`, streamed: the connection is closed on leaving."""
    body = {"agent": agent, "input": [{"role": "user", "parts": [{"type": "text", "text": text}]}]}
    with httpx.Client(timeout=30) as client:
        with client.stream(
            "POST", f"{agentwire.url}/v1/runs", json=body, headers={"accept": "text/event-stream"},
        ) as response:
            assert response.status_code == 200, response.read()
            yield Run(response)


def test_the_card_describes_the_tool(servers):
    _, agentwire = servers
    card = httpx.get(f"{agentwire.url}/v1/agents/poet").json()
    tool = next(tool for tool in card["tools"] if tool["name"] == "sample")
    assert tool["description"].startswith(f"{DESCRIPTION} Skills: haiku ({SKILL})")
    assert card["subagents"] == ["sample"]


def test_the_sdk_servers_task_streams_nested_and_answers(servers):
    sample, agentwire = servers
    with start(agentwire, "poet", "write me a poem") as run:
        run.read()
    assert run.status() == "completed"
    nested = run.nested()
    assert len(nested) == 1
    (child_id, events), = nested.items()
    created = events[0]
    assert created["event"] == "run_created"
    assert created["agent"] == "sample"
    assert created["parent_tool_call_id"] == "call_1"
    # The artifact's chunks stream as the nested run's text, one delta each.
    deltas = [e["delta"] for e in events if e["event"] == "part_delta"]
    assert deltas == POEM
    message = [e for e in events if e["event"] == "message_complete"][-1]["message"]
    assert message["parts"] == [{"type": "text", "text": "".join(POEM)}]
    assert events[-1]["event"] == "run_status" and events[-1]["status"] == "completed"
    # The poem is the call's result, and the model's answer follows.
    assert run.answers()["call_1"]["result"] == "".join(POEM)
    assert run.own("message_complete")[-1]["message"]["parts"][-1]["text"] == "Here is the poem."
    # The nested run is the SDK's task, completed there with the same artifact.
    task = sample.get_task(message["metadata"]["remote_run_id"])
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "".join(part["text"] for part in task["artifacts"][0]["parts"]) == "".join(POEM)


def test_a_failed_task_and_a_question_are_tool_errors(servers):
    _, agentwire = servers
    with start(agentwire, "critic", "try twice") as run:
        run.read()
    assert run.status() == "completed"
    answers = run.answers()
    failed, asked = answers["call_1"], answers["call_2"]
    assert failed["type"] == "tool_error" and failed["error_type"] == "EXECUTION"
    assert "the sample cannot do that" in failed["message"]
    assert asked["type"] == "tool_error"
    assert "remote_awaiting" in asked["message"]
    assert "Which pond do you mean?" in asked["message"]


def test_canceling_the_run_cancels_the_sdk_task(servers):
    sample, agentwire = servers
    def streaming(run):
        return sum(1 for e in run.events if e.get("namespace") and e["event"] == "part_delta") >= 3

    with start(agentwire, "patient", "take your time") as run:
        run.read(until=streaming)
        run_id = run.own("run_created")[0]["run_id"]
        start_event = next(e for e in run.events if e.get("namespace") and e["event"] == "message_start")
        task_id = start_event["metadata"]["remote_run_id"]
        canceled = httpx.post(f"{agentwire.url}/v1/runs/{run_id}/cancel")
        assert canceled.status_code == 202, canceled.text
        run.read()
    assert run.status() == "canceled"
    (events,) = run.nested().values()
    assert events[-1]["event"] == "run_status" and events[-1]["status"] == "canceled"
    # agentwire cancels the task once its run has ended: the SDK's store says so soon after.
    deadline = time.monotonic() + 10
    while sample.get_task(task_id)["status"]["state"] != "TASK_STATE_CANCELED":
        assert time.monotonic() < deadline, sample.get_task(task_id)["status"]
        time.sleep(0.05)
