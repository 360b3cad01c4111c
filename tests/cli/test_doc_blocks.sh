#!/bin/sh
# test_doc_blocks.sh - every code block of README.md and docs/**/*.md runs,
# doctest style, so the documentation cannot drift: tests/cli/doc_blocks.py
# extracts each fenced block labelled sh (shell, bash, console) or python
# (and c, compiled against the built library: there is none yet), and each
# runs as written in a scratch directory of its own, made by the fixture the
# table below gives it (generated files: tests/fixtures/make_layouts.py), then
# the fixture's check proves what the block made.  A block the table has no
# fixture for fails the test, so a new block comes with its fixture; the test
# prints how many blocks it ran per page.  Unlabelled blocks are listings
# (synopses, file layouts) and are not run.
#
# A block's text runs unchanged but for these substitutions (sed, on every
# block), which give its absolute paths and remote hosts a place in the
# scratch directory D or a server on loopback:
#     /data/                     ->  D/data/
#     /tmp/look                  ->  D/tmp/look
#     /scratch/                  ->  D/scratch/
#     http://127.0.0.1:9000      ->  the moto_server the test started (S3)
#     https://data.example.org   ->  the nginx the test started
# An sh block runs with `sh -e` (a failing command fails it), with the built
# tools on PATH and AWS_ENDPOINT_URL naming the moto_server; a python block
# runs with PYTHONPATH=BUILD/python /usr/bin/python3 after the fixture's
# prelude (what a fragment leaves to its page: imports, `web`, `curated`),
# the DDP loop under torchrun on two ranks.
# Nothing is downloaded: moto_server and nginx serve on loopback.
#
# A block that runs longer than DOC_BLOCKS_TIMEOUT seconds (240) fails.
# DOC_BLOCKS_TOP=DIR reads DIR's README.md and docs/ in place of the
# checkout's, DOC_BLOCKS_ONLY=PAGE runs one page's blocks.  The test runs
# itself so on a copy of the docs with a broken block and with a block of no
# fixture, and must fail both times, naming the block.
#
# The cases: one per page whose blocks run (every_block_of_PAGE_runs, the
# page's path with '/', '.' and '-' as '_'), which runs that page's blocks,
# each in its directory under the case's $C, and fails naming each block
# that failed (PAGE:LINE); one for the pages that have no case of their own
# (a new page's blocks run there, or fail for want of a fixture); the
# self-test.  SHARDKIT_CASE picks pages by their case.
. "$(dirname "$0")/lib.sh"

DOCS=${DOC_BLOCKS_TOP:-$SHARDKIT_TOP}
ONLY=${DOC_BLOCKS_ONLY:-}
BUILD=$(cd "$SHARDKIT_BIN/.." && pwd)
L=$T/layouts
mkdir -p "$T/blocks" "$L" "$T/home"
export HOME="$T/home"

"$PYTHON" "$SHARDKIT_TOP/tests/cli/doc_blocks.py" "$DOCS" "$T/blocks" >"$T/blocks.list" ||
    die "the documentation has blocks this test cannot run (above)"

# the services a block's fixture starts (in the block's directory, .moto
# and .http), each stopped by its pid when the block ends
stop_services() {
    for s in "$@"; do
        [ ! -f "$s/.moto/port" ] || "$SHARDKIT_TOP/bench/moto_server.sh" stop "$s/.moto" >/dev/null 2>&1 || true
        [ ! -d "$s/.http" ] || "$SHARDKIT_TOP/bench/http_server.sh" stop "$s/.http" >/dev/null 2>&1 || true
    done
}
on_exit 'stop_services "$T"/case/*/run/*'
unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE AWS_ENDPOINT_URL_S3 \
    AWS_ENDPOINT_URL AWS_DEFAULT_REGION AWS_SESSION_TOKEN 2>/dev/null || true
MOTO="" HTTP=""
# moto BUCKET...: moto_server with these buckets, AWS_ENDPOINT_URL naming it
# (BOTO_PYTHON: its Python); without moto_server the block is skipped,
# saying so, unless SHARDKIT_REQUIRE_MOTO=1 (CI)
moto() {
    if ! BOTO_PYTHON=$("$SHARDKIT_TOP/bench/moto_server.sh" python 2>"$D/.moto.find"); then
        [ "${SHARDKIT_REQUIRE_MOTO:-0}" != 1 ] || die "moto_server is required: $(cat "$D/.moto.find")"
        echo "SKIP: $(cat "$D/.moto.find"): the S3 blocks not run"
        skip_block=yes
        return 0
    fi
    MOTO=$("$SHARDKIT_TOP/bench/moto_server.sh" start "$D/.moto" "$@") || die "moto_server did not start"
    export AWS_ENDPOINT_URL="$MOTO" AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=x AWS_REGION=us-east-1
}
boto() { "$BOTO_PYTHON" "$SHARDKIT_TOP/tests/fixtures/s3_client.py" "$MOTO" "$@"; }
# nginx NAME=DIR: DIR served at $HTTP/NAME/
nginx() {
    HTTP=$("$SHARDKIT_TOP/bench/http_server.sh" start "$D/.http" "$@") || die "cannot start nginx"
}
layouts() {
    [ -f "$L/.made" ] && return 0
    "$PYTHON" "$SHARDKIT_TOP/tests/fixtures/make_layouts.py" "$L" || die "cannot make the layouts"
    touch "$L/.made"
}
# take NAME...: copies of these generated layouts in the block's directory
take() {
    layouts
    for t in "$@"; do mkdir -p "$(dirname "$t")" && cp -R "$L/$t" "$t"; done
}
# classes: raw/, class folders of images only (no broken file, no image
# at the top, which would be unlabeled)
classes() {
    take raw
    rm raw/dog/broken.jpg raw/top.jpg raw/README.txt
}
# made DST [SRC [OPTIONS...]]: the dataset DST verifies (shardcheck; with
# SRC, shardcheck --deep --source SRC)
made() {
    dst=$1
    shift
    [ $# -eq 0 ] || { src=$1; shift; set -- --deep --source "$src" "$@"; }
    shardcheck "$@" "$dst" >"$C/made.log" 2>&1 ||
        { cat "$C/made.log" >&2; die "$block: '$dst' does not verify"; }
    must_say "verified '$dst'" "$C/made.log"
}
# log TEXT: the block's output says TEXT
log() { must_say "$1" "$D/.log"; }

# The fixtures: fixture_NAME prepares the block's directory $D (the current
# directory) and may set $prelude (python), $after (sh or python run after
# the block, in the same process) and $where (the directory the block runs
# in, when not $D); check_NAME, when there is one, proves what it made.

# README.md's set-up block: `make demo`, `make test` are the targets CI runs
# (make test would run this test again): made with -n, each recipe is
# printed, not run.
fixture_setup() { where=$SHARDKIT_TOP; export MAKEFLAGS=n BUILD="$BUILD" DEPS=no; }
check_setup() { log "examples/demo.sh $BUILD"; log "tests/run.sh $BUILD"; }

# README.md's five commands: class folders, an archive of them, object storage
fixture_quick() {
    take raw
    mkdir data tmp && mv raw data/raw
    (cd data/raw && tar --zstd -cf "$D/photos.tar.zst" cat dog top.jpg README.txt)
    moto raw-images datasets
    [ -z "$skip_block" ] || return 0
    boto put-tree raw-images train data/raw
}
check_quick() {
    made data/shards
    made data/shards-tar photos.tar.zst
    # fewer than 8: the 5 images of the class folders and the one at the top
    [ "$(ls tmp/look | grep -c '\.png$')" = 6 ] || die "$block: shardcat wrote $(ls tmp/look)"
    boto keys datasets train-256 | grep -q '"manifest.json"' || die "$block: nothing in s3://datasets/train-256"
}

fixture_masks() { take coco VOC2012 voc_classes.txt cityscapes cityscapes_classes.txt wds-seg classes.txt; }
check_masks() {
    made shards-coco coco/train2017/
    made shards-instances coco/train2017/
    made shards-cityscapes cityscapes/leftImg8bit/train/
    made shards-wds wds-seg/
    [ "$(json shards-coco/manifest.json "d['counts']['boxes'], d['counts']['coco_annotations'], [f['name'] for f in d['config']['fields']]")" = \
        "(3, 3, ['boxes', 'mask'])" ] || die "$block: the COCO dataset: $(cat shards-coco/manifest.json)"
    [ "$(json shards-voc/manifest.json "d['config']['fields'][0]['folder'], d['config']['fields'][0]['ignore'], d['counts']['fields'], d['counts']['ignored']")" = \
        "('../SegmentationClass/', 255, {'seg': 3}, 1)" ] || die "$block: the mask folder: $(cat shards-voc/manifest.json)"
    [ "$(json shards-cityscapes/manifest.json "d['counts']['samples'], d['counts']['fields'], d['orphans']")" = \
        "(4, {'seg': 4}, [])" ] || die "$block: the Cityscapes masks: $(cat shards-cityscapes/manifest.json)"
    [ "$(json shards-wds/manifest.json "d['counts']['samples'], d['counts']['fields'], d['counts']['sidecars']")" = \
        "(6, {'seg': 6}, 6)" ] || die "$block: the WebDataset masks: $(cat shards-wds/manifest.json)"
    [ "$(json shards-instances/manifest.json "[(f['name'], f['type']) for f in d['config']['fields']], d['counts']['fields']")" = \
        "([('boxes', 'boxes'), ('masks', 'instances')], {'boxes': 3, 'masks': 3})" ] ||
        die "$block: the COCO instances: $(cat shards-instances/manifest.json)"
}

# Mask R-CNN: one image of the COCO layout (a forward pass takes seconds)
fixture_maskrcnn() {
    take coco
    rm coco/train2017/000000000001.jpg coco/train2017/000000000002.jpg
    shardify coco/train2017/ shards-instances/ --size 64 --labels none --quiet \
        --coco coco/annotations/instances_train2017.json --coco-instances
    prelude="import torch, torchvision, shardkit"
    after="assert {'loss_mask', 'loss_box_reg'} <= set(losses), losses"
}

fixture_second() { take rgbd stereo-wds; }
check_second() {
    made shards rgbd/
    made shards-stereo stereo-wds/
    [ "$(json shards/manifest.json "d['counts']['samples'], d['counts']['fields']")" = "(3, {'depth': 3})" ] ||
        die "$block: the depth maps: $(cat shards/manifest.json)"
    [ "$(json shards-stereo/manifest.json "d['counts']['samples'], d['counts']['fields'], d['orphans']")" = \
        "(3, {'right': 3}, [])" ] || die "$block: the image pairs: $(cat shards-stereo/manifest.json)"
}

# the node-local cache: a read of a dataset by URL goes through it
fixture_cache() {
    take raw
    shardify raw served --size 32 --quiet
    mkdir scratch
    nginx served="$D/served"
    after="shardcheck '$HTTP/served' >check.log"
}
check_cache() {
    must_say "verified '$HTTP/served'" check.log
    ls scratch/shardkit-cache/* >/dev/null 2>&1 || die "$block: nothing in the cache: $(ls -R scratch)"
}

fixture_s3() {
    classes
    mkdir data tmp && mv raw data/raw
    shardify data/raw data/shards --size 64 --quiet
    moto datasets
}
check_s3() {
    # fewer than 8: the 5 images of the class folders
    [ "$(ls tmp/look | grep -c '\.png$')" = 5 ] || die "$block: shardcat wrote $(ls tmp/look)"
    log "verified 's3://datasets/imagenet-256'"
    log "shards/files: "
}

fixture_fields() { take laion-tars photos captions.jsonl; }
check_fields() {
    made shards-laion laion-tars/
    made shards-photos photos/ --annotations captions.jsonl
    # an orphan: the caption of an image that failed to download
    [ "$(json shards-laion/manifest.json "d['counts']['fields'], d['counts']['sidecars'], d['counts']['ignored'], d['orphans']")" = \
        "({'caption': 6, 'meta': 6}, 12, 4, [{'key': '00001.tar/0000199.txt'}])" ] ||
        die "$block: the img2dataset tars: $(cat shards-laion/manifest.json)"
    [ "$(json shards-photos/manifest.json "d['counts']['samples'], d['counts']['fields']")" = \
        "(4, {'caption': 4, 'score': 4, 'tags': 4})" ] || die "$block: the table: $(cat shards-photos/manifest.json)"
}

fixture_parts() { take raw && mv raw SRC; }
check_parts() { log "verified 'DST'"; }
fixture_check_parts() {
    take raw && mv raw SRC
    shardify SRC DST --size 32 --quiet
}
check_check_parts() {
    [ "$(ls results | wc -l)" = 3 ] || die "$block: the parts wrote: $(ls results)"
    log "verified 'DST'"
}

# shardkit.probe: 40 small pictures (a batch is 32) in two class folders
# (its ImageFolder way decodes them in Python: photos would take seconds)
fixture_probe() {
    "$PYTHON" - <<'EOF'
import os
from PIL import Image
for k in range(40):
    os.makedirs(f"images/{'ab'[k % 2]}", exist_ok=True)
    Image.new("RGB", (48, 36), (5 * k, 90, 200 - k)).save(f"images/{'ab'[k % 2]}/{k}.jpg")
EOF
    ln -s "$BUILD" build
}
check_probe() { json probe.json "len(d['traceEvents'])" >/dev/null || die "$block: probe.json: $(head -c 300 probe.json)"; }

fixture_hf() {
    take hf photos_csv photos.csv
    mv photos_csv photos
}
check_hf() {
    made shards/test hf/
    made shards-photos photos/ --annotations photos.csv
    [ "$(json shards-train/manifest.json "d['counts']['samples'], d['counts']['fields']")" = "(4, {'text': 4})" ] ||
        die "$block: the imagefolder's train split: $(cat shards-train/manifest.json)"
    # one numbering of the classes in every split
    [ "$(json shards/test/manifest.json "d['labels'], d['counts']['fields']")" = "(['bird', 'cat', 'dog'], {'text': 4})" ] ||
        die "$block: the imagefolder's test split: $(cat shards/test/manifest.json)"
}

# archives named by URL: 100 WebDataset tars of one sample and its class
fixture_urls() {
    "$PYTHON" - <<'EOF'
import io, os, tarfile
from PIL import Image
os.makedirs("www")
for n in range(100):
    out = io.BytesIO()
    Image.new("RGB", (20, 16), (n, 2 * n, 90)).save(out, "JPEG")
    with tarfile.open(f"www/{n:05d}.tar", "w") as t:
        for name, data in ((f"{n:06d}.jpg", out.getvalue()), (f"{n:06d}.cls", b"%d\n" % (n % 3))):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
EOF
    nginx shards="$D/www"
}
check_urls() {
    [ "$(json shards/manifest.json "d['counts']['samples'], d['source']['kind'], len(d['labels'])")" = \
        "(100, 'archives', 3)" ] || die "$block: the archives by URL: $(cat shards/manifest.json)"
    log "verified 'shards/'"
}

# the nightly job: shardkit-nightly, built into BUILD/bin (on PATH) as it is
# installed
fixture_nightly() {
    take raw
    mkdir data && mv raw data/raw
    [ "$(command -v shardkit-nightly)" = "$SHARDKIT_BIN/shardkit-nightly" ] ||
        die "$block: shardkit-nightly is not the build's: $(command -v shardkit-nightly)"
}
check_nightly() {
    [ -L data/shards/current ] || die "$block: no current version: $(ls data/shards)"
    made data/shards/current
    [ "$(json data/shards/runs/latest.json "d['status'], d['exit_code']")" = "('published', 0)" ] ||
        die "$block: the run record: $(cat data/shards/runs/latest.json)"
}

# the Python package: `make python` in a view of the checkout whose build/
# is the test's (made already: nothing is made again), its import, and
# pip's install into a venv, offline
fixture_install() {
    for f in "$SHARDKIT_TOP"/*; do ln -s "$f" .; done
    rm build && ln -s "$BUILD" build
    # pip builds in the package's folder: a copy of it, not the checkout's
    # (test_package builds there, maybe at the same time)
    rm python && mkdir python
    (cd "$SHARDKIT_TOP/python" && tar -cf - --exclude=./build --exclude='./*.egg-info' --exclude=./dist \
        --exclude=./.pytest_cache .) | (cd python && tar -xf -)
    "$PYTHON" -m venv --system-site-packages venv
    PATH="$D/venv/bin:$PATH"
    export DEPS=no PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 SHARDKIT_BUILD="$BUILD"
    export VIRTUAL_ENV="$D/venv"
}
check_install() {
    env -u PYTHONPATH venv/bin/python -c 'import shardkit, sys; sys.exit(not shardkit.__file__.startswith(sys.argv[1]))' "$D/venv" ||
        die "$block: pip did not install shardkit into the venv"
}

# PyTorch: a dataset of class folders in shards/
fixture_torch() {
    classes
    shardify raw shards --size 32 --quiet
    prelude=""
    after="assert epoch == 1 and float(loss) == float(loss), loss"
}
fixture_ddp() { fixture_torch; torchrun=1; }
fixture_torch_fields() {
    take photos
    "$PYTHON" - <<'EOF'
import json
with open("table.jsonl", "w") as f:
    for k in range(4):
        f.write(json.dumps({"key": f"p{k}.jpg", "caption": f"photo {k}", "meta": {"k": k},
                            "score": k, "tags": ["red", "blue"][: k % 3]}) + "\n")
EOF
    shardify photos/ shards/ --labels none --annotations table.jsonl --quiet --size 32 \
        --field caption=text --field meta=json --field score=int --field tags=labels
    prelude="import shardkit"
    after="assert captions[0].startswith('photo') and tuple(tags.shape) == (4, len(ds.labels)), (captions, tags)"
}
fixture_mixture() {
    classes
    take photos
    shardify raw web --size 32 --quiet
    shardify photos curated --size 32 --quiet
    prelude='import shardkit
web, curated = shardkit.Dataset("web"), shardkit.Dataset("curated")'
    after="assert set(batch.sources.tolist()) == {0, 1}, batch.sources"
}

# the C library's tiers: the block is a program's first lines; what follows
# calls the stable tier and the experimental one (which only the block's
# #define declares: an implicit declaration is an error here)
fixture_tiers() {
    prelude=""
    after='#include <stdio.h>
int main(void)
{
    unsigned cpus = shard_available_cpus(); /* experimental: util.h */
    printf("shardkit %s, %u cpus\n", shard_version(), cpus);
    return cpus > 0 ? 0 : 1;
}'
}
check_tiers() {
    grep -q "^shardkit $(sed -n 's/^#define SHARDKIT_VERSION "\(.*\)"$/\1/p' "$SHARDKIT_TOP/include/shardkit/api.h"), [1-9][0-9]* cpus$" \
        "$D/.log" || die "$block: the program did not run: $(cat "$D/.log")"
}

# the table: PAGE and the block's first line -> fixture
fixture_of() {
    case "$1|$2" in
    "README.md|make demo"*) echo setup ;;
    "README.md|shardify /data/raw /data/shards"*) echo quick ;;
    "docs/guide/boxes-and-masks.md|shardify coco/train2017/"*) echo masks ;;
    "docs/guide/boxes-and-masks.md|model = torchvision.models.detection.maskrcnn"*) echo maskrcnn ;;
    "docs/guide/boxes-and-masks.md|shardify rgbd/"*) echo second ;;
    "docs/guide/remote.md|export SHARDKIT_CACHE_DIR="*) echo cache ;;
    "docs/guide/remote.md|export AWS_ENDPOINT_URL="*) echo s3 ;;
    "docs/guide/fields.md|# img2dataset output"*) echo fields ;;
    "docs/guide/parts.md|shardify --part 0/3 SRC DST"*) echo parts ;;
    "docs/guide/parts.md|mkdir results"*) echo check_parts ;;
    "docs/guide/benchmarks.md|shardify images/ shards/"*) echo probe ;;
    "docs/guide/sources.md|# hf/train/"*) echo hf ;;
    "docs/guide/sources.md|shardify 'https://data.example.org/"*) echo urls ;;
    "docs/guide/nightly.md|SHARDKIT_SRC=/data/raw"*) echo nightly ;;
    "docs/guide/c-library.md|#define SHARDKIT_EXPERIMENTAL"*) echo tiers ;;
    "docs/guide/pytorch.md|make python"*) echo install ;;
    "docs/guide/pytorch.md|import torch, shardkit"*) echo torch ;;
    "docs/guide/pytorch.md|import gc, torch, torch.distributed as dist"*) echo ddp ;;
    "docs/guide/pytorch.md|ds = shardkit.Dataset(\"shards\")  # declaring"*) echo torch_fields ;;
    "docs/guide/pytorch.md|mix = shardkit.Mixture("*) echo mixture ;;
    esac
}

# the substitutions (the header's list) of the block's text
substitute() {
    sed -e "s|https://data.example.org|${HTTP:-https://data.example.org}|g" \
        -e "s|http://127.0.0.1:9000|${MOTO:-http://127.0.0.1:9000}|g" \
        -e "s|/data/|$D/data/|g" -e "s|/tmp/look|$D/tmp/look|g" -e "s|/scratch/|$D/scratch/|g" "$1"
}

# A sanitizer build's extension needs the sanitizer runtimes loaded first
# in every Python that imports it (a block's own python3, the venv's): the
# blocks run with them preloaded (leaks are the other tests' to find).
asan=""
! ldd "$BUILD"/python/shardkit/_native*.so 2>/dev/null | grep -q libasan ||
    asan="$(cc -print-file-name=libasan.so):$(cc -print-file-name=libubsan.so)"

# A block that runs longer than this (seconds) fails: one that hangs, or
# does as written more than a test should (6 s on a loaded 2-core machine
# is typical; Mask R-CNN's forward pass, 30 s, under a sanitizer 60 s)
limit="timeout -k 10 ${DOC_BLOCKS_TIMEOUT:-240}"

# run_block NNN KIND: run the block in $D (or $where), its output in $D/.log
run_block() {
    [ -z "$asan" ] || export LD_PRELOAD="$asan" ASAN_OPTIONS="detect_leaks=0:abort_on_error=0"
    case $2 in
    sh)
        { substitute "$T/blocks/$1.sh"; printf '%s\n' "$after"; } >"$D/.block.sh"
        (cd "$where" && $limit sh -e "$D/.block.sh") >"$D/.log" 2>&1 ;;
    python)
        { printf '%s\n' "$prelude"; substitute "$T/blocks/$1.py"; printf '%s\n' "$after"; } >"$D/.block.py"
        export PYTHONPATH="$BUILD/python" PYTHONDONTWRITEBYTECODE=1
        if [ -n "$torchrun" ]; then
            # --redirects 2 --tee 2: Debian 12's torchrun (torch 1.13 on Python
            # 3.11) fails with its default, 0; a free port of its own
            port=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
            (cd "$where" && $limit "$PYTHON" -m torch.distributed.run --nnodes 1 --nproc_per_node 2 \
                --master_addr 127.0.0.1 --master_port "$port" --redirects 2 --tee 2 "$D/.block.py") >"$D/.log" 2>&1
        else
            (cd "$where" && $limit "$PYTHON" "$D/.block.py") >"$D/.log" 2>&1
        fi ;;
    c)
        { printf '%s\n' "$prelude"; cat "$T/blocks/$1.c"; printf '%s\n' "$after"; } >"$D/.block.c"
        cc -std=c11 -Werror=implicit-function-declaration -o "$D/.block" "$D/.block.c" \
            -I"$SHARDKIT_TOP/include" -L"$BUILD" -lshardkit -Wl,-rpath,"$BUILD" >"$D/.log" 2>&1 &&
            (cd "$where" && $limit "$D/.block") >>"$D/.log" 2>&1 ;;
    esac
}

# the generated layouts the fixtures take, made once for every case
layouts
# the blocks to run: at least one, in the pages DOC_BLOCKS_ONLY picks
awk -F'\t' -v only="$ONLY" '$4 != "listing" && (only == "" || $2 == only)' "$T/blocks.list" | grep -q . ||
    die "no block to run${ONLY:+ in $ONLY}"

# page_case PAGE: the name of PAGE's case (every_block_of_PAGE_runs)
page_case() { echo "every_block_of_$(echo "$1" | tr './-' '___')_runs"; }

# run_blocks PAGE...: run the blocks of these pages (but those DOC_BLOCKS_ONLY
# leaves out), each block in its own directory under $C/run, with its fixture
# and check; print how many blocks ran per page; fail naming every block that
# failed or has no fixture
run_blocks() {
    failed=""
    : >"$C/counts"
    while IFS='	' read -r n page line kind first <&3; do
        case " $* " in *" $page "*) ;; *) continue ;; esac
        [ -z "$ONLY" ] || [ "$page" = "$ONLY" ] || continue
        block="$page:$line"
        [ "$kind" != listing ] || { echo "$page listing" >>"$C/counts"; continue; }
        name=$(fixture_of "$page" "$first")
        if [ -z "$name" ]; then
            echo "FAIL: $block: a $kind block with no fixture in tests/cli/test_doc_blocks.sh ('$first')" >&2
            failed="$failed $block"
            continue
        fi
        D=$C/run/$n
        mkdir -p "$D"
        cd "$D"
        prelude="import shardkit" after="" where=$D torchrun="" skip_block=""
        # the fixture and block in a subshell: what they export stays theirs
        status=0
        (
            set -e
            "fixture_$name"
            [ -z "$skip_block" ] || exit 77
            started=$(date +%s)
            run_block "$n" "$kind" || { rc=$?
                [ $rc -ne 124 ] || echo "(stopped after ${DOC_BLOCKS_TIMEOUT:-240} s)" >>"$D/.log"
                echo "FAIL: $block (fixture $name): the block failed:" >&2
                sed 's/^/    | /' "$T/blocks/$n".* >&2
                tail -n 30 "$D/.log" | sed 's/^/    > /' >&2; exit 1; }
            ! command -v "check_$name" >/dev/null 2>&1 || "check_$name"
            echo "-- $block: ran ($name, $(($(date +%s) - started)) s)"
        ) || status=$?
        cd "$C"
        stop_services "$D"
        case $status in
        0) echo "$page ran" >>"$C/counts" ;;
        77) echo "$page skipped" >>"$C/counts" ;;
        *) failed="$failed $block" ;;
        esac
    done 3<"$T/blocks.list"
    say "blocks run per page"
    sort "$C/counts" | uniq -c | awk '{ printf "   %-40s %d %s\n", $2, $1, $3 }'
    [ -z "$failed" ] || die "blocks of the documentation fail or have no fixture:$failed"
}

case_every_block_of_README_md_runs() { run_blocks README.md; }
case_every_block_of_docs_guide_benchmarks_md_runs() { run_blocks docs/guide/benchmarks.md; }
case_every_block_of_docs_guide_boxes_and_masks_md_runs() { run_blocks docs/guide/boxes-and-masks.md; }
case_every_block_of_docs_guide_c_library_md_runs() { run_blocks docs/guide/c-library.md; }
case_every_block_of_docs_guide_fields_md_runs() { run_blocks docs/guide/fields.md; }
case_every_block_of_docs_guide_nightly_md_runs() { run_blocks docs/guide/nightly.md; }
case_every_block_of_docs_guide_parts_md_runs() { run_blocks docs/guide/parts.md; }
case_every_block_of_docs_guide_pytorch_md_runs() { run_blocks docs/guide/pytorch.md; }
case_every_block_of_docs_guide_remote_md_runs() { run_blocks docs/guide/remote.md; }
case_every_block_of_docs_guide_sources_md_runs() { run_blocks docs/guide/sources.md; }

# the pages with no case above (listings only, or a new page): their blocks
# run here, and a block of no fixture fails here, naming itself
case_every_block_of_a_page_without_a_case_of_its_own_runs() {
    others=""
    for page in $(cut -f 2 "$T/blocks.list" | sort -u); do
        grep -q "^case_$(page_case "$page")() *{" "$0" || others="$others $page"
    done
    [ -z "$others" ] || run_blocks $others
}

# The self-test: the test fails on a block that fails, and on a block it has
# no fixture for, naming it (a copy of the docs; one page)
case_a_broken_block_and_a_block_of_no_fixture_fail_the_test_naming_the_block() {
    # (not in the run the self-test makes)
    [ -z "${DOC_BLOCKS_TOP:-}" ] || return 0
    mkdir -p "$C/broken/docs/guide"
    cp "$SHARDKIT_TOP/README.md" "$C/broken/"
    sed 's|^shardify merge DST |shardify merge --no-such-option DST |' "$SHARDKIT_TOP/docs/guide/parts.md" \
        >"$C/broken/docs/guide/parts.md"
    ! cmp -s "$SHARDKIT_TOP/docs/guide/parts.md" "$C/broken/docs/guide/parts.md" ||
        die "the self-test's broken block is not in docs/guide/parts.md"
    printf '\n```sh\nshardify new/ shards/\n```\n' >>"$C/broken/docs/guide/parts.md"
    set +e
    # every case of that run (not the one this run picked)
    DOC_BLOCKS_TOP=$C/broken DOC_BLOCKS_ONLY=docs/guide/parts.md SHARDKIT_CASE='*' \
        sh "$0" >"$C/self.log" 2>&1
    got=$?
    set -e
    [ "$got" -ne 0 ] || { cat "$C/self.log" >&2; die "the test passed a broken block"; }
    line=$(grep -n '^shardify --part 0/3 SRC DST' "$C/broken/docs/guide/parts.md" | cut -d: -f1)
    must_say "FAIL: docs/guide/parts.md:$((line - 1)) (fixture parts): the block failed" "$C/self.log"
    must_say "shardify merge --no-such-option DST" "$C/self.log"
    must_say "a sh block with no fixture in tests/cli/test_doc_blocks.sh ('shardify new/ shards/')" "$C/self.log"
}

run_cases
