// Feature parity with jaxcc/envs: per-packet events -> MonitorStats -> FeatureFn -> policy,
// against tests/vectors/features_*.json written by `python -m jaxcc.parity_vectors`.
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

// Sets with a "start" record run the sender's whole loop (Start, the first decision on the
// empty history, then Compute + Decide per MI, chaining rate and cwnd); the others check the
// features and the action block's rate from the recorded rate_in. The parameter is the vector
// file's stem: features_<set>, or mocc_preference_switch (mocc_v1's loop whose preference
// changes at run time: an MI record's "goal" is the goal its decision uses, as jaxcc-sender
// --control-stdin applies a new preference at the next decision).
TEST_P(Features, MatchEnvsAndPolicy) {
  std::ifstream f(kDir + "/" + GetParam() + ".json");
  ASSERT_TRUE(f) << "missing vectors; run: python -m jaxcc.parity_vectors --out tests/vectors";
  const json v = json::parse(f);
  jaxcc::Policy p = jaxcc::Policy::LoadFile(kDir + "/" + v["policy"].get<std::string>());
  ASSERT_EQ(p.feature_name(), v["features"].get<std::string>());
  auto fn = jaxcc::MakeFeatureFn(p.feature_name(), p.features_json());
  ASSERT_EQ(fn->dim(), p.obs_dim());
  ASSERT_NO_THROW(fn->Check(p));
  std::vector<float> window;
  for (int t = 0; t < p.history(); ++t) {
    auto e = fn->Empty();
    window.insert(window.end(), e.begin(), e.end());
  }
  std::vector<float> goal = v.contains("goal") ? v["goal"].get<std::vector<float>>() : std::vector<float>();
  ASSERT_EQ(static_cast<int>(goal.size()), p.goal_dim());
  const float* g = goal.empty() ? nullptr : goal.data();
  int goal_switches = 0;
  jaxcc::RunningStats run;
  const bool loop = v.contains("start");
  double rate = 0, cwnd = 1e30;
  auto check_out = [&](const json& rec, const jaxcc::PolicyOutput& out, const std::string& tag) {
    const auto net = rec["net_out"].get<std::vector<double>>();
    ASSERT_EQ(out.net.size(), net.size()) << tag;
    for (size_t k = 0; k < net.size(); ++k) ExpectClose(out.net[k], net[k], 1e-5, 1e-6, tag + " net_out");
    if (rec["output"].is_number_integer()) {
      EXPECT_EQ(out.index, rec["output"].get<int>()) << tag;
    }
  };
  auto decide = [&](const json& rec, const jaxcc::PolicyOutput& out, const std::string& tag) {
    ExpectClose(rate, rec["rate_in"].get<double>(), 1e-5, 1e-3, tag + " rate_in");
    ExpectClose(cwnd, rec["cwnd_in"].get<double>(), 1e-5, 1e-3, tag + " cwnd_in");
    jaxcc::Decide(p, fn.get(), out, run, rate, cwnd, 0.05, &rate, &cwnd);
    ExpectClose(rate, rec["rate"].get<double>(), 1e-5, 1e-3, tag + " rate");
    ExpectClose(cwnd, rec["cwnd"].get<double>(), 1e-5, 1e-3, tag + " cwnd");
  };
  if (loop) {
    fn->SetRttGuess(v["rtt_guess"].get<double>());
    rate = jaxcc::kBytesPerMbit;  // the sender's defaults (--init-mbps 1, no window / 10 packets)
    cwnd = p.action().type == jaxcc::ActionType::kCwndTable ? 10.0 * 1472 : 1e30;
    fn->Start(&rate, &cwnd);
    const std::string tag = GetParam() + " start";
    const auto& out = p.Apply(window.data(), g);
    check_out(v["start"], out, tag);
    decide(v["start"], out, tag);
  }
  std::vector<float> feat(fn->dim());
  int i = 0;
  for (const json& mj : v["mis"]) {
    const std::string tag = GetParam() + " MI " + std::to_string(i++);
    jaxcc::MonitorStats m;
    m.keep_rtts = fn->NeedsRttSamples();
    for (const json& s : mj["samples"]) m.AddSample(s[0].get<double>(), s[1].get<double>(), s[2].get<double>());
    m.duration = m.active = mj["duration"].get<double>();
    m.sent = mj["sent"].get<double>();
    m.lost = mj["lost"].get<double>();
    run.Update(m);
    ExpectClose(m.RttMean(), mj["rtt_mean"].get<double>(), 1e-12, 1e-15, tag + " rtt_mean");
    ExpectClose(m.RttSlope(), mj["rtt_slope"].get<double>(), 1e-6, 1e-9, tag + " rtt_slope");
    ExpectClose(m.LossRate(), mj["loss_rate"].get<double>(), 1e-12, 1e-15, tag + " loss_rate");
    if (mj.contains("rtt_p95")) {
      std::vector<double> r = m.rtts;
      ExpectClose(jaxcc::NearestRankPercentile(&r, 95.0), mj["rtt_p95"].get<double>(), 1e-12, 1e-15, tag + " p95");
    }
    fn->Compute(m, run, feat.data());
    const auto want = mj["features"].get<std::vector<double>>();
    ASSERT_EQ(want.size(), feat.size());
    // Features are float32 on both sides of the policy; compare at float precision.
    for (size_t k = 0; k < want.size(); ++k) ExpectClose(feat[k], want[k], 1e-6, 1e-6, tag + " feature " + std::to_string(k));
    const int D = p.obs_dim();
    std::memmove(window.data(), window.data() + D, sizeof(float) * (window.size() - D));
    std::memcpy(window.data() + window.size() - D, feat.data(), sizeof(float) * D);
    if (mj.contains("goal")) {  // a runtime preference change: this decision uses the MI's goal
      const auto mg = mj["goal"].get<std::vector<float>>();
      ASSERT_EQ(mg.size(), goal.size()) << tag;
      if (mg != goal) ++goal_switches;
      goal = mg;
      g = goal.data();
    }
    const auto& out = p.Apply(window.data(), g);
    check_out(mj, out, tag);
    if (loop) {
      decide(mj, out, tag);
    } else {
      double r, c;
      p.MapAction(out, mj["rate_in"].get<double>(), 1e30, &r, &c);
      ExpectClose(r, mj["rate"].get<double>(), 1e-5, 1e-3, tag + " rate");
    }
  }
  // The switch vector changes the goal once, at switch_mi (guards the generator).
  if (v.contains("switch_mi")) {
    EXPECT_EQ(goal_switches, 1);
    EXPECT_EQ(v["mis"][v["switch_mi"].get<int>()]["goal"].get<std::vector<float>>(),
              v["switch_goal"].get<std::vector<float>>());
  }
}

