"""A real OTLP/HTTP trace receiver: spans POSTed to /v1/traces as protobuf
(`ExportTraceServiceRequest`, decoded with the `opentelemetry-proto`
package), kept in memory for the tests to look at."""

import gzip
import http.server
import socket
import threading
import time

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

KINDS = {value: name for name, value in Span.SpanKind.items()}


def _value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def _attributes(pairs):
    return {pair.key: _value(pair.value) for pair in pairs}


class Receiver:
    """Listens on 127.0.0.1 on a free port until `stop()`."""

    def __init__(self):
        self.spans = []
        self.requests = 0
        self._lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces":
                    self.send_error(404)
                    return
                receiver._take(ExportTraceServiceRequest.FromString(body))
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def _take(self, request):
        spans = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append(
                        {
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex(),
                            "name": span.name,
                            "kind": KINDS[span.kind],
                            "attributes": _attributes(span.attributes),
                            "status": span.status.code,
                            "resource": resource,
                            "start": span.start_time_unix_nano,
                            "end": span.end_time_unix_nano,
                        }
                    )
        with self._lock:
            self.requests += 1
            self.spans.extend(spans)

    def wait_for(self, predicate, count=1, timeout=30):
        """The spans for which `predicate` holds, once there are `count`."""
        deadline = time.time() + timeout
        while True:
            with self._lock:
                found = [span for span in self.spans if predicate(span)]
            if len(found) >= count:
                return found
            if time.time() > deadline:
                with self._lock:
                    names = sorted({span["name"] for span in self.spans})
                raise AssertionError(
                    f"{len(found)} of {count} spans arrived within {timeout} s; the receiver has: {names}"
                )
            time.sleep(0.05)

    def trace(self, trace_id):
        with self._lock:
            return [span for span in self.spans if span["trace_id"] == trace_id]

    def stop(self):
        self._server.shutdown()
        self._server.server_close()


class Silent:
    """A collector that accepts connections and never answers: an export to
    it waits until the exporter's timeout."""

    def __init__(self):
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        self.port = self._socket.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._held = []
        self._open = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while self._open:
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            self._held.append(connection)

    def stop(self):
        self._open = False
        self._socket.close()
        for connection in self._held:
            connection.close()
