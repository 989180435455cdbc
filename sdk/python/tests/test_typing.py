"""The installed package is typed (py.typed): mypy --strict checks a user's code against it."""

from __future__ import annotations

import subprocess
import sys

USER_CODE = '''
from toolgate import AsyncToolgate, Toolgate


def cost(client: Toolgate) -> int:
    return client.tools.get("hash").price.usdc_atomic


async def digest(client: AsyncToolgate) -> str:
    out = await client.tools.call("hash", {"text": "x"})
    return str(out["digest"])


def wrong(client: Toolgate) -> str:
    return client.account.get().credits


def walk(client: Toolgate) -> list[str]:
    events = [e.event for e in client.account.iter_events(type="credits.low")]
    return events + [e.kind for e in client.usage.iter_entries(tool="hash")] + [c.name for c in client.tools.categories()]


async def awalk(client: AsyncToolgate) -> list[str]:
    found = await client.tools.list(q="hash", category="security")
    return [e.event async for e in client.account.iter_events()] + [t.name for t in found]
'''


def test_mypy_strict_reads_the_packages_types(tmp_path):
    (tmp_path / "user.py").write_text(USER_CODE)
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "user.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    # Exactly the one mistake: an int returned as a str. A package without types would fail differently.
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[0].startswith("user.py:15: error: Incompatible return value type (got \"int\", expected \"str\")"), done.stdout
    assert "Found 1 error" in done.stdout
