# shardkit - build, test, demo, bench, install.
#
# `make test`, `make demo` and the other top-level targets first run
# scripts/deps.sh with their group, which installs any missing Debian package
# that target needs (apt-get), so each is a single command on a fresh machine;
# `make deps` installs every group.  DEPS=no skips that step (a machine set up
# already, or one where apt-get is not wanted): what is missing then fails
# where it is used.  Everything is built out of tree under $(BUILD).

PREFIX  ?= /usr/local
DESTDIR ?=
BUILD   ?= build
CC      ?= cc
DEPS    ?= yes
# scripts/deps.sh GROUP, or nothing with DEPS=no
DEPS_SH  = $(if $(filter no,$(DEPS)),: DEPS=no: not installing,scripts/deps.sh)
# The version is written once, in include/shardkit/api.h.
VERSION := $(shell sed -n 's/^\#define SHARDKIT_VERSION "\(.*\)"/\1/p' include/shardkit/api.h)
MAJOR   := $(firstword $(subst ., ,$(VERSION)))

PKGS := libjpeg libpng vips libarchive jansson libxxhash libexif libcurl expat
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) libzstd 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
# libzstd is linked statically: records use its experimental API (literals
# stored uncompressed, ZSTD_decompressBound), which zstd.h allows only with
# static linking, because it may change between libzstd versions.  The shared
# library keeps those symbols to itself (--exclude-libs).
ZSTD_STATIC := -L$(shell pkg-config --variable=libdir libzstd 2>/dev/null) -l:libzstd.a

# `make V=1` shows the full compiler command lines.
Q := $(if $(V),,@)

OPT      ?= -O2 -g
SANITIZE ?=
WARN     := -Wall -Wextra -Wshadow -Wno-unused-parameter
# Everything built here (the library, the programs, the tests) sees the
# experimental tier of the headers (shardkit/api.h); a program of a user sees
# it only when it defines SHARDKIT_EXPERIMENTAL itself.
CFLAGS_BASE := -std=c11 $(OPT) $(WARN) -D_GNU_SOURCE -DSHARDKIT_EXPERIMENTAL -fopenmp -fPIC \
               -Iinclude $(PKG_CFLAGS) $(SANITIZE) $(CPPFLAGS) $(CFLAGS)
# The library exports only what include/ marks SHARD_API.
CFLAGS_LIB := $(CFLAGS_BASE) -Ilib -fvisibility=hidden
# The programs see the public headers only, and the helpers they share with
# the library (lib/shardx, compiled into each program: it is not exported).
CFLAGS_CMD := $(CFLAGS_BASE) -Icmd/common -Ilib/shardx
# Unit tests, fuzz targets and benchmarks may reach inside lib/.
CFLAGS_ALL := $(CFLAGS_BASE) -Ilib
LDLIBS_ALL := $(ZSTD_STATIC) $(PKG_LIBS) -lcsv -lm -lpthread -fopenmp $(SANITIZE) $(LDFLAGS) $(LDLIBS)

