"""The journal's JSON texts (schedd/daemon/journal_json.py): whatever orjson or the
json.dumps fallback writes, json.loads reads back what json.dumps would have given."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from schedd.daemon.journal_json import json_text

scalars = (st.none() | st.booleans() | st.integers() | st.floats() | st.text())
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                      max_leaves=20)


def same(a: object, b: object) -> bool:
    """Equal, with NaN equal to NaN (json.dumps writes it, and reads it back, as NaN)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@given(values)
def test_reads_back_as_json_dumps_would(value: object) -> None:
    assert same(json.loads(json_text(value)), json.loads(json.dumps(value)))


def test_a_submission_is_written_by_orjson() -> None:
    body = {"id": 7, "submit": 0.0, "walltime": 3600.0, "min_nodes": -1,
            "checkpointable": True, "job_class": "B"}
    assert json_text(body) == ('{"id":7,"submit":0.0,"walltime":3600.0,"min_nodes":-1,'
                               '"checkpointable":true,"job_class":"B"}')


def test_what_orjson_writes_otherwise_goes_through_json_dumps() -> None:
    assert json_text({"t": math.inf}) == '{"t": Infinity}'  # orjson: null
    assert json_text([math.nan]) == "[NaN]"
    assert json_text({"id": 2**70}) == '{"id": 1180591620717411303424}'  # orjson refuses
    assert json_text({"note": None}) == '{"note": null}'
