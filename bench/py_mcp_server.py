"""The benchmark's echo tool on the Python MCP SDK's own server (mcp 2.3.0,
`MCPServer`), over Streamable HTTP or stdio: the Python baseline of the MCP
benchmark (bench/mcp.py).

    python bench/py_mcp_server.py --listen 127.0.0.1:8902
    python bench/py_mcp_server.py --stdio
"""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("py-echo", version="1")


# Text only, as our server and rmcp's answer a `String` result.
@server.tool(name="echo", description="Echo the text back.", structured_output=False)
def echo(text: str) -> str:
    return text


if __name__ == "__main__":
    if "--stdio" in sys.argv:
        server.run("stdio")
    else:
        host, port = sys.argv[sys.argv.index("--listen") + 1].rsplit(":", 1)
        server.run("streamable-http", host=host, port=int(port), streamable_http_path="/mcp")
