"""The test gateway for the whole session, and helpers the tests share.

``test/sdk/serve-gateway.ts`` (run with Node from the repository) starts a real gateway process,
Redis-backed, with a local anvil chain for x402 and a funded test wallet, and prints one JSON line
describing it; closing its stdin stops everything. The tests import ``toolgate`` from the
environment they run in: the installed wheel, never the source tree (checked below).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

import toolgate

REPO = Path(os.environ.get("TOOLGATE_REPO_ROOT") or Path(__file__).resolve().parents[3])


def pytest_sessionstart(session: pytest.Session) -> None:
    source = (REPO / "sdk" / "python" / "src").resolve()
    if Path(toolgate.__file__).resolve().is_relative_to(source) and not os.environ.get("TOOLGATE_TEST_SOURCE"):
        raise pytest.UsageError(f"toolgate was imported from the source tree ({toolgate.__file__}); install the wheel into the test environment")


@dataclass
class Gateway:
    base_url: str
    api_key: str
    account_id: str
    admin_key: str
    chain_rpc: str
    chain_id: int
    token_address: str
    pay_to: str
    wallet_private_key: str
    wallet_address: str
    tls_dir: str
    ca_cert: str

    @property
    def network(self) -> str:
        return f"eip155:{self.chain_id}"

    def admin(self, method: str, path: str, body: Any = None) -> httpx.Response:
        return httpx.request(method, f"{self.base_url}/api/v1/admin{path}", json=body, headers={"x-api-key": self.admin_key}, timeout=30)

    def new_account(self, tier: str = "pro", credits: int = 1000) -> tuple[str, str]:
        """A signed-up account moved to ``tier`` with ``credits`` in total: (account id, key)."""
        answer = httpx.post(f"{self.base_url}/api/v1/signup", json={"email": f"py-{uuid.uuid4().hex[:12]}@example.com"}, timeout=30)
        assert answer.status_code == 201, answer.text
        account_id, key = answer.json()["account"]["id"], answer.json()["api_key"]
        if tier != "free":
            assert self.admin("PUT", f"/accounts/{account_id}/tier", {"tier": tier}).is_success
        if credits > 25:
            assert self.admin("POST", f"/accounts/{account_id}/credits", {"amount": credits - 25, "reason": "python tests"}).is_success
        return account_id, key

    def balance(self, key: str) -> int:
        return int(httpx.get(f"{self.base_url}/api/v1/account", headers={"x-api-key": key}, timeout=30).json()["credits"])

    def token_balance(self, address: str) -> int:
        """The test token's balanceOf(address), read from the chain with eth_call."""
        data = "0x70a08231" + address.lower().removeprefix("0x").rjust(64, "0")
        answer = httpx.post(self.chain_rpc, json={"jsonrpc": "2.0", "id": 1, "method": "eth_call", "params": [{"to": self.token_address, "data": data}, "latest"]}, timeout=30)
        return int(answer.json()["result"], 16)


@pytest.fixture(scope="session")
def gateway() -> Iterator[Gateway]:
    # A runner that started serve-gateway.ts itself (while it installed this package) hands its line over.
    if os.environ.get("TOOLGATE_TEST_GATEWAY"):
        yield Gateway(**json.loads(os.environ["TOOLGATE_TEST_GATEWAY"]))
        return
    command = ["node", "--import", "tsx", "test/sdk/serve-gateway.ts"]
    child = subprocess.Popen(command, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr, text=True)
    assert child.stdout is not None and child.stdin is not None
    line = child.stdout.readline()
    if not line:
        child.wait(timeout=30)
        raise RuntimeError(f"serve-gateway.ts exited ({child.returncode}) before printing its address")
    yield Gateway(**json.loads(line))
    child.stdin.close()  # serve-gateway stops the gateway and the chain when its stdin closes
    try:
        child.wait(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()


@pytest.fixture
def pro_key(gateway: Gateway) -> str:
    return gateway.new_account("pro", 1000)[1]


@pytest.fixture
def wallet(gateway: Gateway) -> Any:
    from eth_account import Account

    return Account.from_key(gateway.wallet_private_key)


@pytest.fixture
def spending(gateway: Gateway) -> toolgate.SpendingLimits:
    # The local chain's token is not the canonical USDC the x402 client knows: allow it by name.
    return toolgate.SpendingLimits(allowed_assets=[{"network": gateway.network, "asset": gateway.token_address}])


# A real HTTPS webhook receiver ---------------------------------------------------------------


@dataclass
class Delivery:
    path: str
    headers: dict[str, str]
    body: bytes


class Receiver:
    """An HTTPS server (the test CA's localhost certificate) recording every POST it gets."""

    def __init__(self, tls_dir: str) -> None:
        self.deliveries: list[Delivery] = []
        received = self.deliveries

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("content-length") or 0)
                received.append(Delivery(self.path, {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length)))
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(os.path.join(tls_dir, "server.pem"), os.path.join(tls_dir, "server.key"))
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"https://localhost:{self.port}{path}"

    def wait_for(self, path: str, predicate: Any = lambda d: True, timeout: float = 20) -> Delivery:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for delivery in self.deliveries:
                if delivery.path == path and predicate(delivery):
                    return delivery
            time.sleep(0.05)
        raise AssertionError(f"no delivery to {path} within {timeout} s")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver(gateway: Gateway) -> Iterator[Receiver]:
    r = Receiver(gateway.tls_dir)
    yield r
    r.close()


