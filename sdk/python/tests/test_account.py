"""Account, keys and usage, mirroring /api/v1."""

from __future__ import annotations

import asyncio
import re
import time

import httpx
import pytest

from toolgate import AsyncToolgate, Toolgate, ToolgateError


def test_reads_the_account(gateway, pro_key):
    account = Toolgate(api_key=pro_key, base_url=gateway.base_url).account.get()
    assert account.tier == "pro" and account.credits == 1000
    assert "webhooks" in account.features and account.rate_limit_per_minute == 300


def test_rotating_a_key_gives_a_new_key_and_stops_the_old_one(gateway, pro_key):
    client = Toolgate(api_key=pro_key, base_url=gateway.base_url)
    [old] = client.keys.list()
    assert old.status == "active" and pro_key.startswith(old.prefix) and pro_key.endswith(old.last4)
    assert old.last_used_at is not None  # this very request used it
    rotated = client.keys.rotate(old.id)
    assert rotated.key.startswith("tg_live_") and rotated.key != pro_key
    assert rotated.replaced is not None and rotated.replaced.id == old.id and rotated.replaced.status == "revoked"
    with pytest.raises(ToolgateError) as caught:
        client.account.get()
    assert (caught.value.status, caught.value.code) == (401, "api_key_revoked")
    renewed = Toolgate(api_key=rotated.key, base_url=gateway.base_url)
    assert renewed.tools.call("hash", {"text": "after rotation"})["algorithm"] == "sha256"
    assert {k.id: k.status for k in renewed.keys.list()} == {old.id: "revoked", rotated.info.id: "active"}


def test_a_rotation_with_grace_keeps_the_old_key_working_for_a_while(gateway, pro_key):
    client = Toolgate(api_key=pro_key, base_url=gateway.base_url)
    [old] = client.keys.list()
    rotated = client.keys.rotate(old.id, grace_seconds=600)
    assert rotated.replaced.status == "expiring"
    assert client.account.get().credits == 1000


async def test_creates_and_revokes_keys_with_the_async_client(gateway, pro_key):
    async with AsyncToolgate(api_key=pro_key, base_url=gateway.base_url) as client:
        created = await client.keys.create("ci")
        assert created.info.name == "ci" and created.key.endswith(created.info.last4)
        # Its fields at the top too, as TypeScript's result has them.
        assert (created.id, created.name, created.last4, created.status) == (created.info.id, "ci", created.info.last4, "active")
        revoked = await client.keys.revoke(created.id)
        assert revoked.status == "revoked"
        statuses = {k.id: k.status for k in await client.keys.list()}
    assert statuses[created.info.id] == "revoked"
    with pytest.raises(ToolgateError) as caught:
        Toolgate(api_key=created.key, base_url=gateway.base_url).account.get()
    assert caught.value.code == "api_key_revoked"


def test_a_key_with_controls_calls_only_its_tools_within_its_budget(gateway, pro_key):
    client = Toolgate(api_key=pro_key, base_url=gateway.base_url)
    created = client.keys.create("bounded", allowed_tools=["hash"], budget={"credits": 1, "period": "day"})
    assert created.info.allowed_tools == ["hash"] and created.info.budget["credits"] == 1
    bounded = Toolgate(api_key=created.key, base_url=gateway.base_url)
    bounded.tools.call("hash", {"text": "once"})
    with pytest.raises(ToolgateError) as caught:
        bounded.tools.call("hash", {"text": "twice"})
    assert (caught.value.status, caught.value.code) == (402, "key_budget_exceeded")
    with pytest.raises(ToolgateError) as caught:
        bounded.tools.call("qr-code", {"text": "other"})
    assert (caught.value.status, caught.value.code) == (403, "tool_not_allowed")
    cleared = client.keys.update(created.info.id, budget=None, allowed_tools=None)
    assert cleared.budget is None and cleared.allowed_tools is None


