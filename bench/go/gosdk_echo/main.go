// The echo tool on the official Go SDK, served as its documentation serves
// a tool over Streamable HTTP, stateless and answering JSON: a peer in
// bench/mcp_rounds.py.
//
//	gosdk_echo --listen 127.0.0.1:8901
package main

import (
	"context"
	"flag"
	"log"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type args struct {
	Text string `json:"text" jsonschema:"What to echo."`
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8901", "HOST:PORT to serve /mcp on")
	flag.Parse()
	server := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Echo the text back."},
		func(ctx context.Context, req *mcp.CallToolRequest, args args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: args.Text}}}, nil, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	mux := http.NewServeMux()
	mux.Handle("/mcp", handler)
	log.Printf("gosdk_echo: serving MCP on http://%s/mcp", *listen)
	log.Fatal(http.ListenAndServe(*listen, mux))
}