INSTANTIATE_TEST_SUITE_P(Sets, Features,
                         ::testing::Values("features_aurora_v1", "features_aurora_v2", "features_pareto_v1",
                                           "features_pareto_v2",
                                           "features_eagle_v1", "features_mocc_v1", "features_deepcc_v1",
                                           "mocc_preference_switch", "deepcc_window", "mocc_initscaled",
                                           "mocc_ackewma"));

// deepcc_window's file states the ACK-clocked window, and its decisions after the first set one
// (guards the generator: the same loop without it keeps no window).
TEST(Features, DeepccWindowVectorSetsAWindow) {
  std::ifstream f(kDir + "/deepcc_window.json");
  ASSERT_TRUE(f);
  const json v = json::parse(f);
  EXPECT_GE(v["start"]["cwnd"].get<double>(), 1e29);
  for (const json& m : v["mis"]) EXPECT_LT(m["cwnd"].get<double>(), 1e29);
  EXPECT_THROW(jaxcc::MakeFeatureFn("deepcc_v1", R"({"cwnd_rtts": -1})"), jaxcc::PolicyError);
  EXPECT_THROW(jaxcc::MakeFeatureFn("deepcc_v1", R"({"cwnd_rtts": 101})"), jaxcc::PolicyError);
}

// mocc_initscaled's file scales §IV-B's init-cwnd by min RTT / init_ref_rtt_s: its init step sets
// another window than features_mocc_v1's, the same loop with eq. 1 (guards the generator).
TEST(Features, MoccInitScaledVectorScalesTheInitWindow) {
  std::ifstream fs(kDir + "/mocc_initscaled.json"), fp(kDir + "/features_mocc_v1.json");
  ASSERT_TRUE(fs && fp);
  const json s = json::parse(fs), p = json::parse(fp);
  ASSERT_EQ(s["mis"].size(), p["mis"].size());
  int differ = 0;
  for (size_t i = 0; i < s["mis"].size(); ++i) differ += s["mis"][i]["cwnd"] != p["mis"][i]["cwnd"];
  EXPECT_GT(differ, 0);
  EXPECT_THROW(jaxcc::MakeFeatureFn("mocc_v1", R"({"init_ref_rtt_s": -0.01})"), jaxcc::PolicyError);
  EXPECT_THROW(jaxcc::MakeFeatureFn("mocc_v1", R"({"init_ref_rtt_s": 1.5})"), jaxcc::PolicyError);
}

