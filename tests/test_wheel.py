"""jaxcc as a built package (docs/install.md): the wheel and the sdist carry every config, the
shipped policies, the datapath's sources and the ``jaxcc`` console command; installed outside the
repository, the documented commands run.

The fast tier builds the sdist and, from it, the wheel (``python -m build``, as a user does, from
a copy of the tree as a clone has it) and reads both against the repository's own files.  The
full tier installs the wheel into a fresh venv outside the repository and runs the commands from
a temporary folder: a training run, evaluations (a baseline and a shipped policy), ``jaxcc
--help`` and the datapath build.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from jaxcc import shipped
from jaxcc.__main__ import commands, main

REPO = Path(__file__).resolve().parents[1]


def tracked(pattern: str) -> set[str]:
    """The repository's files (tracked, or new and not ignored, as a clone has them) under a glob."""
    out = subprocess.run(["git", "-C", str(REPO), "ls-files", "--cached", "--others", "--exclude-standard", pattern],
                         capture_output=True, text=True, check=True).stdout.split()
    return {p for p in out if (REPO / p).is_file()}


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    """The sdist and the wheel ``python -m build`` makes from it, from a copy of the tree."""
    src = tmp_path_factory.mktemp("tree") / "jaxcc"
    for rel in tracked("."):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, src / rel)
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(src)], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (sdist,), (wheel,) = out.glob("*.tar.gz"), out.glob("*.whl")
    return {"sdist": sdist, "wheel": wheel}


def wheel_files(wheel: Path) -> set[str]:
    return set(zipfile.ZipFile(wheel).namelist())


def shipped_files() -> dict[str, set[str]]:
    """What must travel, by the repository's top-level path: every config, every shipped policy
    (``checkpoints/<family>/*.safetensors``) with its family's README, the datapath's sources."""
    policies = {p for p in tracked("checkpoints/*/*.safetensors") if p.count("/") == 2}
    return {
        "configs": tracked("configs/*.py"),
        "policies": policies | {str(Path(p).parent / "README.md") for p in policies},
        "datapath": tracked("datapath/src/*") | tracked("datapath/bench/*") | {"datapath/CMakeLists.txt"},
    }


def test_the_wheel_carries_configs_policies_and_the_datapath(dists):
    names = wheel_files(dists["wheel"])
    want = shipped_files()
    assert len(want["configs"]) >= 20 and "configs/pareto_smoke.py" in want["configs"]
    assert {"checkpoints/pareto/pareto_fair.safetensors", "checkpoints/mocc/mocc.safetensors"} <= want["policies"]
    for group, files in want.items():
        missing = sorted(p for p in files if f"jaxcc/{p}" not in names)
        assert not missing, f"{group}: not in the wheel: {missing}"
    # every module of the package, and nothing from outside it
    modules = {p for p in tracked("jaxcc/*") if p.endswith(".py")}
    assert not sorted(m for m in modules if m not in names)
    assert {n.split("/")[0] for n in names} == {"jaxcc", f"{dists['wheel'].name.split('-py')[0]}.dist-info"}
    # the results beside the policies, the training runs and the C++ tests stay in the repository
    assert "jaxcc/checkpoints/pareto/eval_sim.json" not in names
    assert not [n for n in names if n.startswith(("jaxcc/checkpoints/runs/", "jaxcc/datapath/tests/", "jaxcc/datapath/fuzz/"))]


def test_the_wheel_has_the_console_command(dists):
    z = zipfile.ZipFile(dists["wheel"])
    entry = next(n for n in z.namelist() if n.endswith(".dist-info/entry_points.txt"))
    text = z.read(entry).decode()
    assert "[console_scripts]" in text and "jaxcc = jaxcc.__main__:main" in text


def test_the_sdist_carries_the_same(dists):
    names = {n.split("/", 1)[1] for n in tarfile.open(dists["sdist"]).getnames() if "/" in n}
    for group, files in shipped_files().items():
        missing = sorted(p for p in files if p not in names)
        assert not missing, f"{group}: not in the sdist: {missing}"
    assert {"pyproject.toml", "setup.py", "jaxcc/__main__.py", "jaxcc/shipped.py"} <= names


# ----------------------------------------------------------------------------- in the source tree


def test_commands_are_the_runnable_modules():
    found = commands()
    # the commands the docs name, by hand
    assert {"train", "sweep", "evaluate", "emulate", "export", "bench", "seeds", "tcr", "sim2real", "goal_reach",
            "preference_sweep", "plots", "policyfile", "fidelity", "online", "parity_vectors",
            "build_datapath"} <= set(found)
    # library modules and the shipped folders are not commands
    assert not {"cli", "controllers", "shipped", "units", "sim", "training", "configs", "checkpoints", "datapath",
                "traces", "__main__"} & set(found)


def _run(*args, **kw):
    return subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"}, **kw)


def test_a_console_command_is_its_module():
    via_console = _run("-m", "jaxcc", "export", "--help")
    via_module = _run("-m", "jaxcc.export", "--help")
    assert via_console.returncode == via_module.returncode == 0
    assert "--checkpoint" in via_console.stdout and via_console.stdout == via_module.stdout
    bad_console, bad_module = _run("-m", "jaxcc", "export", "--nope"), _run("-m", "jaxcc.export", "--nope")
    assert bad_console.returncode == bad_module.returncode == 2 and bad_console.stderr == bad_module.stderr


