#!/usr/bin/python3
"""Write a dataset's index files and key tables by another hand than shardify's.

    index_files.py keys DST
        rewrite the key table of each index file of DST as the index file now
        is, and the manifest's entry of each (entries, bytes, xxh3, keys): the
        dataset a writer would have made with those index lines
    index_files.py duplicate DST
        copy the first shard under the next shard file name, list it last in
        the manifest and its index lines after the last index file's (the
        counts and key tables as a writer would make them): every key of the
        first shard is then in the dataset twice; prints the new shard's number
    index_files.py split DST S1,S2,...
        split DST's index.jsonl before shards S1 < S2 < ... into
        index-I-of-N.jsonl, each line's "shard" made relative to its file's
        first shard, each with its key table, and give the manifest
        "indexes" in place of "index" (a dataset merged from N parts)

Written from manifests/FORMAT.md ("The index in several files", "Key tables")
with Python's json and xxhash only, so that the verifier's tests do not
build their datasets with the code they test.
"""
import json
import os
import shutil
import struct
import sys

import xxhash

MAGIC = b"SKKEYS1\x1a"


def key_bytes(line):
    if "key" in line:
        return line["key"].encode("utf-8", "surrogateescape")
    return bytes.fromhex(line["key_hex"])


def key_table(raw_lines):
    """The key table of an index file whose lines (bytes) are raw_lines."""
    entries = sorted(
        (xxhash.xxh3_64_intdigest(key_bytes(json.loads(l))), n) for n, l in enumerate(raw_lines)
    )
    head = MAGIC + struct.pack("<QQ", len(entries), 0)
    head += struct.pack("<Q", xxhash.xxh3_64_intdigest(head))
    return head + b"".join(struct.pack("<QQ", h, n) for h, n in entries)


def identity(data):
    return {"bytes": len(data), "xxh3": xxhash.xxh3_64_hexdigest(data)}


def write_index(dst, name, raw_lines, entry):
    """Write index file `name` and its key table; fill its manifest entry."""
    data = b"".join(raw_lines)
    with open(os.path.join(dst, name), "wb") as f:
        f.write(data)
    keys_name = name[: -len(".jsonl")] + ".keys"
    table = key_table(raw_lines)
    with open(os.path.join(dst, keys_name), "wb") as f:
        f.write(table)
    entry.update({"file": name, "entries": len(raw_lines)}, **identity(data))
    entry["keys"] = dict({"file": keys_name}, **identity(table))


def read_lines(dst, name):
    with open(os.path.join(dst, name), "rb") as f:
        return f.read().splitlines(keepends=True)


def rewrite_keys(dst, m):
    for entry in m["indexes"] if "indexes" in m else [m["index"]]:
        write_index(dst, entry["file"], read_lines(dst, entry["file"]), entry)


def split(dst, m, cuts):
    lines = read_lines(dst, m["index"]["file"])
    bounds = [0] + cuts + [len(m["shards"])]
    files = []
    for i in range(len(bounds) - 1):
        first, end = bounds[i], bounds[i + 1]
        part = []
        for raw in lines:
            line = json.loads(raw)
            if first <= line["shard"] < end:
                line["shard"] -= first
                part.append(
                    (json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
                )
        entry = {"shards": end - first}
        write_index(dst, "index-%d-of-%d.jsonl" % (i, len(bounds) - 1), part, entry)
        files.append(
            {k: entry[k] for k in ("file", "entries", "bytes", "xxh3", "shards", "keys")}
        )
    for old in (m["index"]["file"], m["index"].get("keys", {}).get("file")):
        if old and os.path.exists(os.path.join(dst, old)):
            os.unlink(os.path.join(dst, old))
    del m["index"]
    m["indexes"] = files


def duplicate(dst, m):
    first, n = m["shards"][0], len(m["shards"])
    name = "shard-%06d.shard" % n
    shutil.copy(os.path.join(dst, first["file"]), os.path.join(dst, name))
    m["shards"].append(dict(first, file=name))
    entries = m["indexes"] if "indexes" in m else [m["index"]]
    last = entries[-1]
    before = sum(e.get("shards", 0) for e in entries[:-1])  # the last file's first shard
    sidecar = {f["name"] for f in m["config"].get("fields", []) if "sidecar" in f}
    extra = []
    for raw in read_lines(dst, entries[0]["file"]):
        line = json.loads(raw)
        if line["shard"] != 0:
            continue
        extra.append(dict(line, shard=n - before))
        counts = m["counts"]
        counts["samples"] += 1
        if line["label"] is None:
            counts["unlabeled"] += 1
        else:
            counts["by_label"][m["labels"][line["label"]]] += 1
        for field in line.get("fields", {}):
            counts["fields"][field] += 1
            counts["sidecars"] += field in sidecar
    with open(os.path.join(dst, last["file"]), "ab") as f:
        for line in extra:
            f.write((json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n").encode())
    if "shards" in last:
        last["shards"] += 1
    rewrite_keys(dst, m)
    print(n)


def main():
    what, dst = sys.argv[1], sys.argv[2]
    path = os.path.join(dst, "manifest.json")
    with open(path) as f:
        m = json.load(f)
    if what == "keys":
        rewrite_keys(dst, m)
    elif what == "duplicate":
        duplicate(dst, m)
    elif what == "split":
        split(dst, m, [int(s) for s in sys.argv[3].split(",")])
    else:
        sys.exit("index_files.py: unknown command '%s'" % what)
    with open(path, "w") as f:
        json.dump(m, f, indent=2)


if __name__ == "__main__":
    main()