def test_the_last_active_key_is_revoked_only_with_force(gateway, pro_key):
    client = Toolgate(api_key=pro_key, base_url=gateway.base_url)
    [only] = client.keys.list()
    with pytest.raises(ToolgateError) as caught:
        client.keys.revoke(only.id)
    assert (caught.value.status, caught.value.code) == (409, "last_active_key")
    assert client.keys.revoke(only.id, force=True).status == "revoked"


def test_usage_lists_the_ledger_page_by_page(gateway, pro_key):
    client = Toolgate(api_key=pro_key, base_url=gateway.base_url)
    for i in range(3):
        client.tools.call("hash", {"text": str(i)})
    first = client.usage.list(limit=2)
    assert [e.kind for e in first.data] == ["debit", "debit"] and first.data[0].tool == "hash"
    assert first.data[0].amount == -1 and first.next_cursor
    rest = client.usage.list(limit=100, cursor=first.next_cursor)
    kinds = [e.kind for e in rest.data]
    assert kinds[0] == "debit" and "grant" in kinds


def test_usage_filters_by_tool_key_kind_and_time(gateway, pro_key):
    client = Toolgate(api_key=pro_key, base_url=gateway.base_url)
    [first_key] = client.keys.list()
    other = client.keys.create("other")
    client.tools.call("hash", {"text": "a"})
    client.tools.call("qr-code", {"text": "b"})
    Toolgate(api_key=other.key, base_url=gateway.base_url).tools.call("hash", {"text": "c"})
    hashes = client.usage.list(tool="hash").data
    assert [(e.tool, e.kind) for e in hashes] == [("hash", "debit"), ("hash", "debit")]
    assert [e.key_id for e in client.usage.list(tool="hash", key=other.info.id).data] == [other.info.id]
    assert {e.tool for e in client.usage.list(key=first_key.id, kind="debit").data} == {"hash", "qr-code"}
    assert {e.kind for e in client.usage.list(kind="grant").data} == {"grant"}
    assert client.usage.list(from_="2999-01-01T00:00:00Z").data == []
    assert client.usage.list(to="2000-01-01T00:00:00Z").data == []
    assert len(client.usage.list(tool="hash", from_=hashes[-1].at).data) == 2


def test_analytics_count_the_calls_per_tool_and_refuse_a_reversed_range(gateway, pro_key):
    client = Toolgate(api_key=pro_key, base_url=gateway.base_url)
    for i in range(3):
        client.tools.call("hash", {"text": f"a{i}"})
    deadline = time.monotonic() + 20
    answer = client.usage.analytics(granularity="day", group_by="tool")
    # The books have the calls within an export interval: a call's timing and its debit are exported
    # apart, so it may be counted before its credits are.
    while (answer.totals.get("calls"), answer.totals.get("credits")) != (3, 3) and time.monotonic() < deadline:
        time.sleep(0.2)
        answer = client.usage.analytics(granularity="day", group_by="tool")
    [row] = answer.data
    assert (row.group, row.calls, row.credits, row.errors) == ("hash", 3, 3, 0)
    assert (answer.granularity, answer.group_by) == ("day", "tool") and answer.from_ < answer.to
    with pytest.raises(ToolgateError) as caught:
        client.usage.analytics(from_="2026-01-02T00:00:00Z", to="2026-01-01T00:00:00Z")
    assert (caught.value.status, caught.value.code) == (400, "invalid_range")


def test_events_filter_by_type_and_page_with_a_cursor(gateway):
    _, key = gateway.new_account("pro", 25)
    client = Toolgate(api_key=key, base_url=gateway.base_url)
    for i in range(25):  # sign-up's 25 credits: credits.low below 5, then credits.depleted at 0
        client.tools.call("hash", {"text": f"e{i}"})
    deadline = time.monotonic() + 20
    while len(client.account.events()) < 3 and time.monotonic() < deadline:
        time.sleep(0.2)  # the webhook relay logs an event shortly after the call that caused it
    [depleted] = client.account.events(type="credits.depleted")
    assert depleted.event == "credits.depleted" and depleted.data["credits_remaining"] == 0
    first = client.account.events_page(limit=1)
    assert [e.event for e in first.data] == ["credits.depleted"] and first.next_cursor
    rest = client.account.events_page(limit=10, cursor=first.next_cursor)
    assert [e.event for e in rest.data] == ["credits.low", "agent.registered"] and rest.next_cursor is None
    assert client.account.events(from_="2999-01-01T00:00:00Z") == []


