"""Pareto-Fair v2 on the simulator side (jaxcc/envs/pareto.py): the robust training distribution,
the link-wide reward terms, the validation links, and the paper mode left as it was."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc import scenarios, units
from jaxcc.envs import make_env
from jaxcc.envs import mi as mi_lib
from jaxcc.envs import pareto
from jaxcc.envs.base import LinkMI


def _robust(num_flows, stage, **kw):
    env, p = make_env("pareto", num_flows=num_flows, feature_set="pareto_v2")
    p = p.replace(stage=jnp.asarray(stage, jnp.int32), robust=jnp.float32(1.0),
                  **{k: jnp.float32(v) for k, v in kw.items()})
    return env, p


def test_v2_config_has_six_features_and_the_narrow_action_range():
    env, _ = make_env("pareto", feature_set="pareto_v2")
    assert env.config.obs_dim == 6 and env.action_spec() == {"kind": "continuous", "low": -0.3, "high": 0.5}
    spec = pareto.export_features_spec(env.config)
    assert spec["name"] == "pareto_v2" and spec["obs_dim"] == 6 and len(spec["feature_names"]) == 6
    assert (spec["action_low"], spec["action_high"]) == (-0.3, 0.5)
    env1, _ = make_env("pareto")
    assert env1.config.obs_dim == 5 and env1.action_spec()["high"] == 2.0
    with pytest.raises(ValueError, match="feature_set: unknown Pareto feature set 'pareto_v9'"):
        make_env("pareto", feature_set="pareto_v9")


def test_robust_shared_links_stay_inside_their_ranges():
    env, p = _robust(4, pareto.STAGE_FAIRNESS, flows_lo=2, flows_hi=4)
    inits = jax.jit(jax.vmap(lambda k: env.sample_episode(k, p)))(jax.random.split(jax.random.PRNGKey(3), 400))
    link = inits.link
    rtt = np.asarray(link.rtt)
    bw = np.asarray(link.cap_bps)[:, 0] / units.MBPS
    assert np.all((bw >= 5.0 * 0.999) & (bw <= 100.0 * 1.001))
    assert np.all((rtt >= 0.03 * 0.999) & (rtt <= 0.15 * 1.001))
    assert np.all(rtt == rtt[:, :1])  # one RTT per link
    # Fixed capacity on shared links (no steps outside the advance stage).
    assert np.all(np.asarray(link.cap_bps) == np.asarray(link.cap_bps)[:, :1])
    bdp = bw * units.MBPS * rtt[:, 0]
    ratio = np.asarray(link.buffer_bytes) / bdp
    assert np.all((ratio >= 0.5 * 0.999) & (ratio <= 6.0 * 1.001))
    n = np.sum(np.asarray(link.stop) > 0, axis=1)
    assert set(np.unique(n)) == {2, 3, 4}  # all three flow counts are drawn
    start = np.asarray(link.start)
    assert np.all(start[:, 0] == 0) and np.all(np.diff(start, axis=1) >= 0)
    assert np.all(np.diff(start, axis=1) <= 2.0 + 1e-5)
    share = bw * units.MBPS / n
    frac = np.asarray(inits.rate) / share[:, None]
    assert np.all((frac >= 0.01 * 0.999) & (frac <= 2.0 * 1.001))
    assert frac.min() < 0.02 and frac.max() > 1.5  # far below and far above the fair share
    # Some later flows leave before the episode's end, never the first.
    stop = np.asarray(link.stop)
    assert np.all(stop[:, 0] == 1e9) and np.any((stop[:, 1:] > 0) & (stop[:, 1:] < 1e9))


def test_robust_capacity_steps_go_up_and_down_by_the_drawn_ratio():
    env, p = _robust(1, pareto.STAGE_ADVANCE, p_dynamic=1.0)
    link = jax.jit(jax.vmap(lambda k: env.sample_episode(k, p).link))(jax.random.split(jax.random.PRNGKey(5), 200))
    cap = np.asarray(link.cap_bps)
    hi_lo = cap.max(axis=1) / cap.min(axis=1)
    assert np.all((hi_lo >= 2.0 * 0.999) & (hi_lo <= 10.0 * 1.001))
    up_first = cap[:, 0] < cap[:, 1]
    assert 0.3 < up_first.mean() < 0.7  # steps up first and down first
    every = np.asarray(link.cap_t)[:, 1] - np.asarray(link.cap_t)[:, 0]
    assert np.all((every >= 2.0 - 1e-4) & (every <= 6.0 + 1e-4))


def test_paper_mode_draws_the_papers_links():
    env, p = make_env("pareto-fairness")
    link = jax.jit(env.sample_episode)(jax.random.PRNGKey(0), p).link  # one program, not op by op
    np.testing.assert_allclose(np.asarray(link.rtt), [0.09, 0.09])
    np.testing.assert_allclose(float(link.buffer_bytes), 440_000.0)
    np.testing.assert_allclose(np.asarray(link.start), [0.0, 2.0])


def _mi(acked, active, duration=0.18):
    m = mi_lib.mi_zero(len(acked))
    return m.replace(acked=jnp.asarray(acked, jnp.float32), active=jnp.asarray(active, jnp.float32),
                     duration=jnp.full((len(acked),), duration, jnp.float32))


def test_link_terms_by_hand():
    p = make_env("pareto-fairness")[1].replace(fair_w=jnp.float32(10.0), util_w=jnp.float32(5.0))
    R = jnp.asarray([1e6, 3e6, 5e6], jnp.float32)  # bytes/s; the third flow is not active
    m = _mi([0.18e6, 0.54e6, 9e6], [0.18, 0.18, 0.0])
    lmi = LinkMI(cap_bytes=jnp.float32(0.9e6), queue_end=jnp.float32(0.0))
    got = np.asarray(pareto.link_terms(R, m, lmi, p))
    util = (0.18e6 + 0.54e6) / 0.9e6  # 0.8: the inactive flow's bytes do not count
    np.testing.assert_allclose(got[:2], [-10 * abs(np.log(0.5)) + 5 * util, -10 * abs(np.log(1.5)) + 5 * util],
                               rtol=1e-5)
    assert got[2] == 0.0
    # A lone flow pays no fairness term; utilization is capped at 1.
    alone = np.asarray(pareto.link_terms(R[:1], _mi([2e6], [0.18]), lmi, p))
    np.testing.assert_allclose(alone, [5.0], rtol=1e-6)
    # The paper's weights (0, 0) add nothing.
    p0 = make_env("pareto-fairness")[1]
    assert np.all(np.asarray(pareto.link_terms(R, m, lmi, p0)) == 0.0)


def _named_links():
    out = []
    for name in scenarios.list_scenarios():
        sc = scenarios.get_scenario(name)
        d = sc.to_dict()
        link = d["link"]
        rtts = sorted({f["rtt_ms"] for f in d["flows"]})
        out.append((name, link, rtts))
    return out


def test_validation_links_differ_from_every_named_scenario():
    """Honest selection: no validation link, nor one with a CUBIC neighbour, shares its bandwidth
    and RTT (or its step pair) with a named evaluation scenario."""
    named = _named_links()
    assert len(named) > 40
    coexist = [(bw, 1.0, 5.0, 1.0, rtt, buf, 1, 0.0, 0.25) for bw, rtt, buf in pareto.COEXIST_VALIDATION_LINKS]
    for bw, ratio, every, low1st, rtt, buf, flows, gap, init in pareto.VALIDATION_LINKS + tuple(coexist):
        rtt_ms = rtt * 1000.0
        for name, link, rtts in named:
            same_rtt = any(abs(r - rtt_ms) < 1.0 for r in rtts)
            if "bandwidth_mbps" in link:
                assert not (same_rtt and abs(link["bandwidth_mbps"] - bw) < 0.5), (name, bw, rtt)
            if "schedule" in link:
                rates = sorted({r for _, r in link["schedule"]})
                assert not (same_rtt and abs(rates[0] - bw) < 0.5), (name, bw, rtt)
                assert not (abs(rates[0] - min(bw, bw * ratio)) < 0.5 and abs(rates[-1] - max(bw, bw * ratio)) < 0.5), name


def test_validation_params_are_point_masses_of_the_robust_distribution():
    env, p = make_env("pareto", num_flows=pareto.VALIDATION_FLOWS, feature_set="pareto_v2")
    vp = pareto.validation_params(p)
    assert vp.robust.shape == (len(pareto.VALIDATION_LINKS),)
    sample = jax.jit(env.sample_episode)  # one program for every row, not op by op
    for i, (bw, ratio, every, low1st, rtt, buf, flows, gap, init) in enumerate(pareto.VALIDATION_LINKS):
        row = jax.tree.map(lambda x: x[i], vp)
        a = sample(jax.random.PRNGKey(1), row)
        b = sample(jax.random.PRNGKey(2), row)
        jax.tree.map(np.testing.assert_array_equal, a.link, b.link)  # the key changes nothing
        np.testing.assert_allclose(float(a.link.cap_bps[0]) / units.MBPS, bw if low1st or ratio == 1 else bw * ratio,
                                   rtol=1e-5)
        np.testing.assert_allclose(float(a.link.rtt[0]), rtt, rtol=1e-6)
        np.testing.assert_allclose(float(a.link.buffer_bytes), buf * bw * units.MBPS * rtt, rtol=1e-4)
        assert int(np.sum(np.asarray(a.link.stop) > 0)) == flows
        np.testing.assert_allclose(np.asarray(a.link.start)[:flows], np.arange(flows) * gap, atol=1e-5)


def test_unknown_env_param_is_a_one_line_error_naming_it():
    from jaxcc.agents.pareto import env_adapter

    with pytest.raises(ValueError, match=r"^config.env.params: unknown field\(s\) \['fair_weight'\] of ParetoParams; allowed: "):
        env_adapter.make_stage_env("fairness", params={"fair_weight": 1.0})
    se = env_adapter.make_stage_env("fairness", overrides={"feature_set": "pareto_v2", "num_flows": 4},
                                    params={"fair_w": 3.0, "robust": 1.0})
    assert float(se.params.fair_w) == 3.0 and int(se.params.stage) == pareto.STAGE_FAIRNESS
    assert se.a_range == (-0.3, 0.5) and se.obs_dim == 6 and se.feature_info["name"] == "pareto_v2"