# A TCP proxy that loses answers ----------------------------------------------------------------


REQUEST_LINE = re.compile(rb"^[A-Z]+ /")


class LoopbackServer:
    """A bare TCP server on 127.0.0.1 handing each connection to ``_serve`` on a thread of its
    own: the tests' servers that misbehave as no HTTP server library would (dropping, resetting,
    trickling, never answering). ``_accepted`` sees each connection first."""

    def __init__(self, port: int = 0) -> None:
        self.listener = socket.create_server(("127.0.0.1", port))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self._accepted(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _accepted(self, client: socket.socket) -> None:
        pass

    def _serve(self, client: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.listener.close()


class DroppingProxy(LoopbackServer):
    """Forwards connections to the gateway, but loses the answers to the first ``drop`` requests
    (those containing ``match``, when set): it lets the request through, waits for the gateway's
    answer, then resets the client's connection instead of passing the answer on. The call ran
    (and was charged); the client saw the connection drop. ``refuse()`` and ``reopen()`` stop and
    start it on the same port: meanwhile a connection is refused, before anything is sent."""

    def __init__(self, upstream: str, drop: int = 1, match: bytes | None = None) -> None:
        host, port = upstream.removeprefix("http://").split(":")
        self.upstream = (host, int(port))
        self.to_drop = drop
        self.match = match
        self.connections = 0
        self.requests = 0
        self.dropped = 0
        self.refused = False
        self._clients: set[socket.socket] = set()
        self._lock = threading.Lock()
        super().__init__()

    def _accepted(self, client: socket.socket) -> None:
        with self._lock:
            self.connections += 1
            self._clients.add(client)

    def _should_drop(self, request: bytes) -> bool:
        with self._lock:
            if self.dropped >= self.to_drop or (self.match is not None and self.match not in request.lower()):
                return False
            self.dropped += 1
            return True

    def _serve(self, client: socket.socket) -> None:
        upstream = socket.create_connection(self.upstream)
        last_request = [b""]

        def close_both() -> None:
            for s in (client, upstream):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        def requests() -> None:
            try:
                while chunk := client.recv(65536):
                    # Headers and body may come in separate chunks: a request line starts a new request.
                    if REQUEST_LINE.match(chunk):
                        last_request[0] = chunk
                        with self._lock:
                            self.requests += 1
                    else:
                        last_request[0] += chunk
                    upstream.sendall(chunk)
            except OSError:
                pass
            close_both()

        threading.Thread(target=requests, daemon=True).start()
        try:
            while chunk := upstream.recv(65536):
                if self._should_drop(last_request[0]):
                    # A reset instead of the answer (shutdown also wakes the thread reading the client).
                    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    close_both()
                    client.close()
                    upstream.close()
                    return
                client.sendall(chunk)
        except OSError:
            pass
        close_both()

    def refuse(self) -> None:
        """Stops listening (and ends the open connections): connecting is refused until ``reopen``."""
        self.refused = True
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
        self.listener.close()
        with self._lock:
            open_connections = list(self._clients)
        for client in open_connections:
            try:
                client.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        # A moment for the client's idle keep-alive connection to read as closed, so its next
        # attempt opens a new connection (refused) rather than writing to the old one.
        time.sleep(0.1)

    def reopen(self) -> None:
        """Listens on the same port again."""
        self.refused = False
        LoopbackServer.__init__(self, self.port)


@pytest.fixture
def dropping_proxy(gateway: Gateway) -> Iterator[DroppingProxy]:
    proxy = DroppingProxy(gateway.base_url)
    yield proxy
    proxy.close()


# The shipped load balancer in front of the proxy ------------------------------------------------


@dataclass
class LoadBalancer:
    url: str


@pytest.fixture
def load_balancer(dropping_proxy: DroppingProxy, tmp_path: Path) -> Iterator[LoadBalancer]:
    """deploy/haproxy.cfg run by a real HAProxy with the dropping proxy as its one replica: an
    answer the proxy loses is a replica failing mid-request, which HAProxy answers 502
    ``replica_failed``. Skipped where HAProxy is not installed (CI installs it)."""
    if shutil.which("haproxy") is None:
        pytest.skip("HAProxy is not installed")
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    shipped = (REPO / "deploy/haproxy.cfg").read_text()
    config = re.sub(r"(?m)^(\s*bind )\S+$", rf"\g<1>127.0.0.1:{port}", shipped)
    config = re.sub(r"(?m)^(\s*maxconn )\d+$", r"\g<1>1000", config)
    config = re.sub(r"(?m)^\s*server gateway2 .*\n", "", config)
    config = re.sub(r"(?m)^(\s*server gateway1 )\S+", rf"\g<1>127.0.0.1:{dropping_proxy.port}", config)
    config = config.replace("127.0.0.11:53", "127.0.0.1:9")
    (tmp_path / "haproxy.cfg").write_text(config)
    dropping_proxy.match = b"/v1/tools/"  # its health checks (GET /readyz) go through
    child = subprocess.Popen(["haproxy", "-db", "-f", str(tmp_path / "haproxy.cfg")], stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 10
        while not _ready(url):
            if time.monotonic() > deadline:
                raise RuntimeError("HAProxy did not start serving the gateway")
            time.sleep(0.05)
        yield LoadBalancer(url)
    finally:
        child.terminate()
        child.wait(5)


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz").status_code == 200
    except httpx.TransportError:
        return False
