"""A real HTTP server on loopback that answers as a script says and records what it received, for
the library to be run against as a user runs it (no mock of our own code). The TypeScript tests
have the same (test/sdk/typescript/scripted-server.ts)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, list[str]]
    """Every value of each header (names lower-cased), repeats kept."""
    body: bytes

    def header(self, name: str) -> str | None:
        values = self.headers.get(name.lower())
        return values[0] if values else None

    def query(self, name: str) -> str | None:
        values = parse_qs(urlsplit(self.path).query).get(name)
        return values[0] if values else None


Answer = tuple[int, dict[str, str], Any]
"""Status, headers and body (a str or bytes as is, anything else as JSON); or "reset" to close the
connection once the request has been read, with no answer."""

CALLED: Answer = (200, {"x-credits-charged": "1", "x-credits-remaining": "99", "x-request-id": "req_test"}, {"digest": "abc"})


class ScriptedServer:
    def __init__(self, script: Callable[[Received, int], Answer | str]) -> None:
        self.received: list[Received] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                headers: dict[str, list[str]] = {}
                for name, value in self.headers.items():
                    headers.setdefault(name.lower(), []).append(value)
                request = Received(self.command, self.path, headers, body)
                answer = script(request, len(outer.received))
                outer.received.append(request)
                if answer == "reset":
                    self.close_connection = True
                    self.connection.close()
                    return
                status, extra, content = answer  # type: ignore[misc]
                data = content if isinstance(content, bytes) else content.encode() if isinstance(content, str) else json.dumps(content).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer  # noqa: N815 - http.server's naming

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
