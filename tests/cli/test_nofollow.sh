#!/bin/sh
# test_nofollow.sh - no file is opened through a link planted in a directory
# the tools do not own (a cache, a source, a destination): every call of
# open, openat, fopen, freopen or creat in the C files of lib/ and cmd/
# names O_NOFOLLOW, or says on one of its lines (or on a comment line just
# above it) why a link is followed there, in a comment "nofollow: REASON" - the path the
# user named (a link there is theirs), a kernel file, flags that hold it.
# The check is first shown to catch a planted call and to pass the forms
# it must accept.
. "$(dirname "$0")/lib.sh"

TOP=${SHARDKIT_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}

# unguarded DIR...: "file:line: call" of every call in DIR's C files that
# neither names O_NOFOLLOW nor gives a reason; comments and strings are not
# calls, nor are declarations, nor members (ops->open).
unguarded() {
    "$PYTHON" - "$@" <<'PY'
import os, re, sys
CALL = re.compile(r"(?<![\w.>])(open|openat|open64|openat64|fopen|freopen|creat)\s*\(")
DECL = re.compile(r"\b(int|FILE|void)\b[\s*]*(open|openat|fopen|freopen|creat)\s*\(")

def blank(text):
    """text with its comments and string literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i) or text.startswith("//", i):
            j = text.find("*/", i + 2) + 2 if text[i + 1] == "*" else text.find("\n", i)
            j = n if j < 2 or j > n else j
        elif text[i] == '"' or text[i] == "'":
            j = i + 1
            while j < n and text[j] != text[i]:
                j += 2 if text[j] == "\\" else 1
            j += 1
        else:
            out.append(text[i])
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[i:j]))
        i = j
    return "".join(out)

for top in sys.argv[1:]:
    for d, _, files in sorted(os.walk(top)):
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(d, f)
            text = open(path, encoding="utf-8", errors="replace").read()
            code, lines = blank(text), text.split("\n")
            for m in CALL.finditer(code):
                start = code.count("\n", 0, m.start())
                if DECL.search(code.split("\n")[start]):
                    continue
                depth, j = 0, m.end() - 1
                while j < len(code):  # the call runs to its closing bracket
                    depth += {"(": 1, ")": -1}.get(code[j], 0)
                    if depth == 0:
                        break
                    j += 1
                end = code.count("\n", 0, j)
                call = code[m.start():j + 1]
                # the call's lines, and the line above when it is only a comment
                above = start - 1 if start and not code.split("\n")[start - 1].strip() else start
                near = "\n".join(lines[above:end + 1])
                if "O_NOFOLLOW" not in call and "nofollow: " not in near:
                    print(f"{path}:{start + 1}: {lines[start].strip()}")
PY
}

case_the_check_catches_an_open_without_o_nofollow_or_a_reason_and_accepts_the_others() {
    mkdir -p "$C/planted"
    cat >"$C/planted/a.c" <<'C'
/* open(x) in a comment is no call; "fopen(" in a string neither */
static int open_lock(int fd);
int f(const char *p, int d)
{
    int a = open(p, O_RDONLY);
    int b = openat(d, p,
                   O_RDONLY | O_NOFOLLOW);
    int c = open(p, O_RDONLY); /* nofollow: the path the user named */
    FILE *e = fopen(p, "r");
    return ops->open(p) + a + b + c + open_lock(d) + (e != 0);
}
C
    unguarded "$C/planted" >"$C/found"
    [ "$(wc -l <"$C/found")" -eq 2 ] || { cat "$C/found" >&2; die "expected the 2 planted calls"; }
    must_say "a.c:5: int a = open(p, O_RDONLY);" "$C/found"
    must_say "a.c:9: FILE *e = fopen(p, \"r\");" "$C/found"
}

case_every_open_of_lib_and_cmd_names_o_nofollow_or_why_a_link_is_followed() {
    unguarded "$TOP/lib" "$TOP/cmd" >"$C/found"
    if [ -s "$C/found" ]; then
        cat "$C/found" >&2
        die "opens without O_NOFOLLOW or a 'nofollow: REASON' comment (above)"
    fi
    [ "$(grep -rc 'O_NOFOLLOW' "$TOP/lib/read/cache.c")" -ge 4 ] ||
        die "the cache's opens lost O_NOFOLLOW"
}

run_cases
