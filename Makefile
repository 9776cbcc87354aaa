# SPDX-License-Identifier: Apache-2.0
# roce-hook: plain GNU Makefile.  `make help` lists the targets.
VERSION := 0.1.0
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SYSCONFDIR ?= /etc
HOOKSDIR ?= /usr/share/containers/oci/hooks.d
MANDIR ?= $(PREFIX)/share/man
DESTDIR ?=

CC ?= cc
PKG_CONFIG ?= pkg-config
# Parallel jobs of the builds make check, make debug and make demo start.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# libcurl: its headers; the library is dlopen()ed by hook/ipam/etcd.c only when
# the policy has `cluster` (--as-needed keeps it out of the binaries).
PKGS := libnl-3.0 libnl-route-3.0 libibverbs yajl libcap libseccomp libcurl

# `make debug ...` builds with ASan/UBSan into build/debug; every other target
# given with it (check, bench, demo) then uses that build.
ifneq ($(filter debug,$(MAKECMDGOALS)),)
SANITIZE ?= 1
endif
ifeq ($(SANITIZE),1)
BUILD ?= build/debug
OPT := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
SANLD := -fsanitize=address,undefined
else
BUILD ?= build
OPT := -O2 -g -D_FORTIFY_SOURCE=2
SANLD :=
endif

WARN := -Wall -Wextra -Werror -Wformat=2 -Wshadow -Wpointer-arith -Wstrict-prototypes \
        -Wmissing-prototypes -Wvla -Wno-missing-field-initializers
HARDEN := -fstack-protector-strong -fstack-clash-protection -fPIE -fcf-protection
DEPCFLAGS = $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
# Start-up is most of an unannotated run's cost: the libraries every run uses
# are linked in statically (Debian ships their .a; no symbol of theirs is
# resolved at exec), and libibverbs, which only a start that lists devices
# needs, is loaded then (dlopen, hook/devices/rdma.c).  `make bench` shows the cost.
DEPLIBS = -Wl,-Bstatic -lnl-route-3 -lnl-3 -lyajl_s -lcap -lseccomp -Wl,-Bdynamic -lpthread -lm -ldl
IBVLIBS = $(shell $(PKG_CONFIG) --libs libibverbs 2>/dev/null)
CRIT_CFLAGS = $(shell $(PKG_CONFIG) --cflags criterion 2>/dev/null)
CRIT_LIBS = $(shell $(PKG_CONFIG) --libs criterion 2>/dev/null)

# Headers beside their code, named by folder: #include "net/net.h" (-iquote:
# hook/sys/ never stands in for <sys/...>).
CPPFLAGS += -iquote hook -DROCE_VERSION=\"$(VERSION)\"
ALL_CFLAGS = -std=gnu11 $(OPT) $(WARN) $(HARDEN) $(DEPCFLAGS) $(CFLAGS) -MMD -MP
ALL_LDFLAGS = -pie -Wl,-z,relro,-z,now -Wl,--as-needed $(SANLD) $(LDFLAGS)

# libroce: every source of hook/ but the programs' mains (the stages, the
# steps, the commands), linked by all four programs.
LIB_SRC := $(filter-out hook/main.c hook/static_libc.c,$(wildcard hook/*.c hook/*/*.c hook/*/*/*.c))
# The static programs' stand-ins for glibc's NSS and loader (hook/static_libc.c).
STATIC_LIBC_OBJ := $(BUILD)/obj/hook/static_libc.o
# Its _dl_get_origin (no readlink of /proc/self/exe at start-up) only where a
# static program links with one of its own: from glibc 2.42 the object that
# defines glibc's also defines what its loader always needs, and the two
# would clash.  Probed when the object is built.
DL_ORIGIN_STUB = $(shell printf 'const char *_dl_get_origin (void) { return (const char *) -1; }\nint main (void) { return 0; }\n' \
  | $(CC) -x c -static-pie -o /dev/null - >/dev/null 2>&1 && echo -DROCE_DL_ORIGIN_STUB)
