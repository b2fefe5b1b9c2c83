"""MCP authorization: the `tickets` example's MCP port as an OAuth 2.1
resource server, against a real authorization server (oidc-provider,
interop/oauth_issuer.mjs; and Keycloak, interop/keycloak_realm.json, for a
host's sign-in) and the MCP SDKs' own OAuth clients (client credentials,
TypeScript and Python; the authorization code flow, TypeScript). The
challenge and the protected resource metadata, audience, issuer, expiry
and signature checks, scopes per tool (listing and 403 step-up), key
rotation, an issuer that goes down, a flood of unknown key ids, and the
static token beside OAuth.

`tickets`: `list-tickets` needs `tickets:read` and answers with the caller
(the token's `sub`: the client id for client credentials), `close-ticket`
(`{"id": N}`) needs `tickets:write`."""

import concurrent.futures
import contextlib
from http.client import HTTPException
import json
import pathlib
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

import pytest

from oauth import Issuer, challenge, once_keys_load, claims_for, forge, http, jwt_parts, mcp_oauth_session, secret
from test_mcp import INITIALIZE
from peer import ROOT, McpHttp, examples_dir, free_port, mcp_session, metrics_port, refused_over_http, run, stop

ALL_SCOPES = {"tickets:read", "tickets:write"}


@pytest.fixture
def issuer():
    with Issuer() as running:
        yield running


# The realm interop/keycloak_realm.json: its users (alice has the role that
# tickets:write needs, bob does not), and the audience its tickets scopes
# put in `aud` (Keycloak does not act on RFC 8707's resource).
KEYCLOAK_USERS = {"alice": "alice-password", "bob": "bob-password"}
KEYCLOAK_AUDIENCE = "tickets-mcp"


class Keycloak:
    """Keycloak (scripts/install/keycloak.sh) serving the realm `tools` on a
    free port, its state in a directory of its own, until `stop`. Ready
    when the realm's metadata answers; a first start on a new machine
    installs it and takes minutes."""

    def __init__(self, seconds=900):
        started = time.monotonic()
        self.dir = tempfile.TemporaryDirectory()
        port = free_port()
        self.issuer = f"http://127.0.0.1:{port}/realms/tools"
        self.lines = []
        self.process = subprocess.Popen(
            [str(ROOT / "scripts" / "install" / "keycloak.sh"), str(port), self.dir.name],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()
        while (status := self._metadata_status()) != 200:
            if self.process.poll() is not None or time.monotonic() - started > seconds:
                self.stop()
                raise AssertionError(
                    f"Keycloak did not serve {self.issuer} within {seconds} s (last answer: {status}); "
                    "its output:\n" + "\n".join(self.lines[-100:])
                )
            time.sleep(0.5)
        self.start_seconds = time.monotonic() - started

    def _metadata_status(self):
        try:
            return http("GET", f"{self.issuer}/.well-known/openid-configuration", timeout=5)[0]
        except OSError as error:
            return error

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line.rstrip())

    def metadata(self):
        status, _, body = http("GET", f"{self.issuer}/.well-known/openid-configuration")
        assert status == 200, body
        return body

    def stop(self):
        code = stop(self.process)
        self.dir.cleanup()
        return code

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


@pytest.fixture(scope="module")
def keycloak():
    with Keycloak() as running:
        yield running


