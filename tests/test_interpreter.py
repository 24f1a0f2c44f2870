"""Everything that starts Python starts the interpreter of its caller, never one found on PATH.

* Python code (``jaxcc/``, ``tests/``, ``launch/*.py``) starts ``sys.executable``.
* Shell scripts (``launch/``, ``datapath/``) start ``$JAXCC_PYTHON`` (default ``python3``), named
  in their header comment; a Python caller of a script sets ``JAXCC_PYTHON=sys.executable`` in
  the child's environment (``jaxcc.online.network``, the tests).
* A wandb agent sweep (``launch/*.yaml`` with a ``program``) runs its ``command`` through
  ``$JAXCC_PYTHON``: wandb's own ``${interpreter}`` is always ``python`` from PATH.

So a virtual environment (``make PY=.venv/bin/python test``) runs every part in itself. The
static checks parse the scripts (shell words, command substitutions, ``bash -c`` strings; heredoc
bodies and comments are not code) and the Python sources (process-starting calls); the
behavioural ones run the launch scripts' cheapest paths with ``JAXCC_PYTHON`` a wrapper that logs
its calls, and a ``python``/``python3`` first on PATH that fails loudly.
"""
from __future__ import annotations

import ast
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
SCRIPT_DIRS = ("launch", "datapath")
PY_SOURCE_DIRS = ("jaxcc", "tests", "launch")
SKIP_DIRS = {"build", "CMakeFiles", "__pycache__", "third_party"}
DEFAULT = "${JAXCC_PYTHON:-python3}"

# ----------------------------------------------------------------------------- shell scripts

PY_WORD = re.compile(r"^(?:\S*/)?python[0-9.]*$")           # python, python3, /usr/bin/python3.11
PY_IN_TEXT = re.compile(r"(?:^|[\s;&|(`])(?:\S*/)?python[0-9.]*(?=[\s;&|)`]|$)")
INTERP_ARGS = {"-m", "-c", "-"}  # what follows a Python interpreter here (not -B, -S: cmake, ...)
VAR_WORD = re.compile(r"^\$(?:\{([A-Za-z_]\w*)(:-[^}]*)?\}|([A-Za-z_]\w*))$")
ASSIGN = re.compile(r"^([A-Za-z_]\w*)=(.*)$", re.S)
HEREDOC = re.compile(r"(?<!<)<<(?!<)(-?)\s*(['\"]?)([A-Za-z_]\w*)\2")


def _without_heredoc_bodies(text: str) -> str:
    """The script with the bodies of its here-documents left out (their text is input, not code)."""
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if line.lstrip().startswith("#"):
            continue
        for m in HEREDOC.finditer(line):
            word, tabs = m.group(3), m.group(1) == "-"
            while i < len(lines) and (lines[i].lstrip("\t") if tabs else lines[i]) != word:
                i += 1
            i += 1
    return "\n".join(out)


def _words(code: str) -> list[str]:
    """Shell words of code (quotes removed, comments dropped). ``#`` inside ``${...}`` and ``$#``
    are parameter expansions, not comments."""
    code = re.sub(r"\$\{[^}]*\}", lambda m: m.group(0).replace("#", "%"), code).replace("$#", "$NARGS")
    lx = shlex.shlex(code, posix=True, punctuation_chars=True)
    lx.whitespace_split = True
    lx.commenters = "#"
    return list(lx)


def _substitutions(word: str) -> list[str]:
    """The commands inside ``$(...)`` and backquotes in one word (which shlex keeps whole when
    they sit inside double quotes)."""
    out, i = [], word.find("$(")
    while i >= 0:
        depth, j = 0, i + 1
        while j < len(word):
            depth += {"(": 1, ")": -1}.get(word[j], 0)
            if depth == 0:
                break
            j += 1
        out.append(word[i + 2:j])
        i = word.find("$(", j)
    out += re.findall(r"`([^`]*)`", word)
    return out


def python_starts(code: str) -> tuple[list[str], set[str], dict[str, list[str]]]:
    """(python words run as commands, variables run as an interpreter, every variable's
    assignments) in shell code, through command substitutions and ``bash -c``/``sh -c`` strings."""
    bare, interp, assigned = [], set(), {}

    def walk(words: list[str]) -> None:
        for k, w in enumerate(words):
            nxt = words[k + 1] if k + 1 < len(words) else ""
            if PY_WORD.match(w):
                bare.append(w)
            m = VAR_WORD.match(w)
            if m and (nxt in INTERP_ARGS or nxt.endswith(".py")):
                interp.add(w)
            m = ASSIGN.match(w)
            if m:
                assigned.setdefault(m.group(1), []).append(m.group(2))
            if w in ("bash", "sh") and nxt == "-c" and k + 2 < len(words):
                walk(_words(words[k + 2]))
            for sub in _substitutions(w):
                walk(_words(sub))

    walk(_words(_without_heredoc_bodies(code)))
    return bare, interp, assigned


