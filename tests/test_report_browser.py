"""The report opens in a real browser: headless Chromium (Debian's ``chromium``, listed in
setup/apt-packages.txt; ``tests/browser.py``) renders it to a screenshot that is not blank,
with every table present in the DOM, the summary tables rendered at the top and the full
record's tables folded (rendered once every fold is opened), and every image decoded.

Chromium is a listed package, so its absence FAILS these tests (naming the list) rather than
skipping them: CI and ``setup/check_clean_system.sh`` install the list. Each render is one
Chromium launch (about a second); the checker's own tests (a blank page, a broken image, a
page without fonts, a hidden table) show that each check can fail.
"""
from __future__ import annotations

import base64
import html.parser
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import browser

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def chromium():
    try:
        return browser.chromium_binary()
    except browser.BrowserMissing as e:
        pytest.fail(str(e), pytrace=False)


def _png(w_in=4.0, h_in=3.0, dpi=50) -> bytes:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(w_in, h_in))
    ax.plot([0, 1, 2, 3], [1, 3, 2, 4], color="tab:blue", lw=3)
    ax.scatter([0.5, 1.5, 2.5], [2, 2.5, 3], color=["tab:orange", "tab:green", "tab:red"], s=80)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return buf.getvalue()


def _svg() -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.bar(["a", "b", "c"], [3, 1, 2], color=["tab:purple", "tab:olive", "tab:cyan"])
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    text = re.sub(r"<\?xml.*?\?>|<!DOCTYPE.*?>", "", buf.getvalue(), flags=re.S)
    return text.strip()


def _table(tid, rows):
    cols = list(rows[0])
    body = "".join("<tr>" + "".join(
        f'<td class="num" data-value="{r[c]!r}">{r[c]:.4g}</td>' if isinstance(r[c], float) else f"<td>{r[c]}</td>"
        for c in cols) + "</tr>" for r in rows)
    return (f'<table id="{tid}" class="metric-table"><caption>{tid}</caption><thead><tr>'
            + "".join(f"<th>{c}</th>" for c in cols) + f"</tr></thead><tbody>{body}</tbody></table>")


ROWS_A = [{"controller": "bbr", "throughput_mbps": 7.4123, "p95_owd_ms": 31.25},
          {"controller": "cubic", "throughput_mbps": 7.5501, "p95_owd_ms": 88.5}]
ROWS_B = [{"flow": "0", "loss": 0.0125}, {"flow": "1", "loss": 0.25}]


def _page(png: bytes | None, svg: str | None = None) -> str:
    """A page in the report's shape (jaxcc.report): two metric tables, a PNG figure as a data:
    URI, an inline-SVG figure."""
    figs = ""
    if png is not None:
        figs += (f'<figure class="fig" id="fig-png"><img alt="png" src="data:image/png;base64,'
                 f'{base64.b64encode(png).decode()}"><figcaption>scatter.png</figcaption></figure>')
    if svg is not None:
        figs += f'<figure class="fig" id="fig-svg">{svg}<figcaption>bars.svg</figcaption></figure>'
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>fixture</title><style>"
            "body{font-family:sans-serif;color:#1a1a1a}table.metric-table{border-collapse:collapse}"
            "td,th{border:1px solid #d0d0d0;padding:.2em .5em}figure.fig svg,figure.fig img{display:block}"
            "</style></head><body><h1>jaxcc report fixture</h1>"
            + _table("t-a", ROWS_A) + _table("t-b", ROWS_B) + figs + "</body></html>")


def test_fixture_page_renders_with_every_table_and_image(tmp_path, chromium):
    png = _png()                      # 4 x 3 in at 50 dpi: 200 x 150 px
    page = tmp_path / "page.html"
    page.write_text(_page(png, _svg()))
    r = browser.render(page, tmp_path / "r")
    dom = browser.parse_dom(r.dom)
    assert browser.dom_problems(dom) == []
    assert browser.screenshot_problems(r.screenshot, dom) == []
    # both tables, in the rendered DOM, with the values written
    tables = {t.id: t for t in dom.tables}
    assert set(tables) == {"t-a", "t-b"} and all("metric-table" in t.classes for t in tables.values())
    got = [[float(v) for _, v in row if v is not None] for row in tables["t-a"].rows[1:]]
    assert got == [[7.4123, 31.25], [7.5501, 88.5]]
    assert [row[0][0] for row in tables["t-a"].rows[1:]] == ["bbr", "cubic"]
    # the PNG decoded at its own size; the SVG drew something; both inside the screenshot
    assert dom.images == ["200x150 opaque=1.0000"]
    assert [f.id for f in dom.figures] == ["fig-png", "fig-svg"]
    assert browser._size_ok(dom.figures[1].svgs[0])
    assert all(browser.in_screenshot(e.rect) for e in dom.tables + dom.figures)


