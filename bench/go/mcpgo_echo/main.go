// The echo tool on mark3labs/mcp-go, served as its documentation serves a
// tool over Streamable HTTP, without sessions (as every server in the
// benchmark runs): a peer in bench/mcp_rounds.py.
//
//	mcpgo_echo --listen 127.0.0.1:8901
package main

import (
	"context"
	"flag"
	"log"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8901", "HOST:PORT to serve /mcp on")
	flag.Parse()
	s := server.NewMCPServer("echo", "1.0.0", server.WithToolCapabilities(false))
	tool := mcp.NewTool("echo",
		mcp.WithDescription("Echo the text back."),
		mcp.WithString("text", mcp.Required(), mcp.Description("What to echo.")),
	)
	s.AddTool(tool, func(ctx context.Context, request mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		text, err := request.RequireString("text")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(text), nil
	})
	http := server.NewStreamableHTTPServer(s, server.WithStateLess(true), server.WithEndpointPath("/mcp"))
	log.Printf("mcpgo_echo: serving MCP on http://%s/mcp", *listen)
	if err := http.Start(*listen); err != nil {
		log.Fatal(err)
	}
}
