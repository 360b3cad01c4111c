#!/usr/bin/env python3
"""Write the bash or zsh completion of a shardkit program, made from its --help.

    scripts/completion.py bash|zsh PROGRAM [NAME]

PROGRAM is run with --help (and each subcommand its usage names with
SUBCOMMAND --help); the options, the values an option takes and the
subcommands are read from what it prints, so the completion cannot drift from
the program.  NAME is the command the completion is for (default: PROGRAM's
file name).  The script is written to stdout.

What --help must look like (tests/cli/test_man.sh holds every program to it,
since help2man reads the same): the first line 'Usage: NAME ...', further
synopses on lines '  or:  NAME ...'; an option line starts with one to ten
spaces, then '-x, --long', '--long' or '-- ARG', then one space and the
option's argument (a single word), then two spaces or the end of the line.
An argument 'a|b|c' of lower-case words is the list of the values; one of
the upper-case names in ARGUMENTS says what else to offer.
"""
import re
import subprocess
import sys
from dataclasses import dataclass, field

# What to offer for an option's argument, by the name --help gives it.
# "file": files and directories; "dir": directories; "none": nothing (a
# number, a size, a name); a list: those words (then files, for SPEC).
ARGUMENTS = {
    "FILE": "file", "SRC": "file", "DST": "dir", "DIR": "dir", "ROOT": "dir", "PREV": "dir",
    # shardify --labels: dir, none, a CSV file, regex:PATTERN, sidecar:SUFFIX, column:NAME
    "SPEC": ["dir", "none", "regex:", "sidecar:", "column:"],
}
OPTION_LINE = re.compile(r"^ {1,10}(?:(-[A-Za-z0-9]), )?(--(?:[A-Za-z0-9][A-Za-z0-9-]*)?)"
                         r"(?:[ =]([^ ]+))?(?:  |$)")
USAGE_LINE = re.compile(r"^(?:Usage:|  or:) +(\S+)(?: +(.*))?$")


@dataclass
class Option:
    names: list                     # '-h', '--help'
    arguments: list = field(default_factory=list)  # the argument names, one per line
    description: str = ""

    def takes_argument(self):
        return bool(self.arguments) and self.names != ["--"]

    def values(self):
        """(words, kind): the words to offer and "file", "dir" or "none"."""
        words, kind = [], "none"
        for arg in self.arguments:
            if re.fullmatch(r"[a-z0-9]+(\|[a-z0-9]+)+", arg):
                words += arg.split("|")
                continue
            if re.fullmatch(r"[a-z]+", arg):   # '--part auto' beside '--part I/N'
                words.append(arg)
                continue
            what = ARGUMENTS.get(arg.split("|")[0], "none")
            if isinstance(what, list):
                words += what
                kind = "file"
            elif what != "none":
                kind = what
        return tuple(words), kind


@dataclass
class Program:
    name: str
    options: list            # what NAME --help lists
    subcommands: list        # the words of 'NAME WORD ...' synopses
    subcommand_required: bool
    own_options: dict        # subcommand: its options, when its --help is its own

    def every_option(self):
        """The options of the program and of its subcommands, each once."""
        seen, out = set(), []
        for o in self.options + [o for opts in self.own_options.values() for o in opts]:
            if o.names[-1] not in seen:
                seen.add(o.names[-1])
                out.append(o)
        return out


