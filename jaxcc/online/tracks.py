"""A sender's records turned into transitions: the flow's window ring of the last T feature
vectors, the action it took, and the reward from the record's sums: Algorithm 1's for Pareto
(``FlowTrack``), §IV-A's vector for MOCC (``MoccTrack``)."""

from __future__ import annotations

import collections
import math

import numpy as np



# ----------------------------------------------------------------------------- records -> transitions


def _take(track, fx: np.ndarray, feats: np.ndarray) -> tuple[int, bool]:
    """A track's bookkeeping for one record: counts it, checks its feature count, and after a gap
    in ``seq`` (or at the first record) starts the window again (``empty`` rows before seq 0) and
    drops the transition under way.  Returns (seq, whether it follows the previous record)."""
    from jaxcc.online.experience import F

    track.records += 1
    track.dropped = float(fx[F["records_dropped"]])
    seq = int(fx[F["seq"]])
    if feats.shape != (track.D,):
        raise ValueError(f"RECORD with {feats.shape[0]} features; the policy's windows have D={track.D}")
    contiguous = track.prev_seq is not None and seq == track.prev_seq + 1
    if not contiguous:
        if track.prev_seq is not None:
            track.gaps += 1
        track.win.clear()
        track.pending = None
        if seq == 0:
            for _ in range(track.T - 1):
                track.win.append(track.empty)
    track.prev_seq = seq
    return seq, contiguous


class FlowTrack:
    """One flow's view: its window ring, Algorithm 1's memory and the transition under way.

    Record k carries the MI that ended at decision k, the features appended at decision k and
    the action a_k taken then.  Its transition is (window_k, a_k, r_{k+1}, window_{k+1}): the
    reward is Algorithm 1 on the *next* record's MI, the interval a_k governed, exactly as the
    offline environment steps (apply the action, run one MI, observe).  The window is the last T
    feature vectors (``empty`` rows before the first decision, as the sender starts); after a gap
    in ``seq`` (records the sender dropped) it is rebuilt from T consecutive records and
    Algorithm 1's memory restarts (keeping the delay flag the features carry), so no transition
    spans a gap.
    """

    def __init__(self, T: int, D: int, empty, a_range, reward_fn, max_rate_window_s: float | None = None):
        self.T, self.D = T, D
        # Variants ``local`` and ``queue`` (``--reward``): the largest MI delivery rate of the last
        # ``max_rate_window_s`` seconds of the flow, Pareto-Fair v2's utilization term as a sender sees it.
        self.max_rate_window_s = max_rate_window_s
        self.rates: collections.deque = collections.deque()  # (t_s, delivery rate B/s)
        self.empty = np.asarray(empty, np.float32)
        self.lo, self.hi = a_range
        self.reward_fn = reward_fn
        self.win: collections.deque = collections.deque(maxlen=T)
        self.memory = None  # jaxcc.envs.pareto.ParetoFlow of one flow
        self.prev_seq = None
        self.pending = None  # (window [T, D], action)
        self.gaps = 0
        self.dropped = 0.0  # the sender's records_dropped in its last record
        self.records = 0
        # Largest relative difference (|own − sender's| / max(1, |sender's|)) between the features
        # this learner derives from a record's MI sums (Algorithm 1's inputs) and the features the
        # sender appended: a check that both read the same interval the same way.
        self.feature_err = 0.0

    def action_of(self, fx) -> float | None:
        from jaxcc.online.experience import F

        a = fx[F["action"]]
        if math.isfinite(a):
            return float(np.clip(a, self.lo, self.hi))
        rb, ra = fx[F["rate_before"]], fx[F["rate_after"]]
        if rb > 0 and math.isfinite(ra):  # the fallback (BBR) decided: the action its rate change implies
            return float(np.clip(ra / rb - 1.0, self.lo, self.hi))
        return None

    def push(self, fx: np.ndarray, feats: np.ndarray):
        """Consume one record; returns a transition dict or None."""
        from jaxcc.online.experience import F, MI_COLS
        from jaxcc.envs import pareto as penv

        seq, contiguous = _take(self, fx, feats)
        if not contiguous:
            self.memory = penv.zero_flows(1)
        args = (self.memory, fx[MI_COLS][None], np.asarray([fx[F["min_rtt_s"]]]))
        if self.max_rate_window_s is not None:
            t, dur = float(fx[F["t_s"]]), float(fx[F["mi_duration"]])
            self.rates.append((t, float(fx[F["mi_acked"]]) / dur if dur > 0 else 0.0))
            while self.rates and self.rates[0][0] < t - self.max_rate_window_s:
                self.rates.popleft()
            args += (np.asarray([max(x for _, x in self.rates)], np.float32),)
        r, own, new = self.reward_fn(*args)
        if contiguous or seq == 0:  # the features re-derived from the MI sums against the sender's own
            err = np.abs(np.asarray(own, np.float64)[0] - feats)
            self.feature_err = max(self.feature_err, float(np.max(err / np.maximum(1.0, np.abs(feats)))))
        if not contiguous and seq > 0:  # restart mid-flow: keep the flag of "delay experienced"
            new = new.replace(exp_delay=new.exp_delay | (feats[0] > 0.5))
        self.memory = new
        self.win.append(feats.astype(np.float32))
        out = None
        full = len(self.win) == self.T
        if self.pending is not None and full:
            w0, a0 = self.pending
            out = {"obs": w0, "action": np.float32(a0), "reward": np.float32(np.asarray(r)[0]),
                   "next_obs": np.stack(self.win), "done": np.float32(0.0)}
        a = self.action_of(fx)
        self.pending = (np.stack(self.win), a) if full and a is not None else None
        return out


