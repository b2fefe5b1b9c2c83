// The official TypeScript MCP SDK's client (what most MCP hosts are built
// on) against one of our servers: lists the tools, then runs each step of a
// plan, and prints what it got as one JSON line. Run by test_ts_client.py
// through scripts/install/mcp-ts-client.sh.
//   node ts_client.mjs http URL PLAN
//   node ts_client.mjs stdio BINARY PLAN
// PLAN: a JSON list of {"tool", "arguments", "progress"}.
import { createRequire } from "node:module";

const require = createRequire(`${process.env.TS_SDK_DIR}/package.json`);
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { getDisplayName } = require("@modelcontextprotocol/sdk/shared/metadataUtils.js");

const [mode, target, planText] = process.argv.slice(2);
const plan = JSON.parse(planText);
const client = new Client({ name: "ts-interop", version: "1.0.0" });
// What the SDK reports beside results: a progress notification it read
// after the call's result is one (typescript-sdk#2580).
const clientErrors = [];
client.onerror = (error) => clientErrors.push(String(error?.message ?? error));
const transport =
  mode === "http"
    ? new StreamableHTTPClientTransport(new URL(target))
    : new StdioClientTransport({ command: target, args: ["mcp"], stderr: "ignore" });
await client.connect(transport);
const listed = await client.listTools();
const out = {
  server: client.getServerVersion(),
  // What a host shows of each tool: its display name (the SDK's rule:
  // title, else annotations.title, else name) and its hints.
  tools: listed.tools.map((tool) => ({
    name: tool.name,
    displayName: getDisplayName(tool),
    title: tool.title ?? null,
    annotations: tool.annotations ?? null,
    outputSchema: tool.outputSchema ?? null,
  })),
  calls: [],
};
for (const step of plan) {
  const progress = [];
  const options = step.progress
    ? { onprogress: (note) => progress.push([note.progress, note.message ?? null]) }
    : undefined;
  try {
    const result = await client.callTool({ name: step.tool, arguments: step.arguments }, undefined, options);
    out.calls.push({ tool: step.tool, result, progress });
  } catch (error) {
    out.calls.push({ tool: step.tool, error: String(error?.message ?? error), progress });
  }
}
await client.close();
out.clientErrors = clientErrors;
console.log(JSON.stringify(out));
