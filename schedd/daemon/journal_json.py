"""The JSON text the journal stores for a stimulus's body and response.

orjson writes a submission's two texts about ten times faster than `json.dumps`, which
was half of a 20,000-job stream's commit (issue 21, docs/benchmarks.md). Both texts are
read back with `json.loads`, so the spacing and float spelling orjson chooses (`1e-7`
for `1e-07`, no blanks after separators) change nothing that is read, and a journal
written before keeps its rows and CRCs. Two values orjson would not write as `json.dumps`
does go through `json.dumps`: integers beyond 64 bits (orjson refuses them) and NaN or
infinities (orjson writes `null`, which would come back as None)."""

from __future__ import annotations

import json
from typing import Any

import orjson


def json_text(value: Any) -> str:
    try:
        text = orjson.dumps(value)
    except orjson.JSONEncodeError:  # an int beyond 64 bits, or a type orjson lacks
        return json.dumps(value)
    if b"null" in text:  # maybe a non-finite float: json.dumps keeps it (NaN, Infinity)
        return json.dumps(value)
    return text.decode()
