"""``--report``'s report.html (jaxcc.report), read back with html.parser: a table per record
group promised (counted from the results.json fed in), the tables' numbers equal results.json's,
every figure file embedded (SVG inline, PNG as a data: URI of the same bytes), nothing external,
the command and the version present.

Real outputs: a tiny ``jaxcc.evaluate`` run; the shipped TCR run (checkpoints/deepcc/tcr) through
``jaxcc.tcr --records``; the shipped sim-vs-emulation comparison (checkpoints/pareto/
sim2real_links.json) split back into its two results.json files, so no network namespace is
needed.  A browser rendering is tests/test_report_browser.py's.
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

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POLICY = os.path.join(REPO, "checkpoints/pareto/pareto_fair.safetensors")


class Parsed(HTMLParser):
    """The report's tables (id, class, caption, header, rows of (text, attrs)), figures, every
    src/href, the provenance fields and the specs' <details> JSON."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tables, self.figures, self.urls, self.tags, self.text = [], [], [], [], {}
        self.details = []
        self._t = self._cell = self._fig = self._cap = self._field = self._pre = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        for k in ("src", "href", "xlink:href", "data"):
            if k in a:
                self.urls.append((tag, k, a[k]))
        if tag == "table":
            self._t = {"id": a.get("id"), "class": a.get("class"), "caption": "", "head": [], "rows": []}
            self.tables.append(self._t)
        elif tag == "caption" and self._t is not None:
            self._cap = []
        elif tag == "tr" and self._t is not None:
            self._t["rows"].append([])
        elif tag in ("td", "th") and self._t is not None:
            self._cell = {"text": "", "attrs": a, "tag": tag}
        elif tag == "figure":
            self._fig = {"class": a.get("class"), "svg": False, "img": None, "caption": ""}
            self.figures.append(self._fig)
        elif tag == "svg" and self._fig is not None:
            self._fig["svg"] = True
        elif tag == "img" and self._fig is not None:
            self._fig["img"] = a.get("src")
        elif tag == "figcaption":
            self._cap = []
        elif a.get("id") in ("command", "version", "date"):
            self._field = a["id"]
            self.text[self._field] = ""
        elif tag == "pre":
            self._pre = ""

    def handle_endtag(self, tag):
        if tag == "table":
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

    def table(self, caption):
        found = [t for t in self.tables if t["caption"] == caption]
        assert len(found) == 1, f"{len(found)} tables captioned {caption!r}; have {[t['caption'] for t in self.tables]}"
        return found[0]


def parse(path):
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    return text, Parsed(text)


def same(cell, want):
    """A cell shows ``want``: "–" for null, yes/no for a bool, a number to its four significant
    digits (and exactly in data-value), a string as is."""
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
        return text == want
    return True  # lists and objects: their own tables or a compact form


def dotted(rec, key):
    for part in key.split("."):
        rec = rec[part]
    return rec


def check_common(text, doc, command):
    """Nothing external; every table and figure has the classes the browser test counts; the
    command and version are there."""
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
    assert doc.text["command"] == command
    from importlib import metadata
    assert f"jaxcc {metadata.version('jaxcc')}" in doc.text["version"]
    head = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode == 0:
        assert head.stdout.strip() in doc.text["version"]


def check_figures(doc, files):
    """Every figure given (per stem: .svg inline if written, else the .png's exact bytes) is in
    the report, captioned with its file name."""
    stems = {}
    for f in files:
        stem, ext = os.path.splitext(f)
        if ext in (".svg", ".png"):
            stems.setdefault(stem, set()).add(ext)
    assert stems, "no figure files to check"
    by_caption = {f["caption"]: f for f in doc.figures}
    for stem, exts in stems.items():
        name = os.path.basename(stem) + (".svg" if ".svg" in exts else ".png")
        assert name in by_caption, f"{name} not embedded; have {sorted(by_caption)}"
        fig = by_caption[name]
        if ".svg" in exts:
            assert fig["svg"]
        else:
            with open(stem + ".png", "rb") as fh:
                assert base64.b64decode(fig["img"].split(",", 1)[1]) == fh.read()
    assert len(doc.figures) == len(stems)


