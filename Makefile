# Zaris — one Makefile for everything.
#
#   make            build zarisd, zaris-supervisor, zarisctl, zaris-bench, unit tests
#   make run        install missing Debian packages, build, run zarisd on 127.0.0.1:6379
#   make test       install missing Debian packages, build, run every test with prove
#   make asan       the same suite against an AddressSanitizer+UBSan build
#   make tsan       the same suite against a ThreadSanitizer build
#
# Every output goes under $(BUILD) (default build/), so several builds
# (plain, asan, tsan) live side by side; tests find the binaries through
# ZARIS_BUILD.

BUILD   ?= build
SAN     ?=
CC      ?= cc
VERSION := 0.1.0

CFLAGS_COMMON := -std=gnu11 -g -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter \
                 -D_GNU_SOURCE -DZARIS_VERSION='"$(VERSION)"' -pthread -I. -I/usr/include/lua5.1 -MMD -MP
OPT     ?= -O2
LDLIBS_COMMON := -pthread -lm
JEMALLOC := -ljemalloc

ifeq ($(SAN),asan)
  OPT      := -O1
  CFLAGS_COMMON += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -DZR_SANITIZED
  LDLIBS_COMMON += -fsanitize=address,undefined
  JEMALLOC :=
endif
ifeq ($(SAN),tsan)
  OPT      := -O1
  CFLAGS_COMMON += -fsanitize=thread -fno-omit-frame-pointer -DZR_SANITIZED
  LDLIBS_COMMON += -fsanitize=thread
  JEMALLOC :=
endif

CFLAGS  := $(CFLAGS_COMMON) $(OPT) $(EXTRA_CFLAGS)

