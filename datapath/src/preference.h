// MOCC preferences: the --preference option and the runtime control lines of jaxcc-sender.
//
// A preference is MOCC's weight vector over its objectives in the order (throughput, delay,
// loss) (MOCC, IWQoS 2021, §III; jaxcc/envs/mocc.py OBJECTIVES): three numbers, each >= 0,
// summing to 1 within 1e-3. It is the goal input of a policy with goal_dim 3, as given (no
// renormalisation), exactly as jaxcc.scenarios / jaxcc.evaluate feed it to the simulator.
#pragma once

#include <array>
#include <string>

namespace jaxcc {

class Policy;

constexpr int kPreferenceDim = 3;
constexpr double kPreferenceSumTol = 1e-3;
using Preference = std::array<float, kPreferenceDim>;

// Parses "a,b,c" (spaces around the numbers allowed). On success fills *out and returns "";
// otherwise returns the reason (e.g. "must be 3 numbers >= 0 summing to 1 (throughput, delay,
// loss), got '0.5,0.6,0'"), *out untouched.
std::string ParsePreference(const std::string& text, Preference* out);

// Why this policy cannot take a preference ("" if it can): it needs goal_dim 3 and, when its
// features block names its objectives (spec.features.objectives for mocc_v1, else
// spec.features.goal for deepcc_v1), exactly ["throughput", "delay", "loss"], so the weights
// mean what --preference says.
std::string PreferenceMismatch(const Policy& p);

// Why this policy cannot take a DeepCC target (--target, control line `target`; "" if it can):
// online goal tuning (src/goal_tuning.h) needs features deepcc_v1 and goal_dim 3.
std::string TargetMismatch(const Policy& p);

// One line of the control input (jaxcc-sender --control-stdin):
//   preference a,b,c     a new preference, applied at the next decision (checked as --preference)
//   goal a,b,c           a new fixed goal (DeepCC; checked as --preference), goal tuning off
//   target x,y,z         a new DeepCC target throughput_mbps,delay_ms,loss (checked as --target),
//                        goal tuning on from the goal in force
// Blank lines and lines starting with '#' are ignored. Leading/trailing whitespace and a
// trailing '\r' are ignored.
struct ControlLine {
  enum Kind { kNothing, kPreference, kGoal, kTarget, kError } kind = kNothing;
  Preference preference{};  // kPreference, kGoal
  std::array<float, 3> target{};  // kTarget: throughput_mbps, delay_ms, loss
  std::string error;  // kError: the reason
};
ControlLine ParseControlLine(const std::string& line);

}  // namespace jaxcc
