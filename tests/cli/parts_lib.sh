# parts_lib.sh - what the tests of a conversion in parts share (sourced
# after lib.sh by test_parts.sh and test_slurm.sh).

# same_as_single SINGLE MERGED SAMPLES: the merged dataset holds what the
# single run holds: manifests equal but where samples are stored (the shard
# files, and the index: each part's file, listed in "indexes", with its
# shard numbers counted from its first shard), index lines equal but their
# shard/record fields, lines and shards in step (a line's shard and record
# are where the single run's footers put its key), and the reader gives the
# same SAMPLES samples with the same pixels in stored order (shardbench
# --digests, --no-shuffle; a shuffled epoch permutes shards, whose
# boundaries follow the split).
same_as_single() {
    "$PYTHON" - "$1" "$2" <<'PY' || die "'$2' does not hold what the single run '$1' holds"
import json, os, sys
a, b = (json.load(open(os.path.join(d, "manifest.json"))) for d in sys.argv[1:])
differ = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
assert differ in (["index", "shards"], ["index", "indexes", "shards"]), differ
def files(d, m):
    """(index file, its first shard) in order, from the manifest"""
    if "index" in m:
        return [(m["index"]["file"], 0)]
    out, first = [], 0
    for x in m["indexes"]:
        out.append((x["file"], first))
        first += x["shards"]
    assert first == len(m["shards"]), "the index files cover other shards"
    return out
def lines(d, m):
    out, where = [], []
    for name, first in files(d, m):
        for l in open(os.path.join(d, name)):
            l = json.loads(l)
            where.append((l["shard"] + first, l["record"]))
            out.append({k: v for k, v in l.items() if k not in ("shard", "record")})
    # records in order: shard by shard, each from record 0
    assert where == sorted(where), "index lines out of shard order"
    counts = {}
    for s, r in where:
        assert r == counts.get(s, 0), "record numbers skip in shard %d" % s
        counts[s] = r + 1
    assert [counts.get(i, 0) for i in range(len(m["shards"]))] == [s["samples"] for s in m["shards"]]
    return out
assert sum(x["entries"] for x in b.get("indexes", [b.get("index")])) == a["index"]["entries"]
assert lines(sys.argv[1], a) == lines(sys.argv[2], b), "the samples or their order differ"
PY
    for d in "$1" "$2"; do
        shardbench shards "$d" --no-shuffle --threads 1 --epochs 1 --digests "$T/digests.${d##*/}" \
            >"$T/bench.out" 2>&1 || { cat "$T/bench.out" >&2; die "shardbench on '$d'"; }
    done
    [ "$(wc -l <"$T/digests.${1##*/}")" -eq "$3" ] || die "not every sample of '$1' was read"
    cmp -s "$T/digests.${1##*/}" "$T/digests.${2##*/}" ||
        die "the samples of '$2' differ from those of '$1'"
}
