"""Render a local HTML file in headless Chromium (Debian's ``chromium`` package, listed in
setup/apt-packages.txt) and check what a reader would see.

``render(html_path, out_dir)`` starts Chromium once (``--headless``, ``--screenshot`` and
``--dump-dom`` in the same launch; ``--no-sandbox`` as root, where Chromium refuses its sandbox;
a temporary ``--user-data-dir``; a fixed ``--window-size``; ``--virtual-time-budget`` so that
the load event, every inline image's decoding and the probe below have run before the dump;
``--host-resolver-rules`` that resolve no host name, so the page renders offline as a report
must). The page is rendered from a copy with a small script appended (``PROBE``) that, at the
load event, writes what only the browser knows into attributes of the DOM that the dump keeps:
each ``<table>``'s and ``<figure>``'s rendered box (``data-probe-rect="x,y,w,h"``, CSS px from
the page's top left), each ``<img>``'s decoded size and the share of its pixels that decoded to something
(``data-probe-img="WxH opaque=F"``, F from drawing it on a canvas; or ``broken``),
each ``<svg>``'s drawn extent (``data-probe-svg="WxH"``, its content's bounding box), and
whether a table or figure is folded in a closed ``<details>`` (``data-probe-folded="1"``: not
drawn until opened, whatever box Chromium computes for it). Setting attributes changes no
pixel, so the screenshot is that of the report itself. ``render(..., unfold=True)`` opens every
``<details>`` before the probe measures (the screenshot then shows them open): what a reader
sees who opens every fold.

The checks (``screenshot_problems``, ``dom_problems``) return a list of problems, empty when the
page is fine, so that a test can show every problem at once and a test of the checker can show
that a blank page or a broken image is caught.
"""
from __future__ import annotations

import dataclasses
import html.parser
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

APT_LIST = "setup/apt-packages.txt"
WINDOW = (1280, 6000)          # CSS px; the screenshot is this size (device scale factor 1)
BACKGROUND_TOL = 24            # a pixel differs from the background when a channel differs by more
DARK = 110                     # text ink: every channel at most this (of 255)

PROBE = """
<script>
window.addEventListener("load", function () {
  function box(e) {
    var r = e.getBoundingClientRect();
    return [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height]
      .map(function (v) { return Math.round(v); }).join(",");
  }
  if (window.probeUnfold) {
    document.querySelectorAll("details").forEach(function (d) { d.open = true; });
  }
  document.querySelectorAll("table, figure").forEach(function (e) {
    e.setAttribute("data-probe-rect", box(e));
    if (e.closest("details:not([open])")) e.setAttribute("data-probe-folded", "1");
  });
  document.querySelectorAll("img").forEach(function (e) {
    var s = "broken";
    if (e.complete && e.naturalWidth > 0) {
      s = e.naturalWidth + "x" + e.naturalHeight;
      try {  // the share of the image's pixels that decoded to something (alpha > 0)
        var c = document.createElement("canvas");
        c.width = e.naturalWidth; c.height = e.naturalHeight;
        var g = c.getContext("2d");
        g.drawImage(e, 0, 0);
        var d = g.getImageData(0, 0, c.width, c.height).data, n = 0;
        for (var i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
        s += " opaque=" + (n / (d.length / 4)).toFixed(4);
      } catch (err) { s += " opaque=?"; }
    }
    e.setAttribute("data-probe-img", s);
  });
  document.querySelectorAll("svg").forEach(function (e) {
    var b = {width: 0, height: 0};
    try { b = e.getBBox(); } catch (err) {}
    e.setAttribute("data-probe-svg", Math.round(b.width) + "x" + Math.round(b.height));
  });
  var h = document.documentElement;
  h.setAttribute("data-probe-height", Math.round(h.getBoundingClientRect().height));
  h.setAttribute("data-probe", "done");
});
</script>
"""


class BrowserMissing(RuntimeError):
    pass