def test_help_lists_the_commands_and_an_unknown_one_is_one_line(capsys):
    assert main(["jaxcc", "--help"]) == 0
    out = capsys.readouterr().out
    listed = [ln.split()[0] for ln in out.splitlines() if ln.startswith("  ")]
    assert listed == commands()
    assert main(["jaxcc", "trian"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error: unknown command 'trian'") and "train" in err[0]
    assert main(["jaxcc"]) == 2
    assert capsys.readouterr().err.startswith("error: missing COMMAND")


def test_shipped_policy_names_resolve_from_any_folder(tmp_path, monkeypatch):
    fair = str(REPO / "checkpoints" / "pareto" / "pareto_fair.safetensors")
    monkeypatch.chdir(tmp_path)
    assert shipped.folder("checkpoints") == str(REPO / "checkpoints")
    assert shipped.folder("configs") == str(REPO / "configs")
    assert shipped.policy_path("checkpoints/pareto/pareto_fair.safetensors") == fair
    assert shipped.policy_path("./checkpoints/pareto/pareto_fair.safetensors") == fair
    for name in ("checkpoints/pareto/none.safetensors", "checkpoints/runs/r/stages/Pareto-Fair.safetensors",
                 "checkpoints/pareto/README.md", "other/pareto_fair.safetensors", ""):
        assert shipped.policy_path(name) == name
    # a file of that name here is the user's, not the shipped one
    (tmp_path / "checkpoints" / "pareto").mkdir(parents=True)
    (tmp_path / "checkpoints" / "pareto" / "pareto_fair.safetensors").write_bytes(b"")
    assert shipped.policy_path("checkpoints/pareto/pareto_fair.safetensors") == "checkpoints/pareto/pareto_fair.safetensors"
    with pytest.raises(ValueError, match="configs, checkpoints, datapath"):
        shipped.folder("results")


def test_a_shipped_policy_is_a_preference_sweep_checkpoint_from_any_folder(tmp_path, monkeypatch):
    from jaxcc.evaluation.preference_sweep import policy_entries

    monkeypatch.chdir(tmp_path)
    (entry,) = policy_entries("checkpoints/mocc/mocc.safetensors")
    assert entry.label == "mocc" and entry.name == f"policy:{REPO / 'checkpoints' / 'mocc' / 'mocc.safetensors'}"
    with pytest.raises(ValueError, match="does not exist"):
        policy_entries("checkpoints/mocc/none.safetensors")


# ----------------------------------------------------------------------------- installed elsewhere


@pytest.fixture(scope="module")
def venv(dists, tmp_path_factory) -> Path:
    """A venv outside the repository with the wheel installed.  Its dependencies come from the
    interpreter running the tests (system site packages, and a venv's through a .pth line) so
    nothing is downloaded; jaxcc itself is the venv's copy (checked by ``test_installed_commands_run``)."""
    root = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(root)], check=True)
    py = root / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    outer = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site, "_outer_site.pth").write_text("\n".join(sorted(outer)) + "\n")
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed", str(dists["wheel"])],
                       capture_output=True, text=True, env=_clean_env())
    assert r.returncode == 0, r.stderr[-3000:]
    return root


def _clean_env() -> dict[str, str]:
    """The environment without what points Python at the repository."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return {**env, "PYTHONNOUSERSITE": "1", "JAX_PLATFORMS": "cpu", "WANDB_MODE": "disabled"}


@pytest.mark.full
def test_installed_commands_run(venv, tmp_path):
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()

    def run(*cmd, timeout=900):
        r = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, env=_clean_env(),
                           timeout=timeout)
        assert r.returncode == 0 and "Traceback" not in r.stderr, f"{cmd}: exit {r.returncode}\n{r.stderr[-3000:]}"
        return r

    py, jaxcc = venv / "bin" / "python", venv / "bin" / "jaxcc"
    where = run(py, "-c", "import jaxcc, jaxcc.shipped as s; print(jaxcc.__file__); print(s.folder('configs'))")
    package = Path(where.stdout.splitlines()[0]).parent
    assert package.is_relative_to(venv), f"jaxcc imported from {package}, not the venv's copy"
    assert where.stdout.splitlines()[1] == str(package / "configs")

    assert "build_datapath" in run(jaxcc, "--help").stdout
    run(jaxcc, "train", "--config=pareto_smoke", f"--workdir={cwd / 'run'}", "--no_progress")
    assert sorted(p.name for p in (cwd / "run" / "stages").glob("*.safetensors"))

    run(py, "-m", "jaxcc.evaluate", "--suite=pareto", "--controller=bbr", "--duration=15", f"--out={cwd / 'bbr'}",
        "--noprogress", "--noplots")
    assert json.loads((cwd / "bbr" / "results.json").read_text())
    run(py, "-m", "jaxcc.evaluate", "--scenario=pareto/fixed50", "--controller=policy:checkpoints/pareto/pareto_fair.safetensors",
        "--duration=15", f"--out={cwd / 'fair'}", "--noprogress", "--noplots")
    assert "pareto_fair" in (cwd / "fair" / "results.json").read_text()

    # cmake and g++ are part of make test's set-up (setup/apt-packages.txt): their absence fails.
    run(jaxcc, "build_datapath", f"--out={cwd / 'dp'}", timeout=1200)
    cache = (cwd / "dp" / "CMakeCache.txt").read_text()
    assert f"jaxcc_datapath_SOURCE_DIR:STATIC={package / 'datapath'}" in cache  # the installed copy was built
    for prog in ("jaxcc-sender", "jaxcc-receiver"):
        assert "Usage:" in run(cwd / "dp" / prog, "--help").stdout
