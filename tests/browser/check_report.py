#!/usr/bin/env python3
"""check_report.py - hold a rendered report to what it must show.

    check_report.py page RENDER_OUTPUT
        for every page render.py rendered: the browser saw no console message, page error or log entry, made no
        request, ran no script, loaded no image; the page fits a phone's
        width, prints, and its screenshots are not blank
    check_report.py shardcheck DOM JSON
        the DOM of a shardcheck report holds the numbers of its --json
    check_report.py shardbench DOM JSON
        the same for a shardbench report
    check_report.py nightly DOM ROOT
        the nightly index holds a row per run record in ROOT/runs
    check_report.py text DOM TEXT...
        the rendered text holds each TEXT (entities decoded: what a reader sees)

Exit status 0 when every check holds; otherwise each failure is printed and
the status is 1.  The DOM is the browser's (render.py), parsed here with the
standard library.
"""
import json
import math
import os
import sys
from html.parser import HTMLParser

from PIL import Image

FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def expect(cond, msg):
    if not cond:
        fail(msg)
    return cond


# ---- a small DOM ---------------------------------------------------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent = tag, dict(attrs), parent
        self.children = []

    def text(self):
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def classes(self):
        return (self.attrs.get("class") or "").split()

    def all(self, tag=None, cls=None, **attrs):
        """Every descendant with that tag, class and attributes (data_value= for data-value)."""
        out = []
        for c in self.children:
            if isinstance(c, str):
                continue
            ok = (tag is None or c.tag == tag) and (cls is None or cls in c.classes())
            for k, v in attrs.items():
                ok = ok and c.attrs.get(k.replace("_", "-")) == v
            if ok:
                out.append(c)
            out.extend(c.all(tag, cls, **attrs))
        return out

    def one(self, tag=None, cls=None, **attrs):
        found = self.all(tag, cls, **attrs)
        if len(found) != 1:
            raise LookupError("%d <%s class=%s %s>" % (len(found), tag, cls, attrs))
        return found[0]

    def by_id(self, id_):
        return self.one(id=id_)

    def title(self):
        """The text of this element's own <title> child (an SVG mark's)."""
        for c in self.children:
            if not isinstance(c, str) and c.tag == "title":
                return c.text()
        return None


class Builder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", [], None)
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        node = Node(tag, attrs, self.cur)
        self.cur.children.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not self.root and n.tag != tag:
            n = n.parent
        if n is not self.root:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def parse(path):
    b = Builder()
    with open(path, encoding="utf-8") as f:
        b.feed(f.read())
    b.close()
    return b.root


def num(s):
    """A data-value as a number: "inf", "nan" included."""
    return float(s)


def same(a, b):
    """Numbers equal as the writers print them (JSON null: infinite or NaN)."""
    if b is None:
        return a is None or not math.isfinite(a)
    if a is None:
        return False
    return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))


def quote_key(entry):
    """The text a key shows as: itself, or (key_hex) its bytes as the tools quote them."""
    if "key" in entry:
        raw = entry["key"].encode("utf-8")
    else:
        raw = bytes.fromhex(entry["key_hex"])
    out, i = [], 0
    while i < len(raw):
        for n in (4, 3, 2, 1):
            chunk = raw[i:i + n]
            try:
                ch = chunk.decode("utf-8")
            except UnicodeDecodeError:
                continue
            if len(ch) == 1:
                break
        else:
            ch, n = None, 1
        if ch is None or (n == 1 and (raw[i] < 0x20 or raw[i] == 0x7f)):
            out.append("\\x%02x" % raw[i])
            n = 1
        elif ch == "\\":
            out.append("\\\\")
        else:
            out.append(ch)
        i += n
    return "".join(out)


def quote_text(text):
    """The text a message or caption shows as: control characters as \\xNN."""
    return "".join("\\x%02x" % ord(c) if ord(c) < 0x20 or ord(c) == 0x7f else c for c in text)


def table_rows(doc, table_id):
    """The cells' text of each body row of a table."""
    table = doc.by_id(table_id)
    rows = []
    for tr in table.all("tr"):
        cells = [c for c in tr.children if not isinstance(c, str) and c.tag == "td"]
        if cells:
            rows.append(cells)
    return rows


def bars_of(doc, figure_id):
    """{row name: [bar values]} of a bar chart."""
    fig = doc.by_id(figure_id)
    out = {}
    for row in fig.all("g", "row"):
        out[row.attrs["data-name"]] = [num(b.attrs["data-value"]) for b in row.all("g", "bar")]
    return out


