#!/bin/sh
# What the threads of an archive's conversion hold at once is held to
# --memory, not to slots x --max-file-size: a 30 KB .tar.zst of six 150 MiB
# members (a decompression bomb) is converted with --memory 200M within a
# few hundred MB (every slot buffering its member took a GB), the members
# rejected as no image, and a directory's files likewise; a sidecar is read
# up to --max-field-bytes, not
# --max-file-size; --memory is a size.
. "$(dirname "$0")/lib.sh"

command -v zstd >/dev/null || die "no zstd (scripts/deps.sh test installs it)"
# the bomb every case reads: $T/bomb/bomb.tar.zst
mkdir -p "$T/bomb"
"$PYTHON" - "$T/bomb.tar" "$SHARDKIT_FIXTURES/rgb.jpg" <<'EOF'
import io, sys, tarfile
class Zeros(io.RawIOBase):
    def __init__(self, n): self.n = n
    def readable(self): return True
    def readinto(self, b):
        k = min(len(b), self.n); b[:k] = bytes(k); self.n -= k; return k
with tarfile.open(sys.argv[1], "w") as t:
    for i in range(6):
        ti = tarfile.TarInfo("m%d.jpg" % i); ti.size = 150 << 20
        t.addfile(ti, io.BufferedReader(Zeros(ti.size)))
    t.add(sys.argv[2], arcname="cap.jpg")                      # an image whose caption
    ti = tarfile.TarInfo("cap.txt"); ti.size = 40 << 20       # is 40 MiB
    t.addfile(ti, io.BufferedReader(Zeros(ti.size)))
EOF
zstd -q --rm "$T/bomb.tar" -o "$T/bomb/bomb.tar.zst"
[ "$(wc -c <"$T/bomb/bomb.tar.zst")" -lt 200000 ] || die "the bomb is not small"

# the bomb converted once, as the first case measures it and the sidecar case
# reads its rejects: the peak in $T/dst.kib, the messages in $T/dst.err
peak_kib shardify --archives "$T/bomb" "$T/dst" --labels none --memory 200M --threads 2 --allow-empty \
    --field caption=text,from=.txt,required --quiet >"$T/dst.kib"
cp "$T/err" "$T/dst.err"
# one member (150 MiB), its decode attempt and the program; a sanitizer build
# keeps freed memory aside for a while (ASan's quarantine, 256 MiB)
limit=460000
nm "$SHARDKIT_BIN/shardify" 2>/dev/null | grep -q __asan_ && limit=$((limit + 300000))

case_six_150_mib_members_with_memory_200m_held_one_at_a_time_not_all_at_once() {
    kib=$(cat "$T/dst.kib")
    [ -f "$T/dst/manifest.json" ] || { cat "$T/dst.err" >&2; die "no dataset"; }
    [ "$(json "$T/dst/manifest.json" "d['counts']['rejected']")" -eq 7 ] ||
        die "the members are not all rejects"
    echo "peak RSS $kib KiB (limit $limit)"
    [ "$kib" -lt "$limit" ] || die "peak RSS $kib KiB: the members were held at once"
}

case_a_directory_of_eight_150_mib_files_4_threads_memory_100m_read_one_at_a_time_in_order() {
    mkdir -p "$C/big"
    for i in 0 1 2 3 4 5 6 7; do truncate -s 150M "$C/big/f$i.jpg"; done   # sparse: no disk used
    cp "$SHARDKIT_FIXTURES/rgb.jpg" "$C/big/small.jpg"
    kib=$(peak_kib shardify "$C/big" "$C/bigdst" --labels none --memory 100M --threads 4 --quiet)
    [ -f "$C/bigdst/manifest.json" ] || { cat "$T/err" >&2; die "no dataset of the directory"; }
    [ "$(json "$C/bigdst/manifest.json" "d['counts']['rejected'], d['counts']['samples']")" = "(8, 1)" ] ||
        die "counts: $(json "$C/bigdst/manifest.json" "d['counts']")"
    echo "peak RSS $kib KiB (limit $limit)"
    [ "$kib" -lt "$limit" ] || die "peak RSS $kib KiB: the files were held at once"
}

case_a_sidecar_is_read_up_to_max_field_bytes_not_max_file_size_a_reason_no_40_mib_read() {
    [ -f "$T/dst/manifest.json" ] || { cat "$T/dst.err" >&2; die "no dataset"; }
    "$PYTHON" - "$T/dst/manifest.json" <<'EOF' || die "the caption's reason"
import json, sys
r = {x["key"]: x["reason"] for x in json.load(open(sys.argv[1]))["rejected"]}
why = r["bomb.tar.zst/cap.jpg"]
assert why.startswith("field 'caption'") and "41943040 bytes exceeds" in why and "16777216" in why, why
assert all(r["bomb.tar.zst/m%d.jpg" % i].startswith("not an image") for i in range(6)), r
EOF
}

case_memory_takes_a_size() {
    must_fail 2 shardify --archives "$T/bomb" "$C/x" --memory lots
    must_say "--memory: 'lots' is not a size" "$T/err"
    must_fail 2 shardify --archives "$T/bomb" "$C/x" --memory 0
}

run_cases
