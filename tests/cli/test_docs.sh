#!/bin/sh
# test_docs.sh - the documentation keeps one home per fact (CONTRIBUTING.md,
# "Where things go"): README.md stays short (what shardkit is, the two set-up
# commands, five commands, links onward); every relative link of README.md,
# CONTRIBUTING.md and docs/ reaches a file, and its #anchor a heading there;
# docs/README-MOVED.md names a home for every section of the former README;
# the exit statuses are written in one table only (the man pages'
# EXIT STATUS is made of it); BENCHMARKS.md stays short (at most 310
# lines, table rows of at most 300 characters) and every "BENCHMARKS.md §N"
# names a section it has; and the Loader's
# signature in the PyTorch guide is shardkit.Loader's own, and docs/reference/python.md is
# what scripts/python_reference.py makes of the package.  Every code block
# of README.md and docs/ runs as written in test_doc_blocks.
. "$(dirname "$0")/lib.sh"

cd "$SHARDKIT_TOP" || die "no checkout"

case_readme_md_has_at_most_200_lines_the_two_set_up_commands_and_links_onward() {
    lines=$(wc -l <README.md)
    [ "$lines" -le 200 ] || die "README.md has $lines lines (at most 200: move the rest into docs/)"
    # the set-up block: its commands are make demo and make test, in that order
    awk '/^```sh$/ { inblock = 1; n++; next } /^```$/ { inblock = 0; next }
         inblock && n == 1 && /^make / { print $1, $2 }' README.md >"$C/setup"
    printf 'make demo\nmake test\n' >"$C/setup.want"
    cmp -s "$C/setup" "$C/setup.want" ||
        die "README.md's first sh block is not the two set-up commands (make demo, make test):" \
            "$(cat "$C/setup")"
    grep -q '](docs/guide/getting-started.md)' README.md || die "README.md does not link the guide"
    grep -q '](docs/reference/index.md)' README.md || die "README.md does not link the reference"
}

case_every_relative_link_reaches_a_file_and_its_anchor_a_heading_of_it() {
    "$PYTHON" - README.md CONTRIBUTING.md $(find docs examples -name '*.md' | sort) \
        >"$C/links" 2>&1 <<'EOF' ||
import os, re, sys

def slug(heading):
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")

def anchors(path):
    out, fence = set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            out.add(slug(line.lstrip("#")))
    return out

bad = 0
for page in sys.argv[1:]:
    text = open(page, encoding="utf-8").read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(full):
            print(f"{page}: link to '{target}': no file '{full}'")
            bad += 1
        elif anchor and full.endswith(".md") and anchor not in anchors(full):
            print(f"{page}: link to '{target}': '{full}' has no heading '#{anchor}'")
            bad += 1
sys.exit(1 if bad else 0)
EOF
        { cat "$C/links" >&2; die "links in the documentation lead nowhere (above)"; }
}

case_docs_readme_moved_md_names_a_home_for_each_section_of_the_former_readme() {
    for section in "Exit status (every tool)" "Set-up: two commands" "Quick start" "Archives" \
        "shardify" "Fields: captions, metadata, labels, numbers" "Hugging Face imagefolder" \
        "Boxes and masks" "Conversion in parts" "Folders of archives at scale" "Archives named by URL" \
        "The \`--json\` summary" "shardcheck" "Checking in parts" "shardcat" "shardbench" \
        "Node-local cache" "Object storage" "HTML reports" "Running it every night" \
        "What a dataset holds" "The library" "Python and PyTorch" "Layout"; do
        grep -q -F "| $section" docs/README-MOVED.md || die "docs/README-MOVED.md has no row for '$section'"
    done
}

