"""Receive Toolgate webhooks: verify the signature over the raw body, check freshness, drop
duplicates, then handle the event. Standard library only, besides toolgate.

    pip install ./sdk/python   (from the repository root; not on PyPI yet)
    TOOLGATE_WEBHOOK_SECRET=whsec_... PORT=8000 python webhook_receiver.py

Deliveries go to HTTPS URLs: put this behind your TLS proxy, or give it a certificate with
TLS_CERT and TLS_KEY (PEM files).
"""

import json
import os
import ssl
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from toolgate import ToolgateError, verify_webhook

SECRET = os.environ["TOOLGATE_WEBHOOK_SECRET"]
seen: set[str] = set()  # use your database in production: deliveries are at least once


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            event = verify_webhook(raw, self.headers, SECRET, tolerance_seconds=600)
        except ToolgateError as error:
            self.answer(401 if error.code == "webhook_signature_invalid" else 400)
            return
        if event.id not in seen:
            seen.add(event.id)
            # ... handle event.event / event.data here ...
            print(json.dumps({"id": event.id, "event": event.event, "data": event.data}), flush=True)
        self.answer(200)

    def answer(self, status: int) -> None:
        self.send_response(status)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


server = ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "8000"))), Handler)
scheme = "http"
if os.environ.get("TLS_CERT"):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.environ["TLS_CERT"], os.environ["TLS_KEY"])
    server.socket = context.wrap_socket(server.socket, server_side=True)
    scheme = "https"
print(f"listening on {scheme}://localhost:{server.server_address[1]}", file=sys.stderr, flush=True)
server.serve_forever()
