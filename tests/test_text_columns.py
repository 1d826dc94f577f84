"""schedd.text_columns against per-cell Python formatting: the rows it builds in NumPy are
byte for byte those of `str()` / `f"{v:.3f}"` cell by cell joined with `sep.join` (the
writers' code before it), on hand-picked edge cases, random columns and whole runs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedd import run_files, sim
from schedd import text_columns as tc
from schedd.text_columns import (
    constant_cells,
    join_rows,
    number_cells,
    text_cells,
    word_cells,
)


# The reference: the writers' per-cell formatting as it was, kept here apart from the
# module so that the module's own fallback (its copy of this code) is checked too.
def ref_number(value: float) -> str:
    if value.is_integer():
        return str(int(value))
    return f"{value:.3f}"


def ref_column(col: np.ndarray) -> list[str]:
    if len(col) > 1 and bool((col == col[0]).all()):
        return ref_column(col[:1]) * len(col)
    if col.dtype.kind in "iu":
        return list(map(str, col.tolist()))
    if bool(np.all(np.floor(col) == col)):
        return list(map(str, col.astype(np.int64).tolist()))
    return [ref_number(v) for v in col.tolist()]


def ref_rows(columns: list[list[str]], sep: str) -> bytes:
    if not columns or not columns[0]:
        return b""
    return ("\n".join(map(sep.join, zip(*columns, strict=True))) + "\n").encode()


def quietly(f, *args):  # noqa: ANN001, ANN202
    """inf in a column of whole numbers is cast to int64 by both (a RuntimeWarning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return f(*args)


def same_as_reference(*cols: np.ndarray, sep: str = ",") -> None:
    got = quietly(lambda: join_rows([number_cells(c) for c in cols], sep.encode()))
    want = quietly(lambda: ref_rows([ref_column(c) for c in cols], sep))
    assert got == want


INT64 = np.iinfo(np.int64)
EDGE_COLUMNS = {
    "zero": [0],
    "boundaries": [9, 10, 99, 100, 999, 1000, -9, -10, -99, -100, 0, 1, -1],
    "int64 extremes": [INT64.max, INT64.min, 0, -1, 1],
    "negative only": [-5, -123456, -7],
    "empty": [],
}
EDGE_FLOATS = {
    "negative zero": [-0.0, 1.5],
    "negative zero alone": [-0.0, 0.0, 3.0],
    "thousandths": [0.0005, 1.0015, 2.675, 0.0625, -0.0625, 0.9995, 2.9996, 1e-9, -1e-9],
    "rounds to minus zero": [-0.0004, -0.0001, 5.25],
    "whole and not": [1.0, 2.5, -3.0, 1e12, 1e12 + 0.5, 123456.789],
    "large whole": [2.0**52, 2.0**53 - 1, -(2.0**53) + 1],
    "huge": [2.0**53, 1.5, 1e300, -1e300],
    "huge whole": [2.0**60, 3.0],
    "nan and inf": [np.nan, 1.0, np.inf, -np.inf, 2.5],
    "nan whole": [np.nan, 1.0, 2.0],
    "inf whole": [np.inf, 1.0],
    "all nan": [np.nan, np.nan],
    "constant fraction": [0.1, 0.1, 0.1],
    "constant inf": [np.inf, np.inf],
    "constant -1": [-1.0] * 5,
    "single": [7.125],
    "empty": [],
    "ties": [k / 16 for k in range(-40, 40)] + [k / 2000 for k in range(-40, 40)],
}


@pytest.mark.parametrize("values", EDGE_COLUMNS.values(), ids=EDGE_COLUMNS)
def test_integer_edge_cases(values):
    same_as_reference(np.array(values, dtype=np.int64))


@pytest.mark.parametrize("values", EDGE_FLOATS.values(), ids=EDGE_FLOATS)
def test_float_edge_cases(values):
    same_as_reference(np.array(values, dtype=np.float64))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.uint32, np.uint64,
                                   np.float32, np.float16, np.bool_])
def test_other_dtypes(dtype):
    values = np.array([0, 1, 2, 3, 100, 5], dtype=np.int64)
    same_as_reference(values.astype(dtype))
    same_as_reference((values / 8).astype(dtype))


def test_uint64_beyond_int64():
    same_as_reference(np.array([2**64 - 1, 2**63, 0, 10], dtype=np.uint64))


