# test_extremes.sh - anything shardify writes, every tool opens: datasets with
# extreme but legal content (the longest keys, keys too long to be samples,
# thousands of labels, no samples at all, every reject reason shardify can
# give, from a directory and from an archive) are written, checked against
# the JSON Schemas, and opened with shardcheck --deep --source, shardcat and
# shardbench shards (which read through the library's strict manifest
# loader).
. "$(dirname "$0")/lib.sh"

F=$SHARDKIT_FIXTURES
SCHEMAS=$SHARDKIT_TOP/manifests

# open_with_every_tool NAME SRC DST: the dataset DST, made from SRC, verifies
# and opens in every tool; every sample whose key fits a file name exports.
open_with_every_tool() {
    name=$1 src=$2 dst=$3
    "$PYTHON" - "$dst" "$SCHEMAS" <<'EOF' || die "$name: output does not match the schemas"
import json, os, sys
import jsonschema
dst, schemas = sys.argv[1:3]
m = json.load(open(os.path.join(dst, "manifest.json")))
jsonschema.validate(m, json.load(open(os.path.join(schemas, "manifest.schema.json"))))
line = jsonschema.Draft202012Validator(
    json.load(open(os.path.join(schemas, "index-line.schema.json"))))
for l in open(os.path.join(dst, "index.jsonl")):
    line.validate(json.loads(l))
EOF
    shardcheck "$dst" --deep --source "$src" --visitation 1,3 >"$C/check.out" 2>&1 ||
        { cat "$C/check.out" >&2; die "$name: shardcheck --deep --source does not verify"; }
    must_say "shardcheck: verified" "$C/check.out"
    rm -rf "$C/cat"
    set +e
    shardcat "$dst" --out "$C/cat" >"$C/cat.out" 2>&1
    got=$?
    set -e
    # 1 is allowed only for keys too long for one file name (shardcat's own limit)
    [ $got -eq 0 ] || { [ $got -eq 1 ] &&
        ! grep -v -e "is too long for a file name" -e "^shardcat: wrote " "$C/cat.out"; } ||
        { cat "$C/cat.out" >&2; die "$name: shardcat exited $got"; }
    "$PYTHON" - "$dst" "$C/cat" <<'EOF' || { cat "$C/cat.out" >&2; die "$name: shardcat did not export"; }
import json, os, sys
dst, out = sys.argv[1:3]
names = set(os.listdir(out)) if os.path.isdir(out) else set()
for l in open(os.path.join(dst, "index.jsonl")):
    k = json.loads(l).get("key")
    if k is not None and len(k.encode()) < 120 and "/" not in k:
        assert k + ".png" in names, "%s not exported" % k
EOF
    set +e
    shardbench shards "$dst" --epochs 1 --threads 2 >"$C/bench.out" 2>&1
    got=$?
    set -e
    samples=$(json "$dst/manifest.json" "d['counts']['samples']")
    # an empty dataset may say that nothing was read (1); it must open
    [ $got -eq 0 ] || { [ $got -eq 1 ] && [ "$samples" -eq 0 ]; } ||
        { cat "$C/bench.out" >&2; die "$name: shardbench shards exited $got"; }
    grep -qE "^shards .*: $samples samples? per epoch" "$C/bench.out" ||
        { cat "$C/bench.out" >&2; die "$name: shardbench did not read $samples samples"; }
}

# the long keys the first cases convert: a tree ($T/long) and the same files as
# a tar ($T/long.tar); keys of 4095 and 4096 bytes, longer ones, one not UTF-8
mkdir -p "$T/long"
cp "$F/rgb.jpg" "$T/long/short.jpg"
"$PYTHON" - "$T/long" "$F/rgb.jpg" "$T/long.tar" <<'EOF'
import io, os, sys, tarfile
root, image, tar = sys.argv[1:4]
data = open(image, "rb").read()
keys = [b"short.jpg"]

