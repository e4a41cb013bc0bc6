"""Reads an AgentScope SSE transcript with agentscope-runtime's own code.

* `client_events(wire)`: the events `HTTPAgentAPIClient.stream()` yields when a server on the
  loopback answers `POST /process` with these bytes (their SSE reading and their
  `parse_event_from_json`, which drops what their models refuse).
* `validate(wire)`: every `data:` object parsed strictly with the model class for its `object`
  and `type` (`AgentResponse`, `Message`, `TextContent`, `DataContent`, …), plus the checks their
  models do not make: statuses are `RunStatus` values, `sequence_number` counts 0, 1, 2, … with
  no gap, contents name an announced message, deltas merged by their `ContentBuilder` equal the
  completed content, and the final output is the completed messages. Raises on the first problem.
* `as_agentscope(message)`: a canonical message (scenario JSON) mapped to the AgentScope
  messages agentwire's dialect docs promise, to compare with what the client rebuilt.

Run as a script to print what the client rebuilt: `python agentscope_peer.py FILE`.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from agentscope_runtime.engine.helpers.agent_api_builder import ResponseBuilder
from agentscope_runtime.engine.helpers.agent_api_client import HTTPAgentAPIClient
from agentscope_runtime.engine.schemas.agent_schemas import (
    AgentRequest,
    AgentResponse,
    AudioContent,
    Content,
    DataContent,
    FileContent,
    ImageContent,
    Message,
    RefusalContent,
    RunStatus,
    TextContent,
    VideoContent,
)

CONTENT_MODELS = {
    "text": TextContent,
    "data": DataContent,
    "image": ImageContent,
    "audio": AudioContent,
    "file": FileContent,
    "refusal": RefusalContent,
    "video": VideoContent,
}
STATUSES = {
    value
    for name, value in vars(RunStatus).items()
    if not name.startswith("_") and isinstance(value, str)
}


class TranscriptError(Exception):
    """A transcript their models accept but the protocol does not."""


def data_objects(wire: bytes) -> list[dict]:
    """The JSON objects of the `data:` frames, in order."""
    objects = []
    for frame in wire.decode("utf-8").split("\n\n"):
        for line in frame.split("\n"):
            if line.startswith("data: "):
                objects.append(json.loads(line[len("data: "):]))
    return objects


def model_for(obj: dict):
    """The model class their client picks for an object (a stricter pick for contents: every
    content type has its class)."""
    kind = obj.get("object")
    if kind == "response":
        return AgentResponse
    if kind == "message":
        return Message
    if kind == "content":
        return CONTENT_MODELS.get(obj.get("type"), Content)
    raise TranscriptError(f"unknown object {kind!r}")


def validate(wire: bytes) -> AgentResponse:
    """Validates a whole transcript; returns the terminal response."""
    announced: dict[str, Message] = {}
    completed: list[Message] = []
    builders: dict[tuple[str, int], object] = {}
    response_builder = ResponseBuilder(session_id="check")
    last = None
    for seq, obj in enumerate(data_objects(wire)):
        event = model_for(obj).model_validate(obj)  # raises pydantic.ValidationError
        if event.sequence_number != seq:
            raise TranscriptError(f"sequence_number {event.sequence_number} where {seq} was due")
        if event.status not in STATUSES:
            raise TranscriptError(f"status {event.status!r} is not a RunStatus")
        if last is not None and last.object == "response" and last.status not in (
            RunStatus.Created,
            RunStatus.InProgress,
            RunStatus.Queued,
        ):
            raise TranscriptError("an event after the terminal response")
        if isinstance(event, Message):
            announced.setdefault(event.id, event)
            if event.status == RunStatus.Completed:
                for content in event.content or []:
                    # The agentscope adapter leaves msg_id (and status) null in the completed
                    # copies of plugin_call contents; only a wrong id is refused.
                    if content.msg_id not in (None, event.id):
                        raise TranscriptError(f"content of {event.id} names {content.msg_id}")
                completed.append(event)
        elif isinstance(event, Content):
            if event.msg_id not in announced:
                raise TranscriptError(f"content for unannounced message {event.msg_id}")
            check_content(event, announced[event.msg_id], builders, response_builder)
        last = event
    if last is None or last.object != "response":
        raise TranscriptError("the stream does not end with a response")
    if last.status in (RunStatus.Completed, RunStatus.Failed):
        output = last.output or []
        if [m.model_dump() for m in output] != [m.model_dump() for m in completed]:
            raise TranscriptError("the output is not the completed messages")
    if last.status == RunStatus.Failed and last.error is None:
        raise TranscriptError("a failed response without error")
    return last


def check_content(event, message, builders, response_builder):
    """Replays deltas through their ContentBuilder; a completed content must equal the merge."""
    key = (event.msg_id, event.index)
    if event.delta:
        builder = builders.get(key)
        if builder is None:
            message_builder = response_builder.create_message_builder(
                role=message.role or "assistant",
                message_type=message.type,
            )
            builder = message_builder.create_content_builder(content_type=event.type)
            builders[key] = builder
        if event.type == "text":
            builder.add_text_delta(event.text)
        elif event.type == "data":
            builder.add_data_delta(event.data)
        else:
            raise TranscriptError(f"a {event.type} content streams")
    elif event.status == RunStatus.Completed and key in builders:
        merged = builders.pop(key).complete()
        field = "text" if event.type == "text" else "data"
        if getattr(merged, field) != getattr(event, field):
            raise TranscriptError(
                f"deltas of {key} merge to {getattr(merged, field)!r}, "
                f"not the completed {getattr(event, field)!r}"
            )


class _Transcript(BaseHTTPRequestHandler):
    wire = b""
    requests: list = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        length = int(self.headers.get("content-length", "0"))
        type(self).requests.append(json.loads(self.rfile.read(length)))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("content-length", str(len(self.wire)))
        self.end_headers()
        self.wfile.write(self.wire)

    def log_message(self, *args):
        pass


def client_events(wire: bytes, request: AgentRequest | None = None) -> tuple[list, dict]:
    """What their HTTP client yields for a server answering with `wire` (on the loopback), and
    the body it sent."""
    handler = type("Handler", (_Transcript,), {"wire": wire, "requests": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = HTTPAgentAPIClient(f"http://127.0.0.1:{server.server_port}/process", timeout=10)
        request = request or AgentRequest(
            input=[{"role": "user", "type": "message", "content": [{"type": "text", "text": "hi"}]}]
        )
        events = list(client.stream(request))
    finally:
        server.shutdown()
        server.server_close()
    return events, handler.requests[0]


def comparable(message: Message) -> dict:
    """A rebuilt message, keyed the way `as_agentscope` writes the expectation: call arguments
    and outputs (JSON text) parsed, so that spacing does not matter."""
    contents = []
    for content in message.content or []:
        dumped = content.model_dump(
            exclude={"sequence_number", "object", "status", "error", "index", "delta", "msg_id"},
            exclude_none=True,
        )
        data = dumped.get("data")
        if content.type == "data" and isinstance(data, dict):
            if message.type == "function_call":
                data["arguments"] = json.loads(data["arguments"])
            if message.type == "function_call_output" and "error_type" not in data:
                data["output"] = json.loads(data["output"])
        contents.append(dumped)
    return {"type": message.type, "role": message.role, "content": contents}


def as_agentscope(message: dict) -> list[dict]:
    """A canonical message (agentwire's native JSON) as the AgentScope messages the dialect
    writes: a message per run of text-like parts of one kind, one per call, output and approval;
    step starts dropped; `data` role written as assistant."""
    role = message["role"] if message["role"] != "data" else "assistant"
    out: list[dict] = []
    for part in message["parts"]:
        kind, content = _content(part)
        if kind is None:
            continue
        shared = kind in ("message", "reasoning")
        if not (shared and out and out[-1]["type"] == kind):
            msg_role = "tool" if kind == "function_call_output" else role
            out.append({"type": kind, "role": msg_role, "content": []})
        out[-1]["content"].append(content)
    if not out:
        out.append({"type": "message", "role": role, "content": []})
    return out


def _content(part: dict):
    kind = part["type"]
    if kind == "step_start":
        return None, None
    if kind == "text":
        return "message", {"type": "text", "text": part["text"]}
    if kind == "reasoning":
        return "reasoning", {"type": "text", "text": part["text"]}
    if kind == "refusal":
        return "message", {"type": "refusal", "refusal": part["text"]}
    if kind == "tool_call":
        data = {"call_id": part["tool_call_id"], "name": part["tool_name"], "arguments": part["args"]}
        return "function_call", {"type": "data", "data": data}
    if kind == "tool_result":
        data = {"call_id": part["tool_call_id"]}
        if "tool_name" in part:
            data["name"] = part["tool_name"]
        data["output"] = part["result"]
        if "is_error" in part:
            data["is_error"] = part["is_error"]
        return "function_call_output", {"type": "data", "data": data}
    if kind == "tool_error":
        data = {"call_id": part["tool_call_id"]}
        if "tool_name" in part:
            data["name"] = part["tool_name"]
        data["output"] = part["message"]
        data["error_type"] = part["error_type"]
        return "function_call_output", {"type": "data", "data": data}
    if kind == "file":
        return "message", _file(part)
    if kind == "approval_request":
        data = {"id": part["approval_id"], "call_id": part["tool_call_id"]}
        if "reason" in part:
            data["reason"] = part["reason"]
        return "mcp_approval_request", {"type": "data", "data": data}
    if kind == "approval_response":
        data = {"approval_request_id": part["approval_id"], "approve": part["approved"]}
        if "reason" in part:
            data["reason"] = part["reason"]
        return "mcp_approval_response", {"type": "data", "data": data}
    # data, source, artifact, plan_update: the part's own JSON in a data content.
    return "message", {"type": "data", "data": part}


def _file(part: dict) -> dict:
    media_type = part["media_type"]
    url, data = part.get("url"), part.get("data")
    if media_type.startswith("image/"):
        content = {"type": "image", "image_url": url or f"data:{media_type};base64,{data}"}
    elif media_type.startswith("audio/") and data is not None:
        content = {"type": "audio", "data": data, "format": media_type[len("audio/"):]}
    else:
        content = {"type": "file"}
        if url is not None:
            content["file_url"] = url
        if "filename" in part:
            content["filename"] = part["filename"]
        if data is not None:
            content["file_data"] = data
        content["media_type"] = media_type
        return content
    content["media_type"] = media_type
    if "filename" in part:
        content["filename"] = part["filename"]
    return content


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.WARNING)
    if len(argv) != 2:
        print("usage: python agentscope_peer.py FILE", file=sys.stderr)
        return 2
    with open(argv[1], "rb") as file:
        wire = file.read()
    events, _ = client_events(wire)
    final = events[-1] if events and isinstance(events[-1], AgentResponse) else None
    print(json.dumps({
        "events": len(events),
        "status": final.status if final else None,
        "error": final.error.model_dump() if final and final.error else None,
        "messages": [comparable(m) for m in (final.output or [])] if final else [],
    }, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