// mocc_ackewma's file takes the max ACK rate over an EWMA of the ACK rate: its features 1-3 and
// its windows differ from features_mocc_v1's, the same loop with the raw max (guards the generator).
TEST(Features, MoccAckEwmaVectorMovesTheFeatures) {
  std::ifstream fs(kDir + "/mocc_ackewma.json"), fp(kDir + "/features_mocc_v1.json");
  ASSERT_TRUE(fs && fp);
  const json s = json::parse(fs), p = json::parse(fp);
  ASSERT_EQ(s["mis"].size(), p["mis"].size());
  int feats = 0, windows = 0;
  for (size_t i = 0; i < s["mis"].size(); ++i) {
    feats += s["mis"][i]["features"] != p["mis"][i]["features"];
    windows += s["mis"][i]["cwnd"] != p["mis"][i]["cwnd"];
  }
  EXPECT_GT(feats, 0);
  EXPECT_GT(windows, 0);
  EXPECT_THROW(jaxcc::MakeFeatureFn("mocc_v1", R"({"max_ack_ewma": 0})"), jaxcc::PolicyError);
  EXPECT_THROW(jaxcc::MakeFeatureFn("mocc_v1", R"({"max_ack_ewma": 1.5})"), jaxcc::PolicyError);
}

// The vector exercises what pareto_v2 adds (its events are random, so this guards the
// generator): MIs without an RTT sample after the rate became positive, where the own-queue
// feature must be 0, and MIs where it is clearly positive.
TEST(Features, ParetoV2VectorCoversTheQueueFeature) {
  std::ifstream f(kDir + "/features_pareto_v2.json");
  ASSERT_TRUE(f);
  const json v = json::parse(f);
  int no_sample = 0, queued = 0;
  for (size_t i = 1; i < v["mis"].size(); ++i) {
    const json& m = v["mis"][i];
    const double q = m["features"][5].get<double>();
    if (m["samples"].empty()) {
      EXPECT_EQ(q, 0.0) << "MI " << i;
      ++no_sample;
    }
    if (q > 0.1) ++queued;
  }
  EXPECT_GE(no_sample, 1);
  EXPECT_GE(queued, 4);
}

// MI i of a rising queue: 10 + i packets ACKed at RTTs climbing 2 ms per MI (and 0.1 ms per
// packet within it), `sent_pkts` sent and i lost, 50 ms long.
jaxcc::MonitorStats RisingMi(int i, double sent_pkts) {
  jaxcc::MonitorStats m;
  m.duration = m.active = 0.05;
  for (int k = 0; k < 10 + i; ++k) m.AddSample(1500.0, 0.04 + 0.002 * i + 1e-4 * k, 0.005 * k);
  m.sent = sent_pkts * 1500.0;
  m.lost = i * 1500.0;
  return m;
}

