// The decision side of jaxcc-sender: class DecisionLoop, once per monitor interval (MI).
//
// jaxcc-sender's decision thread drives one DecisionLoop and does only the waiting and the MI
// hand-over from the ACK thread; everything it decides is here, with no socket and no thread
// of its own, so a test can drive it MI by MI with made-up statistics and clocks:
//   Start          (policy) the paper's starting rate/cwnd and the first decision, taken on
//                  the empty history before the first packet, as the environments act at reset;
//   BeginInterval  the first MI starts;
//   IntervalEnd    when the MI in progress ends (mi_rtts x min RTT, at least --min-mi-ms; before
//                  the first RTT sample --initial-mi-ms);
//   CloseInterval  one finished MI: its send/duration figures, the running statistics, the
//                  safety monitor (src/safety.h) and the learner's BBR handover (who paces),
//                  the learner's weights, a pending goal change from the control
//                  input, the features, DeepCC goal tuning, the history window, the policy and
//                  Decide (new rate/cwnd published to the pacer; the safety guard on an MI
//                  without feedback), the learner record and the --log row;
//   AddSummary     the policy's part of the --summary JSON.
// Without a policy (fixed:MBPS, bbr) CloseInterval only measures and writes the --log row.
// ReadControlInput is the reader of --control-stdin whose changes CloseInterval applies.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "goal_tuning.h"
#include "mi_features.h"
#include "monitor.h"
#include "policy.h"
#include "safety.h"

