"""``python -m jaxcc.online``: restore, listen, start the network, learn, report (``jaxcc.online``)."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import sys
import tempfile
import time
from typing import Any, Sequence

import numpy as np
from jaxcc.online import compare
from jaxcc.online.checks import OLD_ENV_NEIGHBOURS, ankh_pair, old_env_check, operating_point_time, plot
from jaxcc.online.learner import REWARDS, Learner
from jaxcc.online.restore import write_atomic


EMULATORS = ("netns", "mahimahi", "sim", "external", "flood")


DEFAULT_OLD_ENVS = "pareto/fixed50,pareto/dyn10-30,pareto/shared2"
OP_BIN_S = 5.0  # results.json operating_point: the bins (s)
MOCC_OLD_ENVS = "mocc/12mbps,mocc/50mbps"  # a MOCC run's forgetting check when --old-envs is not given


# ----------------------------------------------------------------------------- CLI


def default_address(out: str) -> str:
    p = os.path.join(os.path.abspath(out), "learner.sock")
    if len(p) > 100:  # AF_UNIX paths are limited to 108 bytes
        p = os.path.join(tempfile.gettempdir(), "jaxcc-online-" + hashlib.sha1(p.encode()).hexdigest()[:12] + ".sock")
    return "unix:" + p


def policy_flow_count(sc) -> int:
    """Senders a scenario runs with the learned policy: its ``policy:*`` flows, else every flow."""
    n = sum(1 for f in sc.flows if str(f.controller).startswith("policy"))
    return n or len(sc.flows)


def define_flags(fv):
    """The command's flags on ``fv`` (each also under its dashed name: ``--scenario-file``)."""
    from absl import flags

    from jaxcc.cli import dashed_aliases

    def string(name, default, help):
        flags.DEFINE_string(name, default, help, flag_values=fv)

    def integer(name, default, help):
        flags.DEFINE_integer(name, default, help, flag_values=fv)

    def number(name, default, help):
        flags.DEFINE_float(name, default, help, flag_values=fv)

    def enum(name, default, choices, help):
        flags.DEFINE_enum(name, default, list(choices), help, flag_values=fv)

    string("checkpoint", None, "jaxcc.train workdir, stages/<Label> or checkpoints/<n>")
    string("scenario", None, "a named scenario (jaxcc.scenarios)")
    string("scenario_file", None, "a scenario JSON file")
    enum("emulator", None, EMULATORS, "where the network runs")
    number("minutes", None, "how long the network runs (minutes, > 0)")
    string("out", None, "output directory (results.json, online.png, online_ckpt/)")
    string("learner", None, "address to listen on: unix:/abs/path or tcp:HOST:PORT (default OUT/learner.sock)")
    string("key", None, "pre-shared key file (>= 16 bytes after a trailing newline is stripped): the senders "
           "authenticate (protocol 2; the senders get --learner-key=FILE); required with a tcp: --learner")
    enum("buffers", "local", ("local", "shared"),
         "local: one agent+buffer per sender (the paper's); shared: one for all")
    integer("replicas", 0, "local buffers: how many (0: the scenario's policy flows)")
    integer("online_segment", 0, "online buffer segment size (0: Pareto: the largest stage's; MOCC: "
            "jaxcc.online.mocc.ONLINE_SIZE)")
    integer("grad_steps", 0, "gradient steps per learn batch (0: Pareto: config td3.grad_steps; MOCC: "
            "jaxcc.online.mocc.GRAD_STEPS)")
    integer("push_every", 64, "push weights every N gradient steps")
    number("updates_per_s", 40.0, "cap on gradient steps per second")
    number("replay_ratio", 1.0, "at most this many gradient steps per online transition (0: no cap)")
    number("lr_scale", 0.3, "online learning rates = this × the offline ones (a fresh online stage; --hp wins; "
           "0.3 from the learner study, checkpoints/pareto/online/README.md)")
    enum("reward", "queue", REWARDS,
         "online reward: local = Algorithm 1 + Pareto-Fair v2's utilization term as the sender estimates it "
         "(jaxcc.online.pareto.local_util); queue = local, less the standing queue's level at the utilization "
         "term's weight (jaxcc.online.pareto.queue_cost; from the fourth learner study, "
         "checkpoints/pareto/online/README.md); alg1 = Algorithm 1 alone (the paper's)")
    number("max_rate_window_s", 10.0, "--reward=local and queue: the window of the flow's largest delivery rate (s)")
    enum("new_priority", "config", ("config", "max", "one"),
         "priority of a new online transition: the offline config's rule, the largest seen, or 1 (the paper's "
         "initial value)")
    number("anchor", 10.0,
           "variant anchor (ours): weight of ((actor - offline actor) / half-range)^2 in the actor's loss (0: "
           "Algorithm 4 as the paper gives it; the default 10 was chosen on eagle/lte with pareto/link12 and "
           "pareto/dyn10-20 as the old links, checkpoints/pareto/online/README.md)")
    number("explore", 0.0, "--emulator=sim: behaviour noise of the learning arm's senders, σ as a fraction of "
           "the action's half-range (TD3's exploration, as td3.expl_noise offline; 0: none, the frozen arm never "
           "explores; jaxcc-sender has none)")
    integer("critic_warmup", 0, "online gradient steps that train the critics only (the actor's learning rate 0)")
    flags.DEFINE_multi_string("hp", [], "KEY=VALUE: override an online hyperparameter (Pareto: TD3's, e.g. "
                              "--hp=lr_actor=1e-4; MOCC: lr_scale) (repeatable)", flag_values=fv)
    string("preference", None, "MOCC runs: the application objective to fine-tune toward, THR,DELAY,LOSS (weights "
           ">= 0 summing to 1); every learned flow runs with it (jaxcc.online.mocc)")
    number("old_share", -1.0, "the share of each minibatch drawn from the offline experience (-1: the family's "
           "default: MOCC 0.5 from its frozen buffer, in [0, 1); Pareto none, every segment sampled by priority "
           "alone as Algorithm 4 does, else in (0, 1), the rest from the online segment)")
    integer("min_online", -1, "online transitions before learning (-1: batch size)")
    number("checkpoint_every_s", 30.0, "seconds between checkpoints of the online state")
    number("yield_ms", 5.0, "sleep after every learn batch (ms)")
    enum("fallback", "keep", ("keep", "bbr"), "what a sender runs while the learner is gone")
    number("learner_timeout_s", 5.0, "seconds without the learner before a sender falls back")
    flags.DEFINE_multi_string("sender_arg", [], "extra sender argument (repeatable)", flag_values=fv)
    string("old_envs", DEFAULT_OLD_ENVS, "scenarios for the forgetting check ('' for none)")
    integer("old_env_neighbours", OLD_ENV_NEIGHBOURS, "the forgetting check also runs this many neighbours of each "
            "--old-envs link (its flows' RTTs within ±3 %, starts up to 0.25 s later) and judges the change of "
            "their mean Ankh (0: the links alone)")
    string("prefix", "onl", "netns name prefix")
    number("speed", 1.0, "sim: simulated seconds per wall second (0: unpaced)")
    integer("seed", 0, "the learner's seed")
    enum("control", "none", ("none", "frozen"),
         "frozen: also run the frozen control (learning off) and compare the arms (compare.json, compare.md; "
         "jaxcc.online.compare); none: the learning run alone")
    string("learner_seeds", None, "with --control: the learner seeds, one pair of arms each, e.g. 0,1,2 "
           "(default: --seed)")
    integer("net_seed", -1, "--emulator=sim: the simulator's link seed (-1: with --control each pair's learner "
            "seed, else 0)")
    for name in ("checkpoint", "emulator", "minutes", "out"):
        flags.mark_flag_as_required(name, flag_values=fv)
    return dashed_aliases(fv)


