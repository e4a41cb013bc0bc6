"""Python's `urllib` against a live `agentwire serve`, past the server's limits: `urllib` sends a
request whole before it reads a byte of the answer, so a server that answers a 50 MB body with
413 and closes the socket while the body is still coming resets the connection, and `urllib`
raises a connection error instead of reading the 413. Here it reads the 413 (with a length, and
chunked), and a 100 kB URL and a 1 MB header are answered with the API's JSON error too."""

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from agentwire_server import AgentwireServer  # noqa: E402

SCRIPTS = {
    "talker.json": {"turns": [[
        {"type": "text_delta", "text": "hi"},
        {"type": "finish", "reason": "stop"},
    ]]},
}

CONFIG = """
[server]
max_body_bytes = 1048576

[[agents]]
name = "talker"
provider = "scripted"
script = "talker.json"
"""

FIFTY_MB = 50 * 1000 * 1000


@pytest.fixture(scope="module")
def server():
    with AgentwireServer(CONFIG, SCRIPTS) as server:
        yield server


def refusal(request: urllib.request.Request) -> tuple[int, dict]:
    """The status and JSON body of the error `request` is answered with."""
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=60)
    error = raised.value
    assert error.headers["content-type"].startswith("application/json")
    body = json.loads(error.read())
    assert body["error"]["message"], body
    return error.code, body


def test_a_50_mb_body_is_answered_413_and_urllib_reads_it(server):
    request = urllib.request.Request(
        f"{server.url}/v1/runs", data=b" " * FIFTY_MB, method="POST",
        headers={"content-type": "application/json"},
    )
    status, body = refusal(request)
    assert (status, body["error"]["code"]) == (413, "payload_too_large")


def test_a_chunked_body_past_the_limit_is_answered_413(server):
    # An iterable body has no length: urllib sends it chunked.
    chunks = (b" " * (1 << 20) for _ in range(50))
    request = urllib.request.Request(
        f"{server.url}/v1/runs", data=chunks, method="POST",
        headers={"content-type": "application/json"},
    )
    status, body = refusal(request)
    assert (status, body["error"]["code"]) == (413, "payload_too_large")


def test_a_100_kb_url_and_a_1_mb_header_are_answered_with_json(server):
    status, body = refusal(urllib.request.Request(f"{server.url}/v1/runs/{'a' * 100_000}"))
    assert (status, body["error"]["code"]) == (414, "uri_too_long")
    request = urllib.request.Request(f"{server.url}/v1/agents", headers={"x-big": "b" * 1_000_000})
    status, body = refusal(request)
    assert (status, body["error"]["code"]) == (431, "headers_too_large")


def test_the_server_still_answers(server):
    with urllib.request.urlopen(f"{server.url}/healthz", timeout=10) as response:
        assert json.loads(response.read()) == {"status": "ok"}
