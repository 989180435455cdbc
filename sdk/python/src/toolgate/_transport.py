"""Sending one API request: authentication, x402 payment, retries, and error mapping.

One ``Operation`` describes a request and how to read its answer; ``SyncTransport`` and
``AsyncTransport`` run it with httpx. The retry rule is written once (``_Policy``), the
TypeScript library's too (sdk/typescript/src/transport.ts), at most ``max_retries`` times:

- a connection that could not be made (refused, no such host, unreachable, connect timeout) is
  retried for every request: nothing was sent;
- a connection lost after sending, or an answer that did not come in time, is retried only when a
  repeat cannot act twice: reads, and tool calls, which always carry an ``Idempotency-Key`` the
  gateway runs and charges once;
- 429 is retried for every request (refused before anything ran), after ``Retry-After`` (at most
  60 s; longer is returned as the error), else after an exponential backoff with jitter; 503 (but
  ``tool_unavailable``), and a load balancer's 502 ``replica_failed`` and 504 ``replica_timeout``
  (the replica failed mid-request), as a lost connection. Nothing else: a 409 ``idempotency_conflict`` is
  another body under the same key (duplicates still running are waited for by the gateway, never
  answered 409), and a tool's own failure (502, 504) is the caller's to judge;
- a paid call re-sends the SAME signed payment on a retry, never a new one: the gateway settles one
  authorization once, so a retry can never pay twice.

``timeout`` bounds each attempt as a whole, from sending to the last byte of the answer, as the
TypeScript library's ``timeoutMs`` does. httpx's own timeouts are per phase (connecting, each read,
each write): an answer that trickles in a byte at a time, each within the read timeout, would hold
the caller for as long as the server likes. An attempt past its time is a timeout like any other
(``httpx.ReadTimeout`` into the retry rule, ``timeout`` to the caller).
"""

from __future__ import annotations

import asyncio
import contextvars
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Generic, Mapping, TypeVar

import httpx

from ._checks import redact_url
from ._errors import ToolgateError
from ._payments import AsyncWalletPayer, WalletPayer

T = TypeVar("T")

USER_AGENT = "toolgate-python/0.1.0"
NOT_RETRIED = frozenset({"tool_unavailable"})
# A load balancer's answer for a replica that failed or went silent mid-request (the gateway's
# shipped HAProxy): the request may have run, as after a lost connection.
LOST_ON_THE_WAY = frozenset({"replica_failed", "replica_timeout"})
MAX_RETRY_AFTER = 60.0


@dataclass
class Operation(Generic[T]):
    method: str
    path: str
    parse: Callable[["Answer"], T]
    json: Any = None
    params: dict[str, Any] | None = None
    idempotency_key: str | None = None
    payable: bool = False
    """A tool call: without an API key, a 402 is answered by paying with the wallet."""
    timeout: float | None = None
    """Seconds for each attempt of this request as a whole, instead of the client's ``timeout``."""
    max_retries: int | None = None
    """Retries for this request, instead of the client's ``max_retries``."""


@dataclass
class Answer:
    status: int
    headers: httpx.Headers
    body: Any


@dataclass
class _Policy:
    max_retries: int
    base_delay: float = 0.5
    max_delay: float = 8.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return retry_after
        backoff: float = min(self.max_delay, self.base_delay * 2.0**attempt)
        return backoff * (0.5 + random.random() / 2)  # jitter: clients that failed together do not retry together

    @staticmethod
    def repeatable(op: Operation[Any]) -> bool:
        """Sending it again cannot act twice, nor answer otherwise: a read, or a call the gateway
        dedupes by its key. Not a DELETE: the gateway answers a repeated one 404, which would turn
        a delete that was done, with its answer lost, into an error."""
        return op.method in ("GET", "HEAD") or op.idempotency_key is not None

    def retry_status(self, op: Operation[Any], error: ToolgateError) -> bool:
        if error.retry_after is not None and error.retry_after > MAX_RETRY_AFTER:
            return False  # not worth blocking for: the caller gets the error and its retry_after
        if error.status == 429:
            return True  # refused before anything was done
        if error.code in LOST_ON_THE_WAY:
            return self.repeatable(op)
        # A tool without a provider stays unavailable: asking again cannot help.
        return error.status == 503 and error.code not in NOT_RETRIED and self.repeatable(op)

    def retry_network(self, op: Operation[Any], error: httpx.TransportError) -> bool:
        if _never_sent(error):
            return True  # the request never left
        return self.repeatable(op)