$(STATIC_LIBC_OBJ): CPPFLAGS += $(DL_ORIGIN_STUB)
SHIM_SRC := $(filter-out shim/main.c shim/front_main.c shim/glibc_chk.c,$(wildcard shim/*.c))
UNIT_SRC := $(wildcard tests/unit/*.c) tests/fuzz/targets.c
HELPER_SRC := $(wildcard tests/helpers/*.c)

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
SHIM_OBJ := $(SHIM_SRC:%.c=$(BUILD)/obj/%.o)
UNIT_OBJ := $(UNIT_SRC:%.c=$(BUILD)/obj/%.o)
HELPERS := $(HELPER_SRC:tests/helpers/%.c=$(BUILD)/helpers/%) $(BUILD)/helpers/roce-hook-test $(BUILD)/helpers/roce-runtime-test
# The test build: the same library with -DROCE_TEST_HOOKS (the crash points
# that kill a hook mid-way), for the unit tests and the crash tests only.
TEST_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj-test/%.o) $(SHIM_SRC:%.c=$(BUILD)/obj-test/%.o)
LIBROCE_TEST := $(BUILD)/libroce-test.a

LIBROCE := $(BUILD)/libroce.a
# The seccomp filters, exported at build time by tools/seccomp-gen from
# hook/sys/confine.c (building them with libseccomp cost every start and stop
# 0.13 ms).  A cross build, which cannot run the generator, sets
# SECCOMP_PREBUILT=0: the filters are then built at run time.
SECCOMP_PREBUILT ?= 1
ifeq ($(SECCOMP_PREBUILT),1)
GEN_OBJ := $(BUILD)/obj/gen/seccomp.o
endif
HOOK := $(BUILD)/roce-hook
HOOK_ENGINE := $(BUILD)/roce-hook-engine
SHIM := $(BUILD)/roce-runtime
SHIM_ENGINE := $(BUILD)/roce-runtime-engine
UNIT := $(BUILD)/unit-tests

.PHONY: valgrind all man debug check check-all repeat unit integration deps runtimes-cache install uninstall demo bench clean help fuzz
.DEFAULT_GOAL := all

all: $(HOOK) $(HOOK_ENGINE) $(SHIM) $(SHIM_ENGINE) man

# The man pages: docs/<name>.<section>.md, markdown for go-md2man (Debian's
# go-md2man), into $(BUILD)/man/<name>.<section>.
MAN_SRC := $(wildcard docs/*.[1-8].md)
MAN_OUT := $(MAN_SRC:docs/%.md=$(BUILD)/man/%)
GO_MD2MAN ?= go-md2man

man: $(MAN_OUT)

$(BUILD)/man/%: docs/%.md
	@command -v $(GO_MD2MAN) >/dev/null || { echo "$(GO_MD2MAN): not found (make deps, as root, installs go-md2man)" >&2; exit 1; }
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  MAN     $@")
	$(Q)$(GO_MD2MAN) -in $< -out $@.tmp && mv $@.tmp $@

debug: deps
	@$(MAKE) --no-print-directory -j$(JOBS) BUILD=$(BUILD) SANITIZE=$(SANITIZE) all $(UNIT) $(HELPERS)
	@echo "sanitizer build in $(BUILD)/"

# `make V=1` shows the commands.
ifneq ($(V),1)
Q := @
endif

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/obj/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) -DROCE_TEST_HOOKS -iquote shim -Itests/unit -Itests/fuzz -DFIXTURES=\"$(abspath tests/fixtures)\" $(ALL_CFLAGS) $(CRIT_CFLAGS) -c -o $@ $<

$(BUILD)/obj-test/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $< (test build)")
	$(Q)$(CC) $(CPPFLAGS) -DROCE_TEST_HOOKS $(ALL_CFLAGS) -c -o $@ $<

$(LIBROCE_TEST): $(TEST_OBJ)
	@mkdir -p $(dir $@)
	$(Q)rm -f $@
	$(Q)$(AR) rcs $@ $^

$(BUILD)/tools/seccomp-gen: tools/seccomp-gen.c $(LIBROCE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -o $@ $< $(LIBROCE) $(ALL_LDFLAGS) $(DEPLIBS)

$(BUILD)/gen/seccomp.c: $(BUILD)/tools/seccomp-gen
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)$< > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/gen/seccomp.o: $(BUILD)/gen/seccomp.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/helpers/roce-hook-test: $(BUILD)/obj-test/hook/main.o $(LIBROCE_TEST) $(GEN_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(ALL_LDFLAGS) $(DEPLIBS)

# The shim's engine of the test build (its pause points: tests/integration/liveness.sh).
$(BUILD)/helpers/roce-runtime-test: $(BUILD)/obj-test/shim/main.o $(LIBROCE_TEST) $(GEN_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(ALL_LDFLAGS) $(DEPLIBS)

$(LIBROCE): $(LIB_OBJ) $(SHIM_OBJ)
	@mkdir -p $(dir $@)
	$(Q)rm -f $@
	$(Q)$(AR) rcs $@ $^

# roce-hook-engine: the hook linked dynamically, for what loads a library
# (dlopen: libibverbs for `check`, etcd's libcurl); roce-hook hands it those.
$(HOOK_ENGINE): $(BUILD)/obj/hook/main.o $(LIBROCE) $(GEN_OBJ)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(ALL_LDFLAGS) $(DEPLIBS)

# roce-runtime runs before every runtime call (containerd makes five a
# container): linked -static-pie, it has no ld.so work at exec (about a third
# of its pass-through cost here, `contrib/bench/shim.sh`).  It links no
# libibverbs, libnl or dlopen (hook/devices/rdma_nodes.c reads sysfs).  Dynamic
# under the sanitizers and valgrind (SHIM_STATIC=0), which need it so; the
# stamp relinks it when that changes.
SHIM_STATIC ?= $(if $(filter 1,$(SANITIZE)),0,1)
SHIM_LINK := $(if $(filter 1,$(SHIM_STATIC)),-static-pie,)
comma := ,
SHIM_LDFLAGS = $(if $(SHIM_LINK),$(filter-out -pie,$(ALL_LDFLAGS)) $(SHIM_LINK) \
               $(filter-out -Wl$(comma)-Bstatic -Wl$(comma)-Bdynamic,$(DEPLIBS)),$(ALL_LDFLAGS) $(DEPLIBS))
$(BUILD)/shim-link.stamp: FORCE
	@mkdir -p $(dir $@)
	@echo '$(SHIM_LINK)' | cmp -s - $@ 2>/dev/null || echo '$(SHIM_LINK)' > $@
.PHONY: FORCE

# roce-hook: linked -static-pie as the shim's engine is (no ld.so work at
# exec: 0.34 ms of CPU a run here, a third of a start's own time); what
# needs dlopen it hands to roce-hook-engine (hook/lib/linkage.h).  Under the
# sanitizers and valgrind it is linked dynamically and does it all itself.
$(BUILD)/obj/hook/main-static.o: hook/main.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $< (static roce-hook)")
	$(Q)$(CC) $(CPPFLAGS) -DROCE_HOOK_STATIC $(ALL_CFLAGS) -c -o $@ $<

ifeq ($(SHIM_STATIC),1)
$(HOOK): $(BUILD)/obj/hook/main-static.o $(STATIC_LIBC_OBJ) $(LIBROCE) $(GEN_OBJ) $(BUILD)/shim-link.stamp
	@$(if $(Q),echo "  LD      $@ (static-pie)")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter-out %.stamp,$^) $(SHIM_LDFLAGS)
else
$(HOOK): $(BUILD)/obj/hook/main.o $(LIBROCE) $(GEN_OBJ) $(BUILD)/shim-link.stamp
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter-out %.stamp,$^) $(ALL_LDFLAGS) $(DEPLIBS)
endif

$(SHIM_ENGINE): $(BUILD)/obj/shim/main.o $(if $(SHIM_LINK),$(STATIC_LIBC_OBJ)) $(LIBROCE) $(GEN_OBJ) $(BUILD)/shim-link.stamp
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter-out %.stamp,$^) $(SHIM_LDFLAGS)

# roce-runtime itself is the front (shim/front.c): it execs the runtime for
# the calls that need nothing of the engine, the engine for the others.
# glibc's start-up probes the CPU with `cpuid` (about a hundred of them, a
# VM exit each: 0.35-0.95 ms a process on the VMs measured); musl's does
# not, so the front is linked against musl, static-pie, with the few files
# it needs and Debian's libyajl_s.a (shim/glibc_chk.c: the fortified calls
# that archive makes).  FRONT_CC= (empty), the sanitizers and valgrind: the
# front is linked like the engine, from the same sources.
FRONT_CC ?= $(if $(filter 1,$(SHIM_STATIC)),musl-gcc,)
FRONT_SRC := shim/front_main.c shim/front.c shim/args.c hook/runtime/runtime.c hook/runtime/runtime_record.c hook/spec/policy.c \
             hook/spec/policy_cluster.c hook/spec/policy_fabric.c hook/lib/json.c hook/lib/json_gen.c hook/lib/utils.c \
             hook/lib/error.c hook/lib/ipv4.c hook/lib/mac.c
ifneq ($(FRONT_CC),)
MUSL_LIB := /usr/lib/x86_64-linux-musl
FRONT_OBJ := $(FRONT_SRC:%.c=$(BUILD)/obj-musl/%.o) $(BUILD)/obj-musl/shim/glibc_chk.o
# musl-gcc's specs know no -static-pie: its pieces are named.
FRONT_LINK = -nostartfiles -Wl,-static,-pie,--no-dynamic-linker,-z,text,-z,relro,-z,now,--gc-sections \
             $(MUSL_LIB)/rcrt1.o $(MUSL_LIB)/crti.o $(shell $(CC) -print-file-name=crtbeginS.o) \
             $(FRONT_OBJ) $(shell $(CC) -print-file-name=libyajl_s.a) -lc \
             $(shell $(CC) -print-file-name=crtendS.o) $(MUSL_LIB)/crtn.o
# yajl's headers only (a -I/usr/include would bring glibc's in).
$(BUILD)/musl-include/yajl:
	@command -v $(FRONT_CC) >/dev/null || { echo "$(FRONT_CC): not found (make deps, as root, installs musl-tools; make FRONT_CC= links the front against glibc)" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(Q)ln -sfn /usr/include/yajl $@

$(BUILD)/obj-musl/%.o: %.c | $(BUILD)/musl-include/yajl
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  MUSLCC  $<")
	$(Q)$(FRONT_CC) $(CPPFLAGS) -isystem $(BUILD)/musl-include -isystem $(BUILD)/musl-include/yajl \
	  -std=gnu11 -O2 -g $(WARN) $(HARDEN) -ffunction-sections -fdata-sections $(CFLAGS) -MMD -MP -c -o $@ $<

$(SHIM): $(FRONT_OBJ) $(BUILD)/shim-link.stamp
	@$(if $(Q),echo "  LD      $@ (musl)")
	$(Q)$(FRONT_CC) -o $@ $(FRONT_LINK) $(LDFLAGS)
else
$(SHIM): $(BUILD)/obj/shim/front_main.o $(LIBROCE) $(BUILD)/shim-link.stamp
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter-out %.stamp,$^) $(SHIM_LDFLAGS)
endif

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
FUZZ_OBJ := $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(LIB_SRC) $(SHIM_SRC) tests/fuzz/targets.c)

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZCC  $<")
	$(Q)$(FUZZ_CC) $(CPPFLAGS) -iquote shim -Itests/fuzz -std=gnu11 $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(DEPCFLAGS) -c -o $@ $<

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJ)
	@$(if $(Q),echo "  FUZZLD  $@")
	$(Q)$(FUZZ_CC) $(CPPFLAGS) -iquote shim -Itests/fuzz $(FUZZ_FLAGS) -fsanitize=fuzzer $(DEPCFLAGS) -o $@ $^ $(DEPLIBS)

fuzz: deps
	@$(MAKE) --no-print-directory -j$(JOBS) $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(JOBS) tests/run-fuzz $(FUZZ_TARGETS)

# Installs the Debian packages the build, the tests and the demo need; a
# no-op when they are all there.
deps:
	@sh contrib/deps.sh

# The runtime matrix's packages (containerd 2.1 and 1.7, Docker 28, etcd
# 3.5 from Debian's newer suites), fetched by name and version into a cache
# and unpacked there, never installed; quick when the cache is warm, and a
# version the mirror lacks is said, never a failure (tests/README.md).
runtimes-cache:
	@tests/helpers/newer-runtimes.sh fetch

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

# Everything, in every pass: each suite under runc and crun, under ASan/UBSan
# and valgrind, and a long fuzzing run.  Hours; not CI's.
check-all: deps
	@$(MAKE) --no-print-directory ROCE_SCOPE=all check
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

demo: deps
	@$(MAKE) --no-print-directory -j$(JOBS) BUILD=$(BUILD) SANITIZE=$(SANITIZE) all $(HELPERS)
	@ROCE_BUILD=$(abspath $(BUILD)) contrib/demo/demo.sh

bench: all $(HELPERS)
	@ROCE_BUILD=$(abspath $(BUILD)) contrib/bench/bench.sh

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SYSCONFDIR)/roce-hook $(DESTDIR)$(HOOKSDIR)
	install -m 0755 $(HOOK_ENGINE) $(HOOK) $(SHIM_ENGINE) $(DESTDIR)$(BINDIR)/
	install -m 0755 $(SHIM) $(DESTDIR)$(BINDIR)/
	test -e $(DESTDIR)$(SYSCONFDIR)/roce-hook/config.json || \
	  install -m 0644 config/config.json $(DESTDIR)$(SYSCONFDIR)/roce-hook/config.json
	for f in config/hooks.d/*.json; do \
	  sed 's|/usr/local/bin/roce-hook|$(BINDIR)/roce-hook|' $$f > $(DESTDIR)$(HOOKSDIR)/$$(basename $$f); \
	  chmod 0644 $(DESTDIR)$(HOOKSDIR)/$$(basename $$f); \
	done
	for m in $(MAN_OUT); do \
	  s=$${m##*.}; install -d $(DESTDIR)$(MANDIR)/man$$s; \
	  install -m 0644 $$m $(DESTDIR)$(MANDIR)/man$$s/; \
	done

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/roce-hook $(DESTDIR)$(BINDIR)/roce-hook-engine $(DESTDIR)$(BINDIR)/roce-runtime \
	      $(DESTDIR)$(BINDIR)/roce-runtime-engine \
	      $(DESTDIR)$(HOOKSDIR)/roce-hook-prestart.json $(DESTDIR)$(HOOKSDIR)/roce-hook-poststop.json
	for m in $(MAN_SRC:docs/%.md=%); do rm -f $(DESTDIR)$(MANDIR)/man$${m##*.}/$$m; done

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

clean:
	rm -rf build

help:
	@echo "As root (a fresh Debian has no sudo):"
	@echo "  make demo          set up a simulated RoCE host and start containers through the hook"
	@echo "  make check         unit and integration tests, a time table at the end (about 12 minutes)"
	@echo "Build:  all (default) man debug (ASan/UBSan into build/debug; with check, bench, demo)"
	@echo "        install uninstall (PREFIX, DESTDIR) clean deps (the Debian packages)"
	@echo "        runtimes-cache (the runtime matrix's newer containerd, Docker, etcd)"
	@echo "Tests:  unit integration check check-all (every suite in every pass: hours)"
	@echo "        repeat SUITE=<file> [N=5] (one integration file N times in a row)"
	@echo "        valgrind fuzz [FUZZ_SECONDS=60] format format-check bench"

-include $(shell find $(BUILD)/obj $(BUILD)/obj-test $(BUILD)/obj-musl -name '*.d' 2>/dev/null)

# Keep the fuzz objects between runs.
.SECONDARY:
