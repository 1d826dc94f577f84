"""QOS priorities: `sacctmgr --parsable2 show qos` output (any columns with its header;
Name and Priority are needed). Slurm's QOS factor is a job's QOS priority over the largest
(`norm_priority`), or the priority itself with PriorityFlags=NO_NORMAL_QOS."""

from __future__ import annotations

from pathlib import Path


class QosError(ValueError):
    """A QOS file that cannot be read (one sentence naming FILE:LINE)."""


def read_qos(path: str | Path) -> dict[str, int]:
    """QOS name -> priority."""
    name = str(path)
    try:
        lines = [(i, line) for i, line in
                 enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1)
                 if line.strip()]
    except (OSError, UnicodeDecodeError) as err:
        raise QosError(f"{name}: cannot read the QOS list ({err})") from None
    if not lines:
        raise QosError(f"{name}: expected sacctmgr --parsable2 output with a header, found "
                       "an empty file")
    head_line, head = lines[0]
    trailing = head.endswith("|")
    columns = [c.strip().lower() for c in (head[:-1] if trailing else head).split("|")]
    for needed in ("name", "priority"):
        if needed not in columns:
            raise QosError(f"{name}:{head_line}: expected a column {needed.capitalize()} "
                           f"(sacctmgr --parsable2 show qos), found {head.strip()}")
    at_name, at_prio = columns.index("name"), columns.index("priority")
    out: dict[str, int] = {}
    for number, line in lines[1:]:
        cells = (line[:-1] if trailing and line.endswith("|") else line).split("|")
        if len(cells) != len(columns):
            raise QosError(f"{name}:{number}: expected {len(columns)} '|'-separated "
                           f"columns, found {len(cells)}")
        text = cells[at_prio].strip() or "0"
        try:
            priority = int(text)
        except ValueError:
            raise QosError(f"{name}:{number}: expected a whole number in column Priority, "
                           f"found {text!r}") from None
        out[cells[at_name].strip()] = priority
    return out
