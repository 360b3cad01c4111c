#!/bin/sh
# test_man.sh - the manual pages and the shell completion `make` generates
# (BUILD/man, BUILD/completion) say what the programs do: every page renders
# with `man --warnings` without a warning and has a NAME lexgrog reads; every
# option each program's --help lists is an option of its page, written as
# --help writes it; bash completes every long option, the values of an option
# that lists them and files where an option takes a file; zsh's completion
# names every option; `make install` puts pages and completion where man and
# bash-completion look, beside bin/shardkit-nightly (the nightly job) and
# the nightly job's example units, and `man shardify` and `man
# shardkit-nightly` find the installed pages.
. "$(dirname "$0")/lib.sh"

BUILD=$(cd "$SHARDKIT_BIN/.." && pwd)
TOP=$SHARDKIT_TOP
MAN=$BUILD/man
[ -d "$MAN/man1" ] || die "no manual pages in '$MAN' (make man)"
command -v lexgrog >/dev/null || die "lexgrog (man-db) is missing"
[ -f /usr/share/bash-completion/bash_completion ] || die "bash-completion is missing"

# page PROGRAM-COMMAND: the page of each program, as 'page command...'
programs() {
    cat <<EOF
shardify shardify
shardify-merge shardify merge
shardcheck shardcheck
shardcat shardcat
shardbench shardbench
shardreport shardreport
shardkit-nightly shardkit-nightly
EOF
}

# options FILE: the option lines of a --help text, as the option and its
# argument ('--size N', '-h, --help'): a line indented 1-10 spaces that starts
# with a dash, up to two spaces or its end
options() {
    sed -n 's/^ \{1,10\}\(-[^ ]*\( [^ ]*\)\{0,1\}\)\(  .*\)\{0,1\}$/\1/p' "$1"
}

# the folder the bash completion of files is asked in: a file and a folder
mkdir -p "$T/cwd/adir"
: >"$T/cwd/a.csv"
# complete FILE WORD...: what bash offers for the last WORD, one a line
complete_words() {
    bash -c '. /usr/share/bash-completion/bash_completion
        compopt() { :; }    # only valid while readline completes
        . "$0"
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
        fn=$(complete -p "$1" | sed "s/.* -F \([^ ]*\) .*/\1/")
        "$fn" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
        printf "%s\n" "${COMPREPLY[@]}"' "$@" | sort
}

