"""A sample A2A agent built with the a2a-sdk's own server classes (`AgentExecutor`,
`TaskUpdater`, `DefaultRequestHandler`, `InMemoryTaskStore`, the agent-card and JSON-RPC
routes) and served by uvicorn on port 0, in a thread of the test's process: what agentwire
calls as a remote agent in test_remote.py.

    with SampleAgent() as agent:
        agent.card_url    # http://127.0.0.1:PORT/.well-known/agent-card.json
        agent.get_task(task_id)   # the task as the SDK's server holds it (GetTask over JSON-RPC)

What it does with the user's text: by default it streams a poem as one artifact in chunks
(`POEM`, `append` after the first, `lastChunk` on the last) after a WORKING status, then
completes. Text with `fail` fails the task with a reason; text with `ask` asks a question
(INPUT_REQUIRED); text with `slow` streams a chunk every 50 ms for a minute, until canceled.
"""

import asyncio
import socket
import threading

import httpx
import uvicorn
from a2a.helpers import new_task
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    TaskState,
)
from starlette.applications import Starlette

POEM = ["An ", "old ", "silent ", "pond, ", "a frog ", "jumps in."]
DESCRIPTION = "Writes very short poems."
SKILL = "Answers any request with a haiku, streamed a line at a time."


class SampleExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            task = new_task(
                context.task_id, context.context_id, TaskState.TASK_STATE_SUBMITTED,
                history=[context.message],
            )
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue=event_queue, task_id=task.id, context_id=task.context_id)
        text = context.get_user_input()
        await updater.start_work()
        if "fail" in text:
            reason = updater.new_agent_message(parts=[Part(text="the sample cannot do that")])
            await updater.failed(message=reason)
            return
        if "ask" in text:
            question = updater.new_agent_message(parts=[Part(text="Which pond do you mean?")])
            await updater.requires_input(message=question)
            return
        chunks = [f"line {n} " for n in range(1200)] if "slow" in text else POEM
        for n, chunk in enumerate(chunks):
            await updater.add_artifact(
                parts=[Part(text=chunk)],
                artifact_id="poem",
                name="poem",
                append=n > 0,
                last_chunk=n == len(chunks) - 1,
            )
            if "slow" in text:
                await asyncio.sleep(0.05)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(
            event_queue=event_queue, task_id=context.task_id or "", context_id=context.context_id or "",
        )
        await updater.cancel()


class SampleAgent:
    def __init__(self):
        self.url: str | None = None
        self.card_url: str | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "SampleAgent":
        # Bound and listening before uvicorn starts: connections wait in the backlog, so the
        # server is usable at once, without waiting for it to be ready.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.card_url = f"{self.url}/.well-known/agent-card.json"
        card = AgentCard(
            name="Sample Poet",
            description=DESCRIPTION,
            version="1.0.0",
            capabilities=AgentCapabilities(streaming=True, push_notifications=False),
            default_input_modes=["text"],
            default_output_modes=["text"],
            skills=[AgentSkill(id="haiku", name="haiku", description=SKILL, tags=["poetry"])],
            supported_interfaces=[
                AgentInterface(
                    protocol_binding="JSONRPC", protocol_version="1.0", url=f"{self.url}/a2a/jsonrpc",
                ),
            ],
        )
        handler = DefaultRequestHandler(
            agent_executor=SampleExecutor(), task_store=InMemoryTaskStore(), agent_card=card,
        )
        app = Starlette(routes=[
            *create_agent_card_routes(agent_card=card),
            *create_jsonrpc_routes(request_handler=handler, rpc_url="/a2a/jsonrpc"),
        ])
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._server.serve(sockets=[sock])), daemon=True,
        )
        self._thread.start()
        return self

    def get_task(self, task_id: str) -> dict:
        """`GetTask` of the SDK's server: the task as its store holds it."""
        body = {"jsonrpc": "2.0", "id": "get", "method": "GetTask", "params": {"id": task_id}}
        answer = httpx.post(
            f"{self.url}/a2a/jsonrpc", json=body, headers={"A2A-Version": "1.0"}, timeout=10,
        ).json()
        assert "result" in answer, answer
        return answer["result"]

    def __exit__(self, *exc) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
