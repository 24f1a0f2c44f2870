"""Figures embedded in a report: per stem the SVG inline or the PNG as a ``data:`` URI
(``inline_svg``, ``figure_files``), grouped by scenario (``figures_by_scenario``)."""

from __future__ import annotations

import os
import re
from typing import Callable, Iterable




# ----------------------------------------------------------------------------- figures


_SVG_DROP = (re.compile(r"<\?xml.*?\?>", re.S), re.compile(r"<!DOCTYPE.*?>", re.S),
             re.compile(r"<metadata>.*?</metadata>", re.S), re.compile(r"<!--.*?-->", re.S),
             re.compile(r'\s+xmlns(:\w+)?="[^"]*"'))


def inline_svg(text: str, prefix: str, rename: Callable[[str], str] | None = None) -> str:
    """An SVG file's markup for inlining in HTML: the XML prolog, DOCTYPE, metadata, comments and
    namespace declarations dropped (HTML's parser knows SVG), and every id prefixed with
    ``prefix`` so two figures' ids (matplotlib numbers them per file) never collide; ``rename``
    (e.g. ``relative_text``) is applied to every id and reference to one as well."""
    rename = rename or (lambda s: s)
    for rx in _SVG_DROP:
        text = rx.sub("", text)
    text = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}{rename(m.group(1))}"', text)
    text = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}{rename(m.group(1))})", text)
    text = re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}{rename(m.group(1))}"', text)
    return text.strip()


def figure_files(paths: Iterable[str]) -> list[str]:
    """One file per figure stem, in the order given: the ``.svg`` when the list has one, else the
    ``.png``; other files (``.pdf``, ``results.json``) are not figures of the report."""
    stems: dict[str, dict[str, str]] = {}
    for p in paths:
        stem, ext = os.path.splitext(str(p))
        if ext.lower() in (".svg", ".png"):
            stems.setdefault(stem, {})[ext.lower()] = str(p)
    return [d.get(".svg") or d[".png"] for d in stems.values()]


def figures_in(folder: str) -> list[str]:
    """The figure files (``.svg``, ``.png``) directly in ``folder`` and in ``folder/plots``, sorted:
    the figures another process wrote (``jaxcc.sim2real`` runs ``evaluate`` and ``emulate``)."""
    out = []
    for d in (folder, os.path.join(folder, "plots")):
        if os.path.isdir(d):
            out += sorted(os.path.join(d, f) for f in os.listdir(d) if f.lower().endswith((".svg", ".png")))
    return out


def plot_slug(name: str, fallback: str = "scenario") -> str:
    """A scenario's file-name fragment in its figures' names (``jaxcc.plots.slug``, which this
    level-1 module cannot import)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or fallback


def figures_by_scenario(paths: Iterable[str], scenarios: Iterable[str]) -> dict[str | None, list[str]]:
    """``figure_files(paths)`` grouped by scenario, in the order of ``scenarios``: a figure whose
    file stem ends with ``_`` + a scenario's ``plot_slug`` (the longest that fits) is that
    scenario's; the rest are under None, last.  Scenarios without figures are left out."""
    scenarios = list(dict.fromkeys(scenarios))
    out: dict[str | None, list[str]] = {s: [] for s in scenarios}
    out[None] = []
    for p in figure_files(paths):
        stem = os.path.splitext(os.path.basename(p))[0]
        fits = [s for s in scenarios if stem.endswith("_" + plot_slug(s))]
        out[max(fits, key=lambda s: len(plot_slug(s))) if fits else None].append(p)
    return {k: v for k, v in out.items() if v}
