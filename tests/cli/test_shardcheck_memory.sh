#!/bin/sh
# test_shardcheck_memory.sh - shardcheck's memory does not follow the
# dataset: the peak resident set size of `shardcheck DST` and `shardcheck
# --deep DST` grows by at most 32 bytes per sample from SMALL to LARGE samples
# (the issue "Internet scale" asks for 10M samples checked in memory that does
# not grow with them; before, the peak grew by about 110 bytes a sample).  The
# datasets are img2dataset-like but cheap to make: tiny raw images, each with a
# caption, in shards of 1000, written by tests/fixtures/v2_writer.py with their
# key table (tests/cli/index_files.py); the peak is the child's ru_maxrss.
. "$(dirname "$0")/lib.sh"

# a sanitizer's allocator keeps what is freed (ASan's quarantine) and adds
# its own: its peaks are not shardcheck's
if [ "${SHARDKIT_TSAN:-0}" = 1 ] || ldd "$SHARDKIT_BIN/shardcheck" 2>/dev/null | grep -q libasan; then
    skip "peaks under a sanitizer are its allocator's, not shardcheck's"
fi

SMALL=${MEMORY_SMALL:-70000}
LARGE=${MEMORY_LARGE:-210000}
BOUND=32 # bytes per sample

# the two datasets every case reads, of tiny captioned images: $SMALL and $LARGE
# samples, each verified
say "two datasets of tiny captioned images: $SMALL and $LARGE samples"
for n in "$SMALL" "$LARGE"; do
    "$PYTHON" - "$SHARDKIT_TOP/tests/fixtures" "$T/d$n" "$n" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from v2_writer import Decl, Sample, write_dataset
dst, n = sys.argv[2], int(sys.argv[3])
pixels = bytes(range(192))  # 8 x 8 RGB
samples = [Sample(b"%05d.tar/%09d.jpg" % (i // 10000, i), None, 8, 8, pixels,
                  {"caption": "a photo of thing number %d, on a table" % i}) for i in range(n)]
write_dataset(dst, samples, labels=[], fields=[Decl("caption", "text", sidecar=".txt")],
              shard_samples=1000)
PY
    "$PYTHON" "$SHARDKIT_TOP/tests/cli/index_files.py" keys "$T/d$n"
    shardcheck --deep "$T/d$n" >"$T/out" || { cat "$T/out"; die "the $n samples do not verify"; }
done

# peak CMD...: the peak resident set size of CMD, in KiB
peak() {
    "$PYTHON" -c '
import os, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(p.pid, 0)
p.returncode = os.waitstatus_to_exitcode(status)
assert p.returncode == 0, (sys.argv[1:], p.returncode)
print(usage.ru_maxrss)' "$@"
}

# grows_at_most PASS: `shardcheck PASS` peaks at most $BOUND bytes more per sample
# from $SMALL to $LARGE samples
grows_at_most() {
    pass=$1
    small=$(peak shardcheck $pass --threads 2 "$T/d$SMALL")
    large=$(peak shardcheck $pass --threads 2 "$T/d$LARGE")
    per=$(((large - small) * 1024 / (LARGE - SMALL)))
    echo "   peak $small KiB at $SMALL samples, $large KiB at $LARGE: $per bytes per sample"
    [ "$per" -le "$BOUND" ] ||
        die "shardcheck $pass: the peak grows by $per bytes a sample" \
            "($small KiB at $SMALL samples, $large KiB at $LARGE)"
}

case_shardcheck_peaks_at_most_32_bytes_more_per_sample() {
    grows_at_most ""
}

case_shardcheck_deep_peaks_at_most_32_bytes_more_per_sample() {
    grows_at_most --deep
}

run_cases
