"""The README's and the docs' commands, run as a new user runs them, so they cannot go stale.

Every ```` ```sh ```` block of ``README.md`` and ``docs/**/*.md`` is executed, block after block
in page order, as one bash script per block (``set -euo pipefail``), from a fresh copy of the
repository in a temporary folder (the files git tracks or would track, as a clone has them; the
built C++ programs linked in, as ``make test`` builds them first).  ```` ```text ```` blocks are
examples that are not run (a bucket, a GPU, a 30-minute install); ``test_every_command_exists``
still holds their ``python3 -m jaxcc.*`` commands and flags to the code.

Long commands run at short durations, by the rewrites in ``SHORTEN`` (each keeps the command's
code path and changes only how long it runs): a training config (or its ``_paper`` / ``_robust``
variant) becomes its family's ``*_smoke`` config in the same workdir, evaluations and emulations
get ``--duration``, and so on.  ``make`` targets other than those in ``MAKE`` fail the test: a new
one needs a rule here.  ``python3``/``python`` at the start of a command is the interpreter
running the tests (so a venv's run checks the venv).

The README's page runs in the fast tier (``make test``); the ``docs/`` pages in ``make
test-full``.  Pages that use network namespaces need root (they skip without it).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md"] + sorted((REPO / "docs").rglob("*.md"))
FENCE = re.compile(r"^```(\w*)\s*$")
# Built outputs a fresh clone gets from `make test`'s datapath/ns3 steps before pytest runs.
BUILT = ("datapath/build", "datapath/tools/build", "datapath/ns3/build")
NEEDS_ROOT = re.compile(r"jaxcc\.emulate|jaxcc\.sim2real|--emulator=(netns|mahimahi)|mahimahi_run|jaxcc\.fidelity --reference=kernel")

# `make TARGET` lines: what each becomes (None: not run).  `make train` is the training command
# itself (the Makefile's recipe is held to it by test_make_train_is_the_main_job), at the smoke
# size; `make datapath` is what `make test` built before pytest; `make test` and `make test-full`
# are what runs this test.
MAKE = {
    "make train": "python3 -m jaxcc.train --config=pareto_staged",
    "make datapath": "test -x datapath/build/jaxcc-sender -a -x datapath/build/jaxcc-receiver",
    "make test": None,
    "make test-full": None,
}


def _smoke_config(cmd: str) -> str:
    """--config=NAME -> --config=NAME_smoke (when configs/NAME_smoke.py exists), in NAME's default
    workdir so that the commands after it find the run where the page says."""
    m = re.search(r"--config=(\w+)", cmd)
    if not m or "--sweep" in cmd:
        return cmd
    name = m.group(1)
    base = re.sub(r"_(staged|paper|smoke|robust)$", "", name)
    smoke = f"{base}_smoke"
    if name == smoke or not (REPO / "configs" / f"{smoke}.py").exists():
        return cmd
    cmd = cmd.replace(m.group(0), f"--config={smoke}")
    if "--workdir" not in cmd:
        cmd += f" --workdir=checkpoints/runs/{name}-0"
    return cmd


def _set_flag(flag: str, value: str):
    def rewrite(cmd: str) -> str:
        pat = re.compile(rf"{flag}[= ]\S+")
        return pat.sub(f"{flag}={value}", cmd) if pat.search(cmd) else f"{cmd} {flag}={value}"
    return rewrite


# (pattern a command must match, rewrite): applied in order, every matching one.
SHORTEN = [
    (r"-m jaxcc\.train\b", _smoke_config),
    # 15 s: the last flow of Pareto's 8-flow link starts at 14 s (a run must reach every flow)
    (r"-m jaxcc\.(evaluate|preference_sweep)\b", _set_flag("--duration", "15")),
    (r"-m jaxcc\.(emulate|sim2real)\b", _set_flag("--duration", "8")),  # real time: one-flow links in the docs
    (r"-m jaxcc\.tcr\b(?!.*--records)", _set_flag("--targets", "4")),
    (r"-m jaxcc\.online\b", _set_flag("--minutes", "0.1")),
    (r"-m jaxcc\.fidelity\b", _set_flag("--cases", "1")),
    (r"-m jaxcc\.bench\b(?!.*--train)", lambda c: c + " --sizes=1,16 --decisions=5 --repeats=1"),
    # 40 links: a multiple of every device count the pages use (1, 8) and of CEM's batch of 5
    (r"-m jaxcc\.bench\b.*--train", lambda c: c + " --sizes=40 --updates=1"),
    (r"^\S*jaxcc-sender\b", _set_flag("--duration", "2")),
    (r"^\S*jaxcc-receiver\b", _set_flag("--duration", "4")),
]


def blocks(page: Path) -> list[tuple[str, int, str]]:
    """(language, first line number, text) of every fenced block of a Markdown page."""
    out, lang, start, buf = [], None, 0, []
    for i, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        m = FENCE.match(line.strip())
        if m and lang is None:
            lang, start, buf = m.group(1) or "", i + 1, []
        elif line.strip() == "```" and lang is not None:
            out.append((lang, start, "\n".join(buf)))
            lang = None
        elif lang is not None:
            buf.append(line)
    assert lang is None, f"{page.name}: a code block opened at line {start - 1} is never closed"
    return out


def commands(text: str) -> list[str]:
    """The commands of a block: continuation lines joined, comments and blank lines dropped."""
    out, cur = [], ""
    for raw in text.splitlines():
        line = raw.strip() if cur else raw.rstrip()
        if line.endswith("\\"):
            cur += line[:-1].rstrip() + " "
            continue
        line = cur + line
        cur = ""
        code = _strip_comment(line).strip()
        if code:
            out.append(code)
    return out


def _strip_comment(line: str) -> str:
    """The line without a trailing ``# comment`` (a ``#`` outside quotes after a blank)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def runnable(cmd: str) -> str:
    """A documented command as the test runs it (``MAKE``, ``SHORTEN``, the interpreter)."""
    background = cmd.endswith("&")
    cmd = cmd.rstrip("&").strip()
    if cmd.startswith("make"):
        assert cmd in MAKE, f"{cmd!r}: a make target the docs test does not know (add it to MAKE)"
        if MAKE[cmd] is None:
            return f"# {cmd}: not run here ({cmd} is what runs this test)"
        cmd = MAKE[cmd]
    for pattern, rewrite in SHORTEN:
        if re.search(pattern, cmd):
            cmd = rewrite(cmd)
    cmd = re.sub(r"^python3? ", shlex.quote(sys.executable) + " ", cmd)
    return cmd + (" &" if background else "")