def check_record_tables(doc, records, prefix=""):
    """Per scenario a metrics table (a column per controller, a row per scalar field) whose every
    cell equals the record's field; per record a per-flow table equal to its per_flow."""
    by_scen = {}
    for r in records:
        by_scen.setdefault(r["scenario"], []).append(r)
    for scen, recs in by_scen.items():
        t = doc.table(f"{prefix}metrics: {scen}")
        assert t["head"] == ["field"] + [r["controller"] for r in recs]
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
                assert same(cell, want), (scen, r["controller"], row[0]["text"], cell["text"], want)
        for r in recs:
            flows = r.get("per_flow") or []
            if not flows:
                continue
            ft = doc.table(f"{prefix}per flow: {scen} / {r['controller']}")
            assert len(ft["rows"]) == len(flows)
            for row, fl in zip(ft["rows"], flows):
                for col, cell in zip(ft["head"], row):
                    if col in fl or "." not in col:
                        assert same(cell, fl.get(col)), (scen, r["controller"], col, cell["text"], fl.get(col))
        seeds = [(r["controller"], s) for r in recs for s in (r.get("per_seed") or [])]
        if seeds:
            st = doc.table(f"{prefix}per seed: {scen}")
            assert len(st["rows"]) == len(seeds)
            for row, (ctrl, s) in zip(st["rows"], seeds):
                cells = dict(zip(st["head"], row))
                assert cells["controller"]["text"] == ctrl
                for k, v in s.items():
                    assert same(cells[k], v), (scen, ctrl, k)


def check_summary(doc, records):
    t = doc.table("summary: every scenario × controller")
    assert t["head"][:2] == ["scenario", "controller"] and "throughput_mbps" in t["head"]
    assert len(t["rows"]) == len(records)
    for row, r in zip(t["rows"], records):
        for col, cell in zip(t["head"], row):
            assert same(cell, r[col]), (col, cell["text"], r[col])


def record_captions(records, prefix=""):
    """The tables promised for a list of records, counted from the records themselves."""
    out = []
    for scen in dict.fromkeys(r["scenario"] for r in records):
        recs = [r for r in records if r["scenario"] == scen]
        out.append(f"{prefix}metrics: {scen}")
        if any(r.get("per_seed") for r in recs):
            out.append(f"{prefix}per seed: {scen}")
        out += [f"{prefix}per flow: {scen} / {r['controller']}" for r in recs if r.get("per_flow")]
    return out


def check_specs(doc, names):
    specs = {json.loads(d)["name"]: json.loads(d) for d in doc.details}
    for n in names:
        assert n in specs, f"no spec of {n}"
        assert specs[n] == scenarios.load_scenario(specs[n]).to_dict()  # a valid scenario file, as given
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
    check_common(text, doc, " ".join(["python -m jaxcc.evaluate"] + args))
    recs, meta = res["results"], res["meta"]
    assert meta["skipped"] and meta["bars"]["verdicts"]  # the run has both groups to show
    want = (["summary: every scenario × controller", "run settings", "skipped runs",
             f"bar verdicts ({meta['bars']['set']})"] + record_captions(recs))
    assert sorted(t["caption"] for t in doc.tables) == sorted(want)
    check_record_tables(doc, recs)
    check_summary(doc, recs)
    sk = doc.table("skipped runs")
    assert [[c["text"] for c in row] for row in sk["rows"]] == [[s["scenario"], s["controller"], s["reason"]]
                                                                for s in meta["skipped"]]
    bars = doc.table(f"bar verdicts ({meta['bars']['set']})")
    assert [[c["text"] for c in row] for row in bars["rows"]] == [
        [pol, v["bar"], v["value"], "yes" if v["met"] else "no"] for pol, vs in meta["bars"]["verdicts"].items()
        for v in vs]
    plots = sorted(os.path.join(out, "plots", f) for f in os.listdir(os.path.join(out, "plots")))
    check_figures(doc, plots)
    check_specs(doc, ["pareto/shared2", "robust/start1pct"])
    specs = {json.loads(d)["name"]: json.loads(d) for d in doc.details}
    assert specs["pareto/shared2"]["duration_s"] == 3.0  # what ran (--duration), not the named default


