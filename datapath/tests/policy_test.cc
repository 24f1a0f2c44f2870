// Loader rejections and hand-computed forward passes for the C++ policy.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "policy.h"
#include "test_util.h"

using jaxcc::Policy;
using jaxcc::PolicyError;
using jaxcc_test::MakeSafetensors;
using jaxcc_test::TinyDenseSpec;
using jaxcc_test::TinyDenseTensors;
using json = nlohmann::json;

namespace {

// Expects loading to fail with a message containing every needle.
void ExpectReject(const std::vector<uint8_t>& blob, std::initializer_list<std::string> needles) {
  try {
    Policy::LoadBytes(blob.data(), blob.size(), "test");
    FAIL() << "loaded a bad file";
  } catch (const PolicyError& e) {
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

TEST(Policy, TinyDenseByHand) {
  auto blob = MakeSafetensors(TinyDenseSpec(), TinyDenseTensors());
  Policy p = Policy::LoadBytes(blob.data(), blob.size());
  float obs[2] = {2.0f, 1.0f};  // 0.5*2 - 1*1 + 0.25 = 0.25
  const auto& out = p.Apply(obs, nullptr);
  ASSERT_EQ(out.values.size(), 1u);
  EXPECT_FLOAT_EQ(out.values[0], 0.25f);
  float obs2[2] = {10.0f, 0.0f};  // 5.25 clipped to 2
  EXPECT_FLOAT_EQ(p.Apply(obs2, nullptr).values[0], 2.0f);
  double r, c;
  jaxcc::PolicyOutput o;
  o.values = {2.0f};
  p.MapAction(o, 1e6, 3e4, &r, &c);  // aurora, alpha .5: 1e6 * (1 + 1) = 2e6
  EXPECT_DOUBLE_EQ(r, 2e6);
  EXPECT_DOUBLE_EQ(c, 3e4);
  o.values = {-2.0f};
  p.MapAction(o, 1e6, 3e4, &r, &c);  // 1e6 / (1 + 1)
  EXPECT_DOUBLE_EQ(r, 0.5e6);
}

TEST(Policy, TinyLstmByHand) {
  json spec = json::parse(R"({
    "format": "jaxcc-policy", "version": 1, "algorithm": "random",
    "features": {"name": "test", "history": 2, "obs_dim": 1}, "mi_rtts": 2.0, "goal_dim": 0,
    "layers": [{"type": "lstm", "name": "l", "in": 1, "hidden": 1}, {"type": "last_step"}],
    "head": {"type": "continuous", "low": -0.7, "high": 2.0},
    "action": {"type": "rate_multiplicative"}})");
  std::map<std::string, jaxcc_test::T> t = {{"l.kernel_i", {{1, 4}, {0.5f, -0.25f, 1.0f, 0.75f}}},
                                            {"l.kernel_h", {{1, 4}, {0.1f, 0.2f, -0.3f, 0.4f}}},
                                            {"l.bias", {{4}, {0.0f, 1.0f, 0.1f, -0.1f}}}};
  auto blob = MakeSafetensors(spec, t);
  Policy p = Policy::LoadBytes(blob.data(), blob.size());
  // Scalar reference in double, gate order i, f, g, o.
  auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  double h = 0, c = 0;
  for (double x : {0.5, -1.0}) {
    double z[4];
    for (int j = 0; j < 4; ++j) z[j] = x * t["l.kernel_i"].data[j] + h * t["l.kernel_h"].data[j] + t["l.bias"].data[j];
    c = sig(z[1]) * c + sig(z[0]) * std::tanh(z[2]);
    h = sig(z[3]) * std::tanh(c);
    if (x == 0.5) {
      EXPECT_NEAR(h, 0.166555, 2e-6);  // first step, worked out by hand
    }
  }
  float obs[2] = {0.5f, -1.0f};
  const auto& out = p.Apply(obs, nullptr);
  EXPECT_NEAR(out.net[0], h, 1e-6);
  EXPECT_NEAR(out.values[0], -0.7 + (std::tanh(h) + 1) / 2 * 2.7, 1e-6);
  double r, cw;
  p.MapAction(out, 1e6, 1e4, &r, &cw);
  EXPECT_NEAR(r, 1e6 * (1.0 + static_cast<double>(out.values[0])), 1e-3);
}

TEST(Policy, RejectsFraming) {
  auto good = MakeSafetensors(TinyDenseSpec(), TinyDenseTensors());
  ExpectReject({}, {"truncated", "8-byte"});
  ExpectReject(std::vector<uint8_t>(good.begin(), good.begin() + 5), {"truncated"});
  ExpectReject(std::vector<uint8_t>(good.begin(), good.begin() + 40), {"truncated", "header needs"});
  ExpectReject(std::vector<uint8_t>(good.begin(), good.end() - 3), {"truncated", "tensor"});
  auto bad = good;
  bad[7] = 0x40;  // absurd header length
  ExpectReject(bad, {"implausible"});
  bad = good;
  bad[8] = '[';
  ExpectReject(bad, {"corrupted"});
}

TEST(Policy, RejectsSpecProblems) {
  auto t = TinyDenseTensors();
  json s = TinyDenseSpec();
  s["format"] = "onnx";
  ExpectReject(MakeSafetensors(s, t), {"wrong magic"});
  s = TinyDenseSpec();
  s["version"] = 2;
  ExpectReject(MakeSafetensors(s, t), {"unsupported version 2"});
  s = TinyDenseSpec();
  s["layers"][1].erase("type");
  ExpectReject(MakeSafetensors(s, t), {"layer 1", "missing its 'type'"});
  s = TinyDenseSpec();
  s["layers"][1]["type"] = "attention";
  ExpectReject(MakeSafetensors(s, t), {"unknown layer type \"attention\""});
  s = TinyDenseSpec();
  s["layers"][1]["in"] = 3;
  ExpectReject(MakeSafetensors(s, t), {"'fc'", "in=3"});
  s = TinyDenseSpec();
  s["head"] = {{"type", "beta"}};
  ExpectReject(MakeSafetensors(s, t), {"unknown head type"});
  s = TinyDenseSpec();
  s["action"] = {{"type", "rate_table"}, {"multipliers", {1.0}}};
  ExpectReject(MakeSafetensors(s, t), {"needs a discrete"});
  s = TinyDenseSpec();
  s["goal_dim"] = 2;
  ExpectReject(MakeSafetensors(s, t), {"no concat_goal"});
  s = TinyDenseSpec();
  s["layers"][1]["activation"] = "gelu";
  ExpectReject(MakeSafetensors(s, t), {"unknown activation"});
  // No spec at all.
  json h;
  std::string hs = R"({"__metadata__": {"other": "x"}})";
  std::vector<uint8_t> blob(8);
  blob[0] = static_cast<uint8_t>(hs.size());
  blob.insert(blob.end(), hs.begin(), hs.end());
  ExpectReject(blob, {"no 'jaxcc' spec"});
}

TEST(Policy, RejectsTensorProblems) {
  json s = TinyDenseSpec();
  auto t = TinyDenseTensors();
  t["fc.kernel"] = {{3, 1}, {1, 2, 3}};
  ExpectReject(MakeSafetensors(s, t), {"'fc.kernel'", "[3, 1]", "expected [2, 1]"});
  t = TinyDenseTensors();
  t.erase("fc.bias");
  ExpectReject(MakeSafetensors(s, t), {"missing tensor 'fc.bias'"});
  t = TinyDenseTensors();
  t["extra"] = {{1}, {0}};
  ExpectReject(MakeSafetensors(s, t), {"unknown tensor", "extra"});
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    t = TinyDenseTensors();
    t["fc.bias"].data[0] = bad;
    ExpectReject(MakeSafetensors(s, t), {"'fc.bias'", "NaN/inf"});
  }
}

TEST(Policy, RejectsWrongDtypeAndOffsets) {
  std::string hs = R"({"__metadata__":{"jaxcc":"{}"},"fc.bias":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}})";
  std::vector<uint8_t> blob(8);
  blob[0] = static_cast<uint8_t>(hs.size());
  blob.insert(blob.end(), hs.begin(), hs.end());
  blob.push_back(0);
  blob.push_back(0);
  ExpectReject(blob, {"dtype", "F32"});
  hs = R"({"__metadata__":{"jaxcc":"{}"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})";
  blob.assign(8, 0);
  blob[0] = static_cast<uint8_t>(hs.size());
  blob.insert(blob.end(), hs.begin(), hs.end());
  blob.resize(blob.size() + 8, 0);
  ExpectReject(blob, {"data bytes", "needs 8"});
}

// A multi-objective Q head (head.objectives M = 2, n = 3 actions): obs [x], goal [g0, g1] ->
// flatten -> concat_goal -> dense(3 -> 6, linear). z = x*W[0] + g0*W[1] + g1*W[2] + b, read
// action-major: z[a*2 + k] = Q_k(a). The action is argmax_a g0*z[2a] + g1*z[2a+1].
json MoqSpec() {
  return json::parse(R"({
    "format": "jaxcc-policy", "version": 1, "algorithm": "random",
    "features": {"name": "test", "history": 1, "obs_dim": 1}, "mi_rtts": 1.0, "goal_dim": 2,
    "layers": [{"type": "flatten"}, {"type": "concat_goal"},
               {"type": "dense", "name": "q", "in": 3, "out": 6, "activation": "linear"}],
    "head": {"type": "q_values", "n": 3, "objectives": 2},
    "action": {"type": "cwnd_table", "deltas": [-3000.0, 0.0, 3000.0]}})");
}
std::map<std::string, jaxcc_test::T> MoqTensors() {
  //                    a0: k0  k1   a1: k0  k1   a2: k0  k1
  return {{"q.kernel", {{3, 6}, {1.0f, 0.0f, 0.0f, 1.0f, 0.6f, 0.6f,     // x row
                                 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f,     // g0 row
                                 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 2.0f}}},  // g1 row: Q_1(a2) += 2 g1
          {"q.bias", {{6}, {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, -0.25f}}}};
}