case_every_page_renders_without_a_warning_and_has_a_name_and_the_format_page_every_heading_of_format_md() {
    ls "$MAN"/man1/*.1 "$MAN"/man5/*.5 >"$C/pages"
    [ "$(wc -l <"$C/pages")" -eq 8 ] || die "expected 8 pages: $(cat "$C/pages")"
    while read -r page; do
        name=$(basename "$page"); name=${name%.*}
        MANWIDTH=80 man --warnings -l "$page" >"$C/page.txt" 2>"$C/warnings" ||
            die "man cannot render '$page'"
        [ ! -s "$C/warnings" ] || { cat "$C/warnings" >&2; die "'$page' renders with warnings"; }
        [ "$(wc -l <"$C/page.txt")" -gt 20 ] || die "'$page' renders nearly empty"
        lexgrog "$page" >"$C/whatis" || die "lexgrog finds no NAME in '$page'"
        grep -q ": \"$name - ." "$C/whatis" || die "NAME of '$page': $(cat "$C/whatis")"
    done <"$C/pages"
    # the format page is FORMAT.md: each of its headings is a heading of the page
    grep '^#' "$TOP/manifests/FORMAT.md" | sed 's/^#* //' | while read -r heading; do
        MANWIDTH=200 man -l "$MAN/man5/shardkit-format.5" 2>/dev/null | grep -qxF "   $heading" ||
            MANWIDTH=200 man -l "$MAN/man5/shardkit-format.5" 2>/dev/null | grep -qx "$heading" ||
            die "shardkit-format(5) lacks the heading '$heading' of FORMAT.md"
    done
}

case_every_option_a_programs_help_lists_is_an_option_of_its_page_written_as_help_writes_it() {
    programs | while read -r page cmd; do
        # shellcheck disable=SC2086
        $cmd --help >"$C/help" || die "'$cmd --help' failed"
        options "$C/help" >"$C/options"
        [ "$(wc -l <"$C/options")" -ge 3 ] || die "'$cmd --help' lists no options"
        # help2man (and the completion) read an option line only in that form
        grep -E '^ {1,10}-' "$C/help" | grep -vE '^ {1,10}-[^ ]*( [^ ]*)?(  .*)?$' >"$C/odd" &&
            die "'$cmd --help' has option lines help2man cannot read: $(cat "$C/odd")"
        # the tags of the page's option paragraphs, roff escapes undone
        sed -n '/^\.TP$/{n;p}' "$MAN/man1/$page.1" |
            sed -e 's/\\f[BIRP]//g' -e 's/\\f(CW//g' -e 's/\\[,/]//g' -e 's/\\-/-/g' >"$C/tags"
        while read -r option; do
            grep -qxF -- "$option" "$C/tags" ||
                die "$page(1) has no option '$option' (its tags: $(tr '\n' ';' <"$C/tags"))"
        done <"$C/options"
    done
}

case_the_nightly_jobs_page_is_of_the_builds_version_and_its_exit_status_is_the_table_of_exit_status_md() {
    # the nightly job's page: its version is the build's, and its EXIT STATUS is
    # made of its table in docs/reference/exit-status.md, one paragraph a row
    version=$(sed -n 's/^#define SHARDKIT_VERSION "\(.*\)"/\1/p' "$TOP/include/shardkit/api.h")
    [ "$(shardkit-nightly --version)" = "shardkit-nightly $version" ] ||
        die "shardkit-nightly --version: $(shardkit-nightly --version)"
    MANWIDTH=80 man -l "$MAN/man1/shardkit-nightly.1" 2>/dev/null | sed -n '1p;$p' | grep -c "$version" |
        grep -qx 1 || die "shardkit-nightly(1) is not of version $version"
    sed -n '/^## The nightly job/,/^## /p' "$TOP/docs/reference/exit-status.md" |
        sed -n 's/^| \([0-9]\) | `\{0,1\}\([^ |`]*\).*/\1 \2/p' >"$C/nightly.codes"
    [ "$(wc -l <"$C/nightly.codes")" -ge 8 ] ||
        die "exit-status.md: the nightly table has $(wc -l <"$C/nightly.codes") rows"
    # the section's paragraphs as 'CODE TEXT' lines
    sed -n '/^\.SH "EXIT STATUS"/,/^\.SH /p' "$MAN/man1/shardkit-nightly.1" |
        awk '/^\.B [0-9]$/ { code = $2; next } code != "" { print code, $0; code = "" }' >"$C/exit"
    while read -r code record; do
        grep -q "^$code .*; current: " "$C/exit" || die "shardkit-nightly(1) has no status $code"
        [ "$record" = "(no" ] || grep -q "^$code .*status: $record[; ]" "$C/exit" ||
            die "shardkit-nightly(1): status $code is not the record's '$record'"
    done <"$C/nightly.codes"
}

case_shardifys_page_names_shardify_merge_in_its_synopsis() {
    MANWIDTH=200 man -l "$MAN/man1/shardify.1" 2>/dev/null | sed -n '/^SYNOPSIS/,/^DESCRIPTION/p' |
        grep -q '^ *shardify merge \[--json\]' || die "shardify(1) has no synopsis of shardify merge"
}

