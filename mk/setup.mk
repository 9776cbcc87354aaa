# SPDX-License-Identifier: Apache-2.0
# Setting up and using a build: the Debian packages, the newer runtimes' cache,
# the demo, the benchmarks, install and uninstall.
.PHONY: deps runtimes-cache demo bench install uninstall clean

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

clean:
	rm -rf build

