"""The Standard Webhooks reference library (PyPI `standardwebhooks` 1.1.0) verifying agentwire's
deliveries: a live `agentwire serve` with a webhook to a receiver on loopback, background runs,
and every delivery's signature checked by `Webhook(secret).verify(body, headers)` on the body's
exact bytes. Every status change of every run (read back from its event log) is delivered, also
when the receiver refuses for a while (each retry signed anew, with the same `webhook-id`); an
event filter is kept; and the library refuses a tampered body or another webhook's secret, so the
checks above are not vacuous."""

import json
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from agentwire_server import AgentwireServer  # noqa: E402
from webhook_receiver import Receiver  # noqa: E402

RUNS = 20

SCRIPTS = {
    "talker.json": {"turns": [[
        {"type": "text_delta", "text": "hooked "},
        {"type": "text_delta", "text": "up"},
        {"type": "finish", "reason": "stop"},
    ]]},
}

# `allow_private`: the receiver is on loopback. Short backoff, so retries come within the test.
CONFIG = """
[webhooks]
allow_private = true
max_backoff = "500ms"

[[agents]]
name = "talker"
provider = "scripted"
script = "talker.json"
"""

TERMINAL = {"completed", "failed", "canceled", "rejected", "incomplete"}


@pytest.fixture(scope="module")
def server():
    with AgentwireServer(CONFIG, SCRIPTS) as server:
        yield server


@pytest.fixture
def receiver():
    with Receiver() as receiver:
        yield receiver


def post(server: AgentwireServer, path: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"{server.url}{path}", data=json.dumps(body).encode(), method="POST",
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, json.loads(response.read())


def create_webhook(server: AgentwireServer, url: str, events: list[str] | None = None) -> dict:
    status, webhook = post(server, "/v1/webhooks", {"url": url, "events": events or []})
    assert status == 201, webhook
    assert webhook["secret"].startswith("whsec_")
    return webhook


def start_background(server: AgentwireServer) -> str:
    status, answer = post(server, "/v1/runs", {
        "background": True,
        "input": [{"role": "user", "parts": [{"type": "text", "text": "go"}]}],
    })
    assert status == 202, answer
    return answer["run"]["id"]


def status_changes(server: AgentwireServer, run_id: str) -> dict[int, str]:
    """The run's `run_status` events by seq, from its event log (once the run has ended)."""
    deadline = time.monotonic() + 20
    while True:
        changes: dict[int, str] = {}
        with urllib.request.urlopen(f"{server.url}/v1/runs/{run_id}/events", timeout=10) as events:
            for line in events.read().decode().splitlines():
                if line.startswith("data:"):
                    event = json.loads(line[len("data:"):])
                    if event.get("event") == "run_status":
                        changes[event["seq"]] = event["status"]
        if TERMINAL & set(changes.values()):
            return changes
        assert time.monotonic() < deadline, f"run {run_id} has not ended: {changes}"
        time.sleep(0.1)


def verified(webhook: dict, deliveries) -> dict[str, dict]:
    """Every delivery checked by the reference library, by `webhook-id` (retries of one status
    change share it): its payload as the library parsed it."""
    library = Webhook(webhook["secret"])
    by_id: dict[str, dict] = {}
    for delivery in deliveries:
        payload = library.verify(delivery.body, delivery.headers)
        by_id.setdefault(delivery.headers["webhook-id"], payload)
    return by_id


def delivered_changes(payloads) -> set[tuple[str, int, str]]:
    return {(p["data"]["run_id"], p["data"]["seq"], p["data"]["status"]) for p in payloads}


def expected_changes(server: AgentwireServer, run_ids: list[str]) -> set[tuple[str, int, str]]:
    return {
        (run_id, seq, status)
        for run_id in run_ids
        for seq, status in status_changes(server, run_id).items()
    }


def test_every_status_change_is_delivered_and_verified_by_the_library(server, receiver):
    webhook = create_webhook(server, receiver.url)
    runs = [start_background(server) for _ in range(RUNS)]
    expected = expected_changes(server, runs)
    assert len(expected) >= 2 * RUNS, expected

    deliveries = receiver.wait_for(
        lambda taken: expected <= delivered_changes(verified(webhook, taken).values())
    )
    payloads = verified(webhook, deliveries)
    for message_id, payload in payloads.items():
        data = payload["data"]
        assert payload["type"] == f"run.{data['status']}", payload
        assert data["agent"] == "talker"
        assert message_id == f"msg_{data['run_id']}_{data['seq']}"
    assert delivered_changes(payloads.values()) == expected


def test_retries_after_the_receiver_refused_are_verified_too(server, receiver):
    webhook = create_webhook(server, receiver.url)
    receiver.set_down(True)
    runs = [start_background(server) for _ in range(5)]
    expected = expected_changes(server, runs)
    deadline = time.monotonic() + 10
    while receiver.refused < len(expected):
        assert time.monotonic() < deadline, f"{receiver.refused} refusals"
        time.sleep(0.05)
    receiver.set_down(False)

    deliveries = receiver.wait_for(
        lambda taken: expected <= delivered_changes(verified(webhook, taken).values())
    )
    assert delivered_changes(verified(webhook, deliveries).values()) == expected


def test_an_event_filter_is_kept(server, receiver):
    webhook = create_webhook(server, receiver.url, ["run.completed"])
    runs = [start_background(server) for _ in range(3)]
    for run_id in runs:
        status_changes(server, run_id)
    deliveries = receiver.wait_for(lambda taken: len(taken) >= len(runs))
    # A later status change would have come with or before the completions.
    time.sleep(0.5)
    payloads = verified(webhook, receiver.deliveries).values()
    assert {p["type"] for p in payloads} == {"run.completed"}
    assert {p["data"]["run_id"] for p in payloads} == set(runs)
    assert len(deliveries) >= len(runs)


def test_the_library_refuses_a_tampered_body_or_another_secret(server, receiver):
    webhooks = [create_webhook(server, receiver.url), create_webhook(server, receiver.url)]
    start_background(server)
    [delivery, *_] = receiver.wait_for(lambda taken: len(taken) >= 1)
    signed_by = [webhook for webhook in webhooks if verifies(webhook["secret"], delivery)]
    assert len(signed_by) == 1, "signed with its own webhook's secret, not the other's"
    [webhook] = signed_by
    with pytest.raises(WebhookVerificationError):
        Webhook(webhook["secret"]).verify(delivery.body.replace(b'"run.', b'"job.'), delivery.headers)
    with pytest.raises(WebhookVerificationError):
        headers = dict(delivery.headers, **{"webhook-id": "msg_other"})
        Webhook(webhook["secret"]).verify(delivery.body, headers)


def verifies(secret: str, delivery) -> bool:
    try:
        Webhook(secret).verify(delivery.body, delivery.headers)
        return True
    except WebhookVerificationError:
        return False
