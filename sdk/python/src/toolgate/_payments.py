"""Paying calls with x402 from a wallet, with the official ``x402`` package.

The x402 client (``x402ClientSync`` / ``x402Client`` with the exact EVM scheme registered for an
``eth_account`` account) reads the gateway's 402 offer (v2 ``PAYMENT-REQUIRED`` header, else the
v1 body) and signs an EIP-3009 authorization. Before anything is signed, a hook enforces the
caller's spending caps: a payment above the per-call cap, or one that would take the session's
total past the per-session cap, is refused with ``ToolgateError(code="spend_cap_exceeded")``.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping

from ._errors import ToolgateError

DEFAULT_MAX_PER_CALL = 100_000
"""$0.10 in USDC atomic units (6 decimals)."""
DEFAULT_MAX_PER_SESSION = 1_000_000
"""$1.00 in USDC atomic units."""


@dataclass(frozen=True)
class SpendingLimits:
    """Caps for a wallet client, in USDC atomic units (6 decimals: 1_000_000 is $1)."""

    max_per_call: int = DEFAULT_MAX_PER_CALL
    max_per_session: int = DEFAULT_MAX_PER_SESSION
    allowed_assets: list[dict[str, str]] = field(default_factory=list)
    """Tokens to pay with besides the canonical USDC the x402 client knows (e.g. a test token on a
    local chain): ``{"network": "eip155:84532", "asset": "0x..."}``."""


def _usdc(atomic: int) -> str:
    return f"{atomic // 1_000_000}.{atomic % 1_000_000:06d} USDC"


def _amount_of(requirements: Any) -> int:
    amount = getattr(requirements, "amount", None) or getattr(requirements, "max_amount_required", None) or "0"
    return int(amount)


class _CapAbort(Exception):
    """Carries a cap refusal through the x402 client's hook machinery."""

    def __init__(self, error: ToolgateError) -> None:
        super().__init__(error.message)
        self.error = error


class _Caps:
    """The session's running total, shared by every call of one client (thread-safe)."""

    def __init__(self, limits: SpendingLimits) -> None:
        self.limits = limits
        self.spent = 0
        self._lock = threading.Lock()

    def reserve(self, amount: int) -> None:
        with self._lock:
            if amount > self.limits.max_per_call:
                raise ToolgateError(
                    status=0,
                    code="spend_cap_exceeded",
                    message=f"The call costs {_usdc(amount)}, above the per-call cap of {_usdc(self.limits.max_per_call)}; nothing was signed.",
                )
            if self.spent + amount > self.limits.max_per_session:
                raise ToolgateError(
                    status=0,
                    code="spend_cap_exceeded",
                    message=f"Paying {_usdc(amount)} would take this session's spending to {_usdc(self.spent + amount)}, above its cap of {_usdc(self.limits.max_per_session)}; nothing was signed.",
                )
            self.spent += amount


def _configure(client: Any, wallet: Any, caps: _Caps) -> None:
    # Imported here: the x402 EVM stack (web3) loads only for clients that pay.
    from x402.mechanisms.evm.exact.register import register_exact_evm_client

    register_exact_evm_client(client, wallet)
    # Our caps replace the x402 client's default USD cap; its asset allow-list stays in force.
    controls: dict[str, Any] = {"max_amount_per_payment": False}
    if caps.limits.allowed_assets:
        controls["allowed_assets"] = list(caps.limits.allowed_assets)
    client.set_spend_controls(controls)

    def before(context: Any) -> None:
        try:
            caps.reserve(_amount_of(context.selected_requirements))
        except ToolgateError as error:
            raise _CapAbort(error) from None

    client.on_before_payment_creation(before)


def _parse_body(text: str) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def _payment_failed(error: Exception, required: Any = None) -> ToolgateError:
    cap = error if isinstance(error, _CapAbort) else getattr(error, "__cause__", None) or getattr(error, "__context__", None)
    if isinstance(cap, _CapAbort):
        return cap.error
    if "only default assets" in str(error):
        # The x402 client's own words name its options (spend_controls), not this library's.
        offered = " or ".join(f"{r.asset} on {r.network}" for r in getattr(required, "accepts", None) or [])
        return ToolgateError(
            status=0,
            code="payment_failed",
            message=f"The gateway asks to be paid in {offered or 'a token'}, not a USDC this client pays with unless told: "
            'list the token in SpendingLimits(allowed_assets=[{"network": ..., "asset": ...}]) to pay with it. Nothing was signed.',
        )
    return ToolgateError(status=0, code="payment_failed", message=f"Could not pay with the wallet: {error}")


class WalletPayer:
    """Signs x402 payments for a synchronous client."""

    def __init__(self, wallet: Any, limits: SpendingLimits | None = None) -> None:
        from x402 import x402ClientSync
        from x402.http.x402_http_client import x402HTTPClientSync

        self.caps = _Caps(limits or SpendingLimits())
        client = x402ClientSync()
        _configure(client, wallet, self.caps)
        self._http = x402HTTPClientSync(client)
        self.address: str = wallet.address

    def payment_headers(self, headers: Mapping[str, str], text: str) -> dict[str, str]:
        """The payment headers answering a 402, signed once; the caller re-sends them on retries."""
        required = None
        try:
            required = self._http.get_payment_required_response(headers.get, _parse_body(text))
            return self._http.encode_payment_signature_header(self._http.create_payment_payload(required))
        except ToolgateError:
            raise
        except Exception as error:  # the x402 client's own errors: no offer we can pay, signing failed
            raise _payment_failed(error, required) from error


class AsyncWalletPayer:
    """Signs x402 payments for an asynchronous client."""

    def __init__(self, wallet: Any, limits: SpendingLimits | None = None) -> None:
        from x402 import x402Client
        from x402.http.x402_http_client import x402HTTPClient

        self.caps = _Caps(limits or SpendingLimits())
        client = x402Client()
        _configure(client, wallet, self.caps)
        self._http = x402HTTPClient(client)
        self.address: str = wallet.address

    async def payment_headers(self, headers: Mapping[str, str], text: str) -> dict[str, str]:
        required = None
        try:
            required = self._http.get_payment_required_response(headers.get, _parse_body(text))
            return self._http.encode_payment_signature_header(await self._http.create_payment_payload(required))
        except ToolgateError:
            raise
        except Exception as error:
            raise _payment_failed(error, required) from error
