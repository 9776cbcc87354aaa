# SPDX-License-Identifier: Apache-2.0
# The objects, libroce, the four programs (the Makefile's header says which
# and why), the seccomp filters and the man pages.
.PHONY: all man debug

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
# it needs and yajl's static archive (shim/glibc_chk.c: the fortified calls
# that archive makes).  FRONT_CC= (empty), the sanitizers and valgrind: the
# front is linked like the engine, from the same sources.
FRONT_SRC := shim/front_main.c shim/front.c shim/args.c hook/runtime/runtime.c hook/runtime/runtime_record.c hook/spec/policy.c \
             hook/spec/policy_cluster.c hook/spec/policy_fabric.c hook/lib/json.c hook/lib/json_gen.c hook/lib/utils.c \
             hook/lib/error.c hook/lib/ipv4.c hook/lib/mac.c
ifneq ($(FRONT_CC),)
# musl-gcc's own start files (its specs name their folder; -### runs nothing).
MUSL_LIB = $(patsubst %/crti.o,%,$(firstword $(shell $(FRONT_CC) -### -x c /dev/null -o /dev/null 2>&1 | grep -o '[^" ]*/crti\.o')))
FRONT_OBJ := $(FRONT_SRC:%.c=$(BUILD)/obj-musl/%.o) $(BUILD)/obj-musl/shim/glibc_chk.o
# musl-gcc's specs know no -static-pie: its pieces are named.
FRONT_LINK = -nostartfiles -Wl,-static,-pie,--no-dynamic-linker,-z,text,-z,relro,-z,now,--gc-sections \
             $(MUSL_LIB)/rcrt1.o $(MUSL_LIB)/crti.o $(shell $(CC) -print-file-name=crtbeginS.o) \
             $(FRONT_OBJ) $(YAJL_A) -lc \
             $(shell $(CC) -print-file-name=crtendS.o) $(MUSL_LIB)/crtn.o
# yajl's headers only, where pkg-config says they are (a -I/usr/include
# would bring glibc's in).
$(BUILD)/musl-include/yajl:
	@command -v $(FRONT_CC) >/dev/null || { echo "$(FRONT_CC): not found (make deps, as root, installs musl-tools; make FRONT_CC= links the front against glibc)" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(Q)ln -sfn $(or $(shell $(PKG_CONFIG) --variable=includedir yajl 2>/dev/null),/usr/include/yajl) $@

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
