"""jaxcc.bars: issue 3's Pareto bars checked on hand-built evaluation records."""

import json
import os

import pytest

from jaxcc import bars
from jaxcc.scenarios import SUITES

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIG5 = ("pareto/fixed50", "pareto/dyn10-20", "pareto/dyn10-30", "pareto/shared4", "pareto/shared5", "pareto/lte")


def _records(label="P", util50=0.90, q95=10.0, loss=0.005, util1030=0.75, jain=(0.99, 0.97, 0.96, 0.95),
             ankh_wins=4):
    """A full pareto suite for ``label`` and bbr; ``label`` beats bbr's Ankh on ``ankh_wins`` Fig. 5 scenarios."""
    def rec(scenario, controller, **kw):
        base = {"scenario": scenario, "controller": controller, "utilization": 0.9, "p95_qdelay_ms": 1.0,
                "loss": 0.0, "jain": 1.0, "ankh": 0.3}
        base.update(kw)
        return base

    out = [rec("pareto/fixed50", label, utilization=util50, p95_qdelay_ms=q95, loss=loss),
           rec("pareto/dyn10-20", label), rec("pareto/dyn10-30", label, utilization=util1030),
           rec("pareto/lte", label), rec("pareto/depart4", label)]
    out += [rec(f"pareto/shared{n}", label, jain=j) for n, j in zip((2, 3, 4, 5), jain)]
    by = {(r["scenario"], r["controller"]): r for r in out}
    for i, s in enumerate(FIG5):
        by[(s, label)]["ankh"] = 0.2 if i < ankh_wins else 0.4
        out.append(rec(s, "bbr", ankh=0.3))
    return out


def _met(verdicts):
    return [v.met for v in verdicts]


def test_fig5_scenarios_are_the_suite():
    assert tuple(SUITES["pareto-fig5"]) == FIG5


def test_all_bars_met_exactly_at_the_thresholds():
    v = bars.check("pareto", _records(util50=0.85, q95=45.0, loss=0.01, util1030=0.70,
                                      jain=(0.95, 0.95, 0.95, 0.95), ankh_wins=4))
    assert list(v) == ["P"]  # bbr is a baseline, not checked
    assert _met(v["P"]) == [True] * 6


@pytest.mark.parametrize("kw, failing", [
    ({"util50": 0.849}, 0), ({"q95": 45.1}, 1), ({"loss": 0.0101}, 2), ({"util1030": 0.699}, 3),
    ({"jain": (1.0, 1.0, 1.0, 0.949)}, 4), ({"ankh_wins": 3}, 5),
])
def test_each_bar_fails_on_its_own(kw, failing):
    met = _met(bars.check("pareto", _records(**kw))["P"])
    assert met == [i != failing for i in range(6)]


def test_jain_values_show_enough_digits_to_see_the_miss():
    (v,) = [x for x in bars.check("pareto", _records(jain=(1.0, 0.9486, 1.0, 1.0)))["P"] if x.bar.startswith("Jain")]
    assert not v.met and v.value == "1.000 / 0.949 / 1.000 / 1.000"


def test_missing_scenarios_or_bbr_are_unmet_with_the_reason():
    recs = [r for r in _records() if r["controller"] != "bbr" and r["scenario"] != "pareto/shared3"]
    v = {x.bar: x for x in bars.check("pareto", recs)["P"]}
    assert not v["Jain >= 0.95 for 2-5 flows"].met and "shared2..5" in v["Jain >= 0.95 for 2-5 flows"].value
    ankh = v["Ankh < BBR on >= 4 of 6 Fig. 5 scenarios"]
    assert not ankh.met and "--controller=bbr" in ankh.value
    assert v["fixed50 util >= 0.85"].met
    no50 = bars.check("pareto", [r for r in _records() if r["scenario"] != "pareto/fixed50"])["P"]
    assert len(no50) == 6 and [x.value for x in no50[:3]] == ["not evaluated"] * 3 and not any(x.met for x in no50[:3])


def test_unknown_bar_set_names_the_valid_ones():
    with pytest.raises(ValueError, match="unknown bar set 'eagle'.*pareto"):
        bars.check("eagle", [])


def test_shipped_pareto_fair_meets_what_its_readme_claims():
    """checkpoints/pareto/README.md: Pareto-Fair meets the fixed-50 and Ankh bars, misses 10↔30 and Jain."""
    with open(os.path.join(REPO, "checkpoints", "pareto", "eval_sim.json"), encoding="utf-8") as fh:
        recs = json.load(fh)["results"]
    v = bars.check("pareto", recs)["Pareto-Fair"]
    assert _met(v) == [True, True, True, False, False, True]
    assert v[3].value == "0.447" and v[5].value == "5 of 6"