TEST(Policy, QValuesObjectivesByHand) {
  auto blob = MakeSafetensors(MoqSpec(), MoqTensors());
  Policy p = Policy::LoadBytes(blob.data(), blob.size());
  EXPECT_EQ(p.head().objectives, 2);
  float x[1] = {1.0f};
  // goal (1, 0): z = [1, 0, 0, 1, 0.6, 0.35]; scores = [1, 0, 0.6] -> a0.
  float g1[2] = {1.0f, 0.0f};
  const auto& o1 = p.Apply(x, g1);
  ASSERT_EQ(o1.net.size(), 6u);
  EXPECT_FLOAT_EQ(o1.net[5], 0.35f);
  ASSERT_EQ(o1.scores.size(), 3u);
  EXPECT_FLOAT_EQ(o1.scores[0], 1.0f);
  EXPECT_FLOAT_EQ(o1.scores[1], 0.0f);
  EXPECT_FLOAT_EQ(o1.scores[2], 0.6f);
  EXPECT_EQ(o1.index, 0);
  // goal (0, 1): z = [1, 0, 0, 1, 0.6, 2.35]; scores = [0, 1, 2.35] -> a2. The plain argmax of
  // z (index 5 -> no such action) or of the first objective (a0) would both be wrong here.
  float g2[2] = {0.0f, 1.0f};
  const auto& o2 = p.Apply(x, g2);
  EXPECT_FLOAT_EQ(o2.scores[0], 0.0f);
  EXPECT_FLOAT_EQ(o2.scores[1], 1.0f);
  EXPECT_FLOAT_EQ(o2.scores[2], 2.35f);
  EXPECT_EQ(o2.index, 2);
  // goal (0.8, 0.2): z[5] = 0.6 - 0.25 + 0.4 = 0.75; scores = [0.8, 0.2, 0.48 + 0.15 = 0.63] -> a0.
  float g3[2] = {0.8f, 0.2f};
  const auto& o3 = p.Apply(x, g3);
  EXPECT_FLOAT_EQ(o3.scores[2], 0.63f);
  EXPECT_EQ(o3.index, 0);
  // x = 0, goal (0.5, 0.5): z = [0, 0, 0, 0, 0, 0.75]; scores = [0, 0, 0.375] -> a2.
  float x0[1] = {0.0f};
  float g4[2] = {0.5f, 0.5f};
  EXPECT_EQ(p.Apply(x0, g4).index, 2);
  // A tie keeps the first maximum: x = 1, goal (0.5, 0.5) with Q(a2) lowered by the bias
  // below a0 = a1 = 0.5: scores [0.5, 0.5, 0.5*0.6 + 0.5*(0.6 - 1.45 + 1) = 0.375] -> a0.
  auto t = MoqTensors();
  t["q.bias"].data = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, -1.45f};
  auto blob2 = MakeSafetensors(MoqSpec(), t);
  Policy p2 = Policy::LoadBytes(blob2.data(), blob2.size());
  const auto& o5 = p2.Apply(x, g4);
  EXPECT_FLOAT_EQ(o5.scores[0], 0.5f);
  EXPECT_FLOAT_EQ(o5.scores[1], 0.5f);
  EXPECT_LT(o5.scores[2], 0.5f);
  EXPECT_EQ(o5.index, 0);
  // The action table has one entry per action (n), not per output (n*M).
  double r, c;
  p.MapAction(o2, 1e6, 30000.0, &r, &c);
  EXPECT_DOUBLE_EQ(c, 33000.0);
}