LIB_SRC  := $(sort $(wildcard lib/*/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
LIB_A    := $(BUILD)/libshardkit.a
SONAME   := libshardkit.so.$(MAJOR)
LIB_SO   := $(BUILD)/libshardkit.so.$(VERSION)
# A tool is a folder of cmd/: its C files, linked with cmd/common and the
# library, or one shell program, cmd/TOOL/TOOL.sh, installed with the
# version in place of @VERSION@.
SH_CMDS  := $(patsubst cmd/%/,%,$(dir $(wildcard cmd/*/*.sh)))
CMDS     := $(filter-out common,$(notdir $(wildcard cmd/*)))
# The helpers the programs share with the library (lib/README.md, "The
# programs' helpers"): compiled into the library, hidden, and again into
# each program and the Python extension.
SHARDX_SRC := $(wildcard lib/shardx/*.c)
CLI_COMMON := $(wildcard cmd/common/*.c) $(SHARDX_SRC)
BINS     := $(CMDS:%=$(BUILD)/bin/%)
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNITS    := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
UNIT_HELPERS := $(filter-out $(UNIT_SRC),$(wildcard tests/unit/*.c))

.SECONDEXPANSION:

.PHONY: all deps build check test _test demo _demo bench screenshots sanitize _sanitize fuzz \
        install uninstall clean python

all: build

build: $(LIB_A) $(LIB_SO) $(BINS)

deps:
	@scripts/deps.sh

# ---- library and programs ---------------------------------------------------

# Each object is rebuilt when its source or a header it includes changes: the
# compiler writes the headers it read into OBJ.d (-MMD; -MP makes a removed
# header no error), which make reads back below.  The .d is written aside and
# moved in after the object, and an object without one (a first build, or one
# from before this rule) is rebuilt.
DEPFLAGS = -MT $@ -MMD -MP -MF $(@:.o=.Td)
DEPDONE  = mv -f $(@:.o=.Td) $(@:.o=.d) && touch $@

$(BUILD)/obj/%.o: %.c $(BUILD)/obj/%.d | $(BUILD)/.dirs
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS_LIB) $(DEPFLAGS) -c $< -o $@ && $(DEPDONE)
	@$(if $(Q),echo "  CC      $<")

$(LIB_A): $(LIB_OBJ)
	@rm -f $@
	$(Q)ar rcs $@ $^

# The shared library, with its soname and the usual two links.  (Under
# ThreadSanitizer its runtime is the program's, so the library's references
# to it are left for the program to resolve.)
SO_NO_UNDEFINED ?= -Wl,--no-undefined
$(LIB_SO): $(LIB_OBJ)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) -shared -Wl,-soname,$(SONAME) $(SO_NO_UNDEFINED) -Wl,--exclude-libs,libzstd.a \
	    $(LIB_OBJ) $(LDLIBS_ALL) -o $@
	@ln -sf $(notdir $@) $(BUILD)/$(SONAME)
	@ln -sf $(SONAME) $(BUILD)/libshardkit.so

# ---- the reader's archive (libshardkit-read.a) ------------------------------
# What reading a dataset needs: the folders of lib/README.md's layers up to
# the loader but source and record (the converter's), without the libvips
# decoder, plus the key order the key lookup shares with the scan.  Record
# payloads are raw, JPEG or PNG, so it links neither libvips (nor glib under
# it), libarchive, libcsv nor OpenMP: the Python extension links it, and so
# can a C program that only reads (shardkit-read.pc).
# tests/cli/test_reader_deps.sh holds it to that.
READ_DIRS := shardx util image format manifest net read loader
READ_SRC  := $(filter-out lib/image/decode_vips.c,$(filter $(READ_DIRS:%=lib/%/%),$(LIB_SRC))) \
             $(wildcard lib/source/keylist.c)
READ_A    := $(BUILD)/libshardkit-read.a
READ_PKGS := $(filter-out vips libarchive,$(PKGS))
LDLIBS_READ := $(ZSTD_STATIC) $(shell pkg-config --libs $(READ_PKGS) 2>/dev/null) -lm -lpthread \
               $(SANITIZE) $(LDFLAGS) $(LDLIBS)

build: $(READ_A)

$(READ_A): $(READ_SRC:%.c=$(BUILD)/obj/%.o)
	@rm -f $@
	$(Q)ar rcs $@ $^

# What the reader's archive links with (python/setup.py asks, as for print-ldlibs).
.PHONY: print-read-ldlibs install-read uninstall-read
print-read-ldlibs:
	@echo $(LDLIBS_READ)

# `make install` installs it beside libshardkit.a, with shardkit-read.pc.  The
# shared library keeps everything (one soname, one ABI): a program that must
# not load libvips links this archive, as the Python extension does.
install: install-read
uninstall: uninstall-read
install-read: $(READ_A)
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 644 $(READ_A) $(DESTDIR)$(LIBDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
	    -e 's|@REQUIRES@|$(READ_PKGS)|g' shardkit-read.pc.in \
	    > $(DESTDIR)$(LIBDIR)/pkgconfig/shardkit-read.pc
uninstall-read:
	rm -f $(DESTDIR)$(LIBDIR)/libshardkit-read.a \
	    $(DESTDIR)$(LIBDIR)/pkgconfig/shardkit-read.pc

$(SH_CMDS:%=$(BUILD)/bin/%): $(BUILD)/bin/%: cmd/$$*/$$*.sh include/shardkit/api.h | $(BUILD)/.dirs
	@$(if $(Q),echo "  SH      $@")
	$(Q)sh -n $< && sed 's/@VERSION@/$(VERSION)/' $< >$@.tmp && chmod 755 $@.tmp && mv $@.tmp $@

$(BUILD)/bin/%: $(BUILD)/.dirs $(LIB_A) $$(wildcard cmd/$$*/*.c) $(CLI_COMMON) $(wildcard cmd/common/*.h) \
               $(wildcard lib/shardx/*.h)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS_CMD) $(wildcard cmd/$*/*.c) $(CLI_COMMON) $(LINK_$*) $(LIB_A) $(LDLIBS_ALL) -o $@

# shardbench's engine (cmd/shardbench/engine: the harness, the small-file
# loader, page-cache dropping, traces, roofline) is a part of the program,
# not of the library: it is compiled like the programs, with the public
# headers only (no -Ilib), into an archive that shardbench and the engine's
# unit test link.  tests/cli/test_symbols.sh holds it to the public API.
BENCH_SRC := $(wildcard cmd/shardbench/engine/*.c)
BENCH_OBJ := $(BENCH_SRC:%.c=$(BUILD)/obj/%.o)
BENCH_A   := $(BUILD)/libshardbench.a
LINK_shardbench := $(BENCH_A)
$(BUILD)/bin/shardbench: $(BENCH_A) $(wildcard cmd/shardbench/*.h)

$(BUILD)/obj/cmd/shardbench/engine/%.o: cmd/shardbench/engine/%.c \
                                        $(BUILD)/obj/cmd/shardbench/engine/%.d | $(BUILD)/.dirs
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS_CMD) $(DEPFLAGS) -c $< -o $@ && $(DEPDONE)
	@$(if $(Q),echo "  CC      $<")

$(BENCH_A): $(BENCH_OBJ)
	@rm -f $@
	$(Q)ar rcs $@ $^

$(BUILD)/.dirs:
	@mkdir -p $(BUILD)/bin $(BUILD)/obj $(BUILD)/tests
	@touch $@

# ---- tests ------------------------------------------------------------------

# What the tools share (cmd/common), as an archive for the unit tests of it
# (HTML, charts, histograms); the programs compile those sources themselves.
CLI_A   := $(BUILD)/libcli.a
CLI_OBJ := $(filter-out $(SHARDX_SRC:%.c=$(BUILD)/obj/%.o),$(CLI_COMMON:%.c=$(BUILD)/obj/%.o))

$(BUILD)/obj/cmd/common/%.o: cmd/common/%.c $(BUILD)/obj/cmd/common/%.d | $(BUILD)/.dirs
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS_CMD) $(DEPFLAGS) -c $< -o $@ && $(DEPDONE)
	@$(if $(Q),echo "  CC      $<")

DEPFILES := $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(BENCH_OBJ:.o=.d)
$(DEPFILES):
include $(wildcard $(DEPFILES))

$(CLI_A): $(CLI_OBJ)
	@rm -f $@
	$(Q)ar rcs $@ $^

$(BUILD)/tests/%: tests/unit/%.c $(UNIT_HELPERS) $(LIB_A) $(CLI_A) $(BENCH_A) $(wildcard tests/unit/*.h)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS_ALL) -Icmd/common -Icmd/shardbench -Itests/unit $< $(UNIT_HELPERS) \
	    $(BENCH_A) $(CLI_A) $(LIB_A) $(LDLIBS_ALL) -lcmocka -o $@

# Quick (the inner loop): the unit tests and the command-line tests of the
# core behaviours - convert, check, export, parts, incremental runs, fields,
# the loader's C tests - a few minutes on 2 cores (CONTRIBUTING.md).
# TESTS="..." picks others; make check -j2 runs two at a time.
# CASE=GLOB runs only the matching cases of the tests picked: a unit test's
# cmocka tests, a CLI test's case_NAME functions (tests/cli/lib.sh,
# run_cases); for python_tests it is pytest's -k expression.
ifdef CASE
export SHARDKIT_CASE := $(CASE)
endif
CHECK_TESTS ?= $(notdir $(basename $(UNIT_SRC))) \
               test_shardify test_shardcheck test_shardcat test_parts test_incremental \
               test_fields test_sources test_links
check:
	@$(DEPS_SH) demo
	@$(MAKE) --no-print-directory _check

.PHONY: _check
_check: build $(UNITS)
	@tests/run.sh $(BUILD) $(if $(TESTS),$(TESTS),$(CHECK_TESTS))

# Everything CI runs: unit tests, CLI tests, fuzz-corpus replay, pytest.
# TESTS="test_shardify python_tests" runs only the tests of those names.
test:
	@$(DEPS_SH) test
	@$(MAKE) --no-print-directory _test

_test: build $(UNITS) _python
	@tests/run.sh $(BUILD) $(TESTS)

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
sanitize:
	@$(DEPS_SH) test
	@$(MAKE) --no-print-directory BUILD=build-san OPT="-O1 -g -fno-omit-frame-pointer" \
	    SANITIZE="-fsanitize=address,undefined -fno-sanitize-recover=undefined" _test

# The conversion and the readers under ThreadSanitizer: clang, with LLVM's
# OpenMP runtime and its Archer tool, so that what OpenMP orders is known to
# ThreadSanitizer (tests/run.sh loads it).  The tests of TSAN_TESTS run (the
# threads of the conversion, the readers, the loader and the node-local cache;
# TESTS="..." picks others), built in build-tsan/; a data race fails the test
# that ran into it.  The Python extension is left out (its interpreter is not
# built with ThreadSanitizer): the loader it wraps is C, tested here.
TSAN_TESTS ?= $(notdir $(basename $(wildcard tests/unit/test_*.c))) \
              test_shardify test_sources test_fields test_links test_parts test_incremental \
              test_s3_fields test_shardcheck test_shardcheck_fields test_shardcheck_parts test_cache \
              test_shardbench \
              test_scale_archives test_s3_memory
tsan:
	@$(DEPS_SH) tsan
	@$(MAKE) --no-print-directory BUILD=build-tsan CC=clang OPT="-O1 -g -fno-omit-frame-pointer" \
	    SANITIZE="-fsanitize=thread" SO_NO_UNDEFINED= _tsan

.PHONY: tsan _tsan
_tsan: build $(UNITS) $(BUILD)/bench/gen_archives
	@SHARDKIT_TSAN=1 tests/run.sh $(BUILD) $(if $(TESTS),$(TESTS),$(TSAN_TESTS))

# ---- fuzzing (fuzz/) ------------------------------------------------------------
# Each fuzz/fuzz_<target>.c is a libFuzzer target.  `make fuzz` builds them with
# clang -fsanitize=fuzzer,address,undefined in build-fuzz/ and runs each for
# FUZZ_SECONDS (bounded) over its committed seeds (fuzz/corpus/<target>), after
# running its regression inputs (fuzz/regressions/<target>).  Inputs it discovers go to
# fuzz/corpus-new/<target> (not committed); a crasher is written to
# build-fuzz/findings/ and fails the target.  `make test` and `make sanitize`
# replay the committed inputs through fuzz/replay.c, without libFuzzer.
FUZZ_TARGETS := shard manifest decode aws_config
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_OPTIONS ?= -timeout=10 -rss_limit_mb=2048 -use_value_profile=1 -print_final_stats=1
FUZZ_REPLAYS := $(FUZZ_TARGETS:%=$(BUILD)/tests/fuzz_replay_%)

$(BUILD)/tests/fuzz_replay_%: fuzz/replay.c fuzz/fuzz_%.c fuzz/fuzz_target.h $(LIB_A) \
                              | $(BUILD)/.dirs
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS_ALL) -Ifuzz fuzz/replay.c fuzz/fuzz_$*.c $(LIB_A) $(LDLIBS_ALL) -o $@

_test: $(FUZZ_REPLAYS) $(BUILD)/bench/read_ceiling $(BUILD)/bench/write_ceiling \
       $(BUILD)/bench/train_ceiling $(BUILD)/bench/gen_archives

$(BUILD)/fuzz/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz_target.h $(LIB_A)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS_ALL) -fsanitize=fuzzer -Ifuzz $< $(LIB_A) $(LDLIBS_ALL) -o $@

fuzz:
	@$(DEPS_SH) fuzz
	@$(MAKE) --no-print-directory BUILD=build-fuzz CC=$(FUZZ_CC) \
	    OPT="-O1 -g -fno-omit-frame-pointer" \
	    SANITIZE="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
	    _fuzz

.PHONY: _fuzz
_fuzz: $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)
	@mkdir -p $(BUILD)/findings
	@set -e; export LSAN_OPTIONS="suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0"; \
	for t in $(FUZZ_TARGETS); do \
	    mkdir -p fuzz/corpus-new/$$t fuzz/regressions/$$t; \
	    echo "fuzz: $$t: regression inputs, then $(FUZZ_SECONDS) s of fuzzing"; \
	    { $(BUILD)/fuzz/fuzz_$$t -runs=0 $(FUZZ_OPTIONS) fuzz/regressions/$$t && \
	      $(BUILD)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) $(FUZZ_OPTIONS) \
	        -artifact_prefix=$(BUILD)/findings/$$t- fuzz/corpus-new/$$t fuzz/corpus/$$t; } \
	        2>$(BUILD)/findings/$$t.log || { tail -n 60 $(BUILD)/findings/$$t.log; \
	        echo "fuzz: $$t: FINDING (see $(BUILD)/findings/)"; exit 1; }; \
	    grep -E '^stat::(number_of_executed_units|peak_rss_mb)|cov: ' \
	        $(BUILD)/findings/$$t.log | tail -n 3; \
	done; echo "fuzz: no findings"
# ---- end of fuzzing ---------------------------------------------------------------

# ---- Python package (python/) ---------------------------------------------------
# The package shardkit, pure-Python modules and the extension shardkit._native
# (linked with the reader's archive, without libvips), into $(BUILD)/python:
#     PYTHONPATH=build/python /usr/bin/python3 -c 'import shardkit'
# python/setup.py does the build (pip install --no-build-isolation ./python uses
# it too); make hands it the library, what to link and the sanitizer flags.
PYTHON  ?= /usr/bin/python3
PY_DEPS := python/setup.py python/pyproject.toml $(wildcard python/src/*.c python/src/*.h python/shardkit/*.py \
           python/shardkit/*.pyi python/shardkit/py.typed) \
           $(wildcard include/*.h include/shardkit/*.h)

python:
	@$(DEPS_SH) python
	@$(MAKE) --no-print-directory _python

.PHONY: _python print-ldlibs
_python: $(BUILD)/python/.built

$(BUILD)/python/.built: $(READ_A) $(PY_DEPS)
	@$(if $(Q),echo "  PYTHON  $(BUILD)/python")
	$(Q)rm -rf $(BUILD)/python
	$(Q)cd python && SHARDKIT_BUILD=$(abspath $(BUILD)) SHARDKIT_LDLIBS='$(LDLIBS_READ)' \
	    SHARDKIT_CFLAGS='$(SANITIZE)' $(PYTHON) setup.py -q build \
	    --build-base $(abspath $(BUILD))/python-build --build-lib $(abspath $(BUILD))/python \
	    $(if $(Q),>/dev/null)
	@touch $@

# What the library links with (python/setup.py asks when make does not run it).
print-ldlibs:
	@echo $(LDLIBS_ALL)

# ---- demo and bench ---------------------------------------------------------

demo:
	@$(DEPS_SH) demo
	@$(MAKE) --no-print-directory _demo

_demo: build
	@examples/demo.sh $(BUILD)

bench:
	@$(DEPS_SH) bench
	@$(MAKE) --no-print-directory build _python $(BUILD)/bench/resize_quality $(BUILD)/bench/read_ceiling \
	    $(BUILD)/bench/write_ceiling $(BUILD)/bench/train_ceiling $(BUILD)/bench/augment_speed
	@bench/run.sh $(BUILD)

# The screenshots of the HTML reports in docs/ (docs/guide/reports.md shows them), made
# from the demo data in headless Chromium.
screenshots:
	@$(DEPS_SH) screenshots
	@$(MAKE) --no-print-directory build
	@scripts/report_screenshots.sh $(BUILD)

# The resampler comparison links the libraries it compares against (libyuv,
# libswscale); the shardkit library itself needs neither.
$(BUILD)/bench/resize_quality: bench/resize_quality.c $(LIB_A)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS_ALL) $< $(LIB_A) $(LDLIBS_ALL) \
	    $$(pkg-config --cflags --libs libswscale libavutil) -lyuv -o $@

# The transform stage of the loader alone, on one thread (BENCHMARKS.md §6).
$(BUILD)/bench/augment_speed: bench/augment_speed.c bench/train_steps.h $(LIB_A)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS_ALL) $< $(LIB_A) $(LDLIBS_ALL) -o $@

# The decode-only ceiling of a shard reader; TurboJPEG gives the fastest
# libjpeg-turbo decode to compare with.
$(BUILD)/bench/read_ceiling: bench/read_ceiling.c bench/ceiling_common.h $(LIB_A) $(CLI_COMMON)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS_CMD) $< $(CLI_COMMON) $(LIB_A) $(LDLIBS_ALL) \
	    $$(pkg-config --cflags --libs libturbojpeg) -o $@

# The decode-only and record-build ceilings of shardify (the record build is
# inside lib/, hence -Ilib).
$(BUILD)/bench/write_ceiling: bench/write_ceiling.c bench/ceiling_common.h $(LIB_A) $(CLI_COMMON)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS_CMD) -Ilib $< $(CLI_COMMON) $(LIB_A) $(LDLIBS_ALL) -o $@

# The ceiling of the jpeg training pipeline: the Loader's per-sample work
# from memory (its crop decode and transforms are inside lib/, hence -Ilib).
$(BUILD)/bench/train_ceiling: bench/train_ceiling.c bench/ceiling_common.h bench/train_steps.h \
    $(LIB_A) $(CLI_COMMON)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS_CMD) -Ilib $< $(CLI_COMMON) $(LIB_A) $(LDLIBS_ALL) -o $@

# An img2dataset-style folder of tars, written quickly (bench/scale.sh, and
# the tests that need many archive entries).
$(BUILD)/bench/gen_archives: bench/gen_archives.c | $(BUILD)/.dirs
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS_CMD) $< $$(pkg-config --cflags --libs libarchive libjpeg) $(SANITIZE) -o $@

# ---- manual pages and shell completion ----------------------------------------
# Made from the programs themselves, so that they cannot drift from them: the
# pages of the programs by help2man from each one's --help and --version, with
# man/PAGE.h2m adding what --help has not (name, exit status, environment,
# files, examples, see also); shardkit-format(5) by pandoc from
# manifests/FORMAT.md; the bash and zsh completion by scripts/completion.py
# from the same --help.  tests/cli/test_man.sh holds them to the programs.
MAN1        := $(CMDS) shardify-merge
MANPAGES    := $(MAN1:%=$(BUILD)/man/man1/%.1) $(BUILD)/man/man5/shardkit-format.5
COMPLETIONS := $(foreach c,$(CMDS),\
                   $(BUILD)/completion/bash/$(c) $(BUILD)/completion/zsh/_$(c))
# the tools that take s3:// locations, whose pages say where S3 settings come from
S3_TOOLS    := shardify shardcheck shardcat shardbench
# a page is dated by the last commit (or SOURCE_DATE_EPOCH), not by the build
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
HELP2MAN = $(if $(SOURCE_DATE_EPOCH),SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH)) help2man --no-info

.PHONY: man completion
man: $(MANPAGES)
completion: $(COMPLETIONS)

$(BUILD)/man/man1/%.1: $(BUILD)/bin/% man/%.h2m man/s3.h2m $(BUILD)/man/exit/%.h2m
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  MAN     $@")
	$(Q)$(HELP2MAN) --include=man/$*.h2m $(if $(filter $*,$(S3_TOOLS)),--include=man/s3.h2m) \
	    --include=$(BUILD)/man/exit/$*.h2m --output=$@ $(BUILD)/bin/$*

# A tool's EXIT STATUS section, made of docs/reference/exit-status.md, where
# the statuses are written once.
.PRECIOUS: $(BUILD)/man/exit/%.h2m
$(BUILD)/man/exit/%.h2m: docs/reference/exit-status.md scripts/exit_status.py
	@mkdir -p $(dir $@)
	$(Q)$(PYTHON) scripts/exit_status.py $< $* >$@.tmp && mv $@.tmp $@

# `shardify merge` has a page of its own, made from `shardify merge --help`.
$(BUILD)/man/shardify-merge: $(BUILD)/bin/shardify
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\nexec "%s" merge "$$@"\n' "$(abspath $<)" >$@ && chmod +x $@

$(BUILD)/man/man1/shardify-merge.1: $(BUILD)/man/shardify-merge man/shardify-merge.h2m
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  MAN     $@")
	$(Q)$(HELP2MAN) --include=man/shardify-merge.h2m --output=$@ $<

$(BUILD)/man/man5/shardkit-format.5: manifests/FORMAT.md man/shardkit-format.lua
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  MAN     $@")
	$(Q)pandoc --standalone --from gfm --to man --lua-filter man/shardkit-format.lua \
	    -M title=SHARDKIT-FORMAT -M section=5 -M footer="shardkit $(VERSION)" \
	    -M header="File Formats" --output $@ $<

$(BUILD)/completion/bash/%: $(BUILD)/bin/% scripts/completion.py
	@mkdir -p $(dir $@)
	$(Q)$(PYTHON) scripts/completion.py bash $< >$@.tmp && mv $@.tmp $@

$(BUILD)/completion/zsh/_%: $(BUILD)/bin/% scripts/completion.py
	@mkdir -p $(dir $@)
	$(Q)$(PYTHON) scripts/completion.py zsh $< >$@.tmp && mv $@.tmp $@

_test: $(MANPAGES) $(COMPLETIONS)

# ---- install ----------------------------------------------------------------

# Where make install puts the libraries and what is neither a program nor a
# library (Debian's packaging passes its own; see debian/rules).
LIBDIR      ?= $(PREFIX)/lib
MANDIR      ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/site-functions
DOCDIR      ?= $(PREFIX)/share/doc/shardkit
# the nightly job's units and crontab line, as examples; and, until 0.4.0,
# the job's former path, a wrapper that warns and runs bin/shardkit-nightly
NIGHTLY_EXAMPLES := $(addprefix examples/nightly/,shardkit-nightly.service shardkit-nightly.timer \
                    crontab README.md)
NIGHTLY_FORMER   := examples/nightly/shardkit-nightly.sh

install: build $(MANPAGES) $(COMPLETIONS)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(LIBDIR)/pkgconfig \
	    $(DESTDIR)$(PREFIX)/include/shardkit $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
	    $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(DOCDIR)/examples/nightly
	install -m 644 $(filter %.1,$(MANPAGES)) $(DESTDIR)$(MANDIR)/man1/
	install -m 644 $(filter %.5,$(MANPAGES)) $(DESTDIR)$(MANDIR)/man5/
	install -m 644 $(filter $(BUILD)/completion/bash/%,$(COMPLETIONS)) $(DESTDIR)$(BASHCOMPDIR)/
	install -m 644 $(filter $(BUILD)/completion/zsh/%,$(COMPLETIONS)) $(DESTDIR)$(ZSHCOMPDIR)/
	install -m 644 $(NIGHTLY_EXAMPLES) $(DESTDIR)$(DOCDIR)/examples/nightly/
	install -m 755 $(NIGHTLY_FORMER) $(DESTDIR)$(DOCDIR)/examples/nightly/
	install -m 755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIB_SO)) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libshardkit.so
	install -m 644 include/shardkit.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 include/shardkit/*.h $(DESTDIR)$(PREFIX)/include/shardkit/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
	    -e 's|@REQUIRES@|$(PKGS)|g' shardkit.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/shardkit.pc

uninstall:
	rm -f $(CMDS:%=$(DESTDIR)$(PREFIX)/bin/%) $(DESTDIR)$(LIBDIR)/libshardkit.a \
	    $(DESTDIR)$(LIBDIR)/libshardkit.so* \
	    $(DESTDIR)$(PREFIX)/include/shardkit.h $(DESTDIR)$(LIBDIR)/pkgconfig/shardkit.pc \
	    $(MAN1:%=$(DESTDIR)$(MANDIR)/man1/%.1) $(DESTDIR)$(MANDIR)/man5/shardkit-format.5 \
	    $(addprefix $(DESTDIR)$(BASHCOMPDIR)/,$(notdir $(filter $(BUILD)/completion/bash/%,$(COMPLETIONS)))) \
	    $(addprefix $(DESTDIR)$(ZSHCOMPDIR)/,$(notdir $(filter $(BUILD)/completion/zsh/%,$(COMPLETIONS))))
	rm -rf $(DESTDIR)$(PREFIX)/include/shardkit $(DESTDIR)$(DOCDIR)

# ---- formatting (.clang-format) ------------------------------------------------
# `make format` rewrites the C files of FORMAT_DIRS with clang-format 14;
# `make format-check` names each one that is not formatted, and each C file in
# neither list, and fails (tests/cli/test_clang_format.sh runs it in `make test`).
# FORMAT_PENDING (-p) can hold a folder or file left unformatted for a while
# (a long-lived branch changing it); it is empty: every C file is formatted.
CLANG_FORMAT ?= clang-format-14
FORMAT_DIRS := include lib cmd bench python/src tests/unit tests/fixtures fuzz
FORMAT_PENDING :=
FORMAT_ARGS = $(addprefix -p ,$(FORMAT_PENDING)) $(FORMAT_DIRS)
.PHONY: format format-check
format:
	@$(DEPS_SH) format
	@CLANG_FORMAT=$(CLANG_FORMAT) scripts/format.sh fix $(FORMAT_ARGS)

format-check:
	@$(DEPS_SH) format
	@CLANG_FORMAT=$(CLANG_FORMAT) scripts/format.sh check $(FORMAT_ARGS)

# ---- Debian packages ----------------------------------------------------------
# `make deb` builds the packages of debian/ (shardkit, libshardkit0,
# libshardkit-dev, python3-shardkit) from a copy of the sources into
# $(BUILD)/deb; `make deb-test` installs them into a clean Debian 12 root
# (debootstrap, cached in $(BUILD)/deb/cache), uses them there, purges them and
# checks that nothing is left (scripts/deb.sh; needs root).
.PHONY: deb deb-test
deb:
	@$(DEPS_SH) deb
	@scripts/deb.sh build $(BUILD)

deb-test: deb
	@scripts/deb.sh test $(BUILD)

clean:
	rm -rf build build-san build-fuzz
