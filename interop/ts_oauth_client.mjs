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

import { recordingFetch, runPlan } from "./ts_plan.mjs";

const require = createRequire(`${process.env.TS_SDK_DIR}/package.json`);
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { ClientCredentialsProvider } = require("@modelcontextprotocol/sdk/client/auth-extensions.js");

const [url, clientId, clientSecret, planText, optionsText] = process.argv.slice(2);
const plan = JSON.parse(planText);
const options = JSON.parse(optionsText ?? "{}");

const requests = [];

const provider = new ClientCredentialsProvider({
  clientId,
  clientSecret,
  scope: options.scope,
  expectedIssuer: options.issuer,
});
const client = new Client({ name: "ts-oauth-interop", version: "1.0.0" });
const clientErrors = [];
client.onerror = (error) => clientErrors.push(String(error?.message ?? error));
const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: recordingFetch(requests) });

const out = { tools: null, calls: [], requests, clientErrors };
await runPlan(client, () => client.connect(transport), plan, out);
console.log(JSON.stringify(out));