def _header(text: str) -> str:
    """The comment block a script starts with (after its #! line)."""
    out = []
    for line in text.splitlines()[1:]:
        if not line.startswith("#"):
            break
        out.append(line)
    return "\n".join(out)


def script_problems(text: str) -> list[str]:
    """Why a shell script does not start Python through ``$JAXCC_PYTHON`` (empty: it does, or it
    starts no Python)."""
    bare, interp, assigned = python_starts(text)
    problems = [f"starts {w!r} from PATH: use \"$PY\" with PY=\"{DEFAULT}\"" for w in bare]
    for w in sorted(interp):
        m = VAR_WORD.match(w)
        name, default = m.group(1) or m.group(3), m.group(2)
        if name == "JAXCC_PYTHON":
            if default != ":-python3":
                problems.append(f"{w}: JAXCC_PYTHON needs its default, {DEFAULT}")
            continue
        values = assigned.get(name, [])
        if not any(DEFAULT in v for v in values):
            problems.append(f"{w} runs Python but {name} is not set from {DEFAULT} (set to: {values})")
        for v in values:  # every other assignment only adjusts it (e.g. a relative path made absolute)
            if DEFAULT not in v and not re.search(rf"\$\{{?{name}\b", v):
                problems.append(f"{name}={v}: {name} is set from something other than JAXCC_PYTHON")
            elif "JAXCC_PYTHON" in v.replace(DEFAULT, ""):
                problems.append(f"{name}={v}: JAXCC_PYTHON without its default {DEFAULT}")
    if (bare or interp) and "JAXCC_PYTHON" not in _header(text):
        problems.append("starts Python but its header comment does not name JAXCC_PYTHON")
    return problems


def _shell_scripts() -> list[Path]:
    out = []
    for top in SCRIPT_DIRS:
        for dirpath, dirnames, files in os.walk(REPO / top):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith((".", "bazel-")))
            for f in sorted(files):
                p = Path(dirpath, f)
                if p.suffix == ".sh" or (p.suffix == "" and re.match(rb"#!\S*(/|env )(ba)?sh\b", p.read_bytes()[:64])):
                    out.append(p)
    return out


def test_the_scan_finds_the_scripts():
    found = {str(p.relative_to(REPO)) for p in _shell_scripts()}
    assert {"launch/multihost_local.sh", "launch/mahimahi_run.sh", "launch/train_gpu.sh",
            "launch/train_tpu_pod.sh", "launch/emulate_suite.sh"} <= found, found
    assert {"datapath/tests/cli_test.sh", "datapath/ns3/limits.sh"} <= found, found


@pytest.mark.parametrize("path", _shell_scripts(), ids=lambda p: str(p.relative_to(REPO)))
def test_shell_script_starts_jaxcc_python(path):
    assert script_problems(path.read_text()) == []


def _hdr(body: str, doc: str = "# JAXCC_PYTHON: the interpreter (default python3)\n") -> str:
    return "#!/usr/bin/env bash\n" + doc + "set -euo pipefail\n" + body