namespace jaxcc {

struct FlowShared;
class LearnerLink;

// The shortest decimal that reads back as the same float (0.6f -> "0.6", not 0.600000024).
std::string ShortFloat(float x);
// A goal as the --log column writes it: ShortFloat values joined by ';' ("" when empty).
std::string JoinGoal(const std::vector<float>& g);
// A goal as a JSON array of the ShortFloat values.
nlohmann::json GoalJson(const std::vector<float>& g);

// Sets the 17 significant digits every --log number is written with (each one round-trips, so
// a run can be replayed exactly through the Python sender) and writes the header line.
void WriteDecisionLogHeader(std::ostream& log);

// A goal change received on the control input (--control-stdin), waiting for the next decision.
// Written by the control thread, taken by CloseInterval.
struct GoalControl {
  std::mutex mu;
  std::atomic<bool> pending{false};
  std::vector<float> goal;  // guarded by mu (a preference/goal line)
  bool is_target = false;   // guarded by mu: a target line (GoalTuner), `target` holds it
  GoalTuner::Vec target{};
  double received_s = 0;    // seconds since the start of sending (the --log clock)
  int line = 0;             // control input line number (1-based)
};

// Reads control lines (src/preference.h, ControlLine) from `fd` until *stop or end of input
// (jaxcc-sender: fd 0 on its own thread, --control-stdin) and leaves each accepted change in
// *gc (replacing one not yet applied), received_s measured from t0_ns (CLOCK_MONOTONIC). `why_not` is the reason this sender
// cannot take a preference or goal ("" if it can), `why_not_target` a target. A line refused
// for that, malformed or longer than 4096 bytes is reported on `err` (null: std::cerr) and
// ignored; an accepted one is reported there too. Never blocks longer than 50 ms.
void ReadControlInput(int fd, const std::atomic<bool>* stop, GoalControl* gc, const std::string& why_not,
                      const std::string& why_not_target, uint64_t t0_ns, std::ostream* err);

struct DecisionOptions {
  double mi_rtts = 1;          // MI length in min RTTs (a policy's spec.mi_rtts)
  double min_mi_ms = 1;        // shortest MI
  double initial_mi_ms = 1000; // longest MI before the first RTT sample
  // The goal in force (a policy with goal_dim > 0: goal_dim values, checked by the caller).
  std::vector<float> goal;
  bool target_given = false;   // DeepCC online goal tuning from the start (--target)
  GoalTuner::Vec target{};
  GoalTuner::Mode tuner = GoalTuner::kDefaultMode;  // --tuner: which tuner a target (flag or line) gets
  // A policy's safety net (src/safety.h): the guard and the monitor that hands the pacing to
  // BBR (DecisionIo::bbr_drives). Off: the raw policy (--raw-policy).
  bool safety = true;
};

// What CloseInterval reads and writes outside the loop; owned by the caller, null = absent.
struct DecisionIo {
  FlowShared* flow = nullptr;                     // required: rate/cwnd in force, sent_bytes
  const std::atomic<double>* min_rtt = nullptr;   // required: the ACK thread's min RTT (s, 0 = none)
  // The ACK thread's lock and its flag "BBR publishes rate/cwnd" (BBR fed by every ACK). Set,
  // the loop hands the pacing to BBR while the safety monitor says so and, with `link`
  // (--learner --fallback=bbr), while the learner is gone. Required for a policy with safety.
  std::mutex* ack_mu = nullptr;
  bool* bbr_drives = nullptr;
  LearnerLink* link = nullptr;         // --learner: records out, weights in
  GoalControl* goal_control = nullptr; // --control-stdin
  std::ostream* log = nullptr;         // --log rows (after WriteDecisionLogHeader)
  std::ostream* err = nullptr;         // progress messages (stderr); null = std::cerr
  uint64_t t0_ns = 0;                  // CLOCK_MONOTONIC of t_s = 0 (the --log clock)
};

// The first decision's result (Start).
struct FirstDecision {
  double rate = 0;    // bytes/s
  double cwnd = 0;    // bytes (1e30 = no window)
  double action = 0;  // the summary's initial_action
};

// Counters for the summary, read once the decision thread has been joined.
struct DecisionCounters {
  uint64_t decisions = 0;             // policy decisions (not those while BBR paces)
  double decision_us_sum = 0, decision_us_max = 0;
  uint64_t mi_rows = 0;               // closed MIs = --log rows (the learner records' seq)
  uint64_t weight_version = 0;        // policy version in force: 0 = the file, then the learner's
  uint64_t fallback_decisions = 0;    // MIs closed while BBR paced (monitor or learner gone)
  uint64_t guarded_decisions = 0;     // decisions the guard held at or below the rate in force
  double max_gap_s = 0;               // longest time between two consecutive CloseInterval calls
  double mi_sum_s = 0;                // total length of the closed MIs
  int tuning_steps = 0;               // DeepCC goal-tuning steps
};

class DecisionLoop {
 public:
  // `policy` and `features` both null (fixed:MBPS, bbr) or both set, features->dim() ==
  // policy->obs_dim() (the caller has checked the pair). Builds the history window from
  // features->Empty() and, with opt.target_given, the goal tuner.
  DecisionLoop(std::unique_ptr<Policy> policy, std::unique_ptr<FeatureFn> features, DecisionOptions opt);

  // Policy only: the starting rate (init_rate bytes/s when init_rate_given, else the feature
  // set's) and cwnd (10 packets for a cwnd_table action, else none), with the RTT guess
  // rtt_hint_s, then the first decision on the empty history from there.
  FirstDecision Start(double init_rate, bool init_rate_given, size_t packet_size, double rtt_hint_s);

  // Connects the loop to the running flow; before BeginInterval. `io.flow` and `io.min_rtt`
  // are required.
  void Attach(const DecisionIo& io);

  // The first MI starts at start_ns (CLOCK_MONOTONIC); each CloseInterval starts the next.
  void BeginInterval(uint64_t start_ns);

  // The end (CLOCK_MONOTONIC ns) of the MI in progress for the min RTT seen so far (s; 0 = no
  // sample yet): start + max(mi_rtts x min_rtt, min_mi_ms), fixed by the first call that sees a
  // sample; until then start + max(initial_mi_ms, min_mi_ms). interval_end_fixed() says which.
  uint64_t IntervalEnd(double min_rtt_s);
  bool interval_end_fixed() const { return end_fixed_; }

  // Closes the MI in progress at now_ns with the ACK thread's statistics `mi` (acked, lost and
  // RTT figures; sent and duration are filled in here) and starts the next one at now_ns.
  void CloseInterval(MonitorStats mi, uint64_t now_ns);

