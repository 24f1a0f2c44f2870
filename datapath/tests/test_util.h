// Helpers shared by the datapath tests.
#pragma once

#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace jaxcc_test {

inline std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

struct T {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

// Builds a safetensors blob independently of the loader (header JSON + LE float data).
inline std::vector<uint8_t> MakeSafetensors(const nlohmann::json& spec, const std::map<std::string, T>& tensors) {
  nlohmann::json h;
  h["__metadata__"] = {{"jaxcc", spec.dump()}};
  std::vector<uint8_t> data;
  for (const auto& kv : tensors) {
    const size_t b = data.size();
    const auto* p = reinterpret_cast<const uint8_t*>(kv.second.data.data());
    data.insert(data.end(), p, p + 4 * kv.second.data.size());
    h[kv.first] = {{"dtype", "F32"}, {"shape", kv.second.shape}, {"data_offsets", {b, data.size()}}};
  }
  const std::string hs = h.dump();
  std::vector<uint8_t> out(8);
  const uint64_t n = hs.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  out.insert(out.end(), hs.begin(), hs.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// The tiny dense policy of tests/test_policyfile.py: [2,1] -> flatten -> dense(2->1).
inline nlohmann::json TinyDenseSpec() {
  return nlohmann::json::parse(R"({
    "format": "jaxcc-policy", "version": 1, "algorithm": "random",
    "features": {"name": "test", "history": 1, "obs_dim": 2}, "mi_rtts": 1.0, "goal_dim": 0,
    "layers": [{"type": "flatten"},
               {"type": "dense", "name": "fc", "in": 2, "out": 1, "activation": "linear"}],
    "head": {"type": "gaussian_mean", "low": -2.0, "high": 2.0},
    "action": {"type": "aurora", "alpha": 0.5}})");
}
inline std::map<std::string, T> TinyDenseTensors() {
  return {{"fc.kernel", {{2, 1}, {0.5f, -1.0f}}}, {"fc.bias", {{1}, {0.25f}}}};
}

}  // namespace jaxcc_test