def _check_args(a) -> None:
    if not a.minutes > 0:
        raise ValueError(f"--minutes={a.minutes}: must be > 0")
    if not 0 <= a.old_env_neighbours <= 256:
        raise ValueError(f"--old-env-neighbours={a.old_env_neighbours}: must be in [0, 256]")
    given = [x for x in (a.scenario, a.scenario_file) if x]
    if a.emulator not in ("external", "flood") and len(given) != 1:
        raise ValueError("give exactly one of --scenario, --scenario-file")
    for name, v, lo in (("--push-every", a.push_every, 1), ("--replicas", a.replicas, 0),
                        ("--online-segment", a.online_segment, 0), ("--grad-steps", a.grad_steps, 0)):
        if v < lo:
            raise ValueError(f"{name}={v}: must be >= {lo}")
    if a.speed < 0:
        raise ValueError(f"--speed={a.speed}: must be >= 0")
    if a.preference is not None:  # before the learner restores anything
        from jaxcc.online import mocc

        mocc.check_preference(_parse_preference(a.preference))
        if a.emulator == "sim":
            raise ValueError("--preference: the simulator backend runs pareto_v1 / pareto_v2 senders only; fine-tune "
                             "MOCC over --emulator=netns or mahimahi")
    if a.old_share != -1.0 and not 0.0 <= a.old_share < 1.0:
        raise ValueError(f"--old-share={a.old_share}: must be in [0, 1) (or -1: the family's default)")
    if not a.lr_scale > 0:
        raise ValueError(f"--lr-scale={a.lr_scale}: must be > 0")
    if not 0.0 <= a.explore <= 1.0:
        raise ValueError(f"--explore={a.explore}: must be in [0, 1] (a fraction of the action's half-range)")
    if a.explore > 0 and a.emulator != "sim":
        raise ValueError(f"--explore={a.explore}: only the simulator backend's senders explore (jaxcc-sender has no "
                         f"behaviour noise); use --emulator=sim")
    if a.critic_warmup < 0:
        raise ValueError(f"--critic-warmup={a.critic_warmup}: must be >= 0")
    if a.replay_ratio < 0:
        raise ValueError(f"--replay-ratio={a.replay_ratio}: must be >= 0")
    if not a.updates_per_s > 0:
        raise ValueError(f"--updates-per-s={a.updates_per_s}: must be > 0")
    if a.checkpoint_every_s <= 0:
        raise ValueError(f"--checkpoint-every-s={a.checkpoint_every_s}: must be > 0")
    if a.net_seed < -1:
        raise ValueError(f"--net-seed={a.net_seed}: must be >= 0 (or -1: the default)")
    if a.net_seed >= 0 and a.emulator != "sim":
        raise ValueError(f"--net-seed={a.net_seed}: only --emulator=sim draws its link from a seed "
                         f"(not --emulator={a.emulator})")
    if a.control == "none":
        if a.learner_seeds is not None:
            raise ValueError(f"--learner-seeds={a.learner_seeds}: needs --control=frozen")
        return
    if a.emulator in ("external", "flood"):
        raise ValueError(f"--control={a.control}: needs a network this command starts (--emulator=sim, netns or "
                         f"mahimahi), not --emulator={a.emulator}")
    if a.learner_seeds is not None:
        compare.parse_seeds(a.learner_seeds)
        if _given(a, "seed"):
            raise ValueError(f"--seed={a.seed} and --learner-seeds={a.learner_seeds}: give one of them")