def test_evaluation_report_of_a_shipped_results_json_with_per_seed_values(tmp_path):
    """checkpoints/pareto/eval_sim.json (the shipped Pareto evaluation, bars judged), with the
    per-seed values a multi-seed run's records carry added to two records: every record group
    is tabled, per-seed values too."""
    with open(os.path.join(REPO, "checkpoints/pareto/eval_sim.json"), encoding="utf-8") as fh:
        res = json.load(fh)
    for r in res["results"][:2]:
        r["per_seed"] = [{"seed": s, "throughput_mbps": r["throughput_mbps"] * (1 + 0.01 * s),
                          "p95_owd_ms": r["p95_owd_ms"] + s, "loss": None if s else r["loss"]} for s in range(3)]
    src = tmp_path / "results.json"
    src.write_text(json.dumps(res))
    path = report.evaluation(str(src), command=res["meta"]["command"], specs=[])
    text, doc = parse(path)
    check_common(text, doc, res["meta"]["command"])
    recs, meta = res["results"], res["meta"]
    want = ["summary: every scenario × controller", "run settings", f"bar verdicts ({meta['bars']['set']})"]
    if meta.get("skipped"):
        want.append("skipped runs")
    assert sorted(t["caption"] for t in doc.tables) == sorted(want + record_captions(recs))
    assert sum(t["caption"].startswith("per seed: ") for t in doc.tables) == len({r["scenario"] for r in recs[:2]})
    check_record_tables(doc, recs)
    check_summary(doc, recs)
    assert not doc.figures


# ----------------------------------------------------------------------------- jaxcc.tcr


def test_tcr_report_of_the_shipped_run(tmp_path):
    src = os.path.join(REPO, "checkpoints/deepcc/tcr/results.json")
    args = [f"--records={src}", f"--out={tmp_path}", "--report", "--noprogress"]
    assert tcr.run_cli(["tcr", *args]) == 0
    with open(src, encoding="utf-8") as fh:
        res = json.load(fh)
    text, doc = parse(tmp_path / "report.html")
    check_common(text, doc, " ".join(["python -m jaxcc.tcr"] + args))
    links = [ln["scenario"] for ln in res["links"]]
    verdicts = [(p, v) for p, vs in res["bars"]["verdicts"].items() for v in vs]
    assert sorted(t["caption"] for t in doc.tables) == sorted([
        "run settings", "bar verdicts (deepcc)", "TCR per controller × link (fraction of targets met)",
        "TCR and measured values per controller and link", "per-link target ranges"])
    pivot = doc.table("TCR per controller × link (fraction of targets met)")
    assert pivot["head"] == ["controller"] + links
    by = {(r["scenario"], r["controller"]): r for r in res["tcr"]}
    assert len(pivot["rows"]) == len({r["controller"] for r in res["tcr"]})
    for row in pivot["rows"]:
        ctrl = row[0]["text"].removesuffix(" (tuned per target)")
        for ln, cell in zip(links, row[1:]):
            assert same(cell, by[(ln, ctrl)]["tcr"])
            assert by[(ln, ctrl)]["met_count"] == sum(by[(ln, ctrl)]["met"])  # the shipped file is coherent
    rows = doc.table("TCR and measured values per controller and link")
    assert len(rows["rows"]) == len(res["tcr"])
    for row, r in zip(rows["rows"], res["tcr"]):
        cells = dict(zip(rows["head"], row))
        for k in ("scenario", "controller", "tcr", "met_count", "targets", "tuned"):
            assert same(cells[k], r[k])
        if isinstance(r["measured"], dict):
            for k, v in r["measured"].items():
                assert same(cells[f"measured.{k}"], v)
    lt = doc.table("per-link target ranges")
    for row, ln in zip(lt["rows"], res["links"]):
        cells = dict(zip(lt["head"], row))
        assert same(cells["targets drawn"], len(ln["targets"]))
        assert same(cells["T1 Mbit/s max"], max(t[0] for t in ln["targets"]))
        assert float(cells["T1 Mbit/s max"]["attrs"]["data-value"]) <= ln["max_throughput_mbps"]
        for k in ("mean_capacity_mbps", "max_delay_ms", "max_loss", "buffer_bytes"):
            assert same(cells[k], ln[k])
    assert len(doc.table("bar verdicts (deepcc)")["rows"]) == len(verdicts)
    check_figures(doc, [os.path.join(tmp_path, "plots", f) for f in os.listdir(tmp_path / "plots")])
    check_specs(doc, links)


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