# --- sources (each folder is globbed, so adding a file needs no edit here) ---
# zarisd/client/ is libzaris (its own rules below), not part of the server
ZARISD_ALL   := $(shell find zarisd -name '*.c' -not -path 'zarisd/client/*' | sort)
ZARISD_MAIN  := zarisd/main.c
ZARISD_LIB   := $(filter-out $(ZARISD_MAIN),$(ZARISD_ALL))
CONFIG_SRC   := $(sort $(wildcard config/*.c))
SUP_ALL      := $(sort $(wildcard supervisor/*.c))
CTL_MAIN     := supervisor/zarisctl.c
SUP_MAIN     := supervisor/main.c
SUP_LIB      := $(filter-out $(CTL_MAIN) $(SUP_MAIN),$(SUP_ALL))
BENCH_ALL    := $(sort $(wildcard bench/*.c))
UNIT_SRC     := $(sort $(wildcard tests/unit/*.c))
# libzaris (zarisd/client/): the native protocol's C client; example.c is
# its example program, not part of it
LIBZARIS_SRC := $(filter-out zarisd/client/example.c,$(sort $(wildcard zarisd/client/*.c)))
NATIVE_SRC   := $(sort $(wildcard tests/native/*.c))

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

ZARISD_LIB_A := $(BUILD)/libzarisd.a
ZCONF_A      := $(BUILD)/libzconf.a
SUP_LIB_A    := $(BUILD)/libzsup.a

ZARISD_LIBS  := -luring -lxxhash $(JEMALLOC) -lconfig -llua5.1 -llua5.1-cjson -llua5.1-bitop
SUP_LIBS     := -lconfig -lsystemd -lcurl -ljson-c

BINS := $(BUILD)/zarisd
ifneq ($(wildcard $(SUP_MAIN)),)
  BINS += $(BUILD)/zaris-supervisor
endif
ifneq ($(wildcard $(CTL_MAIN)),)
  BINS += $(BUILD)/zarisctl
endif
ifneq ($(BENCH_ALL),)
  BINS += $(BUILD)/zaris-bench
endif
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/unit/%.t,$(UNIT_SRC))
LIBZARIS := $(BUILD)/libzaris.so.1 $(BUILD)/libzaris.so $(BUILD)/libzaris.a $(BUILD)/zaris.pc \
            $(BUILD)/zaris-example
NATIVE_BINS := $(patsubst tests/native/%.c,$(BUILD)/native/%,$(NATIVE_SRC))

.PHONY: all run test asan tsan deps clean format
all: $(BINS) $(UNIT_BINS) $(LIBZARIS) $(NATIVE_BINS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(ZARISD_LIB_A): $(call obj,$(ZARISD_LIB))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# Cluster node ids are SHA-1 digests (config/zconf_slots.c): core/sha1
# (pure) joins config's archive.
CONFIG_CORE  := zarisd/core/sha1.c

$(ZCONF_A): $(call obj,$(CONFIG_SRC) $(CONFIG_CORE))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The supervisor reads replies with zarisd's RESP reply reader (pure, no
# I/O): its object joins the supervisor's archive.
SUP_PROTO    := zarisd/proto/resp_reader.c

$(SUP_LIB_A): $(call obj,$(SUP_LIB) $(SUP_PROTO))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# zarisd links every object itself (not through the archive), so that
# nothing depends on which archive members a reference happens to pull in.
$(BUILD)/zarisd: $(call obj,$(ZARISD_ALL)) $(ZCONF_A)
	$(CC) -o $@ $^ $(ZARISD_LIBS) $(LDLIBS_COMMON)

$(BUILD)/zaris-supervisor: $(call obj,$(SUP_MAIN)) $(SUP_LIB_A) $(ZCONF_A)
	$(CC) -o $@ $^ $(SUP_LIBS) $(LDLIBS_COMMON)

$(BUILD)/zarisctl: $(call obj,$(CTL_MAIN)) $(SUP_LIB_A) $(ZCONF_A)
	$(CC) -o $@ $^ $(SUP_LIBS) $(LDLIBS_COMMON)

# The bench links zarisd's library (its --serve floor runs on zarisd's own
# loop) and libzaris (--native; its internal names are zc_*, so the two mix).
$(BUILD)/zaris-bench: $(call obj,$(BENCH_ALL)) $(ZARISD_LIB_A) $(ZCONF_A) $(BUILD)/libzaris.a
	$(CC) -o $@ $^ $(ZARISD_LIBS) $(LDLIBS_COMMON)

# A unit test may #include the module's .c to reach statics, so it links only
# the libraries (the linker takes just the objects not already defined;
# the supervisor's before config/, whose loader it calls).
$(BUILD)/unit/%.t: $(BUILD)/obj/tests/unit/%.o $(ZARISD_LIB_A) $(SUP_LIB_A) $(ZCONF_A)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(ZARISD_LIBS) $(SUP_LIBS) $(LDLIBS_COMMON)

# libzaris's own unit tests link the library only (its internal headers
# reach what they test); the more specific pattern wins over the one above.
$(BUILD)/unit/zaris_client%.t: $(BUILD)/obj/tests/unit/zaris_client%.o $(BUILD)/libzaris.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDLIBS_COMMON)

# --- libzaris ---------------------------------------------------------------------
# One set of position-independent objects makes both libraries. The shared
# one exports zaris.h's functions only (libzaris.map); the archive's
# internal names are zc_* (keyslot.c compiled in as zc_keyslot.c), so a
# program may link it beside zarisd's objects.
LIBZARIS_MAJOR := 1
MULTIARCH ?= $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || $(CC) -print-multiarch)
PREFIX  ?= /usr
LIBDIR  ?= $(PREFIX)/lib/$(MULTIARCH)
INCLUDEDIR ?= $(PREFIX)/include
LIBZARIS_PIC := $(patsubst %.c,$(BUILD)/pic/%.o,$(LIBZARIS_SRC))

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -c $< -o $@

$(BUILD)/libzaris.a: $(LIBZARIS_PIC)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libzaris.so.$(LIBZARIS_MAJOR): $(LIBZARIS_PIC) zarisd/client/libzaris.map
	$(CC) -shared -Wl,-soname,libzaris.so.$(LIBZARIS_MAJOR) -Wl,--version-script=zarisd/client/libzaris.map \
		-Wl,-z,relro -Wl,-z,now -o $@ $(LIBZARIS_PIC) $(LDLIBS_COMMON)

$(BUILD)/libzaris.so: $(BUILD)/libzaris.so.$(LIBZARIS_MAJOR)
	ln -sf libzaris.so.$(LIBZARIS_MAJOR) $@

$(BUILD)/zaris.pc: zarisd/client/zaris.pc.in Makefile
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
		-e 's|@VERSION@|$(VERSION)|' $< > $@

# the example, built against the tree (client_package.t builds it again
# against the installed package)
$(BUILD)/zaris-example: zarisd/client/example.c $(BUILD)/libzaris.a
	$(CC) $(CFLAGS) -Izarisd/client -o $@ $< $(BUILD)/libzaris.a $(LDLIBS_COMMON)

# test drivers of tests/native/ (run by the .t files beside them)
$(BUILD)/native/%: $(BUILD)/obj/tests/native/%.o $(BUILD)/libzaris.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDLIBS_COMMON)

.PHONY: install-lib
# make install-lib DESTDIR=/some/root: the library, its header and .pc
install-lib: $(LIBZARIS)
	install -D -m 0644 $(BUILD)/libzaris.so.$(LIBZARIS_MAJOR) $(DESTDIR)$(LIBDIR)/libzaris.so.$(LIBZARIS_MAJOR)
	ln -sf libzaris.so.$(LIBZARIS_MAJOR) $(DESTDIR)$(LIBDIR)/libzaris.so
	install -D -m 0644 $(BUILD)/libzaris.a $(DESTDIR)$(LIBDIR)/libzaris.a
	install -D -m 0644 zarisd/client/zaris.h $(DESTDIR)$(INCLUDEDIR)/zaris/zaris.h
	install -D -m 0644 $(BUILD)/zaris.pc $(DESTDIR)$(LIBDIR)/pkgconfig/zaris.pc

# Keep unit-test objects: they are intermediate files to make, but
# rebuilding them on every run is wasted time.
.SECONDARY:

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# --- Debian packages the build and the tests need -----------------------------
DEPS_BUILD := build-essential pkg-config liburing-dev libjemalloc-dev libconfig-dev \
              libsystemd-dev libxxhash-dev libcurl4-openssl-dev libjson-c-dev \
              liblua5.1-0-dev lua-cjson-dev lua-bitop-dev
DEPS_TEST  := redis-server redis-tools python3 python3-redis perl procps iproute2 clang-format \
              libclang-rt-14-dev gnuplot-nox ruby ruby-redis etcd-server etcd-client nftables
DEPS := $(DEPS_BUILD) $(DEPS_TEST) $(EXTRA_DEPS)
# Installs only what is missing; apt-get update runs only when something is.
deps:
	@missing=$$(for p in $(DEPS); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed$$' || echo $$p; \
	  done); \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$(echo $$missing | tr '\n' ' ')"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi

# --- running --------------------------------------------------------------------
run: deps all
	$(BUILD)/zarisd --port 6379 --bind 127.0.0.1

PROVE ?= prove
# -j4 on a 2-core machine: the tests mostly wait (for the processes they
# start, fsync, leases, timeouts); at -j2 the CPUs were half idle.
PROVE_FLAGS ?= -r -j4 --timer
# LSAN_OPTIONS matters only to ASan builds: tests/lsan.supp lists leaks
# inside libraries we cannot fix (libconfig 1.5).
TEST_ENV = ZARIS_BUILD=$(abspath $(BUILD)) ZARIS_SAN=$(SAN) \
	LSAN_OPTIONS="suppressions=$(abspath tests/lsan.supp) $(LSAN_OPTIONS)"
ifeq ($(SAN),)
# The whole suite runs once with the default io backend (io_uring where
# available); the integration tests then run again on the epoll backend.
test: deps all
	$(TEST_ENV) $(PROVE) $(PROVE_FLAGS) tests/
	$(TEST_ENV) ZARIS_IO_BACKEND=epoll $(PROVE) $(PROVE_FLAGS) tests/integration/
else
# A sanitizer build runs the whole suite once: half of the integration
# tests (by their name's checksum) on epoll, the rest on the default
# backend, and asan and tsan take opposite halves, so that every test
# meets each backend under one of the two sanitizers. Running both
# backends under both would double their share of CI's time limit.
SAN_HALF = $(if $(filter tsan,$(SAN)),1,0)
SAN_EPOLL_TESTS := $(shell for f in tests/integration/*.t; do \
	n=$$(printf %s "$$f" | cksum); [ $$(( $${n%% *} % 2 )) = $(SAN_HALF) ] && echo "$$f"; done; true)
SAN_DEFAULT_TESTS := $(filter-out $(SAN_EPOLL_TESTS),$(shell find tests -name '*.t' | sort))
test: deps all
	$(TEST_ENV) $(PROVE) $(PROVE_FLAGS) $(SAN_DEFAULT_TESTS)
	$(TEST_ENV) ZARIS_IO_BACKEND=epoll $(PROVE) $(PROVE_FLAGS) $(SAN_EPOLL_TESTS)
endif

asan:
	$(MAKE) SAN=asan BUILD=build-asan test

# detect_deadlocks=0: a snapshot's instant and EXEC of a whole-keyspace
# command hold every shard lock at once (1024), past the 64 held locks
# TSan's deadlock detector can track; races are still detected.
tsan:
	TSAN_OPTIONS="detect_deadlocks=0 halt_on_error=1 $(TSAN_OPTIONS)" $(MAKE) SAN=tsan BUILD=build-tsan test

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build build-asan build-tsan

# === image (issue 7): the Debian package and the appliance image tests ========
#   make deb         $(BUILD)/zaris_$(VERSION)_<arch>.deb from the built binaries
#   make image-test  host tools, the .deb, then tests/image/ (packer validate,
#                    lintian, systemd-analyze, a booted Debian 12 container
#                    provisioned by `packer build -only=null.local`)
# `make test` runs tests/image/ too (prove -r tests/); IMAGE_DEPS joins DEPS
# so a fresh machine gets the tools there as well.
IMAGE_DEPS := packer mmdebstrap systemd-container lintian openssh-client socat \
              dpkg-dev binutils python3 util-linux
DEPS += $(IMAGE_DEPS)

.PHONY: deb image-test
# -> $(BUILD)/zaris_$(VERSION)_<arch>.deb (the path is printed)
deb: $(BUILD)/zarisd $(BUILD)/zaris-supervisor $(BUILD)/zarisctl $(BUILD)/libzaris.so.1 $(BUILD)/libzaris.a
	sh image/build-deb.sh $(BUILD) $(VERSION) $(BUILD) config/zaris.conf

image-test: deps deb
	ZARIS_BUILD=$(abspath $(BUILD)) $(PROVE) $(PROVE_FLAGS) tests/image/

# --- bench (owned by bench/: the side-by-side comparison, issue 3) -------------
#   make bench                     the whole comparison (a few minutes)
#   make bench BENCH_FLAGS=--quick about half a minute
#   make bench-quick               the same
# Results land in bench/results/<stamp>/ (report.md, chart.png, results.json).
BENCH_FLAGS ?=
.PHONY: bench bench-quick
bench: deps $(BUILD)/zaris-bench $(BUILD)/zarisd
	bench/compare --build $(abspath $(BUILD)) $(BENCH_FLAGS)

bench-quick:
	$(MAKE) bench BENCH_FLAGS="--quick $(BENCH_FLAGS)"
