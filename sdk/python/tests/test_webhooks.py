"""Webhooks: managed through the client, and verify_webhook on real deliveries from the gateway."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from datetime import datetime

import pytest

from toolgate import AsyncToolgate, Toolgate, ToolgateError, verify_webhook


@pytest.fixture
def delivered(gateway, pro_key, receiver):
    """A webhook.test event as the gateway delivered it to a real HTTPS receiver, and the secret."""
    client = Toolgate(api_key=pro_key, base_url=gateway.base_url)
    webhook = client.webhooks.register(receiver.url("/hook"), ["tool.error", "credits.low"])
    assert webhook.secret and webhook.secret.startswith("whsec_")
    [sent] = client.webhooks.test(webhook.id)
    delivery = receiver.wait_for("/hook", lambda d: d.headers.get("x-webhook-id") == sent.event_id)
    return client, webhook, sent, delivery


def test_accepts_a_real_delivery(delivered):
    _, webhook, sent, delivery = delivered
    event = verify_webhook(delivery.body, delivery.headers, webhook.secret)
    assert event.id == sent.event_id and event.event == "webhook.test"
    assert event.data["webhook_id"] == webhook.id


def test_accepts_the_specified_signature_alone(delivered):
    _, webhook, _, delivery = delivered
    headers = {k: v for k, v in delivery.headers.items() if not k.startswith("webhook-")}
    assert verify_webhook(delivery.body, headers, webhook.secret).event == "webhook.test"


def test_refuses_a_tampered_body(delivered):
    _, webhook, _, delivery = delivered
    body = json.loads(delivery.body)
    body["data"]["message"] = "tampered"
    with pytest.raises(ToolgateError) as caught:
        verify_webhook(json.dumps(body).encode(), delivery.headers, webhook.secret)
    assert caught.value.code == "webhook_signature_invalid"


def test_refuses_a_wrong_secret(delivered):
    _, _, _, delivery = delivered
    with pytest.raises(ToolgateError) as caught:
        verify_webhook(delivery.body, delivery.headers, "whsec_" + "A" * 44)
    assert caught.value.code == "webhook_signature_invalid"


def test_refuses_a_stale_timestamp(delivered):
    _, webhook, _, delivery = delivered
    later = time.time() + 3600
    with pytest.raises(ToolgateError) as caught:
        verify_webhook(delivery.body, delivery.headers, webhook.secret, tolerance_seconds=300, now=later)
    assert caught.value.code == "webhook_timestamp_invalid"
    spec_only = {k: v for k, v in delivery.headers.items() if not k.startswith("webhook-")}
    with pytest.raises(ToolgateError) as caught:
        verify_webhook(delivery.body, spec_only, webhook.secret, now=later)
    assert caught.value.code == "webhook_timestamp_invalid"
    assert verify_webhook(delivery.body, delivery.headers, webhook.secret, tolerance_seconds=7200, now=later)


def test_says_how_long_ago_or_how_far_ahead_a_refused_delivery_was_signed(delivered):
    _, webhook, _, delivery = delivered
    signed_at = int(delivery.headers["webhook-timestamp"])
    for now, message in [
        (signed_at + 3604, "The webhook was signed 3604 s ago, beyond the 300 s tolerance (a replay or a clock far off)."),
        (signed_at - 3596, "The webhook was signed 3596 s in the future, beyond the 300 s tolerance (a clock far off)."),
    ]:
        with pytest.raises(ToolgateError) as caught:
            verify_webhook(delivery.body, delivery.headers, webhook.secret, now=now)
        assert (caught.value.code, caught.value.message) == ("webhook_timestamp_invalid", message)


def test_accepts_a_resent_event_older_than_the_tolerance_and_refuses_it_tampered(delivered, receiver):
    client, webhook, sent, delivery = delivered
    # A resend keeps the event's body (and its original timestamp); only webhook-timestamp is new.
    sent_at = datetime.fromisoformat(json.loads(delivery.body)["timestamp"].replace("Z", "+00:00")).timestamp()
    time.sleep(max(0.0, sent_at + 5 - time.time()))
    client.webhooks.resend(webhook.id, sent.event_id)
    resent = receiver.wait_for("/hook", lambda d: d is not delivery and d.headers.get("x-webhook-id") == sent.event_id)
    assert resent.body == delivery.body
    assert verify_webhook(resent.body, resent.headers, webhook.secret, tolerance_seconds=3).id == sent.event_id
    tampered = resent.body.replace(b'"webhook.test"', b'"payment.received"')
    with pytest.raises(ToolgateError) as caught:
        verify_webhook(tampered, resent.headers, webhook.secret, tolerance_seconds=3)
    assert caught.value.code == "webhook_signature_invalid"
    # Without the Standard Webhooks headers only the body's own (old) timestamp is signed.
    spec_only = {"x-webhook-signature": resent.headers["x-webhook-signature"]}
    with pytest.raises(ToolgateError) as caught:
        verify_webhook(resent.body, spec_only, webhook.secret, tolerance_seconds=3)
    assert caught.value.code == "webhook_timestamp_invalid"


def test_lists_deliveries_rotates_the_secret_and_deletes(delivered, receiver):
    client, webhook, sent, _ = delivered
    deadline = time.monotonic() + 10
    while not (log := client.webhooks.deliveries(webhook.id)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert log[0].event_id == sent.event_id and log[0].outcome == "delivered" and log[0].status == 200
    rotated = client.webhooks.rotate_secret(webhook.id, overlap_seconds=0)
    assert rotated.secret and rotated.secret != webhook.secret
    resent = client.webhooks.resend(webhook.id, sent.event_id)
    again = receiver.wait_for("/hook", lambda d: d.headers.get("x-webhook-id") == resent.event_id and verify_ok(d, rotated.secret))
    assert verify_webhook(again.body, again.headers, rotated.secret).id == sent.event_id
    assert client.webhooks.delete(webhook.id) is True
    assert [w.id for w in client.webhooks.list()] == []


def verify_ok(delivery, secret):
    try:
        verify_webhook(delivery.body, delivery.headers, secret)
        return True
    except ToolgateError:
        return False


async def test_async_client_manages_webhooks(gateway, pro_key, receiver):
    async with AsyncToolgate(api_key=pro_key, base_url=gateway.base_url) as client:
        webhook = await client.webhooks.register(receiver.url("/async"), ["tool.error"])
        assert [w.id for w in await client.webhooks.list()] == [webhook.id]
        [sent] = await client.webhooks.test()
    delivery = receiver.wait_for("/async")
    assert verify_webhook(delivery.body, delivery.headers, webhook.secret).id == sent.event_id


def test_a_free_account_is_told_webhooks_need_pro(gateway):
    _, key = gateway.new_account("free", 25)
    with pytest.raises(ToolgateError) as caught:
        Toolgate(api_key=key, base_url=gateway.base_url).webhooks.list()
    assert (caught.value.status, caught.value.code) == (403, "feature_not_in_tier")


def _signed(body: bytes, secret: str, upper: bool) -> dict[str, str]:
    digest = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    return {"X-Webhook-Signature": "sha256=" + (digest.upper() if upper else digest)}


def test_accepts_the_specified_signature_in_either_case_of_hex():
    """The hex is compared as the bytes it spells, as TypeScript's verifyWebhook does."""
    secret = "whsec_" + "a" * 32
    event = {"id": "evt_1", "object": "event", "event": "webhook.test", "timestamp": datetime.now().astimezone().isoformat(), "data": {}}
    body = json.dumps(event).encode()
    for upper in (False, True):
        assert verify_webhook(body, _signed(body, secret, upper), secret).id == "evt_1"
    with pytest.raises(ToolgateError) as caught:
        verify_webhook(body + b" ", _signed(body, secret, True), secret)
    assert caught.value.code == "webhook_signature_invalid"
    for bad in ("sha256=zz", "sha256=" + "a" * 63, "sha1=" + "a" * 64, "sha256=ab cd"):
        with pytest.raises(ToolgateError):
            verify_webhook(body, {"X-Webhook-Signature": bad}, secret)


