"""Pay for one call with x402 from a wallet: no API key, no account.

    pip install ./sdk/python   (from the repository root; not on PyPI yet)
    TOOLGATE_BASE_URL=http://localhost:8402 WALLET_PRIVATE_KEY=0x... python paid_call.py

On a local chain whose token is not the canonical USDC, name it:
TOOLGATE_ALLOWED_ASSET=eip155:84532:0x5FbDB2315678afecb367f032d93F642f64180aa3
"""

import json
import os

from eth_account import Account

from toolgate import SpendingLimits, Toolgate, ToolgateError

wallet = Account.from_key(os.environ["WALLET_PRIVATE_KEY"])
allowed = []
if os.environ.get("TOOLGATE_ALLOWED_ASSET"):
    network, _, asset = os.environ["TOOLGATE_ALLOWED_ASSET"].rpartition(":")
    allowed.append({"network": network, "asset": asset})

# At most $0.01 per call and $0.05 for this run, in USDC atomic units (6 decimals).
client = Toolgate(wallet=wallet, spending=SpendingLimits(max_per_call=10_000, max_per_session=50_000, allowed_assets=allowed))

try:
    result = client.tools.call_with_details("hash", {"text": "paid with x402"})
except ToolgateError as error:
    raise SystemExit(f"the call failed: {error.status} {error.code}: {error.message}")

print(json.dumps({"output": result.output, "paid_usdc_atomic": client.spent, "transaction": (result.payment or {}).get("transaction")}))