def chromium_binary() -> str:
    """The Chromium executable (``$JAXCC_CHROMIUM``, else ``chromium`` or ``chromium-browser``
    on PATH). Raises BrowserMissing naming the package list when there is none."""
    env = os.environ.get("JAXCC_CHROMIUM")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise BrowserMissing(f"JAXCC_CHROMIUM={env}: not an executable file")
        return env
    for name in ("chromium", "chromium-browser"):
        p = shutil.which(name)
        if p:
            return p
    raise BrowserMissing("headless Chromium not found (no chromium or chromium-browser on PATH): it is "
                         f"in {APT_LIST}; install it with `make sysdeps` or `apt-get install chromium`")


@dataclasses.dataclass
class Rendered:
    screenshot: Path   # PNG, WINDOW's size
    dom: str           # the DOM after load, serialized (probe attributes included)
    seconds: float


def render(html_path: str | os.PathLike, out_dir: str | os.PathLike, window: tuple[int, int] = WINDOW,
           budget_ms: int = 5000, timeout_s: float = 120.0, env: dict[str, str] | None = None,
           unfold: bool = False) -> Rendered:
    """One headless Chromium launch on ``html_path`` (with ``PROBE`` appended): its screenshot
    (``out_dir/screenshot.png``) and DOM; ``env``: more environment variables for Chromium;
    ``unfold``: every ``<details>`` opened before the probe measures.
    Raises RuntimeError with Chromium's stderr when it fails, BrowserMissing when it is not
    installed."""
    import time
    exe = chromium_binary()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    page = out_dir / "probed.html"
    page.write_bytes(Path(html_path).read_bytes()
                     + (b"<script>window.probeUnfold = true;</script>" if unfold else b"") + PROBE.encode())
    shot = out_dir / "screenshot.png"
    if shot.exists():
        shot.unlink()
    with tempfile.TemporaryDirectory(prefix="jaxcc-chromium-") as profile:
        cmd = [exe, "--headless", "--disable-gpu", "--no-first-run", "--disable-extensions",
               "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
               "--force-device-scale-factor=1", f"--user-data-dir={profile}",
               f"--window-size={window[0]},{window[1]}", f"--virtual-time-budget={budget_ms}",
               "--host-resolver-rules=MAP * ~NOTFOUND", f"--screenshot={shot}", "--dump-dom",
               page.resolve().as_uri()]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.insert(1, "--no-sandbox")   # Chromium refuses to run its sandbox as root
        t0 = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                           env={**os.environ, "HOME": profile, **(env or {})})
        dt = time.monotonic() - t0
    if p.returncode != 0 or not shot.exists() or "data-probe=\"done\"" not in p.stdout:
        tail = "\n".join(p.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"{exe} failed on {html_path} (exit {p.returncode}, screenshot "
                           f"{'written' if shot.exists() else 'missing'}, probe "
                           f"{'ran' if 'data-probe' in p.stdout else 'did not run'}):\n{tail}")
    return Rendered(shot, p.stdout, dt)


# ----------------------------------------------------------------------------- the DOM


@dataclasses.dataclass
class Table:
    id: str | None
    classes: list[str]
    rect: tuple[int, int, int, int] | None
    rows: list[list[tuple[str, str | None]]]   # per row, per cell: (text, data-value)
    folded: bool = False                       # inside a closed <details>: not drawn until opened


@dataclasses.dataclass
class Figure:
    id: str | None
    classes: list[str]
    rect: tuple[int, int, int, int] | None
    images: list[str]     # per <img>: "WxH opaque=F", "broken", or None (the probe did not see it)
    svgs: list[str]       # per top-level <svg>: "WxH" of its drawn content
    folded: bool = False  # inside a closed <details>: not drawn until opened


@dataclasses.dataclass
class Dom:
    probed: bool
    height: int | None         # the content's height (CSS px)
    tables: list[Table]
    figures: list[Figure]
    images: list[str | None]   # every <img> of the page, as Figure.images


def _rect(v: str | None) -> tuple[int, int, int, int] | None:
    try:
        x, y, w, h = (int(float(s)) for s in (v or "").split(","))
    except ValueError:
        return None
    return x, y, w, h