GOOD = f'PY="{DEFAULT}"\ncase "$PY" in */*) [[ "$PY" == /* ]] || PY="$PWD/$PY" ;; esac\n'
RULE_CASES = {  # name -> (script text, breaks the rule)
    # a variable of the script's own (PYTHON): PATH's python whenever it is unset
    "own_variable": (_hdr('PY="${PYTHON:-python}"\n'
                                    'PORT="$("$PY" -c \'import socket; print(0)\')"\n'
                                    '"$PY" -m jaxcc.train --config="$CONFIG" &\n'), True),
    "bare_python": (_hdr("  python -c 'import jax; print(jax.devices())'\n"
                              'exec python -m jaxcc.train "${args[@]}" "$@"\n'), True),
    "own_variable_python3": (_hdr('PY=${PYTHON:-python3}\n(cd "$REPO" && "$PY" -m jaxcc.emulate --mahimahi-plan="$OUT")\n'),
                        True),
    "substitution": (_hdr('x=$(python3 -c "print(1)")\n'), True),
    "quoted_substitution": (_hdr('if [ "$(python3 -m jaxcc.x)" = 1 ]; then :; fi\n'), True),
    "bash_c": (_hdr("bash -c 'python3 -m jaxcc.train'\n"), True),
    "heredoc": (_hdr('python3 - "$T" <<\'PY\' || exit 1\nimport json\nPY\n'), True),
    "absolute": (_hdr("/usr/bin/python3 -m jaxcc.train\n"), True),
    "env": (_hdr("/usr/bin/env python3 -m jaxcc.train\n"), True),
    "other_default": (_hdr('PY="${JAXCC_PYTHON:-python}"\n"$PY" -m jaxcc.train\n'), True),
    "reassigned": (_hdr(GOOD + 'PY=python3\n"$PY" -m jaxcc.train\n'), True),
    "undocumented": (_hdr(GOOD + '"$PY" -m jaxcc.train\n', doc="# trains\n"), True),
    "direct_no_default": (_hdr('"$JAXCC_PYTHON" -m jaxcc.train\n'), True),
    # what is allowed
    "good": (_hdr(GOOD + 'PORT="$("$PY" -c \'import socket\')"\nexec "$PY" -m jaxcc.train "$@"\n'), False),
    "direct": (_hdr(f'"{DEFAULT}" -m jaxcc.train\n'), False),
    "words_in_strings_and_comments": (_hdr('echo "or use: python -m jaxcc.emulate" >&2  # python3 -m x\n'
                                           'if [ $# -lt 4 ]; then n=${#a[@]}; c="${c#policy:}"; fi\n'
                                           "cat <<'EOF'\npython3 -m jaxcc.train\nEOF\n"), False),
    "no_python": (_hdr("cmake --build build\n", doc="# builds\n"), False),
}


@pytest.mark.parametrize("name", sorted(RULE_CASES))
def test_the_shell_rule_on_known_forms(name):
    text, breaks = RULE_CASES[name]
    assert bool(script_problems(text)) == breaks, script_problems(text)


# ----------------------------------------------------------------------------- wandb sweep files


def sweep_problems(spec: dict) -> list[str]:
    """Why a wandb agent sweep (a sweep file with a ``program``) would not run $JAXCC_PYTHON."""
    if "program" not in spec and "command" not in spec:
        return []  # not a wandb agent sweep (a jaxcc.sweep file: members trained in one program)
    cmd = [str(c) for c in spec.get("command") or []]
    if not cmd:
        return ["no command: wandb's default runs ${interpreter}, PATH's python"]
    problems = [f"{c!r} in command: PATH's python" for c in cmd if c == "${interpreter}" or PY_WORD.match(c)]
    shell = next((cmd[k + 2] for k in range(len(cmd) - 2) if cmd[k] in ("bash", "sh") and cmd[k + 1] == "-c"), None)
    if shell is None:
        problems.append(f"command does not run {DEFAULT} (through bash -c)")
    else:
        bare, interp, _ = python_starts(shell)
        problems += [f"bash -c starts {w!r}" for w in bare]
        if interp != {DEFAULT}:
            problems.append(f"bash -c runs {sorted(interp)}, not {DEFAULT}")
    return problems


@pytest.mark.parametrize("path", sorted((REPO / "launch").glob("*.yaml")), ids=lambda p: p.name)
def test_sweep_file_runs_jaxcc_python(path):
    assert sweep_problems(yaml.safe_load(path.read_text())) == []


def test_the_sweep_rule_on_known_forms():
    assert sweep_problems({"program": "jaxcc/train.py"})  # wandb's default command
    assert sweep_problems({"program": "p", "command": ["${env}", "python", "-m", "jaxcc.train", "${args}"]})
    assert sweep_problems({"program": "p", "command": ["${env}", "${interpreter}", "${program}", "${args}"]})
    assert not sweep_problems({"members": [{"config.seed": 0}]})
    assert not sweep_problems({"program": "p", "command": ["${env}", "bash", "-c",
                                                           f'exec "{DEFAULT}" -m jaxcc.train "$@"', "x"]})


# ----------------------------------------------------------------------------- Python sources

STARTERS = {("subprocess", n) for n in ("run", "Popen", "call", "check_call", "check_output", "getoutput",
                                         "getstatusoutput")}