case_benchmarks_md_has_at_most_310_lines_short_table_rows_and_every_reference_names_a_section_it_has() {
    "$PYTHON" - >"$C/bench" 2>&1 <<'EOF' ||
import os, re, sys

text = open("BENCHMARKS.md", encoding="utf-8").read()
lines = text.splitlines()
bad = []
if len(lines) > 310:
    bad.append(f"BENCHMARKS.md has {len(lines)} lines (at most 310: figures and methods only; "
               "before/after measurements go in commit messages)")
for n, line in enumerate(lines, 1):
    if line.startswith("|") and len(line) > 300:
        bad.append(f"BENCHMARKS.md:{n}: a table row of {len(line)} characters (at most 300: "
                   "explanations go in the section)")

def slug(heading):
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")

sections, anchors, fence = set(), set(), False
for line in lines:
    if line.startswith("```"):
        fence = not fence
    elif not fence and line.startswith("#"):
        anchors.add(slug(line.lstrip("#")))
        m = re.match(r"## (\d+)\. ", line)
        if m:
            sections.add(int(m.group(1)))

refs = [
    r"BENCHMARKS\.md`?,?\s+(?:§\s*|section\s+)(\d+)",   # BENCHMARKS.md §6, `BENCHMARKS.md` §6, section 6
    r"section\s+(\d+)\s+of\s+BENCHMARKS\.md",            # section 5 of BENCHMARKS.md
]
skip = {".git", "build", "node_modules", "__pycache__"}
for root, dirs, files in os.walk("."):
    dirs[:] = sorted(d for d in dirs if d not in skip and not d.startswith(("build-", ".")))
    for name in sorted(files):
        path = os.path.normpath(os.path.join(root, name))
        try:
            body = open(path, encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        found = [(m.start(), m.group(1)) for r in refs for m in re.finditer(r, body)]
        if path == "BENCHMARKS.md":
            found += [(m.start(), m.group(1)) for m in re.finditer(r"§\s*(\d+)", body)]
        for at, number in found:
            if int(number) not in sections:
                line = body.count("\n", 0, at) + 1
                bad.append(f"{path}:{line}: BENCHMARKS.md has no section {number}")
        for m in re.finditer(r"BENCHMARKS\.md#([\w-]+)", body):
            if m.group(1) not in anchors:
                line = body.count("\n", 0, m.start()) + 1
                bad.append(f"{path}:{line}: BENCHMARKS.md has no heading '#{m.group(1)}'")
print("\n".join(bad))
sys.exit(1 if bad else 0)
EOF
        {
            cat "$C/bench" >&2
            die "BENCHMARKS.md breaks its limits or is referred to where it has nothing (above)"
        }
}

case_the_exit_statuses_are_written_once_in_docs_reference_exit_status_md() {
    # a table row giving status 2 as a usage error is the table of statuses
    grep -l -E '^\| 2 \|.*usage error' README.md CONTRIBUTING.md BENCHMARKS.md \
        $(find docs examples man -name '*.md') >"$C/tables" || true
    printf 'docs/reference/exit-status.md\n' >"$C/tables.want"
    cmp -s "$C/tables" "$C/tables.want" ||
        die "the exit-status table is written in: $(tr '\n' ' ' <"$C/tables")" \
            "(one home: docs/reference/exit-status.md)"
}

case_the_manual_pages_exit_status_is_made_of_it_not_written_again_in_man() {
    grep -l '^\[EXIT STATUS\]' man/*.h2m >"$C/h2m" || true
    [ ! -s "$C/h2m" ] || die "man/ writes exit statuses again: $(tr '\n' ' ' <"$C/h2m")"
    for page in shardify shardcheck shardcat shardbench shardreport; do
        "$PYTHON" scripts/exit_status.py docs/reference/exit-status.md "$page" >"$C/$page.exit" ||
            die "no EXIT STATUS for $page from docs/reference/exit-status.md"
        grep -q '^\.B 2$' "$C/$page.exit" || die "$page's EXIT STATUS has no status 2"
    done
}

case_the_pytorch_guide_gives_shardkit_loaders_signature_as_loader_py_has_it() {
    if with_python "the Loader's signature"; then
        shardkit_python - docs/guide/pytorch.md >"$C/signature" 2>&1 <<'EOF' ||
import inspect, re, sys
import shardkit

text = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r"\*\*`shardkit\.Loader\((.*?)\)`\*\*", text, re.S)
assert m, "no **`shardkit.Loader(...)`** in the guide"
written = [p.strip() for p in " ".join(m.group(1).split()).split(",")]
params = [p for p in inspect.signature(shardkit.Loader).parameters.values()
          if not p.name.startswith("_")]
want = []
for p in params:
    if p.kind is p.KEYWORD_ONLY and "*" not in want:
        want.append("*")
    want.append(p.name if p.default is p.empty else f"{p.name}={p.default!r}")
want = [w.replace("'", '"') for w in want]
if written != want:
    print("the guide:  " + ", ".join(written))
    print("loader.py:  " + ", ".join(want))
    sys.exit(1)
EOF
            { cat "$C/signature" >&2; die "docs/guide/pytorch.md's Loader signature is not loader.py's"; }
    fi
}

case_docs_reference_python_md_is_what_the_packages_signatures_and_docstrings_say() {
    if with_python "the Python reference"; then
        shardkit_python scripts/python_reference.py >"$C/python.md" ||
            die "scripts/python_reference.py failed"
        cmp -s "$C/python.md" docs/reference/python.md || {
            diff -u docs/reference/python.md "$C/python.md" | head -40 >&2
            die "docs/reference/python.md is not what the package says: make it again" \
                "(PYTHONPATH=build/python /usr/bin/python3 scripts/python_reference.py" \
                ">docs/reference/python.md)"
        }
    fi
}

run_cases
