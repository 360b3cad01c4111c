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

case_latin1_class_folder_beside_ascii_ones_is_written_escaped_and_every_sample_keeps_its_class() {
    tree "$C/dirs" abc "$E" zz abc
    shardify $OPTS "$C/dirs" "$C/d1" || die "shardify refused a non-UTF-8 class folder beside ASCII ones"
    labels_of "$C/d1" >"$C/got"
    cat >"$C/want" <<EOF
labels ['$PCT', 'abc', 'zz'] by_label [('$PCT', 1), ('abc', 2), ('zz', 1)]
b'abc/1.png' abc
b'abc/4.png' abc
b'zz/3.png' zz
b'\\xe9t\\xe9/2.png' $PCT
EOF
    diff "$C/want" "$C/got" >&2 || die "samples do not keep their classes"
    shardcheck --source "$C/dirs" "$C/d1" >"$C/check" 2>&1 || { cat "$C/check" >&2; die "shardcheck"; }
    must_say "labels re-derived and checked" "$C/check"
}

case_the_same_classes_from_a_csv_file_give_the_same_labels() {
    mkdir "$C/flat"
    tree "$C/flat" p q r s
    printf 'p/1.png,abc\nq/2.png,%s\nr/3.png,zz\ns/4.png,abc\n' "$E" >"$C/labels.csv"
    shardify $OPTS --labels "$C/labels.csv" "$C/flat" "$C/d2" ||
        die "shardify refused a non-UTF-8 CSV label beside ASCII ones"
    [ "$(json "$C/d2/manifest.json" 'd["labels"]')" = "['$PCT', 'abc', 'zz']" ] ||
        die "CSV labels: $(json "$C/d2/manifest.json" 'd["labels"]')"
    shardcheck --source "$C/flat" --labels "$C/labels.csv" "$C/d2" >"$C/check" 2>&1 ||
        { cat "$C/check" >&2; die "shardcheck of the CSV labels"; }
}

case_utf8_folder_named_like_the_escape_of_a_latin1_one_is_refused_naming_both() {
    tree "$C/clash" abc "$E" "$PCT"
    must_fail 1 shardify $OPTS "$C/clash" "$C/d3"
    must_say "labels '$PCT' and '\\xe9t\\xe9' would both be written '$PCT' in the manifest" "$T/err"
    [ ! -e "$C/d3/manifest.json" ] || die "a refused run published"
}

run_cases