TEST(Policy, CwndTableMultipliers) {
  // MOCC's mixed table: cwnd x multipliers[i] + deltas[i], at least 2 MSS; without the key
  // every multiplier is 1.
  json s = MoqSpec();
  s["action"]["multipliers"] = {0.5, 1.0, 2.0};
  auto blob = MakeSafetensors(s, MoqTensors());
  Policy p = Policy::LoadBytes(blob.data(), blob.size());
  float x[1] = {1.0f}, g0[2] = {1.0f, 0.0f}, g1[2] = {0.0f, 1.0f};
  double r, c;
  p.MapAction(p.Apply(x, g0), 1e6, 30000.0, &r, &c);  // a0: 30000 x 0.5 - 3000
  EXPECT_DOUBLE_EQ(c, 12000.0);
  p.MapAction(p.Apply(x, g1), 1e6, 30000.0, &r, &c);  // a2: 30000 x 2 + 3000
  EXPECT_DOUBLE_EQ(c, 63000.0);
  p.MapAction(p.Apply(x, g0), 1e6, 4000.0, &r, &c);  // 2000 - 3000 -> the 2-MSS floor
  EXPECT_DOUBLE_EQ(c, 3000.0);
  s["action"]["multipliers"] = {0.5, 1.0};
  ExpectReject(MakeSafetensors(s, MoqTensors()), {"action.multipliers", "3 numbers"});
  s["action"]["multipliers"] = {0.5, 0.0, 2.0};
  ExpectReject(MakeSafetensors(s, MoqTensors()), {"action.multipliers[1]", "> 0"});
}

