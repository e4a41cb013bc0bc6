"""Serve A2A transcripts over real HTTP to the real a2a-sdk client, and read back what it rebuilds.

`TranscriptServer` is a tiny HTTP server on 127.0.0.1 (port 0): it serves the agent card at
`/.well-known/agent-card.json` (its interface URL pointed at itself) and answers every JSON-RPC
POST to `/a2a` with the transcript set for the test (`text/event-stream`), or with `reply` for a
non-streaming `SendMessage`. It records the bodies the client posted.

`send` resolves the card and calls the SDK client's `send_message` exactly as an application
would; `rebuild` applies the stream to a task with the SDK's own `TaskManager` (the code the SDK
uses to keep a task from its events), so the task compared is the SDK's reading of the stream.
"""

import asyncio
import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from a2a.client import ClientConfig, create_client
from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore
from a2a.server.tasks.task_manager import TaskManager
from a2a.types import a2a_pb2
from google.protobuf.json_format import MessageToDict

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "crates" / "dialects" / "tests" / "golden"
ACCEPTED_OUTPUT_MODES = ["text/plain", "application/json"]


class TranscriptServer:
    def __init__(self, card: dict):
        self.transcript = b""
        self.reply = b""
        self.requests: list[dict] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path != "/.well-known/agent-card.json":
                    self.send_error(404)
                    return
                self._send("application/json", json.dumps(owner.card).encode())

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append(body)
                if body.get("method") == "SendStreamingMessage":
                    self._send("text/event-stream", owner.transcript)
                else:
                    self._send("application/json", owner.reply)

            def _send(self, content_type, payload):
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.card = copy.deepcopy(card)
        self.card["supportedInterfaces"][0]["url"] = self.base_url + "/a2a"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def send(
    server: TranscriptServer,
    message: a2a_pb2.Message,
    streaming: bool = True,
    metadata: dict | None = None,
) -> list[a2a_pb2.StreamResponse]:
    """Sends `message` with the SDK client; returns the stream responses it yielded."""

    async def run():
        async with httpx.AsyncClient(timeout=10) as http:
            config = ClientConfig(
                httpx_client=http,
                streaming=streaming,
                accepted_output_modes=ACCEPTED_OUTPUT_MODES,
            )
            client = await create_client(server.base_url, config)
            request = a2a_pb2.SendMessageRequest(message=message)
            if metadata:
                request.metadata.update(metadata)
            return [response async for response in client.send_message(request)]

    return asyncio.run(run())


def rebuild(responses: list[a2a_pb2.StreamResponse]) -> a2a_pb2.Task | None:
    """The task the SDK's TaskManager keeps from these stream responses."""

    async def run():
        manager = TaskManager(InMemoryTaskStore(), ServerCallContext(), None, None, None)
        for response in responses:
            for field in ("task", "status_update", "artifact_update"):
                if response.HasField(field):
                    await manager.process(getattr(response, field))
        return await manager.get_task()

    return asyncio.run(run())


def streamed_kind(part: dict) -> str | None:
    """`text`, `reasoning` or `refusal` for an A2A part that carries such text, else None."""
    if "text" in part:
        return "text"
    data = part.get("data")
    if isinstance(data, dict) and data.get("type") in ("reasoning", "refusal"):
        return data["type"]
    return None


def fold(artifact: a2a_pb2.Artifact) -> list[dict]:
    """The artifact's parts as the agentwire mapping defines them: a text chunk continues the
    part before it when that part has the same kind, unless marked `agentwire.new_part`."""
    parts: list[dict] = []
    for part in artifact.parts:
        part = MessageToDict(part)
        new_part = part.pop("metadata", {}).get("agentwire", {}).get("new_part", False)
        kind = streamed_kind(part)
        if parts and kind and not new_part and streamed_kind(parts[-1]) == kind:
            if kind == "text":
                parts[-1]["text"] += part["text"]
            else:
                parts[-1]["data"]["text"] += part["data"]["text"]
        else:
            parts.append(part)
    return parts


def expected_parts(message: dict) -> list[dict]:
    """A canonical message's parts (native JSON) as the A2A parts agentwire maps them to."""
    parts = []
    for part in message["parts"]:
        kind = part["type"]
        if kind == "text":
            parts.append({"text": part["text"]})
        elif kind in ("reasoning", "refusal"):
            parts.append({"data": {"type": kind, "text": part["text"]}})
        elif kind == "file":
            file = {"url": part["url"]} if "url" in part else {"raw": part["data"]}
            file["mediaType"] = part["media_type"]
            if "filename" in part:
                file["filename"] = part["filename"]
            parts.append(file)
        else:
            parts.append({"data": part})
    return parts


def task_state(status: dict) -> str:
    """The A2A state a canonical run status maps to."""
    return {
        "created": "TASK_STATE_SUBMITTED",
        "queued": "TASK_STATE_SUBMITTED",
        "in_progress": "TASK_STATE_WORKING",
        "awaiting": "TASK_STATE_INPUT_REQUIRED",
        "completed": "TASK_STATE_COMPLETED",
        "failed": "TASK_STATE_FAILED",
        "incomplete": "TASK_STATE_FAILED",
        "canceled": "TASK_STATE_CANCELED",
        "rejected": "TASK_STATE_REJECTED",
    }[status["status"]]
