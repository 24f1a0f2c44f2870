#include "preference.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <vector>

#include "goal_tuning.h"
#include "policy.h"

namespace jaxcc {
namespace {

std::string Trim(const std::string& s) {
  const char* ws = " \t\r\n";
  const size_t a = s.find_first_not_of(ws);
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(ws);
  return s.substr(a, b - a + 1);
}

}  // namespace

std::string ParsePreference(const std::string& text, Preference* out) {
  const std::string bad = "must be 3 numbers >= 0 summing to 1 (throughput, delay, loss), got '" + text + "'";
  std::vector<double> v;
  const std::string why = ParseNumberList(text, &v);
  if (!why.empty()) return bad + " (" + why + ")";
  if (static_cast<int>(v.size()) != kPreferenceDim) return bad + " (" + std::to_string(v.size()) + " numbers)";
  double sum = 0;
  for (double x : v) {
    if (x < 0) return bad + " (negative weight)";
    sum += x;
  }
  if (std::fabs(sum - 1.0) > kPreferenceSumTol) return bad + " (sum " + std::to_string(sum) + ")";
  for (int k = 0; k < kPreferenceDim; ++k) (*out)[k] = static_cast<float>(v[k]);
  return "";
}

std::string PreferenceMismatch(const Policy& p) {
  if (p.goal_dim() != kPreferenceDim)
    return "the policy takes no 3-value preference (its goal_dim is " + std::to_string(p.goal_dim()) + ")";
  const nlohmann::json f = nlohmann::json::parse(p.features_json(), nullptr, /*allow_exceptions=*/false);
  // mocc_v1 names its objectives in features.objectives, deepcc_v1 in features.goal.
  for (const char* key : {"objectives", "goal"}) {
    if (!f.is_object() || !f.contains(key) || !f[key].is_array()) continue;
    const nlohmann::json want = {"throughput", "delay", "loss"};
    if (f[key] != want)
      return std::string("the policy's objectives (features.") + key + ") are " + f[key].dump() +
             ", a preference is (throughput, delay, loss): give the raw goal with --goal";
    break;
  }
  return "";
}

std::string TargetMismatch(const Policy& p) {
  if (p.feature_name() != "deepcc_v1" || p.goal_dim() != kPreferenceDim)
    return "goal tuning needs a DeepCC policy (features deepcc_v1, goal_dim 3), this one has features " +
           p.feature_name() + ", goal_dim " + std::to_string(p.goal_dim());
  return "";
}

ControlLine ParseControlLine(const std::string& line) {
  ControlLine c;
  const std::string s = Trim(line);
  if (s.empty() || s[0] == '#') return c;
  const size_t sp = s.find_first_of(" \t");
  const std::string cmd = s.substr(0, sp);
  const std::string arg = sp == std::string::npos ? "" : Trim(s.substr(sp));
  std::string why;
  if (cmd == "preference" || cmd == "goal") {
    why = ParsePreference(arg, &c.preference);
    c.kind = cmd == "goal" ? ControlLine::kGoal : ControlLine::kPreference;
  } else if (cmd == "target") {
    GoalTuner::Vec t{};
    why = GoalTuner::ParseTarget(arg, &t);
    c.target = t;
    c.kind = ControlLine::kTarget;
  } else {
    c.kind = ControlLine::kError;
    c.error = "unknown command (known: 'preference a,b,c', 'goal a,b,c', 'target throughput_mbps,delay_ms,loss')";
    return c;
  }
  if (!why.empty()) {
    c.kind = ControlLine::kError;
    c.error = cmd + " " + why;
  }
  return c;
}

}  // namespace jaxcc