def _never_sent(error: httpx.TransportError) -> bool:
    """A connection that could not be made (refused, no such host, unreachable, connect timeout),
    or none free in the pool in time: nothing of the request was sent, so it did not run."""
    return isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))


@dataclass
class Settings:
    api_key: str | None = field(repr=False)
    base_url: str
    max_retries: int
    timeout: float
    headers: dict[str, str] = field(default_factory=dict)


MAY_HAVE_RUN = "the request may have been received and run; check (e.g. list what exists) before retrying."
"""What the message of a network error says once the request may have been sent, in the
TypeScript library's words (sdk/typescript/src/transport.ts): "could not reach" would invite a
retry that creates a second key or sends a second test event."""


def _network_error(error: httpx.TransportError, url: str) -> ToolgateError:
    timed_out = isinstance(error, httpx.TimeoutException)
    code = "timeout" if timed_out else "network_error"
    reason = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    if _never_sent(error):
        message = reason
    elif timed_out:
        # No answer in time: the request may have been sent whole (or still be on its way).
        message = f"{reason.rstrip('.')}: {MAY_HAVE_RUN}"
    else:
        # Sent, or perhaps sent: the connection was lost (reset, closed) before the whole answer came.
        # The origin as TypeScript's `url.origin`: no path, and no user:password a base_url may hold.
        message = f"Lost the connection to {_origin(url)} ({reason}): {MAY_HAVE_RUN}"
    return ToolgateError(status=0, code=code, message=message)


def _origin(url: str) -> str:
    """The origin as TypeScript's ``url.origin``: no path, and no user:password a URL may hold."""
    parsed = httpx.URL(url)
    return f"{parsed.scheme}://{parsed.netloc.decode('ascii')}"


def _wrong_shape(response: httpx.Response, error: Exception) -> ToolgateError:
    """A 2xx answer that is not what the request answers (a proxy's page, another server at the
    base URL): ``invalid_response``, as the TypeScript library's ``shape.ts``, not a bare KeyError."""
    detail = f'no "{error.args[0]}"' if isinstance(error, KeyError) and error.args else "not the objects this request answers"
    return ToolgateError(
        status=0,
        code="invalid_response",
        message=f"The gateway answered {response.status_code} with JSON of the wrong shape ({detail}): is the base URL a Toolgate gateway's?",
        request_id=response.headers.get("x-request-id"),
    )


def _unsendable(op: "Operation[Any]") -> ToolgateError:
    """h11 refused to write the request (a header value HTTP does not allow): nothing was sent,
    so it is neither retried nor a lost connection, and h11's message, which quotes the value (an
    API key, say), is not repeated."""
    return ToolgateError(
        status=0,
        code="invalid_argument",
        message=f"{op.method} {op.path} could not be sent: a header holds a character HTTP does not allow (its value is not shown here).",
    )


