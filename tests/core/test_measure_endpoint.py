"""Issue 27: `advisor measure` against a server on loopback. The server here is a small stand-in
(stdlib http.server streaming OpenAI-style events with set delays), so each failure mode can be
produced on purpose: refused port, HTTP errors mid-run, a stream of nothing, a stream that never
ends, malformed events. Every request goes to 127.0.0.1 and every run is bounded."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from advisor.cli.main import main
from advisor.data.errors import AdvisorError
from advisor.fit.bench_results import read_results
from advisor.fit.endpoint import measure


class FakeServer:
    """mode: ok | http500-after-N | empty | endless | garbage | no-models"""

    def __init__(self, mode="ok", first_s=0.02, gap_s=0.005, fail_after=None):
        self.mode, self.first_s, self.gap_s, self.fail_after = mode, first_s, gap_s, fail_after
        self.calls = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):  # noqa: N802
                if self.path.rstrip("/") == "/v1/models" and server.mode != "no-models":
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


def test_a_healthy_server_is_measured_per_concurrency(tmp_path, capsys):
    with FakeServer(first_s=0.05, gap_s=0.004) as srv:
        m = measure(srv.url, concurrencies=(1, 3), requests=6, prompt_tokens=64, output_tokens=12, timeout_s=10)
    assert m.model == "tiny-test" and [lv.concurrency for lv in m.levels] == [1, 3]
    one = m.levels[0].stats()
    assert one["completed"] == 6 and one["failed"] == 0
    assert 40 <= one["ttft_ms"]["mean"] <= 400            # the server waits 50 ms before the first token
    assert 3 <= one["itl_ms"]["p50"] <= 100 and one["itl_ms"]["p99"] >= one["itl_ms"]["p50"]
    assert one["mean_output_tokens"] == 12 and one["mean_prompt_tokens"] == 100   # the server's own counts
    assert one["output_throughput_tok_s"] > 0
    # the CLI's JSON carries the contract's fields, and --out is a file compare-measured reads
    out = tmp_path / "m.json"
    with FakeServer() as srv:
        code = main(["measure", "--url", srv.url, "--concurrency", "1,2", "--requests", "3", "--output", "8",
                     "--json", "--out", str(out)])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and [lv["concurrency"] for lv in d["levels"]] == [1, 2]
    assert {"ttft_ms", "itl_ms", "output_throughput_tok_s", "completed", "failed"} <= set(d["levels"][0])
    assert set(d["levels"][0]["ttft_ms"]) == {"mean", "p50", "p90", "p99"}
    tool, records = read_results(out)
    assert tool == "advisor measure" and {r.metric for r in records} >= {"ttft_ms", "itl_ms", "throughput_tok_s"}
    assert all(r.concurrency in (1.0, 2.0) and r.prompt_tokens == 100 and "hardware" in r.missing for r in records)


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("mode, words", [("garbage", "not an openai-style event stream"),
                                         ("empty", "streamed no tokens")])
def test_a_server_that_does_not_stream_tokens_is_one_line(mode, words):
    with FakeServer(mode) as srv, pytest.raises(AdvisorError) as err:
        measure(srv.url, requests=2, output_tokens=4, timeout_s=5)
    assert words in str(err.value).lower() and "\n" not in str(err.value)


def test_no_server_no_models_and_bad_urls(capsys):
    port = _free_port()
    code = main(["measure", "--url", f"http://127.0.0.1:{port}/v1", "--requests", "2"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot reach" in err and err.count("\n") == 1
    with FakeServer("no-models") as srv:
        code = main(["measure", "--url", srv.url])
    assert code == 2 and "give --model" in capsys.readouterr().err
    assert main(["measure", "--url", "127.0.0.1:8080"]) == 2
    assert "http://" in capsys.readouterr().err


def test_errors_mid_run_are_counted_and_what_was_measured_is_kept():
    with FakeServer(fail_after=4) as srv:   # the probe and three requests succeed, then HTTP 500
        m = measure(srv.url, concurrencies=(1,), requests=6, output_tokens=4, timeout_s=5)
    s = m.levels[0].stats()
    assert s["completed"] == 3 and s["failed"] == 3 and s["errors"] == ["HTTP 500"]
    assert s["ttft_ms"] is not None


def test_a_stream_that_never_ends_is_cut_by_the_timeout_and_the_budget():
    with FakeServer("endless", gap_s=0.01) as srv:
        t = time.perf_counter()
        with pytest.raises(AdvisorError, match="no complete answer within 1 s"):
            measure(srv.url, requests=3, output_tokens=4, timeout_s=1, budget_s=5)
        assert time.perf_counter() - t < 10


def test_a_cancelled_run_keeps_what_it_measured():
    done = []
    with FakeServer(gap_s=0.002) as srv:
        m = measure(srv.url, concurrencies=(1, 2), requests=10, output_tokens=4, timeout_s=5,
                    progress=lambda d, t, w: done.append(d), cancel=lambda: len(done) >= 3)
    assert len(m.levels) == 1 and m.levels[0].stopped == "cancelled"
    assert m.levels[0].stats()["completed"] == 3
