// What the TypeScript SDK's OAuth clients (ts_oauth_client.mjs,
// ts_oauth_code_client.mjs) share: a fetch that records every HTTP exchange
// the SDK makes, and the plan run once signed in.

// A fetch that records each exchange in `requests`: {method, url, status,
// form?}, a form (a token request, a sign-in) without its secret.
export function recordingFetch(requests) {
  return async (input, init) => {
    const response = await fetch(input, init);
    const entry = { method: init?.method ?? "GET", url: String(input instanceof Request ? input.url : input), status: response.status };
    if (init?.body instanceof URLSearchParams) {
      const form = Object.fromEntries(init.body);
      delete form.client_secret;
      delete form.password;
      entry.form = form;
    }
    requests.push(entry);
    return response;
  };
}

const described = (error) => ({ error: String(error?.message ?? error), status: error?.code ?? null });

// Connects (`connect()`), lists the tools and runs each step of `plan`
// ({tool, arguments}) into `out` ({tools, calls}); a failure to connect or
// list is `out.connectError`.
export async function runPlan(client, connect, plan, out) {
  try {
    await connect();
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
}
