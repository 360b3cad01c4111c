# shardkit - build, test, demo, bench, install.
#
# `make test` and `make demo` first run scripts/deps.sh, which installs any
# missing Debian package (apt-get), so each is a single command on a fresh
# machine.  Everything is built out of tree under $(BUILD).

PREFIX  ?= /usr/local
DESTDIR ?=
BUILD   ?= build
CC      ?= cc
VERSION := 0.1.0

PKGS := libjpeg libpng vips libzstd libarchive jansson libxxhash libexif
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

# `make V=1` shows the full compiler command lines.
Q := $(if $(V),,@)

OPT      ?= -O2 -g
SANITIZE ?=
WARN     := -Wall -Wextra -Wshadow -Wno-unused-parameter
CFLAGS_ALL := -std=c11 $(OPT) $(WARN) -D_GNU_SOURCE -fopenmp -fPIC -Iinclude -Ilib \
              $(PKG_CFLAGS) $(SANITIZE) $(CFLAGS)
LDLIBS_ALL := $(PKG_LIBS) -lyuv -lcsv -lm -lpthread -fopenmp $(SANITIZE) $(LDFLAGS) $(LDLIBS)

LIB_SRC  := $(sort $(wildcard lib/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
LIB_A    := $(BUILD)/libshardkit.a
CMDS     := $(filter-out common,$(notdir $(wildcard cmd/*)))
CLI_COMMON := $(wildcard cmd/common/*.c)
BINS     := $(CMDS:%=$(BUILD)/bin/%)
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNITS    := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
UNIT_HELPERS := $(filter-out $(UNIT_SRC),$(wildcard tests/unit/*.c))

.SECONDEXPANSION:

.PHONY: all deps build check test _test demo _demo bench sanitize _sanitize fuzz install \
        uninstall clean

all: build

build: $(LIB_A) $(BINS)

deps:
	@scripts/deps.sh

# ---- library and programs ---------------------------------------------------

$(BUILD)/obj/%.o: %.c $(wildcard include/shardkit/*.h lib/*.h) | $(BUILD)/.dirs
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS_ALL) -c $< -o $@
	@$(if $(Q),echo "  CC      $<")

$(LIB_A): $(LIB_OBJ)
	@rm -f $@
	$(Q)ar rcs $@ $^

$(BUILD)/bin/%: $(BUILD)/.dirs $(LIB_A) $$(wildcard cmd/$$*/*.c) $(CLI_COMMON) $(wildcard cmd/common/*.h)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS_ALL) -Icmd/common $(wildcard cmd/$*/*.c) $(CLI_COMMON) $(LIB_A) $(LDLIBS_ALL) -o $@

$(BUILD)/.dirs:
	@mkdir -p $(BUILD)/bin $(BUILD)/obj $(BUILD)/tests
	@touch $@

# ---- tests ------------------------------------------------------------------

$(BUILD)/tests/%: tests/unit/%.c $(UNIT_HELPERS) $(LIB_A) $(wildcard tests/unit/*.h)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS_ALL) -Itests/unit $< $(UNIT_HELPERS) $(LIB_A) $(LDLIBS_ALL) -lcmocka -o $@

# Quick: unit tests only.
check: deps
	@$(MAKE) --no-print-directory _units

.PHONY: _units
_units: build $(UNITS)
	@tests/run.sh --units-only $(BUILD)

# Everything CI runs: unit tests, CLI tests, fuzz-corpus replay.
test: deps
	@$(MAKE) --no-print-directory _test

_test: build $(UNITS)
	@tests/run.sh $(BUILD)

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
sanitize: deps
	@$(MAKE) --no-print-directory BUILD=build-san OPT="-O1 -g -fno-omit-frame-pointer" \
	    SANITIZE="-fsanitize=address,undefined -fno-sanitize-recover=undefined" _test

# ---- demo and bench ---------------------------------------------------------

demo: deps
	@$(MAKE) --no-print-directory _demo

_demo: build
	@examples/demo.sh $(BUILD)

bench: deps
	@$(MAKE) --no-print-directory build
	@bench/run.sh $(BUILD)

# ---- install ----------------------------------------------------------------

install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	    $(DESTDIR)$(PREFIX)/include/shardkit
	install -m 755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(LIB_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 include/shardkit.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 include/shardkit/*.h $(DESTDIR)$(PREFIX)/include/shardkit/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' \
	    -e 's|@REQUIRES@|$(PKGS)|g' shardkit.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/shardkit.pc

uninstall:
	rm -f $(CMDS:%=$(DESTDIR)$(PREFIX)/bin/%) $(DESTDIR)$(PREFIX)/lib/libshardkit.a \
	    $(DESTDIR)$(PREFIX)/include/shardkit.h $(DESTDIR)$(PREFIX)/lib/pkgconfig/shardkit.pc
	rm -rf $(DESTDIR)$(PREFIX)/include/shardkit

clean:
	rm -rf build build-san build-fuzz