def _parse_preference(text: str | None):
    """``--preference=a,b,c`` as three floats (checked by the learner), None when not given."""
    if text is None:
        return None
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(f"--preference={text}: expected 3 numbers >= 0 (throughput, delay, loss) summing to 1")


def with_preference(sc, w):
    """``sc`` with preference ``w`` (and no preference changes) on every flow that runs the learned
    policy (``jaxcc.emulation.spec.assign_controllers``: all but kept and kernel cross-traffic flows)."""
    import dataclasses

    from jaxcc.emulation.spec import assign_controllers

    mine = [c == "policy:learned" for c in assign_controllers(sc, "policy:learned")]
    flows = tuple(dataclasses.replace(f, preference=tuple(float(x) for x in w), preference_changes=())
                  if m else f for f, m in zip(sc.flows, mine))
    return dataclasses.replace(sc, flows=flows)


def _given(a, name: str) -> bool:
    """Whether flag ``name`` was on the command line (absl flags; False for a plain namespace)."""
    try:
        return bool(a[name].present)
    except (TypeError, KeyError, AttributeError):
        return False


def _parse_hp(items: list[str]) -> dict:
    out = {}
    for it in items:
        k, eq, v = it.partition("=")
        try:
            out[k.strip()] = float(v)
        except ValueError:
            eq = ""
        if not eq or not k.strip():
            raise ValueError(f"--hp {it!r}: expected KEY=NUMBER, e.g. --hp=lr_actor=1e-4")
    return out