TEST(Policy, QValuesWithoutObjectivesIsPlainArgmax) {
  // objectives 1 (explicit) is today's head: argmax z, no scores.
  json s = MoqSpec();
  s["head"]["n"] = 6;
  s["head"]["objectives"] = 1;
  s["action"]["deltas"] = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0};
  auto blob = MakeSafetensors(s, MoqTensors());
  Policy p = Policy::LoadBytes(blob.data(), blob.size());
  float x[1] = {1.0f}, g[2] = {0.0f, 1.0f};
  const auto& o = p.Apply(x, g);  // z = [1, 0, 0, 1, 0.6, 2.35]
  EXPECT_TRUE(o.scores.empty());
  EXPECT_EQ(o.index, 5);
}

TEST(Policy, QValuesObjectivesRejections) {
  auto t = MoqTensors();
  json s = MoqSpec();
  s["head"]["objectives"] = 0;
  ExpectReject(MakeSafetensors(s, t), {"head.objectives", "positive integer"});
  s = MoqSpec();
  s["head"]["objectives"] = "2";
  ExpectReject(MakeSafetensors(s, t), {"head.objectives", "positive integer"});
  s = MoqSpec();
  s["head"]["objectives"] = 3;  // 3 x 3 = 9 != 6 outputs
  ExpectReject(MakeSafetensors(s, t), {"n=3 and objectives=3", "final layer outputs 6", "n*objectives = 9"});
  s = MoqSpec();
  s["head"]["n"] = 2;
  s["action"]["deltas"] = {1.0, 2.0};
  ExpectReject(MakeSafetensors(s, t), {"n=2 and objectives=2", "needs n*objectives = 4"});
  s = MoqSpec();
  s["head"] = {{"type", "discrete"}, {"n", 3}, {"objectives", 2}};
  ExpectReject(MakeSafetensors(s, t), {"head.objectives is only for q_values"});
  s = MoqSpec();
  s["action"]["deltas"] = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0};  // one per output, not per action
  ExpectReject(MakeSafetensors(s, t), {"action.deltas", "list of 3"});
  // goal_dim must equal objectives: a 3-value goal with a 2-objective head (6 = 3 x 2 outputs).
  s = MoqSpec();
  s["goal_dim"] = 3;
  s["layers"][2]["in"] = 4;
  auto t3 = t;
  t3["q.kernel"] = {{4, 6}, std::vector<float>(24, 0.1f)};
  ExpectReject(MakeSafetensors(s, t3), {"head.objectives is 2", "spec.goal_dim is 3"});
}

