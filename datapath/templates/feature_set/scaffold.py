#!/usr/bin/env python3
"""Adds a feature set NAME to a jaxcc tree from this template (the steps: docs/feature-sets.md).

    python3 datapath/templates/feature_set/scaffold.py NAME [--root=DIR]

It does the three mechanical steps, and nothing else:

1. writes ``jaxcc/senders/NAME.py`` from ``sender.py.tmpl`` (the Python sender, the reference);
2. inserts ``section.cc.tmpl`` (the C++ twin, class ``<Name>Features``) into
   ``datapath/src/mi_features.cc`` above the line ``// New feature sets: their section above
   this line`` and its row into the table ``kFeatureSets`` (the C++ side's one registration);
3. adds NAME to ``FEATURE_SETS`` in ``jaxcc/senders/__init__.py`` (the Python side's one).

Both halves then compute the template's two example features; replace them with yours in both,
write the vectors (``python3 -m jaxcc.parity_vectors --features=NAME --out=DIR``) and check the
C++ build against them (``datapath/build/jaxcc-features-check DIR/features_NAME.json``).
Every file is checked before any is written; a refusal is one line on stderr, exit status 2.
Standard library only, so it runs before jaxcc is installed.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
SECTION_MARKER = "// New feature sets: their section above this line"
ROW_MARKER = "    // New feature sets: their row above this line."
SETS_START = "FEATURE_SETS = {"
NAME_RE = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")


def class_name(name: str) -> str:
    """``toy_v1`` -> ``ToyV1Features``."""
    return "".join(part.capitalize() for part in name.split("_")) + "Features"


def render(template: str, name: str) -> str:
    return template.replace("{{name}}", name).replace("{{Class}}", class_name(name))


def plan(root: pathlib.Path, name: str) -> dict[pathlib.Path, str]:
    """The new contents of every file the scaffold writes, {path: text}; raises ValueError
    (one line) when the name or the tree does not fit."""
    if not NAME_RE.fullmatch(name):
        raise ValueError(f"NAME: {name!r} must be lower-case letters, digits and single underscores, "
                         "starting with a letter (e.g. toy_v1)")
    sender_py = root / "jaxcc" / "senders" / f"{name}.py"
    features_cc = root / "datapath" / "src" / "mi_features.cc"
    registry_py = root / "jaxcc" / "senders" / "__init__.py"
    for path in (features_cc, registry_py):
        if not path.is_file():
            raise ValueError(f"--root: {path} does not exist (give the repository's root)")
    if sender_py.exists():
        raise ValueError(f"NAME: {sender_py} already exists")

    cc = features_cc.read_text()
    if f'{{"{name}",' in cc:
        raise ValueError(f"NAME: {name!r} is already in kFeatureSets ({features_cc})")
    for marker in (SECTION_MARKER, ROW_MARKER):
        if cc.count(marker) != 1:
            raise ValueError(f"{features_cc}: the line {marker.strip()!r} must appear once")
    cls = class_name(name)
    at = cc.index(SECTION_MARKER)
    cc = cc[:at] + render((HERE / "section.cc.tmpl").read_text(), name) + cc[at:]
    at = cc.index(ROW_MARKER)
    cc = cc[:at] + f'    {{"{name}", Make<{cls}>}},\n' + cc[at:]

    reg = registry_py.read_text()
    start = reg.find(SETS_START)
    end = reg.find(")}", start)
    if start < 0 or end < 0 or f'"{name}"' in reg[start:end]:
        raise ValueError(f"{registry_py}: no FEATURE_SETS = {{name: ... for name in (...)}} to add {name!r} to, "
                         "or it is there already")
    reg = reg[:end] + f', "{name}"' + reg[end:]
    return {sender_py: render((HERE / "sender.py.tmpl").read_text(), name), features_cc: cc, registry_py: reg}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("name", help="the feature set's name, as a policy file's features.name gives it (e.g. toy_v1)")
    ap.add_argument("--root", default=str(HERE.parents[2]), help="the jaxcc tree to add it to (default: this one)")
    args = ap.parse_args(argv)
    try:
        files = plan(pathlib.Path(args.root), args.name)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for path, text in files.items():
        path.write_text(text)
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
