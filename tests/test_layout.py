"""The package's layers (docs/layout.md): every import points down or sideways, never up, and
no two modules import each other, directly or around a loop.

The levels are written here by hand, from the design; the imports are read from the code
(``ast``, function-local imports included), so a new upward import or cycle fails this test.
"""

import ast
import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Bottom to top.  A module may import modules of its own level or below.
LEVELS = {
    1: ("jaxcc.sim", "jaxcc.evaluation.metrics", "jaxcc.evaluation.coexist", "jaxcc.controllers", "jaxcc.training.checkpointing", "jaxcc.plots",
        "jaxcc.jax_cache", "jaxcc.huge_pages", "jaxcc.training.configs", "jaxcc.report", "jaxcc.params", "jaxcc.units", "jaxcc.cli",
        "jaxcc.shipped"),
    2: ("jaxcc.baselines", "jaxcc.envs", "jaxcc.scenarios", "jaxcc.evaluation.bars", "jaxcc.evaluation.seeds"),
    3: ("jaxcc.policyfile",),
    4: ("jaxcc.senders", "jaxcc.agents"),
    5: ("jaxcc.evaluation", "jaxcc.training.export", "jaxcc.bench", "jaxcc.emulation", "jaxcc.parity_vectors"),
    6: ("jaxcc.training", "jaxcc.fidelity", "jaxcc.online"),
    # the commands (python -m jaxcc.NAME): each is the command line of code in the packages
    7: ("jaxcc.train", "jaxcc.sweep", "jaxcc.evaluate", "jaxcc.export", "jaxcc.emulate", "jaxcc.seeds", "jaxcc.tcr",
        "jaxcc.goal_reach", "jaxcc.preference_sweep", "jaxcc.sim2real", "jaxcc.build_datapath", "jaxcc.__main__"),
}


def modules() -> dict[str, str]:
    """jaxcc module name -> file, for every Python file of the package."""
    out = {}
    for root, _, files in os.walk(os.path.join(REPO, "jaxcc")):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(root, f)
                name = os.path.relpath(path, REPO)[:-3].replace(os.sep, ".")
                out[name.removesuffix(".__init__")] = path
    return out


def imports(path: str, known: dict[str, str]) -> set[str]:
    """The jaxcc modules a file imports (``from a import b`` counts ``a.b`` when that is a module)."""
    out = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = {f"{node.module}.{a.name}" for a in node.names}
            if not subs <= set(known):  # ``from pkg import sub1, sub2`` imports the submodules, not pkg's names
                out.add(node.module)
            out |= subs
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            raise AssertionError(f"{path}:{node.lineno}: relative import; jaxcc imports by absolute name")
    return {m for m in out if m in known and m != "jaxcc"}


def level(module: str) -> int:
    for lv, prefixes in LEVELS.items():
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return lv
    raise AssertionError(f"{module}: not placed in tests/test_layout.py LEVELS; add it to its level")


def graph() -> dict[str, set[str]]:
    known = modules()
    return {m: imports(p, known) - {m} for m, p in known.items() if m != "jaxcc"}


def test_every_module_has_a_level():
    for m in graph():
        level(m)


def test_nothing_imports_upward():
    up = sorted(f"{m} (level {level(m)}) imports {d} (level {level(d)})"
                for m, deps in graph().items() for d in deps
                # a package's __init__ may import its own modules
                if level(d) > level(m) and not d.startswith(m + "."))
    assert not up, "\n".join(up)


# An agent module holds its algorithm only (docs/layout.md): beyond the level rule, it never
# reaches the simulator's senders, the scenarios or the bars (evaluation's business).
NOT_FOR_AGENTS = ("jaxcc.senders", "jaxcc.scenarios", "jaxcc.evaluation.bars")


def test_agents_hold_algorithms_only():
    bad = sorted(f"{m} imports {d}" for m, deps in graph().items() if m.startswith("jaxcc.agents")
                 for d in deps if any(d == x or d.startswith(x + ".") for x in NOT_FOR_AGENTS))
    assert not bad, "\n".join(bad)


def find_cycle(g: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``g`` (a list of modules, first == last), or [] when there is none.
    A package importing its own submodules is not a cycle with them."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in sorted(g.get(m, ())):
            if d.startswith(m + ".") or m.startswith(d + "."):
                continue
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state:
                c = visit(d)
                if c:
                    return c
        stack.pop()
        state[m] = 2
        return []

    for m in sorted(g):
        if m not in state:
            c = visit(m)
            if c:
                return c
    return []


def test_no_import_cycles():
    c = find_cycle(graph())
    assert not c, " -> ".join(c)


def test_the_checks_can_fail():
    """The cycle finder sees a loop of three; the level rule sees an upward import."""
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert level("jaxcc.sim.runner") < level("jaxcc.senders.pareto_v1") < level("jaxcc.evaluate")


def test_imports_sees_both_forms(tmp_path):
    """``import a.b`` and ``from a import b`` both count, inside functions too; names that are
    not modules (``from jaxcc.sim.core import MSS``) do not."""
    p = tmp_path / "m.py"
    p.write_text("from jaxcc import evaluate as ev\nfrom jaxcc.sim.core import MSS\n\ndef f():\n    import jaxcc.train\n")
    assert imports(str(p), modules()) == {"jaxcc.evaluate", "jaxcc.train", "jaxcc.sim.core"}


def readme_layout_rows() -> list[tuple[str, str]]:
    """(level, path cell) of each row of docs/layout.md's table."""
    text = open(os.path.join(REPO, "docs", "layout.md"), encoding="utf-8").read()
    table = text.split("# Layout", 1)[1].split("\n## ", 1)[0]
    rows = [ln.split("|")[1:3] for ln in table.splitlines() if ln.startswith("| ") and "---" not in ln]
    return [(lv.strip(), cell) for lv, cell in rows[1:]]  # rows[0] is the header


def readme_paths_of(cell: str) -> list[str]:
    """The paths a Layout cell names; ``jaxcc/x.py, y.py`` abbreviates ``jaxcc/y.py``."""
    folder, out = "", []
    for name in [c.strip("` ") for c in cell.split(",")]:
        if "/" in name.rstrip("/"):
            folder = name.rsplit("/", 1)[0] + "/" if not name.endswith("/") else ""
            out.append(name)
        else:
            out.append(folder + name)
    return out


def readme_paths() -> list[str]:
    return [p for _, cell in readme_layout_rows() for p in readme_paths_of(cell)]


def test_readme_layout_matches_the_tree():
    """docs/layout.md's table names only paths that exist, names every top-level module and
    package of jaxcc, and gives each the level this test holds the code to."""
    named = readme_paths()
    missing = [p for p in named if not os.path.exists(os.path.join(REPO, p))]
    assert not missing, f"docs/layout.md names paths that do not exist: {missing}"
    top = {m.split(".")[1] for m in graph() if m.count(".") >= 1}
    unnamed = sorted(t for t in top if not any(p.rstrip("/") in (f"jaxcc/{t}", f"jaxcc/{t}.py") for p in named))
    assert not unnamed, f"docs/layout.md does not name jaxcc/{unnamed}"
    g = graph()
    for lv, cell in readme_layout_rows():
        if lv.isdigit():
            for name in readme_paths_of(cell):
                mod = name.rstrip("/").removesuffix(".py").replace("/", ".")
                if mod in g or any(m.startswith(mod + ".") for m in g):
                    assert level(mod) == int(lv), f"docs/layout.md puts {name} at level {lv}; the code's is {level(mod)}"