// The network of tests/test_policy_branches.py::_tiny_branches: history 2 x obs 3, goal 2; three
// branches (select + conv1d + flatten | last_step + select + dense relu | goal + dense), then
// concat_goal, dense, concat_goal, dense; continuous head [0, 1]; rate_absolute on a log scale
// from 1 to 100 Mbit/s.
json BranchesSpec() {
  return json::parse(R"({
    "format": "jaxcc-policy", "version": 1, "algorithm": "random",
    "features": {"name": "test", "history": 2, "obs_dim": 3}, "mi_rtts": 1.0, "goal_dim": 2,
    "layers": [
      {"type": "branches", "branches": [
        [{"type": "select", "start": 0, "stop": 2},
         {"type": "conv1d", "name": "c", "in": 2, "out": 1, "kernel": 2, "activation": "linear"},
         {"type": "flatten"}],
        [{"type": "last_step"}, {"type": "select", "start": 1, "stop": 3},
         {"type": "dense", "name": "m", "in": 2, "out": 2, "activation": "relu"}],
        [{"type": "goal"}, {"type": "dense", "name": "g", "in": 2, "out": 1, "activation": "linear"}]]},
      {"type": "concat_goal"},
      {"type": "dense", "name": "h", "in": 6, "out": 1, "activation": "linear"},
      {"type": "concat_goal"},
      {"type": "dense", "name": "out", "in": 3, "out": 1, "activation": "linear"}],
    "head": {"type": "continuous", "low": 0.0, "high": 1.0},
    "action": {"type": "rate_absolute", "bound_mbps": 100.0, "scale": "log", "low_mbps": 1.0}})");
}
std::map<std::string, jaxcc_test::T> BranchesTensors() {
  return {{"c.kernel", {{2, 2, 1}, {1.0f, 0.0f, 0.0f, 1.0f}}}, {"c.bias", {{1}, {0.5f}}},
          {"m.kernel", {{2, 2}, {1.0f, -1.0f, 0.0f, -1.0f}}},  {"m.bias", {{2}, {0.0f, 1.0f}}},
          {"g.kernel", {{2, 1}, {2.0f, 4.0f}}},                {"g.bias", {{1}, {-1.0f}}},
          {"h.kernel", {{6, 1}, {0.1f, 0.2f, 5.0f, -0.4f, 4.0f, -2.0f}}}, {"h.bias", {{1}, {0.05f}}},
          {"out.kernel", {{3, 1}, {1.0f, 2.0f, -1.0f}}},       {"out.bias", {{1}, {0.0f}}}};
}

