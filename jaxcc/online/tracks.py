"""A sender's records turned into transitions (``FlowTrack``): the flow's window ring of the last
T feature vectors, the action it took, and Algorithm 1's reward from the record's sums."""

from __future__ import annotations

import collections
import math

import numpy as np



# ----------------------------------------------------------------------------- records -> transitions


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
        # Variant ``local`` (``--reward=local``): the largest MI delivery rate of the last
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

        self.records += 1
        self.dropped = float(fx[F["records_dropped"]])
        seq = int(fx[F["seq"]])
        if feats.shape != (self.D,):
            raise ValueError(f"RECORD with {feats.shape[0]} features; the policy's windows have D={self.D}")
        contiguous = self.prev_seq is not None and seq == self.prev_seq + 1
        if not contiguous:
            if self.prev_seq is not None:
                self.gaps += 1
            self.win.clear()
            self.pending = None
            self.memory = penv.zero_flows(1)
            if seq == 0:
                for _ in range(self.T - 1):
                    self.win.append(self.empty)
        self.prev_seq = seq
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
