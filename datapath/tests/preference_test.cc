// --preference / control-line parsing and the policy check of jaxcc-sender (src/preference.h).
#include "preference.h"

#include <gtest/gtest.h>

#include "policy.h"
#include "test_util.h"

using jaxcc::ControlLine;
using jaxcc::ParseControlLine;
using jaxcc::ParsePreference;
using jaxcc::Policy;
using jaxcc::Preference;
using json = nlohmann::json;

namespace {

TEST(Preference, ParsesThreeWeights) {
  Preference p{};
  EXPECT_EQ(ParsePreference("0.6,0.3,0.1", &p), "");
  EXPECT_FLOAT_EQ(p[0], 0.6f);
  EXPECT_FLOAT_EQ(p[1], 0.3f);
  EXPECT_FLOAT_EQ(p[2], 0.1f);
  EXPECT_EQ(ParsePreference(" 0 , 1 ,0 ", &p), "");
  EXPECT_FLOAT_EQ(p[1], 1.0f);
  EXPECT_EQ(ParsePreference("1e-1,0.8,1e-1", &p), "");
  // The sum is checked within 1e-3, and the weights are kept as given (no renormalisation).
  EXPECT_EQ(ParsePreference("0.5,0.5,0.0009", &p), "");
  EXPECT_FLOAT_EQ(p[2], 0.0009f);
  EXPECT_EQ(ParsePreference("0.333,0.333,0.333", &p), "");  // sum 0.999
}

TEST(Preference, RejectsWithReason) {
  Preference p{0.25f, 0.5f, 0.25f};
  struct Case {
    const char* text;
    const char* reason;
  };
  for (const Case& c : {Case{"0.5,0.5,0.002", "sum 1.002"}, Case{"0.3,0.3,0.3", "sum 0.9"},
                        Case{"-0.1,0.6,0.5", "negative"}, Case{"0.5,0.5", "2 numbers"},
                        Case{"0.5,0.5,0,0", "4 numbers"}, Case{"a,b,c", "'a' is not a number"},
                        Case{"0.5,,0.5", "'' is not a number"}, Case{"nan,0.5,0.5", "'nan' is not a number"},
                        Case{"inf,0,0", "'inf'"}, Case{"", "'' is not a number"},
                        Case{"0.5;0.25;0.25", "not a number"}, Case{"0.5,0.25,0.25x", "'0.25x'"}}) {
    const std::string why = ParsePreference(c.text, &p);
    EXPECT_NE(why.find("must be 3 numbers >= 0 summing to 1 (throughput, delay, loss)"), std::string::npos)
        << c.text << ": " << why;
    EXPECT_NE(why.find(c.reason), std::string::npos) << c.text << ": " << why;
    EXPECT_NE(why.find(std::string("got '") + c.text + "'"), std::string::npos) << why;
  }
  EXPECT_FLOAT_EQ(p[1], 0.5f);  // untouched by the rejected texts
}

TEST(Preference, ControlLines) {
  ControlLine c = ParseControlLine("preference 0.2,0.7,0.1");
  ASSERT_EQ(c.kind, ControlLine::kPreference) << c.error;
  EXPECT_FLOAT_EQ(c.preference[1], 0.7f);
  c = ParseControlLine("  preference\t0.1, 0.1, 0.8\r");
  ASSERT_EQ(c.kind, ControlLine::kPreference) << c.error;
  EXPECT_FLOAT_EQ(c.preference[2], 0.8f);
  EXPECT_EQ(ParseControlLine("").kind, ControlLine::kNothing);
  EXPECT_EQ(ParseControlLine("   \r").kind, ControlLine::kNothing);
  EXPECT_EQ(ParseControlLine("# a comment").kind, ControlLine::kNothing);
  for (const char* bad : {"pref 1,0,0", "preferences 1,0,0", "goals 1,0,0", "PREFERENCE 1,0,0", "targets 1,2,0"}) {
    c = ParseControlLine(bad);
    EXPECT_EQ(c.kind, ControlLine::kError) << bad;
    EXPECT_NE(c.error.find("unknown command"), std::string::npos) << c.error;
  }
  c = ParseControlLine("preference 1,1,0");
  EXPECT_EQ(c.kind, ControlLine::kError);
  EXPECT_NE(c.error.find("sum 2"), std::string::npos) << c.error;
  c = ParseControlLine("preference");
  EXPECT_EQ(c.kind, ControlLine::kError);
  EXPECT_NE(c.error.find("not a number"), std::string::npos) << c.error;
  // DeepCC: a fixed goal (checked as a preference) and a target (throughput_mbps,delay_ms,loss).
  c = ParseControlLine("goal 0.6,0.3,0.1");
  ASSERT_EQ(c.kind, ControlLine::kGoal) << c.error;
  EXPECT_FLOAT_EQ(c.preference[0], 0.6f);
  c = ParseControlLine(" target 8, 40 ,0.01 ");
  ASSERT_EQ(c.kind, ControlLine::kTarget) << c.error;
  EXPECT_FLOAT_EQ(c.target[0], 8.0f);
  EXPECT_FLOAT_EQ(c.target[1], 40.0f);
  EXPECT_FLOAT_EQ(c.target[2], 0.01f);
  c = ParseControlLine("goal 0.6,0.6,0.1");
  EXPECT_EQ(c.kind, ControlLine::kError);
  EXPECT_EQ(c.error.rfind("goal must be 3 numbers", 0), 0u) << c.error;
  c = ParseControlLine("target 8,40,2");
  EXPECT_EQ(c.kind, ControlLine::kError);
  EXPECT_NE(c.error.find("loss outside [0, 1]"), std::string::npos) << c.error;
  c = ParseControlLine("target 8,-1,0");
  EXPECT_EQ(c.kind, ControlLine::kError);
  EXPECT_NE(c.error.find("delay_ms < 0"), std::string::npos) << c.error;
}

// A goal_dim-G policy whose features block may name its objectives.
Policy GoalPolicy(int goal_dim, const json& objectives, const char* key = "objectives") {
  json s = json::parse(R"({
    "format": "jaxcc-policy", "version": 1, "algorithm": "random",
    "features": {"name": "test", "history": 1, "obs_dim": 1}, "mi_rtts": 1.0,
    "layers": [{"type": "flatten"}, {"type": "concat_goal"},
               {"type": "dense", "name": "q", "in": 2, "out": 2, "activation": "linear"}],
    "head": {"type": "q_values", "n": 2},
    "action": {"type": "cwnd_table", "deltas": [-1500.0, 1500.0]}})");
  s["goal_dim"] = goal_dim;
  s["layers"][2]["in"] = 1 + goal_dim;
  if (!objectives.is_null()) s["features"][key] = objectives;
  std::map<std::string, jaxcc_test::T> t = {
      {"q.kernel", {{1 + goal_dim, 2}, std::vector<float>(2 * (1 + goal_dim), 0.5f)}}, {"q.bias", {{2}, {0.0f, 0.0f}}}};
  auto blob = jaxcc_test::MakeSafetensors(s, t);
  return Policy::LoadBytes(blob.data(), blob.size());
}

