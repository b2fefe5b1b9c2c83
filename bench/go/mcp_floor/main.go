// The floor of the MCP benchmark: no MCP library at all. A bare net/http
// handler decodes each JSON-RPC request and encodes its answer as JSON,
// answering what bench/src/bin/mcp_loadgen.rs sends (initialize, the
// initialized notification, tools/call of the echo tool). It checks nothing
// an MCP server must check: what every server above it spends on top of
// HTTP and JSON is its protocol layer.
//
//	mcp_floor --listen 127.0.0.1:8901
package main

import (
	"encoding/json"
	"flag"
	"log"
	"net/http"
)

type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  struct {
		ProtocolVersion string `json:"protocolVersion"`
		Name            string `json:"name"`
		Arguments       struct {
			Text string `json:"text"`
		} `json:"arguments"`
	} `json:"params"`
}

type content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result"`
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8901", "HOST:PORT to serve /mcp on")
	flag.Parse()
	http.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var req request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var result any
		switch req.Method {
		case "initialize":
			result = map[string]any{
				"protocolVersion": req.Params.ProtocolVersion,
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": "floor", "version": "1.0.0"},
			}
		case "tools/call":
			result = map[string]any{"content": []content{{Type: "text", Text: req.Params.Arguments.Text}}}
		default:
			result = map[string]any{}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(response{JSONRPC: "2.0", ID: req.ID, Result: result})
	})
	log.Printf("mcp_floor: serving on http://%s/mcp", *listen)
	log.Fatal(http.ListenAndServe(*listen, nil))
}