# The rules below are TypeScript's verifyWebhook's too (test/sdk/typescript/verify-webhook-rules.test.ts),
# on deliveries signed here as the gateway signs them (src/webhooks/signing.ts).
_SECRET = "whsec_" + base64.b64encode(b"twenty-four random bytes").decode()
_NOW = 1_795_961_271
_EVENT = {"id": "evt_1", "event": "webhook.test", "timestamp": "2026-11-29T14:07:51.000Z", "data": {}}
_BODY = json.dumps(_EVENT).encode()


def _standard(body: bytes, secret: str = _SECRET, stamp: str = str(_NOW), key: bytes | None = None) -> dict[str, str]:
    key = base64.b64decode(secret.removeprefix("whsec_")) if key is None else key
    signature = base64.b64encode(hmac.new(key, f"evt_1.{stamp}.".encode() + body, hashlib.sha256).digest()).decode()
    return {"webhook-id": "evt_1", "webhook-timestamp": stamp, "webhook-signature": "v1," + signature}


def _spec(body: bytes, secret: str = _SECRET) -> dict[str, str]:
    return {"x-webhook-signature": "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()}


def _outcome(body: bytes, headers: dict[str, str], secret: str = _SECRET) -> str:
    try:
        return "ok " + verify_webhook(body, headers, secret, now=_NOW).id
    except ToolgateError as error:
        return error.code + (f" ({error.param})" if error.param else "")


def test_refuses_an_empty_secret_anybody_could_sign_with():
    # Deliveries forged by anyone: an HMAC keyed by nothing needs no secret to make.
    for secret in ("", "whsec_", " \n"):
        assert _outcome(_BODY, _spec(_BODY, ""), secret) == "invalid_argument (secret)"
        assert _outcome(_BODY, _standard(_BODY, key=b""), secret) == "invalid_argument (secret)"
    with pytest.raises(ToolgateError) as caught:
        verify_webhook(_BODY, _standard(_BODY, key=b""), "whsec_", now=_NOW)
    assert caught.value.message.startswith('secret is "whsec_" with nothing after it')


def test_refuses_a_signed_webhook_timestamp_that_is_not_unix_seconds():
    for stamp in ("abc", "0x6b0c31b7", "1795961271.0", "+1795961271", "1e9", ""):
        assert _outcome(_BODY, _standard(_BODY, stamp=stamp)) == "webhook_timestamp_invalid", stamp
    assert _outcome(_BODY, _standard(_BODY)) == "ok evt_1"


def test_refuses_a_body_timestamp_that_is_not_a_string_under_the_specified_signature():
    body = json.dumps({**_EVENT, "timestamp": _NOW * 1000}).encode()
    assert _outcome(body, _spec(body)) == "webhook_timestamp_invalid"


def test_reads_header_values_without_surrounding_whitespace():
    assert _outcome(_BODY, {"X-Webhook-Signature": " " + _spec(_BODY)["x-webhook-signature"] + " "}) == "ok evt_1"
    assert _outcome(_BODY, {k: v + "\t" for k, v in _standard(_BODY).items()}) == "ok evt_1"


def test_uses_a_secret_with_a_trailing_newline_as_the_secret():
    assert _outcome(_BODY, _standard(_BODY), _SECRET + "\n") == "ok evt_1"
    assert _outcome(_BODY, _spec(_BODY), _SECRET + "\n") == "ok evt_1"


def test_takes_a_standard_signature_only_as_padded_base64():
    headers = _standard(_BODY)
    headers["webhook-signature"] = headers["webhook-signature"].rstrip("=")
    assert _outcome(_BODY, headers) == "webhook_signature_invalid"


def test_refuses_a_signed_body_that_is_not_an_event():
    for body in (b'{"hello":1}', b"[1]", b"null", json.dumps({**_EVENT, "data": []}).encode()):
        assert _outcome(body, {**_standard(body), **_spec(body)}) == "webhook_signature_invalid", body