def _decode(response: httpx.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        # Raised here, not by the gateway: status 0, like every client-side error.
        raise ToolgateError(
            status=0,
            code="invalid_response",
            message=f"The gateway answered {response.status_code} with a body that is not JSON.",
            request_id=response.headers.get("x-request-id"),
        ) from None


def _redirect_refused(response: httpx.Response) -> ToolgateError:
    """A redirect is not followed (the gateway never redirects an API call: one comes from a proxy
    in front of it, or a base URL that is not the gateway's); it is an error raised in the client."""
    location = response.headers.get("location")
    return ToolgateError(
        status=0,
        code="invalid_response",
        message=f"The gateway answered {response.status_code}{f' to {redact_url(location)}' if location else ''}: the client does not follow redirects, "
        "which would send your API key to another address. Set base_url to the gateway's own address.",
        request_id=response.headers.get("x-request-id"),
    )


class _Base:
    def __init__(self, settings: Settings, paying: bool) -> None:
        self.settings = settings
        self.policy = _Policy(max_retries=max(0, settings.max_retries))
        # A wallet pays only when there is no API key: a keyed caller's 402 (out of credits) is an error.
        self.paying = paying and not settings.api_key

    def _headers(self, op: Operation[Any], payment: dict[str, str] | None) -> dict[str, str | bytes]:
        headers: dict[str, str | bytes] = {"accept": "application/json", "user-agent": USER_AGENT, **self.settings.headers}
        if self.settings.api_key:
            headers["x-api-key"] = self.settings.api_key
        if op.idempotency_key is not None:
            # As bytes: httpx refuses a non-ASCII str header before sending (a bare
            # UnicodeEncodeError); the gateway answers such a key with its own 422, as it does
            # for the TypeScript library.
            headers["idempotency-key"] = op.idempotency_key.encode()
        if payment:
            headers.update(payment)
        return headers

    def _request(self, op: Operation[Any], payment: dict[str, str] | None) -> dict[str, Any]:
        request: dict[str, Any] = {
            # The key is a header httpx would send on to wherever a redirect points (it strips
            # only Authorization), even on a client given with follow_redirects: none is followed.
            "follow_redirects": False,
            "method": op.method,
            "url": self.settings.base_url + op.path,
            "headers": self._headers(op, payment),
            "json": op.json,
            "params": {k: v for k, v in (op.params or {}).items() if v is not None} or None,
        }
        if op.timeout is not None:
            request["timeout"] = op.timeout
        return request

    def _attempt_seconds(self, op: Operation[Any]) -> float:
        return self.settings.timeout if op.timeout is None else op.timeout

    def _steps(self, op: Operation[T]) -> Generator[tuple[str, Any], Any, T]:
        """The request's whole life, as steps for a driver to perform: ("send", (request kwargs,
        seconds)) is answered with the httpx response got within those seconds (or has the
        transport error thrown in), ("pay", response) with the payment headers, ("sleep",
        seconds) with nothing."""
        payment: dict[str, str] | None = None
        attempt = 0
        max_retries = self.policy.max_retries if op.max_retries is None else max(0, op.max_retries)
        while True:
            request = self._request(op, payment)
            try:
                response: httpx.Response = yield ("send", (request, self._attempt_seconds(op)))
            except httpx.LocalProtocolError:
                raise _unsendable(op) from None
            except httpx.TransportError as lost:
                if attempt < max_retries and self.policy.retry_network(op, lost):
                    yield ("sleep", self.policy.delay(attempt, None))
                    attempt += 1
                    continue
                raise _network_error(lost, request["url"]) from lost
            if 300 <= response.status_code < 400:
                raise _redirect_refused(response)
            if response.status_code == 402 and op.payable and self.paying and payment is None:
                payment = yield ("pay", response)
                continue  # the paid attempt is not a retry
            if response.is_success:
                answer = Answer(response.status_code, response.headers, _decode(response))
                try:
                    return op.parse(answer)
                except (KeyError, TypeError, AttributeError, ValueError) as wrong:
                    raise _wrong_shape(response, wrong) from None
            error = ToolgateError.from_response(response.status_code, response.headers, response.text)
            if attempt < max_retries and self.policy.retry_status(op, error):
                yield ("sleep", self.policy.delay(attempt, error.retry_after))
                attempt += 1
                continue
            raise error


MAX_RESPONSE_BYTES = 384 * 1024 * 1024
"""The largest answer body read (as TypeScript's): 384 MiB. Above the largest answer the gateway
sends (a tool's output is at most 256 MiB, WORKER_MAX_RESPONSE_BYTES, with room for its JSON
around it), below what one JavaScript string can hold (~512 MiB), TypeScript's limit. A larger
answer is ``invalid_response``, not retried."""


def _too_large(response: httpx.Response) -> ToolgateError:
    return ToolgateError(
        status=0,
        code="invalid_response",
        message=f"The gateway answered {response.status_code} with a body over {MAX_RESPONSE_BYTES // 1024 // 1024} MiB, more than the client reads: "
        "not the gateway's answer (a proxy, or a base URL that is not the gateway's?).",
        request_id=response.headers.get("x-request-id"),
    )


def _declared_too_large(response: httpx.Response) -> bool:
    declared = (response.headers.get("content-length") or "").strip()
    return declared.isdigit() and declared.isascii() and int(declared) > MAX_RESPONSE_BYTES


def _whole(response: httpx.Response, chunks: list[bytes]) -> httpx.Response:
    """The streamed answer as a read one, its (decoded) body ``chunks``."""
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
    return httpx.Response(response.status_code, headers=headers, content=b"".join(chunks), request=response.request, extensions=response.extensions)


def _request_capped(http: httpx.Client, request: dict[str, Any]) -> httpx.Response:
    """``http.request(**request)``, its body read only up to ``MAX_RESPONSE_BYTES``."""
    kwargs = dict(request)  # httpx.Client.request's arguments: follow_redirects is send's
    follow_redirects = bool(kwargs.pop("follow_redirects", False))
    response = http.send(http.build_request(**kwargs), stream=True, follow_redirects=follow_redirects)
    try:
        if _declared_too_large(response):
            raise _too_large(response)
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > MAX_RESPONSE_BYTES:
                raise _too_large(response)
            chunks.append(chunk)
    finally:
        response.close()
    return _whole(response, chunks)


async def _arequest_capped(http: httpx.AsyncClient, request: dict[str, Any]) -> httpx.Response:
    """``_request_capped`` for the asynchronous client."""
    kwargs = dict(request)  # httpx.AsyncClient.request's arguments: follow_redirects is send's
    follow_redirects = bool(kwargs.pop("follow_redirects", False))
    response = await http.send(http.build_request(**kwargs), stream=True, follow_redirects=follow_redirects)
    try:
        if _declared_too_large(response):
            raise _too_large(response)
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > MAX_RESPONSE_BYTES:
                raise _too_large(response)
            chunks.append(chunk)
    finally:
        await response.aclose()
    return _whole(response, chunks)


def _too_slow(request: dict[str, Any], seconds: float) -> httpx.ReadTimeout:
    # The origin, as every other message: no path, and never a user:password the URL may hold.
    return httpx.ReadTimeout(f"No whole answer from {_origin(request['url'])} within {seconds:g} s.")


class SyncTransport(_Base):
    def __init__(self, settings: Settings, payer: WalletPayer | None, http: httpx.Client | None = None) -> None:
        super().__init__(settings, paying=payer is not None)
        self.payer = payer
        self.http = http or httpx.Client(timeout=settings.timeout)

    def close(self) -> None:
        self.http.close()

    def _send(self, request: dict[str, Any], seconds: float) -> httpx.Response:
        """One attempt, given up after ``seconds`` in all. httpx cannot be stopped mid-read from
        here, so the attempt runs on its own daemon thread (in the caller's context, for hooks
        that read context variables) while the caller waits at most ``seconds``; an attempt given
        up ends on its own at the server's pace or httpx's per-phase timeout, and its answer is
        dropped."""
        outcome: list[tuple[bool, Any]] = []
        done = threading.Event()
        context = contextvars.copy_context()

        def attempt() -> None:
            try:
                outcome.append((True, context.run(lambda: _request_capped(self.http, request))))
            except BaseException as error:  # handed to the caller's thread, raised there
                outcome.append((False, error))
            done.set()

        threading.Thread(target=attempt, name="toolgate-attempt", daemon=True).start()
        if not done.wait(seconds):
            raise _too_slow(request, seconds)
        ok, value = outcome[0]
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    def run(self, op: Operation[T]) -> T:
        steps = self._steps(op)
        step = next(steps)
        while True:
            kind, arg = step
            try:
                if kind == "send":
                    try:
                        reply: Any = self._send(*arg)
                    except httpx.TransportError as error:
                        step = steps.throw(error)
                        continue
                elif kind == "pay":
                    assert self.payer is not None
                    reply = self.payer.payment_headers(arg.headers, arg.text)
                else:
                    time.sleep(arg)
                    reply = None
                step = steps.send(reply)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]


