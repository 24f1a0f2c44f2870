"""``jaxcc.plots``: the figures of a results.json show exactly its numbers, nothing leaves its frame
(hostile labels and data), the axes' floors and scale decisions, one look per scheme in every
figure, PNG + PDF + SVG; and ``training-curve`` from a run's metrics.jsonl."""

import json
import math
import os
import subprocess
import sys

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.markers import MarkerStyle

from jaxcc import plots

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _write_run(folder, rows):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "metrics.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return str(folder)


def _synthetic(n=20, resume_at=None):
    rows = []
    for i in range(1, n + 1):
        el = 10.0 + 2.0 * i
        if resume_at is not None and i > resume_at:
            el = 5.0 + 2.0 * (i - resume_at)  # the clock restarts on a resume
        rows.append({"update": 5 * i, "env_steps": 5 * i * 65536, "elapsed_s": el,
                     "reward": 1000.0 + 50 * i, "episode_return": math.nan if i == 1 else 4e5 + 2e4 * i})
    return rows


def test_read_metrics_orders_dedups_and_continues_the_clock(tmp_path):
    rows = _synthetic(10, resume_at=6)
    rows.insert(6, dict(rows[5], reward=-1.0))  # update 30 logged twice (resumed), later row wins
    rows[6], rows[5] = rows[5], rows[6]
    m = plots.read_metrics(_write_run(tmp_path / "run", rows))
    assert list(m["update"]) == [5 * i for i in range(1, 11)]
    assert np.all(np.diff(m["wall_s"]) > 0)  # resumed segment continues after 22 s
    assert math.isnan(m["episode_return"][0]) and m["episode_return"][-1] == 4e5 + 2e5


