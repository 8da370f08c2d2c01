# tierkit: `make demo` builds everything and runs the policy comparison; `make test` runs every check.
# Python dependencies come from PyPI only; the Rust extension is built by maturin (release profile).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: all demo test install clean
.PHONY: test-kernel test-shim test-kernel-soak fuzz fuzz-long

all: test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

install: $(BIN)/python
	$(BIN)/python -m pip install -e '.[dev]'
	@command -v valgrind >/dev/null 2>&1 || echo "note: valgrind is not installed; \`tierkit trace record\` needs it (apt-get install valgrind)"

demo: install
	$(BIN)/tierkit demo

test: install
	cargo fmt --all --check
	cargo fmt --manifest-path fuzz/Cargo.toml --check
	cargo clippy --workspace --all-targets -- -D warnings
# promtool (from Debian's prometheus package) checks tierkitd's metrics in its tests
	PROMTOOL=$$(tests/kernel/fetch.sh promtool) cargo test --workspace
	$(BIN)/ruff check python tests
	$(MAKE) test-shim
# the real-kernel tests keep one core busy (a one-vCPU guest under TCG): they run in the
# background beside fuzzing and pytest, and their output is printed when they end
	tests/alongside.sh target/kernel-tests/make-test-kernel.log "$(MAKE) test-kernel" -- \
		sh -c '$(MAKE) fuzz && $(BIN)/python -m pytest -q --durations=20 tests'

# tierkitd's allocation shim (C, LD_PRELOAD) and its tests
test-shim:
	$(MAKE) -C shim test

# fuzz targets (docs/fuzzing.md): experiment TOML, policy specs, the lackey, perf script and DAMON
# importers and the binary trace reader, each from its committed seed corpus, one after another;
# built with cargo and cargo-fuzz's flags on stable Rust (no cargo-fuzz needed). FUZZ_SECONDS is the time per
# target: `make fuzz` (part of make test) 15 by default, `make fuzz-long` 600.
fuzz:
	fuzz/run.sh -t $(or $(FUZZ_SECONDS),15)
fuzz-long:
	fuzz/run.sh -t $(or $(FUZZ_SECONDS),600)

# tierkitd on real kernels in QEMU (installs qemu, busybox and the Debian kernels itself):
# the full suite on 6.12 (DAMON), then the soft-dirty fallback on 6.1 (no DAMON)
test-kernel:
	tests/kernel/run.sh -k 612
	tests/kernel/run.sh -k 61

# reliability runs, not part of `make test`: the suite SOAK_RUNS times and each test alone as often,
# with per-test pass counts (tests/kernel/README.md); SOAK_FLAGS=-al adds a parallel cargo build as load
SOAK_RUNS ?= 5
SOAK_FLAGS ?= -a
test-kernel-soak:
	tests/kernel/soak.sh -k 612 -n $(SOAK_RUNS) $(SOAK_FLAGS)

clean:
	rm -rf $(VENV) demo-out .pytest_cache .ruff_cache fuzz/work fuzz/artifacts