case_bash_completes_every_long_option_of_each_program_and_the_values_an_option_lists() {
    cd "$T/cwd"
    programs | while read -r page cmd; do
        prog=${cmd%% *}; prog=${prog##*/}
        [ "$page" = shardify-merge ] && continue
        comp=$BUILD/completion/bash/$prog
        [ -f "$comp" ] || die "no bash completion '$comp'"
        # shellcheck disable=SC2086
        $cmd --help >"$C/help"
        options "$C/help" | tr ',' '\n' | sed -n 's/^ *\(--[^ ]\{1,\}\).*/\1/p' | sort -u >"$C/long"
        complete_words "$comp" "$prog" "--" | grep -- '^--' >"$C/offered"
        cmp -s "$C/long" "$C/offered" ||
            { diff "$C/long" "$C/offered" >&2; die "bash offers other options than '$prog --help' lists"; }
        # an argument 'a|b|c' of words: those are what bash offers after the option
        options "$C/help" | grep -E '^--[a-z-]+ [a-z]+(\|[a-z]+)+$' | while read -r option values; do
            complete_words "$comp" "$prog" "$option" "" | tr '\n' ' ' >"$C/values"
            want=$(echo "$values" | tr '|' '\n' | sort | tr '\n' ' ')
            [ "$(cat "$C/values")" = "$want" ] ||
                die "$prog $option: bash offers '$(cat "$C/values")', not '$want'"
        done
    done
}

case_bash_completes_a_value_from_its_start_and_offers_the_kinds_and_files_of_labels() {
    cd "$T/cwd"
    [ "$(complete_words "$BUILD/completion/bash/shardify" shardify --fit c)" = crop ] ||
        die "shardify --fit c does not complete to crop"
    [ "$(complete_words "$BUILD/completion/bash/shardify" shardify --on-error=f)" = fail ] ||
        die "shardify --on-error=f does not complete to fail"
    [ "$(complete_words "$BUILD/completion/bash/shardify" shardify --codec r)" = raw ] ||
        die "shardify --codec r does not complete to raw"
    complete_words "$BUILD/completion/bash/shardify" shardify --labels "" >"$C/labels"
    for w in dir none regex: sidecar: column: a.csv adir; do
        grep -qxF "$w" "$C/labels" || die "shardify --labels does not offer '$w': $(cat "$C/labels")"
    done
}

case_bash_completes_files_where_a_file_goes_directories_where_a_directory_goes_nothing_for_a_number() {
    cd "$T/cwd"
    [ "$(complete_words "$BUILD/completion/bash/shardify" shardify --annotations a)" = "a.csv
adir" ] || die "shardify --annotations does not complete files"
    [ "$(complete_words "$BUILD/completion/bash/shardcat" shardcat --out "")" = adir ] ||
        die "shardcat --out does not complete directories only"
    [ -z "$(complete_words "$BUILD/completion/bash/shardify" shardify --size "")" ] ||
        die "shardify --size offers something for a number"
}

case_bash_completes_the_subcommands_and_the_options_of_shardify_merge() {
    cd "$T/cwd"
    # shardbench's first operand is a subcommand; shardify's may be merge or SRC
    [ "$(complete_words "$BUILD/completion/bash/shardbench" shardbench "" | tr '\n' ' ')" = \
      "compare files roofline shards " ] || die "shardbench does not offer its subcommands"
    complete_words "$BUILD/completion/bash/shardify" shardify "" >"$C/first"
    grep -qx merge "$C/first" && grep -qx a.csv "$C/first" || die "shardify: $(cat "$C/first")"
    complete_words "$BUILD/completion/bash/shardify" shardify --size 64 adir "" >"$C/second"
    grep -qx merge "$C/second" && die "shardify offers merge as its second operand"
    grep -qx a.csv "$C/second" || die "shardify's second operand is not completed as a file"
    # options of a subcommand: shardify merge --help lists them
    [ "$(complete_words "$BUILD/completion/bash/shardify" shardify merge --q)" = --quiet ] ||
        die "shardify merge --q does not complete to --quiet"
    [ "$(complete_words "$BUILD/completion/bash/shardreport" shardreport "")" = nightly ] ||
        die "shardreport does not offer nightly"
}

case_zshs_completion_names_every_option_and_parses() {
    for prog in shardify shardcheck shardcat shardbench shardreport shardkit-nightly; do
        comp=$BUILD/completion/zsh/_$prog
        head -n 1 "$comp" | grep -qx "#compdef $prog" || die "'$comp' is not a #compdef file for $prog"
        if command -v zsh >/dev/null; then zsh -n "$comp" || die "zsh cannot parse '$comp'"; fi
        "$prog" --help >"$C/help"
        options "$C/help" | tr ',' '\n' | sed -n 's/^ *\(--[a-z][^ ]*\).*/\1/p' | while read -r o; do
            # '--size[...]', '(-h --help)'{-h,--help}'[...]'
            grep -qF -- "'$o[" "$comp" || grep -qF -- ",$o}" "$comp" || die "'$comp' lacks $o"
        done
    done
}

case_make_install_puts_pages_and_completion_where_man_and_bash_completion_look_and_the_nightly_job_too() {
    make -s -C "$TOP" BUILD="$BUILD" install DESTDIR="$C/stage" PREFIX=/usr \
        >"$C/install.log" 2>&1 || { cat "$C/install.log"; die "make install failed"; }
    for f in share/man/man1/shardify.1 share/man/man1/shardify-merge.1 share/man/man5/shardkit-format.5 \
             share/man/man1/shardkit-nightly.1 share/bash-completion/completions/shardify \
             share/bash-completion/completions/shardkit-nightly share/zsh/site-functions/_shardify \
             share/zsh/site-functions/_shardkit-nightly share/doc/shardkit/examples/nightly/crontab \
             share/doc/shardkit/examples/nightly/shardkit-nightly.service \
             share/doc/shardkit/examples/nightly/shardkit-nightly.timer; do
        [ -f "$C/stage/usr/$f" ] || die "not installed: $f"
    done
    # the nightly job is a program beside the tools, as cmd/ has it
    [ -x "$C/stage/usr/bin/shardkit-nightly" ] || die "not installed: bin/shardkit-nightly"
    cmp -s "$C/stage/usr/bin/shardkit-nightly" "$BUILD/bin/shardkit-nightly" ||
        die "the installed shardkit-nightly is not the build's"
    # the example units and crontab line run the program installed there
    ex="$C/stage/usr/share/doc/shardkit/examples/nightly"
    run=$(sed -n 's/^ExecStart=//p' "$ex/shardkit-nightly.service")
    [ "$run" = shardkit-nightly ] || die "the example service runs '$run', not shardkit-nightly"
    run=$(grep -v '^#' "$ex/crontab" | grep -o '[^ ]*shardkit-nightly[^ ]* >>')
    [ "$run" = "/usr/local/bin/shardkit-nightly >>" ] || die "the example crontab runs '$run'"
    # the former path, until 0.4.0, runs the installed program
    env -u SHARDKIT_BIN PATH="$C/stage/usr/bin:/usr/bin:/bin" "$ex/shardkit-nightly.sh" --help \
        >"$C/former" 2>/dev/null || die "the installed former path does not run"
    "$C/stage/usr/bin/shardkit-nightly" --help | cmp -s - "$C/former" ||
        die "the installed former path does not run the installed shardkit-nightly"
    MANWIDTH=80 man -M "$C/stage/usr/share/man" shardkit-nightly 2>/dev/null >"$C/man.txt" ||
        die "man -M ... shardkit-nightly does not find the installed page"
    grep -q -- '--max-loss PCT' "$C/man.txt" || die "the installed shardkit-nightly page lacks --max-loss"
    MANWIDTH=80 man -M "$C/stage/usr/share/man" shardify 2>/dev/null >"$C/man.txt" ||
        die "man -M ... shardify does not find the installed page"
    grep -q -- '--fit short|long|crop' "$C/man.txt" || die "the installed page lacks --fit"
    man -M "$C/stage/usr/share/man" -w 5 shardkit-format |
        grep -qx "$C/stage/usr/share/man/man5/shardkit-format.5" ||
        die "man -w 5 shardkit-format does not find the format page"
}

run_cases
