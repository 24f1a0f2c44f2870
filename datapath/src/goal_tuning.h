// DeepCC's online goal tuning (IEEE/ACM ToN 2022, §IV-C, eq. 8-12): class GoalTuner.
//
// The C++ twin of jaxcc/senders/goal_tuning.py, whose module docstring holds every reading
// (tuning interval, target units, met dimensions, eq. 8/10 windows, prior signs, Adam, loss
// heuristics, jump-out, eq. 12) and every constant; this file uses the same constants, in
// float32 as JAX does. tests/vectors/goal_tuning.txt (python -m jaxcc.parity_vectors) holds
// both to the same goal sequences (datapath/tests/goal_tuning_test.cc).
//
// Objective order (throughput, delay, loss). A target is (throughput_mbps >= x, delay_ms <= y,
// loss <= z), y the 95th-percentile queueing delay the flow may add.
//
// Two tuners (Mode; jaxcc-sender --tuner): kPaper, §IV-C read literally, and kP95 (kDefaultMode),
// whose delay measurement is the nearest-rank 95th percentile of the interval's MI delay ratios
// (DelayTail), whose g3 follows g2 while the delay is unmet, with its own learning rate and a
// delay jump-out judged against the target's queueing delay (goal_tuning.py's docstring, "p95").
#pragma once

#include <array>
#include <string>
#include <vector>

namespace jaxcc {

// Splits "a,b,c" at commas into numbers (spaces around each allowed). Returns "" on success, else
// the reason ("'x' is not a number"); *out holds the numbers read. Shared by --target and
// --preference (preference.cc).
std::string ParseNumberList(const std::string& text, std::vector<double>* out);

class GoalTuner {
 public:
  static constexpr int kDim = 3;
  static constexpr int kK = 4;                 // eq. 8/10: intervals averaged
  static constexpr double kTuningRtts = 4.0;   // §V: every 4 RTT
  static constexpr float kLr = 0.05f;
  static constexpr float kBeta1 = 0.9f, kBeta2 = 0.999f, kAdamEps = 1e-8f;
  static constexpr float kDgEps = 1e-3f;
  static constexpr float kJumpThreshold = 0.5f, kJumpValue = 0.1f;
  static constexpr float kLossScale = 0.01f;
  static constexpr float kGFloor = 0.01f;
  static constexpr int kTailPct = 95;          // "p95": the delay view's percentile
  static constexpr float kLrP95 = 0.4f;        // "p95": Adam's learning rate
  using Vec = std::array<float, kDim>;
  enum class Mode { kPaper, kP95 };
  static constexpr Mode kDefaultMode = Mode::kP95;  // jaxcc.sim.controller.DEFAULT_TUNER

  // "paper" or "p95" into *out (returns true); anything else: false, *out untouched.
  static bool ParseMode(const std::string& text, Mode* out);
  static const char* ModeName(Mode m) { return m == Mode::kP95 ? "p95" : "paper"; }

  // The nearest-rank kTailPct-th percentile of samples (the r-th smallest, r = ceil(95 n / 100));
  // 0 when empty.
  static float DelayTail(std::vector<float> samples);

  // Decisions per tuning interval: ceil(4 / mi_rtts).
  static int IntervalDecisions(double mi_rtts);

  // Parses "throughput_mbps,delay_ms,loss" (x >= 0, y >= 0, 0 <= z <= 1, spaces allowed). On
  // success fills *out and returns ""; otherwise the reason, *out untouched.
  static std::string ParseTarget(const std::string& text, Vec* out);

  // The target in eq.-1 units: (x*125000/thr_max, 1 + y/1000/min_rtt, z).
  static Vec TargetHat(const Vec& target, float thr_max_bytes_per_s, float min_rtt_s);

  GoalTuner(const Vec& target, const Vec& g0, Mode mode);

  // One step on the interval's mean measurement m against the target in eq.-1 units; in kP95 mode
  // d_tail (DelayTail of the interval's MI delay ratios) replaces m[1].
  void StepHat(const Vec& m, const Vec& t_hat, float d_tail = 0.0f);
  // One step against TargetHat(target(), thr_max, min_rtt).
  void Step(const Vec& m, float thr_max_bytes_per_s, float min_rtt_s, float d_tail = 0.0f) {
    StepHat(m, TargetHat(target_, thr_max_bytes_per_s, min_rtt_s), d_tail);
  }

  void set_target(const Vec& t) { target_ = t; }
  const Vec& goal() const { return goal_; }
  const Vec& target() const { return target_; }
  Mode mode() const { return mode_; }
  int steps() const { return steps_; }
  // Steps whose interval met all three dimensions of the target (before that step moved g),
  // and the first of them (1-based; 0: none yet).
  int met_steps() const { return met_steps_; }
  int first_met_step() const { return first_met_step_; }

 private:
  Vec goal_, target_;
  Mode mode_;
  std::array<Vec, kK> g_hist_{}, m_hist_{};  // oldest first
  int n_ = 0;
  Vec mu_{}, nu_{};
  int count_ = 0;  // Adam steps
  int steps_ = 0;
  int met_steps_ = 0, first_met_step_ = 0;
};

}  // namespace jaxcc