def help_text(argv):
    r = subprocess.run(argv + ["--help"], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.startswith("Usage:"):
        sys.exit(f"completion: '{' '.join(argv)} --help' printed no usage "
                 f"(exit status {r.returncode})")
    return r.stdout


def parse_options(text):
    options = {}
    last = None
    for line in text.splitlines():
        m = OPTION_LINE.match(line)
        if not m:
            if last is not None and line.startswith(" " * 12) and not last.description:
                last.description = line.strip()   # a description below its option
            continue
        short, long_, argument = m.groups()
        names = [n for n in (short, long_) if n]
        option = options.setdefault(long_, Option(names))
        if argument:
            option.arguments.append(argument)
        if not option.description:
            option.description = line[m.end():].strip()
        last = option
    return list(options.values())


def parse_program(argv, name):
    text = help_text(argv)
    synopses = [USAGE_LINE.match(line) for line in text.splitlines()[:8]]
    subcommands = []
    plain = False   # a synopsis without a subcommand: 'shardify [OPTIONS] SRC DST'
    for m in filter(None, synopses):
        first = (m.group(2) or "").split(" ")[0]
        if re.fullmatch(r"[a-z]+", first):
            subcommands.append(first)
        else:
            plain = True
    own = {}
    for sub in subcommands:     # a subcommand with a --help of its own
        sub_text = subprocess.run(argv + [sub, "--help"], capture_output=True,
                                  text=True).stdout
        if sub_text.startswith("Usage:") and sub_text != text:
            own[sub] = parse_options(sub_text)
    return Program(name, parse_options(text), subcommands, bool(subcommands) and not plain,
                   own)


def option_words(options):
    return " ".join(sorted(n for o in options for n in o.names if n != "--"))


# ---- bash -------------------------------------------------------------------

def bash(p):
    fn = "_" + re.sub(r"[^A-Za-z0-9_]", "_", p.name)
    every = p.every_option()
    with_arg = sorted(n for o in every if o.takes_argument() for n in o.names)
    cases = []
    by_values = {}
    for o in every:
        if o.takes_argument():
            by_values.setdefault(o.values(), []).extend(o.names)
    for (words, kind), opts in sorted(by_values.items(), key=lambda kv: kv[1]):
        body = []
        if words:
            body.append(f"COMPREPLY=($(compgen -W '{' '.join(words)}' -- \"$cur\"))")
            if any(w.endswith(":") for w in words):   # regex:PATTERN ...
                body.append("[[ $cur == *:* ]] || compopt -o nospace")
                body.append('__ltrim_colon_completions "$cur"')
            if kind != "none":
                body.append("[[ $cur == *:* ]] || " + ("_filedir -d" if kind == "dir"
                                                         else "_filedir"))
        elif kind == "dir":
            body.append("_filedir -d")
        elif kind == "file":
            body.append("_filedir")
        body.append("return")
        cases.append(f"    {'|'.join(opts)})\n        " + "\n        ".join(body) +
                     "\n        ;;")
    subs = " ".join(p.subcommands)
    option_lists = "".join(f"        {sub}) options='{option_words(opts)}' ;;\n"
                           for sub, opts in p.own_options.items())
    option_lists += f"        *) options='{option_words(p.options)}' ;;\n"
    if not p.subcommands:
        operands = "    _filedir\n"
    elif p.subcommand_required:
        operands = f"""\
    if ((operands == 0)); then
        COMPREPLY=($(compgen -W '{subs}' -- "$cur"))
        return
    fi
    _filedir
"""
    else:
        operands = f"""\
    local subcommands=()
    ((operands == 0)) && subcommands=($(compgen -W '{subs}' -- "$cur"))
    _filedir
    COMPREPLY+=("${{subcommands[@]}}")
"""
    return f"""\
# bash completion for {p.name}: made by scripts/completion.py from
# '{p.name} --help'; do not edit.
{fn}()
{{
    local cur prev words cword split
    _init_completion -s -n : || return

    case $prev in
{chr(10).join(cases)}
    esac
    $split && return

    # the operands before this word (options and their arguments left out),
    # and the first of them
    local i operands=0 first="" dashes=false
    for ((i = 1; i < cword; i++)); do
        if ! $dashes; then
            case ${{words[i]}} in
            --) dashes=true; continue ;;
            {'|'.join(with_arg) if with_arg else '--'}) ((i++)); continue ;;
            -*) continue ;;
            esac
        fi
        ((operands++ == 0)) && first=${{words[i]}}
    done
    if [[ $cur == -* ]]; then
        local options
        case $first in
{option_lists}        esac
        COMPREPLY=($(compgen -W "$options" -- "$cur"))
        return
    fi
{operands}}} &&
    complete -F {fn} {p.name}
"""


# ---- zsh --------------------------------------------------------------------

def zsh_quote(text):
    """Text inside a single-quoted _arguments spec: the description or the
    message of an argument."""
    text = text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
    return text.replace(":", "\\:").replace("'", "'\\''")


def zsh(p):
    specs = []
    for o in p.every_option():
        if o.names == ["--"]:
            continue
        if len(o.names) > 1:   # '(-h --help)'{-h,--help}'[show this help]'
            spec = f"'({' '.join(o.names)})'{{{','.join(o.names)}}}'"
        else:
            spec = f"'{o.names[0]}"
        spec += f"[{zsh_quote(o.description)}]"
        if o.takes_argument():
            words, kind = o.values()
            files = {"file": "_files", "dir": "_files -/", "none": ""}[kind]
            if words and files:
                action = (f"{{_alternative 'values:value:({' '.join(words)})' "
                          f"'files:file:{files}'}}")
            elif words:
                action = f"({' '.join(words)})"
            else:
                action = files or " "
            spec += f":{zsh_quote(o.arguments[0].lower())}:{zsh_quote_action(action)}"
        specs.append(spec + "'")
    subs = " ".join(p.subcommands)
    if p.subcommand_required:
        specs.append(f"'1:command:({subs})'")
    elif p.subcommands:
        specs.append(f"'1:command or file:{zsh_quote_action(subs_or_files(subs))}'")
    specs.append("'*:file:_files'")
    body = " \\\n    ".join(specs)
    return f"""\
#compdef {p.name}
# zsh completion for {p.name}: made by scripts/completion.py from
# '{p.name} --help'; do not edit.
_arguments -s -S \\
    {body}
"""


def subs_or_files(subs):
    return f"{{_alternative 'commands:command:({subs})' 'files:file:_files'}}"


def zsh_quote_action(action):
    """An action inside a single-quoted _arguments spec."""
    return action.replace("'", "'\\''")


def main(argv):
    if len(argv) not in (3, 4) or argv[1] not in ("bash", "zsh"):
        sys.exit(__doc__.split("\n\n")[1])
    program = argv[2]
    name = argv[3] if len(argv) == 4 else program.rsplit("/", 1)[-1]
    p = parse_program([program], name)
    sys.stdout.write(bash(p) if argv[1] == "bash" else zsh(p))


if __name__ == "__main__":
    main(sys.argv)