// The sixth feature by hand: R = 12.5e6 B/s (100 Mbit/s), the MI's smallest RTT 0.1012 s, min
// RTT 0.1 s -> q = 12.5e6 x 0.0012 / 1500 = 10 packets -> log2(11) / 8. MI 0 sets the min RTT
// (q = 0); MI 1 queues; MI 2 has no RTT sample (q = 0 although R > 0); MI 3: R = 0.8 x 6.25e6 +
// 0.2 x 2.5e6 = 5.5e6, d = 0.6 ms -> q = 2.2; MI 4 sees a new, lower min RTT (q = 0).
TEST(Features, ParetoV2OwnQueueByHand) {
  auto fn = jaxcc::MakeFeatureFn("pareto_v2", "{}");
  ASSERT_EQ(fn->dim(), 6);
  jaxcc::RunningStats run;
  std::vector<float> x(6);
  auto mi = [&](int pkts, double r_min, double r_other) {
    jaxcc::MonitorStats m;
    m.duration = m.active = 0.12;
    for (int k = 0; k < pkts; ++k) m.AddSample(1500.0, k == pkts / 2 ? r_min : r_other, 0.12 * k / pkts);
    m.sent = pkts * 1500.0;
    run.Update(m);
    fn->Compute(m, run, x.data());
    return x[5];
  };
  EXPECT_EQ(mi(1000, 0.1, 0.1), 0.0f);                      // R = 1000 x 1500 / 0.12 = 12.5e6
  EXPECT_NEAR(mi(1000, 0.1012, 0.103), std::log2(11.0) / 8, 1e-6);  // R = 12.5e6
  EXPECT_EQ(mi(0, 0, 0), 0.0f);                             // R = 0.2 x 12.5e6 = 2.5e6
  EXPECT_NEAR(mi(500, 0.1006, 0.104), std::log2(3.2) / 8, 1e-6);
  EXPECT_EQ(mi(500, 0.099, 0.1), 0.0f);
  // The first five are pareto_v1's, unchanged.
  auto v1 = jaxcc::MakeFeatureFn("pareto_v1", "{}");
  auto v2 = jaxcc::MakeFeatureFn("pareto_v2", "{}");
  jaxcc::RunningStats r1;
  std::vector<float> a(5), b(6);
  for (int i = 0; i < 4; ++i) {
    const jaxcc::MonitorStats m = RisingMi(i, 14);
    r1.Update(m);
    v1->Compute(m, r1, a.data());
    v2->Compute(m, r1, b.data());
    for (int k = 0; k < 5; ++k) EXPECT_EQ(a[k], b[k]) << "MI " << i << " feature " << k;
  }
}

// aurora_v2 is aurora_v1's three features and the MI's loss rate: with 10 + i packets ACKed
// and i lost, i / (10 + 2i) by hand.
TEST(Features, AuroraV2IsV1PlusTheLossRate) {
  auto v1 = jaxcc::MakeFeatureFn("aurora_v1", "{}");
  auto v2 = jaxcc::MakeFeatureFn("aurora_v2", "{}");
  ASSERT_EQ(v2->dim(), 4);
  EXPECT_EQ(v2->Empty(), (std::vector<float>{0.0f, 1.0f, 1.0f, 0.0f}));
  jaxcc::RunningStats r1;
  std::vector<float> a(3), b(4);
  for (int i = 0; i < 4; ++i) {
    const jaxcc::MonitorStats m = RisingMi(i, 10 + 2 * i);
    r1.Update(m);
    v1->Compute(m, r1, a.data());
    v2->Compute(m, r1, b.data());
    for (int k = 0; k < 3; ++k) EXPECT_EQ(a[k], b[k]) << "MI " << i << " feature " << k;
    EXPECT_FLOAT_EQ(b[3], static_cast<float>(i) / (10 + 2 * i)) << "MI " << i;
  }
}

