// Monitor-interval features, the C++ twin of the feature functions in jaxcc/envs.
//
// A policy file names its feature set (spec.features.name); the sender builds the matching
// FeatureFn and feeds it one finished MI at a time. Parity with Python is checked by the
// shared vectors tests/vectors/features_*.json (per-packet events -> MI statistics ->
// features -> policy output), written by `python -m jaxcc.policyfile --write-vectors`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "monitor.h"

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
};

// Builds the feature function for a spec's "features" block (JSON text). Throws PolicyError
// when the feature set is unknown or its parameters are malformed.
std::unique_ptr<FeatureFn> MakeFeatureFn(const std::string& name, const std::string& features_json);
std::vector<std::string> KnownFeatureSets();

}  // namespace jaxcc