class AsyncTransport(_Base):
    def __init__(self, settings: Settings, payer: AsyncWalletPayer | None, http: httpx.AsyncClient | None = None) -> None:
        super().__init__(settings, paying=payer is not None)
        self.payer = payer
        self.http = http or httpx.AsyncClient(timeout=settings.timeout)

    async def close(self) -> None:
        await self.http.aclose()

    async def _send(self, request: dict[str, Any], seconds: float) -> httpx.Response:
        """One attempt, cancelled after ``seconds`` in all (httpx closes the connection)."""
        try:
            return await asyncio.wait_for(_arequest_capped(self.http, request), seconds)
        except asyncio.TimeoutError:
            raise _too_slow(request, seconds) from None

    async def run(self, op: Operation[T]) -> T:
        steps = self._steps(op)
        step = next(steps)
        while True:
            kind, arg = step
            try:
                if kind == "send":
                    try:
                        reply: Any = await self._send(*arg)
                    except httpx.TransportError as error:
                        step = steps.throw(error)
                        continue
                elif kind == "pay":
                    assert self.payer is not None
                    reply = await self.payer.payment_headers(arg.headers, arg.text)
                else:
                    await asyncio.sleep(arg)
                    reply = None
                step = steps.send(reply)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]


def header_int(headers: Mapping[str, str], name: str) -> int | None:
    value = headers.get(name)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
