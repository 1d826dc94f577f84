"""Build the five C modules with AddressSanitizer and UndefinedBehaviorSanitizer into a
folder of their own (`make sanitize`; the normal build's .so files stay as they are).

    python tests/native/build_sanitized.py DIR

DIR then holds DIR/schedd/_row_text.so and so on, which tests/native/sanitized.py (a
pytest plugin) imports in place of the normal build. Python itself is not instrumented,
so the interpreter runs with the sanitizers' runtime preloaded (`make sanitize` sets
LD_PRELOAD to gcc's libasan and ASAN_OPTIONS=detect_leaks=0: CPython keeps much of its
memory to the end on purpose, which the leak checker would report).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULES = {  # module: its source, as setup.py builds them
    "schedd._row_text": "schedd/_row_text.c",
    "schedd.traces._whole_numbers": "schedd/traces/_whole_numbers.c",
    "schedd.core._lowest_first": "schedd/core/_lowest_first.c",
    "schedd.policies._easy_plain": "schedd/policies/_easy_plain.c",
    "schedd.policies._agent_obs": "schedd/policies/_agent_obs.c",
}
# -O1 -g: stacks a report can be read by; -ffp-contract=off as the normal build (the
# same floats as Python); float-cast-overflow is not part of gcc's `undefined`.
FLAGS = ["-O1", "-g", "-fPIC", "-shared", "-ffp-contract=off", "-fno-omit-frame-pointer",
         "-fsanitize=address,undefined,float-cast-overflow", "-fno-sanitize-recover=all",
         "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers",
         "-Werror"]


def build(out: Path) -> list[Path]:
    compiler = shutil.which("gcc")
    if compiler is None:
        sys.exit("build_sanitized: gcc is needed (the sanitizers' runtime is gcc's)")
    include = sysconfig.get_paths()["include"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    made = []
    for module, source in MODULES.items():
        target = out.joinpath(*module.split(".")).with_name(module.rsplit(".", 1)[1] + suffix)
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([compiler, *FLAGS, f"-I{include}", str(ROOT / source), "-o",
                        str(target)], check=True)
        made.append(target)
    return made


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for path in build(Path(sys.argv[1]).resolve()):
        print(f"built {path}")