STARTERS |= {("os", n) for n in ("system", "popen", "execv", "execve", "execvp", "execvpe", "execl", "execlp",
                                 "execle", "execlpe", "spawnv", "spawnvp", "spawnl", "spawnlp", "posix_spawn",
                                 "posix_spawnp")}
STARTERS |= {("asyncio", "create_subprocess_exec"), ("asyncio", "create_subprocess_shell"), ("shutil", "which")}


def _starter(call: ast.Call) -> str | None:
    f = call.func
    if isinstance(f, ast.Attribute):
        base = f.value.attr if isinstance(f.value, ast.Attribute) else getattr(f.value, "id", None)  # x.subprocess.run
        if (base, f.attr) in STARTERS:
            return f"{base}.{f.attr}"
    if isinstance(f, ast.Name) and f.id in {n for _, n in STARTERS if n[0].isupper()}:
        return f.id
    return None


def _text(node: ast.AST) -> str:
    """The constant text of a str constant or f-string (formatted parts left out)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return " ".join(_text(v) for v in node.values)
    return ""


def _command_problem(node: ast.AST, lists: dict[str, list[ast.AST]], seen: frozenset = frozenset()) -> str | None:
    """Why a command (a list of words, or a shell string) starts PATH's Python."""
    if isinstance(node, ast.BinOp):  # [...] + [...]
        return _command_problem(node.left, lists, seen)
    if isinstance(node, ast.Name):
        if node.id in seen:  # cmd = cmd + [...]
            return None
        return next(filter(None, (_command_problem(v, lists, seen | {node.id}) for v in lists.get(node.id, []))), None)
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
        words = [_text(e) for e in node.elts]
        if PY_WORD.match(words[0]):
            return f"first word {words[0]!r}"
        if words[0] in ("bash", "sh", "/bin/bash", "/bin/sh") and "-c" in words[1:-1]:
            return _command_problem(node.elts[words.index("-c", 1) + 1], lists, seen)
        return None
    if PY_IN_TEXT.search(_text(node)):
        return f"shell text {_text(node)!r}"
    return None


def python_source_problems(source: str) -> list[str]:
    """Process starts in Python source whose program is a ``python``/``python3`` from PATH."""
    tree = ast.parse(source)
    problems = []
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef))]
    for scope in scopes:
        lists: dict[str, list[ast.AST]] = {}  # simple assignments in this scope: cmd = [...]
        for n in ast.walk(scope):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    if isinstance(t, ast.Name):
                        lists.setdefault(t.id, []).append(n.value)
        for n in ast.walk(scope):
            if isinstance(n, ast.Call) and n.args and (what := _starter(n)):
                if what == "shutil.which":
                    why = f"looks up {_text(n.args[0])!r}" if PY_WORD.match(_text(n.args[0])) else None
                elif what.startswith("os.exec") or what.startswith("os.spawn") or what.startswith("os.posix"):
                    arg = n.args[1] if what.startswith("os.spawn") else n.args[0]
                    why = f"program {_text(arg)!r}" if PY_WORD.match(_text(arg)) else None
                else:
                    why = _command_problem(n.args[0], lists)
                if why:
                    problems.append(f"line {n.lineno}: {what}: {why}")
    return sorted(set(problems))


def _python_sources() -> list[Path]:
    out = []
    for top in PY_SOURCE_DIRS:
        for dirpath, dirnames, files in os.walk(REPO / top):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
            out += [Path(dirpath, f) for f in sorted(files) if f.endswith(".py")]
    return out


def test_python_code_starts_sys_executable():
    """No process start in jaxcc/, tests/ or launch/ runs a ``python``/``python3`` from PATH."""
    problems = {str(p.relative_to(REPO)): python_source_problems(p.read_text()) for p in _python_sources()}
    assert {k: v for k, v in problems.items() if v} == {}


