# Two commands on a fresh machine with Python 3.11+: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test lint sanitize bench proto clean

# Modules mypyc compiles at install, and the five C modules (setup.py); editing one
# rebuilds, so no stale build runs.
COMPILED := schedd/core/engine.py schedd/core/engine_state.py schedd/core/engine_jobs.py \
            schedd/core/engine_preempt.py schedd/core/engine_elastic.py schedd/core/exec_state.py schedd/core/recorder.py schedd/core/job.py schedd/core/lifecycle.py schedd/core/results.py \
            schedd/core/events.py schedd/core/view.py schedd/core/checkpoint.py schedd/core/node_numbers.py \
            schedd/core/decisions.py schedd/core/spec_rows.py \
            schedd/policies/backfill.py schedd/policies/easy_plain.py schedd/policies/pool_profile.py \
            schedd/policies/agent_rows.py schedd/policies/agent_plain.py schedd/slurm/select.py \
            schedd/slurm/backfill.py schedd/policies/ckpt_backfill.py schedd/policies/wfp2.py \
            schedd/_row_text.c \
            schedd/traces/_whole_numbers.c schedd/core/_lowest_first.c \
            schedd/policies/_easy_plain.c schedd/policies/_agent_obs.c

# compileall: an editable install leaves no bytecode, and where PYTHONDONTWRITEBYTECODE is
# set none is ever written, so every command compiled its modules again (30-40 ms each).
$(STAMP): pyproject.toml constraints.txt setup.py $(COMPILED)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	$(BIN)/python -m compileall -q schedd clients
	touch $(STAMP)

# The daemon on embedded defaults (journal, metrics, no broker), replaying the bundled
# workload at 30,000x; prints the results and where to look.
demo: $(STAMP)
	$(BIN)/python -m schedd_clients.demo --out out/demo

test: $(STAMP) lint
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check schedd clients tests bench experiments
	$(BIN)/mypy

# The five C modules built with AddressSanitizer and UndefinedBehaviorSanitizer into
# build/sanitize (the normal .so files stay), their tests and a fuzz of every entry point
# run on that build (any stray access or undefined behaviour aborts the run), then a
# million calls of each entry point on the normal build with memory flat (tests/native/).
# Python is not instrumented: gcc's libasan is preloaded, and leak detection is off
# (CPython keeps memory to the end on purpose).
SANITIZED := build/sanitize
NATIVE_TESTS := tests/test_row_text.py tests/test_traces_whole_numbers.py \
                tests/test_node_numbers_c.py tests/test_easy_plain_c.py \
                tests/test_gym_plain.py tests/test_native_fuzz.py
# Without gcc and its libasan (the C modules are then not built either) it says so and
# skips, as the tests that need a missing tool do. -s: a sanitizer's report is printed
# as the process aborts, which pytest's capture would swallow.
sanitize: $(STAMP)
	@asan="$$(gcc -print-file-name=libasan.so 2>/dev/null)"; \
	if [ ! -f "$$asan" ]; then \
	    echo "sanitize: skipped: needs gcc with AddressSanitizer's runtime (libasan)" >&2; \
	    exit 0; \
	fi; \
	set -ex; \
	rm -rf $(SANITIZED); \
	$(BIN)/python tests/native/build_sanitized.py $(SANITIZED); \
	PYTHONPATH=tests/native SCHEDD_SANITIZED_DIR=$(SANITIZED) SCHEDD_FUZZ_EXAMPLES=1000 \
	    LD_PRELOAD="$$asan" ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
	    $(BIN)/python -m pytest -p no:cacheprovider -p sanitized -s $(NATIVE_TESTS); \
	$(BIN)/python -m pytest -p no:cacheprovider tests/test_native_leaks.py

bench: $(STAMP)
	$(BIN)/python bench/run.py
	$(BIN)/python bench/plan_sa.py
	$(BIN)/python bench/los_dp.py
	$(BIN)/python bench/daemon.py
	$(BIN)/python bench/snapshot.py
	$(BIN)/python bench/hybrid.py
	$(BIN)/python bench/wcjs.py

# Regenerate the gRPC code from proto/ (the output is committed; CI does not need protoc).
proto: $(STAMP)
	$(BIN)/python -m grpc_tools.protoc -Iproto --python_out=. --grpc_python_out=. \
	    --pyi_out=. proto/schedd/v1/scheduler.proto

clean:
	rm -rf $(VENV) out build .pytest_cache .mypy_cache .ruff_cache .hypothesis
	find schedd -name '*.so' -delete; rm -f *__mypyc*.so