def test_values_near_a_tie_are_left_to_python(monkeypatch):
    put = []
    put_rows = tc._put_rows
    monkeypatch.setattr(tc, "_put_rows", lambda *a: put.append(a[1]) or put_rows(*a))
    same_as_reference(np.array(EDGE_FLOATS["ties"]))
    assert put and 0 < len(put[0]) < len(EDGE_FLOATS["ties"])


def test_many_random_fractions_round_as_python_does():
    """Vectorised .3f rounding against Python's on values near the boundaries that
    matter: thousandths and half-thousandths with and without a nudge, and plain
    random doubles of every size that .3f is used for."""
    rng = np.random.default_rng(11)
    k = rng.integers(-10**12, 10**12, 40_000)
    halves = (k + 0.5) / 1000.0
    columns = [
        k / 1000.0, halves, np.nextafter(halves, np.inf), np.nextafter(halves, -np.inf),
        k / 2000.0, rng.uniform(-1, 1, 40_000), rng.uniform(-1e9, 1e9, 40_000),
        rng.uniform(-4e15, 4e15, 40_000), np.ldexp(rng.uniform(0.5, 1, 40_000),
                                                   rng.integers(-30, 52, 40_000)),
    ]
    for col in columns:
        same_as_reference(col)


def test_a_row_of_every_kind_of_column():
    n = 5
    cols = [
        number_cells(np.arange(n)), constant_cells("KTH-SP2.swf", n),
        word_cells(np.array([0, 1, 0, 2, -1]), ("completed", "killed", "", "x")),
        text_cells(["0-15 32-47", "", "3", "é-ü", "1-2"]), constant_cells("", n),
        number_cells(np.array([0.5, 1.0, -2.25, 3.0, 4.0])),
    ]
    want = ref_rows([list(map(str, range(n))), ["KTH-SP2.swf"] * n,
                     ["completed", "killed", "completed", "", "x"],
                     ["0-15 32-47", "", "3", "é-ü", "1-2"], [""] * n,
                     ["0.500", "1", "-2.250", "3", "4"]], ",")
    assert join_rows(cols, b",") == want


def test_no_rows_and_no_columns():
    assert join_rows([number_cells(np.empty(0)), text_cells([])], b" ") == b""
    assert join_rows([], b",") == b""
    assert join_rows([constant_cells("-1", 0)], b",") == b""


def test_separator_and_nul_are_checked():
    with pytest.raises(ValueError):
        join_rows([number_cells(np.arange(3))], b", ")
    with pytest.raises(ValueError):
        join_rows([number_cells(np.arange(3))], b"\0")
    with pytest.raises(ValueError):
        text_cells(["a\0b"])
    with pytest.raises(ValueError):
        word_cells(np.array([0]), ["\0"])


def test_a_few_long_texts_are_joined_apart(monkeypatch):
    """Padding every row to one very long interval set would waste much: those rows are
    joined apart and put back in order (the output is the same)."""
    merges = []
    merge = tc._merge
    monkeypatch.setattr(tc, "_merge", lambda *a: merges.append(1) or merge(*a))
    rng = np.random.default_rng(5)
    n = 3000
    texts = [f"{i}-{i + 3}" for i in range(n)]
    for i in rng.choice(n, 40, replace=False).tolist():
        texts[i] = " ".join(str(2 * j) for j in range(int(rng.integers(50, 800))))
    ids = np.arange(n)
    got = join_rows([number_cells(ids), text_cells(texts), text_cells(texts[::-1]),
                     number_cells(ids * 0.5)], b",")
    assert merges
    assert got == ref_rows([ref_column(ids), texts, texts[::-1], ref_column(ids * 0.5)], ",")


# Random columns: numbers of every kind (ties and near-ties among them), texts of any
# length (a few long) and words.
FLOATS = st.one_of(
    st.floats(width=64), st.integers(-10**15, 10**15).map(lambda k: k / 1000),
    st.integers(-10**12, 10**12).map(lambda k: k / 2000),
    st.integers(-10**9, 10**9).map(lambda k: k / 16),
    st.integers(-2**62, 2**62).map(float), st.sampled_from([0.0, -0.0, 0.5, 1.0, -1.0]),
)
CHARACTERS = st.characters(blacklist_characters="\0", blacklist_categories=("Cs",))
TEXT = st.one_of(st.text(CHARACTERS, max_size=12), st.text(CHARACTERS, min_size=40,
                                                           max_size=300))


