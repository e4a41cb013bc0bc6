"""Builds an AgentRequest with agentscope-runtime's own models and writes the body their HTTP
client sends (`request.model_dump(exclude_none=True)`, as JSON) to the golden file the Rust
request decoder test reads: `python make_request.py` rewrites it; the tests check it is current.
"""

from __future__ import annotations

import json
import pathlib

from agentscope_runtime.engine.schemas.agent_schemas import (
    AgentRequest,
    DataContent,
    FunctionCall,
    FunctionCallOutput,
    FunctionParameters,
    FunctionTool,
    ImageContent,
    McpCallOutput,
    Message,
    MessageType,
    Role,
    TextContent,
    Tool,
)

GOLDEN = (
    pathlib.Path(__file__).resolve().parents[2]
    / "crates/dialects/tests/golden/agentscope/request.json"
)


def build_request() -> AgentRequest:
    def message(n, role, kind, *content):
        return Message(id=f"msg_{n}", role=role, type=kind, content=list(content))

    return AgentRequest(
        id="req_1",
        session_id="ses_1",
        user_id="user_1",
        model="qwen-max",
        temperature=0.3,
        stream=True,
        tools=[
            Tool(
                type="function",
                function=FunctionTool(
                    name="get_weather",
                    description="The weather of a city",
                    parameters=FunctionParameters(
                        type="object",
                        properties={"city": {"type": "string"}},
                        required=["city"],
                    ),
                ),
            )
        ],
        input=[
            message(1, Role.SYSTEM, MessageType.MESSAGE, TextContent(text="You are a weather bot.")),
            message(
                2,
                Role.USER,
                MessageType.MESSAGE,
                TextContent(text="Weather in Paris?"),
                ImageContent(image_url="https://example.com/paris.png"),
            ),
            message(3, Role.ASSISTANT, MessageType.REASONING, TextContent(text="Look it up.")),
            message(
                4,
                Role.ASSISTANT,
                MessageType.FUNCTION_CALL,
                DataContent(
                    data=FunctionCall(
                        call_id="call_1", name="get_weather", arguments='{"city": "Paris"}'
                    ).model_dump()
                ),
            ),
            message(
                5,
                Role.TOOL,
                MessageType.FUNCTION_CALL_OUTPUT,
                DataContent(
                    data=FunctionCallOutput(
                        call_id="call_1", name="get_weather", output='{"temperature": 18}'
                    ).model_dump()
                ),
            ),
            # The adapters' own tool path: plugin_call, and an MCP output.
            message(
                6,
                Role.ASSISTANT,
                MessageType.PLUGIN_CALL,
                DataContent(data={"call_id": "call_2", "name": "lookup", "arguments": "{}"}),
            ),
            message(
                7,
                Role.TOOL,
                MessageType.MCP_TOOL_CALL_OUTPUT,
                DataContent(
                    data=McpCallOutput(
                        call_id="call_2", output='[{"type": "text", "text": "ok"}]'
                    ).model_dump(exclude_none=True)
                ),
            ),
            message(8, Role.ASSISTANT, MessageType.MESSAGE, TextContent(text="It is 18 °C.")),
            message(9, Role.USER, MessageType.MESSAGE, TextContent(text="Thanks!")),
        ],
    )


def request_body() -> str:
    """The body, as the golden file holds it."""
    payload = build_request().model_dump(exclude_none=True)
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    GOLDEN.write_text(request_body(), encoding="utf-8")
    print(f"wrote {GOLDEN}")
