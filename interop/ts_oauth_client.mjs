// The official TypeScript MCP SDK's client signing in by itself with the
// OAuth client credentials grant (its ClientCredentialsProvider,
// client_secret_basic): from the server's 401 it finds the protected
// resource metadata, then the authorization server's metadata, gets a token
// and retries. Lists the tools, runs each step of a plan, and prints one
// JSON line. Run by test_mcp_oauth.py through scripts/install/mcp-ts-client.sh.
//   node ts_oauth_client.mjs URL CLIENT_ID CLIENT_SECRET PLAN [OPTIONS]
// PLAN: a JSON list of {"tool", "arguments"}.
// OPTIONS: JSON {"scope": "…", "issuer": "…"}; the SDK's token request
// carries the provider's `scope` only (not the challenge's), and `issuer`
// is the one authorization server the credentials may be sent to.
// Output: {"tools": [names], "calls": [{tool, result | error, status?}],
//          "requests": [{method, url, status, form?}], "clientErrors": […]}
// where `requests` is every HTTP exchange the SDK made (token requests with
// their form, the secret left out).
import { createRequire } from "node:module";

const require = createRequire(`${process.env.TS_SDK_DIR}/package.json`);
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { ClientCredentialsProvider } = require("@modelcontextprotocol/sdk/client/auth-extensions.js");

const [url, clientId, clientSecret, planText, optionsText] = process.argv.slice(2);
const plan = JSON.parse(planText);
const options = JSON.parse(optionsText ?? "{}");

const requests = [];
async function recordingFetch(input, init) {
  const response = await fetch(input, init);
  const entry = { method: init?.method ?? "GET", url: String(input instanceof Request ? input.url : input), status: response.status };
  if (init?.body instanceof URLSearchParams) {
    const form = Object.fromEntries(init.body);
    delete form.client_secret;
    entry.form = form;
  }
  requests.push(entry);
  return response;
}

const provider = new ClientCredentialsProvider({
  clientId,
  clientSecret,
  scope: options.scope,
  expectedIssuer: options.issuer,
});
const client = new Client({ name: "ts-oauth-interop", version: "1.0.0" });
const clientErrors = [];
client.onerror = (error) => clientErrors.push(String(error?.message ?? error));
const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: recordingFetch });

const described = (error) => ({ error: String(error?.message ?? error), status: error?.code ?? null });
const out = { tools: null, calls: [], requests, clientErrors };
try {
  await client.connect(transport);
  out.tools = (await client.listTools()).tools.map((tool) => tool.name);
  for (const step of plan) {
    try {
      out.calls.push({ tool: step.tool, result: await client.callTool({ name: step.tool, arguments: step.arguments }) });
    } catch (error) {
      out.calls.push({ tool: step.tool, ...described(error) });
    }
  }
  await client.close();
} catch (error) {
  out.connectError = described(error);
}
console.log(JSON.stringify(out));
