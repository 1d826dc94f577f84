"""The checks every Scheduler call passes (`guarded_handlers`): authentication,
authorisation of operator-only methods, request context for the logs (structlog
contextvars) and the per-method request counter. Health checks and reflection are
registered unwrapped: they are open to everyone (load balancers, grpcurl).

Handlers read the caller with `current_principal()`; they bind `job_id` and `stimulus_id`
to the log context themselves once they know them.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import AsyncIterator, Callable
from operator import attrgetter
from typing import Any

import grpc
import structlog
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from .. import limits
from .auth import OPERATOR_ONLY, Principal, TokenStore
from .metrics import DaemonMetrics

log = structlog.get_logger("schedd.rpc")
_principal: contextvars.ContextVar[Principal | None] = contextvars.ContextVar(
    "schedd_principal", default=None)

def current_principal() -> Principal:
    principal = _principal.get()
    assert principal is not None, "called outside an intercepted RPC"
    return principal


def guarded_handlers(handlers: dict[str, Any], tokens: TokenStore,
                     metrics: DaemonMetrics) -> dict[str, Any]:
    """The Scheduler's method handlers, each wrapped once at start in the checks every
    call passes: authentication, authorisation of operator-only methods, the request's
    decoding and sizes, the log context, and the per-method counters.

    Why not a `grpc.aio.ServerInterceptor`: grpc.aio runs an interceptor as a coroutine
    pipeline on every call, and the interceptor built a fresh wrapped handler per call;
    at 64 callers' SubmitJob that was 5.5% of the GIL's samples (docs/benchmarks.md,
    issue 35). Wrapped once, a call pays only its own checks."""
    return {name: _guard(handler, name, tokens, metrics) for name, handler in handlers.items()}


def _guard(handler: Any, method: str, tokens: TokenStore, metrics: DaemonMetrics) -> Any:
    deserialize = _tolerant(handler.request_deserializer)
    operator_only = method in OPERATOR_ONLY
    ok_requests = metrics.rpc_requests.labels(method, "OK")  # the common case, bound once
    seconds = None  # rpc_seconds' series appears once the method is called (metrics.py)

    def admitted(context: grpc.aio.ServicerContext) -> tuple[Principal | None, str]:
        """(the caller, "") or (None, why the call is refused, as "CODE:message")."""
        authorization = None
        for key, value in context.invocation_metadata() or ():
            if key == "authorization":
                authorization = _text(value)
        principal = tokens.authenticate(authorization)
        if principal is None:
            return None, ("UNAUTHENTICATED:a valid 'authorization: Bearer TOKEN' header is "
                          "required")
        if operator_only and not principal.operator:
            return None, (f"PERMISSION_DENIED:{method} is for operators; {principal.user} "
                          f"is a {principal.role}")
        _principal.set(principal)
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(rpc=method, user=principal.user)
        return principal, ""

    async def refuse(context: grpc.aio.ServicerContext, why: str) -> None:
        name, _, message = why.partition(":")
        metrics.rpc_requests.labels(method, name).inc()
        log.info("rpc refused", rpc=method, code=name, details=message)
        await context.abort(grpc.StatusCode[name], message)

    def problem(request: Any) -> str | None:
        if isinstance(request, Undecodable):
            return f"the request is not a valid {method} message ({request.reason})"
        return oversized(request)

    def leave(context: grpc.aio.ServicerContext, started: float) -> None:
        nonlocal seconds
        if seconds is None:
            seconds = metrics.rpc_seconds.labels(method)
        code = context.code()
        elapsed = time.perf_counter() - started
        if code is None or code is grpc.StatusCode.OK:
            ok_requests.inc()
            seconds.observe(elapsed)
            return
        name = code.name if isinstance(code, grpc.StatusCode) else str(code)
        metrics.rpc_requests.labels(method, name).inc()
        seconds.observe(elapsed)
        log.info("rpc refused", code=name, details=context.details(),
                 seconds=round(elapsed, 6))

    if handler.unary_unary is not None:
        inner = handler.unary_unary

        async def unary_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
            principal, why = admitted(context)
            if principal is None:
                await refuse(context, why)
            started = time.perf_counter()
            try:
                bad = problem(request)
                if bad is not None:
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, bad)
                return await inner(request, context)
            finally:
                leave(context, started)

        return grpc.unary_unary_rpc_method_handler(
            unary_unary, deserialize, handler.response_serializer)
    if handler.stream_unary is not None:
        inner_su = handler.stream_unary

        async def stream_unary(requests: AsyncIterator[Any],
                               context: grpc.aio.ServicerContext) -> Any:
            principal, why = admitted(context)
            if principal is None:
                await refuse(context, why)
            started = time.perf_counter()

            async def checked() -> AsyncIterator[Any]:
                async for request in requests:
                    bad = problem(request)
                    if bad is not None:
                        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, bad)
                    yield request

            try:
                return await inner_su(checked(), context)
            finally:
                leave(context, started)

        return grpc.stream_unary_rpc_method_handler(
            stream_unary, deserialize, handler.response_serializer)
    if handler.unary_stream is not None:
        inner_us = handler.unary_stream

        async def unary_stream(request: Any,
                               context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            principal, why = admitted(context)
            if principal is None:
                await refuse(context, why)
            started = time.perf_counter()
            try:
                bad = problem(request)
                if bad is not None:
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, bad)
                async for item in inner_us(request, context):
                    yield item
            finally:
                leave(context, started)

        return grpc.unary_stream_rpc_method_handler(
            unary_stream, deserialize, handler.response_serializer)
    return handler  # stream-stream: none in this API


def oversized(message: Message) -> str | None:
    """The first string field longer than its limit, or repeated filter with too many
    entries (schedd/limits.py), as one sentence; None if every field is within bounds."""
    strings, lists, messages = _plan(message.DESCRIPTOR)
    for name in lists:
        if len(getattr(message, name)) > limits.MAX_LIST:
            return (f"{name} may list at most {limits.MAX_LIST} entries, got "
                    f"{len(getattr(message, name))}")
    for name, repeated in strings:
        value = getattr(message, name)
        for text in value if repeated else (value,):
            why = limits.text_problem(name, text)
            if why is not None:
                return why
    for name, repeated in messages:
        value = getattr(message, name)
        items = value if repeated else ((value,) if message.HasField(name) else ())
        flat = repeated and _flat_strings(value)
        if flat:  # SubmitJobs: only the first job with a string too long is looked at
            first = _first_too_long(value, flat)
            items = [] if first is None else [value[first]]
        for item in items:
            why = oversized(item)
            if why is not None:
                return why
    return None


def _flat_strings(items: Any) -> list[tuple[str, int]] | None:
    """(string field, its limit) of a repeated message type made of scalars only."""
    if not items:
        return None
    strings, lists, messages = _plan(items[0].DESCRIPTOR)
    if lists or messages or any(repeated for _, repeated in strings):
        return None
    return [(name, limits.STRING_LIMITS.get(name, limits.MAX_STRING)) for name, _ in strings]


def _first_too_long(items: Any, flat: list[tuple[str, int]]) -> int | None:
    """The index of the first message with a string field over its limit, or None. Each
    field's lengths are read in one C loop (map, attrgetter, max); a field only over its
    limit somewhere is searched item by item. A 20,000-job stream's check was a Python
    generator per job (about a tenth of the stream's handling; issue 21)."""
    first = None
    for name, limit in flat:
        lengths = list(map(len, map(attrgetter(name), items)))
        if lengths and max(lengths) > limit:
            at = next(k for k, n in enumerate(lengths) if n > limit)
            first = at if first is None else min(first, at)
    return first


_PLANS: dict[Any, tuple[list[tuple[str, bool]], list[str], list[tuple[str, bool]]]] = {}


def _plan(descriptor: Any) -> tuple[list[tuple[str, bool]], list[str], list[tuple[str, bool]]]:
    """(string fields, repeated scalar fields, message fields) of a message type, once:
    a SubmitJobs batch of 100,000 jobs is checked in a few milliseconds."""
    plan = _PLANS.get(descriptor)
    if plan is None:
        strings, lists, messages = [], [], []
        for field in descriptor.fields:
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                if field.message_type.GetOptions().map_entry:
                    continue  # maps are in responses only
                messages.append((field.name, field.is_repeated))
                continue
            if field.is_repeated:
                lists.append(field.name)
            if field.type == FieldDescriptor.TYPE_STRING:
                strings.append((field.name, field.is_repeated))
        plan = _PLANS[descriptor] = (strings, lists, messages)
    return plan


class Undecodable:
    """Stands for request bytes that are not the method's message (answered
    INVALID_ARGUMENT instead of grpc's UNKNOWN)."""

    def __init__(self, reason: str):
        self.reason = reason


def _tolerant(deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    if deserializer is None:
        return None

    def deserialize(data: bytes) -> Any:
        try:
            return deserializer(data)
        except Exception as err:  # DecodeError and friends
            return Undecodable(str(err)[:120] or type(err).__name__)

    return deserialize


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)