def test_sets_and_removes_the_spend_alert_as_the_typescript_library_does(gateway, pro_key):
    client = Toolgate(api_key=pro_key, base_url=gateway.base_url)
    assert client.account.set_spend_alert(300).spend_alert == {"credits": 300}
    assert client.account.get().spend_alert == {"credits": 300}
    assert client.account.remove_spend_alert().spend_alert is None
    with pytest.raises(ToolgateError) as caught:
        client.account.set_spend_alert(0)
    assert (caught.value.status, caught.value.param) == (422, "credits")


async def test_the_async_client_sets_the_spend_alert_too(gateway, pro_key):
    async with AsyncToolgate(api_key=pro_key, base_url=gateway.base_url) as client:
        assert (await client.account.set_spend_alert(50)).spend_alert == {"credits": 50}
        assert (await client.account.remove_spend_alert()).spend_alert is None


def recording(asked: list[str]) -> httpx.Client:
    """An httpx client that keeps each request's path and query string in ``asked``."""
    return httpx.Client(event_hooks={"request": [lambda r: asked.append(r.url.raw_path.decode())]})


def test_iter_entries_walks_the_ledger_one_page_at_a_time_with_the_same_filters(gateway, pro_key):
    asked: list[str] = []
    client = Toolgate(api_key=pro_key, base_url=gateway.base_url, http_client=recording(asked))
    for i in range(5):
        client.tools.call("hash", {"text": f"page {i}"})
    client.tools.call("qr-code", {"text": "not a hash"})
    asked.clear()
    entries = client.usage.iter_entries(tool="hash", limit=2)
    assert asked == []  # nothing is asked for before the first entry is wanted
    assert [(e.tool, e.kind) for e in entries] == [("hash", "debit")] * 5
    first, *later = asked
    assert first == "/api/v1/usage?limit=2&tool=hash" and len(later) == 2
    assert all(re.fullmatch(r"/api/v1/usage\?limit=2&cursor=[^&]+&tool=hash", path) for path in later), later
    asked.clear()
    for seen, _ in enumerate(client.usage.iter_entries(limit=2), start=1):
        if seen == 3:
            break
    assert len(asked) == 2  # the third entry is on the second page: no third page was asked for


def test_iter_events_walks_every_event_and_the_async_client_too(gateway):
    _, key = gateway.new_account("pro", 25)
    asked: list[str] = []
    client = Toolgate(api_key=key, base_url=gateway.base_url, http_client=recording(asked))
    for i in range(25):  # sign-up's 25 credits: credits.low below 5, then credits.depleted at 0
        client.tools.call("hash", {"text": f"i{i}"})
    deadline = time.monotonic() + 20
    while len(client.account.events()) < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    asked.clear()
    assert [e.event for e in client.account.iter_events(limit=1)] == ["credits.depleted", "credits.low", "agent.registered"]
    assert len(asked) >= 3 and asked[0] == "/api/v1/events?limit=1"
    asked.clear()
    assert [e.event for e in client.account.iter_events(type="credits.low", limit=1)] == ["credits.low"]
    assert asked and all(p.startswith("/api/v1/events?limit=1") and "type=credits.low" in p for p in asked), asked

    async def walk() -> tuple[list[str], list[str]]:
        async with AsyncToolgate(api_key=key, base_url=gateway.base_url) as aclient:
            events = [e.event async for e in aclient.account.iter_events(limit=1)]
            hashes = [e.tool async for e in aclient.usage.iter_entries(kind="debit", limit=10)]
        return events, hashes

    events, hashes = asyncio.run(walk())
    assert events == ["credits.depleted", "credits.low", "agent.registered"]
    assert hashes == ["hash"] * 25