@st.composite
def tables(draw):  # noqa: ANN001, ANN201
    n = draw(st.integers(0, 40))
    columns = []
    for kind in draw(st.lists(st.sampled_from(["int", "float", "text", "word", "const"]),
                              min_size=1, max_size=6)):
        if kind == "int":
            values = draw(st.lists(st.integers(INT64.min, INT64.max), min_size=n, max_size=n))
            columns.append(np.array(values, dtype=np.int64))
        elif kind == "float":
            if draw(st.booleans()):  # whole or constant columns take their own paths
                values = draw(st.lists(st.sampled_from([0.0, 3.0, -7.0, 0.25]), min_size=n,
                                       max_size=n))
            else:
                values = draw(st.lists(FLOATS, min_size=n, max_size=n))
            columns.append(np.array(values, dtype=np.float64))
        elif kind == "text":
            columns.append(draw(st.lists(TEXT, min_size=n, max_size=n)))
        elif kind == "word":
            words = draw(st.lists(TEXT, min_size=1, max_size=5))
            columns.append(("words", words, np.array(draw(
                st.lists(st.integers(0, len(words) - 1), min_size=n, max_size=n)), np.int64)))
        else:
            columns.append(("const", draw(TEXT), n))
    return columns


def cells_and_texts(column):  # noqa: ANN001, ANN201
    if isinstance(column, np.ndarray):
        return number_cells(column), ref_column(column)
    if isinstance(column, list):
        return text_cells(column), column
    if column[0] == "words":
        _, words, codes = column
        return word_cells(codes, words), [words[c] for c in codes.tolist()]
    _, text, n = column
    return constant_cells(text, n), [text] * n


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=tables(), sep=st.sampled_from([",", " ", ";"]))
def test_random_tables_are_the_reference_join(table, sep):
    pairs = quietly(lambda: [cells_and_texts(c) for c in table])
    got = join_rows([cells for cells, _ in pairs], sep.encode())
    assert got == ref_rows([texts for _, texts in pairs], sep)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(FLOATS, max_size=60))
def test_random_float_columns(values):
    same_as_reference(np.array(values, dtype=np.float64))


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.integers(INT64.min, INT64.max), max_size=60))
def test_random_integer_columns(values):
    same_as_reference(np.array(values, dtype=np.int64), sep=" ")


@pytest.fixture(scope="module")
def small_run():  # noqa: ANN201
    """300 jobs of the bundled trace with node failures (fractional times) and a record."""
    from schedd.core.cluster import NodePool
    from schedd.core.engine import EngineOptions
    from schedd.policies import make_policy
    from schedd.simulate_cli import sample_path
    from schedd.traces import normalize, read_trace
    from schedd.traces.normalize import select

    trace = select(normalize(read_trace(sample_path())), limit=300)
    cluster = NodePool(trace.max_nodes)
    run = sim.simulate(trace, cluster, make_policy("easy", [], cluster), seed=3,
                       engine_options=EngineOptions(mtbf_s=20 * 3600, mttr_s=600.0),
                       record=True)
    return trace, run


FILES = ("jobs.swf", "jobs.csv", "segments.csv", "timeseries.csv")


def write_all(out, trace, run):  # noqa: ANN001, ANN201
    description = {"policy": "easy", "cluster": "nodes:256", "total_nodes": 256,
                   "trace": "sample.swf"}
    sim.write_outputs(out, trace, run, description)
    return {f: (out / f).read_bytes() for f in FILES}


def test_files_do_not_depend_on_the_block_size(small_run, tmp_path, monkeypatch):
    trace, run = small_run
    whole = write_all(tmp_path / "whole", trace, run)
    monkeypatch.setattr(sim, "BLOCK_ROWS", 7)
    monkeypatch.setattr(run_files, "BLOCK_ROWS", 7)
    assert write_all(tmp_path / "blocks", trace, run) == whole
    assert b"." in whole["jobs.csv"]  # fractional values were written


def test_jobs_csv_is_the_reference(small_run, tmp_path):
    from schedd.core.results import CLASS_CODES, COLUMNS, STATE_CODES

    trace, run = small_run
    res = run.results
    sim.write_jobs_csv(tmp_path / "jobs.csv", res)
    texts = [ref_column(res[name]) for name in COLUMNS]
    texts.append([CLASS_CODES[c] for c in res["job_class"].tolist()])
    texts.append([STATE_CODES[s] for s in res["final_state"].tolist()])
    header = (",".join([*COLUMNS, "class", "state"]) + "\n").encode()
    assert (tmp_path / "jobs.csv").read_bytes() == header + ref_rows(texts, ",")
