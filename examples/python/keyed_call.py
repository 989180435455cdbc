"""Call a tool with an API key.

    pip install ./sdk/python   (from the repository root; not on PyPI yet)
    TOOLGATE_API_KEY=tg_live_... TOOLGATE_BASE_URL=http://localhost:8402 python keyed_call.py
"""

import json

from toolgate import Toolgate, ToolgateError

client = Toolgate()  # TOOLGATE_API_KEY and TOOLGATE_BASE_URL from the environment

try:
    result = client.tools.call_with_details("hash", {"text": "hello world", "algorithm": "sha256"})
except ToolgateError as error:
    raise SystemExit(f"the call failed: {error.status} {error.code}: {error.message}")

print(json.dumps({"output": result.output, "credits_charged": result.credits_charged, "credits_remaining": result.credits_remaining}))
