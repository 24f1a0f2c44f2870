// The C++ forward pass and action mapping against vectors written by Python
// (`python -m jaxcc.parity_vectors --out tests/vectors`).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "policy.h"
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

}  // namespace
