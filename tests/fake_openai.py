"""A stand-in OpenAI-compatible server on 127.0.0.1 (stdlib http.server) that streams completion
events with set delays, or fails on purpose: for the tests of `advisor measure` and the app's
Measured tab. Bounded: every stream ends (an "endless" one when the client goes away)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeServer:
    """mode: ok | empty | endless | garbage | no-models | reject (HTTP 400 with an OpenAI-style error);
    fail_after=N: HTTP 500 from the N+1st completion on"""

    def __init__(self, mode="ok", first_s=0.02, gap_s=0.005, fail_after=None, props=None):
        self.mode, self.first_s, self.gap_s, self.fail_after = mode, first_s, gap_s, fail_after
        self.props = props   # llama-server's GET /props answer (a dict), or None: no such route
        self.calls = 0
        self.prompts: list[str] = []   # every completion's prompt, in the order they came
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):  # noqa: N802
                if self.path.rstrip("/") == "/props" and server.props is not None:
                    body = json.dumps(server.props).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                elif self.path.rstrip("/") == "/v1/models" and server.mode != "no-models":
                    body = json.dumps({"object": "list", "data": [{"id": "tiny-test", "object": "model"}]}).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                else:
                    self.send_error(404)

            def do_POST(self):  # noqa: N802
                n = int(self.headers.get("Content-Length", 0))
                req = json.loads(self.rfile.read(n))
                with server.lock:
                    server.calls += 1
                    call = server.calls
                    server.prompts.append(req.get("prompt", ""))
                if server.mode == "reject":   # llama-server's answer to a prompt longer than a slot
                    body = json.dumps({"error": {"code": 400, "type": "exceed_context_size_error",
                                                 "message": "the request exceeds the available context size"}}).encode()
                    self.send_response(400)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if server.fail_after is not None and call > server.fail_after:
                    self.send_error(500)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                try:
                    if server.mode == "garbage":
                        self.wfile.write(b"<html>hello</html>\n\n")
                        return
                    if server.mode == "empty":
                        self.wfile.write(b"data: [DONE]\n\n")
                        return
                    time.sleep(server.first_s)
                    k = req["max_tokens"] if server.mode != "endless" else 10**9
                    for i in range(k):
                        ev = {"choices": [{"text": f" t{i}", "index": 0}]}
                        self.wfile.write(f"data: {json.dumps(ev)}\n\n".encode())
                        self.wfile.flush()
                        time.sleep(server.gap_s)
                    usage = {"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": k}}
                    self.wfile.write(f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode())
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