def check_histogram(doc, figure_id, h):
    bins = doc.by_id(figure_id).all("g", "bin")
    if not expect(len(bins) == len(h["counts"]),
                  "%s: %d bins drawn, JSON has %d" % (figure_id, len(bins), len(h["counts"]))):
        return
    for i, b in enumerate(bins):
        expect(int(b.attrs["data-value"]) == h["counts"][i] and
               same(num(b.attrs["data-lo"]), h["edges"][i]) and
               same(num(b.attrs["data-hi"]), h["edges"][i + 1]),
               "%s bin %d: drawn %s..%s: %s, JSON %s..%s: %s" % (
                   figure_id, i, b.attrs["data-lo"], b.attrs["data-hi"], b.attrs["data-value"],
                   h["edges"][i], h["edges"][i + 1], h["counts"][i]))
        expect(str(h["counts"][i]) in b.title(), "%s bin %d: title '%s'" % (figure_id, i,
                                                                            b.title()))


# ---- the page in the browser ------------------------------------------------------------

def not_blank(path, min_share=0.02):
    """Not all one colour: enough pixels differ from the most common one."""
    im = Image.open(path).convert("RGB")
    w, h = im.size
    small = im.resize((max(1, w // 2), max(1, h // 2)))
    colors = small.getcolors(maxcolors=1 << 24)
    total = sum(c for c, _ in colors)
    background = max(colors)[0]
    share = 1 - background / total
    expect(len(colors) > 1 and share >= min_share,
           "%s looks blank: %d colours, %.1f%% not background" % (path, len(colors), 100 * share))


def check_pages(output):
    with open(output) as f:
        pages = [json.loads(line) for line in f if line.strip()]
    expect(pages, "%s: no page was rendered" % output)
    for r in pages:
        check_page(r)


def check_page(r):
    name = r["file"]
    if not expect("failed" not in r, "%s did not render: %s" % (name, r.get("failed"))):
        return
    expect(not r["console"], "%s: console messages %s" % (name, r["console"]))
    expect(not r["exceptions"], "%s: page errors %s" % (name, r["exceptions"]))
    expect(not r["log"], "%s: log entries %s" % (name, r["log"]))
    expect(not r["requests"], "%s: network requests %s" % (name, r["requests"]))
    expect(r["scripts"] == 0, "%s: %s script elements" % (name, r["scripts"]))
    # images only as data: URIs in the page itself, each one decoded
    sources = r.get("image_sources", [])
    expect(len(sources) == r["images"], "%s: %s img elements, %d sources" % (
        name, r["images"], len(sources)))
    for src, decoded in sources:
        expect(src.startswith("data:image/jpeg;base64,") and decoded,
               "%s: an image from '%s' (decoded: %s)" % (name, src, decoded))
    expect(r["phone_overflow_px"] <= 0,
           "%s: %s px wider than a phone" % (name, r["phone_overflow_px"]))
    expect(r["pdf_pages"] >= 1, "%s: prints %s pages" % (name, r["pdf_pages"]))
    for shot in ("screenshot", "full_screenshot", "phone_screenshot"):
        if r.get(shot):
            not_blank(r[shot])


# ---- shardcheck -----------------------------------------------------------------------

def check_shardcheck(dom, js):
    doc = parse(dom)
    with open(js) as f:
        d = json.load(f)
    v = doc.by_id("verdict")
    expect(v.attrs["data-verified"] == ("true" if d["verified"] else "false"),
           "verdict says verified=%s, JSON %s" % (v.attrs["data-verified"], d["verified"]))
    head = v.text()
    if "error" in d:  # the checks could not run: the verdict says why
        expect(head == "Not verified: the dataset could not be checked" + d["error"],
               "verdict reads '%s', JSON error '%s'" % (head, d["error"]))
        return
    expect(head.startswith("Verified") if d["verified"] else
           head.startswith("Not verified: %d problem" % d["problem_count"]),
           "verdict reads '%s'" % head)
    ds = d.get("contents")
    if ds:
        c = ds["counts"]
        want = "%d sample%s in %d label%s kept, %d file%s rejected, %d ignored" % (
            c["samples"], "" if c["samples"] == 1 else "s", c["labels"],
            "" if c["labels"] == 1 else "s", c["rejected"], "" if c["rejected"] == 1 else "s",
            c["ignored"])
        expect(want in head, "verdict '%s' lacks '%s'" % (head, want))
        for card in ("candidates", "samples", "rejected", "ignored", "labels", "unlabeled"):
            shown = doc.one("div", data_card=card).one("span", "n").text()
            expect(shown == str(c[card]), "card %s shows %s, JSON %s" % (card, shown, c[card]))
        # rejects: every file with its reason, and the reasons' counts as bars
        if ds["rejects"]:
            rows = table_rows(doc, "reject-table")
            shown = {r[0].text(): r[1].text() for r in rows}
            for rj in ds["rejects"]:
                key = quote_key(rj)
                expect(shown.get(key) == rj["reason"],
                       "reject '%s': shown '%s', JSON '%s'" % (key, shown.get(key), rj["reason"]))
            bars = bars_of(doc, "rejects-by-reason")
            for rr in ds["rejects_by_reason"]:
                expect(bars.get(rr["reason"]) == [rr["count"]],
                       "reason '%s': bar %s, JSON %d" % (rr["reason"], bars.get(rr["reason"]),
                                                        rr["count"]))
        if ds["warned_samples"]:
            rows = table_rows(doc, "warned-table")
            expect([(r[0].text(), r[1].text()) for r in rows] ==
                   [(quote_key(w), w["warning"]) for w in ds["warned_samples"]],
                   "the samples stored despite a warning differ from JSON's")
        check_histogram(doc, "record-bytes", ds["record_bytes"])
        rows = table_rows(doc, "shard-table")
        expect([(r[0].text(), int(r[1].attrs["data-value"]), int(r[2].attrs["data-value"]))
                for r in rows] == [(s["file"], s["samples"], s["bytes"]) for s in ds["shards"]],
               "the shard table differs from JSON's shards")
        cfg = {r[0].text(): r[1].text() for r in table_rows(doc, "config-table")}
        for k, val in ds["config"].items():
            want = val if isinstance(val, str) else json.dumps(val, separators=(",", ":"))
            expect(cfg.get(k) == want, "option %s: shown '%s', JSON '%s'" % (k, cfg.get(k), want))
    # labels: each label's bars carry its counts, source beside shards
    labels = d.get("labels", [])
    if labels and len(labels) <= 60:
        bars = bars_of(doc, "label-counts")
        for lab in labels:
            name = lab["label"] if lab["label"] is not None else "(no label)"
            want = ([lab["source"]] if lab["source"] is not None else []) + \
                [lab["shards"] if lab["shards"] is not None else lab["manifest"]]
            expect(bars.get(name) == want,
                   "label '%s': bars %s, JSON %s" % (name, bars.get(name), want))
            row = [r for r in doc.by_id("label-counts").all("g", "row")
                   if r.attrs["data-name"] == name]
            expect(row and ("flagged" in row[0].classes()) == lab["differs"],
                   "label '%s': flagged %s, JSON differs %s" % (
                       name, row and "flagged" in row[0].classes(), lab["differs"]))
    for lab in labels:
        name = lab["label"] if lab["label"] is not None else "(no label)"
        rows = [r for r in table_rows(doc, "label-table") if r[0].text() == name]
        expect(len(rows) == 1 and int(rows[0][3].attrs["data-value"]) == lab["manifest"],
               "label table row of '%s'" % name)
    # problems: each one's message in the table, with its key
    if d["problems"]:
        rows = table_rows(doc, "problem-table")
        for i, p in enumerate(d["problems"][:len(rows)]):
            expect(rows[i][4].text() == p["message"],
                   "problem %d: shown '%s', JSON '%s'" % (i, rows[i][4].text(), p["message"]))
            if "key" in p or "key_hex" in p:
                expect(rows[i][3].text() == quote_key(p),
                       "problem %d key: shown '%s'" % (i, rows[i][3].text()))
    # the contact sheet: a figure per sample of JSON's, with its key, its
    # caption and its thumbnail's size
    if "contact_sheet" in d:
        figures = doc.by_id("contact-sheet-grid").all("figure")
        samples = d["contact_sheet"]["samples"]
        expect(len(figures) == len(samples) <= 48,
               "contact sheet: %d figures, JSON %d samples" % (len(figures), len(samples)))
        for f, s in zip(figures, samples):
            expect(int(f.attrs["data-index"]) == s["index"],
                   "contact sheet: figure of sample %s, JSON %s" % (f.attrs["data-index"], s["index"]))
            key = f.one("code", "key").text()
            want = quote_key(s) if ("key" in s or "key_hex" in s) else "sample %d" % s["index"]
            expect(key == want, "contact sheet: key '%s', JSON '%s'" % (key, want))
            captions = [c.text() for c in f.all("span", "caption")]
            if "error" in s:
                expect(captions == [s["error"]] and not f.all("img"),
                       "contact sheet: sample %d's error shown as %s" % (s["index"], captions))
                continue
            img = f.one("img")
            expect((int(img.attrs["width"]), int(img.attrs["height"]),
                    int(img.attrs["data-width"]), int(img.attrs["data-height"])) ==
                   (s["thumb_width"], s["thumb_height"], s["width"], s["height"]),
                   "contact sheet: sample %d's sizes" % s["index"])
            expect(max(s["thumb_width"], s["thumb_height"]) <= 128,
                   "contact sheet: sample %d's thumbnail is larger than 128 px" % s["index"])
            want = [] if s["caption"] is None else [
                quote_text(s["caption"]) + ("\u2026" if s["caption_cut"] else "")]
            expect(captions == want, "contact sheet: sample %d's caption %s, JSON %s" % (
                s["index"], captions, want))

    if "visitation" in d:
        rows = table_rows(doc, "visitation-table")
        got = [tuple(int(c.attrs["data-value"]) for c in r[:6]) for r in rows]
        want = [(w["world_size"], w["epochs"], w["min_per_rank"], w["max_per_rank"],
                 w["padded"], w["dropped"]) for w in d["visitation"]["world_sizes"]]
        expect(got == want, "visitation table %s, JSON %s" % (got, want))
    if "fidelity" in d:
        pts = doc.by_id("fidelity-psnr").all("g", "point")
        got = [num(p.attrs["data-value"]) for p in pts]
        want = [s["psnr"] for s in d["fidelity"]["samples"]]
        expect(len(got) == len(want) and all(same(a, b) for a, b in zip(got, want)),
               "fidelity points %s, JSON %s" % (got, want))
        for p, s in zip(pts, d["fidelity"]["samples"]):
            expect(p.title().startswith(quote_key(s) + ": "),
                   "fidelity point title '%s' for key '%s'" % (p.title(), quote_key(s)))


# ---- shardbench ------------------------------------------------------------------------

def check_bench_run(doc, prefix, run):
    """One run (files or shards) of a shardbench report against its JSON."""
    rows = {r[0].text(): r for r in table_rows(doc, prefix + "-phases")}
    for phase, key in (("first epoch", "first_epoch"), ("steady epochs", "steady")):
        ph = run[key]
        if ph is None:
            expect(phase not in rows, "%s: a row for %s, which did not run" % (prefix, phase))
            continue
        r = rows.get(phase)
        if not expect(r is not None, "%s: no row for %s" % (prefix, phase)):
            continue
        vals = [num(c.attrs["data-value"]) for c in r[1:]]
        want = [ph["epochs"], ph["samples"], ph["seconds"], ph["samples_per_second"],
                ph["mb_per_second"], ph["batch_latency_ms"]["p50"], ph["batch_latency_ms"]["p99"],
                ph["wait_fraction"], ph["cpu_seconds_per_sample"], ph["bytes_read"],
                ph["requests"], ph["retries"]]
        expect(all(same(a, b) for a, b in zip(vals, want)) and len(vals) == len(want),
               "%s %s: shown %s, JSON %s" % (prefix, phase, vals, want))
    check_histogram(doc, prefix + "-latency", run["batch_latency_histogram"])
    if run.get("wait_over_time"):
        pts = doc.by_id(prefix + "-wait").all("g", "point")
        got = [num(p.attrs["data-value"]) for p in pts]
        want = [w["wait_ms"] for w in run["wait_over_time"]]
        expect(len(got) == len(want) and all(same(a, b) for a, b in zip(got, want)),
               "%s wait over time: %d points, JSON %d" % (prefix, len(got), len(want)))


def check_shardbench(dom, js):
    doc = parse(dom)
    with open(js) as f:
        d = json.load(f)
    runs = [("files", d["files"]), ("shards", d["shards"])] if d["mode"] == "compare" \
        else [(d["mode"], d)]
    bars = bars_of(doc, "throughput")
    for name, run in runs:
        check_bench_run(doc, name, run)
        for phase, key in (("first epoch", "first_epoch"), ("steady epochs", "steady")):
            if run[key] is None:
                continue
            got = bars.get(phase)
            i = [n for n, _ in runs].index(name)
            expect(got is not None and same(got[i], run[key]["samples_per_second"]),
                   "throughput bar %s/%s: %s, JSON %s" % (
                       phase, name, got, run[key]["samples_per_second"]))
    if d["mode"] == "compare":
        ratio = doc.one(None, "ratio")
        expect(same(num(ratio.attrs["data-value"]), d["ratio"]),
               "ratio shown %s, JSON %s" % (ratio.attrs["data-value"], d["ratio"]))
    cmd = doc.by_id("command").text()
    expect(cmd == d["command"], "command shown '%s', JSON '%s'" % (cmd, d["command"]))
    machine = {tr.attrs.get("data-key"): tr.all("td")[1].text()
               for tr in doc.by_id("machine-table").all("tr") if tr.attrs.get("data-key")}
    for k, v in d["machine"].items():
        expect(machine.get(k) == str(v), "machine %s: shown '%s', JSON '%s'" % (
            k, machine.get(k), v))


# ---- the nightly index --------------------------------------------------------------------

def check_nightly(dom, root):
    doc = parse(dom)
    runs_dir = os.path.join(root, "runs")
    records = []
    for name in sorted(os.listdir(runs_dir)):
        if name.endswith(".json") and name.count(".") == 1 and name != "latest.json":
            with open(os.path.join(runs_dir, name)) as f:
                records.append(json.load(f))
    rows = table_rows(doc, "runs")
    expect(len(rows) == len(records), "%d rows, %d run records" % (len(rows), len(records)))
    shown = {r[0].text(): r for r in rows}
    for rec in records:
        r = shown.get(rec["run"])
        if not expect(r is not None, "no row for run %s" % rec["run"]):
            continue
        summary = (rec.get("shardify") or {}).get("summary") or {}
        expect(r[1].text() == rec["status"], "run %s: status '%s', JSON '%s'" % (
            rec["run"], r[1].text(), rec["status"]))
        for i, key in ((2, "samples"), (3, "rejected")):
            want = summary.get(key)
            got = r[i].attrs.get("data-value")
            expect((want is None and got is None) or (got is not None and same(num(got), want)),
                   "run %s %s: shown %s, JSON %s" % (rec["run"], key, got, want))
        lineage = (rec.get("incremental") or {}).get("lineage") or {}
        want, got = lineage.get("reused"), r[5].attrs.get("data-value")
        expect((want is None and got is None) or (got is not None and same(num(got), want)),
               "run %s reused: shown %s, JSON %s" % (rec["run"], got, want))
        expect(same(num(r[4].attrs["data-value"]), rec["seconds"]),
               "run %s seconds: %s, JSON %s" % (rec["run"], r[4].attrs["data-value"],
                                                rec["seconds"]))
        link = [a for a in r[0].all("a")]
        if rec.get("report"):
            expect(link and link[0].attrs.get("href") == rec["report"],
                   "run %s links %s, JSON %s" % (rec["run"], link and link[0].attrs, rec["report"]))
    pts = doc.by_id("trend-samples").all("g", "point")
    by_run = sorted(records, key=lambda r: r["run"])
    want = [((r.get("shardify") or {}).get("summary") or {}).get("samples") for r in by_run]
    got = [num(p.attrs["data-value"]) for p in pts]
    expect(len(got) == len(want) and all(same(a, b) if b is not None else not math.isfinite(a)
                                         for a, b in zip(got, want)),
           "samples trend %s, runs %s" % (got, want))


def check_text(dom, texts):
    doc = parse(dom)
    body = doc.one("body").text()
    for t in texts:
        expect(t in body, "the page does not show '%s'" % t)


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    what = argv[1]
    if what == "page":
        check_pages(argv[2])
    elif what == "shardcheck":
        check_shardcheck(argv[2], argv[3])
    elif what == "shardbench":
        check_shardbench(argv[2], argv[3])
    elif what == "nightly":
        check_nightly(argv[2], argv[3])
    elif what == "text":
        check_text(argv[2], argv[3:])
    else:
        print("unknown check '%s'" % what, file=sys.stderr)
        return 2
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
