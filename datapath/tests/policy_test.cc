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