def post(url, message, token=None, headers=None):
    """A raw JSON-RPC POST: the status, the headers and the body text."""
    request = urllib.request.Request(
        url,
        data=json.dumps(message).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **({"Authorization": f"Bearer {token}"} if token else {}),
            **(headers or {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read().decode()




def raw_call(url, token, tool, arguments):
    """A tools/call after the handshake, over raw HTTP: what a refusal
    looks like on the wire."""
    status, headers, text = post(url, INITIALIZE, token)
    assert status == 200, (status, text)
    session = headers.get("Mcp-Session-Id")
    more = {"MCP-Protocol-Version": "2025-11-25", **({"Mcp-Session-Id": session} if session else {})}
    post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, token, more)
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    return post(url, call, token, more)


def wait_for_keys(url, seconds=30):
    """Until the server has the issuer's keys: before, a request with a
    token is answered 503."""
    deadline = time.monotonic() + seconds
    while True:
        status, _, text = post(url, INITIALIZE, "not.a.jwt")
        if status != 503:
            return
        assert time.monotonic() < deadline, f"the server did not load the issuer's keys: {text}"
        time.sleep(0.1)


@contextlib.contextmanager
def tickets(issuer, *args):
    """The `tickets` example serving MCP with OAuth on a port chosen here
    (the resource URL names it), once it has the issuer's keys."""
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    flags = ["--oauth-issuer", issuer.issuer, "--oauth-resource", resource]
    with McpHttp("tickets", *flags, *args, port=port) as server:
        assert server.url == resource
        wait_for_keys(server.url)
        yield server


def texts(result):
    assert all(item.type == "text" for item in result.content), result
    return "".join(item.text for item in result.content)


async def tools_and_calls(session, plan):
    """The names of the tools listed, then each call's result (or the
    exception it raised)."""
    names = [tool.name for tool in (await session.list_tools()).tools]
    results = []
    for tool, arguments in plan:
        try:
            results.append(await session.call_tool(tool, arguments))
        except Exception as error:  # noqa: BLE001 - what the SDK raises is the observation
            results.append(error)
    return names, results


def assert_refused(status, headers, server, code, error=None):
    assert status == code, status
    params = challenge(headers)
    assert params["scheme"].lower() == "bearer", params
    assert params["resource_metadata"] == metadata_url(server), params
    if error is None:
        assert "error" not in params, params
    else:
        assert params["error"] == error, params
    return params


# The error_description of each refusal (src/mcp/auth's `Reason::describe`).
REFUSALS = {
    "malformed": "the access token is not a well-formed JWT",
    "algorithm": "the access token is signed with an algorithm this server does not accept",
    "unknown key": "the access token is signed with a key its issuer does not publish",
    "signature": "the access token's signature does not hold",
    "issuer": "the access token is not from this server's authorization server",
    "audience": "the access token was not issued for this MCP server",
    "expired": "the access token has expired",
    "not yet valid": "the access token is not valid yet",
}


def metadata_url(server):
    return server.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")


def test_the_issuer_gives_the_tokens_these_tests_rely_on(issuer):
    resource = f"http://127.0.0.1:{free_port()}/mcp"
    # RFC 8414 metadata (what the MCP SDKs look for first) and OpenID
    # discovery, alike.
    oauth = issuer.metadata()
    assert issuer.metadata("/.well-known/openid-configuration") == oauth
    assert oauth["issuer"] == issuer.issuer
    assert "client_credentials" in oauth["grant_types_supported"]
    assert oauth["introspection_endpoint"] == f"{issuer.issuer}/token/introspection"
    kids = [key["kid"] for key in issuer.jwks()["keys"]]

    # A JWT for the resource, with the scopes the client may have among
    # those asked for.
    token = issuer.token("agent-reader", resource, "tickets:read tickets:write")
    header, claims = jwt_parts(token)
    assert header["alg"] == "ES256" and header["typ"] == "at+jwt" and header["kid"] in kids, header
    assert claims["iss"] == issuer.issuer and claims["aud"] == resource, claims
    assert claims["sub"] == "agent-reader" and claims["scope"] == "tickets:read", claims
    _, claims = jwt_parts(issuer.token("agent-writer", resource))
    assert set(claims["scope"].split()) == ALL_SCOPES, claims
    status, body = issuer.token_response("agent-writer", "https://example.com/mcp", "tickets:read")
    assert (status, body["error"]) == (400, "invalid_target"), body

    # An opaque token, and what introspection says of it.
    opaque = issuer.token("opaque-client", resource)
    assert opaque.count(".") == 0, opaque
    about = issuer.introspect(opaque)
    assert about["active"] is True and about["aud"] == resource, about
    assert about["scope"] == "tickets:read" and about["client_id"] == "opaque-client", about

    # Expired on arrival; then a new signing key.
    issuer.ttl(-300)
    _, claims = jwt_parts(issuer.token("agent-reader", resource))
    assert claims["exp"] < time.time() - 290, claims
    issuer.ttl()
    issuer.claims({"iss": "http://127.0.0.1:1"})
    header, claims = jwt_parts(issuer.token("agent-reader", resource))
    assert claims["iss"] == "http://127.0.0.1:1" and header["kid"] in kids, claims
    issuer.claims()
    new_kid = issuer.rotate()
    assert [key["kid"] for key in issuer.jwks()["keys"]] == [*kids, new_kid]
    header, _ = jwt_parts(issuer.token("agent-reader", resource))
    assert header["kid"] == new_kid


def test_without_a_token_the_server_challenges_and_publishes_its_metadata(issuer):
    with tickets(issuer) as server:
        status, headers, _ = post(server.url, INITIALIZE)
        params = assert_refused(status, headers, server, 401)
        assert set(params["scope"].split()) == ALL_SCOPES, params

        for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
            status, _, metadata = http("GET", server.url.replace("/mcp", path))
            assert status == 200, metadata
            assert metadata["resource"] == server.url, metadata
            assert metadata["authorization_servers"] == [issuer.issuer], metadata
            assert set(metadata["scopes_supported"]) == ALL_SCOPES, metadata
            assert metadata["bearer_methods_supported"] == ["header"], metadata

        # With a token of the issuer's, for this server: served.
        status, _, text = post(server.url, INITIALIZE, issuer.token("agent-reader", server.url))
        assert status == 200, text


def test_foreign_expired_and_forged_tokens_are_refused(issuer):
    with tickets(issuer) as server, Issuer() as stranger:
        assert post(server.url, INITIALIZE, issuer.token("agent-writer", server.url))[0] == 200
        issuer.ttl(2)
        assert post(server.url, INITIALIZE, issuer.token("agent-writer", server.url))[0] == 200

        # Each token has one defect, and is refused for it: the reason the
        # challenge's error_description gives is the one named (a token
        # with two defects could pass the check it names and still be
        # refused by the other).
        known_kid = jwt_parts(issuer.token("agent-writer", server.url))[0]["kid"]
        refused = {
            # Issued by the right issuer for another resource.
            "another resource": ("audience", issuer.token("agent-writer", f"http://127.0.0.1:{free_port()}/mcp")),
            # Issued for this resource by another authorization server: its
            # key is not one the issuer publishes.
            "another issuer's token": ("unknown key", stranger.token("agent-writer", server.url)),
            # Signed by a key the issuer publishes the kid of, but not by it.
            "a known kid, another key": ("signature", forge(claims_for(issuer.issuer, server.url), kid=known_kid)),
            # No signature, under the kid of a key the issuer does publish.
            "no signature (alg none)": (
                "algorithm", forge(claims_for(issuer.issuer, server.url), alg="none", kid=known_kid)
            ),
            # Opaque: this server introspects nothing.
            "opaque": ("malformed", issuer.token("opaque-client", server.url)),
        }
        issuer.ttl(-300)
        refused["expired"] = ("expired", issuer.token("agent-writer", server.url))
        issuer.ttl()
        # Signed by the issuer's own key, with one claim that is wrong.
        for what, (reason, claims) in {
            "another iss": ("issuer", {"iss": f"http://127.0.0.1:{free_port()}"}),
            "an audience list without this resource": ("audience", {"aud": ["https://example.com/mcp"]}),
            "not valid for an hour": ("not yet valid", {"nbf": int(time.time()) + 3600}),
            "exp as text": ("malformed", {"exp": str(int(time.time()) + 600)}),
        }.items():
            issuer.claims(claims)
            refused[what] = (reason, issuer.token("agent-writer", server.url))
        issuer.claims()
        for what, (reason, token) in refused.items():
            status, headers, text = post(server.url, INITIALIZE, token)
            assert status == 401, (what, status, text)
            params = assert_refused(status, headers, server, 401, "invalid_token")
            assert params["error_description"] == REFUSALS[reason], (what, params)

        # Not one bearer token: a malformed request.
        status, headers, text = post(server.url, INITIALIZE, headers={"Authorization": "Bearer two tokens"})
        assert status == 400, text
        assert challenge(headers)["error"] == "invalid_request", headers


def test_call_over_mcp_signs_in_with_client_credentials_and_shows_a_refusal(issuer):
    """`call --mcp URL --mcp-client-id ID --mcp-client-secret-file FILE`:
    from the server's 401 to its metadata, the issuer's, a token for this
    resource, and the call; a scope the client lacks is the server's 403
    with its challenge."""
    tickets_bin = str(examples_dir() / "tickets")
    with tickets(issuer) as server, tempfile.TemporaryDirectory() as directory:
        def call(client, tool, arguments, *scopes):
            secret_file = pathlib.Path(directory) / client
            secret_file.write_text(secret(client))
            scope_flags = [flag for scope in scopes for flag in ("--mcp-scope", scope)]
            return subprocess.run(
                [tickets_bin, "call", "--mcp", server.url, "--mcp-client-id", client,
                 "--mcp-client-secret-file", str(secret_file), *scope_flags, tool, "--args", arguments],
                capture_output=True, text=True, timeout=60,
            )

        listed = call("agent-reader", "list-tickets", "{}", "tickets:read")
        assert listed.returncode == 0, listed
        frame = json.loads(listed.stdout)
        assert frame["error"] is None and "agent-reader" in frame["response"], frame
        closed = call("agent-reader", "close-ticket", '{"id": 7}', "tickets:read")
        assert closed.returncode == 1, closed
        assert "refused the call: HTTP 403 Forbidden; WWW-Authenticate: Bearer" in closed.stderr, closed.stderr
        assert 'error="insufficient_scope"' in closed.stderr and 'scope="tickets:write"' in closed.stderr, \
            closed.stderr


def test_scopes_decide_which_tools_a_caller_sees_and_may_call(issuer):
    plan = [("list-tickets", {}), ("close-ticket", {"id": 2})]
    with tickets(issuer) as server:
        reader = issuer.token("agent-reader", server.url)
        names, (listed, closed) = run(mcp_session(server.url, lambda s: tools_and_calls(s, plan), token=reader))
        assert names == ["list-tickets"]
        assert "agent-reader" in texts(listed) and not listed.is_error
        assert refused_over_http(closed), closed

        status, headers, _ = raw_call(server.url, reader, "close-ticket", {"id": 7})
        params = assert_refused(status, headers, server, 403, "insufficient_scope")
        assert params["scope"] == "tickets:write", params

        writer = issuer.token("agent-writer", server.url)
        names, (listed, closed) = run(mcp_session(server.url, lambda s: tools_and_calls(s, plan), token=writer))
        assert sorted(names) == ["close-ticket", "list-tickets"]
        assert "agent-writer" in texts(listed) and not listed.is_error
        assert not closed.is_error, closed
        assert texts(closed) == "Closed ticket #2: Rotate the staging database password"
        # The handler's own check: the token's subject is not the owner of
        # #3, and no token here grants tickets:admin.
        _, (others,) = run(
            mcp_session(server.url, lambda s: tools_and_calls(s, [("close-ticket", {"id": 3})]), token=writer)
        )
        assert others.is_error
        assert texts(others) == "ticket #3 belongs to alice: only its owner or an admin may close it"


def test_a_token_signed_with_a_new_key_is_accepted_after_one_fetch(issuer):
    with tickets(issuer) as server:
        old = issuer.token("agent-reader", server.url)
        assert post(server.url, INITIALIZE, old)[0] == 200
        before = issuer.stats()["jwks"]
        new_kid = issuer.rotate()
        token = issuer.token("agent-reader", server.url)
        assert jwt_parts(token)[0]["kid"] == new_kid
        status, _, text = post(server.url, INITIALIZE, token)
        assert status == 200, text
        assert post(server.url, INITIALIZE, old)[0] == 200
        assert issuer.stats()["jwks"] - before == 1


def test_known_keys_keep_serving_while_the_issuer_is_down(issuer):
    with tickets(issuer) as server:
        first, second = (issuer.token("agent-reader", server.url) for _ in range(2))
        assert post(server.url, INITIALIZE, first)[0] == 200
        issuer.stop_serving()
        try:
            with pytest.raises(OSError):
                urllib.request.urlopen(f"{issuer.issuer}/jwks", timeout=5)
            for token in (second, first):
                status, _, text = post(server.url, INITIALIZE, token)
                assert status == 200, text
            # A key the server has not seen: it cannot fetch it, and says
            # so at once.
            started = time.monotonic()
            status, headers, _ = post(server.url, INITIALIZE, forge(claims_for(issuer.issuer, server.url)))
            assert_refused(status, headers, server, 401, "invalid_token")
            assert time.monotonic() - started < 5
            names, _ = run(mcp_session(server.url, lambda s: tools_and_calls(s, []), token=second))
            assert names == ["list-tickets"]
        finally:
            issuer.resume_serving()
        assert post(server.url, INITIALIZE, issuer.token("agent-writer", server.url))[0] == 200


def test_a_flood_of_unknown_key_ids_does_not_flood_the_issuer(issuer):
    with tickets(issuer) as server:
        assert post(server.url, INITIALIZE, issuer.token("agent-reader", server.url))[0] == 200
        before = issuer.stats()["jwks"]
        forged = [forge(claims_for(issuer.issuer, server.url)) for _ in range(50)]
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(10) as pool:
            answers = list(pool.map(lambda token: post(server.url, INITIALIZE, token), forged))
        assert time.monotonic() - started < 20
        for status, headers, text in answers:
            assert status == 401, text
            assert challenge(headers)["error"] == "invalid_token", headers
        # One fetch for the first unknown kid; the rest wait for it, or are
        # told the keys were fetched moments ago.
        assert issuer.stats()["jwks"] - before <= 2
        # And the issuer's own tokens still pass.
        assert post(server.url, INITIALIZE, issuer.token("agent-writer", server.url))[0] == 200


def ts_oauth_client(url, client_id, plan, **options):
    done = subprocess.run(
        [
            str(ROOT / "scripts" / "install" / "mcp-ts-client.sh"),
            "oauth",
            url,
            client_id,
            secret(client_id),
            json.dumps([{"tool": tool, "arguments": arguments} for tool, arguments in plan]),
            json.dumps(options),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def assert_discovered(requests, server, issuer):
    """The sign-in the MCP specification describes: the 401, the protected
    resource metadata the challenge names, the authorization server's RFC
    8414 metadata, then a client credentials request for this resource."""
    urls = [(entry["method"], entry["url"], entry["status"]) for entry in requests]
    assert urls[:3] == [
        ("POST", server.url, 401),
        ("GET", metadata_url(server), 200),
        ("GET", f"{issuer.issuer}/.well-known/oauth-authorization-server", 200),
    ], urls
    token_request = requests[3]
    assert (token_request["url"], token_request["status"]) == (f"{issuer.issuer}/token", 200), urls
    assert token_request["form"]["grant_type"] == "client_credentials"
    assert token_request["form"]["resource"] == server.url
    return token_request["form"]


def test_the_typescript_sdk_signs_in_with_client_credentials(issuer):
    plan = [("list-tickets", {}), ("close-ticket", {"id": 2})]
    with tickets(issuer) as server:
        # The SDK asks for the provider's `scope` (not the challenge's).
        writer = ts_oauth_client(
            server.url, "agent-writer", plan, scope="tickets:read tickets:write", issuer=issuer.issuer
        )
        assert "connectError" not in writer, writer
        assert sorted(writer["tools"]) == ["close-ticket", "list-tickets"], writer
        listed, closed = writer["calls"]
        assert "agent-writer" in listed["result"]["content"][0]["text"], listed
        assert closed["result"]["isError"] is False, closed
        form = assert_discovered(writer["requests"], server, issuer)
        assert set(form["scope"].split()) == ALL_SCOPES, form

        reader = ts_oauth_client(server.url, "agent-reader", plan, scope="tickets:read", issuer=issuer.issuer)
        assert reader["tools"] == ["list-tickets"], reader
        listed, closed = reader["calls"]
        assert "agent-reader" in listed["result"]["content"][0]["text"], listed
        # Refused with insufficient_scope, the SDK asks for a token again
        # (the same scopes), is refused again and gives up.
        assert closed["status"] == 403 and "403" in closed["error"], closed
        statuses = [(entry["url"], entry["status"]) for entry in reader["requests"]]
        assert statuses.count((server.url, 403)) == 2, statuses
        assert statuses.count((f"{issuer.issuer}/token", 200)) == 2, statuses


def ts_host(url, plan, *credentials):
    """The TypeScript SDK signing in as a host does
    (interop/ts_oauth_code_client.mjs), the user's name and password
    given where the issuer asks for them: its JSON line, once connected."""
    done = subprocess.run(
        [
            str(ROOT / "scripts" / "install" / "mcp-ts-client.sh"),
            "oauth-code",
            url,
            json.dumps([{"tool": tool, "arguments": arguments} for tool, arguments in plan]),
            *credentials,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    host = json.loads(done.stdout.strip().splitlines()[-1])
    assert "connectError" not in host, host
    return host


def test_the_typescript_sdk_signs_in_as_a_host_does(issuer):
    """What Claude, VS Code and Cursor do: the SDK's own OAuth client,
    public and registered by itself (RFC 7591), the authorization code flow
    with PKCE and the resource (RFC 8707); the user ("alice", approving at
    the issuer at once) is the caller the tools see."""
    plan = [("list-tickets", {}), ("close-ticket", {"id": 3}), ("close-ticket", {"id": 2})]
    with tickets(issuer) as server:
        host = ts_host(server.url, plan)
        urls = assert_signed_in_as_alice(host, server, f"{issuer.issuer}/token")
        # Discovery, then registration.
        assert urls[:3] == [
            ("POST", server.url, 401),
            ("GET", metadata_url(server), 200),
            ("GET", f"{issuer.issuer}/.well-known/oauth-authorization-server", 200),
        ], urls
        assert ("POST", f"{issuer.issuer}/reg", 201) in urls, urls
        # The token: for this server, the user's, with what was granted.
        token = host["token"]
        assert token["aud"] == server.url and token["sub"] == "alice", token
        assert set(token["scope"].split()) == ALL_SCOPES, token


def assert_signed_in_as_alice(host, server, token_endpoint):
    """What a host's sign-in shows, at any issuer: registered by itself as
    a public client; an authorization request with a code, PKCE (S256),
    this resource and the scopes the server's challenge named; the code
    traded for a token with its verifier and the resource; then the tools
    see alice: her ticket closes, another's does not. The requests made,
    as (method, URL, status)."""
    assert host["registered"]["client_id"], host["registered"]
    assert host["registered"].get("token_endpoint_auth_method") == "none", host["registered"]
    asked = host["authorization"]
    assert asked["response_type"] == "code" and asked["state"], asked
    assert asked["code_challenge_method"] == "S256" and len(asked["code_challenge"]) >= 43, asked
    assert asked["resource"] == server.url, asked
    assert set(asked["scope"].split()) == ALL_SCOPES, asked
    (token_request,) = [entry for entry in host["requests"] if entry["url"] == token_endpoint]
    assert token_request["status"] == 200, token_request
    form = token_request["form"]
    assert form["grant_type"] == "authorization_code" and form["code_verifier"], form
    assert form["resource"] == server.url, form
    assert sorted(host["tools"]) == ["close-ticket", "list-tickets"], host
    listed, mine, theirs = host["calls"]
    assert "as listed for alice" in listed["result"]["content"][0]["text"], listed
    assert mine["result"]["isError"] is False, mine
    assert theirs["result"]["isError"] is True, theirs
    assert "belongs to agent-writer" in theirs["result"]["content"][0]["text"], theirs
    return [(entry["method"], entry["url"], entry["status"]) for entry in host["requests"]]


@contextlib.contextmanager
def tickets_at_keycloak(keycloak):
    """`tickets` taking Keycloak's tokens: for the audience its scopes put
    in `aud`, the username as the caller."""
    with tickets(keycloak, "--oauth-audience", KEYCLOAK_AUDIENCE, "--oauth-user-claim", "preferred_username") as server:
        yield server


def test_the_typescript_sdk_signs_in_at_keycloak_as_a_host_does(keycloak):
    """The host's sign-in against Keycloak: its metadata, registration
    under its anonymous registration policies, its sign-in page (alice's
    name and password) and its consent page, then the code for a token
    with alice's username, the scopes she consented to and the audience
    the scopes carry."""
    plan = [("list-tickets", {}), ("close-ticket", {"id": 3}), ("close-ticket", {"id": 2})]
    metadata = keycloak.metadata()
    with tickets_at_keycloak(keycloak) as server:
        host = ts_host(server.url, plan, "alice", KEYCLOAK_USERS["alice"])
        urls = assert_signed_in_as_alice(host, server, metadata["token_endpoint"])
        # Keycloak serves its RFC 8414 metadata where the SDK looks first.
        origin = keycloak.issuer.removesuffix("/realms/tools")
        assert urls[:3] == [
            ("POST", server.url, 401),
            ("GET", metadata_url(server), 200),
            ("GET", f"{origin}/.well-known/oauth-authorization-server/realms/tools", 200),
        ], urls
        assert ("POST", metadata["registration_endpoint"], 201) in urls, urls
        # The user's part: the sign-in form posted with alice's name (the
        # password is not recorded), then the consent given.
        pages = [(entry["method"], entry["status"]) for entry in host["browser"]]
        assert pages == [("GET", 200), ("POST", 302), ("GET", 200), ("POST", 302)], host["browser"]
        signed_in, consented = (entry["form"] for entry in host["browser"] if entry["method"] == "POST")
        assert signed_in["username"] == "alice", signed_in
        assert "accept" in consented, consented
        token = host["token"]
        assert token["iss"] == keycloak.issuer and token["aud"] == KEYCLOAK_AUDIENCE, token
        assert token["preferred_username"] == "alice", token
        assert set(token["scope"].split()) == ALL_SCOPES, token


def test_at_keycloak_a_user_is_granted_and_shown_only_what_his_roles_allow(keycloak):
    """bob lacks the role tickets:write is mapped to: Keycloak grants him
    tickets:read alone of the scopes asked for, and the server lists him
    the one tool it allows and refuses the other."""
    plan = [("list-tickets", {}), ("close-ticket", {"id": 2})]
    token_endpoint = keycloak.metadata()["token_endpoint"]
    with tickets_at_keycloak(keycloak) as server:
        host = ts_host(server.url, plan, "bob", KEYCLOAK_USERS["bob"])
        assert set(host["authorization"]["scope"].split()) == ALL_SCOPES, host["authorization"]
        token = host["token"]
        assert token["preferred_username"] == "bob" and token["scope"] == "tickets:read", token
        assert host["tools"] == ["list-tickets"], host
        listed, closed = host["calls"]
        assert "as listed for bob" in listed["result"]["content"][0]["text"], listed
        # Refused with insufficient_scope, the SDK refreshes its token, is
        # granted tickets:read alone again, is refused again and gives up.
        assert closed["status"] == 403 and "403" in closed["error"], closed
        statuses = [(entry["url"], entry["status"]) for entry in host["requests"]]
        assert statuses.count((server.url, 403)) == 2, statuses
        grants = [entry["form"]["grant_type"] for entry in host["requests"] if entry["url"] == token_endpoint]
        assert grants == ["authorization_code", "refresh_token"], grants


def test_the_python_sdk_signs_in_with_client_credentials(issuer):
    plan = [("list-tickets", {}), ("close-ticket", {"id": 2})]
    with tickets(issuer) as server:
        asked = challenge(post(server.url, INITIALIZE)[1])["scope"]

        def signed_in(client_id):
            """The tools `client_id` lists, its calls, and the HTTP log."""
            log = []
            session = mcp_oauth_session(
                server.url, client_id, secret(client_id), lambda s: tools_and_calls(s, plan),
                issuer=issuer.issuer, log=log,
            )
            return (*run(session), log)

        names, (listed, closed), log = signed_in("agent-writer")
        assert sorted(names) == ["close-ticket", "list-tickets"]
        assert "agent-writer" in texts(listed)
        assert not closed.is_error, closed
        # The SDK asks for the scopes the challenge names.
        assert assert_discovered(log, server, issuer)["scope"] == asked

        names, (listed, closed), log = signed_in("agent-reader")
        assert names == ["list-tickets"]
        assert "agent-reader" in texts(listed)
        # Refused with insufficient_scope, the SDK steps up (asking for
        # tickets:write too), is granted tickets:read only, and is refused
        # again.
        assert refused_over_http(closed), closed
        statuses = [(entry["method"], entry["url"], entry["status"]) for entry in log]
        assert statuses.count(("POST", server.url, 403)) == 2, statuses
        step_up = [entry["form"] for entry in log if "form" in entry][-1]
        assert "tickets:write" in step_up["scope"].split(), step_up


def test_the_static_token_and_oauth_clients_share_one_server(issuer):
    plan = [("list-tickets", {}), ("close-ticket", {"id": 3})]
    with tickets(issuer, "--mcp-token", "static-s3cret", "--log-level", "debug") as server:
        names, (listed, closed) = run(
            mcp_session(server.url, lambda s: tools_and_calls(s, plan), token="static-s3cret")
        )
        # The static token calls every tool; it names no user and grants no
        # scope, so the handler's owner check refuses the close itself.
        assert sorted(names) == ["close-ticket", "list-tickets"]
        assert not listed.is_error and "an unnamed caller" in texts(listed), listed
        assert closed.is_error
        assert texts(closed) == "ticket #3 belongs to alice: only its owner or an admin may close it"

        names, (listed, closed) = run(
            mcp_oauth_session(
                server.url,
                "agent-reader",
                secret("agent-reader"),
                lambda s: tools_and_calls(s, plan),
                issuer=issuer.issuer,
            )
        )
        assert names == ["list-tickets"]
        assert "agent-reader" in texts(listed)
        assert refused_over_http(closed), closed

        token = issuer.token("agent-writer", server.url)
        assert post(server.url, INITIALIZE, token)[0] == 200
        status, headers, _ = post(server.url, INITIALIZE, "static-wrong")
        assert_refused(status, headers, server, 401, "invalid_token")
    assert not any("static-s3cret" in line or token in line for line in server.lines)


def service_of(tool):
    """The id of the service `tool` belongs to, from the descriptors."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([str(examples_dir() / "tickets"), "descriptors", "--out", out], check=True, timeout=60)
        return json.loads((pathlib.Path(out) / "tool" / f"{tool}.json").read_text())["service"]


def test_a_scope_override_puts_a_service_behind_another_scope(issuer):
    service = service_of("list-tickets")
    with tickets(issuer, "--oauth-scope", f"{service}=tickets:write") as server:
        reader = issuer.token("agent-reader", server.url)
        names, _ = run(mcp_session(server.url, lambda s: tools_and_calls(s, []), token=reader))
        assert "list-tickets" not in names
        status, headers, _ = raw_call(server.url, reader, "list-tickets", {})
        params = assert_refused(status, headers, server, 403, "insufficient_scope")
        assert params["scope"] == "tickets:write", params

        writer = issuer.token("agent-writer", server.url)
        names, (listed,) = run(
            mcp_session(server.url, lambda s: tools_and_calls(s, [("list-tickets", {})]), token=writer)
        )
        assert "list-tickets" in names
        assert "agent-writer" in texts(listed)



def test_an_issuer_that_answers_wrongly_stops_the_start_with_the_fix(issuer):
    """Written with a trailing slash its metadata does not have, or without
    the path its metadata is at: the server does not start, and says in one
    sentence what was configured, what was found and what to write."""
    def start(oauth_issuer):
        resource = f"http://127.0.0.1:{free_port()}/mcp"
        started = time.monotonic()
        done = subprocess.run(
            [str(examples_dir() / "tickets"), "mcp", "--listen", "127.0.0.1:0", "--metrics-port", "0",
             "--oauth-issuer", oauth_issuer, "--oauth-resource", resource],
            capture_output=True, text=True, timeout=60,
        )
        return done, time.monotonic() - started

    done, took = start(issuer.issuer + "/")
    assert done.returncode != 0, done
    assert took < 10, took
    assert "serving MCP" not in done.stderr, done.stderr
    assert (f"--oauth-issuer {issuer.issuer}/: its metadata at " in done.stderr
            and f"names the issuer {issuer.issuer}, and tokens carry that value in `iss`: write "
                f"--oauth-issuer exactly as {issuer.issuer} (without a trailing slash)" in done.stderr), done.stderr

    done, took = start(issuer.issuer + "/realms/missing")
    assert done.returncode != 0, done
    assert took < 10, took
    assert (f"--oauth-issuer {issuer.issuer}/realms/missing: no authorization server metadata at its "
            "well-known paths" in done.stderr), done.stderr
    assert "404" in done.stderr, done.stderr


def test_until_the_issuer_answers_tokens_get_503_and_mcp_is_not_ready():
    """The issuer down at start: the server serves at once, answers a
    request with a token 503 (Retry-After) and fails /readyz/mcp, says so
    in one ERROR line, and takes tokens once the issuer is up."""
    issuer_port, port = free_port(), free_port()
    issuer_url = f"http://127.0.0.1:{issuer_port}"
    resource = f"http://127.0.0.1:{port}/mcp"
    with McpHttp("tickets", "--oauth-issuer", issuer_url, "--oauth-resource", resource, port=port) as server:
        status, headers, text = post(server.url, INITIALIZE, "a.b.c")
        assert status == 503, (status, text)
        assert headers["Retry-After"] == "5"
        assert "keys are not loaded yet" in text
        # Without a token, the challenge still says where to sign in.
        status, headers, _ = post(server.url, INITIALIZE)
        assert status == 401 and "resource_metadata=" in headers["WWW-Authenticate"]
        metrics = f"http://127.0.0.1:{metrics_port(server)}"
        status, _, text = http("GET", f"{metrics}/readyz/mcp")
        assert status == 503 and "the authorization server's keys are not loaded" in text, (status, text)
        errors = [line for line in server.lines if "ERROR" in line]
        assert len(errors) == 1 and "cannot reach the authorization server" in errors[0], server.lines
        with Issuer(port=issuer_port) as issuer:
            wait_for_keys(server.url, seconds=40)
            status, _, text = http("GET", f"{metrics}/readyz/mcp")
            assert status == 200, text
            token = issuer.token("agent-reader", resource)
            status, _, text = post(server.url, INITIALIZE, token)
            assert status == 200, text
            _, _, scraped = http("GET", f"{metrics}/metrics")
            assert "tg_tool_service_mcp_auth_keys_loaded 1" in scraped
            assert 'tg_tool_service_mcp_auth_refusals_total{reason="issuer_unavailable"}' in scraped


def test_opaque_tokens_are_introspected_and_their_answers_cached(issuer):
    """An opaque token (no resource asked: oidc-provider issues it opaque)
    is introspected with the server's own client; its `aud` must still
    name this server, so the issuer's opaque tokens without one are
    refused, and the issuer is asked once per token while the answer is
    cached."""
    with tempfile.TemporaryDirectory() as directory:
        secret_file = pathlib.Path(directory) / "secret"
        secret_file.write_text(secret("resource-server") + "\n")
        flags = ["--oauth-client-id", "resource-server", "--oauth-client-secret-file", str(secret_file)]
        with tickets(issuer, *flags) as server:
            opaque = issuer.token("opaque-client")
            assert opaque.count(".") != 2, opaque
            assert issuer.introspect(opaque)["active"] is True
            before = issuer.stats()["requests"].get("/token/introspection", 0)
            for _ in range(3):
                status, headers, text = post(server.url, INITIALIZE, opaque)
                assert status == 401, (status, text)
                assert 'error="invalid_token"' in headers["WWW-Authenticate"]
                assert "was not issued for this MCP server" in headers["WWW-Authenticate"]
            # Refusals are cached too: one introspection for three requests.
            assert issuer.stats()["requests"].get("/token/introspection", 0) - before == 1
            status, _, text = post(server.url, INITIALIZE, "an-opaque-token-the-issuer-never-made")
            assert status == 401 and "not active" in text, (status, text)


def test_https_on_the_mcp_port_with_oauth(issuer, tmp_path):
    """`--mcp-tls-cert`/`--mcp-tls-key`: the Python SDK's OAuth client
    signs in and calls over HTTPS, trusting the test's certificate; the
    protected resource metadata names the https resource; plain HTTP on
    the same port gets no MCP answer."""
    import ssl

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True,
    )
    trust = ssl.create_default_context(cafile=str(cert))
    port = free_port()
    resource = f"https://127.0.0.1:{port}/mcp"
    flags = ["--oauth-issuer", issuer.issuer, "--oauth-resource", resource,
             "--mcp-tls-cert", str(cert), "--mcp-tls-key", str(key)]
    with McpHttp("tickets", *flags, port=port) as server:
        assert any(f"url={resource}" in line for line in server.lines), server.lines
        metadata_url = f"https://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
        with urllib.request.urlopen(metadata_url, context=trust, timeout=10) as response:
            assert json.loads(response.read())["resource"] == resource
        # Plain HTTP on the TLS port: the handshake fails and the
        # connection closes with no HTTP answer.
        with pytest.raises((HTTPException, ConnectionError)):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/mcp", timeout=5)
        names, (listed,) = once_keys_load(
            lambda: run(
                mcp_oauth_session(
                    resource, "agent-reader", secret("agent-reader"),
                    lambda s: tools_and_calls(s, [("list-tickets", {})]),
                    issuer=issuer.issuer, verify=trust,
                )
            )
        )
        assert names == ["list-tickets"]
        assert "as listed for agent-reader" in texts(listed), listed
