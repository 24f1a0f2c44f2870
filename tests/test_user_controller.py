"""A researcher's own controller, ``FILE.py:NAME`` (``jaxcc.controllers``, docs/controllers.md):
the example's behaviour against hand-computed windows, a copy of a built-in against the
built-in, two controllers of one name in one run, scenario files, and every refusal in one line.
"""

import json
import os
import sys
import textwrap

import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc import evaluate, senders
from jaxcc.controllers import ControllerSpec, parse_controller
from jaxcc.evaluation.runs import controller_entries, run_evaluation
from jaxcc.scenarios import parse_scenario
from jaxcc.sim import runner
from jaxcc.sim.controller import ControllerParams, TickObs
from jaxcc.units import MBPS, MSS

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(REPO, "docs", "examples", "delay_aimd.py")


def write(path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return str(path)


# A controller that paces at a constant rate: what it carries is known without the model.
FIXED_RATE = """\
    import jax.numpy as jnp
    from jaxcc.sim.controller import Controller, rate_only
    from jaxcc.units import MBPS

    CTRL = Controller("same_name", lambda cp: jnp.float32(0.0),
                      lambda s, cp: rate_only(jnp.float32({mbps} * MBPS)), lambda s, obs, cp: s)
"""


# ----------------------------------------------------------------------------- the example

def obs(now, acked=0.0, rtt=0.04, lost=0.0):
    f = jnp.float32
    return TickObs(now=f(now), dt=f(0.005), active=jnp.bool_(True), acked=f(acked), lost=f(lost),
                   rtt_wsum=f(rtt * acked), sent=f(0.0), inflight=f(0.0), capacity=f(0.0), n_active=jnp.int32(1))


def test_example_follows_its_rules_tick_by_tick():
    """Hand-built ticks: a whole window ACKed per tick, then a delay signal, a held one, a loss."""
    ctrl, cp = senders.resolve(f"{EXAMPLE}:DELAY_AIMD")
    s = ctrl.init(cp)
    assert float(ctrl.act(s, cp).cwnd) == 10 * MSS
    for _ in range(3):  # slow start: a whole window ACKed doubles it, 10 -> 20 -> 40 -> 80 packets
        s = ctrl.update(s, obs(0.1, acked=float(s.cwnd)), cp)
    assert float(s.cwnd) == 80 * MSS and bool(s.slow_start)
    assert float(s.min_rtt) == pytest.approx(0.04)
    # RTT 11 ms above the smallest (threshold 10 ms): x0.7, out of slow start, held for this RTT
    s = ctrl.update(s, obs(1.0, acked=MSS, rtt=0.051), cp)
    assert float(s.cwnd) == pytest.approx(56 * MSS, rel=1e-6) and not bool(s.slow_start)
    assert float(s.hold_until) == pytest.approx(1.051)
    # still 11 ms late within the hold: no second decrease; one packet more for a window ACKed
    s = ctrl.update(s, obs(1.02, acked=56 * MSS, rtt=0.051), cp)
    assert float(s.cwnd) == pytest.approx(57 * MSS, rel=1e-6)
    # a loss after the hold, no RTT sample: x0.7, held for the smallest RTT
    s = ctrl.update(s, obs(1.06, lost=MSS), cp)
    assert float(s.cwnd) == pytest.approx(39.9 * MSS, rel=1e-6)
    assert float(s.hold_until) == pytest.approx(1.10)
    for _ in range(3):  # congestion avoidance: one packet per window ACKed, not doubling
        s = ctrl.update(s, obs(1.2, acked=float(s.cwnd), rtt=0.045), cp)
    assert float(s.cwnd) == pytest.approx(42.9 * MSS, rel=1e-6)
    for t in range(20):  # repeated signals, each after its hold: never below 2 packets
        s = ctrl.update(s, obs(2.0 + t, lost=MSS), cp)
    assert float(s.cwnd) == pytest.approx(2 * MSS)


def test_example_on_a_link_without_queueing():
    """10 Gbit/s, 40 ms, an unlimited buffer, 0.2 s: four ACK rounds come back (10, 20, 40 and 80
    packets, one RTT each), no queue builds, so slow start doubles the window each round to
    160 packets; the smallest RTT is 40 ms plus one packet's serialisation (1500 B at 10 Gbit/s:
    1.2 us)."""
    sc = parse_scenario({"name": "tiny", "duration_s": 0.2, "link": {"bandwidth_mbps": 10_000, "buffer_bytes": 1e9},
                         "flows": [{"rtt_ms": 40, "controller": f"{EXAMPLE}:DELAY_AIMD"}]})
    (batch,) = runner.build_batches([runner.Item(sc)], resolve=senders.resolve)
    _, traj, _, (state,) = runner.run_batch(batch, keep_states=True)
    assert float(np.sum(traj.acked[0, :, 0])) == pytest.approx(150 * MSS, rel=1e-5)
    assert float(state.cwnd[0, 0]) == pytest.approx(160 * MSS, rel=1e-5)
    assert float(state.min_rtt[0, 0]) == pytest.approx(0.04 + MSS / (10_000 * MBPS), rel=1e-6)
    assert bool(state.slow_start[0, 0])


# ----------------------------------------------------------------------------- beside the built-ins

def test_a_copy_of_reno_gives_renos_records(tmp_path):
    """The built-in is the reference: a user file re-exporting NewReno (as an instance and from a
    factory, under new names) gives records identical to ``reno``'s on a lossy two-flow link."""
    f = write(tmp_path / "my_reno.py", """\
        from jaxcc.baselines.reno import RENO

        NEWRENO_COPY = RENO

        def make_reno():
            return RENO._replace(name="my_reno")
    """)
    sc = parse_scenario({"name": "two", "duration_s": 3.0,
                         "link": {"bandwidth_mbps": 12, "buffer_bytes": 30_000},
                         "flows": [{"rtt_ms": 40, "controller": "reno"},
                                   {"rtt_ms": 40, "start_s": 0.5, "controller": "reno"}]})
    names = ["reno", f"{f}:NEWRENO_COPY", f"{f}:make_reno"]
    recs = run_evaluation([sc], controller_entries(names), progress=False, keep_series=False)["results"]
    assert [r["controller"] for r in recs] == names

    def numbers(r):  # every field but the label, as text (NaN == NaN there)
        return json.dumps({**r, "controller": None, "per_flow": [{**pf, "controller": None} for pf in r["per_flow"]]},
                          sort_keys=True, default=str)

    assert recs[0]["loss"] > 0  # the link makes NewReno react
    assert numbers(recs[1]) == numbers(recs[0])
    assert numbers(recs[2]) == numbers(recs[0])


def test_two_controllers_of_one_name_in_two_files_stay_two(tmp_path):
    """Both files are ``ctrl.py`` and define ``CTRL`` with the same ``Controller.name``; one run
    (one batch) carries each at its own rate: 2 and 6 Mbit/s on a 20 Mbit/s link."""
    a = write(tmp_path / "a" / "ctrl.py", FIXED_RATE.format(mbps=2.0))
    b = write(tmp_path / "b" / "ctrl.py", FIXED_RATE.format(mbps=6.0))
    sc = parse_scenario({"name": "one", "duration_s": 2.0, "link": {"bandwidth_mbps": 20, "buffer_bytes": 100_000},
                         "flows": [{"rtt_ms": 40}]})
    entries = controller_entries(f"{a}:CTRL,{b}:CTRL")
    recs = run_evaluation([sc], entries, progress=False, keep_series=False)["results"]
    assert [r["controller"] for r in recs] == [f"{a}:CTRL", f"{b}:CTRL"]
    # goodput over the run: the first RTT's bytes are still in flight at the start
    assert recs[0]["throughput_mbps"] == pytest.approx(2.0, rel=0.05)
    assert recs[1]["throughput_mbps"] == pytest.approx(6.0, rel=0.05)
    assert senders.resolve(f"{a}:CTRL")[0].name != senders.resolve(f"{b}:CTRL")[0].name


def test_a_scenario_file_names_user_controllers_beside_a_builtin(tmp_path, capsys):
    """Paths relative to the scenario file's folder; the command's results.json names each
    flow's controller and carries each fixed rate."""
    write(tmp_path / "ctrls" / "slow.py", FIXED_RATE.format(mbps=2.0))
    write(tmp_path / "ctrls" / "fast.py", FIXED_RATE.format(mbps=5.0))
    spec = {"name": "mine", "duration_s": 2.0, "link": {"bandwidth_mbps": 30, "buffer_bytes": 100_000},
            "flows": [{"rtt_ms": 40, "controller": "ctrls/slow.py:CTRL"},
                      {"rtt_ms": 40, "controller": "ctrls/fast.py:CTRL"},
                      {"rtt_ms": 40, "controller": "fixed:4"}]}
    (tmp_path / "mine.json").write_text(json.dumps(spec))
    out = tmp_path / "out"
    assert evaluate.run_cli(["evaluate", f"--scenario-file={tmp_path / 'mine.json'}", f"--out={out}",
                             "--noplots", "--noprogress"]) == 0
    (rec,) = json.loads((out / "results.json").read_text())["results"]
    flows = rec["per_flow"]
    assert [pf["controller"] for pf in flows] == [str(tmp_path / "ctrls" / "slow.py") + ":CTRL",
                                                  str(tmp_path / "ctrls" / "fast.py") + ":CTRL", "fixed:4"]
    assert [pf["throughput_mbps"] for pf in flows] == pytest.approx([2.0, 5.0, 4.0], rel=0.05)
    assert "mine" in capsys.readouterr().out


def test_a_preference_reaches_only_a_controller_that_takes_one(tmp_path):
    """``takes_preference``: the flow's preference is in ``cp.sender.preference`` (here it sets
    the rate: 10 Mbit/s x the throughput weight 0.5); without it the pair is skipped."""
    f = write(tmp_path / "pref.py", """\
        import jax.numpy as jnp
        from jaxcc.sim.controller import Controller, rate_only
        from jaxcc.units import MBPS

        PREF = Controller("pref", lambda cp: jnp.float32(0.0),
                          lambda s, cp: rate_only(10 * MBPS * cp.sender.preference[0]),
                          lambda s, obs, cp: s, takes_preference=True)
        NO_PREF = PREF._replace(takes_preference=False)
    """)
    sc = parse_scenario({"name": "pref", "duration_s": 2.0, "link": {"bandwidth_mbps": 50, "buffer_bytes": 100_000},
                         "flows": [{"rtt_ms": 40, "preference": [0.5, 0.25, 0.25]}]})
    rep = run_evaluation([sc], controller_entries(f"{f}:PREF,{f}:NO_PREF"), progress=False, keep_series=False)
    (rec,) = rep["results"]
    assert rec["controller"] == f"{f}:PREF" and rec["throughput_mbps"] == pytest.approx(5.0, rel=0.05)
    assert [s["controller"] for s in rep["skipped"]] == [f"{f}:NO_PREF"]


# ----------------------------------------------------------------------------- loading

def test_parse_names_the_kind_file_and_name(tmp_path):
    f = write(tmp_path / "c.py", FIXED_RATE.format(mbps=1.0))
    assert parse_controller(f"{f}:CTRL") == ControllerSpec("user", f, f"{f}:CTRL", attr="CTRL")
    assert parse_controller(" bbr ") == ControllerSpec("bbr", "", "bbr")  # the other forms as before
    assert parse_controller("kernel:bbr").kind == "kernel"


def test_the_file_is_imported_once_by_path(tmp_path, monkeypatch):
    """Imported once per process whatever the spelling of its path, under a module name of its
    own; its neighbours are importable while it loads and sys.path is as before afterwards."""
    log = tmp_path / "imports.log"
    write(tmp_path / "helper.py", "RATE = 3.0\n")
    (tmp_path / "counted.py").write_text(f"import helper\nopen({str(log)!r}, 'a').write('imported\\n')\n"
                                         + textwrap.dedent(FIXED_RATE.format(mbps="helper.RATE")))
    path_before = list(sys.path)
    monkeypatch.chdir(tmp_path)
    c1, _ = senders.resolve("counted.py:CTRL")
    c2, _ = senders.resolve(f"{tmp_path}/./counted.py:CTRL")
    assert c1 is c2 and log.read_text() == "imported\n"
    assert c1.name == f"{tmp_path}/counted.py:CTRL"
    assert float(c1.act(c1.init(ControllerParams.zeros()), None).rate) == 3.0 * MBPS
    assert sys.path == path_before
    assert not [m for m in sys.modules if m == "counted"]


BAD_FILE = """\
    import jax.numpy as jnp
    from jaxcc.baselines.reno import RENO

    NUMBER = 3

    class Thing:
        pass

    def needs_args(x):
        return RENO

    def not_a_controller():
        return "reno"

    def raises():
        raise RuntimeError("no link today")

    ACT_IS_TEXT = RENO._replace(act="reno_act")
    NAME_IS_NUMBER = RENO._replace(name=7)
    ACT_GIVES_TUPLE = RENO._replace(act=lambda s, cp: (s.cwnd, s.cwnd))
    STATE_CHANGES = RENO._replace(update=lambda s, obs, cp: s._replace(cwnd=jnp.zeros(3)))
    BRANCHES_IN_PYTHON = RENO._replace(update=lambda s, obs, cp: s if obs.acked > 0 else s)
"""


@pytest.mark.parametrize("name, message", [
    ("missing.py:CTRL", r"controller file '.*missing\.py' does not exist"),
    ("notes.txt:CTRL", r"'.*notes\.txt' is not a \.py file"),
    ("bad.py", r"name the controller in the file after a colon, FILE\.py:NAME"),
    ("bad.py:2x", r"'2x' is not a Python name"),
    ("syntax.py:CTRL", r"syntax\.py:3: syntax error"),
    ("imports.py:CTRL", r"imports\.py:2: importing the file raised ModuleNotFoundError: No module named 'no_such_mod"),
    ("bad.py:CTRL", r"bad\.py defines no 'CTRL'; controllers it defines: RENO, not_a_controller\(\), raises\(\), "
                    r"ACT_IS_TEXT, NAME_IS_NUMBER, ACT_GIVES_TUPLE, STATE_CHANGES, BRANCHES_IN_PYTHON$"),
    ("empty.py:CTRL", r"empty\.py defines no 'CTRL'; it defines no Controller"),
    ("bad.py:NUMBER", r"NUMBER is an int, not a Controller"),
    ("bad.py:Thing", r"Thing is a class, not a Controller"),
    ("bad.py:needs_args", r"needs_args is a function that needs arguments; a factory takes none"),
    ("bad.py:not_a_controller", r"not_a_controller\(\) returned a str, not a Controller"),
    ("bad.py:raises", r"raises\(\) at .*bad\.py:16 raised RuntimeError: no link today"),
    ("bad.py:ACT_IS_TEXT", r"Controller\.act is a str, expected a function"),
    ("bad.py:NAME_IS_NUMBER", r"Controller\.name is an int, expected a str"),
    ("bad.py:ACT_GIVES_TUPLE", r"Controller\.act returned a tuple, expected jaxcc\.sim\.controller\.Action"),
    ("bad.py:STATE_CHANGES", r"Controller\.update returned a state leaf of float32\[3\] where Controller\.init's "
                             r"is float32\[\]"),
    ("bad.py:BRANCHES_IN_PYTHON", r"Controller\.update at .*bad\.py:22 raised TracerBoolConversionError: .*jnp\.where"),
])
def test_every_problem_is_one_line_naming_it(tmp_path, monkeypatch, name, message):
    write(tmp_path / "bad.py", BAD_FILE)
    write(tmp_path / "syntax.py", "import jax\n\ndef f(:\n    pass\n")
    write(tmp_path / "imports.py", "import os\nimport no_such_module_for_jaxcc\n")
    write(tmp_path / "empty.py", "X_RATE = 2\n")
    (tmp_path / "notes.txt").write_text("")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=message) as e:
        senders.resolve(name)
    assert "\n" not in str(e.value) and name.split(":")[0] in str(e.value)