TEST(Policy, BranchesByHand) {
  auto blob = MakeSafetensors(BranchesSpec(), BranchesTensors());
  Policy p = Policy::LoadBytes(blob.data(), blob.size());
  ASSERT_EQ(p.layers().size(), 5u);
  ASSERT_EQ(p.layers()[0].branches.size(), 3u);
  EXPECT_EQ(p.layers()[0].out_cols, 4);
  const float obs[6] = {1, 2, 3, 4, 5, 6};
  const float goal[2] = {0.25f, 0.75f};
  // branch 0: select 0:2 -> [[1, 2], [4, 5]]; conv k2: 0.5 + 1 + 5 = 6.5
  // branch 1: last_step [4, 5, 6] -> select 1:3 [5, 6] -> relu([5, -10]) = [5, 0]
  // branch 2: goal -> 2*.25 + 4*.75 - 1 = 2.5
  // h = .1*6.5 + .2*5 + 0 - .4*2.5 + 4*.25 - 2*.75 + .05 = 0.2; out = 0.2 + 2*.25 - .75 = -0.05
  const auto& out = p.Apply(obs, goal);
  ASSERT_EQ(out.net.size(), 1u);
  EXPECT_NEAR(out.net[0], -0.05f, 1e-6);
  const double u = (std::tanh(-0.05) + 1.0) / 2.0;
  ASSERT_EQ(out.values.size(), 1u);
  EXPECT_NEAR(out.values[0], u, 1e-6);
  double r, c;
  p.MapAction(out, 5e6, 7e4, &r, &c);
  EXPECT_NEAR(r, std::pow(100.0, u) * 125000.0, 1e-5 * r);  // ~8.91 Mbit/s
  EXPECT_DOUBLE_EQ(c, 7e4);
  // goal (1, 0): branch 2 = 1, h = .65 + 1 - .4 + 4 + .05 = 5.3, out = 5.3 + 2 = 7.3
  const float goal2[2] = {1.0f, 0.0f};
  EXPECT_NEAR(p.Apply(obs, goal2).net[0], 7.3f, 1e-5);
  // The same policy again: scratch buffers are reused, results must not drift.
  EXPECT_NEAR(p.Apply(obs, goal).net[0], -0.05f, 1e-6);
}

TEST(Policy, LogRateByHand) {
  json s = BranchesSpec();
  s["action"]["low_mbps"] = 0.1;  // 0.1 .. 100 Mbit/s
  auto blob = MakeSafetensors(s, BranchesTensors());
  Policy p = Policy::LoadBytes(blob.data(), blob.size());
  EXPECT_TRUE(p.action().log_scale);
  jaxcc::PolicyOutput o;
  double r, c;
  const std::pair<float, double> cases[] = {{0.0f, 0.1}, {1.0f, 100.0}, {0.5f, std::sqrt(10.0)},
                                            {0.25f, 0.1 * std::pow(1000.0, 0.25)}};
  for (const auto& [a, mbps] : cases) {
    o.values = {a};
    p.MapAction(o, 1e6, 1e5, &r, &c);
    EXPECT_NEAR(r, mbps * 125000.0, 1e-9 * mbps * 125000.0) << "a=" << a;
  }
  // Linear (the default): u * bound.
  s["action"].erase("scale");
  s["action"].erase("low_mbps");
  blob = MakeSafetensors(s, BranchesTensors());
  Policy lin = Policy::LoadBytes(blob.data(), blob.size());
  EXPECT_FALSE(lin.action().log_scale);
  o.values = {0.25f};
  lin.MapAction(o, 1e6, 1e5, &r, &c);
  EXPECT_DOUBLE_EQ(r, 25.0 * 125000.0);
}

