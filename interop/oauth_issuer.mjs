// A real OAuth 2.1 authorization server for the MCP authorization tests:
// oidc-provider (OpenID certified) with the client credentials grant,
// resource indicators (RFC 8707) and token introspection (RFC 7662), on
// 127.0.0.1. Run through scripts/install/oauth-issuer.sh.
//   node oauth_issuer.mjs [PORT]       (or OAUTH_ISSUER_PORT; 0: a free port)
// When listening it prints one JSON line on stdout:
//   {"issuer": "http://127.0.0.1:PORT", "admin": "http://127.0.0.1:ADMINPORT"}
//
// Clients registered statically (client_secret_basic, client_credentials):
//   agent-reader / agent-reader-secret   may get tickets:read
//   agent-writer / agent-writer-secret   may get tickets:read tickets:write
//   opaque-client / opaque-client-secret may get tickets:read, as an opaque
//                                        token (for introspection)
//   resource-server / resource-server-secret  no scopes: what a resource
//                                        server introspects tokens with
// A token request with `resource=<an http(s) URL on 127.0.0.1>` gets a JWT
// access token (RFC 9068, ES256, `kid` of a key in the JWKS) whose `aud` is
// that resource and whose `scope` is the requested scopes the client may
// have (others are dropped, not refused). Without `resource` the token is
// opaque and carries no resource scopes. A `sub` of a client credentials
// token is the client id.
//
// Clients may also register themselves (RFC 7591, `registration_endpoint`)
// and sign in with the authorization code flow and PKCE, as MCP hosts do:
// the user "alice" signs in and grants what the client asks for at once
// (/interaction/UID), and the token's scope is what was granted of
// tickets:read tickets:write, its `aud` the resource asked for.
//
// The admin port (test only):
//   POST /rotate           sign with a new key (new kid) from now on; the JWKS
//                          lists it beside the old ones
//   POST /ttl?seconds=N    lifetime of the access tokens issued next; N <= 0
//                          issues JWTs that expired |N| seconds before they
//                          were issued (past any leeway); no N: back to 600
//   POST /claims           body: a JSON object merged into the payload of the
//                          JWTs issued next, still signed by the issuer's key
//                          (a wrong `iss`, a future `nbf`, …); {}: none
//   POST /stop-serving     the issuer's port refuses connections
//   POST /resume-serving   … and accepts them again (same port)
//   GET  /stats            {"jwks": fetches of the JWKS, "requests": {path:
//                          count}, "tokens": [the token requests' client,
//                          grant, resource, scope and outcome], "kids": […]}
import crypto from "node:crypto";
import http from "node:http";
import { createRequire } from "node:module";

const require = createRequire(`${process.env.OIDC_PROVIDER_DIR}/package.json`);
const { default: Provider, errors } = await import(require.resolve("oidc-provider"));

const HOST = "127.0.0.1";
const port = Number(process.argv[2] ?? process.env.OAUTH_ISSUER_PORT ?? 0);
const DEFAULT_TTL = 600;

const CLIENTS = {
  "agent-reader": { secret: "agent-reader-secret", scopes: "tickets:read" },
  "agent-writer": { secret: "agent-writer-secret", scopes: "tickets:read tickets:write" },
  "opaque-client": { secret: "opaque-client-secret", scopes: "tickets:read", opaque: true },
  "resource-server": { secret: "resource-server-secret", scopes: "" },
};

const state = {
  keys: [],
  ttl: DEFAULT_TTL,
  claims: {},
  stats: { jwks: 0, requests: {}, tokens: [] },
};

function newKey() {
  const { privateKey } = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" });
  const kid = `es256-${state.keys.length + 1}-${crypto.randomBytes(4).toString("hex")}`;
  state.keys.push({ ...privateKey.export({ format: "jwk" }), kid, alg: "ES256", use: "sig" });
}

// What a client registered on its own (Dynamic Client Registration, as MCP
// hosts register) may get: every scope of the tests' resource, as far as
// the user grants it.
const REGISTERED_SCOPES = "tickets:read tickets:write";

// A resource the tests may ask tokens for: any http(s) URL on 127.0.0.1.
function loopbackResource(indicator) {
  const url = URL.parse(indicator);
  return url && (url.protocol === "http:" || url.protocol === "https:") && url.hostname === HOST;
}

let issuer;
let provider;
let handle;