def test_sim2real_compare_report_reproduces_the_shipped_comparison(tmp_path, capsys):
    shipped, (sim_json, emu_json) = split_comparison(tmp_path)
    out = tmp_path / "report"
    args = ["--compare", sim_json, emu_json, f"--out={out}", "--report"]
    assert sim2real.main(args) == 0
    text, doc = parse(out / "report.html")
    check_common(text, doc, "python -m jaxcc.sim2real " + " ".join(args))
    with open(sim_json, encoding="utf-8") as fh:
        sim_recs = json.load(fh)["results"]
    with open(emu_json, encoding="utf-8") as fh:
        emu_recs = json.load(fh)["results"]
    assert sorted(t["caption"] for t in doc.tables) == sorted(
        ["sim vs emulation per scenario, controller and metric", "invalid emulated runs (not compared: re-run)",
         "bounds", "simulator run settings", "emulation run settings", "emulation delay_check per run"]
        + record_captions(sim_recs, "sim ") + record_captions(emu_recs, "emulation "))
    cmp = doc.table("sim vs emulation per scenario, controller and metric")
    assert len(cmp["rows"]) == len(shipped["rows"])  # the invalid run is not compared
    for row, want in zip(cmp["rows"], shipped["rows"]):
        cells = dict(zip(cmp["head"], row))
        for k in ("scenario", "controller", "metric", "sim", "emulation", "difference", "bound"):
            assert same(cells[k], want[k]), (k, cells[k]["text"], want[k])
        assert cells["verdict"]["text"] == ("over bound" if want["over"] else "within")
        assert ("bad" in cells["verdict"]["attrs"]["class"]) == want["over"]
    assert sum(1 for r in shipped["rows"] if r["over"]) == 1  # pareto/link12's queueing delay
    inv = doc.table("invalid emulated runs (not compared: re-run)")
    assert [[c["text"] for c in row] for row in inv["rows"]] == [
        ["pareto/fixed50", "bbr", "invalid, re-run", "p95 hold error 6.30 ms > 2 ms"]]
    bounds = {row[0]["text"]: row for row in doc.table("bounds")["rows"]}
    assert set(bounds) == set(shipped["bounds"])
    for m, (kind, b) in shipped["bounds"].items():
        assert bounds[m][1]["text"] == kind and same(bounds[m][2], b)
    check_record_tables(doc, sim_recs, "sim ")
    check_record_tables(doc, emu_recs, "emulation ")
    validity = doc.table("emulation delay_check per run")
    assert [c["text"] for row in validity["rows"] for c in row[2:3]] == [
        {True: "yes", False: "no", None: "–"}[r["delay_check"]["valid"]] for r in emu_recs]
    overlay = sorted(str(p) for p in (out / "plots").iterdir())
    assert [os.path.basename(p) for p in overlay] == [
        f"sim2real_pareto_{link}.{e}" for link in ("fixed50", "link12") for e in ("pdf", "png", "svg")]
    check_figures(doc, [str(tmp_path / "sim" / "plots" / "scatter_pareto_fixed50.png")]
                  + [str(tmp_path / "emulation" / f"throughput_pareto_fixed50.{e}") for e in ("png", "svg", "pdf")]
                  + overlay)
    check_specs(doc, ["pareto/fixed50", "pareto/link12"])


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
    assert sim2real.main(["--controller=bbr", "--scenario=pareto/fixed50", f"--out={out}", "--report"]) == 0
    assert len(calls) == 2
    text, doc = parse(out / "report.html")
    assert len(doc.table("sim vs emulation per scenario, controller and metric")["rows"]) == 8
    assert {f["caption"] for f in doc.figures} == {"scatter_pareto_fixed50.png", "throughput_pareto_fixed50.svg",
                                                   "sim2real_pareto_fixed50.svg", "sim2real_pareto_link12.svg"}
    specs = check_specs(doc, ["pareto/fixed50"])
    assert list(specs) == ["pareto/fixed50"]  # what ran, from --scenario