TEST(Preference, PolicyMustTakeIt) {
  EXPECT_EQ(jaxcc::PreferenceMismatch(GoalPolicy(3, json({"throughput", "delay", "loss"}))), "");
  EXPECT_EQ(jaxcc::PreferenceMismatch(GoalPolicy(3, json())), "");  // no names: trusted as (thr, delay, loss)
  std::string why = jaxcc::PreferenceMismatch(GoalPolicy(3, json({"throughput", "loss", "delay"})));
  EXPECT_NE(why.find("(features.objectives) are [\"throughput\",\"loss\",\"delay\"]"), std::string::npos) << why;
  EXPECT_NE(why.find("--goal"), std::string::npos) << why;
  EXPECT_EQ(jaxcc::PreferenceMismatch(GoalPolicy(3, json({"throughput", "delay", "loss"}), "goal")), "");  // deepcc_v1
  why = jaxcc::PreferenceMismatch(GoalPolicy(3, json({"delay", "throughput", "loss"}), "goal"));
  EXPECT_NE(why.find("(features.goal) are [\"delay\""), std::string::npos) << why;
  why = jaxcc::PreferenceMismatch(GoalPolicy(2, json()));
  EXPECT_NE(why.find("goal_dim is 2"), std::string::npos) << why;
}

}  // namespace
