"""The examples in examples/python run as a user would run them, against the test gateway."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import ssl
import subprocess
import sys

import httpx

from conftest import REPO
from toolgate import Toolgate

EXAMPLES = REPO / "examples" / "python"


def run_example(name: str, env: dict[str, str]) -> dict:
    done = subprocess.run([sys.executable, str(EXAMPLES / name)], env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_keyed_call_example(gateway, pro_key):
    out = run_example("keyed_call.py", {"TOOLGATE_API_KEY": pro_key, "TOOLGATE_BASE_URL": gateway.base_url})
    assert out["output"]["digest"] == hashlib.sha256(b"hello world").hexdigest()
    assert out["credits_charged"] == 1 and out["credits_remaining"] == 999


def test_paid_call_example(gateway):
    before = gateway.token_balance(gateway.wallet_address)
    env = {
        "TOOLGATE_BASE_URL": gateway.base_url,
        "WALLET_PRIVATE_KEY": gateway.wallet_private_key,
        "TOOLGATE_ALLOWED_ASSET": f"{gateway.network}:{gateway.token_address}",
    }
    out = run_example("paid_call.py", env)
    assert out["output"]["algorithm"] == "sha256" and out["paid_usdc_atomic"] == 2000
    assert out["transaction"].startswith("0x")
    assert gateway.token_balance(gateway.wallet_address) == before - 2000


def test_webhook_receiver_example(gateway, pro_key):
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    client = Toolgate(api_key=pro_key, base_url=gateway.base_url)
    webhook = client.webhooks.register(f"https://localhost:{port}/", ["tool.error"])
    env = {
        **os.environ,
        "TOOLGATE_WEBHOOK_SECRET": webhook.secret,
        "PORT": str(port),
        "TLS_CERT": os.path.join(gateway.tls_dir, "server.pem"),
        "TLS_KEY": os.path.join(gateway.tls_dir, "server.key"),
    }
    receiver = subprocess.Popen([sys.executable, str(EXAMPLES / "webhook_receiver.py")], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "listening on https://" in receiver.stderr.readline()
        [sent] = client.webhooks.test(webhook.id)
        event = json.loads(receiver.stdout.readline())
        assert event["id"] == sent.event_id and event["event"] == "webhook.test"
        forged = httpx.post(f"https://localhost:{port}/", content=b'{"id":"evt_forged"}', headers={"x-webhook-signature": "sha256=" + "0" * 64}, verify=ssl.create_default_context(cafile=gateway.ca_cert))
        assert forged.status_code == 401
    finally:
        receiver.terminate()
        receiver.wait(timeout=10)


def test_docs_python_snippets_run_as_copied(gateway):
    """The Python snippet under each tool whose /docs section shows the gateway's own answer runs as printed."""
    import html
    import re

    # The first /docs is built by running each example call through the workers: seconds, under load.
    page = httpx.get(f"{gateway.base_url}/docs", timeout=60).text
    tools = httpx.get(f"{gateway.base_url}/v1/tools").json()["data"]
    sections = re.findall(r'<section id="tool-([^"]+)" class="tool">([\s\S]*?)</section>', page)
    assert len(sections) == len(tools)
    runnable = [
        (name, html.unescape(re.search(r'<pre[^>]* class="snippet" data-lang="python"><code>([\s\S]*?)</code></pre>', body).group(1)))
        for name, body in sections
        if "this gateway's answer to the example" in body
    ]
    assert len(runnable) > 5
    _, key = gateway.new_account("free", 1000)
    # One interpreter runs them all: each snippet in its own namespace.
    script = "\n".join(
        f"exec(compile({code.replace('print(result)', f'print({name!r}, len(repr(result)))')!r}, {name!r}, 'exec'), {{}})" for name, code in runnable
    )
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, "TOOLGATE_API_KEY": key, "TOOLGATE_BASE_URL": gateway.base_url}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    printed = dict(line.rsplit(" ", 1) for line in done.stdout.strip().splitlines())
    assert sorted(printed) == sorted(name for name, _ in runnable)
    assert all(int(length) > 2 for length in printed.values())
