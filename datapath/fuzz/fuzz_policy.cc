// libFuzzer target: the policy loader must reject any malformed file with PolicyError and
// never crash, hang or read out of bounds; a file it accepts must run a forward pass.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "policy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    jaxcc::Policy p = jaxcc::Policy::LoadBytes(data, size, "fuzz");
    // Accepted: the forward pass must work on any finite input.
    std::vector<float> obs(static_cast<size_t>(p.history()) * p.obs_dim(), 0.5f);
    std::vector<float> goal(p.goal_dim(), 0.25f);
    const auto& out = p.Apply(obs.data(), goal.empty() ? nullptr : goal.data());
    double r, c;
    p.MapAction(out, 1e6, 1e5, &r, &c);
  } catch (const jaxcc::PolicyError&) {
  }
  return 0;
}
