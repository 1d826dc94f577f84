"""Decoding an MQTT notice payload: a JSON object, or one sentence saying why not.

Any broker user may publish a notice, so the decoder bounds what one message can make
the daemon do before a field is looked at, and turns every way the payload can be wrong
into a `PayloadError` with a sentence for the publisher. Python's `json.loads` alone
raises ValueError (not JSONDecodeError) for an integer of more than 4,300 digits and
RecursionError for deep nesting, and keeps the last of a key given twice (so two readers
of one notice could disagree on its fields).

Refused here: more than MAX_BYTES bytes; not UTF-8; not JSON; an integer of more than
MAX_DIGITS digits; a key twice in one object; nesting deeper than MAX_DEPTH; a string
with a lone surrogate (`"\\ud800"` is valid JSON but not text, and the journal could not
store it); a value that is not an object. Python's extensions NaN and Infinity, and
numbers beyond a float (`1e999` is inf), are let through: the notice handler's field
limits refuse them with a sentence that names the field (tests/test_daemon_validation.py).
"""

from __future__ import annotations

import json
import re
from typing import Any

from schedd import limits

MAX_BYTES = 65_536  # a notice is about 150 bytes
MAX_DIGITS = 32  # an int64 has 19; no field takes more
MAX_DEPTH = 32  # a notice is flat: an object of numbers and strings
_SURROGATE = re.compile("[\ud800-\udfff]")


class PayloadError(Exception):
    """The payload is not a notice object; str() is one sentence ending with a full stop."""


def decode_notice(payload: bytes) -> dict[str, Any]:
    """The JSON object of `payload`, or PayloadError with the reason."""
    if len(payload) > MAX_BYTES:
        raise PayloadError(f"notice is {len(payload):,} bytes; at most {MAX_BYTES:,} are "
                           "read.")
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PayloadError(f"notice is not UTF-8 (byte 0x{payload[exc.start]:02x} at "
                           f"position {exc.start}).") from None
    try:
        obj = json.loads(text, parse_int=_int, object_pairs_hook=_object)
    except json.JSONDecodeError as exc:
        raise PayloadError(f"notice is not valid JSON ({exc.msg} at position "
                           f"{exc.pos}).") from None
    except RecursionError:
        # The C decoder recurses once per level; MAX_BYTES bounds the levels it can try.
        raise PayloadError(f"notice is nested more than {MAX_DEPTH} levels deep.") \
            from None
    if not isinstance(obj, dict):
        raise PayloadError(f"notice must be a JSON object, not {type(obj).__name__}.")
    _check_values(obj)
    return obj


def _int(text: str) -> int:
    digits = len(text) - text.startswith("-")
    if digits > MAX_DIGITS:
        raise PayloadError(f"notice has an integer of {digits:,} digits; at most "
                           f"{MAX_DIGITS}.")
    return int(text)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise PayloadError(f"notice has key {limits.shown(key)} twice in one "
                                   "object.")
            seen.add(key)
    return obj


def _check_values(obj: dict[str, Any]) -> None:
    """Nesting (an object of scalars is 1 level) and strings, walked without recursion:
    a value just below the recursion limit is measured without recursing again."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        value, level = stack.pop()
        if level > MAX_DEPTH:
            raise PayloadError(f"notice is nested more than {MAX_DEPTH} levels deep.")
        if isinstance(value, dict):
            _check_text(*value)
            children: Any = value.values()
        else:
            children = value
        for child in children:
            if isinstance(child, dict | list):
                stack.append((child, level + 1))
            elif isinstance(child, str):
                _check_text(child)


def _check_text(*texts: str) -> None:
    for text in texts:
        found = _SURROGATE.search(text)
        if found:
            raise PayloadError(f"notice has a string with a lone surrogate "
                               f"(\\u{ord(found.group()):04x}), which is not text.")