def run(a, log=print) -> dict:
    """The whole command (``a``: the parsed flags of ``define_flags``); returns the results dict it
    also writes (with ``--control=frozen``: the comparison, ``run_control``)."""
    _check_args(a)
    if a.control != "none":
        return run_control(a, log)
    return _run_arm(a, log, out=a.out, seed=a.seed, learn=True, net_seed=max(a.net_seed, 0))


def run_control(a, log=print) -> dict:
    """``--control=frozen``: for each learner seed the learning arm and the frozen arm
    (``_run_arm`` with learning off), interleaved in ``compare.plan``'s order, each in
    ``compare.arm_dir``; then ``OUT/compare.json`` and ``OUT/compare.md`` (``jaxcc.online.compare``:
    the order, and what the arms of a seed share).  Returns the comparison."""
    _check_args(a)
    seeds = compare.parse_seeds(a.learner_seeds) if a.learner_seeds is not None else [a.seed]
    order = compare.plan(seeds)
    for s, arm in order:  # fresh arms only: a resumed arm would compare unlike with like
        d = compare.arm_dir(a.out, s, arm)
        if os.path.exists(os.path.join(d, "online_ckpt")):
            raise ValueError(f"--out={a.out}: {d} already holds an online run (online_ckpt); a control compares "
                             "fresh arms: give a new --out")
    per_seed: dict[int, dict[str, dict]] = {s: {} for s in seeds}
    for s, arm in order:
        net_seed = (a.net_seed if a.net_seed >= 0 else s) if a.emulator == "sim" else None
        out = compare.arm_dir(a.out, s, arm)
        log(f"[jaxcc.online] control: seed {s}, {arm} arm -> {out}")
        t0 = time.time()
        res = _run_arm(a, log, out=out, seed=s, learn=arm == "learning", net_seed=net_seed or 0)
        per_seed[s][arm] = {**res, "net_seed": net_seed, "out": os.path.abspath(out),
                            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0)),
                            "wall_s": time.time() - t0}
        gc.collect()  # the arm's learner (its replay buffers) before the next arm builds its own
    scen = per_seed[seeds[0]]["learning"].get("scenario")
    meta = {"scenario": scen, "emulator": a.emulator, "minutes": a.minutes, "control": a.control,
            "learner_seeds": seeds, "checkpoint": os.path.abspath(a.checkpoint),
            "command": _command(a),
            "held_equal": compare.held_equal(a.emulator)}
    doc = compare.compare(per_seed, order=order, meta=meta)
    compare.write(a.out, doc)
    return doc


def _command(a) -> str | None:
    """The command line of the flags given (absl flags; None for a plain namespace), for the report."""
    try:
        names = [n for n in a if a[n].present and "-" not in n]
    except (TypeError, AttributeError):
        return None
    parts = []
    for n in names:
        v = a[n].value
        for x in (v if isinstance(v, list) else [v]):
            parts.append(f"--{n.replace('_', '-')}={format(x, 'g') if isinstance(x, float) else x}")
    return "python -m jaxcc.online " + " ".join(parts)