class MoccTrack:
    """One MOCC flow's view (``jaxcc.online.mocc``): its window ring, its max ACK rate so far
    and the transition under way.

    As ``FlowTrack``: record k's transition is (window_k, a_k, r_{k+1}, window_{k+1}) with the
    reward §IV-A's vector on the next record's MI (``reward_fn(mi16, min_rtt, max_ack)`` ->
    (reward [1, 3], features [1, 3])), and no transition spans a gap in ``seq``.  The action is
    the discrete index the sender recorded; a decision without one (the fallback decided) is not
    stored, nor the decision §IV-B's init-cwnd overrode (record ``init_step − 1``: the sender's
    step counter reaches ``init_step`` at that record's decision), as offline.  The window rows
    are flattened as MOCC's replay stores them.
    """

    def __init__(self, T: int, D: int, empty, n_actions: int, init_step: int, reward_fn, max_ack_ewma: float = 1.0):
        self.T, self.D = T, D
        self.empty = np.asarray(empty, np.float32)
        self.n_actions, self.init_step = int(n_actions), int(init_step)
        self.reward_fn = reward_fn
        self.win: collections.deque = collections.deque(maxlen=T)
        # The flow's max ACK rate (B/s), as the sender's features keep it: the running max of an
        # EWMA of the MI ACK rate with weight ``max_ack_ewma`` (1: of the rate itself).
        self.max_ack = 0.0
        self.max_ack_ewma = float(max_ack_ewma)
        self.ack_ewma = None  # the EWMA, from the first record on
        self.prev_seq = None
        self.pending = None  # (window [T*D], action index)
        self.gaps = 0
        self.dropped = 0.0
        self.records = 0
        self.skipped_override = 0
        # Largest relative difference between features 0–2 re-derived here and the sender's own.
        self.feature_err = 0.0

    def push(self, fx: np.ndarray, feats: np.ndarray):
        """Consume one record; returns a transition dict or None."""
        from jaxcc.online.experience import F, MI_COLS

        seq, contiguous = _take(self, fx, feats)
        dur = float(fx[F["mi_duration"]])
        ack = float(fx[F["mi_acked"]]) / max(dur, 1e-30)
        alpha = self.max_ack_ewma
        self.ack_ewma = ack if self.ack_ewma is None else (1.0 - alpha) * self.ack_ewma + alpha * ack
        self.max_ack = max(self.max_ack, self.ack_ewma)
        r, own = self.reward_fn(fx[MI_COLS][None], np.asarray([fx[F["min_rtt_s"]]]), np.asarray([self.max_ack]))
        if contiguous or seq == 0:
            err = np.abs(np.asarray(own, np.float64)[0] - feats[:3])
            self.feature_err = max(self.feature_err, float(np.max(err / np.maximum(1.0, np.abs(feats[:3])))))
        self.win.append(feats.astype(np.float32))
        out = None
        full = len(self.win) == self.T
        if self.pending is not None and full:
            w0, a0 = self.pending
            out = {"obs": w0, "action": np.int32(a0), "reward": np.asarray(r, np.float32)[0],
                   "next_obs": np.stack(self.win).reshape(-1), "done": np.float32(0.0)}
        a = fx[F["action"]]
        ok = math.isfinite(a) and 0 <= a < self.n_actions and a == int(a)
        if seq == self.init_step - 1:
            self.skipped_override += 1
            ok = False
        self.pending = (np.stack(self.win).reshape(-1), int(a)) if full and ok else None
        return out
