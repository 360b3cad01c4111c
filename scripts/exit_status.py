#!/usr/bin/env python3
"""exit_status.py PAGE TOOL: the [EXIT STATUS] section of TOOL's manual page
(a help2man include), made from PAGE, docs/reference/exit-status.md: the
exit statuses are written there once, and the pages are made of it.

Status 0 and 1 are TOOL's row of the table "What 0 and 1 mean for each
tool", followed for 1 by the row 1 every tool shares; status 2 is the row 2
every tool shares; then the paragraph on standard output.  The nightly job
(TOOL shardkit-nightly) has a table of its own: a row per status, with the
run record's status and what becomes of `current`."""
import re
import sys


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def roff(text):
    """Markdown table text as roff: no code marks, backslashes doubled, an
    ellipsis in ASCII, a hyphen as a minus where it starts an option."""
    text = text.replace("\\|", "|").replace("`", "").replace("\\", "\\e").replace("…", "...")
    return re.sub(r"(?<![\w-])--?\w[\w-]*", lambda m: m.group(0).replace("-", "\\-"), text)


def sentence(text):
    if not text.startswith("shard"):  # a program's name keeps its case
        text = text[0].upper() + text[1:]
    return text if text.endswith(".") else text + "."


SOURCE = ("The statuses of every shardkit tool are written once, in the project's "
          "docs/reference/exit-status.md, of which this section is made.")


def nightly(rows):
    """The nightly job's section: its table's rows (code, record, meaning,
    current)."""
    own = [r for r in rows if len(r) == 4 and r[0].isdigit()]
    if [r[0] for r in own] != [str(n) for n in range(len(own))] or len(own) < 3:
        sys.exit("exit_status.py: no table of the nightly job's statuses 0, 1, 2, ...")
    out = ["[EXIT STATUS]"]
    for code, record, meaning, current in own:
        record = "No run record" if record.startswith("(") else f"The run record's status: {record}"
        out += [".TP", f".B {code}", roff(f"{sentence(meaning)} {record}; current: {current}.")]
    out += [".PP", SOURCE]
    return out


def main(page, tool):
    lines = open(page, encoding="utf-8").read().split("\n")
    rows = [cells(line) for line in lines if line.startswith("| ")]
    if tool == "shardkit-nightly":
        print("\n".join(nightly(rows)))
        return
    shared = {r[0]: r[1] for r in rows if len(r) == 2 and r[0] in ("0", "1", "2")}
    own = [r for r in rows if len(r) == 3 and r[0] == f"`{tool}`"]
    if len(own) != 1 or "2" not in shared:
        sys.exit(f"exit_status.py: '{page}' has no row for '{tool}' or no status 2")
    stdout = next((line for line in range(len(lines))
                   if lines[line].startswith("Whatever the tool, standard output")), None)
    if stdout is None:
        sys.exit(f"exit_status.py: '{page}' does not say what a lost standard output is")
    para = []
    for line in lines[stdout:]:
        if not line.strip():
            break
        para.append(line.strip())
    out = ["[EXIT STATUS]"]
    for status, text in (("0", own[0][1]), ("1", sentence(own[0][2]) + " " + sentence(shared["1"])),
                         ("2", shared["2"])):
        out += [".TP", f".B {status}", roff(sentence(text))]
    out += [".PP", roff(" ".join(para)), ".PP", SOURCE]
    print("\n".join(out))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: exit_status.py PAGE TOOL")
    main(sys.argv[1], sys.argv[2])
