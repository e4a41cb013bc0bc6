"""A2A push notifications with the real a2a-sdk 1.3.0 client against a live `agentwire serve`:
the client sets a push-notification config on a task (`create_task_push_notification_config`,
and `ClientConfig.push_notification_config`, which rides on `SendMessage`), with a token; the
task runs in the background (`returnImmediately`); a receiver on loopback gets the
notifications, each with the token in `X-A2A-Notification-Token` and a body that parses as the
SDK's own `StreamResponse` (a `statusUpdate` of that task), one of them the task's end. The
config is read back, listed and deleted with the SDK's methods."""

import asyncio
import sys
import uuid
from pathlib import Path

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import a2a_pb2
from google.protobuf.json_format import Parse

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from agentwire_server import AgentwireServer  # noqa: E402
from webhook_receiver import Receiver  # noqa: E402

SCRIPTS = {
    # Still working when `returnImmediately` answers (20 words at 20 tokens/s).
    "background.json": {"turns": [[
        *({"type": "text_delta", "text": f"bg{i} "} for i in range(20)),
        {"type": "finish", "reason": "stop"},
    ]] * 8},
}

# `allow_private`: the receiver is on loopback.
CONFIG = """
[webhooks]
allow_private = true
max_backoff = "500ms"

[[agents]]
name = "background"
provider = "scripted"
script = "background.json"
tokens_per_second = 20.0
"""

TOKEN_HEADER = "x-a2a-notification-token"


@pytest.fixture(scope="module")
def server():
    with AgentwireServer(CONFIG, SCRIPTS) as server:
        yield server


@pytest.fixture
def receiver():
    with Receiver() as receiver:
        yield receiver


def user(text: str) -> a2a_pb2.Message:
    return a2a_pb2.Message(
        message_id=f"msg-{uuid.uuid4().hex[:8]}",
        role=a2a_pb2.ROLE_USER,
        parts=[a2a_pb2.Part(text=text)],
    )


def updates_of(receiver: Receiver, task_id: str, token: str) -> list[a2a_pb2.TaskStatusUpdateEvent]:
    """The notifications of `task_id` until its end, each checked: the token, and a body the
    SDK's `StreamResponse` parses (unknown fields refused) as a status update of that task."""
    def ended(deliveries) -> bool:
        return any(
            b"TASK_STATE_COMPLETED" in delivery.body and task_id.encode() in delivery.body
            for delivery in deliveries
        )

    updates = []
    for delivery in receiver.wait_for(ended):
        response = Parse(delivery.body, a2a_pb2.StreamResponse())
        if response.status_update.task_id != task_id:
            continue
        assert delivery.headers[TOKEN_HEADER] == token
        assert delivery.headers["content-type"] == "application/json"
        assert response.WhichOneof("payload") == "status_update"
        updates.append(response.status_update)
    return updates


def state(update: a2a_pb2.TaskStatusUpdateEvent) -> str:
    return a2a_pb2.TaskState.Name(update.status.state)


def test_a_config_set_on_a_task_is_notified_with_its_token(server, receiver):
    token = f"token-{uuid.uuid4().hex}"

    async def go():
        async with httpx.AsyncClient(timeout=10) as http:
            config = ClientConfig(httpx_client=http, streaming=False, polling=True)
            client = await create_client(f"{server.url}/agents/background", config)
            request = a2a_pb2.SendMessageRequest(message=user("push it"))
            [response] = [r async for r in client.send_message(request)]
            task = response.task
            assert a2a_pb2.TaskState.Name(task.status.state) != "TASK_STATE_COMPLETED"
            created = await client.create_task_push_notification_config(
                a2a_pb2.TaskPushNotificationConfig(task_id=task.id, url=receiver.url, token=token)
            )
            got = await client.get_task_push_notification_config(
                a2a_pb2.GetTaskPushNotificationConfigRequest(task_id=task.id, id=created.id)
            )
            listed = await client.list_task_push_notification_configs(
                a2a_pb2.ListTaskPushNotificationConfigsRequest(task_id=task.id)
            )
            return task, created, got, listed

    task, created, got, listed = asyncio.run(go())
    assert (created.task_id, created.url, created.token) == (task.id, receiver.url, token)
    assert created.id
    assert got == created
    assert [config.id for config in listed.configs] == [created.id]

    updates = updates_of(receiver, task.id, token)
    # Deliveries are not ordered: each carries its status's time.
    assert "TASK_STATE_COMPLETED" in {state(update) for update in updates}
    assert all(update.context_id == task.context_id for update in updates)

    async def delete():
        async with httpx.AsyncClient(timeout=10) as http:
            config = ClientConfig(httpx_client=http, streaming=False, polling=True)
            client = await create_client(f"{server.url}/agents/background", config)
            await client.delete_task_push_notification_config(
                a2a_pb2.DeleteTaskPushNotificationConfigRequest(task_id=task.id, id=created.id)
            )
            return await client.list_task_push_notification_configs(
                a2a_pb2.ListTaskPushNotificationConfigsRequest(task_id=task.id)
            )

    assert list(asyncio.run(delete()).configs) == []


def test_a_config_sent_with_the_message_hears_the_whole_task(server, receiver):
    token = f"token-{uuid.uuid4().hex}"

    async def go():
        async with httpx.AsyncClient(timeout=10) as http:
            config = ClientConfig(
                httpx_client=http, streaming=False, polling=True,
                push_notification_config=a2a_pb2.TaskPushNotificationConfig(
                    url=receiver.url, token=token
                ),
            )
            client = await create_client(f"{server.url}/agents/background", config)
            request = a2a_pb2.SendMessageRequest(message=user("push it all"))
            [response] = [r async for r in client.send_message(request)]
            return response.task

    task = asyncio.run(go())
    updates = updates_of(receiver, task.id, token)
    states = {state(update) for update in updates}
    # Set before the task's first status: it hears it start working, and end.
    assert {"TASK_STATE_WORKING", "TASK_STATE_COMPLETED"} <= states, states
