"""doc_blocks.py - the fenced code blocks of the documentation, for
tests/cli/test_doc_blocks.sh.

    doc_blocks.py TOP OUT

reads TOP/README.md and every TOP/docs/**/*.md (sorted), writes each
block that runs (labelled sh, shell, bash, console, python, py or c) as
OUT/NNN.sh, OUT/NNN.py or OUT/NNN.c, exactly as written (a console block:
its "$ " lines, without the prompt), and prints one line per block of
every page, tab-separated:

    NNN  PAGE  LINE  KIND  FIRST

KIND is sh, python, c, or listing (an unlabelled block: a synopsis or a
file layout, not run; NNN is then -); FIRST is the block's first line,
which names the block for the test's table of fixtures.  A block of
another label is an error (exit 1): the test would not know how to run it.
"""
import os
import re
import sys

KINDS = {"sh": "sh", "shell": "sh", "bash": "sh", "console": "sh", "python": "python",
         "py": "python", "c": "c", "": "listing"}
SUFFIX = {"sh": "sh", "python": "py", "c": "c"}


def pages(top):
    yield "README.md"
    found = []
    for root, dirs, files in os.walk(os.path.join(top, "docs")):
        dirs.sort()
        found += [os.path.relpath(os.path.join(root, f), top) for f in files if f.endswith(".md")]
    yield from sorted(found)


def blocks(path):
    """(line, label, text) of each fenced block of the page at path."""
    lines = open(path, encoding="utf-8").read().split("\n")
    at = None
    for n, line in enumerate(lines, 1):
        m = re.match(r"^(\s*)```\s*([\w+-]*)\s*$", line)
        if not m:
            continue
        if at is None:
            at, label, indent, body = n, m.group(2), len(m.group(1)), []
            for inner in lines[n:]:
                if re.match(r"^\s*```\s*$", inner):
                    break
                # a block indented in a list item: its lines without that indent
                body.append(inner[indent:] if inner[:indent].strip() == "" else inner.lstrip())
            yield at, label, "\n".join(body) + "\n"
        else:
            at = None
    if at is not None:
        sys.exit(f"{path}:{at}: a code block that never ends")


def main():
    top, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    n, bad = 0, 0
    for page in pages(top):
        for line, label, text in blocks(os.path.join(top, page)):
            kind = KINDS.get(label.lower())
            if kind is None:
                print(f"{page}:{line}: a block labelled '{label}': the test runs sh, python and "
                      "c blocks (label it, or leave a listing unlabelled)", file=sys.stderr)
                bad += 1
                continue
            if label == "console":
                text = "".join(l[2:] + "\n" for l in text.splitlines() if l.startswith("$ "))
            first = next((l.strip() for l in text.splitlines() if l.strip()), "")
            name = "-"
            if kind != "listing":
                n += 1
                name = f"{n:03d}"
                with open(os.path.join(out, f"{name}.{SUFFIX[kind]}"), "w") as f:
                    f.write(text)
            print("\t".join((name, page, str(line), kind, first)))
    sys.exit(1 if bad else 0)


main()
