// The C++ forward pass and action mapping against vectors written by Python
// (`python -m jaxcc.parity_vectors --out tests/vectors`).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "policy.h"
#include "safety.h"
#include "test_util.h"

namespace {

using json = nlohmann::json;
const std::string kDir = JAXCC_VECTORS_DIR;

// 1e-5 relative, with an absolute floor for values near zero where float32 rounding of
// the sums in a different order dominates.
void ExpectClose(double got, double want, const std::string& what) {
  EXPECT_LE(std::fabs(got - want), 1e-5 * std::fabs(want) + 1e-6) << what << ": got " << got << " want " << want;
}

class Vectors : public ::testing::TestWithParam<std::string> {};

TEST_P(Vectors, MatchesPython) {
  std::ifstream f(kDir + "/" + GetParam() + ".json");
  ASSERT_TRUE(f) << "missing vectors; run: python -m jaxcc.parity_vectors --out tests/vectors";
  json v = json::parse(f);
  jaxcc::Policy p = jaxcc::Policy::LoadFile(kDir + "/" + v["policy"].get<std::string>());
  ASSERT_GT(v["cases"].size(), 0u);
  int ci = 0;
  for (const json& c : v["cases"]) {
    const std::string tag = GetParam() + " case " + std::to_string(ci++);
    std::vector<float> obs;
    for (const json& row : c["obs"])
      for (const json& x : row) obs.push_back(x.get<float>());
    ASSERT_EQ(obs.size(), static_cast<size_t>(p.history() * p.obs_dim()));
    std::vector<float> goal = c["goal"].get<std::vector<float>>();
    const auto& out = p.Apply(obs.data(), goal.empty() ? nullptr : goal.data());
    const auto net = c["net_out"].get<std::vector<double>>();
    ASSERT_EQ(out.net.size(), net.size()) << tag;
    for (size_t i = 0; i < net.size(); ++i) ExpectClose(out.net[i], net[i], tag + " net_out[" + std::to_string(i) + "]");
    if (c.contains("q_weighted")) {  // multi-objective q_values: sum_k goal[k] * net_out[a*M + k]
      const auto qw = c["q_weighted"].get<std::vector<double>>();
      ASSERT_EQ(out.scores.size(), qw.size()) << tag;
      for (size_t i = 0; i < qw.size(); ++i) ExpectClose(out.scores[i], qw[i], tag + " q_weighted[" + std::to_string(i) + "]");
    }
    if (c["output"].is_number_integer()) {
      EXPECT_EQ(out.index, c["output"].get<int>()) << tag;
    } else {
      const auto want = c["output"].get<std::vector<double>>();
      ASSERT_EQ(out.values.size(), want.size()) << tag;
      for (size_t i = 0; i < want.size(); ++i) ExpectClose(out.values[i], want[i], tag + " output");
    }
    double rate, cwnd;
    p.MapAction(out, c["rate_in"].get<double>(), c["cwnd_in"].get<double>(), &rate, &cwnd);
    ExpectClose(rate, c["rate"].get<double>(), tag + " rate");
    ExpectClose(cwnd, c["cwnd"].get<double>(), tag + " cwnd");
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, Vectors,
                         ::testing::Values("mlp", "lstm", "lstm2_discrete", "conv1d_goal", "q_values", "q_values_1obj"));

// The safety net (src/safety.h) against jaxcc/senders/safety.py MI by MI (tests/vectors/safety.json):
// the same thresholds, the same MIs per switch for each MI length, the same guarded rate and
// window and the same monitor state after every MI.
TEST(Vectors, SafetyNetMatchesPython) {
  std::ifstream f(kDir + "/safety.json");
  ASSERT_TRUE(f) << "missing vectors; run: python -m jaxcc.parity_vectors --out tests/vectors";
  const json v = json::parse(f);
  EXPECT_EQ(v["constants"]["loss_enter"].get<double>(), jaxcc::kLossEnter);
  EXPECT_EQ(v["constants"]["loss_exit"].get<double>(), jaxcc::kLossExit);
  EXPECT_EQ(v["constants"]["enter_rtts"].get<double>(), jaxcc::kEnterRtts);
  EXPECT_EQ(v["constants"]["exit_rtts"].get<double>(), jaxcc::kExitRtts);
  EXPECT_EQ(v["constants"]["min_enter_s"].get<double>(), jaxcc::kMinEnterS);
  EXPECT_EQ(v["constants"]["time_slack_s"].get<double>(), jaxcc::kTimeSlackS);
  ASSERT_EQ(v["cases"].size(), 4u);
  for (const json& c : v["cases"]) {
    const double mi_rtts = c["mi_rtts"].get<double>();
    const int enter = jaxcc::MisFor(jaxcc::kEnterRtts, mi_rtts), leave = jaxcc::MisFor(jaxcc::kExitRtts, mi_rtts);
    EXPECT_EQ(enter, c["enter_mis"].get<int>()) << mi_rtts;
    EXPECT_EQ(leave, c["exit_mis"].get<int>()) << mi_rtts;
    jaxcc::SafetyMonitor mon(enter, leave);
    int i = 0;
    for (const json& m : c["mis"]) {
      const std::string tag = "mi_rtts " + std::to_string(mi_rtts) + " MI " + std::to_string(i++);
      jaxcc::MonitorStats st;
      st.acked = m["acked"].get<double>();
      st.lost = m["lost"].get<double>();
      st.n_samples = m["n_samples"].get<double>();
      const bool answered = m["answered"].get<bool>();
      const bool dark = jaxcc::NoFeedback(st) && answered;
      EXPECT_EQ(dark, m["guarded"].get<bool>()) << tag;
      double rate = m["rate_policy"].get<double>(), cwnd = m["cwnd_policy"].get<double>();
      jaxcc::Guard(dark, m["rate_in"].get<double>(), m["cwnd_in"].get<double>(), &rate, &cwnd);
      EXPECT_EQ(rate, m["rate"].get<double>()) << tag;
      EXPECT_EQ(cwnd, m["cwnd"].get<double>()) << tag;
      EXPECT_EQ(mon.Step(st.acked, st.lost, st.n_samples, m["duration"].get<double>(), answered),
                m["fallback"].get<bool>())
          << tag;
      EXPECT_EQ(mon.bad_run(), m["bad_run"].get<int>()) << tag;
      EXPECT_NEAR(mon.bad_s(), m["bad_s"].get<double>(), 1e-12) << tag;
      EXPECT_EQ(mon.good_run(), m["good_run"].get<int>()) << tag;
      EXPECT_EQ(mon.entries(), m["entries"].get<uint64_t>()) << tag;
      EXPECT_EQ(mon.fallback_mis(), m["fallback_mis"].get<uint64_t>()) << tag;
    }
  }
}

}  // namespace