def page_id(page: Path) -> str:
    return str(page.relative_to(REPO))


def sh_pages() -> list[Path]:
    return [p for p in PAGES if any(lang == "sh" for lang, _, _ in blocks(p))]


@pytest.fixture
def fresh_clone(tmp_path) -> Path:
    """The repository as a clone has it (tracked and not-ignored files), with the built programs."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    root = tmp_path / "jaxcc"
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_file():
            dst = root / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    for rel in BUILT:
        if (REPO / rel).is_dir():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).symlink_to(REPO / rel, target_is_directory=True)
    return root


def run_page(page: Path, root: Path) -> None:
    text = "\n".join(b for lang, _, b in blocks(page) if lang == "sh")
    if NEEDS_ROOT.search(text) and os.geteuid() != 0:
        pytest.skip(f"{page_id(page)} runs emulated links: needs root")
    env = {**os.environ, "WANDB_MODE": "disabled", "JAX_PLATFORMS": "cpu", "JAXCC_PYTHON": sys.executable,
           "PYTHONPATH": str(root)}
    for lang, line, block in blocks(page):
        if lang != "sh":
            continue
        script = "set -euo pipefail\n" + "\n".join(runnable(c) for c in commands(block)) + "\n"
        r = subprocess.run(["bash", "-c", script], cwd=root, env=env, capture_output=True, text=True, timeout=1200)
        where = f"{page_id(page)}, block at line {line}"
        assert r.returncode == 0, f"{where} exited {r.returncode}\n--- script\n{script}--- stdout\n{r.stdout[-3000:]}\n--- stderr\n{r.stderr[-3000:]}"
        assert "Traceback" not in r.stderr, f"{where}: a traceback on stderr\n{r.stderr[-3000:]}"


# ----------------------------------------------------------------------------- the pages


def test_readme_commands_run(fresh_clone):
    run_page(REPO / "README.md", fresh_clone)


@pytest.mark.full
@pytest.mark.parametrize("page", [p for p in sh_pages() if p.name != "README.md" or p.parent != REPO], ids=page_id)
def test_docs_commands_run(page, fresh_clone):
    run_page(page, fresh_clone)


# ----------------------------------------------------------------------------- the rules themselves


def test_make_train_is_the_main_job():
    """`make train` runs the training command the MAKE table stands in for (and installs first)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}  # also when make runs pytest
    r = subprocess.run(["make", "--no-print-directory", "-n", "train", "PY=python3"], cwd=REPO, capture_output=True,
                       text=True, check=True, env=env)
    assert r.stdout.strip().splitlines()[-1] == "python3 -m jaxcc.train --config=pareto_staged", r.stdout


