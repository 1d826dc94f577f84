"""Every markdown table the project writes is well-formed: in README.md, docs/*.md and
the output of `schedd compare --markdown`, the header and delimiter rows have the same
number of cells (GitHub renders nothing of a table where they differ) and every body row
has that many cells too. Cells are split as GitHub does: on `|` not escaped as `\\|`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DELIMITER_CELL = re.compile(r"\s*:?-+:?\s*")
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def cells(row: str) -> list[str]:
    """The cells of one table row (outer pipes optional, `\\|` stays inside a cell)."""
    body = row.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return re.split(r"(?<!\\)\|", body)


def tables(text: str) -> list[tuple[int, list[str]]]:
    """(first line number, rows) of every table: a row followed by a delimiter row; code
    blocks are skipped."""
    lines = text.splitlines()
    found, fenced, i = [], False, 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif (not fenced and "|" in line and i + 1 < len(lines)
              and lines[i + 1].strip().startswith("|")
              and all(DELIMITER_CELL.fullmatch(c) for c in cells(lines[i + 1]))):
            start, rows = i, [line]
            i += 1
            while i < len(lines) and lines[i].strip().startswith("|"):
                rows.append(lines[i])
                i += 1
            found.append((start + 1, rows))
            continue
        i += 1
    return found


def problems(text: str, where: str) -> list[str]:
    out = []
    for line, rows in tables(text):
        width = len(cells(rows[0]))
        for k, row in enumerate(rows[1:], start=1):
            n = len(cells(row))
            if n != width:
                what = "delimiter row" if k == 1 else f"row {k + 1}"
                out.append(f"{where}:{line + k}: {what} has {n} cells, the header {width}")
    return out


def test_the_checker_sees_a_bad_table():
    bad = "| a | b |\n|---|---|---|\n| 1 | 2 |\n"
    assert problems(bad, "x") == ["x:2: delimiter row has 3 cells, the header 2"]
    body = "| a | b |\n|---|---|\n| 1 | 2 | 3 |\n"
    assert problems(body, "x") == ["x:3: row 3 has 3 cells, the header 2"]
    escaped = "| a \\| b | c |\n|---|---|\n| `x \\| y` | 2 |\n"
    assert problems(escaped, "x") == []
    fenced = "```\n| a |\n|---|---|\n```\n"
    assert tables(fenced) == []


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_doc_tables_are_well_formed(path: Path):
    assert problems(path.read_text(), str(path.relative_to(ROOT))) == []


def test_compare_markdown_tables_are_well_formed(tmp_path, shared_traces):
    trace = tmp_path / "mira120.swf"
    lines = (shared_traces / "mira_2018_wk1_cobalt2swf.swf").read_text().splitlines()
    jobs = [ln for ln in lines if not ln.startswith(";")][:120]
    trace.write_text("\n".join([ln for ln in lines if ln.startswith(";")] + jobs) + "\n")
    md = tmp_path / "compare.md"
    proc = subprocess.run([sys.executable, "-m", "schedd", "compare", "--trace", str(trace),
                           "--cluster", "mira", "--percent", "10", "--trials", "1",
                           "--run", "easy", "--run", "wcjs ckpt=jit", "--workers", "1",
                           "--markdown", str(md)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = md.read_text()
    assert len(tables(text)) >= 2, text
    assert problems(text, "schedd compare --markdown") == []
