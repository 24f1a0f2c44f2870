"""Every figure of a ``results.json`` (``jaxcc.evaluate``'s or ``jaxcc.emulate``'s): ``figures``,
``write_all``, ``figures_from_file``."""

from __future__ import annotations

import json
import os


from jaxcc.plots.looks import _by_scenario, _capacity, save, slug, styles_for
from jaxcc.plots.scatter import scatter_figure, scatter_points
from jaxcc.plots.timeseries import emulation_panels, evaluation_panels, timeseries_figure


# ----------------------------------------------------------------------------- from results.json


def figures(doc: dict, source: str = "results.json"):
    """``(stem name, figure)`` for every figure of a ``results.json`` document (evaluation's or
    emulation's), one at a time; the caller saves or closes each.  ``source``: the document's
    name in error messages."""
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise ValueError(f"{source}: needs a 'results' list of records (jaxcc.evaluate / jaxcc.emulate)")
    for i, r in enumerate(doc["results"]):
        if not isinstance(r, dict) or not isinstance(r.get("scenario"), str) or not isinstance(r.get("controller"), str):
            raise ValueError(f"{source}: results[{i}] needs 'scenario' and 'controller' strings")
    series = doc.get("series") or {}
    looks = styles_for(r["controller"] for r in doc["results"])
    for scen, recs in _by_scenario(doc["results"]).items():
        name = slug(scen)
        yield f"scatter_{name}", scatter_figure(scen, scatter_points(recs), _capacity(recs), looks=looks)
        if scen in series:
            panels = evaluation_panels(series[scen], [r["controller"] for r in recs])
        elif any(pf.get("series") for r in recs for pf in r.get("per_flow") or []):
            panels = emulation_panels(recs)
        else:
            panels = []
        if panels:
            yield f"timeseries_{name}", timeseries_figure(scen, panels, looks)


def write_all(doc: dict, out_dir: str, source: str = "results.json") -> list[str]:
    """Every figure of a ``results.json`` document into ``out_dir``; returns the files written."""
    files = []
    for name, fig in figures(doc, source):
        files += save(fig, os.path.join(out_dir, name))
    return files


def figures_from_file(results: str, out_dir: str) -> list[str]:
    """``write_all`` of the ``results.json`` at ``results``."""
    try:
        with open(results, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise FileNotFoundError(f"--results: cannot read {results!r} ({e.strerror})") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"--results: {results} is not JSON ({e.msg}, line {e.lineno})") from None
    if isinstance(doc, dict) and isinstance(doc.get("tcr"), list):
        raise ValueError(f"--results: {results} is jaxcc.tcr's (its figures: python -m jaxcc.tcr --records={results} "
                         "--out=DIR)")
    return write_all(doc, out_dir, f"--results: {results}")