TEST(Policy, BranchesRejections) {
  const auto t = BranchesTensors();
  auto branch = [](json& s, int b) -> json& { return s["layers"][0]["branches"][b]; };
  json s = BranchesSpec();
  branch(s, 0)[0]["stop"] = 4;
  ExpectReject(MakeSafetensors(s, t),
               {"layer 0 (branches) branch 0 layer 0 (select) 'stop' must be an integer in [1, 3]", "got 4"});
  s = BranchesSpec();
  branch(s, 0)[0]["start"] = 2;
  branch(s, 0)[0]["stop"] = 2;
  ExpectReject(MakeSafetensors(s, t), {"'stop' must be an integer in [3, 3]", "got 2"});
  s = BranchesSpec();
  branch(s, 1)[1]["start"] = 3;
  ExpectReject(MakeSafetensors(s, t),
               {"branch 1 layer 1 (select) 'start' must be an integer in [0, 2] (its input has 3 features), got 3"});
  s = BranchesSpec();
  branch(s, 1)[1]["start"] = -1;
  ExpectReject(MakeSafetensors(s, t), {"'start' must be an integer in [0, 2]", "got -1"});
  s = BranchesSpec();
  branch(s, 1)[1].erase("stop");
  ExpectReject(MakeSafetensors(s, t), {"layer 0 (branches) branch 1 layer 1 (select) is missing key 'stop'"});
  s = BranchesSpec();
  s["goal_dim"] = 0;
  ExpectReject(MakeSafetensors(s, t), {"layer 0 (branches) branch 2 layer 0 (goal) but spec.goal_dim is 0"});
  s = BranchesSpec();
  branch(s, 1) = json::array();
  ExpectReject(MakeSafetensors(s, t), {"layer 0 (branches) branch 1 must be a non-empty list of layers"});
  s = BranchesSpec();
  s["layers"][0]["branches"] = json::array();
  ExpectReject(MakeSafetensors(s, t), {"layer 0 (branches) 'branches' must be a non-empty list of layer lists"});
  s = BranchesSpec();
  s["layers"][0].erase("branches");
  ExpectReject(MakeSafetensors(s, t), {"layer 0 (branches) is missing key 'branches'"});
  s = BranchesSpec();
  branch(s, 2).insert(branch(s, 2).begin(), json::parse(R"({"type": "branches", "branches": [[{"type": "goal"}]]})"));
  ExpectReject(MakeSafetensors(s, t), {"layer 0 (branches) branch 2 layer 0 (branches): branches cannot be nested"});
  s = BranchesSpec();
  branch(s, 0).erase(2);  // no flatten: the conv's [1, 1]
  ExpectReject(MakeSafetensors(s, t),
               {"layer 0 (branches) branch 0 must end in a vector (add last_step or flatten), got shape [1, 1]"});
  s = BranchesSpec();
  branch(s, 2)[1]["name"] = "m";
  ExpectReject(MakeSafetensors(s, t), {"branch 2 layer 1 (dense 'm'): duplicate layer name 'm'"});
  s = BranchesSpec();
  s["layers"][2]["name"] = "g";
  ExpectReject(MakeSafetensors(s, t), {"layer 2 (dense 'g'): duplicate layer name 'g'"});
  s = BranchesSpec();
  s["layers"][2]["in"] = 5;
  ExpectReject(MakeSafetensors(s, t), {"layer 2 (dense 'h') expects in=5 but its input has shape [6]"});
  auto t2 = t;
  t2["m.kernel"] = {{3, 2}, {0, 0, 0, 0, 0, 0}};
  ExpectReject(MakeSafetensors(BranchesSpec(), t2), {"tensor 'm.kernel' has shape [3, 2], expected [2, 2]"});
  t2 = t;
  t2.erase("g.bias");
  ExpectReject(MakeSafetensors(BranchesSpec(), t2), {"missing tensor 'g.bias'"});
}

