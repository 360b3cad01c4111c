#!/usr/bin/env python3
"""Hold every dataset a test wrote to manifests/ (the JSON Schemas and FORMAT.md).

  check_schemas.py [--exempt FILE] ROOT...

Finds every manifest.json below each ROOT (a test's temporary directory) and
checks it against manifest.schema.json, every line of the index files it
lists (index.jsonl, or a merged dataset's, when beside it) against
index-line.schema.json (its
#/$defs/version1 or version2, as the manifest's version says), and what
FORMAT.md says across the two that a schema cannot: a line names declared
fields only; the index has `index.entries` lines.  A manifest that is not JSON, or
not a shardkit manifest (no "format": "shardkit"), is left alone: tests write
those on purpose to see the tools refuse them, and so do tests that damage a
dataset to see shardcheck find it: they list its directory (or the manifest
itself) in FILE (tests/cli/lib.sh: `damaged DIR`), one a line.

Prints one line per disagreement, naming the file (and line), and exits 1
when there was one; 0 otherwise.  tests/cli/lib.sh runs it when a CLI test
ends, python/tests/conftest.py after each Python test: a test whose tools
wrote a dataset the schemas or FORMAT.md do not describe fails.
"""
import argparse
import json
import os
import stat
import sys

import jsonschema

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMAS = os.path.join(os.path.dirname(HERE), "manifests")


def validators():
    """The manifest's validator, and the index lines' by format version."""
    def load(name):
        with open(os.path.join(SCHEMAS, name)) as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
        return schema
    manifest, line = load("manifest.schema.json"), load("index-line.schema.json")
    resolver = jsonschema.RefResolver.from_schema(line)
    lines = {v: jsonschema.Draft202012Validator({"$ref": f"{line['$id']}#/$defs/version{v}"},
                                                resolver=resolver) for v in (1, 2)}
    lines[None] = jsonschema.Draft202012Validator(line)
    return jsonschema.Draft202012Validator(manifest), lines


def where(error):
    return "/".join(str(p) for p in error.absolute_path) or "(top)"


def regular(path):
    """Whether path is a regular file (a planted FIFO would block a read)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def check_manifest(path, manifest_schema, line_schemas):
    """The disagreements of one manifest.json (and its index), as lines."""
    out = []
    if not regular(path):
        return out
    try:
        with open(path, "rb") as f:
            m = json.loads(f.read())
    except (OSError, ValueError):
        return out
    if not isinstance(m, dict) or m.get("format") != "shardkit":
        return out
    for e in sorted(manifest_schema.iter_errors(m), key=lambda e: list(e.absolute_path)):
        out.append(f"{path}: {where(e)}: {e.message}")
    version = m.get("version")
    config = m.get("config") if isinstance(m.get("config"), dict) else {}
    if version == 3:  # the layout of version 1 or 2, as the config's fields say
        version = 2 if config.get("fields") else 1
    line_schema = line_schemas.get(version, line_schemas[None])
    fields = config.get("fields") or []
    declared = {f.get("name") for f in fields if isinstance(f, dict)}
    # the one index, or a merged dataset's files (FORMAT.md, "The index in
    # several files"): each with its own entries
    files = [m.get("index")] if isinstance(m.get("index"), dict) else m.get("indexes")
    for index in files if isinstance(files, list) else []:
        if isinstance(index, dict):
            out += check_index(path, index, line_schema, declared)
    return out


def check_index(path, index, line_schema, declared):
    """The disagreements of one index file its manifest (path) lists."""
    out = []
    name = index.get("file")
    if not isinstance(name, str) or "/" in name:
        return out
    ipath = os.path.join(os.path.dirname(path), name)
    if not regular(ipath):
        return out
    lines = 0
    with open(ipath, "rb") as f:
        for lines, raw in enumerate(f, 1):
            at = f"{ipath} line {lines}"
            try:
                line = json.loads(raw)
            except ValueError as e:
                out.append(f"{at}: not JSON: {e}")
                continue
            for e in line_schema.iter_errors(line):
                out.append(f"{at}: {where(e)}: {e.message}")
            if not isinstance(line, dict):
                continue
            named = line.get("fields")
            for k in named if isinstance(named, dict) else ():
                if k not in declared:
                    out.append(f"{at}: field '{k}' is not declared in the manifest")
    if isinstance(index.get("entries"), int) and index["entries"] != lines:
        out.append(f"{ipath}: {lines} lines, its manifest entry says {index['entries']}")
    return out


def manifests(root):
    for top, dirs, files in os.walk(root):
        dirs.sort()
        if "manifest.json" in files:
            yield os.path.join(top, "manifest.json")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exempt", help="a file of directories or manifests damaged on purpose")
    ap.add_argument("roots", nargs="+")
    args = ap.parse_args()
    exempt = set()
    if args.exempt and os.path.isfile(args.exempt):
        with open(args.exempt) as f:
            for line in f:
                if line.strip():
                    p = os.path.realpath(line.rstrip("\n"))
                    exempt.add(p)
                    exempt.add(os.path.join(p, "manifest.json"))
    manifest_schema, line_schemas = validators()
    bad = 0
    for root in args.roots:
        for path in manifests(root):
            if os.path.realpath(path) in exempt:
                continue
            for problem in check_manifest(path, manifest_schema, line_schemas):
                print(f"schema: {problem}")
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