class _DomParser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.dom = Dom(False, None, [], [], [])
        self.table: Table | None = None
        self.cell: list | None = None     # [text parts, data-value]
        self.figure: Figure | None = None
        self.svg_depth = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "html" and a.get("data-probe") == "done":
            self.dom.probed = True
            self.dom.height = int(a.get("data-probe-height") or 0)
        if tag == "table":
            self.table = Table(a.get("id"), (a.get("class") or "").split(), _rect(a.get("data-probe-rect")), [],
                               a.get("data-probe-folded") == "1")
            self.dom.tables.append(self.table)
        elif tag == "tr" and self.table is not None:
            self.table.rows.append([])
        elif tag in ("td", "th") and self.table is not None and self.table.rows:
            self.cell = [[], a.get("data-value")]
        elif tag == "figure":
            self.figure = Figure(a.get("id"), (a.get("class") or "").split(), _rect(a.get("data-probe-rect")), [], [],
                                 a.get("data-probe-folded") == "1")
            self.dom.figures.append(self.figure)
        elif tag == "img":
            self.dom.images.append(a.get("data-probe-img"))
            if self.figure is not None:
                self.figure.images.append(a.get("data-probe-img"))
        elif tag == "svg":
            if self.svg_depth == 0 and self.figure is not None:
                self.figure.svgs.append(a.get("data-probe-svg"))
            self.svg_depth += 1

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None and self.table is not None:
            self.table.rows[-1].append(("".join(self.cell[0]).strip(), self.cell[1]))
            self.cell = None
        elif tag == "table":
            self.table = None
        elif tag == "figure":
            self.figure = None
        elif tag == "svg":
            self.svg_depth = max(0, self.svg_depth - 1)

    def handle_data(self, data):
        if self.cell is not None:
            self.cell[0].append(data)


def parse_dom(text: str) -> Dom:
    """The tables, figures and images of a DOM dump (``render``'s), with the probe's findings."""
    p = _DomParser()
    p.feed(text)
    p.close()
    return p.dom


def _size_ok(v: str | None) -> bool:
    """A probe's "WxH" (or "WxH opaque=F"): both sides above 0."""
    try:
        w, h = (int(x) for x in (v or "").split(" ")[0].split("x"))
    except ValueError:
        return False
    return w > 0 and h > 0


def image_decoded(v: str | None) -> bool:
    """An ``<img>``'s probe value: it has a size and some of its pixels decoded (opaque > 0; an
    image whose pixels the canvas could not read counts on its size)."""
    if not _size_ok(v):
        return False
    opaque = dict(x.split("=", 1) for x in (v or "").split(" ")[1:] if "=" in x).get("opaque", "?")
    return opaque == "?" or float(opaque) > 0


def dom_problems(dom: Dom) -> list[str]:
    """What the DOM says is wrong: the probe did not run; an image that did not decode; a figure
    with nothing drawn (no decoded image, no SVG with content); a table or figure with no
    rendered box (hidden, or swallowed by broken markup) that is not folded in a closed
    ``<details>`` (a folded one is not drawn by design: ``render(..., unfold=True)`` checks it)."""
    out = []
    if not dom.probed:
        return ["the probe did not run (no load event before the DOM was dumped?)"]
    for i, v in enumerate(dom.images):
        if not image_decoded(v):
            out.append(f"image {i}: not decoded ({v or 'not seen by the probe'})")
    for f in dom.figures:
        name = f.id or f"figure {dom.figures.index(f)}"
        if not (any(image_decoded(v) for v in f.images) or any(_size_ok(v) for v in f.svgs)):
            out.append(f"{name}: nothing drawn (images {f.images}, svgs {f.svgs})")
        if not f.folded and (f.rect is None or f.rect[2] <= 0 or f.rect[3] <= 0):
            out.append(f"{name}: no rendered box ({f.rect})")
    for t in dom.tables:
        if not t.folded and (t.rect is None or t.rect[2] <= 0 or t.rect[3] <= 0):
            out.append(f"table {t.id}: no rendered box ({t.rect})")
    return out


# ----------------------------------------------------------------------------- the screenshot