PY_CASES = {  # name -> (source, breaks the rule)
    "literal_list": ('import subprocess\nsubprocess.run(["python3", "-m", "jaxcc.train"])\n', True),
    "python": ('import subprocess\nsubprocess.Popen(("python", "-c", "1"), env={})\n', True),
    "via_name": ('import subprocess\ndef f():\n    cmd = ["python", "-m", "x"]\n    subprocess.run(cmd)\n', True),
    "concatenated": ('import subprocess\nsubprocess.run(["python3", "-m", "x"] + ["--y"])\n', True),
    "shell": ('import subprocess\nsubprocess.run("python -m jaxcc.evaluate --x", shell=True)\n', True),
    "bash_c": ('import subprocess\nsubprocess.run(["bash", "-c", f"while true; do python3 -m x; done"])\n', True),
    "execvp": ('import os\nos.execvp("python3", ["python3", "-m", "x"])\n', True),
    "which": ('import shutil\nshutil.which("python3")\n', True),
    "absolute": ('import subprocess\nsubprocess.check_output(["/usr/bin/python3", "-c", "1"])\n', True),
    "sys_executable": ('import subprocess, sys\nsubprocess.run([sys.executable, "-m", "jaxcc.train"])\n', False),
    "help_text": ('import argparse\nargparse.ArgumentParser(prog="python -m jaxcc.plots")\n'
                  'cmd = ["python", "-m", "x"]  # shown to the user, never run\n', False),
    "script": ('import subprocess\nsubprocess.run(["bash", "launch/multihost_local.sh"], env={"JAXCC_PYTHON": "x"})\n',
               False),
}


@pytest.mark.parametrize("name", sorted(PY_CASES))
def test_the_python_rule_on_known_forms(name):
    source, breaks = PY_CASES[name]
    assert bool(python_source_problems(source)) == breaks, python_source_problems(source)


def _launch_script_names() -> set[str]:
    return {p.name for p in (REPO / "launch").glob("*.sh")}


def test_python_callers_of_launch_scripts_set_jaxcc_python():
    """A Python file whose code (not its docstrings) names a launch script also sets
    ``JAXCC_PYTHON`` for it."""
    names = _launch_script_names()
    missing = []
    for p in _python_sources():
        tree = ast.parse(p.read_text())
        docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
        consts = [n.value for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]
        consts += [n.arg for n in ast.walk(tree) if isinstance(n, ast.keyword) and n.arg]  # dict(os.environ, K=v)
        if any(c in names or any(c.endswith("/" + s) for s in names) for c in consts) and "JAXCC_PYTHON" not in consts:
            missing.append(str(p.relative_to(REPO)))
    assert missing == []


def test_online_net_runs_its_children_in_this_interpreter(tmp_path, monkeypatch):
    """``network.start``: the simulator and netns children are ``sys.executable``, the Mahimahi
    one is launch/mahimahi_run.sh with ``JAXCC_PYTHON=sys.executable``."""
    from jaxcc.online import network
    from jaxcc.emulation import spec as es

    started = []

    class Recorder:
        def __init__(self, cmd, **kw):
            started.append((cmd, kw.get("env") or {}))

    monkeypatch.setattr(network.subprocess, "Popen", Recorder)
    monkeypatch.setattr(network, "mahimahi_missing", lambda: None)
    policy = tmp_path / "p.safetensors"
    policy.write_bytes(b"")
    for emulator in ("sim", "netns", "mahimahi"):
        network.start(emulator, es.load(name="pareto/fixed50"), minutes=0.1, policy_path=str(policy),
                         learner=None, out_dir=tmp_path / emulator)
    assert [c[0] for c, _ in started] == [sys.executable, sys.executable, "bash"]
    cmd, env = started[2]
    assert cmd[1].endswith("launch/mahimahi_run.sh") and env.get("JAXCC_PYTHON") == sys.executable


# ----------------------------------------------------------------------------- the scripts, run


def _interpreters(d: Path) -> tuple[Path, Path, Path]:
    """(a folder of `python` and `python3` stand-ins that fail with status 97, leaving a mark, to
    put first on PATH; a wrapper for JAXCC_PYTHON that logs its arguments, one call a line, and
    runs this interpreter; the log)."""
    d.mkdir(parents=True, exist_ok=True)
    fake = d / "path-python"
    fake.mkdir()
    mark, log = d / "path-python-ran", d / "jaxcc-python.log"
    for name in ("python", "python3"):
        (fake / name).write_text("#!/bin/sh\necho \"PATH's $0 ran: $*\" >&2\n"
                                 f"echo \"$0 $*\" >>{shlex.quote(str(mark))}\nexit 97\n")
        (fake / name).chmod(0o755)
    wrapper = d / "py"
    wrapper.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$*\" >>{shlex.quote(str(log))}\n"
                       f"exec {shlex.quote(sys.executable)} \"$@\"\n")
    wrapper.chmod(0o755)
    return fake, wrapper, log


def _calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