// A policy whose head/action does not fit its feature set's paper is refused (exit 2 in the
// sender), naming what is wrong.
TEST(Features, PaperSetsCheckTheirPolicy) {
  jaxcc::Policy mlp = jaxcc::Policy::LoadFile(kDir + "/mlp.safetensors");
  for (const char* set : {"eagle_v1", "mocc_v1", "deepcc_v1"}) {
    jaxcc::Policy p = jaxcc::Policy::LoadFile(kDir + "/features_" + std::string(set) + ".safetensors");
    // The MLP vector policy (continuous head, aurora action) fits none of them.
    jaxcc::Policy wrong = jaxcc::Policy::LoadFile(kDir + "/mlp.safetensors");
    auto fn = jaxcc::MakeFeatureFn(set, p.features_json());
    EXPECT_NO_THROW(fn->Check(p)) << set;
    try {
      fn->Check(wrong);
      ADD_FAILURE() << set << " accepted an aurora-style policy";
    } catch (const jaxcc::PolicyError& e) {
      EXPECT_NE(std::string(e.what()).find(set), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(jaxcc::MakeFeatureFn("eagle_v1", R"({"multipliers": [2, 1]})"), jaxcc::PolicyError);
  EXPECT_THROW(jaxcc::MakeFeatureFn("eagle_v1", R"({"bw_window_steps": 17})"), jaxcc::PolicyError);
  EXPECT_THROW(jaxcc::MakeFeatureFn("eagle_v1", R"({"bw_window_steps": 2.5})"), jaxcc::PolicyError);
  EXPECT_NO_THROW(jaxcc::MakeFeatureFn("eagle_v1", R"({"bw_window_steps": 0})"));
  EXPECT_THROW(jaxcc::MakeFeatureFn("mocc_v1", R"({"bw_set_mbps": [12, 6]})"), jaxcc::PolicyError);
  EXPECT_THROW(jaxcc::MakeFeatureFn("deepcc_v1", R"({"bound_mbps": 0})"), jaxcc::PolicyError);
  // pareto_v2: rate x (1 + a) over its own range; a v1-range head ([-0.7, 2], lstm.json) is refused
  // when the file states the v2 range, as is an aurora action.
  jaxcc::Policy v2 = jaxcc::Policy::LoadFile(kDir + "/features_pareto_v2.safetensors");
  EXPECT_NO_THROW(jaxcc::MakeFeatureFn("pareto_v2", v2.features_json())->Check(v2));
  jaxcc::Policy v1_head = jaxcc::Policy::LoadFile(kDir + "/lstm.safetensors");
  auto ranged = jaxcc::MakeFeatureFn("pareto_v2", R"({"action_low": -0.3, "action_high": 0.5})");
  for (const jaxcc::Policy* wrong : {&v1_head, &mlp}) {
    try {
      ranged->Check(*wrong);
      ADD_FAILURE() << "pareto_v2 accepted a policy that does not fit";
    } catch (const jaxcc::PolicyError& e) {
      EXPECT_NE(std::string(e.what()).find("pareto_v2"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(jaxcc::MakeFeatureFn("pareto_v2", "{}")->Check(v1_head));  // no range stated
  EXPECT_THROW(jaxcc::MakeFeatureFn("pareto_v2", R"({"empty": [0, 0, 0, 0, 0]})"), jaxcc::PolicyError);
}

// Starts of the simulator's senders (jaxcc/senders/{aurora,pareto,eagle}_v1.py, pareto_v2.py).
TEST(Features, StartWhereTheSimulatorDoes) {
  double rate = 1.0, cwnd = 1e30;
  auto aurora = jaxcc::MakeFeatureFn("aurora_v1", "{}");
  aurora->SetRttGuess(0.04);
  aurora->Start(&rate, &cwnd);
  EXPECT_DOUBLE_EQ(rate, 10 * 1500 / 0.04);  // 10 packets per RTT
  for (const char* set : {"pareto_v1", "pareto_v2"}) {
    auto pareto = jaxcc::MakeFeatureFn(set, R"({"init_pkts_per_rtt": 20, "init_rtt_s": 0.1})");
    pareto->Start(&rate, &cwnd);
    EXPECT_DOUBLE_EQ(rate, 20 * 1500 / 0.1) << set;
  }
  auto eagle = jaxcc::MakeFeatureFn("eagle_v1", "{}");
  eagle->Start(&rate, &cwnd);
  EXPECT_DOUBLE_EQ(rate, 0.3 * 125000);  // Eagle §III-B "Startup": 300 Kbps, cwnd 10
  EXPECT_DOUBLE_EQ(cwnd, 10 * 1500);
  EXPECT_THROW(jaxcc::MakeFeatureFn("aurora_v1", R"({"init_pkts_per_rtt": 0})"), jaxcc::PolicyError);
}

TEST(Features, NearestRankPercentile) {
  std::vector<double> v = {5, 1, 4, 2, 3};
  EXPECT_EQ(jaxcc::NearestRankPercentile(&v, 95.0), 5.0);  // ceil(4.75) = 5th smallest
  std::vector<double> w;
  for (int k = 1; k <= 100; ++k) w.push_back(101 - k);
  EXPECT_EQ(jaxcc::NearestRankPercentile(&w, 95.0), 95.0);
  std::vector<double> e;
  EXPECT_EQ(jaxcc::NearestRankPercentile(&e, 95.0), 0.0);
}

TEST(Features, UnknownSetRejected) {
  EXPECT_THROW(jaxcc::MakeFeatureFn("vivace_v9", "{}"), jaxcc::PolicyError);
  EXPECT_THROW(jaxcc::MakeFeatureFn("pareto_v1", R"({"ewma_gain": "x"})"), jaxcc::PolicyError);
}

}  // namespace
