"""Optional compiled build: mypyc turns the engine's hot modules into C extensions
(about 1.9x faster simulations, measured in docs/benchmarks.md); schedd/_row_text.c
formats the result files' rows (schedd/row_text.py), schedd/traces/_whole_numbers.c
parses SWF rows of whole numbers (schedd/traces/swf.py), schedd/core/_lowest_first.c
numbers a node pool's nodes for segments.csv (schedd/run_files.py),
schedd/policies/_easy_plain.c runs the plain-EASY fast path's loop
(schedd/policies/easy_plain.py), and schedd/policies/_agent_obs.c builds PickJob's
observation on its fast path (schedd/policies/agent_plain.py). The same sources run as plain Python
and NumPy: set SCHEDD_PURE_PYTHON=1, or lack a C compiler, and the build skips both.
Keep these lists in step with COMPILED in the Makefile (edits there trigger a rebuild)."""

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

COMPILED = [
    "schedd/core/engine.py",
    "schedd/core/engine_state.py",
    "schedd/core/engine_jobs.py",
    "schedd/core/engine_preempt.py",
    "schedd/core/engine_elastic.py",
    "schedd/core/exec_state.py",
    "schedd/core/recorder.py",
    "schedd/core/job.py",
    "schedd/core/lifecycle.py",
    "schedd/core/results.py",
    "schedd/core/events.py",
    "schedd/core/view.py",
    "schedd/core/checkpoint.py",
    "schedd/core/node_numbers.py",
    "schedd/core/decisions.py",
    "schedd/core/spec_rows.py",
    "schedd/policies/backfill.py",
    "schedd/policies/easy_plain.py",
    "schedd/policies/agent_rows.py",
    "schedd/policies/agent_plain.py",
    "schedd/policies/pool_profile.py",
    "schedd/slurm/select.py",
    "schedd/slurm/backfill.py",
    "schedd/policies/ckpt_backfill.py",
    "schedd/policies/wfp2.py",
]


class OptionalBuildExt(build_ext):
    """A failed compile leaves the pure-Python modules in charge instead of failing."""

    def run(self):
        try:
            super().run()
        except Exception as err:  # no compiler, missing headers, ...
            print(f"schedd: compiled modules skipped ({err}); using pure Python", file=sys.stderr)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as err:
            print(f"schedd: {ext.name} not compiled ({err})", file=sys.stderr)


# Hand-written C where no library does the job: the result files' row formatter, the
# parser of SWF rows of whole numbers, the lowest-first fit of node numbers, the
# plain-EASY loop and the agent's observation on a plain pool, each ahead of a Python or NumPy path that stays the reference and the
# fallback.
# -ffp-contract=off: no multiply and add fused into one rounding, so that every float is
# the one Python computes.
NATIVE = [Extension(name, [source], extra_compile_args=["-O3", "-ffp-contract=off"])
          for name, source in (
              ("schedd._row_text", "schedd/_row_text.c"),
              ("schedd.traces._whole_numbers", "schedd/traces/_whole_numbers.c"),
              ("schedd.core._lowest_first", "schedd/core/_lowest_first.c"),
              ("schedd.policies._easy_plain", "schedd/policies/_easy_plain.c"),
              ("schedd.policies._agent_obs", "schedd/policies/_agent_obs.c"),
          )]


def ext_modules():
    if os.environ.get("SCHEDD_PURE_PYTHON"):
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        return NATIVE
    return [*mypycify(COMPILED, opt_level="3"), *NATIVE]


setup(ext_modules=ext_modules(), cmdclass={"build_ext": OptionalBuildExt})