def test_readme_is_short_and_links_resolve():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            assert (page.parent / target).exists(), f"{page_id(page)}: link to {target} does not resolve"


def test_rewrites_keep_the_command():
    """The rewrites shorten; they do not change what runs (hand-written expectations)."""
    py = shlex.quote(sys.executable)
    assert runnable("python3 -m jaxcc.train --config=pareto_staged") == \
        f"{py} -m jaxcc.train --config=pareto_smoke --workdir=checkpoints/runs/pareto_staged-0"
    assert runnable("python -m jaxcc.train --config=mocc --workdir=runs/m") == f"{py} -m jaxcc.train --config=mocc_smoke --workdir=runs/m"
    assert runnable("python3 -m jaxcc.evaluate --suite=pareto --duration=120 --out=x") == \
        f"{py} -m jaxcc.evaluate --suite=pareto --duration=15 --out=x"
    assert runnable("datapath/build/jaxcc-receiver --port=9000 --duration=12 &") == \
        "datapath/build/jaxcc-receiver --port=9000 --duration=4 &"
    assert runnable("python3 -m jaxcc.bench --train=all --devices=1,8 --out=x") == \
        f"{py} -m jaxcc.bench --train=all --devices=1,8 --out=x --sizes=40 --updates=1"
    assert commands("a \\\n  b  # c\n# d\n\ne '#x'") == ["a b", "e '#x'"]
    with pytest.raises(AssertionError, match="make target"):
        runnable("make bench")


JAXCC_COMMAND = re.compile(r"python3? -m (jaxcc(?:\.\w+)+)((?:[ \t]+(?:--?[\w.-]+(?:=\S*)?|[^\s`|;&#]+))*)")


def documented_commands() -> dict[tuple[str, ...], set[str]]:
    """{(module, subcommand...): {--flag, ...}} of every ``python3 -m jaxcc.X`` in the README and
    docs, in any block or inline (a first bare word after the module is its subcommand)."""
    found: dict[tuple[str, ...], set[str]] = {}
    for page in PAGES:
        text = re.sub(r"\\\n\s*", " ", page.read_text(encoding="utf-8"))
        for m in JAXCC_COMMAND.finditer(text):
            words = m.group(2).split()
            key = (m.group(1),) + ((words[0],) if words and re.fullmatch(r"[a-z][a-z_-]*", words[0]) else ())
            flags = {w.split("=")[0] for w in words if w.startswith("--")}
            found.setdefault(key, set()).update(f for f in flags if not f.startswith("--config."))
    return found


def test_every_command_exists():
    """Every documented ``python3 -m jaxcc.X`` is a module with a ``--help`` that names each
    documented flag (blocks that are not run included)."""
    commands_found = documented_commands()
    assert ("jaxcc.evaluate",) in commands_found and ("jaxcc.plots", "figures") in commands_found
    for key, flags in sorted(commands_found.items()):
        r = subprocess.run([sys.executable, "-m", *key, "--help"], cwd=REPO, capture_output=True, text=True,
                           timeout=120, env={**os.environ, "JAX_PLATFORMS": "cpu"})
        shown = "python -m " + " ".join(key)
        text = r.stdout + r.stderr
        # absl's --help exits 1 after printing the flags; argparse's exits 0
        assert r.returncode in (0, 1) and "Traceback" not in text and "--" in text, \
            f"{shown} --help exited {r.returncode}: {text[-500:]}"
        for flag in sorted(flags):
            bare = flag[2:]
            names = {bare, bare.replace("-", "_"), bare.replace("_", "-")}
            assert any(re.search(r"--(\[no\])?" + re.escape(n) + r"\b", text) for n in names), \
                f"{shown}: no flag {flag} in --help"