def test_sim2real_compare_report_needs_out(tmp_path, capsys):
    _, (sim_json, emu_json) = split_comparison(tmp_path)
    assert sim2real.main(["--compare", sim_json, emu_json, "--report"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "sim2real: --report with --compare needs --out=DIR (the folder for report.html)"
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
    assert emulate.main(args) == 0
    assert f"wrote {tmp_path / 'report.html'}" in capsys.readouterr().out
    with open(tmp_path / "results.json", encoding="utf-8") as fh:
        res = json.load(fh)
    text, doc = parse(tmp_path / "report.html")
    check_common(text, doc, "python -m jaxcc.emulate " + " ".join(args))
    recs = res["results"]
    assert sorted(t["caption"] for t in doc.tables) == sorted(
        ["summary: every scenario × controller", "run settings", "delay_check per run"] + record_captions(recs))
    check_summary(doc, recs)
    check_record_tables(doc, recs)
    v = doc.table("delay_check per run")
    assert [[c["text"] for c in row[:3]] for row in v["rows"]] == [["emu/fixed12", "bbr", "yes"],
                                                                   ["emu/fixed12", "fixed:5", "no"]]
    assert "bad" in v["rows"][1][2]["attrs"]["class"]
    assert made
    check_figures(doc, made)
    check_specs(doc, ["emu/fixed12"])


# ----------------------------------------------------------------------------- the pieces


def test_figures_prefer_svg_and_ids_do_not_collide(tmp_path):
    svg = ('<?xml version="1.0"?>\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" '
           '"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n<svg xmlns="http://www.w3.org/2000/svg" '
           'xmlns:xlink="http://www.w3.org/1999/xlink"><metadata><rdf:RDF xmlns:rdf="http://x"/></metadata>'
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
    assert base64.b64encode(b"\x89PNG-c").decode() in text
    with pytest.raises(ValueError, match="gone.png: cannot embed"):
        rep.figures([str(tmp_path / "gone.png")])


def test_cells_and_version():
    values = (None, float("nan"), True, 3, 0.0, 44.8939678, 0.000123, 123456.7, [], [1, 2.5])
    assert [report.fmt(v) for v in values] == [
        "–", "–", "yes", "3", "0", "44.89", "1.230e-04", "123457", "(none)", "1, 2.5"]
    assert report.fmt([[0, 1]] * 20) == "(20 items)"
    v = report.version_info("/")  # not a checkout: no commit, no failure
    assert v["commit"] is None and v["dirty"] is None
    assert "not run from a git checkout" in report.version_text(v)
    assert report.flatten({"a": 1, "d": {"valid": False, "x": {"y": 2}}, "per_flow": [{"f": 1}], "s": [[0, 1]]}) == {
        "a": 1, "d.valid": False, "d.x.y": 2, "s": [[0, 1]]}