LAUNCHES = {  # script -> (arguments, environment, Python calls expected: their leading words)
    "multihost_local.sh": (["nope", "1", "1", "w"], {}, ["-c import socket", "-m jaxcc.train --config=nope"]),
    "train_gpu.sh": ([], {"CONFIG": "nope"}, ["-c import jax", "-m jaxcc.train --config=nope"]),
    "train_tpu_pod.sh": ([], {"CONFIG": "nope", "WORKDIR": "w"}, ["-m jaxcc.train --distributed --config=nope"]),
}


@pytest.mark.parametrize("script", sorted(LAUNCHES))
def test_launch_script_runs_jaxcc_python(tmp_path, script):
    """The script's Python calls (up to jaxcc.train refusing the config name ``nope``, status 2)
    all go to JAXCC_PYTHON, given relative to the caller's directory, and none to PATH's python3.
    About 1-3 s each."""
    args, extra, expected = LAUNCHES[script]
    fake, wrapper, log = _interpreters(tmp_path)
    env = dict(os.environ, PATH=f"{fake}{os.pathsep}{os.environ['PATH']}", JAXCC_PYTHON="./py",
               JAX_PLATFORMS="cpu", WANDB_MODE="disabled", **extra)
    r = subprocess.run(["bash", str(REPO / "launch" / script), *args], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=120)
    assert not (tmp_path / "path-python-ran").exists(), r.stderr
    assert r.returncode == 2 and "unknown config 'nope'" in r.stderr, (r.returncode, r.stderr[-2000:])
    calls = _calls(log)
    assert len(calls) == len(expected) and all(c.startswith(e) for c, e in zip(calls, expected)), calls


def test_jaxcc_python_unset_is_python3_from_path(tmp_path):
    """Without JAXCC_PYTHON the scripts run python3 from PATH (here the failing stand-in)."""
    fake, _, _ = _interpreters(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "JAXCC_PYTHON"}
    env["PATH"] = f"{fake}{os.pathsep}{os.environ['PATH']}"
    r = subprocess.run(["bash", str(REPO / "launch" / "multihost_local.sh"), "nope", "1", "1", "w"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 97 and "PATH's" in r.stderr and "python3 ran: -c" in r.stderr, r.stderr


from test_mahimahi import MM_USER, SCRIPT, _fake_skip_reason, fake_mm, shared_dir  # noqa: E402,F401  fixtures


@pytest.mark.skipif(_fake_skip_reason() is not None, reason=str(_fake_skip_reason()))
def test_mahimahi_dry_run_runs_jaxcc_python(shared_dir, fake_mm):  # noqa: F811
    """launch/mahimahi_run.sh --dry-run for two controllers (Mahimahi faked; test_mahimahi.fake_mm):
    the list's plans and each one-controller run's plan (the script again, as a child) all go to
    JAXCC_PYTHON, none to PATH's python3. About 10 s."""
    b, ns, dp = fake_mm
    for name in ("jaxcc-sender", "jaxcc-receiver"):  # a dry run only checks that they can be run
        if not (dp / name).exists():
            (dp / name).write_text("#!/bin/sh\nexit 0\n")
            (dp / name).chmod(0o755)
    fake, wrapper, log = _interpreters(shared_dir / "py")
    spec = shared_dir / "s.json"
    spec.write_text('{"name": "mm_py", "duration_s": 2.0, "link": {"bandwidth_mbps": 12, "buffer_bytes": 375000},'
                    ' "flows": [{"rtt_ms": 40.0, "controller": "bbr"}]}')
    out = shared_dir / "out"
    env = dict(os.environ, PATH=os.pathsep.join([str(fake), str(b), os.environ["PATH"]]), JAXCC_PYTHON="py/py",
               JAXCC_DATAPATH_BUILD=str(dp))
    r = subprocess.run(["ip", "netns", "exec", ns, shutil.which("bash") or "/bin/bash", str(SCRIPT),
                        f"--user={MM_USER}", f"--scenario-file={spec}", f"--out={out}", "--controller=bbr,fixed:6",
                        "--dry-run"], cwd=shared_dir, env=env, capture_output=True, text=True, timeout=180)
    assert not (shared_dir / "py" / "path-python-ran").exists(), r.stderr
    assert r.returncode == 0, (r.stdout, r.stderr[-3000:])
    plans = [c for c in _calls(log) if c.startswith("-m jaxcc.emulate --mahimahi-plan=")]
    assert len(plans) == len(_calls(log)) == 4, _calls(log)
    for k in (0, 1):  # planned by the list, then by its own run
        assert sum(c.startswith(f"-m jaxcc.emulate --mahimahi-plan={out}/runs/{k} ") for c in plans) == 2, plans
