// The deployed sender's safety net, once per monitor interval (MI): the guard against raising
// the rate in the dark and the runtime monitor that hands the pacing to the in-sender BBR.
//
// Twin of jaxcc/senders/safety.py (its docstring gives every threshold's reason); the parity
// vector tests/vectors/safety.json holds the two to the same numbers (vectors_test.cc).
//   NoFeedback  the MI brought back no ACKed byte and no RTT sample;
//   Guard       a decision on such an MI may lower the rate and window, never raise them;
//   SafetyMonitor
//               bad MI: no ACK, or loss >= kLossEnter; good MI: ACKs and loss < kLossExit.
//               enter_mis bad MIs in a row, kMinEnterS long in all: BBR paces; exit_mis good
//               MIs in a row: the policy
//               decides again, from the rate BBR left in force.
#pragma once

#include <cstdint>

#include "monitor.h"

namespace jaxcc {

// Half of what the flow learned about was lost: sending at twice the capacity.
constexpr double kLossEnter = 0.5;
// Less than a 1.25x probe of a full link loses: the link carries the flow again.
constexpr double kLossExit = 0.2;
// Three round trips out of the envelope, and never less than Linux's minimum RTO (200 ms; an
// ACK thread may stall for milliseconds on a busy host) before BBR paces; three round trips
// of ACKs with little loss before the policy resumes.
constexpr double kEnterRtts = 3.0;
constexpr double kMinEnterS = 0.2;
// The streak meets kMinEnterS to a microsecond (float32 sums in the simulator round low).
constexpr double kTimeSlackS = 1e-6;
constexpr double kExitRtts = 3.0;

// Both engage once the path has answered (an RTT sample so far): a first round trip without
// ACKs is the path's delay, not a dark link (safety.py says what guarding it cost).

// Whole MIs of mi_rtts min RTTs that cover `rtts` min RTTs (at least 1), as safety.mis_for.
int MisFor(double rtts, double mi_rtts);

bool NoFeedback(const MonitorStats& mi);

// The decision's *rate / *cwnd, no higher than those in force (rate_in, cwnd_in) when `dark`.
void Guard(bool dark, double rate_in, double cwnd_in, double* rate, double* cwnd);

class SafetyMonitor {
 public:
  SafetyMonitor(int enter_mis, int exit_mis) : enter_mis_(enter_mis), exit_mis_(exit_mis) {}
  // One closed MI of `duration` s; returns fallback() after it (the switch applies from the
  // next MI on). `answered`: the flow has had an RTT sample, this MI's included; before it
  // nothing changes.
  bool Step(double acked, double lost, double n_samples, double duration, bool answered);

  bool fallback() const { return fallback_; }
  int bad_run() const { return bad_run_; }
  double bad_s() const { return bad_s_; }  // the bad MIs' summed durations
  int good_run() const { return good_run_; }
  uint64_t entries() const { return entries_; }            // times BBR took over
  uint64_t fallback_mis() const { return fallback_mis_; }  // MIs closed while BBR paced
  int enter_mis() const { return enter_mis_; }
  int exit_mis() const { return exit_mis_; }

 private:
  int enter_mis_, exit_mis_;
  bool fallback_ = false;
  int bad_run_ = 0, good_run_ = 0;
  double bad_s_ = 0;
  uint64_t entries_ = 0, fallback_mis_ = 0;
};

}  // namespace jaxcc