TEST(Policy, LogRateRejections) {
  const auto t = BranchesTensors();
  const std::pair<const char*, const char*> cases[] = {
      {R"({"scale": "exp"})", "action.scale must be one of linear, log, got \"exp\""},
      {R"({"scale": "log"})", "missing key 'low_mbps'"},
      {R"({"scale": "log", "low_mbps": 0.0})", "action.low_mbps must be in (0, bound_mbps=100.0), got 0.0"},
      {R"({"scale": "log", "low_mbps": 100.0})", "action.low_mbps must be in (0, bound_mbps=100.0), got 100.0"},
      {R"({"scale": "log", "low_mbps": -1.0})", "action.low_mbps must be in (0, bound_mbps=100.0)"},
      {R"({"scale": "linear", "low_mbps": 1.0})", "action.low_mbps is only allowed with scale 'log'"},
  };
  for (const auto& [patch, needle] : cases) {
    json s = BranchesSpec();
    s["action"] = {{"type", "rate_absolute"}, {"bound_mbps", 100.0}};
    s["action"].update(json::parse(patch));
    ExpectReject(MakeSafetensors(s, t), {needle});
  }
  json s = TinyDenseSpec();  // aurora
  s["action"]["scale"] = "log";
  ExpectReject(MakeSafetensors(s, TinyDenseTensors()), {"only allowed on rate_absolute, got aurora"});
}

TEST(Policy, MissingFileIsPolicyError) {
  EXPECT_THROW(Policy::LoadFile("/nonexistent/x.safetensors"), PolicyError);
}

TEST(Policy, AllTruncationsRejectedNoCrash) {
  auto good = jaxcc_test::ReadFile(std::string(JAXCC_VECTORS_DIR) + "/lstm.safetensors");
  ASSERT_GT(good.size(), 1000u);
  for (size_t n = 0; n < good.size(); n += (n < 2000 ? 1 : 97)) {
    EXPECT_THROW(Policy::LoadBytes(good.data(), n), PolicyError) << "length " << n;
  }
}

}  // namespace

#ifdef JAXCC_SEEDS_DIR
#include <dirent.h>
namespace {
// Fuzzer seeds and past crashers: each must be rejected cleanly or run to a clamped rate.
TEST(Policy, FuzzSeedsAndRegressions) {
  DIR* d = opendir(JAXCC_SEEDS_DIR);
  ASSERT_NE(d, nullptr);
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    auto blob = jaxcc_test::ReadFile(std::string(JAXCC_SEEDS_DIR) + "/" + e->d_name);
    ++n;
    try {
      Policy p = Policy::LoadBytes(blob.data(), blob.size(), e->d_name);
      std::vector<float> obs(static_cast<size_t>(p.history()) * p.obs_dim(), 0.5f), goal(p.goal_dim(), 0.25f);
      const auto& out = p.Apply(obs.data(), goal.empty() ? nullptr : goal.data());
      double r, c;
      p.MapAction(out, 1e6, 1e5, &r, &c);
      EXPECT_TRUE(std::isfinite(r)) << e->d_name;
      EXPECT_GE(r, p.action().min_mbps * jaxcc::kBytesPerMbit) << e->d_name;
    } catch (const PolicyError&) {
    }
  }
  closedir(d);
  EXPECT_GE(n, 5);
}
}  // namespace
#endif