def load_png(path: str | os.PathLike) -> np.ndarray:
    """The PNG's pixels as uint8 RGB (H, W, 3), decoded by Pillow (matplotlib's PNG reader)."""
    from PIL import Image
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def background(px: np.ndarray) -> np.ndarray:
    """The page's background: its most frequent colour."""
    flat = px.reshape(-1, 3)
    keys = (flat[:, 0].astype(np.int64) << 16) | (flat[:, 1].astype(np.int64) << 8) | flat[:, 2]
    vals, counts = np.unique(keys, return_counts=True)
    k = int(vals[np.argmax(counts)])
    return np.array([(k >> 16) & 255, (k >> 8) & 255, k & 255], dtype=np.uint8)


@dataclasses.dataclass
class Ink:
    ink: float           # fraction of pixels that differ from the background
    dark: float          # fraction of dark pixels (text, axes)
    colours: int         # distinct colours (4 bits per channel) among the ink
    pixels: int


def ink(px: np.ndarray, bg: np.ndarray) -> Ink:
    """How much of ``px`` (a region of the screenshot) is drawn on the background ``bg``."""
    n = px.shape[0] * px.shape[1]
    if n == 0:
        return Ink(0.0, 0.0, 0, 0)
    diff = np.abs(px.astype(np.int16) - bg.astype(np.int16)).max(axis=-1) > BACKGROUND_TOL
    dark = (px.max(axis=-1) <= DARK)
    q = (px[diff] >> 4).astype(np.int32)
    colours = len(np.unique((q[:, 0] << 8) | (q[:, 1] << 4) | q[:, 2])) if len(q) else 0
    return Ink(float(diff.mean()), float(dark.mean()), colours, n)


def screenshot_problems(png: str | os.PathLike, dom: Dom | None = None, *, min_ink: float = 0.01,
                        min_colours: int = 8, min_table_text: float = 0.01,
                        min_figure_ink: float = 0.01) -> list[str]:
    """What the screenshot says is wrong: a page with less than ``min_ink`` of its pixels drawn
    (of the content's height when the DOM is given, else of the whole screenshot) or fewer than
    ``min_colours`` colours (a blank page, or one that lost its figures); and, for
    every table and figure the DOM places inside the screenshot (not folded: a folded one is not
    drawn, though Chromium gives it a box), a table whose box holds less than ``min_table_text``
    dark pixels (no text: e.g. no font installed) or a figure whose box holds less than
    ``min_figure_ink`` drawn pixels (an image that decoded to nothing)."""
    px = load_png(png)
    bg = background(px)
    content = px[:max(1, min(dom.height or px.shape[0], px.shape[0]))] if dom is not None else px
    whole = ink(content, bg)
    out = []
    if whole.ink < min_ink:
        out.append(f"blank: {whole.ink:.2%} of the pixels drawn (< {min_ink:.0%}; {content.shape[0]} rows), "
                   f"background {bg.tolist()}")
    if whole.colours < min_colours:
        out.append(f"{whole.colours} distinct colours drawn (< {min_colours})")
    if dom is not None:
        h, w = px.shape[:2]
        for kind, items, floor in (("table", dom.tables, min_table_text), ("figure", dom.figures, min_figure_ink)):
            for i, e in enumerate(items):
                if e.rect is None or e.folded:
                    continue
                x, y, bw, bh = e.rect
                if x < 0 or y < 0 or x + bw > w or y + bh > h or bw <= 0 or bh <= 0:
                    continue          # outside the screenshot: the DOM checks still cover it
                region = ink(px[y:y + bh, x:x + bw], bg)
                got = region.dark if kind == "table" else region.ink
                if got < floor:
                    what = "dark (text) pixels" if kind == "table" else "drawn pixels"
                    out.append(f"{kind} {e.id or i} at {e.rect}: {got:.2%} {what} (< {floor:.0%})")
    return out


def in_screenshot(rect: tuple[int, int, int, int] | None, window: tuple[int, int] = WINDOW) -> bool:
    """Whether a rendered box lies wholly inside the screenshot."""
    if rect is None:
        return False
    x, y, w, h = rect
    return x >= 0 and y >= 0 and x + w <= window[0] and y + h <= window[1] and w > 0 and h > 0
