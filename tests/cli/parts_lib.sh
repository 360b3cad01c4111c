# parts_lib.sh - what the tests of a conversion in parts share (sourced
# after lib.sh by test_parts.sh and test_slurm.sh).

# same_as_single SINGLE MERGED SAMPLES: the merged dataset holds what the
# single run holds: manifests equal but where samples are stored (the shard
# files, and so the index's size and hash), index lines equal but their
# shard/record fields, and the reader gives the same SAMPLES samples with
# the same pixels in stored order (shardbench --digests, --no-shuffle; a
# shuffled epoch permutes shards, whose boundaries follow the split).
same_as_single() {
    "$PYTHON" - "$1" "$2" <<'PY' || die "'$2' does not hold what the single run '$1' holds"
import json, os, sys
a, b = (json.load(open(os.path.join(d, "manifest.json"))) for d in sys.argv[1:])
differ = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
assert differ == ["index", "shards"], differ
assert a["index"]["entries"] == b["index"]["entries"]
def lines(d):
    out = []
    for l in open(os.path.join(d, "index.jsonl")):
        l = json.loads(l)
        out.append({k: v for k, v in l.items() if k not in ("shard", "record")})
    return out
assert lines(sys.argv[1]) == lines(sys.argv[2]), "the samples or their order differ"
PY
    for d in "$1" "$2"; do
        shardbench shards "$d" --no-shuffle --threads 1 --epochs 1 --digests "$T/digests.${d##*/}" \
            >"$T/bench.out" 2>&1 || { cat "$T/bench.out" >&2; die "shardbench on '$d'"; }
    done
    [ "$(wc -l <"$T/digests.${1##*/}")" -eq "$3" ] || die "not every sample of '$1' was read"
    cmp -s "$T/digests.${1##*/}" "$T/digests.${2##*/}" ||
        die "the samples of '$2' differ from those of '$1'"
}
