"""What a Slurm SubmitLine says about dependencies and node sharing.

sacct's SubmitLine is the command line that submitted the job (`sbatch --exclusive
--dependency=afterok:10 --wrap ...`). Options are read up to `--wrap` (what follows is the
job's own command). Long options may be abbreviated as getopt_long allows (`--depend=`,
`--exclus`), as sbatch, srun and salloc accept them.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

MODELLED = ("afterok", "afterany", "afternotok")
_KINDS = ("after", "afterany", "afterburstbuffer", "aftercorr", "afternotok", "afterok",
          "singleton")
_DEP_ITEM = re.compile(r"([a-z]+)((?::[^:,?]+)*)")


@dataclass
class SubmitOptions:
    dependencies: list[tuple[str, str]] = field(default_factory=list)  # (kind, job id text)
    exclusive: int | None = None  # 1 --exclusive, 0 --oversubscribe, None not said
    bad_dependency: str | None = None  # a --dependency value that could not be read


def submit_options(line: str) -> SubmitOptions:
    """The dependencies (in the order written) and the node-sharing option of a SubmitLine."""
    try:
        words = shlex.split(line)
    except ValueError:  # unbalanced quotes: the options are still blank-separated
        words = line.split()
    out = SubmitOptions()
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "--wrap" or word.startswith("--wrap="):
            break
        name, eq, value = word.partition("=")
        if word == "-d" or (not eq and _long(name, "--dependency", 5)):
            if i >= len(words):
                break
            value, i = words[i], i + 1
            _add_dependencies(out, value)
        elif eq and _long(name, "--dependency", 5):
            _add_dependencies(out, value)
        elif word.startswith("-d") and not word.startswith("--"):  # -dafterok:1
            _add_dependencies(out, word[2:])
        elif _long(name, "--exclusive", 8):
            out.exclusive = 1 if not eq or value == "exclusive" else None
        elif _long(name, "--oversubscribe", 5) or word == "-s":
            out.exclusive = 0
    return out


def _long(name: str, option: str, shortest: int) -> bool:
    """`name` is `option` or an abbreviation getopt_long takes for it (at least
    `shortest` characters, where shorter ones are ambiguous among sbatch's options)."""
    return len(name) >= shortest and option.startswith(name)


def _add_dependencies(out: SubmitOptions, value: str) -> None:
    for item in re.split(r"[,?]", value):
        m = _DEP_ITEM.fullmatch(item)
        if m is None or m.group(1) not in _KINDS:
            out.bad_dependency = value
            return
        kind, ids = m.group(1), m.group(2)
        if kind == "singleton":
            out.dependencies.append((kind, ""))
            continue
        for target in ids.split(":")[1:]:
            out.dependencies.append((kind, target.split("+", 1)[0]))
