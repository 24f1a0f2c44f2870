"""``--report``'s report.html (jaxcc.report), read back with html.parser: the layout (after the
table of contents a readable summary table per scenario, with units and fixed decimals; bar
verdicts and figures next, the figures grouped per scenario; the full record last, every table of
it folded in a closed <details>), a table per record group promised (counted from the
results.json fed in), the tables' numbers equal results.json's, every figure file embedded (SVG
inline, PNG as a data: URI of the same bytes), no absolute path of the run's folders shown,
nothing external, the command and the version present.

Hand-made inputs check the layout, the summary's formatting and the path rule exactly; real
outputs check that every command's report holds everything: a tiny ``jaxcc.evaluate`` run; the
shipped TCR run (checkpoints/deepcc/tcr) through ``jaxcc.tcr --records``; the shipped
sim-vs-emulation comparison (checkpoints/pareto/sim2real_links.json) split back into its two
results.json files, so no network namespace is needed.  A browser rendering is
tests/test_report_browser.py's.
"""

import base64
import json
import math
import os
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from jaxcc import evaluate, report, scenarios, sim2real, tcr
from jaxcc.sim import trace as sim_trace

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POLICY = os.path.join(REPO, "checkpoints/pareto/pareto_fair.safetensors")


class Parsed(HTMLParser):
    """The report's tables (id, class, caption, header, rows of (text, attrs), whether folded in a
    closed <details>), figures, every src/href, the provenance fields, the specs' <details> JSON,
    and the document order of headings, tables and figures (``order``)."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tables, self.figures, self.urls, self.tags, self.text = [], [], [], [], {}
        self.details, self.order, self.open_details = [], [], 0
        self._t = self._cell = self._fig = self._cap = self._field = self._pre = self._h = None
        self._folds = []  # per open <details>: whether it is closed
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        for k in ("src", "href", "xlink:href", "data"):
            if k in a:
                self.urls.append((tag, k, a[k]))
        if tag == "details":
            self._folds.append("open" not in a)
            self.open_details += "open" in a
        elif tag == "table":
            self._t = {"id": a.get("id"), "class": a.get("class"), "caption": "", "head": [], "rows": [],
                       "folded": any(self._folds)}
            self.tables.append(self._t)
            self.order.append(("table", self._t))
        elif tag == "caption" and self._t is not None:
            self._cap = []
        elif tag == "tr" and self._t is not None:
            self._t["rows"].append([])
        elif tag in ("td", "th") and self._t is not None:
            self._cell = {"text": "", "attrs": a, "tag": tag}
        elif tag == "figure":
            self._fig = {"class": a.get("class"), "svg": False, "img": None, "caption": ""}
            self.figures.append(self._fig)
            self.order.append(("figure", self._fig))
        elif tag == "svg" and self._fig is not None:
            self._fig["svg"] = True
        elif tag == "img" and self._fig is not None:
            self._fig["img"] = a.get("src")
        elif tag == "figcaption":
            self._cap = []
        elif tag in ("h2", "h3") and self._fig is None:
            self._h = {"tag": tag, "text": ""}
            self.order.append(("heading", self._h))
        elif a.get("id") in ("command", "version", "date"):
            self._field = a["id"]
            self.text[self._field] = ""
        elif tag == "pre":
            self._pre = ""

    def handle_endtag(self, tag):
        if tag == "details" and self._folds:
            self._folds.pop()
        elif tag == "table":
            t = self._t
            if t["rows"] and all(c["tag"] == "th" for c in t["rows"][0]):
                t["head"] = [c["text"] for c in t["rows"].pop(0)]
            self._t = None
        elif tag == "caption" and self._cap is not None and self._t is not None:
            self._t["caption"] = "".join(self._cap)
            self._cap = None
        elif tag in ("td", "th") and self._cell is not None:
            self._t["rows"][-1].append(self._cell)
            self._cell = None
        elif tag == "figcaption" and self._fig is not None:
            self._fig["caption"] = "".join(self._cap)
            self._cap = None
        elif tag == "figure":
            self._fig = None
        elif tag in ("h2", "h3"):
            self._h = None
        elif tag in ("code", "dd"):
            self._field = None
        elif tag == "pre" and self._pre is not None:
            self.details.append(self._pre)
            self._pre = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell["text"] += data
        if self._cap is not None:
            self._cap.append(data)
        if self._field:
            self.text[self._field] += data
        if self._pre is not None:
            self._pre += data
        if self._h is not None:
            self._h["text"] += data

    def table(self, caption):
        found = [t for t in self.tables if t["caption"] == caption]
        assert len(found) == 1, f"{len(found)} tables captioned {caption!r}; have {[t['caption'] for t in self.tables]}"
        return found[0]

    def main_order(self):
        """``order`` after the table of contents: ("heading", "h2 Summary"), ("table", caption),
        ("figure", caption)."""
        out = []
        for kind, x in self.order:
            if kind == "heading":
                out.append((kind, f"{x['tag']} {x['text']}"))
            else:
                out.append((kind, x["caption"]))
        return out[1:] if out and out[0] == ("heading", "h2 Contents") else out


def parse(path):
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    return text, Parsed(text)


def rel(text, folder):
    """A text of results.json as a report written to ``folder`` shows it (its paths relative)."""
    return report.relative_text(text, str(folder))


def same(cell, want, folder=None):
    """A cell shows ``want``: "–" for null, yes/no for a bool, a number to its four significant
    digits (and exactly in data-value), a string as is but for its paths (``rel``)."""
    text = cell["text"]
    if want is None or (isinstance(want, float) and math.isnan(want)):
        return text == "–"
    if isinstance(want, bool):
        return text == ("yes" if want else "no")
    if isinstance(want, (int, float)):
        shown = float(text.replace("∞", "inf").replace("−", "-"))
        return (shown == pytest.approx(want, rel=6e-4, abs=1e-12)
                and float(cell["attrs"]["data-value"]) == float(want))
    if isinstance(want, str):
        return text == rel(want, folder)
    return True  # lists and objects: their own tables or a compact form


def dotted(rec, key):
    for part in key.split("."):
        rec = rec[part]
    return rec


def check_common(text, doc, command, folder, hidden=()):
    """Nothing external; every table and figure has the classes the browser test counts; the
    command (its paths relative) and version are there; no absolute path of the report's folder,
    of the checkout or of ``hidden`` is anywhere in the file; the summary comes first, the full
    record last and folded."""
    low = text.lower()
    for scheme in ("http:", "https:", "file:", "ftp:", "//fonts", "@import", "url(http"):
        assert scheme not in low, f"report references {scheme}"
    assert "script" not in doc.tags and "link" not in doc.tags and "iframe" not in doc.tags
    for tag, attr, url in doc.urls:
        assert (url.startswith("#") if "href" in attr else url.startswith("data:image/")), (tag, attr, url[:80])
    for t in doc.tables:
        assert t["id"] and t["class"] == "metric-table" and t["caption"], t["caption"]
    assert len({t["id"] for t in doc.tables}) == len(doc.tables)
    for f in doc.figures:
        assert f["class"] == "fig" and (f["svg"] or (f["img"] or "").startswith("data:image/png;base64,"))
    assert doc.text["command"] == rel(command, folder)
    from importlib import metadata
    assert f"jaxcc {metadata.version('jaxcc')}" in doc.text["version"]
    head = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode == 0:
        assert head.stdout.strip() in doc.text["version"]
    for p in (str(folder), REPO, *map(str, hidden)):
        for form in {p, os.path.realpath(p)}:
            assert form not in text, f"{form} in the report"
    check_layout(doc)


def check_layout(doc):
    """After the table of contents a section whose first table is a summary; no table folded
    before the "Full record" section (the last h2), every table folded after it, no figure there,
    no <details> open."""
    order = doc.main_order()
    assert order[0][0] == "heading", order[:3]
    first = next(x for k, x in order if k == "table")
    assert first.startswith(("summary: ", "TCR per controller", "sim vs emulation: ")), first
    h2 = [x for k, x in order if k == "heading" and x.startswith("h2 ")]
    assert h2[-1] == "h2 Full record", h2
    after = False
    for kind, x in doc.order:
        if kind == "heading":
            after = after or (x["tag"], x["text"]) == ("h2", "Full record")
        elif kind == "table":
            assert x["folded"] == after, (x["caption"], x["folded"])
        else:
            assert not after, x["caption"]
    assert doc.open_details == 0


def check_figures(doc, groups, folder):
    """Every figure given (per stem: .svg inline if written, else the .png's exact bytes) is in
    the report, captioned with its path relative to ``folder`` (after its group's label);
    ``groups``: [(label or None, files)]."""
    n = 0
    by_caption = {f["caption"]: f for f in doc.figures}
    for label, files in groups:
        stems = {}
        for f in files:
            stem, ext = os.path.splitext(f)
            if ext in (".svg", ".png"):
                stems.setdefault(stem, set()).add(ext)
        assert stems, "no figure files to check"
        for stem, exts in stems.items():
            shown = report.relative_path(os.path.abspath(stem + (".svg" if ".svg" in exts else ".png")), str(folder))
            caption = f"{label}: {shown}" if label else shown
            assert caption in by_caption, f"{caption} not embedded; have {sorted(by_caption)}"
            fig = by_caption[caption]
            if ".svg" in exts:
                assert fig["svg"]
            else:
                with open(stem + ".png", "rb") as fh:
                    assert base64.b64decode(fig["img"].split(",", 1)[1]) == fh.read()
        n += len(stems)
    assert len(doc.figures) == n


def check_record_tables(doc, records, folder, prefix=""):
    """Per scenario a metrics table (a column per controller, a row per scalar field) whose every
    cell equals the record's field; per record a per-flow table equal to its per_flow."""
    by_scen = {}
    for r in records:
        by_scen.setdefault(r["scenario"], []).append(r)
    for scen, recs in by_scen.items():
        t = doc.table(f"{prefix}metrics: {scen}")
        assert t["head"] == ["field"] + [rel(r["controller"], folder) for r in recs]
        fields = [row[0]["text"] for row in t["rows"]]
        # every scalar field of every record is a row (nested objects as dotted fields)
        for r in recs:
            for k, v in r.items():
                if k in ("scenario", "controller") or (isinstance(v, list) and v and isinstance(v[0], dict)):
                    continue
                if isinstance(v, dict):
                    assert any(f.startswith(k + ".") for f in fields) or not v, k
                else:
                    assert k in fields, f"{scen}: field {k} missing"
        for row in t["rows"]:
            for cell, r in zip(row[1:], recs):
                try:
                    want = dotted(r, row[0]["text"])
                except KeyError:
                    assert cell["text"] == "–"
                    continue
                assert same(cell, want, folder), (scen, r["controller"], row[0]["text"], cell["text"], want)
        for r in recs:
            flows = r.get("per_flow") or []
            if not flows:
                continue
            ft = doc.table(rel(f"{prefix}per flow: {scen} / {r['controller']}", folder))
            assert len(ft["rows"]) == len(flows)
            for row, fl in zip(ft["rows"], flows):
                for col, cell in zip(ft["head"], row):
                    if col in fl or "." not in col:
                        assert same(cell, fl.get(col), folder), (scen, r["controller"], col, cell["text"], fl.get(col))
        seeds = [(r["controller"], s) for r in recs for s in (r.get("per_seed") or [])]
        if seeds:
            st = doc.table(f"{prefix}per seed: {scen}")
            assert len(st["rows"]) == len(seeds)
            for row, (ctrl, s) in zip(st["rows"], seeds):
                cells = dict(zip(st["head"], row))
                assert cells["controller"]["text"] == rel(ctrl, folder)
                for k, v in s.items():
                    assert same(cells[k], v, folder), (scen, ctrl, k)


# the summary's columns: header, record field, the text a value shows (as jaxcc.evaluate's
# terminal table prints it)
SUMMARY = [("Throughput (Mbit/s)", "throughput_mbps", lambda v: f"{v:.2f}"),
           ("Utilization (fraction of capacity)", "utilization", lambda v: f"{v:.3f}"),
           ("p95 one-way delay (ms)", "p95_owd_ms", lambda v: f"{v:.1f}"),
           ("p95 queueing (ms)", "p95_qdelay_ms", lambda v: f"{v:.1f}"),
           ("Loss (%)", "loss", lambda v: f"{100 * v:.2f}"),
           ("Jain index", "jain", lambda v: f"{v:.3f}"),
           ("Ankh", "ankh", lambda v: f"{v:.3f}")]


def check_summary(doc, records, folder):
    """Per scenario a summary table: a row per controller, every headline metric under its
    header with units, shown with the column's decimals, exact in data-value."""
    cols = [c for c in SUMMARY if any(c[1] in r for r in records)]
    by_scen = {}
    for r in records:
        by_scen.setdefault(r["scenario"], []).append(r)
    for scen, recs in by_scen.items():
        t = doc.table(f"summary: {scen}")
        assert t["head"] == ["Controller"] + [c[0] for c in cols]
        assert not t["folded"]
        assert len(t["rows"]) == len(recs)
        for row, r in zip(t["rows"], recs):
            assert row[0]["text"] == rel(r["controller"], folder)
            for (head, key, show), cell in zip(cols, row[1:]):
                v = r.get(key)
                if v is None:
                    assert cell["text"] == "–" and "data-value" not in cell["attrs"], (scen, head)
                else:
                    assert cell["text"] == show(v), (scen, r["controller"], head, cell["text"], v)
                    assert float(cell["attrs"]["data-value"]) == v
                    assert "e" not in cell["text"]


def record_captions(records, folder, prefix=""):
    """The full record's tables promised for a list of records, counted from the records themselves."""
    out = []
    for scen in dict.fromkeys(r["scenario"] for r in records):
        recs = [r for r in records if r["scenario"] == scen]
        out.append(f"{prefix}metrics: {scen}")
        if any(r.get("per_seed") for r in recs):
            out.append(f"{prefix}per seed: {scen}")
        out += [rel(f"{prefix}per flow: {scen} / {r['controller']}", folder) for r in recs if r.get("per_flow")]
    return out


def summary_captions(records):
    return [f"summary: {s}" for s in dict.fromkeys(r["scenario"] for r in records)]


def _rel_obj(obj, folder):
    if isinstance(obj, str):
        return rel(obj, folder)
    if isinstance(obj, dict):
        return {k: _rel_obj(v, folder) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rel_obj(v, folder) for v in obj]
    return obj


def check_specs(doc, names, folder):
    """Each scenario's spec, a valid scenario file as given (its paths as the report shows paths)."""
    specs = {json.loads(d)["name"]: json.loads(d) for d in doc.details}
    for n in names:
        assert n in specs, f"no spec of {n}"
        assert specs[n] == _rel_obj(scenarios.load_scenario(specs[n]).to_dict(), folder)
    return specs


# ----------------------------------------------------------------------------- jaxcc.evaluate


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """Two short scenarios (one skipped for the baseline: a start rate), two controllers, the
    robust bars, plots and the report."""
    out = tmp_path_factory.mktemp("ev")
    args = ["--scenario=pareto/shared2,robust/start1pct", f"--controller=bbr,policy:{POLICY}", "--duration=3",
            "--bars=robust", "--plots", "--report", "--noprogress", f"--out={out}"]
    assert evaluate.run_cli(["evaluate", *args]) == 0
    return out, args


def test_evaluate_report_has_every_table_number_and_figure(evaluated, capsys):
    out, args = evaluated
    path = os.path.join(out, "report.html")
    with open(os.path.join(out, "results.json"), encoding="utf-8") as fh:
        res = json.load(fh)
    text, doc = parse(path)
    check_common(text, doc, " ".join(["python -m jaxcc.evaluate"] + args), out)
    assert "policy:checkpoints/pareto/pareto_fair.safetensors" in text or os.getcwd() != REPO
    recs, meta = res["results"], res["meta"]
    assert meta["skipped"] and meta["bars"]["verdicts"]  # the run has both groups to show
    want = (summary_captions(recs) + ["run settings", "skipped runs", f"bar verdicts ({meta['bars']['set']})"]
            + record_captions(recs, out))
    assert sorted(t["caption"] for t in doc.tables) == sorted(want)
    check_record_tables(doc, recs, out)
    check_summary(doc, recs, out)
    sk = doc.table("skipped runs")
    assert [[c["text"] for c in row] for row in sk["rows"]] == [
        [s["scenario"], rel(s["controller"], out), rel(s["reason"], out)] for s in meta["skipped"]]
    bars = doc.table(f"bar verdicts ({meta['bars']['set']})")
    assert not bars["folded"]
    assert [[c["text"] for c in row] for row in bars["rows"]] == [
        [rel(pol, out), v["bar"], v["value"], "yes" if v["met"] else "no"]
        for pol, vs in meta["bars"]["verdicts"].items() for v in vs]
    plots = sorted(os.path.join(out, "plots", f) for f in os.listdir(os.path.join(out, "plots")))
    check_figures(doc, [(None, plots)], out)
    assert all(f["caption"].startswith("plots/") for f in doc.figures)
    check_figure_groups(doc)
    check_specs(doc, ["pareto/shared2", "robust/start1pct"], out)
    specs = {json.loads(d)["name"]: json.loads(d) for d in doc.details}
    assert specs["pareto/shared2"]["duration_s"] == 3.0  # what ran (--duration), not the named default


def test_evaluation_report_of_a_shipped_results_json_with_per_seed_values(tmp_path):
    """checkpoints/pareto/eval_sim.json (the shipped Pareto evaluation, bars judged), with the
    per-seed values a multi-seed run's records carry put in two records: every record group is
    tabled, and every scenario whose records carry per-seed values gets their table."""
    with open(os.path.join(REPO, "checkpoints/pareto/eval_sim.json"), encoding="utf-8") as fh:
        res = json.load(fh)
    for r in res["results"][:2]:
        r["per_seed"] = [{"seed": s, "throughput_mbps": r["throughput_mbps"] * (1 + 0.01 * s),
                          "p95_owd_ms": r["p95_owd_ms"] + s, "loss": None if s else r["loss"]} for s in range(3)]
    src = tmp_path / "results.json"
    src.write_text(json.dumps(res))
    path = report.evaluation(str(src), command=res["meta"]["command"], specs=[])
    text, doc = parse(path)
    check_common(text, doc, res["meta"]["command"], tmp_path)
    recs, meta = res["results"], res["meta"]
    want = summary_captions(recs) + ["run settings", f"bar verdicts ({meta['bars']['set']})"]
    if meta.get("skipped"):
        want.append("skipped runs")
    assert sorted(t["caption"] for t in doc.tables) == sorted(want + record_captions(recs, tmp_path))
    assert sum(t["caption"].startswith("per seed: ") for t in doc.tables) == len({r["scenario"] for r in recs
                                                                                 if r.get("per_seed")})
    check_record_tables(doc, recs, tmp_path)
    check_summary(doc, recs, tmp_path)
    assert not doc.figures


def check_figure_groups(doc):
    """Every figure is under the h3 of the scenario whose file-name fragment ends its stem, or
    under "Other figures"."""
    from jaxcc import plots
    h3 = None
    for kind, x in doc.order:
        if kind == "heading":
            h3 = x["text"] if x["tag"] == "h3" else None
        elif kind == "figure":
            stem = os.path.splitext(os.path.basename(x["caption"].split(": ")[-1]))[0]
            assert h3 == "Other figures" or stem.endswith("_" + plots.slug(h3 or "")), (h3, x["caption"])


# ----------------------------------------------------------------------------- jaxcc.tcr


def test_tcr_report_of_the_shipped_run(tmp_path):
    src = os.path.join(REPO, "checkpoints/deepcc/tcr/results.json")
    args = [f"--records={src}", f"--out={tmp_path}", "--report", "--noprogress"]
    assert tcr.run_cli(["tcr", *args]) == 0
    with open(src, encoding="utf-8") as fh:
        res = json.load(fh)
    text, doc = parse(tmp_path / "report.html")
    policy_dirs = {os.path.dirname(r["policy_file"]) for r in res["tcr"] if os.path.isabs(r.get("policy_file") or "")}
    assert policy_dirs  # the shipped run names its policies by absolute paths: none is shown
    check_common(text, doc, " ".join(["python -m jaxcc.tcr"] + args), tmp_path, hidden=policy_dirs)
    links = [ln["scenario"] for ln in res["links"]]
    verdicts = [(p, v) for p, vs in res["bars"]["verdicts"].items() for v in vs]
    assert sorted(t["caption"] for t in doc.tables) == sorted([
        "run settings", "bar verdicts (deepcc)", "TCR per controller × link (% of targets met)",
        "TCR and measured values per controller and link", "per-link target ranges"])
    pivot = doc.table("TCR per controller × link (% of targets met)")
    assert doc.tables[0] is pivot and not pivot["folded"]
    assert pivot["head"] == ["Controller"] + links
    by = {(r["scenario"], r["controller"]): r for r in res["tcr"]}
    assert len(pivot["rows"]) == len({r["controller"] for r in res["tcr"]})
    for row in pivot["rows"]:
        ctrl = row[0]["text"].removesuffix(" (tuned per target)")
        for ln, cell in zip(links, row[1:]):
            tcr_ = by[(ln, ctrl)]["tcr"]  # in percent, one decimal, as jaxcc.tcr prints it
            assert cell["text"] == f"{100 * tcr_:.1f}" and float(cell["attrs"]["data-value"]) == tcr_
            assert by[(ln, ctrl)]["met_count"] == sum(by[(ln, ctrl)]["met"])  # the shipped file is coherent
    rows = doc.table("TCR and measured values per controller and link")
    assert len(rows["rows"]) == len(res["tcr"])
    for row, r in zip(rows["rows"], res["tcr"]):
        cells = dict(zip(rows["head"], row))
        for k in ("scenario", "controller", "tcr", "met_count", "targets", "tuned", "policy_file"):
            assert same(cells[k], r[k], tmp_path)
        if r.get("policy_file") and not r["policy_file"].startswith((REPO + os.sep, os.getcwd() + os.sep)):
            assert cells["policy_file"]["text"] == os.path.basename(r["policy_file"])
        if isinstance(r["measured"], dict):
            for k, v in r["measured"].items():
                assert same(cells[f"measured.{k}"], v, tmp_path)
    lt = doc.table("per-link target ranges")
    for row, ln in zip(lt["rows"], res["links"]):
        cells = dict(zip(lt["head"], row))
        assert same(cells["targets drawn"], len(ln["targets"]))
        assert same(cells["T1 Mbit/s max"], max(t[0] for t in ln["targets"]))
        assert float(cells["T1 Mbit/s max"]["attrs"]["data-value"]) <= ln["max_throughput_mbps"]
        for k in ("mean_capacity_mbps", "max_delay_ms", "max_loss", "buffer_bytes"):
            assert same(cells[k], ln[k])
    assert len(doc.table("bar verdicts (deepcc)")["rows"]) == len(verdicts)
    check_figures(doc, [(None, [os.path.join(tmp_path, "plots", f) for f in os.listdir(tmp_path / "plots")])],
                  tmp_path)
    check_figure_groups(doc)
    specs = check_specs(doc, links, tmp_path)
    trace = specs["deepcc/cellular"]["link"]["trace"]  # shipped: named as a scenario file names it
    assert trace == "ATT-LTE-driving.down", trace


# ----------------------------------------------------------------------------- sim2real, emulate


def split_comparison(tmp_path):
    """checkpoints/pareto/sim2real_links.json back into the two results.json it compared (the
    metrics it holds; the emulated runs were self-checked: valid), plus one emulated run that did
    not keep time; a figure per side (PNG on one, SVG + PNG + PDF on the other)."""
    with open(os.path.join(REPO, "checkpoints/pareto/sim2real_links.json"), encoding="utf-8") as fh:
        shipped = json.load(fh)
    sim, emu = {}, {}
    for r in shipped["rows"]:
        key = (r["scenario"], r["controller"])
        sim.setdefault(key, {"scenario": key[0], "controller": key[1]})[r["metric"]] = r["sim"]
        emu.setdefault(key, {"scenario": key[0], "controller": key[1], "emulator": "netns-tbf-nfqueue",
                             "delay_check": {"valid": r["emu_checked"], "reasons": []}})[r["metric"]] = r["emulation"]
    bad = ("pareto/fixed50", "bbr")
    sim[bad] = {"scenario": bad[0], "controller": bad[1], "throughput_mbps": 40.5, "p95_owd_ms": 115.4,
                "p95_qdelay_ms": 70.4, "loss": 0.092}
    emu[bad] = {"scenario": bad[0], "controller": bad[1], "throughput_mbps": 8.6, "p95_owd_ms": 90.0,
                "p95_qdelay_ms": 45.0, "loss": 0.0,
                "delay_check": {"valid": False, "reasons": ["p95 hold error 6.30 ms > 2 ms"], "hold_p95_ms": 6.3}}
    paths = []
    for side, recs in (("sim", sim), ("emulation", emu)):
        d = tmp_path / side
        (d / "plots").mkdir(parents=True)
        with open(d / "results.json", "w", encoding="utf-8") as fh:
            json.dump({"results": list(recs.values()), "meta": {"side": side}}, fh)
        paths.append(str(d / "results.json"))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(2, 1.5))
    ax.plot([0, 1], [0, 1])
    fig.savefig(tmp_path / "sim" / "plots" / "scatter_pareto_fixed50.png", dpi=50)
    for ext in ("png", "svg", "pdf"):
        fig.savefig(tmp_path / "emulation" / f"throughput_pareto_fixed50.{ext}", dpi=50)
    plt.close(fig)
    return shipped, paths


# a metric of the comparison: its header and the text a value shows (as in the summary)
METRICS = {key: (head, show) for head, key, show in SUMMARY}


def test_sim2real_compare_report_reproduces_the_shipped_comparison(tmp_path, capsys):
    shipped, (sim_json, emu_json) = split_comparison(tmp_path)
    out = tmp_path / "report"
    args = ["--compare", sim_json, emu_json, f"--out={out}", "--report"]
    assert sim2real.run_cli(["sim2real", *args]) == 0
    text, doc = parse(out / "report.html")
    check_common(text, doc, "python -m jaxcc.sim2real " + " ".join(args), out, hidden=[tmp_path])
    with open(sim_json, encoding="utf-8") as fh:
        sim_recs = json.load(fh)["results"]
    with open(emu_json, encoding="utf-8") as fh:
        emu_recs = json.load(fh)["results"]
    by_scen = {}
    for r in shipped["rows"]:
        by_scen.setdefault(r["scenario"], []).append(r)
    assert sorted(t["caption"] for t in doc.tables) == sorted(
        [f"sim vs emulation: {s}" for s in by_scen]
        + ["invalid emulated runs (not compared: re-run)", "bounds", "simulator run settings",
           "emulation run settings", "emulation delay_check per run"]
        + record_captions(sim_recs, out, "sim ") + record_captions(emu_recs, out, "emulation "))
    assert doc.tables[0]["caption"] == f"sim vs emulation: {next(iter(by_scen))}"
    n = 0
    for scen, rows in by_scen.items():
        cmp = doc.table(f"sim vs emulation: {scen}")
        assert not cmp["folded"]
        assert cmp["head"] == ["Controller", "Metric", "Simulator", "Emulation", "Difference", "Bound", "Verdict",
                               "Emulation checked"]
        assert len(cmp["rows"]) == len(rows)
        for row, want in zip(cmp["rows"], rows):
            cells = dict(zip(cmp["head"], row))
            head, show = METRICS[want["metric"]]
            assert cells["Controller"]["text"] == rel(want["controller"], out)
            assert cells["Metric"]["text"] == head
            for col, k in (("Simulator", "sim"), ("Emulation", "emulation")):
                assert cells[col]["text"] == show(want[k]) and float(cells[col]["attrs"]["data-value"]) == want[k]
            unit = " %" if want["kind"] == "rel" else " pp"
            assert cells["Difference"]["text"] == (f"{100 * want['difference']:+.1f}" if want["kind"] == "rel" else
                                                   f"{100 * want['difference']:+.2f}") + unit
            assert float(cells["Difference"]["attrs"]["data-value"]) == want["difference"]
            assert cells["Bound"]["text"] == f"{100 * want['bound']:g}{unit}"
            assert cells["Verdict"]["text"] == ("over bound" if want["over"] else "within")
            assert ("bad" in cells["Verdict"]["attrs"]["class"]) == want["over"]
            n += 1
    assert n == len(shipped["rows"])  # the invalid run is not compared
    assert sum(1 for r in shipped["rows"] if r["over"]) == 1  # pareto/link12's queueing delay
    inv = doc.table("invalid emulated runs (not compared: re-run)")
    assert not inv["folded"]
    assert [[c["text"] for c in row] for row in inv["rows"]] == [
        ["pareto/fixed50", "bbr", "invalid, re-run", "p95 hold error 6.30 ms > 2 ms"]]
    bounds = {row[0]["text"]: row for row in doc.table("bounds")["rows"]}
    assert set(bounds) == {METRICS[m][0] for m in shipped["bounds"]}
    for m, (kind, b) in shipped["bounds"].items():
        row = bounds[METRICS[m][0]]
        assert row[1]["text"] == kind and float(row[2]["attrs"]["data-value"]) == b
        assert row[2]["text"] == f"{100 * b:g} {'%' if kind == 'rel' else 'pp'}"
    check_record_tables(doc, sim_recs, out, "sim ")
    check_record_tables(doc, emu_recs, out, "emulation ")
    validity = doc.table("emulation delay_check per run")
    assert [c["text"] for row in validity["rows"] for c in row[2:3]] == [
        {True: "yes", False: "no", None: "–"}[r["delay_check"]["valid"]] for r in emu_recs]
    overlay = sorted(str(p) for p in (out / "plots").iterdir())
    assert [os.path.basename(p) for p in overlay] == [
        f"sim2real_pareto_{link}.{e}" for link in ("fixed50", "link12") for e in ("pdf", "png", "svg")]
    check_figures(doc, [("simulator and emulation", overlay),
                        ("simulator", [str(tmp_path / "sim" / "plots" / "scatter_pareto_fixed50.png")]),
                        ("emulation", [str(tmp_path / "emulation" / f"throughput_pareto_fixed50.{e}")
                                       for e in ("png", "svg", "pdf")])], out)
    # per scenario: the overlay first, then the simulator's figure, then the emulation's
    assert [x for k, x in doc.main_order() if k in ("figure", "heading") and not x.startswith("h2 ")][:6] == [
        "h3 pareto/fixed50", "simulator and emulation: plots/sim2real_pareto_fixed50.svg",
        "simulator: scatter_pareto_fixed50.png", "emulation: throughput_pareto_fixed50.svg",
        "h3 pareto/link12", "simulator and emulation: plots/sim2real_pareto_link12.svg"]
    check_figure_groups(doc)
    check_specs(doc, ["pareto/fixed50", "pareto/link12"], out)


def test_sim2real_full_run_report(tmp_path, monkeypatch, capsys):
    """The full run (evaluate and emulate as subprocesses, stood in for by the split shipped
    results) writes the same report from DIR/sim and DIR/emulation, with the specs that ran."""
    _, (sim_json, emu_json) = split_comparison(tmp_path / "src")
    calls, real_run = [], subprocess.run

    def fake_run(cmd, **kw):
        if "jaxcc.evaluate" not in cmd and "jaxcc.emulate" not in cmd:
            return real_run(cmd, **kw)  # git, for the report's version
        calls.append(cmd)
        out = next(a.split("=", 1)[1] for a in cmd if a.startswith("--out="))
        src = os.path.dirname(sim_json if "jaxcc.evaluate" in cmd else emu_json)
        shutil.copytree(src, out)

    monkeypatch.setattr(sim2real.subprocess, "run", fake_run)
    out = tmp_path / "s2r"
    assert sim2real.run_cli(["sim2real", "--controller=bbr", "--scenario=pareto/fixed50", f"--out={out}", "--report"]) == 0
    assert len(calls) == 2
    text, doc = parse(out / "report.html")
    assert str(tmp_path) not in text
    assert sum(len(t["rows"]) for t in doc.tables if t["caption"].startswith("sim vs emulation: ")) == 8
    assert {f["caption"] for f in doc.figures} == {
        "simulator: sim/plots/scatter_pareto_fixed50.png", "emulation: emulation/throughput_pareto_fixed50.svg",
        "simulator and emulation: plots/sim2real_pareto_fixed50.svg",
        "simulator and emulation: plots/sim2real_pareto_link12.svg"}
    specs = check_specs(doc, ["pareto/fixed50"], out)
    assert list(specs) == ["pareto/fixed50"]  # what ran, from --scenario


def test_sim2real_compare_report_needs_out(tmp_path, capsys):
    _, (sim_json, emu_json) = split_comparison(tmp_path)
    assert sim2real.run_cli(["sim2real", "--compare", sim_json, emu_json, "--report"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: --report with --compare needs --out=DIR (the folder for report.html)"
    assert not os.path.exists("report.html")


def test_emulate_report_wiring(tmp_path, monkeypatch, capsys):
    """``jaxcc.emulate --report`` (the run itself stood in for: records built by
    ``results.make_record`` from finished flows, the shipped emulation metrics) embeds the plots
    ``make_plots`` returned and tables every record, its flows and its timing check."""
    from jaxcc import emulate
    from jaxcc.emulation import results, runner

    def fake_experiments(specs, ctrls, out, **kw):
        recs = []
        for sc in specs:
            for i, ctrl in enumerate(ctrls):
                fls = []
                for j, fl in enumerate(sc.flows):
                    f = runner.FlowRun(j, ctrl, fl.rtt_ms, fl.start_s, fl.stop_s, tmp_path, kind="jaxcc")
                    mbps = 4.0 + i + j
                    f.result = {"throughput_mbps": mbps, "p95_owd_ms": 30.0 + j, "p95_qdelay_ms": 10.0 + j,
                                "loss": 0.001 * (i + 1), "sent": 1000, "acked": 999,
                                "series": [(t / 2, mbps) for t in range(1, 2 * int(sc.duration_s) + 1)]}
                    fls.append(f)
                rec = results.make_record(sc.name, sc.duration_s, [ctrl] * len(fls), fls, [(0.0, 12.0)], 40.1, [],
                                          delay_check={"valid": i == 0, "reasons": [] if i == 0 else ["tbf off"],
                                                       "hold_p95_ms": 0.4 + i})
                rec["duration_s"] = sc.duration_s
                rec["capacity_schedule"] = [[0.0, 12.0]]
                recs.append(rec)
        results.fill_ankh(recs)
        results.write_results(out, recs)
        return recs

    monkeypatch.setattr(runner, "run_experiments", fake_experiments)
    monkeypatch.setattr(emulate, "check_requirements", lambda: None)
    made = []
    real_plots = results.make_plots
    monkeypatch.setattr(results, "make_plots", lambda recs, out: made.extend(real_plots(recs, out)) or list(made))
    args = ["--scenario=emu/fixed12", "--controller=bbr,fixed:5", f"--out={tmp_path}", "--report"]
    assert emulate.run_cli(["emulate", *args]) == 0
    assert f"wrote {tmp_path / 'report.html'}" in capsys.readouterr().out
    with open(tmp_path / "results.json", encoding="utf-8") as fh:
        res = json.load(fh)
    text, doc = parse(tmp_path / "report.html")
    check_common(text, doc, "python -m jaxcc.emulate " + " ".join(args), tmp_path)
    recs = res["results"]
    assert sorted(t["caption"] for t in doc.tables) == sorted(
        summary_captions(recs) + ["run settings", "delay_check per run"] + record_captions(recs, tmp_path))
    check_summary(doc, recs, tmp_path)
    check_record_tables(doc, recs, tmp_path)
    v = doc.table("delay_check per run")
    assert not v["folded"]
    assert [[c["text"] for c in row[:3]] for row in v["rows"]] == [["emu/fixed12", "bbr", "yes"],
                                                                   ["emu/fixed12", "fixed:5", "no"]]
    assert "bad" in v["rows"][1][2]["attrs"]["class"]
    assert made
    check_figures(doc, [(None, made)], tmp_path)
    check_figure_groups(doc)
    check_specs(doc, ["emu/fixed12"], tmp_path)


# ----------------------------------------------------------------------------- the pieces


def test_figures_prefer_svg_and_ids_do_not_collide(tmp_path):
    svg = ('<?xml version="1.0"?>\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" '
           '"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n<svg xmlns="http://www.w3.org/2000/svg" '
           'xmlns:xlink="http://www.w3.org/1999/xlink"><metadata><rdf:RDF xmlns:rdf="http://x"/></metadata>'
           '<!-- policy:/secret/dir/p.safetensors --><g id="emu:policy:/secret/dir/p.safetensors"/>'
           '<defs><path id="m1" d="M0 0"/><clipPath id="p1"><rect/></clipPath></defs>'
           '<use xlink:href="#m1" clip-path="url(#p1)"/></svg>')
    for stem in ("a", "b"):
        (tmp_path / f"{stem}.svg").write_text(svg)
        (tmp_path / f"{stem}.png").write_bytes(b"\x89PNG-not-used")
        (tmp_path / f"{stem}.pdf").write_bytes(b"%PDF")
    (tmp_path / "c.png").write_bytes(b"\x89PNG-c")
    files = [str(tmp_path / f) for f in ("a.png", "a.pdf", "a.svg", "b.svg", "b.png", "c.png", "results.json")]
    assert report.figure_files(files) == [str(tmp_path / "a.svg"), str(tmp_path / "b.svg"), str(tmp_path / "c.png")]
    rep = report.Report("t", "cmd", version={"package": "0", "commit": None, "dirty": None})
    assert rep.figures(files) == 3
    text = rep.html()
    assert "http" not in text and "<?xml" not in text and "DOCTYPE svg" not in text
    assert text.count('id="fig-a-m1"') == 1 and 'href="#fig-a-m1"' in text and "url(#fig-b-p1)" in text
    # comments dropped, paths in ids shown as everywhere else
    assert "/secret" not in text and 'id="fig-a-emu:policy:p.safetensors"' in text
    assert [f["caption"] for f in Parsed(text).figures] == ["a.svg", "b.svg", "c.png"]  # not in the cwd: names
    assert base64.b64encode(b"\x89PNG-c").decode() in text
    with pytest.raises(ValueError, match="gone.png: cannot embed"):
        rep.figures([str(tmp_path / "gone.png")])


def test_cells_and_version():
    values = (None, float("nan"), True, 3, 0.0, 44.8939678, 0.000123, 123456.7, [], [1, 2.5])
    assert [report.fmt(v) for v in values] == [
        "–", "–", "yes", "3", "0", "44.89", "1.230e-04", "123457", "(none)", "1, 2.5"]
    assert report.fmt([[0, 1]] * 20) == "(20 items)"
    # the summary's cells: fixed decimals, never scientific, no "-0"
    assert [report.fixed(v, 2, 100.0) for v in (0.008937, 9.815e-04, 0.0, 1e-7, -1e-9, None, float("nan"), True,
                                                "x", float("inf"))] == [
        "0.89", "0.10", "0.00", "0.00", "0.00", "–", "–", "–", "–", "∞"]
    assert report.fixed(12345.678, 2) == "12345.68" and report.fixed(67.83844, 1) == "67.8"
    v = report.version_info("/")  # not a checkout: no commit, no failure
    assert v["commit"] is None and v["dirty"] is None
    assert "not run from a git checkout" in report.version_text(v)
    assert report.flatten({"a": 1, "d": {"valid": False, "x": {"y": 2}}, "per_flow": [{"f": 1}], "s": [[0, 1]]}) == {
        "a": 1, "d.valid": False, "d.x.y": 2, "s": [[0, 1]]}


def test_paths_are_shown_relative_to_the_report_else_the_cwd_else_by_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "out"
    f = str(folder)
    assert report.relative_path(str(folder / "a" / "b.json"), f) == "a/b.json"  # in the report's folder
    assert report.relative_path(f, f) == "."
    assert report.relative_path(str(tmp_path / "c" / "d.pt"), f) == "c/d.pt"  # in the current directory
    assert report.relative_path(f + "2/x", f) == "out2/x"  # a sibling named alike is not inside the folder
    assert report.relative_path("/elsewhere/e/f.safetensors", f) == "f.safetensors"  # else its name
    assert report.relative_path("/elsewhere/e/f.safetensors") == "f.safetensors"
    # a shipped trace: the name a scenario file gives it, wherever the report is
    assert report.relative_path(os.path.join(sim_trace.SHIPPED_TRACES, "ATT-LTE-driving.down"), f) == \
        "ATT-LTE-driving.down"
    assert report.relative_path("rel/path", f) == "rel/path"
    text = (f"policy:{folder}/p.safetensors,bbr --out={folder} 'x={tmp_path}/c/d' (/opt/q/r.json) [/a/b] "
            "pareto/fixed50 Mbit/s R/C 1/2 a / b https://example.org/x /")
    assert report.relative_text(text, f) == ("policy:p.safetensors,bbr --out=. 'x=c/d' (r.json) [b] "
                                             "pareto/fixed50 Mbit/s R/C 1/2 a / b https://example.org/x /")


def _svg(comment):
    return ('<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="20" height="20">'
            f'<!-- {comment} --><g id="line:{comment}"><rect width="10" height="10"/></g></svg>')


def test_report_opens_with_readable_summaries_and_folds_the_full_record(tmp_path, monkeypatch):
    """Hand-made records (policies inside the report's folder, inside the current directory and
    elsewhere): the summary tables come first, with units and fixed decimals (loss in %), then
    the bars, then the figures per scenario, then the full record, folded; no absolute path of
    the run's folders is in the file."""
    out = tmp_path / "run"
    (out / "plots").mkdir(parents=True)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    ctrl_in = f"policy:{out / 'policies' / 'x.safetensors'}"        # in the report's folder
    ctrl_cwd = f"policy:{work / 'ckpt' / 'z.safetensors'}"          # in the current directory
    ctrl_other = f"policy:{tmp_path / 'elsewhere' / 'y.safetensors'}"  # in neither

    def rec(scen, ctrl, thr, loss, **kw):
        return {"scenario": scen, "controller": ctrl, "throughput_mbps": thr, "utilization": thr / 50,
                "p95_owd_ms": 67.83844, "p95_qdelay_ms": 22.83844, "loss": loss, "jain": 1.0, "ankh": 0.2178699,
                "per_flow": [{"flow": 0, "controller": ctrl, "throughput_mbps": thr, "loss": loss}], **kw}

    recs = [rec("pareto/fixed50", "bbr", 47.598193, 0.008937),
            rec("pareto/fixed50", ctrl_in, 44.893994, 9.815e-04,
                per_seed=[{"seed": 0, "loss": 9.815e-04}, {"seed": 1, "loss": None}]),
            rec("pareto/shared2", ctrl_other, 24.5, 0.0),
            rec("pareto/shared2", ctrl_cwd, 25.0, None)]
    command = f"python -m jaxcc.evaluate --controller=bbr,{ctrl_in},{ctrl_other},{ctrl_cwd} --out={out}"
    meta = {"command": command, "source": f"scenario file {tmp_path / 'scen.json'}",
            "skipped": [{"scenario": "pareto/shared2", "controller": "bbr", "reason": "a start rate"}],
            "bars": {"set": "robust", "verdicts": {ctrl_in: [{"bar": "loss <= 1 %", "value": "0.10 %", "met": True}]}}}
    (out / "results.json").write_text(json.dumps({"results": recs, "meta": meta}))
    (out / "plots" / "scatter_pareto_fixed50.svg").write_text(_svg(ctrl_in))
    (out / "plots" / "scatter_pareto_fixed50.pdf").write_bytes(b"%PDF")
    for name in ("timeseries_pareto_fixed50", "scatter_pareto_shared2", "other"):
        (out / "plots" / f"{name}.png").write_bytes(b"\x89PNG " + name.encode())
    files = sorted(str(p) for p in (out / "plots").iterdir())
    spec = {"name": "pareto/fixed50", "flows": [{"controller": ctrl_in}], "note": f"from {tmp_path / 'scen.json'}"}
    path = report.evaluation(str(out / "results.json"), command=command, figures=files, specs=[spec])
    assert path == str(out / "report.html")
    text, doc = parse(path)
    check_common(text, doc, command, out, hidden=[tmp_path, work])
    assert doc.text["command"] == ("python -m jaxcc.evaluate --controller=bbr,policy:policies/x.safetensors,"
                                   "policy:y.safetensors,policy:ckpt/z.safetensors --out=.")
    # the order: summaries, bars, figures per scenario, the full record
    order = doc.main_order()
    cut = order.index(("heading", "h2 Full record"))
    assert order[:cut] == [
        ("heading", "h2 Summary"), ("table", "summary: pareto/fixed50"), ("table", "summary: pareto/shared2"),
        ("heading", "h2 Bars (robust): 1 of 1 met"), ("table", "bar verdicts (robust)"),
        ("heading", "h2 Figures"),
        ("heading", "h3 pareto/fixed50"), ("figure", "plots/scatter_pareto_fixed50.svg"),
        ("figure", "plots/timeseries_pareto_fixed50.png"),
        ("heading", "h3 pareto/shared2"), ("figure", "plots/scatter_pareto_shared2.png"),
        ("heading", "h3 Other figures"), ("figure", "plots/other.png")]
    assert [t["caption"] for t in doc.tables if t["folded"]] == [
        "metrics: pareto/fixed50", "per seed: pareto/fixed50", "per flow: pareto/fixed50 / bbr",
        "per flow: pareto/fixed50 / policy:policies/x.safetensors", "metrics: pareto/shared2",
        "per flow: pareto/shared2 / policy:y.safetensors", "per flow: pareto/shared2 / policy:ckpt/z.safetensors",
        "run settings", "skipped runs"]
    assert text.count('<details class="record">') == 9 and "<details open" not in text
    # the summary: human headers with units, fixed decimals, loss in percent; exact values kept
    first = doc.tables[0]
    assert first["caption"] == "summary: pareto/fixed50" and not first["folded"]
    assert first["head"] == ["Controller", "Throughput (Mbit/s)", "Utilization (fraction of capacity)",
                             "p95 one-way delay (ms)", "p95 queueing (ms)", "Loss (%)", "Jain index", "Ankh"]
    rows = [[c["text"] for c in row] for t in doc.tables[:2] for row in t["rows"]]
    assert rows == [["bbr", "47.60", "0.952", "67.8", "22.8", "0.89", "1.000", "0.218"],
                    ["policy:policies/x.safetensors", "44.89", "0.898", "67.8", "22.8", "0.10", "1.000", "0.218"],
                    ["policy:y.safetensors", "24.50", "0.490", "67.8", "22.8", "0.00", "1.000", "0.218"],
                    ["policy:ckpt/z.safetensors", "25.00", "0.500", "67.8", "22.8", "–", "1.000", "0.218"]]
    loss = first["rows"][0][5]
    assert loss["text"] == "0.89" and loss["attrs"]["data-value"] == "0.008937"  # 0.8937 % to two decimals
    assert float(first["rows"][1][5]["attrs"]["data-value"]) == 9.815e-04
    assert "data-value" not in doc.tables[1]["rows"][1][5]["attrs"]
    check_summary(doc, recs, out)
    check_record_tables(doc, recs, out)
    assert "1 scenario × controller pair was not run: bbr on pareto/shared2" in text
    bars = doc.table("bar verdicts (robust)")
    assert [c["text"] for c in bars["rows"][0]] == ["policy:policies/x.safetensors", "loss <= 1 %", "0.10 %", "yes"]
    # every other place a path shows: title, the run's source, the settings, the specs, the SVG
    assert "<h1>jaxcc.evaluate: scenario file scen.json</h1>" in text
    assert "From results.json." in text
    settings = {row[0]["text"]: row[1]["text"] for row in doc.table("run settings")["rows"]}
    assert settings["command"] == doc.text["command"]
    assert [json.loads(d) for d in doc.details] == [{"name": "pareto/fixed50", "note": "from scen.json",
                                                     "flows": [{"controller": "policy:policies/x.safetensors"}]}]
    assert "<!--" not in text and 'id="fig-scatter_pareto_fixed50-line:policy:policies/x.safetensors"' in text
    check_figures(doc, [(None, files)], out)
    check_figure_groups(doc)