def test_the_command_refuses_in_one_line(tmp_path, capsys):
    write(tmp_path / "syntax.py", "def f(:\n")
    for ctrl, message in ((f"{tmp_path}/syntax.py:CTRL", "syntax.py:1: syntax error"),
                          (f"{tmp_path}/nope.py:CTRL", "does not exist")):
        assert evaluate.run_cli(["evaluate", f"--controller={ctrl},bbr", "--scenario=pareto/link12",
                                 f"--out={tmp_path / 'out'}", "--noprogress"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_emulation_refuses_a_python_controller(tmp_path, capsys):
    """The C++ sender paces the real packets and runs no Python: refused before anything runs,
    given on the command line or as a scenario's flow."""
    from jaxcc import emulate
    from jaxcc.emulation import host
    from jaxcc.emulation import runner as emu_runner

    f = write(tmp_path / "c.py", FIXED_RATE.format(mbps=1.0))
    assert emulate.run_cli(["emulate", "--scenario=emu/fixed12", f"--controller={f}:CTRL",
                            f"--out={tmp_path / 'out'}"]) == 2
    err = capsys.readouterr().err
    assert "a Python controller (FILE.py:NAME) runs only in the simulator" in err and err.count("\n") == 1
    with pytest.raises(host.EmulationError, match="cannot run Python"):
        emu_runner.flow_kind(f"{f}:CTRL")
    assert not (tmp_path / "out").exists()