def put(key):
    """Create root/key (key: bytes, any length) one directory at a time."""
    keys.append(key)
    parts = key.split(b"/")
    fd = os.open(root, os.O_RDONLY)
    for p in parts[:-1]:
        try:
            os.mkdir(p, dir_fd=fd)
        except FileExistsError:
            pass
        nfd = os.open(p, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    out = os.open(parts[-1], os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(out, data)
    os.close(out)
    os.close(fd)

def key(total, top, leaf=b".jpg"):
    """A key of exactly `total` bytes under directory `top`: components of at
    most 255 bytes (NAME_MAX)."""
    k = top
    i = 0
    while len(k) + 1 + len(leaf) < total:
        room = total - len(k) - 1 - len(leaf)
        k += b"/" + (b"%03d" % i + b"d" * 252)[:min(255, room if room <= 255 else 250)]
        i += 1
    k = k[:total - len(leaf)] + leaf
    assert len(k) == total and all(0 < len(p) <= 255 for p in k.split(b"/")), k
    return k

put(b"n" * 251 + b".jpg")                  # the longest file name
put(key(4095, b"k4095"))
put(key(4096, b"k4096"))
put(key(4097, b"k4097"))
put(key(30000, b"k30000"))                 # 118 levels deep
put(key(5000, b"latin1-\xe9"))             # not UTF-8 and too long: key_hex

# the same files as a tar (pax: names of any length)
with tarfile.open(tar, "w", format=tarfile.PAX_FORMAT, encoding="utf-8",
                  errors="surrogateescape") as t:
    for k in keys:
        info = tarfile.TarInfo(os.fsdecode(k))
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
EOF

# ---- the longest keys -------------------------------------------------------------

case_keys_of_4095_and_4096_bytes_are_samples_longer_keys_are_rejects_with_their_reason() {
    shardify "$T/long" "$C/long.out" --size 32 --shard-size 64K --quiet --json >"$C/long.json"
    "$PYTHON" - "$C/long.out" <<'EOF'
import json, os, sys
dst = sys.argv[1]
m = json.load(open(os.path.join(dst, "manifest.json")))
keys = [json.loads(l).get("key", "") for l in open(os.path.join(dst, "index.jsonl"))]
lengths = sorted(len(k.encode()) for k in keys)
assert lengths == [9, 255, 4095, 4096], lengths
rejects = {len(r["key"].encode()) if "key" in r else len(r["key_hex"]) // 2: r["reason"]
           for r in m["rejected"]}
assert rejects == {4097: "key is longer than 4096 bytes", 30000: "key is longer than 4096 bytes",
                   5000: "key is longer than 4096 bytes"}, rejects
EOF
    open_with_every_tool "long keys" "$T/long" "$C/long.out"
}

case_the_same_tree_as_a_tar_archive_the_same_samples_and_rejects() {
    shardify "$T/long.tar" "$C/tar.out" --size 32 --shard-size 64K --quiet ||
        die "an archive with long member names fails the run"
    [ "$(json "$C/tar.out/manifest.json" "(d['counts']['samples'], d['counts']['rejected'])")" = "(4, 3)" ] ||
        die "the archive does not give 4 samples and 3 rejects"
    open_with_every_tool "long keys (tar)" "$T/long.tar" "$C/tar.out"
}

# ---- the most labels ------------------------------------------------------------------

case_3000_labels_some_of_255_bytes_and_some_not_utf8() {
    SRC=$C/labels
    "$PYTHON" - "$SRC" <<'EOF'
import os, struct, sys, zlib
root = sys.argv[1]
def png(v):
    raw = b"".join(b"\0" + bytes((v, 255 - v, v // 2)) * 8 for _ in range(8))
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 8, 8, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
names = [b"c%04d" % i for i in range(2990)]
names += [(b"%d" % i) * 255 for i in range(1, 6)][:5]       # 255-byte names
names += [b"latin1-\xe9%d" % i for i in range(5)]          # not UTF-8
os.makedirs(root)
for i, n in enumerate(names):
    d = os.path.join(os.fsencode(root), n[:255])
    os.mkdir(d)
    open(os.path.join(d, b"x.png"), "wb").write(png(i % 256))
EOF
    shardify "$SRC" "$C/labels.out" --size 8 --quiet
    [ "$(json "$C/labels.out/manifest.json" "len(d['labels']) == 3000 == len(d['counts']['by_label'])")" = True ] ||
        die "expected 3000 labels"
    open_with_every_tool "3000 labels" "$SRC" "$C/labels.out"
}

# ---- no samples ------------------------------------------------------------------------

case_no_candidates_at_all_and_nothing_but_rejects() {
    mkdir -p "$C/empty" "$C/allbad"
    echo "not an image" >"$C/empty/README.txt"
    cp "$F/truncated.jpg" "$F/text.jpg" "$F/zero.jpg" "$C/allbad/"
    for name in empty allbad; do
        shardify "$C/$name" "$C/$name.out" --quiet --allow-empty
        [ "$(json "$C/$name.out/manifest.json" "(d['counts']['samples'], d['shards'])")" = "(0, [])" ] ||
            die "$name: expected an empty dataset"
        open_with_every_tool "$name" "$C/$name" "$C/$name.out"
    done
}

# ---- every reject reason ------------------------------------------------------------------

case_every_reject_reason_shardify_gives_each_listed_and_verified() {
    SRC=$C/rejects
    mkdir -p "$SRC/bad" "$SRC/good"
    for f in zero.jpg text.jpg rgb.bmp twelve_bit.jpg lossless.jpg bomb.jpg bomb.png truncated.jpg \
             bitflip.jpg junk_after_scan.jpg bad_progression.jpg truncated.png badcrc.png \
             adler_mismatch.png trns_too_long.png truncated.webp truncated.gif; do
        cp "$F/$f" "$SRC/bad/$f"
    done
    cp "$F/rgb.jpg" "$F/rgb.png" "$F/junk_before_dqt.jpg" "$SRC/good/"
    printf 'not an image' >"$SRC/bad/$(printf 'not-utf8-\377.jpg')"
    ln -s ../good/rgb.jpg "$SRC/bad/link.jpg"
    mkfifo "$SRC/bad/fifo.jpg"
    "$PYTHON" - "$SRC/bad" <<'EOF'
import os, random, struct, sys, zlib
d = sys.argv[1]
chunk = lambda t, b: struct.pack(">I", len(b)) + t + b + struct.pack(">I", zlib.crc32(t + b))
def png(w, h, raw):
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
# 1x60000: tiny, but its output at --size 512 would be 512x30720000
open(os.path.join(d, "sliver.png"), "wb").write(png(1, 60000, b"\0\0\0\0" * 60000))
# noise compresses to nothing: over --max-file-size 100K
rng = random.Random(7)
raw = b"".join(b"\0" + bytes(rng.randrange(256) for _ in range(600)) for _ in range(200))
open(os.path.join(d, "large.png"), "wb").write(png(200, 200, raw))
EOF
    shardify "$SRC" "$C/rejects.out" --max-file-size 100K --quiet --json >"$C/rejects.json"
    "$PYTHON" - "$C/rejects.out" <<'EOF'
import json, os, sys
m = json.load(open(os.path.join(sys.argv[1], "manifest.json")))
reasons = {r.get("key", r.get("key_hex")): r["reason"] for r in m["rejected"]}
want = {
    "bad/zero.jpg": "not an image: empty file",
    "bad/text.jpg": "not an image: unknown signature",
    "bad/rgb.bmp": "unsupported: BMP",
    "bad/twelve_bit.jpg": "unsupported: 12-bit JPEG",
    "bad/lossless.jpg": "unsupported: ",
    "bad/bomb.jpg": "declared 40000x40000 exceeds --max-pixels 100000000",
    "bad/bomb.png": "declared 100000x100000 exceeds --max-pixels 100000000",
    "bad/sliver.png": "1x60000 image would become 512x30720000, over --max-pixels",
    "bad/large.png": "file of ",
    "bad/truncated.jpg": "truncated JPEG",
    "bad/bitflip.jpg": "corrupt JPEG data: ",
    "bad/junk_after_scan.jpg": "corrupt JPEG data: 100 extraneous bytes before marker 0xd9",
    "bad/bad_progression.jpg": "corrupt JPEG data: inconsistent progression sequence",
    "bad/truncated.png": "truncated PNG",
    "bad/badcrc.png": "corrupt PNG: IDAT: CRC error",
    "bad/adler_mismatch.png": "corrupt PNG: IDAT: incorrect data check",
    "bad/trns_too_long.png": "corrupt PNG: tRNS: invalid",
    "bad/truncated.webp": "corrupt WEBP: ",
    "bad/truncated.gif": "corrupt GIF: ",
    "6261642f6e6f742d757466382dff2e6a7067": "not an image: unknown signature",
    "bad/link.jpg": "not a regular file: symbolic link (never followed)",
    "bad/fifo.jpg": "not a regular file: fifo",
}
missing = {k: v for k, v in want.items() if k not in reasons or v not in reasons[k]}
assert not missing, "missing or other reasons: %s\ngot: %s" % (missing, reasons)
assert len(reasons) == len(want), sorted(set(reasons) - set(want))
assert m["counts"]["samples"] == 3 and m["counts"]["warned"] == 1, m["counts"]
EOF
    open_with_every_tool "every reject reason" "$SRC" "$C/rejects.out"
}

case_the_reject_reasons_only_an_archive_gives() {
    "$PYTHON" - "$F/rgb.jpg" "$C/rejects.tar" <<'EOF'
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
with tarfile.open(sys.argv[2], "w", format=tarfile.PAX_FORMAT) as t:
    for name in ("ok.jpg", "../up.jpg", "/abs.jpg", "ok.jpg", "k" * 5000 + ".jpg"):
        info = tarfile.TarInfo(name)
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    link = tarfile.TarInfo("nolink.jpg")
    link.type = tarfile.LNKTYPE
    link.linkname = "missing.jpg"
    t.addfile(link)
EOF
    shardify "$C/rejects.tar" "$C/tar-rejects.out" --quiet
    "$PYTHON" - "$C/tar-rejects.out" <<'EOF'
import json, os, sys
m = json.load(open(os.path.join(sys.argv[1], "manifest.json")))
reasons = sorted(r["reason"].split(":")[0] for r in m["rejected"])
assert reasons == ["duplicate entry in archive", "hard link to 'missing.jpg', which no earlier "
                   "entry of the archive has", "key is longer than 4096 bytes",
                   "unsafe name in archive", "unsafe name in archive"], reasons
assert m["counts"]["samples"] == 1, m["counts"]
EOF
    open_with_every_tool "every archive reject reason" "$C/rejects.tar" "$C/tar-rejects.out"
}

run_cases
