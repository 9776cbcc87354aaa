# SPDX-License-Identifier: Apache-2.0
# Paths, compilers, flags and the libraries: every variable the other
# fragments use.  Library flags come from pkg-config, evaluated when a rule
# runs (make deps may have just installed the packages).
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

# `make V=1` shows the commands.
ifneq ($(V),1)
Q := @
endif

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

# libcurl: its headers only; the library is dlopen()ed by hook/ipam/etcd.c
# when the policy has `cluster`, as libibverbs is by hook/devices/rdma.c when
# a start lists devices.
# libprotobuf-c: NRI's messages (hook/nri/nri.proto), linked statically.
PKGS := libnl-3.0 libnl-route-3.0 libibverbs yajl libcap libseccomp libcurl libprotobuf-c
DEPCFLAGS = $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
# Start-up is most of an unannotated run's cost: the libraries every run uses
# are linked in statically (no symbol of theirs resolved at exec).  yajl's
# static archive is libyajl_s.a where Debian builds it, libyajl.a elsewhere.
STATIC_PKGS := libnl-route-3.0 libnl-3.0 libcap libseccomp libprotobuf-c
YAJL_A = $(firstword $(wildcard $(addprefix $(shell $(PKG_CONFIG) --variable=libdir yajl 2>/dev/null)/,libyajl_s.a libyajl.a)) -lyajl)
DEPLIBS = -Wl,-Bstatic $(shell $(PKG_CONFIG) --libs $(STATIC_PKGS) 2>/dev/null) -Wl,-Bdynamic $(YAJL_A) -lpthread -lm -ldl
IBVLIBS = $(shell $(PKG_CONFIG) --libs libibverbs 2>/dev/null)
CRIT_CFLAGS = $(shell $(PKG_CONFIG) --cflags criterion 2>/dev/null)
CRIT_LIBS = $(shell $(PKG_CONFIG) --libs criterion 2>/dev/null)

# Headers beside their code, named by folder: #include "net/net.h" (-iquote:
# hook/sys/ never stands in for <sys/...>); the generated ones likewise
# ("nri/nri.pb-c.h" in $(BUILD)/gen).
CPPFLAGS += -iquote hook -iquote $(BUILD)/gen -DROCE_VERSION=\"$(VERSION)\"
ALL_CFLAGS = -std=gnu11 $(OPT) $(WARN) $(HARDEN) $(DEPCFLAGS) $(CFLAGS) -MMD -MP
ALL_LDFLAGS = -pie -Wl,-z,relro,-z,now -Wl,--as-needed $(SANLD) $(LDFLAGS)

# The static programs are linked -static-pie; under the sanitizers and
# valgrind (SHIM_STATIC=0), which need it so, dynamically.
SHIM_STATIC ?= $(if $(filter 1,$(SANITIZE)),0,1)
# The shim's front is linked against musl (Makefile's header says why);
# FRONT_CC= (empty) links it against glibc like the engine.
FRONT_CC ?= $(if $(filter 1,$(SHIM_STATIC)),musl-gcc,)