def test_training_curve_cli_writes_a_plot(tmp_path):
    run = _write_run(tmp_path / "run", _synthetic())
    out = tmp_path / "plots" / "curve.png"
    res = subprocess.run([sys.executable, "-m", "jaxcc.plots", "training-curve", f"--run={run}", f"--out={out}"],
                         cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert out.exists() and out.stat().st_size > 5000
    assert res.stdout.strip() == str(out)


def test_training_curve_two_runs_and_errors(tmp_path, capsys):
    a = _write_run(tmp_path / "a", _synthetic())
    b = _write_run(tmp_path / "b", _synthetic(8))
    out = str(tmp_path / "cmp.svg")
    assert plots.run_cli(["plots", "training-curve", f"--run={a}", f"--run={b}", "--label=A", "--label=B",
                          f"--out={out}"]) == 0
    assert os.path.getsize(out) > 5000
    capsys.readouterr()
    assert plots.run_cli(["plots", "training-curve", f"--run={tmp_path / 'missing'}", f"--out={out}"]) == 2
    assert plots.run_cli(["plots", "training-curve", f"--out={out}"]) == 2  # --run is required
    assert plots.run_cli(["plots", "training-curve", f"--run={a}", f"--results={a}", f"--out={out}"]) == 2  # figures'
    assert plots.run_cli(["plots", "curve", f"--run={a}", f"--out={out}"]) == 2
    assert plots.run_cli(["plots"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 5 and all(e.startswith("error: ") for e in err), err
    assert "missing" in err[0] and "--run" in err[1] and "results" in err[2]
    assert "unknown subcommand 'curve'" in err[3] and "give a subcommand" in err[4]
    assert plots.run_cli(["plots", "--help"]) == 0 and "training-curve" in capsys.readouterr().out
    assert plots.run_cli(["plots", "training-curve", "--help"]) == 0 and "--label" in capsys.readouterr().out


# ----------------------------------------------------------------------------- figures of results.json

SPECS = [  # a seeded link (jitter: each seed its own run) and a deterministic one
    {"name": "jit", "duration_s": 3.0, "link": {"bandwidth_mbps": 12, "buffer_bytes": 60000, "jitter_ms": 3},
     "flows": [{"rtt_ms": 40, "controller": "cubic"}, {"rtt_ms": 40, "start_s": 1.0, "controller": "cubic"}]},
    {"name": "plain", "duration_s": 2.0, "link": {"bandwidth_mbps": 8, "buffer_bytes": 40000},
     "flows": [{"rtt_ms": 30, "controller": "cubic"}]},
]


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory):
    """A small real evaluation (2 scenarios x 2 controllers x 2 seeds) written as results.json."""
    from jaxcc.evaluation import runs as evaluation_runs
    from jaxcc.scenarios import parse_scenario

    out = tmp_path_factory.mktemp("ev")
    rep = evaluation_runs.run_evaluation([parse_scenario(s) for s in SPECS], evaluation_runs.controller_entries("bbr,cubic"),
                                  seeds=2, progress=False)
    path = evaluation_runs.write_results(rep, str(out), {"command": "test"})
    with open(path) as f:
        return path, json.load(f)


def _figures(doc):
    return dict(plots.figures(doc))


def _close(figs):
    for f in figs.values():
        plt.close(f)


def _gid(fig, gid):
    hits = [a for ax in fig.axes for a in ax.get_children() if a.get_gid() == gid]
    assert len(hits) == 1, (gid, len(hits))
    return hits[0]


def _nan(xs):
    return np.asarray([np.nan if v is None else v for v in xs], np.float64)


def test_figures_show_exactly_results_json(evaluation):
    _, doc = evaluation
    figs = _figures(doc)
    assert sorted(figs) == ["scatter_jit", "scatter_plain", "timeseries_jit", "timeseries_plain"]
    for r in doc["results"]:
        fig, ctrl = figs[f"scatter_{r['scenario']}"], r["controller"]
        per = r["per_seed"]
        assert [p["seed"] for p in per] == ([0, 1] if r["scenario"] == "jit" else [0])
        # the record is the seeds' mean (evaluate averages runs); the figure marks their median
        assert r["throughput_mbps"] == pytest.approx(np.mean([p["throughput_mbps"] for p in per]))
        med = _gid(fig, f"median:{ctrl}").get_offsets()
        np.testing.assert_allclose(med, [[np.median([p["p95_owd_ms"] for p in per]),
                                          np.median([p["throughput_mbps"] for p in per])]])
        if len(per) > 1:
            assert per[0]["p95_owd_ms"] != per[1]["p95_owd_ms"]  # the seeds differ
            np.testing.assert_allclose(_gid(fig, f"seeds:{ctrl}").get_offsets(),
                                       [[p["p95_owd_ms"], p["throughput_mbps"]] for p in per])
        else:
            assert not [a for a in fig.axes[0].get_children() if a.get_gid() == f"seeds:{ctrl}"]
        s = doc["series"][r["scenario"]][ctrl]
        ts = figs[f"timeseries_{r['scenario']}"]
        t = np.asarray(s["t"])
        for f in range(len(r["per_flow"])):
            thr = _gid(ts, f"thr:{ctrl}:{f}")
            np.testing.assert_array_equal(thr.get_xdata(), t)
            np.testing.assert_array_equal(thr.get_ydata(), _nan([row[f] for row in s["throughput_mbps"]]))
            owd = _gid(ts, f"owd:{ctrl}:{f}")
            np.testing.assert_array_equal(owd.get_ydata(), _nan([row[f] for row in s["owd_ms"]]))
            assert np.nanmin(owd.get_ydata()) >= 0.5 * {"jit": 40, "plain": 30}[r["scenario"]]  # >= half the RTT
        cap = _gid(ts, f"capacity:{ctrl}")
        np.testing.assert_array_equal(cap.get_ydata(), s["capacity_mbps"] + s["capacity_mbps"][-1:])
        np.testing.assert_allclose(cap.get_xdata(), np.append(t - t[0], t[-1] + t[0]))  # the bins' edges
    _close(figs)


def test_redraw_cli_equals_the_evaluation_figures(evaluation, tmp_path, capsys):
    path, _ = evaluation
    assert plots.run_cli(["plots", "figures", f"--results={path}", f"--out={tmp_path}"]) == 0
    printed = capsys.readouterr().out.split()
    names = sorted(os.path.basename(p) for p in printed)
    assert names == sorted(f"{k}_{s}.{e}" for k in ("scatter", "timeseries") for s in ("jit", "plain")
                           for e in plots.FORMATS)
    assert plots.run_cli(["plots", "figures", f"--results={tmp_path / 'nope.json'}", f"--out={tmp_path}"]) == 2
    (tmp_path / "bad.json").write_text("{\"bounds\": {}, \"rows\": [], \"invalid\": []}")  # sim2real.json
    assert plots.run_cli(["plots", "figures", f"--results={tmp_path / 'bad.json'}", f"--out={tmp_path}"]) == 2
    (tmp_path / "bad2.json").write_text("{\"results\": [{\"scenario\": \"a\"}]}")
    assert plots.run_cli(["plots", "figures", f"--results={tmp_path / 'bad2.json'}", f"--out={tmp_path}"]) == 2
    (tmp_path / "tcr.json").write_text("{\"tcr\": [], \"links\": []}")  # another command's results.json
    assert plots.run_cli(["plots", "figures", f"--results={tmp_path / 'tcr.json'}", f"--out={tmp_path}"]) == 2
    (tmp_path / "empty.json").write_text("{\"results\": []}")
    assert plots.run_cli(["plots", "figures", f"--results={tmp_path / 'empty.json'}", f"--out={tmp_path}"]) == 2
    assert plots.run_cli(["plots", "figures", f"--results={path}",
                          f"--out={tmp_path / 'bad.json' / 'x'}"]) == 2  # a file
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 6 and "nope.json" in err[0] and "'results' list" in err[1] and "bad.json" in err[1]
    assert "results[0] needs 'scenario' and 'controller'" in err[2] and "bad2.json" in err[2]
    assert "tcr.json is jaxcc.tcr's" in err[3] and "empty.json has no records" in err[4]
    assert "bad.json/x" in err[5]


# ----------------------------------------------------------------------------- formats


def _png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def test_every_figure_is_png_pdf_and_svg(evaluation, tmp_path):
    _, doc = evaluation
    files = plots.write_all(doc, str(tmp_path / "p"))
    stems = sorted({os.path.splitext(f)[0] for f in files})
    assert len(stems) == 4 and len(files) == 12
    for stem in stems:
        for ext in ("png", "pdf", "svg"):
            assert os.path.getsize(f"{stem}.{ext}") > 5000, (stem, ext)
        assert open(f"{stem}.pdf", "rb").read(5) == b"%PDF-"
        assert b"<svg" in open(f"{stem}.svg", "rb").read(2000)
    w, _ = _png_size(str(tmp_path / "p" / "scatter_jit.png"))
    assert w == round(plots.SINGLE_W * plots.DPI)  # single column at 200 dpi


# ----------------------------------------------------------------------------- axis floors and scale


def _scatter(points, capacity=None):
    return plots.scatter_figure("s", [{"controller": c, "seeds": [], "median": m} for c, m in points], capacity)


def test_throughput_from_zero_and_a_two_percent_gap_stays_small():
    fig = _scatter([("bbr", (50.0, 7.41)), ("cubic", (90.0, 7.55))], capacity=7.6)
    ax = fig.axes[0]
    assert ax.get_ylim() == pytest.approx((0.0, 7.6 * 1.05))  # not 7.41-7.55: the gap is 2 % of the height
    assert ax.get_xscale() == "linear" and ax.get_xlim() == pytest.approx((90.0 * 1.08, 0.0))  # reversed
    assert ax.xaxis_inverted()
    plt.close(fig)
    fig = _scatter([("bbr", (50.0, 9.0))], capacity=5.0)  # data above the capacity: the data decide
    assert fig.axes[0].get_ylim() == pytest.approx((0.0, 9.0 * 1.05))
    plt.close(fig)


@pytest.mark.parametrize("lo,hi,scale,xlim", [
    (20.0, 199.0, "linear", (199.0 * 1.08, 0.0)),  # 9.95x: under a decade
    (20.0, 201.0, "log", (201.0 * 1.3, 10.0)),  # 10.05x: log, floor 10 (20 / 1.15 = 17.4 -> 10)
    (76.0, 1000.0, "log", (1300.0, 50.0)),  # floor 50 (76 / 1.15 = 66 -> 50)
    (0.3, 40.0, "log", (52.0, 0.2)),
])
def test_delay_axis_is_log_iff_the_data_span_more_than_a_decade(lo, hi, scale, xlim):
    assert plots.LOG_SPAN == 10.0
    fig = _scatter([("bbr", (lo, 5.0)), ("copa", (hi, 4.0))])
    ax = fig.axes[0]
    assert ax.get_xscale() == scale and ax.get_xlim() == pytest.approx(xlim) and ax.xaxis_inverted()
    plt.close(fig)
    assert plots.delay_axis([lo, hi, None, float("nan")])[0] == scale


# ----------------------------------------------------------------------------- one look per scheme


def _marker_of_collection(coll):
    return coll.get_paths()[0].vertices


def _marker_vertices(marker):
    ms = MarkerStyle(marker)
    return ms.get_path().transformed(ms.get_transform()).vertices


def test_a_scheme_looks_the_same_in_every_figure():
    pol = "policy:checkpoints/pareto/pareto_fair.safetensors"
    doc = {"results": [{"scenario": "a", "controller": c, "throughput_mbps": 5.0 + i, "p95_owd_ms": 30.0 + 9 * i,
                        "capacity_mbps": 10.0, "per_flow": [{"flow": 0}]} for i, c in enumerate(["bbr", pol])],
           "series": {"a": {c: {"t": [0.25, 0.75], "capacity_mbps": [10, 10], "throughput_mbps": [[4], [5]],
                                "owd_ms": [[20], [30]]} for c in ["bbr", pol]}}}
    figs = _figures(doc)
    fr = plots.frontier_figure([{"link": "a", "capacity_mbps": 10.0, "baselines": [
        {"controller": "bbr", "points": [(30.0, 9.0)]}], "curves": [
        {"controller": "pareto_fair", "edge": [(20.0, 9.0, 1.0), (10.0, 6.0, 0.0)], "rest": []}]}])
    tcr = plots.tcr_figure({"scenario": "a", "targets": [[1, 10, 0.1], [9, 5, 0.1]], "max_delay_ms": 50,
                            "max_throughput_mbps": 10, "window_s": [1, 2], "mean_capacity_mbps": 10, "max_loss": 0.1},
                           [{"scenario": "a", "controller": c, "met": [True, False], "tuned": False, "tcr": 0.5,
                             "measured": {"p95_qdelay_ms": 20.0, "throughput_mbps": 5.0, "loss": 0.0}}
                            for c in ["bbr", pol]])
    for label, short in (("bbr", "bbr"), (pol, "pareto_fair")):
        st = plots.style(label)
        assert st == plots.style(short) and st.name == short
        want = matplotlib.colors.to_rgb(st.color)
        med = _gid(figs["scatter_a"], f"median:{label}")
        assert matplotlib.colors.to_rgb(med.get_facecolor()[0]) == pytest.approx(want)
        np.testing.assert_allclose(_marker_of_collection(med), _marker_vertices(st.marker))
        head = [lg for ax in figs["timeseries_a"].axes for lg in [ax.get_legend()]
                if lg and lg.get_gid() == f"head:{label}"]
        h = head[0].legend_handles[0]
        assert matplotlib.colors.to_rgb(h.get_color()) == pytest.approx(want) and h.get_marker() == st.marker
        assert head[0].get_texts()[0].get_text() == short
        line = _gid(figs["timeseries_a"], f"thr:{label}:0")  # one flow: the scheme's colour
        assert matplotlib.colors.to_rgb(line.get_color()) == pytest.approx(want)
        m = _gid(tcr, f"measured:{label}")
        assert matplotlib.colors.to_rgb(m.get_facecolor()[0]) == pytest.approx(want)
        np.testing.assert_allclose(_marker_of_collection(m), _marker_vertices(st.marker))
    b = _gid(fr, "baseline:bbr")
    bbr = matplotlib.colors.to_rgb(plots.style("bbr").color)
    assert matplotlib.colors.to_rgb(b.get_facecolor()[0]) == pytest.approx(bbr)
    ln = _gid(fr, "frontier:pareto_fair")
    assert ln.get_color() == plots.style(pol).color and ln.get_marker() == plots.style(pol).marker
    for f in list(figs.values()) + [fr, tcr]:
        plt.close(f)


def test_schemes_drawn_together_are_told_apart_whatever_the_order():
    names = ["mocc", "mocc@s1", "mocc@s2", "bbr", "cubic", "copa"]
    assert (plots.style("mocc").color, plots.style("mocc").marker) == (plots.style("mocc@s1").color,
                                                                         plots.style("mocc@s1").marker)  # a hash clash
    looks = plots.styles_for(names)
    assert len({(st.color, st.marker) for st in looks.values()}) == len(names)
    assert looks == plots.styles_for(reversed(names)) == plots.styles_for(names + ["policy:/a/mocc.safetensors"])
    assert all(looks[n] == plots.style(n) for n in ("bbr", "cubic", "copa", "mocc"))  # fixed and first keep theirs
    fig = plots.frontier_figure([{"link": "l", "capacity_mbps": 12.0, "baselines": [], "curves": [
        {"controller": n, "edge": [(10.0 + i, 5.0, 1.0), (1.0 + i, 2.0, 0.0)], "rest": []}
        for i, n in enumerate(names[:3])]}])
    colors = [_gid(fig, f"frontier:{n}").get_color() for n in names[:3]]
    assert colors == [looks[n].color for n in names[:3]] and len(set(colors)) == 3
    plt.close(fig)


def test_styles_are_fixed_distinct_and_do_not_depend_on_pythons_hash_seed():
    known = ["bbr", "cubic", "reno", "copa", "oracle", "kernel:cubic", "kernel:bbr", "kernel:reno"]
    looks = {(plots.style(n).color, plots.style(n).marker) for n in known}
    assert len(looks) == len(known)
    assert plots.style("fixed:40").marker == "P" and plots.style("pareto-x").marker == "o"
    assert plots.style("aurora.safetensors").marker == "H" and plots.style("MOCC_3").marker == "X"
    assert plots.style("Pareto-Bootstrap") != plots.style("Pareto-Advance")
    names = ["Pareto-Bootstrap", "Pareto-Advance", "my-scheme", "pareto_fair", "pareto_paper"]
    code = f"from jaxcc import plots; print([tuple(vars(plots.style(n)).values()) for n in {names!r}])"
    outs = {subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert outs == {str([tuple(vars(plots.style(n)).values()) for n in names]) + "\n"}


# ----------------------------------------------------------------------------- nothing outside its frame

LONG = ["Pareto-Bootstrap", "Pareto-Advance", "policy:/runs/x/an_extraordinarily_long_policy_name_v2.safetensors",
        "bbr", "a-controller-with-a-very-long-name-that-goes-on-and-on"]


def layout_problems(fig) -> list[str]:
    """Text of an axes outside that axes, legends over any axes' data area or each other, anything
    outside the figure (window extents after a draw), text under 7 pt."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    fb = fig.bbox
    tol = 1.0
    out = []

    def inside(b, box):
        return b.x0 >= box.x0 - tol and b.x1 <= box.x1 + tol and b.y0 >= box.y0 - tol and b.y1 <= box.y1 + tol

    def overlap(b, box):
        return min(b.x1, box.x1) - max(b.x0, box.x0) > tol and min(b.y1, box.y1) - max(b.y0, box.y0) > tol

    axes = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    for ax in axes:
        ab = ax.get_window_extent(r)
        for t in ax.texts:
            if t.get_visible() and t.get_text():
                if not inside(t.get_window_extent(r), ab):
                    out.append(f"text {t.get_text()!r} leaves its axes {ax.get_title()!r}")
        if not inside(ax.get_tightbbox(r), fb):
            out.append(f"axes {ax.get_title()!r} (labels, ticks) outside the figure")
    legends = list(fig.legends) + [ax.get_legend() for ax in axes if ax.get_legend() is not None]
    for i, lg in enumerate(legends):
        lb = lg.get_window_extent(r)
        for other in legends[i + 1:]:
            if overlap(lb, other.get_window_extent(r)):
                out.append(f"legends {[t.get_text() for t in lg.get_texts()][:1]} and "
                           f"{[t.get_text() for t in other.get_texts()][:1]} overlap")
        if not inside(lb, fb):
            out.append(f"legend {[t.get_text() for t in lg.get_texts()][:2]} outside the figure")
        for ax in axes:
            if overlap(lb, ax.get_window_extent(r)):
                out.append(f"legend {[t.get_text() for t in lg.get_texts()][:2]} over axes {ax.get_title()!r}")
    for t in fig.texts:
        if t.get_visible() and t.get_text() and not inside(t.get_window_extent(r), fb):
            out.append(f"figure text {t.get_text()!r} outside the figure")
    small = {t.get_text() for t in fig.findobj(matplotlib.text.Text)
             if t.get_visible() and t.get_text() and t.get_fontsize() < 7}
    if small:
        out.append(f"text under 7 pt (single column): {sorted(small)[:3]}")
    return out


def _hostile_figures():
    # points at the extremes of both axes, a 2 % throughput spread, long names
    pts = [{"controller": c, "seeds": [(d * 0.97, t * 0.99), (d * 1.03, t * 1.01)], "median": (d, t)}
           for c, d, t in zip(LONG, [5.0, 2000.0, 300.0, 41.0, 1999.0], [7.41, 7.55, 7.5, 7.45, 7.42])]
    yield "scatter", plots.scatter_figure("pareto/fixed50", pts, 7.56)
    yield "scatter-linear", plots.scatter_figure("pareto/lte", [dict(p, median=(30 + i, p["median"][1]), seeds=[])
                                                                for i, p in enumerate(pts)], 7.6)
    t = np.arange(0.25, 30, 0.5)
    series = {c: {"t": t.tolist(), "capacity_mbps": [50.0] * len(t),
                  "throughput_mbps": [[50.0 if f == 0 else 0.0 for f in range(6)] for _ in t],
                  "owd_ms": [[400.0] * 6 for _ in t]} for c in LONG[:3]}
    yield "timeseries", plots.timeseries_figure("pareto/shared4", plots.evaluation_panels(series))
    yield "timeseries-1", plots.timeseries_figure("x", plots.evaluation_panels({LONG[4]: series[LONG[0]]}))
    curves = [{"controller": c, "edge": [(1.0, 12.0, 1.0), (40.0, 6.0, 0.5), (400.0, 0.0, 0.0)],
               "rest": [(400.0, 12.0, "(0.2, 0.2, 0.6)"), (1.0, 0.0, "(0.5, 0, 0.5)")]} for c in LONG[:2]]
    link = {"link": "mocc/lte-down", "curves": curves, "capacity_mbps": 12.0,
            "baselines": [{"controller": "bbr", "points": [(1.0, 12.0)]},
                          {"controller": LONG[4], "points": [(400.0, 0.0)]}]}
    yield "frontier", plots.frontier_figure([link])
    yield "frontier-all", plots.frontier_figure([dict(link, link=f"mocc/{i}") for i in range(4)])
    tl = {"scenario": "deepcc/a-long-link-name", "targets": [[1, 10, 0.1], [9, 5, 0.1], [10, 50, 0.1]],
          "max_delay_ms": 50, "max_throughput_mbps": 10, "window_s": [10, 40], "mean_capacity_mbps": 10,
          "max_loss": 0.1}
    rows = [{"scenario": tl["scenario"], "controller": c, "met": [True, False, True], "tuned": i == 1, "tcr": 0.66,
             "measured": {"p95_qdelay_ms": 900.0, "throughput_mbps": 99.0, "loss": 0.5}} for i, c in enumerate(LONG)]
    yield "tcr", plots.tcr_figure(tl, rows)
    yield "tcr-1", plots.tcr_figure(tl, rows[:1])
    tuned = [dict(rows[0], controller=f"policy:/x/deepcc_seed{i}.safetensors", tuned=True, tcr=0.198) for i in range(3)]
    yield "tcr-tuned", plots.tcr_figure(tl, tuned + rows * 2)  # 13 panels, long headers side by side


def test_no_label_leaves_its_frame_with_hostile_inputs():
    seen = []
    for kind, fig in _hostile_figures():
        problems = layout_problems(fig)
        assert not problems, (kind, problems)
        seen.append(kind)
        n_text = sum(len(ax.texts) for ax in fig.axes)
        if kind.startswith(("scatter", "frontier")):
            assert n_text >= 1  # the "better" arrow (and the frontier's labels) were checked
        plt.close(fig)
    assert len(seen) == 9


def test_layout_check_catches_text_past_the_frame_and_a_legend_on_the_data():
    fig, ax = plt.subplots(figsize=(3.5, 2.6))
    ax.plot([0, 1], [0, 1], label="flow 0")
    ax.annotate("Pareto-Bootstrap", (0.98, 0.5), textcoords="offset points", xytext=(5, 4))  # old label style
    ax.legend(loc="upper right")
    probs = layout_problems(fig)
    assert any("leaves its axes" in p for p in probs) and any("over axes" in p for p in probs)
    plt.close(fig)


def test_emulation_records_time_series_with_and_without_owd():
    rec = {"scenario": "e", "controller": "bbr", "throughput_mbps": 9.0, "p95_owd_ms": 40.0, "capacity_mbps": 10.0,
           "capacity_schedule": [[0.0, 10.0], [2.0, 5.0]],
           "per_flow": [{"flow": 0, "start_s": 0.0, "stop_s": 4.0, "series": [[0.5, 9.0], [1.0, 8.0]],
                         "owd_series": [[0.5, 30.0], [1.0, 35.0]]},
                        {"flow": 1, "start_s": 1.0, "stop_s": 4.0, "series": [[0.5, 1.0], [1.0, 2.0]]}]}
    figs = _figures({"results": [rec]})
    ts = figs["timeseries_e"]
    # the rate over (0, 0.5] and (0.5, 1] s of flow 1, at the 0.5 s bins' centres from its start
    np.testing.assert_array_equal(_gid(ts, "thr:bbr:1").get_xdata(), [1.25, 1.75])
    np.testing.assert_array_equal(_gid(ts, "thr:bbr:1").get_ydata(), [1.0, 2.0])
    np.testing.assert_array_equal(_gid(ts, "owd:bbr:0").get_ydata(), [30.0, 35.0])
    assert _gid(ts, "owd:bbr:0").get_linestyle() == "-"
    assert not [a for ax in ts.axes for a in ax.get_children() if a.get_gid() == "owd:bbr:1"]
    cap = _gid(ts, "capacity:bbr")
    assert list(cap.get_xdata()) == [0.0, 2.0, 4.0] and list(cap.get_ydata()) == [10.0, 5.0, 5.0]
    np.testing.assert_allclose(_gid(figs["scatter_e"], "median:bbr").get_offsets(), [[40.0, 9.0]])
    assert not layout_problems(ts)
    _close(figs)


def test_sim2real_overlay_draws_each_side_and_joins_them(tmp_path):
    """``sim2real_<scenario>``: the simulator's record hollow, the emulated run filled, one segment
    between them whose ends are the numbers ``jaxcc.evaluation.sim2real.compare`` tabulates (the record's
    seed mean, not the seeds' median); a controller on one side only is drawn alone; only shared
    scenarios."""
    from jaxcc.evaluation import sim2real as evaluation_sim2real

    seeds = [(8.0, 30.0), (9.5, 50.0), (9.0, 45.0)]  # median (45 ms, 9.0) != mean (41.67 ms, 8.83)
    sim = {"results": [
        {"scenario": "s", "controller": "bbr", "throughput_mbps": float(np.mean([t for t, _ in seeds])),
         "p95_owd_ms": float(np.mean([d for _, d in seeds])), "p95_qdelay_ms": 20.0, "loss": 0.0,
         "capacity_mbps": 10.0,
         "per_seed": [{"seed": k, "throughput_mbps": t, "p95_owd_ms": d} for k, (t, d) in enumerate(seeds)]},
        {"scenario": "s", "controller": "fixed:5", "throughput_mbps": 5.0, "p95_owd_ms": 20.0, "capacity_mbps": 10.0},
        {"scenario": "only-sim", "controller": "bbr", "throughput_mbps": 1.0, "p95_owd_ms": 1.0}]}
    emu = {"results": [{"scenario": "s", "controller": "bbr", "throughput_mbps": 8.5, "p95_owd_ms": 60.0,
                        "p95_qdelay_ms": 40.0, "loss": 0.0, "capacity_mbps": 10.2}]}
    for name, doc in (("sim.json", sim), ("emu.json", emu)):
        (tmp_path / name).write_text(json.dumps(doc))
    rows = {r["metric"]: r for r in evaluation_sim2real.compare(str(tmp_path / "sim.json"), str(tmp_path / "emu.json"))
            if r["controller"] == "bbr"}
    want_sim = [rows["p95_owd_ms"]["sim"], rows["throughput_mbps"]["sim"]]
    want_emu = [rows["p95_owd_ms"]["emulation"], rows["throughput_mbps"]["emulation"]]
    np.testing.assert_allclose(want_sim, [125.0 / 3, 26.5 / 3])  # by hand: the seeds' mean
    fig = plots.sim2real_figure("s", sim["results"][:2], emu["results"])
    np.testing.assert_allclose(_gid(fig, "sim:bbr").get_offsets(), [want_sim])
    np.testing.assert_allclose(_gid(fig, "emu:bbr").get_offsets(), [want_emu])
    gap = _gid(fig, "gap:bbr")
    np.testing.assert_allclose(np.column_stack([gap.get_xdata(), gap.get_ydata()]), [want_sim, want_emu])
    np.testing.assert_allclose(_gid(fig, "sim:fixed:5").get_offsets(), [[20.0, 5.0]])
    assert not [a for a in fig.axes[0].get_children() if a.get_gid() in ("emu:fixed:5", "gap:fixed:5")]
    assert fig.axes[0].get_ylim()[0] == 0.0 and fig.axes[0].xaxis_inverted()
    assert not layout_problems(fig)
    plt.close(fig)
    files = plots.sim2real_figures(sim, emu, str(tmp_path))
    assert sorted(os.path.basename(f) for f in files) == ["sim2real_s.pdf", "sim2real_s.png", "sim2real_s.svg"]


def test_emulation_rates_are_rebinned_keeping_every_bit_and_kernel_delays_are_dashed():
    """``rebin_rate``: intervals ending at 0.3, 0.7, 1.0 s at 10, 20, 5 Mbit/s; bin [0, 0.5):
    (10*0.3 + 20*0.2) / 0.5 = 14, bin [0.5, 1): (20*0.2 + 5*0.3) / 0.5 = 11 (12.5 Mbit either
    way).  A record mixing controllers names its flows; an RTT estimate of delay is dashed."""
    t, r = plots.rebin_rate([(0.3, 10.0), (0.7, 20.0), (1.0, 5.0)])
    np.testing.assert_allclose(t, [0.25, 0.75])
    np.testing.assert_allclose(r, [14.0, 11.0])
    np.testing.assert_allclose(np.sum(r * 0.5), 0.3 * 10 + 0.4 * 20 + 0.3 * 5)
    rec = {"scenario": "m", "controller": "bbr+kernel:cubic", "throughput_mbps": 9.0, "p95_owd_ms": 40.0,
           "per_flow": [{"flow": 0, "controller": "bbr", "start_s": 0.0, "stop_s": 2.0,
                         "series": [[1.0, 5.0], [2.0, 6.0]], "owd_series": [[0.25, 30.0]]},
                        {"flow": 1, "controller": "kernel:cubic", "start_s": 0.0, "stop_s": 2.0,
                         "series": [[1.0, 4.0], [2.0, 3.0]], "owd_series": [[0.25, 50.0]], "owd_is_estimate": True}]}
    figs = _figures({"results": [rec]})
    ts = figs["timeseries_m"]
    assert _gid(ts, "owd:bbr+kernel:cubic:0").get_linestyle() == "-"
    assert _gid(ts, "owd:bbr+kernel:cubic:1").get_linestyle() == "--"
    labels = [t.get_text() for lg in ts.legends for t in lg.get_texts()]
    assert "flow 0 (bbr)" in labels and "flow 1 (kernel:cubic)" in labels
    assert any("estimated from the RTT" in x for x in labels)
    assert not layout_problems(ts)
    _close(figs)


def test_a_scheme_without_a_delay_is_named_as_not_drawn():
    pts = [{"controller": "bbr", "seeds": [], "median": (40.0, 9.0)},
           {"controller": "fixed:0", "seeds": [], "median": (math.nan, 0.0)}]
    fig = plots.scatter_figure("s", pts, 10.0)
    labels = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    assert any(x.startswith("fixed:0") and "not drawn" in x.replace("\n", " ") for x in labels), labels
    assert not [a for a in fig.axes[0].get_children() if a.get_gid() == "median:fixed:0"]
    plt.close(fig)
