# SPDX-License-Identifier: Apache-2.0
# roce-hook's build (GNU make).  `make help` lists every target.
#
# One library and four programs.  build/libroce.a holds every source of
# hook/ and shim/ but the programs' mains; each program is a main over it:
#
#   roce-hook            the OCI hook (prestart, poststop, createRuntime) and
#                        the operator's commands (check, gc, qos, topo, ...).
#                        -static-pie: no ld.so work at exec, a third of a
#                        start's own CPU.  What must load a library (dlopen:
#                        libibverbs for `check`, libcurl for etcd) it hands to
#                        roce-hook-engine (hook/lib/linkage.h says when).
#   roce-hook-engine     the same program linked dynamically.
#   roce-runtime         the runtime shim's front (shim/front.c): musl,
#                        static-pie, a few files; it execs the chained
#                        runtime for a call that needs nothing of ours, and
#                        roce-runtime-engine for the others.  glibc's start-up
#                        costs 0.35-0.95 ms of cpuid VM exits a process.
#   roce-runtime-engine  the shim itself (shim/), -static-pie like roce-hook.
#
# Under the sanitizers (make debug) and valgrind every program is linked
# dynamically and roce-hook does it all itself (SHIM_STATIC=0).  Figures:
# contrib/bench/README.md.
#
#   mk/config.mk   paths, compilers, flags, the libraries (pkg-config)
#   mk/build.mk    objects, libroce, the four programs, seccomp filters, man pages
#   mk/test.mk     unit, integration, check, check-all, conformance, repeat, valgrind, fuzz, format
#   mk/setup.mk    deps, runtimes-cache, demo, bench, install, uninstall, clean
.DEFAULT_GOAL := all

include mk/config.mk
include mk/build.mk
include mk/test.mk
include mk/setup.mk

.PHONY: help
help:
	@echo "As root (a fresh Debian has no sudo):"
	@echo "  make demo          set up a simulated RoCE host and start containers through the hook"
	@echo "  make check         unit and integration tests, a time table at the end (about 12 minutes)"
	@echo "Build:  all (default) man debug (ASan/UBSan into build/debug; with check, bench, demo)"
	@echo "        install uninstall (PREFIX, DESTDIR) clean deps (the Debian packages)"
	@echo "        runtimes-cache (the runtime matrix's newer containerd, Docker, etcd)"
	@echo "Tests:  unit integration check check-all (every suite in every pass: hours)"
	@echo "        repeat SUITE=<file> [N=5] (one integration file N times in a row)"
	@echo "        conformance (runtime-tools' and runc's suites with runc, roce-runtime, its engine)"
	@echo "        valgrind fuzz [FUZZ_SECONDS=60] format format-check bench"
	@echo "Knobs:  V=1 (show commands) JOBS=<n> SANITIZE=1 SHIM_STATIC=0 FRONT_CC= SECCOMP_PREBUILT=0"

-include $(shell find $(BUILD)/obj $(BUILD)/obj-test $(BUILD)/obj-musl $(FUZZ_BUILD)/obj -name '*.d' 2>/dev/null)

# Keep the fuzz objects between runs.
.SECONDARY:
