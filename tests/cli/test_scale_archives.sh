#!/bin/sh
# A folder of WebDataset tars with 200,000 entries (100,000 images, each with
# a caption sidecar) converted with several threads while other processes
# keep the machine's cores busy: the threads that read the archives, convert
# and spool must not share a structure one of them grows (a conversion of a
# million entries crashed this way), and every sample and caption must come
# out as the tars hold them, checked by an independent route (Python's
# tarfile and xxhash against the index lines) and by shardcheck.
. "$(dirname "$0")/lib.sh"

GEN=$SHARDKIT_BIN/../bench/gen_archives
[ -x "$GEN" ] || die "no '$GEN' (make builds it)"
SAMPLES=${SCALE_SAMPLES:-100000}

# the set-up every case reads: an img2dataset-style folder ($T/src) of
# $SAMPLES samples in tars of 10000, .jpg and .txt, and its conversion ($T/dst)
# with 4 threads, captions as a field, the machine loaded
say "an img2dataset-style folder: $SAMPLES samples in tars of 10000, .jpg and .txt"
mkdir -p "$T/src"
"$GEN" --per-tar 10000 "$T/src" "$SAMPLES"
[ "$(ls "$T/src" | wc -l)" -eq $(((SAMPLES + 9999) / 10000)) ] || die "the generator wrote $(ls "$T/src")"

# load: one busy process per core, so that the run's threads are preempted
# at any point (the race showed only on a loaded machine); stopped when the
# test ends, should the run not end
busy=""
for _ in $(seq "$(nproc)"); do
    sh -c 'while :; do :; done' &
    busy="$busy $!"
done
on_exit '[ -z "$busy" ] || kill $busy 2>/dev/null || true'

say "shardify --archives with 4 threads, captions as a field, the machine loaded"
shardify --archives "$T/src" "$T/dst" --labels none --field caption=text,from=.txt \
    --threads 4 --size 32 --codec raw >"$T/out" 2>"$T/err" || { cat "$T/err" >&2; die "shardify failed"; }
kill $busy 2>/dev/null || true
busy=""

case_every_sample_converted_with_its_caption_under_load_no_rejects() {
    [ "$(json "$T/dst/manifest.json" "d['counts']['samples']")" -eq "$SAMPLES" ] ||
        die "$(json "$T/dst/manifest.json" "d['counts']") samples, expected $SAMPLES"
    [ "$(json "$T/dst/manifest.json" "d['counts']['fields']['caption']")" -eq "$SAMPLES" ] ||
        die "not every sample has its caption"
    [ "$(json "$T/dst/manifest.json" "len(d['rejected'])")" -eq 0 ] ||
        die "rejects: $(head -c 400 "$T/dst/manifest.json")"
}

case_every_tar_member_is_a_sample_or_its_caption_with_the_identity_the_tar_gives_pythons_tarfile() {
    "$PYTHON" - "$T/src" "$T/dst/index.jsonl" <<'EOF' || die "the index does not match the tars"
import json, os, sys, tarfile, xxhash
src, index = sys.argv[1:3]
want = {}
for name in sorted(os.listdir(src)):
    with tarfile.open(os.path.join(src, name)) as tar:
        for m in tar:
            data = tar.extractfile(m).read()
            want[name + "/" + m.name] = (len(data), xxhash.xxh3_64_hexdigest(data))
seen = 0
for line in open(index):
    d = json.loads(line)
    k = d["key"]
    assert (d["source_bytes"], d["source_xxh3"]) == want.pop(k), k
    cap = d["fields"]["caption"]
    assert (cap["source_bytes"], cap["source_xxh3"]) == want.pop(k[:-4] + ".txt"), k
    seen += 1
assert not want, "members with no sample: %r" % sorted(want)[:5]
print(seen, "samples match")
EOF
}

case_shardcheck_deep_source_agrees() {
    shardcheck --deep --source "$T/src" "$T/dst" >"$C/check" 2>&1 ||
        { cat "$C/check" >&2; die "shardcheck failed"; }
}

run_cases