// The provider is built again on each rotation: its key store is fixed at
// construction. Tokens and grants live in the memory adapter, which all the
// instances share.
function build() {
  provider = new Provider(issuer, {
    clients: Object.entries(CLIENTS).map(([id, client]) => ({
      client_id: id,
      client_secret: client.secret,
      grant_types: ["client_credentials"],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: "client_secret_basic",
    })),
    jwks: { keys: state.keys },
    // The user who signs in at the authorization endpoint (auto-approved
    // by /interaction/UID, below).
    findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    // Scopes a client may register with (a host registers the ones the
    // resource's challenge names).
    scopes: ["openid", "offline_access", ...REGISTERED_SCOPES.split(" ")],
    cookies: { keys: [crypto.randomBytes(16).toString("hex")] },
    // The only keys are ES256 ones; RS256, the default, has none.
    clientDefaults: { id_token_signed_response_alg: "ES256" },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      // Hosts register themselves (RFC 7591), then sign in with the
      // authorization code flow and PKCE.
      registration: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (_ctx, _client, oneOf) => oneOf,
        useGrantedResource: () => false,
        getResourceServerInfo(_ctx, indicator, client) {
          if (!loopbackResource(indicator)) throw new errors.InvalidTarget();
          const allowed = CLIENTS[client.clientId] ?? { scopes: REGISTERED_SCOPES };
          return {
            scope: allowed.scopes,
            audience: indicator,
            accessTokenTTL: Math.max(state.ttl, 1),
            accessTokenFormat: allowed.opaque ? "opaque" : "jwt",
            jwt: { sign: { alg: "ES256", kid: state.keys.at(-1).kid } },
          };
        },
      },
    },
    formats: {
      customizers: {
        jwt(_ctx, _token, jwt) {
          if (state.ttl <= 0) {
            jwt.payload.exp = jwt.payload.iat + state.ttl - 1;
          }
          Object.assign(jwt.payload, state.claims);
        },
      },
    },
    ttl: {
      ClientCredentials: () => Math.max(state.ttl, 1),
      AccessToken: () => Math.max(state.ttl, 1),
    },
  });
  provider.on("grant.success", (ctx) => record(ctx, "ok"));
  provider.on("grant.error", (ctx, error) => record(ctx, error.error ?? String(error)));
  handle = provider.callback();
}

// What a client asked for, as sent (oidc-provider rewrites its own params).
function record(ctx, outcome) {
  const sent = ctx.oidc?.body ?? {};
  state.stats.tokens.push({
    client_id: ctx.oidc?.client?.clientId ?? null,
    client_auth: /^basic /i.test(ctx.get("authorization")) ? "client_secret_basic" : "client_secret_post",
    grant_type: sent.grant_type ?? null,
    resource: sent.resource ?? null,
    scope: sent.scope ?? null,
    outcome,
  });
}

// The user's part of a sign-in, done at once: "alice" logs in and grants
// the client every scope it asked for, for the resource it named (what a
// person does in the browser a host opens).
async function approve(req, res) {
  const details = await provider.interactionDetails(req, res);
  let result;
  if (details.prompt.name === "login") {
    result = { login: { accountId: "alice" } };
  } else {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
    const missing = details.prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(" "));
    }
    result = { consent: { grantId: await grant.save() } };
  }
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
}

const server = http.createServer((req, res) => {
  const path = new URL(req.url, "http://issuer").pathname;
  state.stats.requests[path] = (state.stats.requests[path] ?? 0) + 1;
  if (path === "/jwks") state.stats.jwks += 1;
  if (path.startsWith("/interaction/") && handle) {
    approve(req, res).catch((error) => {
      res.writeHead(500, { "content-type": "text/plain" }).end(String(error?.stack ?? error));
    });
  } else if (handle) {
    handle(req, res);
  } else {
    res.writeHead(503).end();
  }
});

function listen(on) {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(on, HOST, () => {
      server.off("error", reject);
      resolve(server.address().port);
    });
  });
}

function stopServing() {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

const admin = http.createServer(async (req, res) => {
  const url = new URL(req.url, "http://admin");
  const reply = (status, body) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  try {
    const route = `${req.method} ${url.pathname}`;
    if (route === "POST /rotate") {
      newKey();
      build();
      reply(200, { kid: state.keys.at(-1).kid, kids: state.keys.map((key) => key.kid) });
    } else if (route === "POST /ttl") {
      const seconds = url.searchParams.get("seconds");
      state.ttl = seconds === null ? DEFAULT_TTL : Number.parseInt(seconds, 10);
      if (!Number.isInteger(state.ttl)) throw new Error(`not a number of seconds: ${seconds}`);
      reply(200, { ttl: state.ttl });
    } else if (route === "POST /claims") {
      const chunks = [];
      for await (const chunk of req) chunks.push(chunk);
      const claims = JSON.parse(Buffer.concat(chunks).toString() || "{}");
      if (claims === null || typeof claims !== "object" || Array.isArray(claims)) throw new Error("not a JSON object");
      state.claims = claims;
      reply(200, { claims });
    } else if (route === "POST /stop-serving") {
      if (server.listening) await stopServing();
      reply(200, { serving: false });
    } else if (route === "POST /resume-serving") {
      if (!server.listening) await listen(issuerPort);
      reply(200, { serving: true });
    } else if (route === "GET /stats") {
      reply(200, { ...state.stats, kids: state.keys.map((key) => key.kid), serving: server.listening });
    } else {
      reply(404, { error: `no admin route ${route}` });
    }
  } catch (error) {
    reply(500, { error: String(error?.message ?? error) });
  }
});

const issuerPort = await listen(port);
issuer = `http://${HOST}:${issuerPort}`;
newKey();
build();
const adminPort = await new Promise((resolve) => admin.listen(0, HOST, () => resolve(admin.address().port)));
console.log(JSON.stringify({ issuer, admin: `http://${HOST}:${adminPort}` }));

for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => process.exit(0));
}
