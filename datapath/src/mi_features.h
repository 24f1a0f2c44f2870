// Monitor-interval features, the C++ twin of the simulator's senders in jaxcc/senders (one
// module per feature set, over the feature functions in jaxcc/envs).
//
// A policy file names its feature set (spec.features.name); the sender builds the matching
// FeatureFn and feeds it one finished MI at a time. Parity with Python is checked by the
// shared vectors tests/vectors/features_*.json (per-packet events -> MI statistics ->
// features -> policy output -> rate/cwnd), written by `python -m jaxcc.parity_vectors`.
//
// Feature sets: aurora_v1 and aurora_v2 (v1's three and the MI's loss rate; jaxcc/envs/aurora.py), pareto_v1 and pareto_v2 (Pareto-Fair v2: v1's
// five and the own standing queue; pareto.py), eagle_v1 (eagle.py),
// mocc_v1 (mocc.py), deepcc_v1 (deepcc.py). A feature set is also where a paper's rules
// around the policy live when the generic action block (Policy::MapAction) does not say
// everything: the start (Eagle: 300 kbit/s, 10 packets), the window (Eagle's BDP cwnd, MOCC's
// init-cwnd step and pacing) and what the next features need to know about the action taken
// (Eagle's increase/decrease counters, DeepCC's last action).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "monitor.h"
#include "policy.h"

namespace jaxcc {

class FeatureFn {
 public:
  virtual ~FeatureFn() = default;
  virtual int dim() const = 0;
  // Writes dim() features for one finished MI; `run` must already include it. May keep state
  // across MIs (previous EWMAs), as the environments do.
  virtual void Compute(const MonitorStats& mi, const RunningStats& run, float* out) = 0;
  // History padding before the first MI (spec.features.empty; zeros when absent).
  virtual std::vector<float> Empty() const = 0;

  // Throws PolicyError when the policy's head, action block or goal do not fit what this
  // feature set's paper does with them (e.g. Eagle needs a 5-way argmax over its rate table).
  virtual void Check(const Policy& policy) const { (void)policy; }
  // Whether Compute needs the MI's individual RTT samples (MonitorStats::keep_rtts).
  virtual bool NeedsRttSamples() const { return false; }
  // The RTT (s) to assume until the first sample: the environments (and the simulator's
  // policy:FILE senders) know the link's propagation RTT; the sender takes --rtt-hint-ms
  // (jaxcc.emulate passes the scenario's RTT), 100 ms without it.
  void SetRttGuess(double s) { rtt_guess_ = s; }
  double rtt_guess() const { return rtt_guess_; }
  // The starting rate (bytes/s) and cwnd (bytes) before the first decision, as the simulator's
  // sender for the set starts (after SetRttGuess). Sets that fix neither leave the defaults.
  virtual void Start(double* rate, double* cwnd) { (void)rate, (void)cwnd; }
  // After Policy::MapAction turned `out` and the (rate_in, cwnd_in) in force into (*rate,
  // *cwnd): applies the paper's own rules on top and records what the next features need.
  // `run` includes the last finished MI (none before the first decision). Returns true when it
  // set the pacing rate itself (then the sender's generic window pacing is not applied).
  virtual bool AfterAction(const Policy& policy, const PolicyOutput& out, const RunningStats& run,
                           double rate_in, double cwnd_in, double* rate, double* cwnd) {
    (void)policy, (void)out, (void)run, (void)rate_in, (void)cwnd_in, (void)rate, (void)cwnd;
    return false;
  }

 protected:
  double rtt_guess_ = 0.1;
};

// Builds the feature function for a spec's "features" block (JSON text). Throws PolicyError
// when the feature set is unknown or its parameters are malformed.
std::unique_ptr<FeatureFn> MakeFeatureFn(const std::string& name, const std::string& features_json);
std::vector<std::string> KnownFeatureSets();

// One decision as jaxcc-sender makes it, after the forward pass: the action block
// (Policy::MapAction), then the feature set's rules (FeatureFn::AfterAction); a window action
// that no feature set paces is paced at 2 x cwnd / srtt (what Linux does for paced CUBIC).
// Rates are clamped to the action block's [min_mbps, max_mbps].
void Decide(const Policy& policy, FeatureFn* features, const PolicyOutput& out, const RunningStats& run,
            double rate, double cwnd, double srtt, double* new_rate, double* new_cwnd);

}  // namespace jaxcc
