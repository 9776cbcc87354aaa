# SPDX-License-Identifier: Apache-2.0
# The tests: the unit-test program and the helpers, the passes of make check
# (tests/README.md says which pass runs what, and why), valgrind, the fuzz
# targets, the sources' layout.
.PHONY: unit integration check check-all conformance conformance-fetch repeat valgrind fuzz format format-check

$(UNIT): $(UNIT_OBJ) $(LIBROCE_TEST) $(GEN_OBJ)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(ALL_LDFLAGS) $(DEPLIBS) $(CRIT_LIBS)

$(BUILD)/helpers/%: tests/helpers/%.c $(LIBROCE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -o $@ $< $(LIBROCE) $(ALL_LDFLAGS) $(DEPLIBS) $(IBVLIBS)

# The unit tests, and every hook and shim run of the integration tests,
# under valgrind (memcheck; definite leaks are errors).  Our programs only:
# the shell commands a fixture runs (mkdir, ln, ip) are not traced (each
# under memcheck cost a second or more, and ip's own leak is not ours).
VALGRIND := valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
            --show-leak-kinds=definite \
            --track-fds=no --trace-children=yes \
            --trace-children-skip='/bin/*,/usr/bin/*,/sbin/*,/usr/sbin/*,*runc*,*crun*,*containerd*,*podman*'
valgrind: deps
	@$(MAKE) --no-print-directory -j$(JOBS) BUILD=build SHIM_STATIC=0 all $(UNIT) $(HELPERS)
	ROCE_UNDER_VALGRIND=1 $(VALGRIND) build/unit-tests --jobs 2 --short-filename
	@ROCE_BUILD=$(abspath build) ROCE_VALGRIND="$(VALGRIND)" ROCE_RUNTIMES=runc ROCE_REPEAT_PASS=1 \
	  ROCE_SCOPE=$(ROCE_SCOPE) tests/run-check --integration-only

# libFuzzer targets (clang): `make fuzz` runs each for FUZZ_SECONDS and
# keeps every crash input in tests/fixtures/fuzz/<target>/.
FUZZ_BUILD := build/fuzz
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
FUZZ_FLAGS := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_OBJ := $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(LIB_SRC) $(SHIM_SRC) tests/fuzz/targets.c $(NRI_PB_C))
$(FUZZ_OBJ): | $(NRI_PB_H)

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZCC  $<")
	$(Q)$(FUZZ_CC) $(CPPFLAGS) -iquote shim -Itests/fuzz -std=gnu11 $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(DEPCFLAGS) -MMD -MP -c -o $@ $<

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJ)
	@$(if $(Q),echo "  FUZZLD  $@")
	$(Q)$(FUZZ_CC) $(CPPFLAGS) -iquote shim -Itests/fuzz $(FUZZ_FLAGS) -fsanitize=fuzzer $(DEPCFLAGS) -o $@ $^ $(DEPLIBS)

fuzz: deps
	@$(MAKE) --no-print-directory -j$(JOBS) $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(JOBS) tests/run-fuzz $(FUZZ_TARGETS)
# The unit tests alone, with their own exit status (the runner is bash:
# make's /bin/sh, dash, has no PIPESTATUS).
unit: $(UNIT)
	@ROCE_BUILD=$(abspath $(BUILD)) tests/run-check --unit-only

integration: all $(HELPERS)
	@ROCE_BUILD=$(abspath $(BUILD)) tests/run-integration

# make check: every test under runc, then under crun the tests of what
# differs by runtime (`# roce-suite: each-runtime`); make debug check: the
# tests of `# roce-suite: memcheck` under ASan/UBSan.  tests/README.md says
# which pass runs what, and why; make check-all runs everything everywhere.
check: deps runtimes-cache
	@tests/lint-waits
	@$(MAKE) --no-print-directory -j$(JOBS) BUILD=$(BUILD) SANITIZE=$(SANITIZE) all $(UNIT) $(HELPERS)
	@ROCE_BUILD=$(abspath $(BUILD)) ROCE_REPEAT_PASS=$(SANITIZE) ROCE_SCOPE=$(ROCE_SCOPE) \
	  ROCE_RUNTIMES="$${ROCE_RUNTIMES:-$(if $(filter 1,$(SANITIZE)),runc,runc crun)}" tests/run-check

# roce-runtime is runc, by two suites this project did not write: OCI
# runtime-tools' validation/*.t and runc's own bats tests, each run with
# runc, roce-runtime and roce-runtime-engine and compared test point by test
# point (tests/conformance/run.sh; tests/README.md).  conformance-fetch
# installs what building them needs (contrib/deps.sh conformance), fetches
# their sources as Debian packages them (apt-get source from the machine's
# mirror, an apt state of its own) and builds them into
# /var/cache/roce-hook/conformance, the only step that needs the mirror; a
# suite it could not fetch or build is skipped with the reason.
conformance-fetch:
	@sh contrib/deps.sh conformance
	@tests/conformance/fetch.sh

conformance: all conformance-fetch
	@ROCE_BUILD=$(abspath $(BUILD)) tests/conformance/run.sh

# Everything, in every pass: each suite under runc and crun, under ASan/UBSan
# and valgrind, the conformance suites, and a long fuzzing run.  Hours; not
# CI's.
check-all: deps
	@$(MAKE) --no-print-directory ROCE_SCOPE=all check
	@$(MAKE) --no-print-directory conformance
	@$(MAKE) --no-print-directory ROCE_SCOPE=all ROCE_RUNTIMES="runc crun" debug check
	@$(MAKE) --no-print-directory ROCE_SCOPE=all valgrind
	@$(MAKE) --no-print-directory fuzz

# make repeat SUITE=net [N=5]: one integration file N times in a row (all
# of them, side by side as make check runs them, without SUITE); stops at
# the first failing round.
N ?= 5
repeat: all $(HELPERS)
	@files="$(if $(SUITE),$(foreach s,$(SUITE),tests/integration/$(s).sh))"; \
	for i in $$(seq $(N)); do \
	  echo "== round $$i of $(N): $(or $(SUITE),every suite)"; \
	  ROCE_BUILD=$(abspath $(BUILD)) tests/run-integration $$files || exit 1; \
	done; echo "repeat: $(or $(SUITE),every suite) passed $(N) rounds in a row"

# The C sources' layout (.clang-format): `make format` rewrites them,
# `make format-check` (CI) lists the files it would change and fails.
FORMAT_SRC = $(shell git ls-files '*.c' '*.h' 2>/dev/null || find hook shim tools tests -name '*.[ch]')
CLANG_FORMAT ?= clang-format
# Twice: clang-format 14 settles a few long string arguments on its second pass.
format:
	@$(CLANG_FORMAT) -i $(FORMAT_SRC) && $(CLANG_FORMAT) -i $(FORMAT_SRC)

format-check:
	@command -v $(CLANG_FORMAT) >/dev/null || { echo "$(CLANG_FORMAT): not found (make deps, as root, installs clang-format)" >&2; exit 1; }
	@bad=0; for f in $(FORMAT_SRC); do \
	  $(CLANG_FORMAT) --dry-run --Werror $$f >/dev/null 2>&1 || { echo "format-check: $$f differs from .clang-format (make format)"; bad=1; }; \
	done; [ $$bad = 0 ] && echo "format-check: $(words $(FORMAT_SRC)) files as .clang-format lays them out"

