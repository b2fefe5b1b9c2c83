// The official TypeScript MCP SDK's client signing in as MCP hosts do
// (Claude, VS Code, Cursor): from the server's 401 it finds the protected
// resource metadata and the authorization server's, registers itself
// (Dynamic Client Registration, a public client), sends the user to the
// authorization endpoint with PKCE (S256) and the resource, and trades the
// code for a token. The user's part, in a browser for a host, is followed
// here over HTTP: the redirects, and the pages the issuer shows on the way
// (its sign-in form, with USER and PASSWORD, and its consent, approved);
// oidc-provider's test sign-in shows none. Then it lists the tools and
// runs each step of a plan, and prints one JSON line. Run by
// test_mcp_oauth.py through scripts/install/mcp-ts-client.sh.
//   node ts_oauth_code_client.mjs URL PLAN [USER PASSWORD]
// PLAN: a JSON list of {"tool", "arguments"}.
// Output: {"tools": [names], "calls": [{tool, result | error}],
//          "requests": [{method, url, status, form?}], "registered": {…},
//          "authorization": {query parameters of the authorization request},
//          "browser": [{method, url, status, form?}] (the user's part,
//          without the password), "token": {the access token's JWT
//          payload}, "clientErrors": […]}
import crypto from "node:crypto";
import { createRequire } from "node:module";

import { recordingFetch, runPlan } from "./ts_plan.mjs";

const require = createRequire(`${process.env.TS_SDK_DIR}/package.json`);
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { UnauthorizedError } = require("@modelcontextprotocol/sdk/client/auth.js");

const [url, planText, user, password] = process.argv.slice(2);
const plan = JSON.parse(planText);
// Where the host would take the browser back to: never fetched, the code is
// read from the redirect that names it.
const REDIRECT = "http://127.0.0.1:1/callback";

const requests = [];
const browser = [];
const browse = recordingFetch(browser);

const unescape = (text) =>
  text.replace(/&(amp|quot|#39|lt|gt);/g, (_, name) => ({ amp: "&", quot: '"', "#39": "'", lt: "<", gt: ">" })[name]);
// What a page shows, without its markup and scripts.
const shown = (page) =>
  unescape(page.replace(/<(script|style)\b[\s\S]*?<\/\1>/gi, "").replace(/<[^>]*>/g, " ")).replace(/\s+/g, " ").trim();
const attribute = (tag, name) => {
  const found = new RegExp(`\\s${name}="([^"]*)"`, "i").exec(tag);
  return found ? unescape(found[1]) : undefined;
};

// A page's first form, filled in as the user would: its hidden fields as
// they are, the user's name and password where it asks for them, and its
// first button (a consent page's first approves).
function filledForm(page, base) {
  const form = /<form\b([^>]*)>([\s\S]*?)<\/form>/i.exec(page);
  if (!form) return undefined;
  const fields = new URLSearchParams();
  let pressed = false;
  for (const [tag] of form[2].matchAll(/<(input|button)\b[^>]*>/gi)) {
    const name = attribute(tag, "name");
    const type = (attribute(tag, "type") ?? (/^<button/i.test(tag) ? "submit" : "text")).toLowerCase();
    if (!name || (type === "submit" && pressed)) continue;
    pressed ||= type === "submit";
    fields.append(name, name === "username" ? user : type === "password" ? password : (attribute(tag, "value") ?? ""));
  }
  return { action: new URL(attribute(form[1], "action") ?? "", base), fields };
}

// The browser's part: follows the authorization endpoint's redirects,
// keeping its cookies, and submits the forms it is shown, until a redirect
// goes back to the host with the code.
async function signIn(authorizationUrl) {
  const cookies = new Map();
  let next = authorizationUrl;
  let form;
  for (let hop = 0; hop < 10; hop += 1) {
    const response = await browse(next, {
      method: form ? "POST" : "GET",
      body: form,
      redirect: "manual",
      headers: { cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join("; ") },
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const at = pair.indexOf("=");
      cookies.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
    }
    const location = response.headers.get("location");
    if (!location) {
      const page = await response.text();
      const filled = response.ok ? filledForm(page, next) : undefined;
      // No form, or the sign-in form again (the name or password refused).
      if (!filled || (filled.fields.has("password") && form?.has("password"))) {
        throw new Error(`the sign-in stopped at ${next} with ${response.status}: ${shown(page)}`);
      }
      ({ action: next, fields: form } = filled);
      continue;
    }
    form = undefined;
    next = new URL(location, next);
    if (String(next).startsWith(REDIRECT)) {
      const error = next.searchParams.get("error");
      if (error) throw new Error(`the authorization server said ${error}: ${next.searchParams.get("error_description")}`);
      return { code: next.searchParams.get("code"), state: next.searchParams.get("state") };
    }
  }
  throw new Error("the sign-in took more than 10 pages and redirects");
}

// What a host keeps between the steps of a sign-in.
class HostProvider {
  constructor() {
    this.registered = undefined;
    this.saved = undefined;
    this.verifier = undefined;
    this.authorization = undefined;
    this.code = undefined;
  }
  get redirectUrl() {
    return REDIRECT;
  }
  state() {
    return crypto.randomUUID();
  }
  get clientMetadata() {
    return {
      client_name: "ts-host-interop",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return this.registered;
  }
  saveClientInformation(information) {
    this.registered = information;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens) {
    this.saved = tokens;
  }
  saveCodeVerifier(verifier) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  async redirectToAuthorization(authorizationUrl) {
    this.authorization = Object.fromEntries(authorizationUrl.searchParams);
    const { code, state } = await signIn(authorizationUrl);
    if (state !== this.authorization.state) throw new Error("the sign-in came back with another state");
    this.code = code;
  }
}

const provider = new HostProvider();
const client = new Client({ name: "ts-host-interop", version: "1.0.0" });
const clientErrors = [];
client.onerror = (error) => clientErrors.push(String(error?.message ?? error));
const transport = () => new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: recordingFetch(requests) });

const out = { tools: null, calls: [], requests, clientErrors };
await runPlan(
  client,
  async () => {
    const first = transport();
    try {
      await client.connect(first);
    } catch (error) {
      if (!(error instanceof UnauthorizedError) || !provider.code) throw error;
      // Back from the browser with the code: the token, then connect again.
      await first.finishAuth(provider.code);
      await client.connect(transport());
    }
  },
  plan,
  out,
);
out.registered = provider.registered ?? null;
out.authorization = provider.authorization ?? null;
out.browser = browser;
const accessToken = provider.saved?.access_token;
out.token = accessToken ? JSON.parse(Buffer.from(accessToken.split(".")[1], "base64url").toString()) : null;
console.log(JSON.stringify(out));
