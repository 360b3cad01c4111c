#!/usr/bin/env python3
"""page_read.py - read a page the way a person does, in headless Chromium.

    page_read.py FILE.html copy ID
        select the whole content of the element with id ID, as a reader
        drags over it, and write the selection as the browser turns it into
        text for the clipboard (Selection.toString(), UTF-8, nothing added)
    page_read.py FILE.html links
        every link of the page as the browser resolves it (a.href: an
        absolute URL), as a JSON list of {"href", "url", "text"} ("href" the
        attribute as written)

Chromium is render.py's: no network, a profile of its own.  Output on
stdout.  Exit status 0; 1 when the page does not load or (copy) has no
element with that id; 2 for a usage error.
"""
import json
import os
import pathlib
import sys

from render import Browser, Page

COPY = """(function (id) {
    var e = document.getElementById(id);
    if (!e) return null;
    var range = document.createRange();
    range.selectNodeContents(e);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    return sel.toString();
})(%s)"""

LINKS = """Array.from(document.querySelectorAll("a")).map(function (a) {
    return {href: a.getAttribute("href"), url: a.href, text: a.textContent};
})"""


def main(argv):
    if len(argv) < 3 or argv[2] not in ("copy", "links") or len(argv) != (4 if argv[2] == "copy" else 3):
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    path, what = os.path.abspath(argv[1]), argv[2]
    browser = Browser()
    try:
        page = Page(browser)
        page.load(pathlib.Path(path).as_uri())
        result = page.evaluate(COPY % json.dumps(argv[3]) if what == "copy" else LINKS)
        page.close()
    finally:
        browser.close()
    if result is None:
        print("page_read.py: %s has no element with id '%s'" % (path, argv[3]), file=sys.stderr)
        return 1
    if what == "copy":
        sys.stdout.buffer.write(result.encode("utf-8"))
    else:
        print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
