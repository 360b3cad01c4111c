#!/bin/sh
# test_label_names.sh - labels whose bytes are not UTF-8 (a class folder or
# a CSV label named in Latin-1) beside ASCII ones: the manifest writes them
# with %XX escapes, in the order of the names it writes, and every sample
# keeps its class; shardcheck --source re-derives the same labels.  Only two
# labels that the manifest would write alike (a UTF-8 folder literally named
# '%E9t%E9' beside the Latin-1 'été') are refused, naming both.
. "$(dirname "$0")/lib.sh"

OPTS="--quiet --size 32 --no-shuffle"
"$PYTHON" "$SHARDKIT_TOP/examples/make_demo_data.py" "$T/demo" --count 8 >/dev/null
IMAGES=$(cd "$T/demo" && find . -type f -name 'img_*.png' | sort | head -n 4)
[ "$(echo "$IMAGES" | wc -l)" -eq 4 ] || die "the demo data has too few PNGs"
E=$(printf 'x\351t\351')   # 'été' in Latin-1; the x keeps the trailing byte from
E=${E#x}                   # being taken by $(...)
PCT='%E9t%E9'              # how the manifest writes it

# tree DIR CLASS...: DIR/CLASS/N.png, a copy of the N-th PNG, for the N-th CLASS
tree() {
    dir=$1
    shift
    i=0
    for class in "$@"; do
        i=$((i + 1))
        mkdir -p "$dir/$class"
        cp "$T/demo/$(echo "$IMAGES" | sed -n "${i}p")" "$dir/$class/$i.png"
    done
}

# labels_of DST: the manifest's labels and by_label, then "key label-name"
# for each sample in stored order (keys as Python writes bytes)
labels_of() {
    "$PYTHON" - "$1" <<'PY'
import json, os, sys
d = sys.argv[1]
m = json.load(open(os.path.join(d, "manifest.json")))
print("labels", m["labels"], "by_label", sorted(m["counts"]["by_label"].items()))
for line in open(os.path.join(d, "index.jsonl")):
    s = json.loads(line)
    key = s["key"].encode() if "key" in s else bytes.fromhex(s["key_hex"])
    print(repr(key), m["labels"][s["label"]])
PY
}

say "class folders 'abc' and Latin-1 'été' (and 'zz') beside each other"
tree "$T/dirs" abc "$E" zz abc
shardify $OPTS "$T/dirs" "$T/d1" || die "shardify refused a non-UTF-8 class folder beside ASCII ones"
labels_of "$T/d1" >"$T/got"
cat >"$T/want" <<EOF
labels ['$PCT', 'abc', 'zz'] by_label [('$PCT', 1), ('abc', 2), ('zz', 1)]
b'abc/1.png' abc
b'abc/4.png' abc
b'zz/3.png' zz
b'\\xe9t\\xe9/2.png' $PCT
EOF
diff "$T/want" "$T/got" >&2 || die "samples do not keep their classes"
shardcheck --source "$T/dirs" "$T/d1" >"$T/check" 2>&1 || { cat "$T/check" >&2; die "shardcheck"; }
must_say "labels re-derived and checked" "$T/check"

say "the same classes from a CSV file: the same labels"
mkdir "$T/flat"
tree "$T/flat" p q r s
printf 'p/1.png,abc\nq/2.png,%s\nr/3.png,zz\ns/4.png,abc\n' "$E" >"$T/labels.csv"
shardify $OPTS --labels "$T/labels.csv" "$T/flat" "$T/d2" ||
    die "shardify refused a non-UTF-8 CSV label beside ASCII ones"
[ "$(json "$T/d2/manifest.json" 'd["labels"]')" = "['$PCT', 'abc', 'zz']" ] ||
    die "CSV labels: $(json "$T/d2/manifest.json" 'd["labels"]')"
shardcheck --source "$T/flat" --labels "$T/labels.csv" "$T/d2" >"$T/check" 2>&1 ||
    { cat "$T/check" >&2; die "shardcheck of the CSV labels"; }

say "a UTF-8 folder named '$PCT' beside Latin-1 'été': refused, both named"
tree "$T/clash" abc "$E" "$PCT"
must_fail 1 shardify $OPTS "$T/clash" "$T/d3"
must_say "labels '$PCT' and '\\xe9t\\xe9' would both be written '$PCT' in the manifest" "$T/err"
[ ! -e "$T/d3/manifest.json" ] || die "a refused run published"
