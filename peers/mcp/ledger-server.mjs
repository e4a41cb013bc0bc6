#!/usr/bin/env node
// A small MCP stdio server on the official SDK's low-level `Server` with one tool with an
// effect: `record` appends a line to a ledger file for every call it runs, naming the agentwire
// run and tool call from the request's `_meta` (`<run_id> <tool_call_id>`, then the W3C
// `traceparent` when `_meta` carries one), and answers with the line's number. A test counts a call's lines to see whether it ever ran twice.
//
//   node ledger-server.mjs LEDGER_FILE
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const ledger = process.argv[2];
if (!ledger) {
  console.error("usage: ledger-server.mjs LEDGER_FILE");
  process.exit(2);
}

const server = new Server({ name: "ledger", version: "1.0.0" }, { capabilities: { tools: {} } });

server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    {
      name: "record",
      description: "Records that it ran (an effect that must not happen twice).",
      inputSchema: { type: "object", properties: { note: { type: "string" } } },
    },
  ],
}));

server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const meta = request.params._meta ?? {};
  const trace = meta.traceparent ? ` ${meta.traceparent}` : "";
  const line = `${meta["agentwire/run_id"] ?? "-"} ${meta["agentwire/tool_call_id"] ?? "-"}${trace}\n`;
  // One write with O_APPEND: several servers (one per node) may share the file.
  appendFileSync(ledger, line);
  const lines = existsSync(ledger) ? readFileSync(ledger, "utf8").split("\n").length - 1 : 0;
  return { content: [{ type: "text", text: JSON.stringify({ recorded: lines }) }] };
});

await server.connect(new StdioServerTransport());
