"""The one command-line convention (``jaxcc.cli``): fresh flags per call, ``--help`` exits 0,
every user error is one ``error: ...`` line with exit status 2; positional arguments and dashed
flag names."""

from __future__ import annotations

from absl import flags

from jaxcc.cli import dashed_aliases, run_absl_cli


def _define(fv):
    flags.DEFINE_integer("tail_s", 5, "seconds", flag_values=fv)
    flags.DEFINE_multi_string("sender_arg", [], "repeatable", flag_values=fv)
    flags.DEFINE_bool("record_merge", False, "a switch", flag_values=fv)
    return dashed_aliases(fv)


def test_flags_are_fresh_per_call_and_dashed_names_work(capsys):
    seen = []

    def run(fv, argv):
        seen.append((fv.tail_s, list(fv.sender_arg), fv.record_merge, list(argv)))
        return 0

    argv = ["cmd", "--tail-s", "7", "--sender-arg=--x=1", "--sender_arg", "y", "--record-merge"]
    assert run_absl_cli(argv, "doc", _define, run, "--tail_s=5", uses_jax=False) == 0
    assert run_absl_cli(["cmd"], "doc", _define, run, "--tail_s=5", uses_jax=False) == 0
    assert seen == [(7, ["--x=1", "y"], True, argv[1:]), (5, [], False, [])]
    assert run_absl_cli(["cmd", "--help"], "the doc", _define, run, "--tail_s=5", uses_jax=False) == 0
    out = capsys.readouterr().out
    assert out.startswith("the doc") and "--tail-s" in out and "--tail_s" in out


def test_errors_are_one_line(capsys):
    def run(fv, argv):
        raise ValueError(f"--tail_s={fv.tail_s}: must be\n  > 5")

    for args in (["--tail_s=x"], ["--nope"], ["stray"], ["--tail_s=1"]):
        assert run_absl_cli(["cmd", *args], "doc", _define, run, "--tail_s=5", uses_jax=False) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 4 and all(e.startswith("error: ") for e in err), err
    assert "--tail_s=x" in err[0] and "nope" in err[1] and "['stray']" in err[2]
    assert err[3] == "error: --tail_s=1: must be > 5"


def test_positional_arguments(capsys):
    got = []

    def run(fv, argv, positional):
        got.append((positional, fv.tail_s))
        return 0

    def cli(*args):
        return run_absl_cli(["cmd", *args], "doc", _define, run, "--tail_s=5", uses_jax=False,
                            positional=("SRC", "DST"))

    assert cli("a", "--tail_s=1", "b") == 0 and cli("--tail_s", "2", "a", "b") == 0
    assert got == [(["a", "b"], 1), (["a", "b"], 2)]
    assert cli("a") == 2 and cli("a", "b", "c") == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("error: missing DST") and err[1].startswith("error: unexpected arguments ['c']")
