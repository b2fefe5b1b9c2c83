"""Shared by the MCP authorization tests: a real authorization server
(oidc-provider, through scripts/install/oauth-issuer.sh and interop/oauth_issuer.mjs),
tokens asked of it directly, forged tokens, and an MCP session signed in by
the Python MCP SDK's own client credentials provider."""

import base64
import json
import secrets
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from peer import ROOT, stop

# The issuer's static clients (interop/oauth_issuer.mjs): id, secret, and
# the scopes each may get.
CLIENTS = {
    "agent-reader": ("agent-reader-secret", "tickets:read"),
    "agent-writer": ("agent-writer-secret", "tickets:read tickets:write"),
    "opaque-client": ("opaque-client-secret", "tickets:read"),
    "resource-server": ("resource-server-secret", ""),
}


def once_keys_load(call, seconds=30):
    """`call()`, tried again while it fails, for up to `seconds`: a server
    answers 503 until it has its issuer's keys."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return call()
        except Exception:  # noqa: BLE001 - keys still loading: 503, retried
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def secret(client_id):
    return CLIENTS[client_id][0]


def http(method, url, form=None, headers=None, timeout=10):
    """A request: the status, the headers and the body (JSON when it is)."""
    data = urllib.parse.urlencode(form).encode() if form is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, answer_headers, body = response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        status, answer_headers, body = error.code, error.headers, error.read()
    try:
        return status, answer_headers, json.loads(body)
    except ValueError:
        return status, answer_headers, body.decode(errors="replace")


class Issuer:
    """The authorization server, on a free port, until `stop`. Ready when
    it has printed its JSON line (`issuer`, `admin`)."""

    def __init__(self, port=None):
        started = time.monotonic()
        self.process = subprocess.Popen(
            [str(ROOT / "scripts" / "install" / "oauth-issuer.sh"), *([str(port)] if port else [])],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.errors = []
        threading.Thread(target=self._read_errors, daemon=True).start()
        line = self._first_json_line()
        self.issuer = line["issuer"]
        self.admin = line["admin"]
        self.start_seconds = time.monotonic() - started

    def _first_json_line(self):
        found = {}

        def read():
            for text in self.process.stdout:
                if text.startswith("{"):
                    found.update(json.loads(text))
                    return

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(120)
        if not found:
            stop(self.process)
            raise AssertionError("the OAuth issuer did not start:\n" + "\n".join(self.errors))
        return found

    def _read_errors(self):
        for line in self.process.stderr:
            self.errors.append(line.rstrip())

    def stop(self):
        return stop(self.process)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    # Tokens, from the token endpoint, client_secret_basic.

    def token_response(self, client_id, resource=None, scope=None, client_secret=None):
        """The token endpoint's answer to a client credentials request:
        the status and the JSON body."""
        form = {"grant_type": "client_credentials"}
        if resource is not None:
            form["resource"] = resource
        if scope is not None:
            form["scope"] = scope
        credentials = f"{client_id}:{client_secret or secret(client_id)}".encode()
        headers = {"Authorization": "Basic " + base64.b64encode(credentials).decode()}
        status, _, body = http("POST", f"{self.issuer}/token", form, headers)
        return status, body

    def token(self, client_id, resource=None, scope=None):
        """An access token for `client_id` (its scopes by default), for
        `resource` when given."""
        if scope is None:
            scope = CLIENTS[client_id][1]
        status, body = self.token_response(client_id, resource, scope)
        assert status == 200, body
        return body["access_token"]

    def introspect(self, token, client_id="resource-server"):
        """RFC 7662: what the issuer says of `token`."""
        credentials = f"{client_id}:{secret(client_id)}".encode()
        headers = {"Authorization": "Basic " + base64.b64encode(credentials).decode()}
        status, _, body = http("POST", f"{self.issuer}/token/introspection", {"token": token}, headers)
        assert status == 200, body
        return body

    def metadata(self, path="/.well-known/oauth-authorization-server"):
        status, _, body = http("GET", f"{self.issuer}{path}")
        assert status == 200, body
        return body

    def jwks(self):
        return self.metadata("/jwks")

    # The admin port.

    def _admin(self, method, path):
        status, _, body = http(method, f"{self.admin}{path}", form={} if method == "POST" else None)
        assert status == 200, body
        return body

    def rotate(self):
        """Sign with a new key from now on; its kid."""
        return self._admin("POST", "/rotate")["kid"]

    def ttl(self, seconds=None):
        """The lifetime of the tokens issued next; <= 0: already expired by
        that much; None: the default (600 s)."""
        query = "" if seconds is None else f"?seconds={int(seconds)}"
        return self._admin("POST", f"/ttl{query}")

    def claims(self, claims=None):
        """Claims merged into the JWTs issued next (signed as ever); None:
        none."""
        request = urllib.request.Request(
            f"{self.admin}/claims", data=json.dumps(claims or {}).encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def stop_serving(self):
        return self._admin("POST", "/stop-serving")

    def resume_serving(self):
        return self._admin("POST", "/resume-serving")

    def stats(self):
        """{"jwks": fetches of the JWKS, "requests": {path: count},
        "tokens": [the token requests], "kids": [...]}."""
        return self._admin("GET", "/stats")


# Tokens the issuer did not make.

def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def claims_for(issuer, resource, sub="mallory", scope="tickets:read tickets:write", lifetime=600):
    now = int(time.time())
    return {
        "iss": issuer,
        "aud": resource,
        "sub": sub,
        "client_id": sub,
        "scope": scope,
        "iat": now,
        "exp": now + lifetime,
        "jti": secrets.token_hex(8),
    }


def forge(claims, kid=None, alg="ES256", key=None):
    """A JWT with these claims signed by a key of our own (a new P-256 key
    unless given), under `kid` (a random one unless given)."""
    import jwt
    from cryptography.hazmat.primitives.asymmetric import ec

    header = {"typ": "at+jwt", "kid": kid or f"forged-{secrets.token_hex(6)}"}
    if alg == "none":
        encoded = lambda value: b64url(json.dumps(value).encode())  # noqa: E731
        return f"{encoded({**header, 'alg': 'none'})}.{encoded(claims)}."
    if key is None:
        key = ec.generate_private_key(ec.SECP256R1())
    return jwt.encode(claims, key, algorithm=alg, headers=header)


def jwt_parts(token):
    """The header and the payload of a JWT, unchecked."""
    header, payload, _ = token.split(".")
    decode = lambda part: json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))  # noqa: E731
    return decode(header), decode(payload)


# The challenge of a 401 or 403.

def challenge(headers):
    """The parameters of a `WWW-Authenticate: Bearer k="v", …` header, with
    the scheme under "scheme"."""
    value = headers.get("WWW-Authenticate")
    assert value, "no WWW-Authenticate header"
    scheme, _, rest = value.partition(" ")
    params = {"scheme": scheme}
    index = 0
    while index < len(rest):
        while index < len(rest) and rest[index] in " ,":
            index += 1
        equals = rest.find("=", index)
        if equals < 0:
            break
        name = rest[index:equals].strip()
        index = equals + 1
        if index < len(rest) and rest[index] == '"':
            value, index = "", index + 1
            while rest[index] != '"':
                if rest[index] == "\\":
                    index += 1
                value += rest[index]
                index += 1
            index += 1
        else:
            end = rest.find(",", index)
            end = len(rest) if end < 0 else end
            value, index = rest[index:end].strip(), end
        params[name] = value
    return params


# The Python MCP SDK's own OAuth client.

class MemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self):
        self.tokens = None
        self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


async def mcp_oauth_session(url, client_id, client_secret, body, issuer=None, scope=None, log=None, verify=None):
    """Runs `body(session)` in an MCP session whose token the Python MCP
    SDK gets itself: `ClientCredentialsOAuthProvider` (client_secret_basic)
    as the httpx2 client's `auth`, discovering the authorization server
    from the server's 401. `log`, when given, gets each HTTP exchange as
    (method, url, status), the token requests' form as a dict too."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    provider = ClientCredentialsOAuthProvider(
        server_url=url,
        storage=MemoryStorage(),
        client_id=client_id,
        client_secret=client_secret,
        scope=scope,
        issuer=issuer,
    )
    if verify is None:
        client = create_mcp_http_client(auth=provider, timeout=httpx2.Timeout(30))
    else:
        # HTTPS with a CA of the test's own (an ssl.SSLContext).
        client = httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30), verify=verify, follow_redirects=True)
    async with client as http_client:
        if log is not None:

            async def on_response(response):
                request = response.request
                entry = {"method": request.method, "url": str(request.url), "status": response.status_code}
                if request.url.path.endswith("/token"):
                    form = dict(urllib.parse.parse_qsl(request.content.decode()))
                    form.pop("client_secret", None)
                    entry["form"] = form
                log.append(entry)

            http_client.event_hooks["response"].append(on_response)
        async with streamable_http_client(url, http_client=http_client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)
