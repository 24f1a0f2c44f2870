"""launch/mahimahi_run.sh: the jaxcc sender through real Mahimahi (mm-delay, mm-link, mm-loss).

Everywhere: the script says exactly what is missing (Mahimahi not installed, not setuid root,
bad usage) and exits non-zero. Where Mahimahi is installed setuid root (setup/install_mahimahi.sh)
and the datapath is built, as root: short real runs on the reference link of
docs/emulation.md (12 Mbit/s as a trace file holding only ``1``, 20 ms each way, 375 KB
droptail buffer), checked against the same physics as the netns harness (tests/test_emulate.py);
they skip, saying why, elsewhere. Wall time of the real runs: about 25 s.
"""
from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from test_emulate import _apply  # applies a list of marks (tests/test_emulate.py)

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "launch" / "mahimahi_run.sh"
BASH = shutil.which("bash") or "/bin/bash"
DATAPATH = REPO / "datapath" / "build"
SENDER = DATAPATH / "jaxcc-sender"
RECEIVER = DATAPATH / "jaxcc-receiver"
MM_USER = "nobody"


def _script(args, path_dirs, timeout=60):
    """Runs the script with PATH limited to path_dirs (so installed tools can be hidden); its
    Python (JAXCC_PYTHON) is this one, as every caller of the launch scripts sets it."""
    env = dict(os.environ, PATH=os.pathsep.join(str(d) for d in path_dirs), JAXCC_PYTHON=sys.executable)
    return subprocess.run([BASH, str(SCRIPT), *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def _bin_dir(tmp_path, tools):
    """A folder holding links to just these system tools."""
    d = tmp_path / "bin"
    d.mkdir(exist_ok=True)
    for t in tools:
        p = shutil.which(t)
        if p and not (d / t).exists():
            (d / t).symlink_to(p)
    return d


def test_missing_mahimahi_is_named(tmp_path):
    d = _bin_dir(tmp_path, ["dirname"])
    r = _script(["--scenario=emu/fixed12", "--controller=bbr", f"--out={tmp_path / 'o'}"], [d])
    assert r.returncode == 3, r
    assert "Mahimahi is not installed (not found in PATH: mm-delay mm-link mm-loss)" in r.stderr
    assert "setup/install_mahimahi.sh" in r.stderr and "python -m jaxcc.emulate" in r.stderr
    assert not (tmp_path / "o").exists()   # nothing done before the checks


def test_one_missing_tool_is_named(tmp_path):
    d = _bin_dir(tmp_path, ["dirname"])
    for t in ("mm-delay", "mm-link"):
        (d / t).write_text("#!/bin/sh\nexit 0\n")
        (d / t).chmod(0o755)
    r = _script(["--scenario=emu/fixed12", f"--out={tmp_path / 'o'}"], [d])
    assert r.returncode == 3, r
    assert "(not found in PATH: mm-loss)" in r.stderr


def test_not_setuid_is_named(tmp_path):
    d = _bin_dir(tmp_path, ["dirname", "stat"])
    for t in ("mm-delay", "mm-link", "mm-loss"):
        (d / t).write_text("#!/bin/sh\nexit 0\n")
        (d / t).chmod(0o755)
    r = _script(["--scenario=emu/fixed12", f"--out={tmp_path / 'o'}"], [d])
    assert r.returncode == 3, r
    assert "installed but not setuid root" in r.stderr
    assert all(str(d / t) in r.stderr for t in ("mm-delay", "mm-link", "mm-loss"))


@pytest.mark.parametrize("args", [[], ["--scenario=emu/fixed12"], ["--bogus", "--out=x"],
                                  ["--scenario=emu/fixed12", "--out=x", "--nice=fast"]])
def test_bad_usage_exits_2(tmp_path, args):
    r = _script(args, [_bin_dir(tmp_path, ["dirname"])])
    assert r.returncode == 2, r
    assert "mahimahi_run.sh" in r.stderr or "usage" in r.stderr


# ----------------------------------------------------------------------------- real Mahimahi

def _mahimahi_skip_reason() -> str | None:
    tools = {t: shutil.which(t) for t in ("mm-delay", "mm-link", "mm-loss")}
    missing = [t for t, p in tools.items() if p is None]
    if missing:
        return f"Mahimahi not installed ({', '.join(missing)} not in PATH): setup/install_mahimahi.sh"
    for t, p in tools.items():
        st = os.stat(p)
        if not st.st_mode & stat.S_ISUID or st.st_uid != 0:
            return f"{p} is not setuid root (Mahimahi's make install does that)"
    if os.geteuid() != 0:
        return "the Mahimahi runs need root (a network namespace, then runuser to a plain user)"
    for t in ("ip", "runuser", "sysctl"):
        if shutil.which(t) is None:
            return f"'{t}' not found"
    if not (SENDER.exists() and RECEIVER.exists()):
        return "datapath not built (datapath/build.sh)"
    try:
        pwd.getpwnam(MM_USER)
    except KeyError:
        return f"no user {MM_USER!r} to run Mahimahi as"
    if subprocess.run(["runuser", "-u", MM_USER, "--", "test", "-x", str(SENDER)]).returncode:
        return f"user {MM_USER} cannot run {SENDER} (a folder above it lacks o+x)"
    return None


_SKIP = _mahimahi_skip_reason()
needs_mahimahi = [pytest.mark.emulation, pytest.mark.datapath,
                  pytest.mark.skipif(_SKIP is not None, reason=str(_SKIP))]


@pytest.fixture
def shared_dir():
    """A folder the Mahimahi user can read and write (pytest's tmp_path is private to root)."""
    d = Path(tempfile.mkdtemp(prefix="jaxcc-mm-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _run_mahimahi(d: Path, name: str, controller: str, T: float, loss: float = 0.0):
    trace = d / "12mbps.trace"
    trace.write_text("1\n")              # one 1500-byte packet per ms: 12 Mbit/s
    spec = d / f"{name}.json"
    spec.write_text(json.dumps({
        "name": name, "duration_s": T,
        "link": {"trace": str(trace), "buffer_bytes": 375000, "loss": loss},
        "flows": [{"rtt_ms": 40.0, "start_s": 0.0, "stop_s": T, "controller": controller}]}))
    out = d / name
    r = subprocess.run([str(SCRIPT), f"--scenario-file={spec}", f"--out={out}",
                        f"--user={MM_USER}"], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, JAXCC_PYTHON=sys.executable))
    assert r.returncode == 0, (r.stdout, r.stderr)
    [rec] = json.loads((out / "results.json").read_text())["results"]
    assert rec["emulator"] == "mahimahi" and rec["scenario"] == name
    assert rec["controller"] == controller
    for k in ("throughput_mbps", "utilization", "p95_owd_ms", "p95_qdelay_ms", "loss", "jain",
              "per_flow", "capacity_mbps"):
        assert k in rec, k
    assert rec["capacity_mbps"] == pytest.approx(12.0, rel=0.01)
    # the run's namespace is gone, and nothing of the run still runs
    ns = re.search(r"mahimahi_run\.sh: (jxm[0-9a-f]+): mm-link", r.stderr).group(1)
    assert ns not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                    text=True).stdout
    assert str(out) not in subprocess.run(["ps", "-eo", "args"], capture_output=True,
                                          text=True).stdout
    f = rec["per_flow"][0]
    assert f["client_rc"] == 0, f
    return rec, f


@_apply(needs_mahimahi)
def test_mahimahi_fixed_rate_over_capacity(shared_dir):
    """fixed:15 into 12 Mbit/s: the droptail buffer fills and stays full (RTT 40 + 250 ms),
    the excess is dropped; the first packets see the idle path (40 ms + 1-2 ms of 1-ms
    delivery slots)."""
    T = 4.0
    rec, f = _run_mahimahi(shared_dir, "mm_fixed15", "fixed:15", T)
    assert 40.0 <= f["min_rtt_ms"] <= 50.0      # (scheduling delays on a loaded host)
    assert f["p50_rtt_ms"] == pytest.approx(290.0, abs=15.0)
    # mm-link delivers one 1500-byte IP packet per opportunity (1504 bytes); the sender counts
    # IP bytes over the sending time, with the full queue (0.25 s) draining after the stop
    assert f["throughput_mbps"] == pytest.approx(12 * (T + 0.25) / T, rel=0.04)
    assert f["loss"] == pytest.approx(1 - (12 * T + 0.375 * 8) / (15 * T), abs=0.03)
    assert (shared_dir / "mm_fixed15" / "mm" / "uplink.log").stat().st_size > 0


@_apply(needs_mahimahi)
def test_mahimahi_random_loss(shared_dir):
    """mm-loss uplink 0.1 under the link, below capacity: ~10% loss, no queue."""
    rec, f = _run_mahimahi(shared_dir, "mm_loss10", "fixed:6", 3.0, loss=0.1)
    assert f["loss"] == pytest.approx(0.1, abs=0.03)
    assert f["p50_rtt_ms"] == pytest.approx(42.0, abs=5.0)
    assert f["throughput_mbps"] == pytest.approx(6 * 0.9, rel=0.05)  # IP bytes


# ----------------------------------------------------------------------------- plan / collect / merge

from jaxcc.emulation import mahimahi, spec  # noqa: E402
from jaxcc.emulation.host import EmulationError  # noqa: E402

EMULATE = [sys.executable, "-m", "jaxcc.emulate"]


def test_plan_takes_one_controller(tmp_path):
    sh = mahimahi.plan(spec.load(name="emu/fixed12"), "fixed:6", tmp_path / "p").read_text()
    assert "FLOW0_CTRL=fixed:6" in sh and "NFLOWS=1" in sh and "BUFFER_BYTES=375000" in sh
    # 12 Mbit/s as a trace: one 1500-byte opportunity per ms for the 20 s of the scenario
    stamps = (tmp_path / "p" / "link.trace").read_text().split()
    assert len(stamps) == 20000 and stamps[-1] == "20000"
    r = subprocess.run(EMULATE + [f"--mahimahi-plan={tmp_path / 'q'}", "--scenario=emu/fixed12",
                                  "--controller=bbr,fixed:6"], cwd=REPO, capture_output=True,
                       text=True)
    assert r.returncode == 2 and "a plan takes one controller" in r.stderr, r
    r = subprocess.run(EMULATE + [f"--mahimahi-plan={tmp_path / 'q'}", "--scenario=emu/fixed12",
                                  "--controller=cubic"], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 2 and "only in the simulator" in r.stderr, r
    assert not (tmp_path / "q" / "plan.sh").exists()


def _finished_run(d: Path, controller: str, rc: int, mbps: float, name="emu/fixed12") -> Path:
    """A planned run whose flow 0 ended with status rc and delivered mbps (fabricated summaries)."""
    mahimahi.plan(spec.load(name=name), controller, d)
    (d / "flow0").mkdir()
    (d / "flow0" / "client_rc").write_text(f"{rc}\n")
    summary = {"throughput_mbps": mbps, "p95_owd_ms": 25.0, "p95_rtt_ms": 45.0, "loss": 0.01}
    (d / "flow0" / "sender.json").write_text(json.dumps(summary))
    (d / "flow0" / "receiver.json").write_text(json.dumps(summary))
    return d


def test_collect_writes_a_finished_run(tmp_path):
    d = _finished_run(tmp_path / "ok", "fixed:6", 0, 5.9)
    rec = mahimahi.collect(d)
    [saved] = json.loads((d / "results.json").read_text())["results"]
    assert saved["controller"] == rec["controller"] == "fixed:6"
    assert saved["throughput_mbps"] == pytest.approx(5.9) and saved["emulator"] == "mahimahi"
    assert saved["jain"] == 1.0 and saved["capacity_mbps"] == pytest.approx(12.0, rel=0.01)


@pytest.mark.parametrize("rc,mbps,why", [(2, 5.9, "exited with status 2"),
                                         (0, 0.0, "no data delivered")])
def test_collect_refuses_a_failed_run(tmp_path, rc, mbps, why):
    d = _finished_run(tmp_path / "bad", "fixed:6", rc, mbps)
    with pytest.raises(EmulationError, match=why):
        mahimahi.collect(d)
    assert not (d / "results.json").exists()
    r = subprocess.run(EMULATE + [f"--mahimahi-collect={d}"], cwd=REPO, capture_output=True,
                       text=True)
    assert r.returncode == 2 and why in r.stderr and not (d / "results.json").exists()


def test_merge_puts_a_controller_list_in_one_file(tmp_path):
    runs = [_finished_run(tmp_path / "runs" / str(k), c, 0, m)
            for k, (c, m) in enumerate([("bbr", 11.0), ("fixed:6", 5.9)])]
    for d in runs:
        mahimahi.collect(d)
    r = subprocess.run(EMULATE + ["--mahimahi-merge=" + ",".join(map(str, [tmp_path, *runs]))], cwd=REPO,
                       capture_output=True, text=True)
    assert r.returncode == 0, r
    recs = json.loads((tmp_path / "results.json").read_text())["results"]
    assert [x["controller"] for x in recs] == ["bbr", "fixed:6"]
    assert all(x["ankh"] is not None for x in recs)
    with pytest.raises(EmulationError, match="missing"):
        mahimahi.merge(tmp_path / "m", [tmp_path / "runs" / "0", tmp_path / "nowhere"])


# ----------------------------------------------------------------------------- the script, Mahimahi faked

FAKE_MM = {  # pass-through stand-ins: no shaping, but the script's whole path runs
    "mm-link": '#!/bin/bash\nwhile [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done\nshift\n'
               'export MAHIMAHI_BASE=127.0.0.1\nexec "$@"\n',
    "mm-delay": '#!/bin/bash\nshift\nexec "$@"\n',
    "mm-loss": '#!/bin/bash\nshift 2\nexec "$@"\n',
}


def _fake_skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (setuid-root stand-ins, a network namespace, runuser)"
    for t in ("ip", "runuser", "sysctl"):
        if shutil.which(t) is None:
            return f"'{t}' not found"
    try:
        pwd.getpwnam(MM_USER)
    except KeyError:
        return f"no user {MM_USER!r}"
    return None


needs_fake = [pytest.mark.skipif(_fake_skip_reason() is not None, reason=str(_fake_skip_reason()))]

needs_datapath = [pytest.mark.datapath, pytest.mark.realtime, pytest.mark.skipif(not (SENDER.exists() and RECEIVER.exists()),
                                                           reason="datapath not built (datapath/build.sh)")]


@pytest.fixture
def fake_mm(shared_dir):
    """A PATH with setuid-root pass-through mm-* tools first, and a network namespace to run the
    script in (so the ip_forward it sets is that namespace's, never the host's)."""
    b = shared_dir / "fakebin"
    b.mkdir()
    for name, text in FAKE_MM.items():
        (b / name).write_text(text)
        (b / name).chmod(0o4755)
    ns = "jxmt" + os.urandom(3).hex()
    subprocess.run(["ip", "netns", "add", ns], check=True)
    subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"], check=True)
    # The datapath binaries, copied where the Mahimahi user can run them: the checkout may sit
    # in a private folder (a CI clone under a 0700 mktemp -d).
    dp = shared_dir / "datapath"
    dp.mkdir(mode=0o755)
    for name in ("jaxcc-sender", "jaxcc-receiver"):
        if (DATAPATH / name).exists():
            shutil.copy2(DATAPATH / name, dp / name)
    yield b, ns, dp
    subprocess.run(["ip", "netns", "del", ns])


def _script_in(fake, args, timeout=120):
    b, ns, dp = fake
    # JAXCC_PYTHON: the script's Python for planning and collecting is this one (a venv's too).
    env = dict(os.environ, PATH=f"{b}{os.pathsep}{os.environ['PATH']}", JAXCC_PYTHON=sys.executable,
               JAXCC_DATAPATH_BUILD=str(dp))
    return subprocess.run(["ip", "netns", "exec", ns, BASH, str(SCRIPT), f"--user={MM_USER}",
                           *args], env=env, capture_output=True, text=True, timeout=timeout)


def _spec_file(d: Path, T: float = 2.0) -> Path:
    p = d / "s.json"
    p.write_text(json.dumps({"name": "mm_list", "duration_s": T,
                             "link": {"bandwidth_mbps": 12, "buffer_bytes": 375000},
                             "flows": [{"rtt_ms": 40.0, "controller": "bbr"}]}))
    return p


@_apply(needs_fake)
def test_controller_list_dry_run_plans_each(shared_dir, fake_mm):
    out = shared_dir / "dry"
    r = _script_in(fake_mm, [f"--scenario-file={_spec_file(shared_dir)}", f"--out={out}",
                             "--controller=bbr,fixed:6", "--dry-run"])
    assert r.returncode == 0, r
    for k, c in enumerate(["bbr", "fixed:6"]):
        assert f"FLOW0_CTRL={c}" in (out / "runs" / str(k) / "plan.sh").read_text()
        client = (out / "runs" / str(k) / "flow0" / "client.sh").read_text()
        assert f"--controller={c} " in client   # each run's own sender command
        assert f"runs/{k}/inner.sh &" in r.stdout  # and its own (printed) Mahimahi command
    assert "bbr,fixed:6" not in r.stdout
    assert not (out / "results.json").exists()


@_apply(needs_fake)
def test_controller_list_with_a_bad_entry_runs_nothing(shared_dir, fake_mm):
    out = shared_dir / "bad"
    r = _script_in(fake_mm, [f"--scenario-file={_spec_file(shared_dir)}", f"--out={out}",
                             "--controller=bbr,cubic"])
    assert r.returncode == 2, r
    assert "only in the simulator" in r.stderr and "nothing was run" in r.stderr
    assert "mm-link" not in r.stderr and not (out / "runs" / "0" / "flow0").exists()
    r = _script_in(fake_mm, [f"--scenario-file={_spec_file(shared_dir)}", f"--out={out}",
                             "--controller=bbr,"])
    assert r.returncode == 2 and "empty entry" in r.stderr, r


@_apply(needs_fake + needs_datapath)
def test_controller_list_runs_each_into_one_results_file(shared_dir, fake_mm):
    out = shared_dir / "list"
    r = _script_in(fake_mm, [f"--scenario-file={_spec_file(shared_dir)}", f"--out={out}",
                             "--controller=bbr,fixed:6"])
    assert r.returncode == 0, (r.stdout, r.stderr)
    recs = json.loads((out / "results.json").read_text())["results"]
    assert [x["controller"] for x in recs] == ["bbr", "fixed:6"]
    assert all(x["emulator"] == "mahimahi" and x["throughput_mbps"] > 1.0 for x in recs), recs
    # (no shaping behind the stand-ins: the fixed rate is what the sender sent, in IP bytes)
    assert recs[1]["throughput_mbps"] == pytest.approx(6.0, rel=0.1)


@_apply(needs_fake + needs_datapath)
def test_failed_sender_writes_no_results(shared_dir, fake_mm):
    bad = shared_dir / "garbage.safetensors"
    bad.write_text("not a policy file")
    bad.chmod(0o644)
    out = shared_dir / "fail"
    out.mkdir()
    (out / "results.json").write_text('{"results": []}')   # an earlier run's: must go
    r = _script_in(fake_mm, [f"--scenario-file={_spec_file(shared_dir)}", f"--out={out}",
                             f"--controller=policy:{bad}"])
    assert r.returncode == 4, (r.stdout, r.stderr)
    assert "sender(s) failed" in r.stderr and "no results.json written" in r.stderr
    assert not (out / "results.json").exists()
    # in a list, the failure stops the list and no merged file is written
    out = shared_dir / "faillist"
    r = _script_in(fake_mm, [f"--scenario-file={_spec_file(shared_dir)}", f"--out={out}",
                             f"--controller=policy:{bad},bbr"])
    assert r.returncode == 4, (r.stdout, r.stderr)
    assert not (out / "results.json").exists() and not (out / "runs" / "1" / "flow0").exists()