  const Policy* policy() const { return policy_.get(); }  // null without a policy
  const FeatureFn* features() const { return features_.get(); }
  // Whether the ACK thread must keep the MI's RTT samples (MonitorStats::keep_rtts).
  bool keep_rtts() const { return keep_rtts_; }
  const std::vector<float>& goal() const { return goal_; }    // the goal in force
  const GoalTuner* tuner() const { return tuner_.get(); }     // null: no goal tuning
  int tune_every() const { return tune_every_; }              // decisions per tuning step
  const SafetyMonitor* monitor() const { return monitor_.get(); }  // null: no safety net
  bool bbr_paces() const { return in_fallback_; }
  const std::vector<float>& window() const { return window_; } // oldest step first
  const DecisionCounters& counters() const { return counters_; }
  // Applied control-input changes: {line, received_s, applied_s, decision, goal | target}.
  const nlohmann::json& goal_changes() const { return goal_changes_; }

  // With a policy, adds to the summary `s`: policy {file, algorithm, features, mi_rtts},
  // decisions, initial_action, decision_us_mean/max, goal (the starting goal, goal_dim > 0),
  // preference (when preference_given), goal_changes (when control_stdin) and, with a target
  // or after a tuning step, target, tuning_steps, tuning_interval_decisions, goal_final,
  // tuning_met_steps and tuning_first_met_step; `safety` {enabled and, when on, enter_mis,
  // exit_mis, fallbacks, fallback_mis, guarded_decisions, events}. Nothing without a policy.
  void AddSummary(nlohmann::json* s, const std::string& policy_file, bool preference_given,
                  bool control_stdin) const;

 private:
  std::ostream& err() const;
  double Ts(uint64_t ns) const { return (ns - io_.t0_ns) * 1e-9; }
  void HandOverToBbr(uint64_t now_ns);      // the monitor, or the learner gone: who paces
  void ApplyGoalChange(uint64_t now_ns);    // a pending control-input change
  // The policy's part of CloseInterval; returns the action and the decision time (us).
  void PolicyDecision(const MonitorStats& mi, uint64_t now_ns, double rate, double cwnd, double* action,
                      double* decision_us);

  std::unique_ptr<Policy> policy_;
  std::unique_ptr<FeatureFn> features_;
  bool keep_rtts_ = false;
  DecisionOptions opt_;
  DecisionIo io_;
  std::vector<float> goal_;
  const std::vector<float> initial_goal_;
  double initial_action_ = std::nan("");  // Start's action
  // DeepCC online goal tuning (--target, control line `target`): the tuner, the interval's
  // measurement sum (features 4..6, eq. 1's m, as DeepccFeatures computes them) and the flow's
  // max delivery rate (DeepccFeatures' thr_max: the max over MIs of the MI's delivery rate).
  std::unique_ptr<GoalTuner> tuner_;
  int tune_every_ = 1;
  GoalTuner::Vec tune_acc_{};
  int tune_n_ = 0;
  std::vector<float> tune_delay_;  // the interval's MI delay ratios (feature 5), the "p95" tuner's samples
  double thr_max_ = 0;

  std::vector<float> window_;  // history x obs_dim, oldest first; starts as the Empty() padding
  std::vector<float> feat_;    // this MI's features
  std::vector<double> rec_;    // the learner record
  RunningStats run_;
  uint64_t mi_start_ = 0, end_ = 0;
  bool end_fixed_ = false;
  uint64_t sent_prev_ = 0;
  uint64_t prev_decision_ns_ = 0;
  bool in_fallback_ = false;
  bool by_monitor_ = false;  // the monitor (not the learner) handed the pacing to BBR
  bool answered_ = false;    // the flow has had an RTT sample (the safety net is engaged)
  double saved_cwnd_ = 0;
  std::unique_ptr<SafetyMonitor> monitor_;
  const char* control_ = "";  // the --log `control` of this MI's decision: policy, guard or bbr
  nlohmann::json safety_events_ = nlohmann::json::array();  // {t_s, to: bbr|policy, why, decision}
  DecisionCounters counters_;
  nlohmann::json goal_changes_ = nlohmann::json::array();
};

}  // namespace jaxcc