def test_the_checks_catch_a_blank_page_a_broken_image_and_missing_fonts(tmp_path, chromium):
    """The checker's own test: each way a report can look broken is reported."""
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    r = browser.render(blank, tmp_path / "blank")
    probs = browser.screenshot_problems(r.screenshot, browser.parse_dom(r.dom))
    assert any(p.startswith("blank:") for p in probs) and any("distinct colours" in p for p in probs), probs

    # a PNG whose signature is damaged does not decode at all; one cut after its header has a
    # size but no pixel decoded: either way the image and its figure are reported
    png = _png()
    for name, data, seen in (("mangled", b"\x00" + png[1:], "broken"), ("cut", png[:200], "200x150 opaque=0.0000")):
        page = tmp_path / f"{name}.html"
        page.write_text(_page(data))
        r = browser.render(page, tmp_path / name)
        dom = browser.parse_dom(r.dom)
        probs = browser.dom_problems(dom)
        assert dom.images == [seen], name
        assert any(p.startswith("image 0: not decoded") for p in probs), (name, probs)
        assert any(p.startswith("fig-png: nothing drawn") for p in probs), (name, probs)

    # no font at all (what a system without a fonts package shows): the tables have no text
    conf = tmp_path / "no-fonts.conf"
    conf.write_text(f'<?xml version="1.0"?><!DOCTYPE fontconfig SYSTEM "fonts.dtd"><fontconfig>'
                    f'<cachedir>{tmp_path / "fc"}</cachedir></fontconfig>')
    page = tmp_path / "page.html"
    page.write_text(_page(_png()))
    r = browser.render(page, tmp_path / "nofont", env={"FONTCONFIG_FILE": str(conf)})
    dom = browser.parse_dom(r.dom)
    probs = browser.screenshot_problems(r.screenshot, dom)
    assert browser.dom_problems(dom) == []
    assert {"table t-a", "table t-b"} <= {p.split(" at ")[0] for p in probs}, probs


def test_a_folded_table_is_checked_once_opened_and_a_hidden_one_is_caught(tmp_path, chromium):
    """A table in a closed <details> (the report's full record) is in the DOM, marked folded and
    not a problem (it is not drawn: its text is not looked for in the screenshot); opened
    (``unfold``) it is drawn and checked like any other. A table hidden otherwise is a problem."""
    folded = tmp_path / "folded.html"
    folded.write_text(_page(_png()).replace(_table("t-b", ROWS_B), "<details><summary>t-b</summary>"
                                            + _table("t-b", ROWS_B) + "</details>"))
    r = browser.render(folded, tmp_path / "closed")
    dom = browser.parse_dom(r.dom)
    tables = {t.id: t for t in dom.tables}
    assert not tables["t-a"].folded and tables["t-b"].folded
    assert browser.dom_problems(dom) == [] and browser.screenshot_problems(r.screenshot, dom) == []
    assert [row[1][1] for row in tables["t-b"].rows[1:]] == ["0.0125", "0.25"]  # in the DOM all the same
    r = browser.render(folded, tmp_path / "open", unfold=True)
    dom = browser.parse_dom(r.dom)
    assert not any(t.folded for t in dom.tables) and browser.dom_problems(dom) == []
    assert all(browser.in_screenshot(t.rect) for t in dom.tables)
    assert browser.screenshot_problems(r.screenshot, dom) == []

    hidden = tmp_path / "hidden.html"
    hidden.write_text(_page(_png()).replace('<table id="t-b"', '<table style="display:none" id="t-b"'))
    probs = browser.dom_problems(browser.parse_dom(browser.render(hidden, tmp_path / "hidden").dom))
    assert [p.split(" (")[0] for p in probs] == ["table t-b: no rendered box"], probs


class _SourceTables(html.parser.HTMLParser):
    """The ids of the ``<table>``s (and of those inside a ``<details>``: ``folded``) and the
    number of ``<figure class="fig">`` in an HTML file as written (Python's parser, not the
    browser's)."""

    def __init__(self):
        super().__init__()
        self.tables, self.folded, self.figures, self._details = [], [], 0, 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "details":
            self._details += 1
            assert "open" not in a, "a fold of the report is open"
        elif tag == "table":
            self.tables.append(a.get("id"))
            if self._details:
                self.folded.append(a.get("id"))
        elif tag == "figure" and "fig" in (a.get("class") or "").split():
            self.figures += 1

    def handle_endtag(self, tag):
        if tag == "details":
            self._details -= 1


