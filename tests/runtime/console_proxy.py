"""A forwarding HTTP proxy in front of a live console, for fault tests: it can go down (every
connection cut, new ones refused) and it can tamper with the bundles it forwards."""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KEPT = (
    "Content-Type",
    "ETag",
    "Stalwart-Bundle-Stamp",
    "Stalwart-Bundle-Fresh",
    "Cache-Control",
    "Retry-After",
)


class ConsoleProxy:
    """`ConsoleProxy(upstream).url` forwards to `upstream`; `down()` stops it, `up()` starts it
    again on the same address, `tamper` edits."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.tamper: Any = None  # a function that edits a bundle (a dict) before it is forwarded
        self.rewrite: Any = None  # a function that edits a request's path before it is forwarded
        self.bundles_served = 0
        self.bundle_requests = 0  # every GET of a bundle, whatever was answered
        self.requests: list[tuple[str, str]] = []  # (method, path) of every request forwarded
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def setup(self) -> None:
                super().setup()
                with proxy._lock:
                    proxy._open.add(self.connection)

            def finish(self) -> None:
                with proxy._lock:
                    proxy._open.discard(self.connection)
                try:
                    super().finish()
                except OSError:
                    pass

            def _forward(self) -> None:
                with proxy._lock:
                    proxy.requests.append((self.command, self.path))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k
                    in (
                        "Authorization",
                        "Content-Type",
                        "If-None-Match",
                        "Stalwart-Bundle-Nonce",
                        "User-Agent",
                    )
                }
                path = proxy.rewrite(self.path) if proxy.rewrite is not None else self.path
                request = urllib.request.Request(
                    proxy.upstream + path, data=body, method=self.command, headers=headers
                )
                try:
                    with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310
                        status, got, data = answer.status, answer.headers, answer.read()
                except urllib.error.HTTPError as exc:
                    status, got, data = exc.code, exc.headers, exc.read()
                if self.path.startswith("/v1/bundle?") or self.path == "/v1/bundle":
                    proxy.bundle_requests += 1
                    if status == 200:
                        proxy.bundles_served += 1
                        if proxy.tamper is not None:
                            data = json.dumps(proxy.tamper(json.loads(data))).encode()
                try:
                    self.send_response(status)
                    for name in KEPT:
                        if got.get(name):
                            self.send_header(name, got[name])
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the proxy went down meanwhile

            do_GET = do_POST = do_PUT = _forward  # noqa: N815

        self._handler = Handler
        self._start(0)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def _start(self, port: int) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", port), self._handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def up(self) -> None:
        """The console is back, on the same address."""
        self._start(int(self.url.rsplit(":", 1)[1]))

    def down(self) -> None:
        """The console goes away: no new connection is taken and every open one is cut."""
        self.server.shutdown()
        self.server.server_close()
        with self._lock:
            cut, self._open = list(self._open), set()
        for sock in cut:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
