// Feature parity with jaxcc/envs: per-packet events -> MonitorStats -> FeatureFn -> policy,
// against tests/vectors/features_*.json written by `python -m jaxcc.policyfile --write-vectors`.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "mi_features.h"
#include "monitor.h"
#include "policy.h"
#include "test_util.h"

namespace {

using json = nlohmann::json;
const std::string kDir = JAXCC_VECTORS_DIR;

void ExpectClose(double got, double want, double rel, double abs_tol, const std::string& what) {
  EXPECT_LE(std::fabs(got - want), rel * std::fabs(want) + abs_tol) << what << ": got " << got << " want " << want;
}

class Features : public ::testing::TestWithParam<std::string> {};

TEST_P(Features, MatchEnvsAndPolicy) {
  std::ifstream f(kDir + "/features_" + GetParam() + ".json");
  ASSERT_TRUE(f) << "missing vectors; run: python -m jaxcc.policyfile --write-vectors tests/vectors";
  const json v = json::parse(f);
  jaxcc::Policy p = jaxcc::Policy::LoadFile(kDir + "/" + v["policy"].get<std::string>());
  ASSERT_EQ(p.feature_name(), GetParam());
  auto fn = jaxcc::MakeFeatureFn(p.feature_name(), p.features_json());
  ASSERT_EQ(fn->dim(), p.obs_dim());
  std::vector<float> window;
  for (int t = 0; t < p.history(); ++t) {
    auto e = fn->Empty();
    window.insert(window.end(), e.begin(), e.end());
  }
  jaxcc::RunningStats run;
  std::vector<float> feat(fn->dim());
  int i = 0;
  for (const json& mj : v["mis"]) {
    const std::string tag = GetParam() + " MI " + std::to_string(i++);
    jaxcc::MonitorStats m;
    for (const json& s : mj["samples"]) m.AddSample(s[0].get<double>(), s[1].get<double>(), s[2].get<double>());
    m.duration = m.active = mj["duration"].get<double>();
    m.sent = mj["sent"].get<double>();
    m.lost = mj["lost"].get<double>();
    run.Update(m);
    ExpectClose(m.RttMean(), mj["rtt_mean"].get<double>(), 1e-12, 1e-15, tag + " rtt_mean");
    ExpectClose(m.RttSlope(), mj["rtt_slope"].get<double>(), 1e-6, 1e-9, tag + " rtt_slope");
    ExpectClose(m.LossRate(), mj["loss_rate"].get<double>(), 1e-12, 1e-15, tag + " loss_rate");
    fn->Compute(m, run, feat.data());
    const auto want = mj["features"].get<std::vector<double>>();
    ASSERT_EQ(want.size(), feat.size());
    // Features are float32 on both sides of the policy; compare at float precision.
    for (size_t k = 0; k < want.size(); ++k) ExpectClose(feat[k], want[k], 1e-6, 1e-6, tag + " feature " + std::to_string(k));
    const int D = p.obs_dim();
    std::memmove(window.data(), window.data() + D, sizeof(float) * (window.size() - D));
    std::memcpy(window.data() + window.size() - D, feat.data(), sizeof(float) * D);
    const auto& out = p.Apply(window.data(), nullptr);
    const auto net = mj["net_out"].get<std::vector<double>>();
    for (size_t k = 0; k < net.size(); ++k) ExpectClose(out.net[k], net[k], 1e-5, 1e-6, tag + " net_out");
    double rate, cwnd;
    p.MapAction(out, mj["rate_in"].get<double>(), 1e30, &rate, &cwnd);
    ExpectClose(rate, mj["rate"].get<double>(), 1e-5, 1e-3, tag + " rate");
  }
}

INSTANTIATE_TEST_SUITE_P(Sets, Features, ::testing::Values("aurora_v1", "pareto_v1"));

TEST(Features, UnknownSetRejected) {
  EXPECT_THROW(jaxcc::MakeFeatureFn("vivace_v9", "{}"), jaxcc::PolicyError);
  EXPECT_THROW(jaxcc::MakeFeatureFn("pareto_v1", R"({"ewma_gain": "x"})"), jaxcc::PolicyError);
}

}  // namespace