def _run_arm(a, log, *, out: str, seed: int, learn: bool, net_seed: int) -> dict:
    """One run (one arm of a control): the flags ``a`` with ``out``, the learner's ``seed``,
    learning on or off (``Learner(learn=...)``; off: no forgetting check, the final actor is the
    start's) and the simulator's link seed ``net_seed``."""
    from jaxcc.online import auth, experience

    # The key before anything starts (a bad file or a tcp: learner without one: one line).
    key = auth.load_key(a.key, "--key") if a.key else None
    if a.learner:
        experience.check_key(a.learner, key)
    sc = None
    if a.scenario or a.scenario_file:
        from jaxcc import scenarios

        sc = (scenarios.get_scenario(a.scenario) if a.scenario
              else scenarios.load_scenario(a.scenario_file, allow_kernel=True))
    replicas = a.replicas or (policy_flow_count(sc) if sc is not None else (3 if a.emulator == "flood" else 1))
    learner = Learner(a.checkpoint, out, buffers=a.buffers, replicas=replicas,
                      online_segment=a.online_segment or None, grad_steps=a.grad_steps or None,
                      push_every=a.push_every, updates_per_s=a.updates_per_s,
                      min_online=None if a.min_online < 0 else a.min_online,
                      checkpoint_every_s=a.checkpoint_every_s, seed=seed, replay_ratio=a.replay_ratio,
                      hp=_parse_hp(a.hp), critic_warmup=a.critic_warmup,
                      lr_scale=a.lr_scale, reward=a.reward, max_rate_window_s=a.max_rate_window_s,
                      new_priority=a.new_priority, learn=learn, log=log,
                      # --anchor's default is Pareto's; a MOCC run (--preference) refuses only a given one
                      anchor_w=a.anchor if a.preference is None or _given(a, "anchor") else 0.0,
                      preference=_parse_preference(a.preference),
                      old_share=None if a.old_share == -1.0 else a.old_share)
    if learner.family == "mocc" and sc is not None:  # every learned flow runs with the new objective
        sc = with_preference(sc, learner.preference)
    addr = a.learner or default_address(out)
    server = experience.Server(addr, key=key)
    handle = None
    run_result = None
    flood = None
    t_wall0 = time.monotonic()
    try:
        if a.emulator == "flood":  # the learner benchmark: records as fast as the learner takes them
            import subprocess

            flood_out = os.path.join(learner.out, "flood.json")
            flood = subprocess.Popen([sys.executable, "-m", "jaxcc.online.experience", f"--learner={server.address}",
                                      f"--flows={learner.K}", f"--seconds={60.0 * a.minutes}",
                                      f"--policy={learner.v0_path}", f"--out={flood_out}",
                                      *([f"--key={os.path.abspath(a.key)}"] if a.key else [])])
            done = lambda: flood.poll() is not None  # noqa: E731
        elif a.emulator != "external":
            from jaxcc.online import network

            sender_args = [f"--fallback={a.fallback}", f"--learner-timeout-s={a.learner_timeout_s}",
                           *a.sender_arg]
            if learn and a.explore > 0:  # the learning arm's senders explore, on the learner seed's streams
                sender_args += [f"--explore={a.explore:g}", f"--explore-seed={seed}"]
            handle = network.start(a.emulator, sc, minutes=a.minutes, policy_path=learner.start_actor_path,
                                      learner=server.address, sender_args=sender_args,
                                      out_dir=os.path.join(learner.out, "net"), prefix=a.prefix, speed=a.speed,
                                      learner_key=a.key, seed=net_seed)
            done = handle.done
            if getattr(handle, "pid", None):  # a child-process network outlives a killed learner
                with open(os.path.join(learner.out, "net.pid"), "w") as f:
                    f.write(f"{handle.pid}\n")
        else:
            end = time.monotonic() + 60.0 * a.minutes

            def done():  # --minutes up, or every sender that said HELLO has said BYE and left
                finished = bool(learner.byes) and set(learner.byes) >= set(learner.hellos)
                return time.monotonic() >= end or (finished and not server.connected())
        while not done():
            learner.tick(server, yield_s=a.yield_ms / 1e3)
        if handle is not None:
            run_result = handle.wait()
        if flood is not None and flood.returncode != 0:
            raise RuntimeError(f"the flooding senders (python -m jaxcc.online.experience) exited {flood.returncode}")
        # the last records and BYEs
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            evs = server.drain(timeout=0.1)
            learner.handle(evs)
            if not evs and (not server.connected()):
                break
        learner.flush()
        learner.checkpoint()
        wall = time.monotonic() - t_wall0
    finally:
        server.close()
        learner.close()

    # windows: the network's own logs (first and last minute of the run)
    dur = 60.0 * a.minutes
    w = min(60.0, dur)
    if run_result is not None:
        from jaxcc.online import network

        first = dict(network.window_record(run_result, 0.0, w))
        last = dict(network.window_record(run_result, dur - w, dur))
        src = a.emulator
    else:
        dur = max([r[1] for r in learner.timeline], default=dur)  # the senders' clock: they may end early
        w = min(60.0, dur)
        first, last = learner.records_window(0.0, w), learner.records_window(dur - w, dur)
        first["utilization"] = last["utilization"] = None
        first["p95_owd_ms"] = last["p95_owd_ms"] = None
        src = "records"
    ankh_pair(first, last)
    gap, gap_src = learner.max_decision_gap()
    old_envs = a.old_envs
    if learner.family == "mocc" and not _given(a, "old_envs"):  # Pareto's links are not MOCC's
        old_envs = MOCC_OLD_ENVS
    names = [n.strip() for n in old_envs.split(",") if n.strip()] if learn else []
    final = os.path.join(learner.out, "policy_final.safetensors")
    write_atomic(final, open(learner.latest_path, "rb").read())
    forget = old_env_check(learner.v0_path, final, names, neighbours=a.old_env_neighbours)
    tl = learner.timeline_bins()
    res: dict[str, Any] = {
        "checkpoint": os.path.abspath(a.checkpoint), "start_policy": learner.label,
        "scenario": sc.name if sc is not None else None, "emulator": a.emulator, "minutes": a.minutes,
        "buffers": a.buffers, "replicas": learner.K, "replay_ratio": a.replay_ratio,
        "updates_per_s": a.updates_per_s, "push_every": a.push_every, "resumed": learner.resumed,
        "hp": {k: float(v) for k, v in learner.ostate["hp"].items()},
        "learning": bool(learn), "seed": int(seed), "net_seed": int(net_seed) if a.emulator == "sim" else None,
        "family": learner.family, "preference": list(learner.preference) if learner.preference else None,
        "old_share": learner.old_share, "online_sample_share": learner.online_sample_share(),
        "explore": a.explore if learn else 0.0,
        "critic_warmup": a.critic_warmup, "lr_scale": a.lr_scale, "reward": learner.reward, "anchor": learner.anchor_w, "new_priority": "max" if learner.new_priority_max else "one",
        "max_rate_window_s": learner.max_rate_window_s,
        "sessions": learner.meta["sessions"],
        "first_minute": first, "last_minute": last, "window_source": src,
        "updates_applied": int(learner.counters["updates_applied"]),
        "weights_rejected": int(learner.counters["weights_rejected"]),
        "weights_superseded": int(learner.counters["weights_superseded"]),
        "records_dropped": learner.records_dropped(server),
        "max_decision_gap_s": gap, "max_decision_gap_source": gap_src,
        # the forgetting check: each old link as named (one run per actor) and the mean over its neighbours
        "old_env_before": {k: v["before"] for k, v in forget.items()},
        "old_env_after": {k: v["after"] for k, v in forget.items()},
        "old_env_ankh_change": {k: v["change"] for k, v in forget.items()},
        "old_env_neighbours": a.old_env_neighbours,
        "old_env_neighbourhood_change": {k: v["neighbourhood_change"] for k, v in forget.items()},
        "old_env_neighbourhood_sd": {k: v["neighbourhood_sd"] for k, v in forget.items()},
        "weight_version": int(learner.meta["version"]), "weight_pushes": len(learner.meta["pushes"]),
        "grad_steps": learner.grad_steps_run, "grad_steps_total": int(learner.meta["grad_steps"]),
        "records": int(learner.counters["records"]), "transitions": int(learner.counters["transitions"]),
        "records_per_s": learner.counters["records"] / max(wall, 1e-9), "wall_s": wall,
        "record_gaps": sum(t.gaps for t in learner.tracks.values()),
        "learner_events_dropped": int(server.counters["events_dropped"]),
        "protocol_errors": int(server.counters["protocol_errors"]),
        "auth": "none" if key is None else "psk-hmac-sha256",
        "auth_refused": int(server.counters["auth_refused"]), "auth_refusals": list(server.auth_refusals),
        "hello_other_policy": int(learner.counters["hello_other_policy"]),
        "senders": {str(f): {"hello": learner.hellos.get(f), "bye": learner.byes.get(f),
                             "replica": learner.replica(f),
                             "records": learner.tracks[f].records if f in learner.tracks else 0,
                             "feature_err": learner.tracks[f].feature_err if f in learner.tracks else None}
                    for f in sorted(set(learner.hellos) | set(learner.tracks))},
        "acks": learner.acks, "pushes": learner.meta["pushes"], "learn": learner.learn_metrics[-50:],
        "records_first_minute": learner.records_window(0.0, w),
        "records_last_minute": learner.records_window(dur - w, dur),
        "timeline": tl,
        # when the flows' 5-s throughput and mean RTT entered, and stayed within 10 % of, the last minute's
        "operating_point": operating_point_time(learner.timeline_bins(OP_BIN_S), bin_s=OP_BIN_S, last_s=w),
    }
    if flood is not None:  # the benchmark's own counts beside what the learner took
        with open(os.path.join(learner.out, "flood.json")) as f:
            res["flood"] = json.load(f)
    if run_result is not None and isinstance(run_result, dict):
        res["network"] = {k: v for k, v in run_result.items() if isinstance(v, (int, float, str, bool, type(None)))}
    with open(os.path.join(learner.out, "results.json"), "w") as f:
        json.dump(res, f, indent=1, default=_json_default)
    plot(os.path.join(learner.out, "online.png"), tl, learner.meta["pushes"])
    return res


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def main(fv, argv: Sequence[str] = ()) -> int:
    """Run the command with parsed flags ``fv`` (``define_flags``); returns the exit status."""
    res = run(fv, log=lambda s: print(s, file=sys.stderr))
    if fv.control != "none":
        print(compare.markdown(res), end="")
        print(f"[jaxcc.online] {os.path.join(os.path.abspath(fv.out), 'compare.json')}")
        return 0
    print(json.dumps({k: res[k] for k in ("first_minute", "last_minute", "updates_applied", "weights_rejected",
                                          "records_dropped", "max_decision_gap_s")}, default=_json_default))
    print(f"[jaxcc.online] {os.path.join(os.path.abspath(fv.out), 'results.json')}")
    return 0


def run_cli(argv: Sequence[str]) -> int:
    """Parse ``argv`` (program name first) into fresh flags and run; errors print one line, exit 2."""
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
    from jaxcc import online
    from jaxcc.cli import run_absl_cli
    from jaxcc.emulation.host import EmulationError

    return run_absl_cli(argv, online.__doc__, define_flags, main, "--checkpoint=DIR --emulator=sim",
                        user_errors=(EmulationError,))


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