def _has(values, x):
    return any(v == pytest.approx(x, rel=1e-12, abs=1e-12) for v in values)


def test_evaluation_report_renders_in_chromium(tmp_path, chromium):
    """``python -m jaxcc.evaluate --report`` (two scenarios, two controllers, 6 s): its
    report.html, rendered offline in headless Chromium, is not blank; it opens with a summary
    table per scenario, rendered inside the screenshot; every table of the full record is in the
    DOM, folded, and renders once every fold is opened; every figure file (in OUT/plots or OUT)
    is there and drawn; and the records of results.json are in it: per scenario one summary
    table with every controller's throughput and p95 OWD (the cells' data-value), and every
    flow's in a table."""
    out = tmp_path / "ev"
    cmd = [sys.executable, "-m", "jaxcc.evaluate", "--scenario=pareto/fixed50,pareto/shared2",
           "--controller=bbr,cubic", "--duration=6", "--noprogress", "--report", f"--out={out}"]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert p.returncode == 0, p.stderr[-3000:]
    records = json.loads((out / "results.json").read_text())["results"]
    scens = ("pareto/fixed50", "pareto/shared2")
    assert {(r["scenario"], r["controller"]) for r in records} == {(s, c) for s in scens for c in ("bbr", "cubic")}
    src = _SourceTables()
    src.feed((out / "report.html").read_text(encoding="utf-8"))
    stems = {f"{d.name}/{f.stem}" for d in (out, out / "plots") if d.is_dir()
             for f in d.iterdir() if f.suffix in (".svg", ".png")}
    assert stems, "jaxcc.evaluate wrote no figures"
    summaries = [f"t-summary-{s.replace('/', '-')}" for s in scens]
    assert src.tables[:2] == summaries and not set(summaries) & set(src.folded)
    assert src.folded and set(src.folded) < set(src.tables)

    r = browser.render(out / "report.html", tmp_path / "render")
    dom = browser.parse_dom(r.dom)
    assert browser.dom_problems(dom) == []
    assert browser.screenshot_problems(r.screenshot, dom) == []
    # every table written is in the rendered DOM, each a metric table; the summaries open the
    # page (inside the screenshot, so its text was checked), the full record is folded
    assert [t.id for t in dom.tables] == src.tables and len(set(src.tables)) == len(src.tables)
    assert all("metric-table" in t.classes for t in dom.tables)
    assert [t.id for t in dom.tables if t.folded] == src.folded
    tables = {t.id: t for t in dom.tables}
    assert all(browser.in_screenshot(tables[s].rect) for s in summaries)
    # one figure per figure file stem, each drawn (an inline SVG or a decoded PNG), none folded
    figs = [f for f in dom.figures if "fig" in f.classes]
    assert len(figs) == len(stems) == src.figures, (len(figs), sorted(stems))
    assert not any(f.folded for f in figs)
    # jaxcc's figures have an opaque background: a PNG pixel left transparent did not decode (a
    # PNG cut short decodes its first rows only)
    for f in figs:
        assert all(v.endswith(" opaque=1.0000") for v in f.images), (f.id, f.images)
    # the records are in the tables: per scenario its summary table holds every controller's
    # name, throughput and p95 OWD (the cells' exact data-value); every flow's throughput and p95
    # OWD is in a table
    def values(t):
        return [float(v) for row in t.rows for _, v in row if v is not None]

    def texts(t):
        return {text for row in t.rows for text, _ in row}

    for scen, tid in zip(scens, summaries):
        t = tables[tid]
        for rec in (r for r in records if r["scenario"] == scen):
            assert rec["controller"] in texts(t) and _has(values(t), rec["throughput_mbps"]) \
                and _has(values(t), rec["p95_owd_ms"]), f"{scen} / {rec['controller']} not in its summary"
            for f in rec["per_flow"]:
                assert any(_has(values(t), f["throughput_mbps"]) and _has(values(t), f["p95_owd_ms"])
                           for t in dom.tables), f"flow {f['flow']} of {scen} / {rec['controller']} in no table"

    # every fold opened: every table is drawn (the text of those inside the screenshot checked)
    r = browser.render(out / "report.html", tmp_path / "unfolded", unfold=True)
    dom = browser.parse_dom(r.dom)
    assert not any(t.folded for t in dom.tables) and browser.dom_problems(dom) == []
    assert browser.screenshot_problems(r.screenshot, dom) == []
    assert [t.id for t in dom.tables] == src.tables
    print(f"report: {len(dom.tables)} tables ({len(src.folded)} folded), {len(figs)} figures, "
          f"rendered in {r.seconds:.1f} s")
