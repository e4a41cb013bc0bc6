#!/usr/bin/env node
// A small MCP stdio server on the official SDK's low-level `Server`, for what
// server-everything does not do: a tool list in pages, tool names that are not safe for
// model providers, a JSON-RPC error from a call, a server that dies mid-call, and a count of
// the calls the client canceled with notifications/cancelled.
//
//   node paged-server.mjs pages   three pages of tools (cursors "page2", "page3")
//   node paged-server.mjs clash   two tools whose names clash once made safe ("a.b", "a b")
//   node paged-server.mjs loop    a tools/list that hands back the same cursor forever
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";

const mode = process.argv[2] ?? "pages";

const tool = (name, description) => ({
  name,
  description,
  inputSchema: { type: "object", properties: { text: { type: "string" } } },
});

const pages = {
  pages: [
    [tool("first", "On the first page."), tool("dotted.name", "A name with a dot.")],
    [tool("x".repeat(80), "A name longer than providers allow."), tool("fail", "Answers with a JSON-RPC error.")],
    [
      tool("crash", "Exits in the middle of the call."),
      tool("empty", "Returns no content."),
      tool("slow", "Takes 30 s unless canceled."),
      tool("cancellations", "How many calls were canceled by notifications/cancelled."),
    ],
  ],
  clash: [[tool("a.b", "One."), tool("a b", "The other.")]],
  loop: [[tool("again", "Listed forever.")]],
}[mode];
if (!pages) {
  console.error(`paged-server.mjs: unknown mode ${mode} (pages, clash or loop)`);
  process.exit(2);
}

let cancellations = 0;

const server = new Server({ name: "paged", version: "1.0.0" }, { capabilities: { tools: {} } });

server.setRequestHandler(ListToolsRequestSchema, async (request) => {
  if (mode === "loop") return { tools: pages[0], nextCursor: "again" };
  const cursor = request.params?.cursor;
  const index = cursor === undefined ? 0 : Number(cursor.replace("page", "")) - 1;
  const next = index + 1 < pages.length ? `page${index + 2}` : undefined;
  return { tools: pages[index], ...(next ? { nextCursor: next } : {}) };
});

server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
  const { name, arguments: args } = request.params;
  switch (name) {
    case "fail":
      throw new McpError(ErrorCode.InvalidParams, "fail always fails");
    case "crash":
      console.error("paged-server.mjs: crashing as asked");
      process.exit(3);
    case "slow":
      // The SDK aborts `extra.signal` when the client sends notifications/cancelled.
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, 30_000);
        extra.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          cancellations += 1;
          resolve();
        });
      });
      return { content: [{ type: "text", text: "slow finished" }] };
    case "cancellations":
      return { content: [{ type: "text", text: String(cancellations) }] };
    case "empty":
      return { content: [] };
    default:
      return { content: [{ type: "text", text: `${name} got ${JSON.stringify(args ?? {})}` }] };
  }
});

await server.connect(new StdioServerTransport());
console.error(`paged-server.mjs: serving (${mode})`);
