#include "policy.h"

#include "fastmath.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace jaxcc {
namespace {

using json = nlohmann::json;

std::string ShapeStr(const std::vector<int64_t>& s) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < s.size(); ++i) o << (i ? ", " : "") << s[i];
  o << "]";
  return o.str();
}

[[noreturn]] void Fail(const std::string& what, const std::string& msg) {
  throw PolicyError("policy file " + what + ": " + msg);
}

// JSON accessors that turn nlohmann's type errors into messages naming the field.
const json& Req(const json& obj, const char* key, const std::string& where, const std::string& what) {
  if (!obj.is_object() || !obj.contains(key)) Fail(what, where + " is missing key '" + key + "'");
  return obj.at(key);
}

int PosInt(const json& v, const std::string& where, const std::string& what) {
  if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > (1 << 24))
    Fail(what, where + " must be a positive integer, got " + v.dump());
  return static_cast<int>(v.get<int64_t>());
}

double Num(const json& v, const std::string& where, const std::string& what) {
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    Fail(what, where + " must be a finite number, got " + v.dump());
  return v.get<double>();
}

uint64_t ReadLE64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

Activation ParseAct(const json& layer, const std::string& where, const std::string& what) {
  if (!layer.contains("activation")) return Activation::kLinear;
  const json& a = layer.at("activation");
  if (a == "relu") return Activation::kRelu;
  if (a == "tanh") return Activation::kTanh;
  if (a == "sigmoid") return Activation::kSigmoid;
  if (a == "linear") return Activation::kLinear;
  Fail(what, where + " has unknown activation " + a.dump() + " (known: relu, tanh, sigmoid, linear)");
}

// Hot loops are compiled twice, for AVX2 and for the x86-64 baseline, and the loader
// picks at run time (GCC/Clang function multi-versioning): fast where the CPU allows,
// portable everywhere else. (A feature test, not "arch=haswell": that one checks the CPU
// model and silently picks the baseline on e.g. AMD EPYC.)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define JAXCC_MULTIVERSION __attribute__((target_clones("avx2", "default")))
#else
#define JAXCC_MULTIVERSION
#endif

JAXCC_MULTIVERSION void Activate(float* x, size_t n, Activation a) {
  switch (a) {
    case Activation::kRelu:
      for (size_t i = 0; i < n; ++i) x[i] = x[i] > 0.f ? x[i] : 0.f;
      break;
    case Activation::kTanh:
      for (size_t i = 0; i < n; ++i) x[i] = FastTanh(x[i]);
      break;
    case Activation::kSigmoid:
      for (size_t i = 0; i < n; ++i) x[i] = FastSigmoid(x[i]);
      break;
    case Activation::kLinear:
      break;
  }
}

// y[out] = b + x[in] @ W[in, out]. Loop order (i outer, j inner) walks W row by row so the
// inner loop is a contiguous axpy the compiler vectorises.
JAXCC_MULTIVERSION void MatVec(const float* __restrict x, int in, const float* __restrict w, const float* __restrict b, int out,
                   float* __restrict y) {
  std::memcpy(y, b, sizeof(float) * out);
  for (int i = 0; i < in; ++i) {
    const float xi = x[i];
    const float* row = w + static_cast<size_t>(i) * out;
    for (int j = 0; j < out; ++j) y[j] += xi * row[j];
  }
}

// One LSTM step: z = xw_t + h @ W_h, then the gates (order i, f, g, o) update c and h.
JAXCC_MULTIVERSION void LstmStep(const float* __restrict xw, const float* __restrict wh, int H, float* __restrict z,
                                 float* __restrict h, float* __restrict c) {
  std::memcpy(z, xw, sizeof(float) * 4 * H);
  for (int i = 0; i < H; ++i) {
    const float hi = h[i];
    const float* __restrict row = wh + static_cast<size_t>(i) * 4 * H;
    for (int j = 0; j < 4 * H; ++j) z[j] += hi * row[j];
  }
  // Separate simple loops (one function each) so every one of them vectorises.
  for (int j = 0; j < 2 * H; ++j) z[j] = FastSigmoid(z[j]);          // i, f
  for (int j = 2 * H; j < 3 * H; ++j) z[j] = FastTanh(z[j]);         // g
  for (int j = 3 * H; j < 4 * H; ++j) z[j] = FastSigmoid(z[j]);      // o
  for (int j = 0; j < H; ++j) c[j] = z[H + j] * c[j] + z[j] * z[2 * H + j];
  for (int j = 0; j < H; ++j) h[j] = z[3 * H + j] * FastTanh(c[j]);
}

// Parses and shape-checks one layer list running on a [rows, cols] input (rows 0: a vector) and
// updates rows/cols to its output, as jaxcc.policyfile._walk_layers. prefix names the list in
// messages ("" for spec.layers, "layer i (branches) branch b " inside a branch); names holds
// every layer name seen (unique across branches); max_act grows to the largest activation.
std::vector<Layer> ParseLayers(const json& layers, int goal_dim, int* rows_io, int* cols_io, bool in_branch,
                               const std::string& prefix, std::set<std::string>* names, bool* used_goal,
                               size_t* max_act, const std::string& what) {
  int rows = *rows_io, cols = *cols_io;
  std::vector<Layer> out;
  for (size_t idx = 0; idx < layers.size(); ++idx) {
    const json& lj = layers[idx];
    std::string where = prefix + "layer " + std::to_string(idx);
    if (!lj.is_object()) Fail(what, where + " must be an object");
    if (!lj.contains("type")) Fail(what, where + " is missing its 'type'");
    const json& tj = lj["type"];
    Layer l;
    if (tj == "dense") l.type = LayerType::kDense;
    else if (tj == "lstm") l.type = LayerType::kLstm;
    else if (tj == "conv1d") l.type = LayerType::kConv1d;
    else if (tj == "last_step") l.type = LayerType::kLastStep;
    else if (tj == "flatten") l.type = LayerType::kFlatten;
    else if (tj == "concat_goal") l.type = LayerType::kConcatGoal;
    else if (tj == "select") l.type = LayerType::kSelect;
    else if (tj == "goal") l.type = LayerType::kGoal;
    else if (tj == "branches") l.type = LayerType::kBranches;
    else
      Fail(what, where + " has unknown layer type " + tj.dump() +
                     " (known: dense, lstm, conv1d, last_step, flatten, concat_goal, select, goal, branches)");
    where += " (" + tj.get<std::string>() + ")";
    const std::string shape_now =
        rows ? "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]" : "[" + std::to_string(cols) + "]";
    if (l.type == LayerType::kDense || l.type == LayerType::kLstm || l.type == LayerType::kConv1d) {
      const json& nj = Req(lj, "name", where, what);
      if (!nj.is_string() || nj.get<std::string>().empty()) Fail(what, where + " name must be a non-empty string");
      l.name = nj.get<std::string>();
      where = prefix + "layer " + std::to_string(idx) + " (" + tj.get<std::string>() + " '" + l.name + "')";
      if (!names->insert(l.name).second) Fail(what, where + ": duplicate layer name '" + l.name + "'");
      l.in = PosInt(Req(lj, "in", where, what), where + " 'in'", what);
      if (l.in != cols)
        Fail(what, where + " expects in=" + std::to_string(l.in) + " but its input has shape " + shape_now);
      if (l.type != LayerType::kLstm) l.act = ParseAct(lj, where, what);
    }
    switch (l.type) {
      case LayerType::kDense:
        l.out = PosInt(Req(lj, "out", where, what), where + " 'out'", what);
        cols = l.out;
        break;
      case LayerType::kLstm:
        if (!rows) Fail(what, where + " needs a [time, features] input, got shape " + shape_now);
        l.hidden = PosInt(Req(lj, "hidden", where, what), where + " 'hidden'", what);
        if (l.hidden > 4096) Fail(what, where + " hidden size is implausibly large");
        cols = l.hidden;
        break;
      case LayerType::kConv1d:
        if (!rows) Fail(what, where + " needs a [time, features] input, got shape " + shape_now);
        l.kernel = PosInt(Req(lj, "kernel", where, what), where + " 'kernel'", what);
        l.out = PosInt(Req(lj, "out", where, what), where + " 'out'", what);
        if (l.kernel > rows)
          Fail(what, where + " kernel " + std::to_string(l.kernel) + " is longer than its input's " +
                         std::to_string(rows) + " time steps");
        rows = rows - l.kernel + 1;
        cols = l.out;
        break;
      case LayerType::kLastStep:
        if (!rows) Fail(what, where + " needs a [time, features] input, got shape " + shape_now);
        rows = 0;
        break;
      case LayerType::kFlatten:
        if (rows) cols = rows * cols;
        rows = 0;
        break;
      case LayerType::kConcatGoal:
        if (goal_dim <= 0) Fail(what, where + " but spec.goal_dim is 0");
        if (rows)
          Fail(what, where + " needs a vector input (add flatten or last_step first), got shape " + shape_now);
        *used_goal = true;
        cols += goal_dim;
        break;
      case LayerType::kSelect: {
        const json& a = Req(lj, "start", where, what);
        const json& b = Req(lj, "stop", where, what);
        if (!a.is_number_integer() || a.get<int64_t>() < 0 || a.get<int64_t>() >= cols)
          Fail(what, where + " 'start' must be an integer in [0, " + std::to_string(cols - 1) + "] (its input has " +
                         std::to_string(cols) + " features), got " + a.dump());
        l.start = static_cast<int>(a.get<int64_t>());
        if (!b.is_number_integer() || b.get<int64_t>() <= l.start || b.get<int64_t>() > cols)
          Fail(what, where + " 'stop' must be an integer in [" + std::to_string(l.start + 1) + ", " +
                         std::to_string(cols) + "] (start < stop <= its input's " + std::to_string(cols) +
                         " features), got " + b.dump());
        l.stop = static_cast<int>(b.get<int64_t>());
        cols = l.stop - l.start;
        break;
      }
      case LayerType::kGoal:
        if (goal_dim <= 0) Fail(what, where + " but spec.goal_dim is 0");
        *used_goal = true;
        rows = 0;
        cols = goal_dim;
        break;
      case LayerType::kBranches: {
        if (in_branch) Fail(what, where + ": branches cannot be nested (a branch may not contain a branches layer)");
        const json& bj = Req(lj, "branches", where, what);
        if (!bj.is_array() || bj.empty()) Fail(what, where + " 'branches' must be a non-empty list of layer lists");
        if (bj.size() > 64) Fail(what, where + " has implausibly many branches");
        int width = 0;
        for (size_t bi = 0; bi < bj.size(); ++bi) {
          const std::string bwhere = where + " branch " + std::to_string(bi);
          if (!bj[bi].is_array() || bj[bi].empty()) Fail(what, bwhere + " must be a non-empty list of layers");
          if (bj[bi].size() > 256) Fail(what, bwhere + " has implausibly many layers");
          int brows = rows, bcols = cols;
          l.branches.push_back(
              ParseLayers(bj[bi], goal_dim, &brows, &bcols, /*in_branch=*/true, bwhere + " ", names, used_goal, max_act, what));
          if (brows)
            Fail(what, bwhere + " must end in a vector (add last_step or flatten), got shape [" + std::to_string(brows) +
                           ", " + std::to_string(bcols) + "]");
          width += bcols;
          if (width > (1 << 24)) Fail(what, where + " output is implausibly large");
        }
        rows = 0;
        cols = width;
        break;
      }
    }
    if (static_cast<int64_t>(std::max(rows, 1)) * cols > (1 << 24)) Fail(what, where + " output is implausibly large");
    l.out_rows = rows;
    l.out_cols = cols;
    *max_act = std::max(*max_act, static_cast<size_t>(std::max(rows, 1)) * cols);
    if (l.type == LayerType::kLstm)  // the LSTM's input projection for all steps: [T, 4H]
      *max_act = std::max(*max_act, static_cast<size_t>(rows) * 4 * l.hidden);
    out.push_back(std::move(l));
  }
  *rows_io = rows;
  *cols_io = cols;
  return out;
}

}  // namespace

Policy Policy::LoadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) Fail("'" + path + "'", std::string("cannot open (") + std::strerror(errno) + ")");
  f.seekg(0, std::ios::end);
  std::streamoff n = f.tellg();
  if (n < 0) Fail("'" + path + "'", "cannot read");
  if (static_cast<uint64_t>(n) > kMaxFileBytes)
    Fail("'" + path + "'", "file is " + std::to_string(n) + " bytes, larger than the " +
                               std::to_string(kMaxFileBytes) + "-byte limit");
  f.seekg(0);
  std::vector<uint8_t> buf(static_cast<size_t>(n));
  if (n > 0 && !f.read(reinterpret_cast<char*>(buf.data()), n)) Fail("'" + path + "'", "read failed");
  return LoadBytes(buf.data(), buf.size(), "'" + path + "'");
}

Policy Policy::LoadBytes(const uint8_t* data, size_t size, const std::string& what) {
  // --- safetensors framing: u64 LE header length, JSON header, then the data region.
  if (size < 8)
    Fail(what, "truncated file (" + std::to_string(size) + " bytes, shorter than the 8-byte header length)");
  const uint64_t hlen = ReadLE64(data);
  if (hlen == 0 || hlen > kMaxHeaderBytes)
    Fail(what, "not a safetensors file (header length " + std::to_string(hlen) + " is implausible)");
  if (hlen > size - 8)
    Fail(what, "truncated file (header needs " + std::to_string(hlen) + " bytes, only " +
                   std::to_string(size - 8) + " present)");
  json header = json::parse(data + 8, data + 8 + hlen, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) Fail(what, "corrupted safetensors header (not valid JSON)");
  if (!header.is_object()) Fail(what, "corrupted safetensors header (not a JSON object)");
  const uint8_t* region = data + 8 + hlen;
  const uint64_t region_len = size - 8 - hlen;

  Policy p;
  std::string spec_text;
  if (!header.contains("__metadata__") || !header["__metadata__"].is_object() ||
      !header["__metadata__"].contains("jaxcc") || !header["__metadata__"]["jaxcc"].is_string())
    Fail(what, "no 'jaxcc' spec in the safetensors metadata (not a jaxcc policy)");
  spec_text = header["__metadata__"]["jaxcc"].get<std::string>();

  // Tensors, sorted by name (std::map) so behaviour never depends on JSON key order.
  std::map<std::string, Tensor> loaded;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const json& info = it.value();
    const std::string tn = "tensor '" + it.key() + "'";
    if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") ||
        !info.contains("data_offsets"))
      Fail(what, "corrupted entry for " + tn);
    if (info["dtype"] != "F32")
      Fail(what, tn + " has dtype " + info["dtype"].dump() + ", expected F32");
    const json& sh = info["shape"];
    const json& off = info["data_offsets"];
    if (!sh.is_array() || sh.size() > 8) Fail(what, "corrupted shape for " + tn);
    Tensor t;
    uint64_t numel = 1;
    for (const json& d : sh) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > (1u << 28)) Fail(what, "corrupted shape for " + tn);
      t.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
      numel *= d.get<uint64_t>();
      if (numel > (1u << 28)) Fail(what, tn + " is implausibly large");
    }
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      Fail(what, "corrupted data offsets for " + tn);
    const uint64_t b = off[0].get<uint64_t>(), e = off[1].get<uint64_t>();
    if (b > e) Fail(what, tn + " has bad data offsets [" + std::to_string(b) + ", " + std::to_string(e) + "]");
    if (e - b != 4 * numel)
      Fail(what, tn + " has " + std::to_string(e - b) + " data bytes, shape " + ShapeStr(t.shape) + " needs " +
                     std::to_string(4 * numel));
    if (e > region_len)
      Fail(what, "truncated file (" + tn + " needs data bytes up to " + std::to_string(e) + ", only " +
                     std::to_string(region_len) + " present)");
    ranges.emplace_back(b, e);
    t.data.resize(numel);
    // safetensors is little-endian; so are all the hosts we target (x86-64, arm64 LE).
    if (numel) std::memcpy(t.data.data(), region + b, 4 * numel);
    loaded.emplace(it.key(), std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second) Fail(what, "corrupted file (tensor data ranges overlap)");

  p.ParseSpec(spec_text, what);

  // Match tensors against what the layers need: missing, wrong shape, NaN/inf, unknown.
  std::set<std::string> used;
  auto bind = [&](const std::string& name, std::vector<int64_t> shape) -> int {
    auto it = loaded.find(name);
    if (it == loaded.end()) Fail(what, "missing tensor '" + name + "' (expected shape " + ShapeStr(shape) + ")");
    if (it->second.shape != shape)
      Fail(what, "tensor '" + name + "' has shape " + ShapeStr(it->second.shape) + ", expected " + ShapeStr(shape));
    size_t bad = 0;
    for (float v : it->second.data) bad += !std::isfinite(v);
    if (bad) Fail(what, "tensor '" + name + "' contains " + std::to_string(bad) + " NaN/inf value(s)");
    used.insert(name);
    p.tensors_.push_back(it->second);
    p.tensor_names_.push_back(name);
    return static_cast<int>(p.tensors_.size()) - 1;
  };
  // Every layer, branches included (they do not nest, so one level of recursion).
  std::function<void(std::vector<Layer>&)> bind_all = [&](std::vector<Layer>& layers) {
    for (Layer& l : layers) {
      switch (l.type) {
        case LayerType::kDense:
          l.w = bind(l.name + ".kernel", {l.in, l.out});
          l.b = bind(l.name + ".bias", {l.out});
          break;
        case LayerType::kLstm:
          l.w = bind(l.name + ".kernel_i", {l.in, 4 * l.hidden});
          l.u = bind(l.name + ".kernel_h", {l.hidden, 4 * l.hidden});
          l.b = bind(l.name + ".bias", {4 * l.hidden});
          break;
        case LayerType::kConv1d:
          l.w = bind(l.name + ".kernel", {l.kernel, l.in, l.out});
          l.b = bind(l.name + ".bias", {l.out});
          break;
        case LayerType::kBranches:
          for (std::vector<Layer>& br : l.branches) bind_all(br);
          break;
        default:
          break;
      }
    }
  };
  bind_all(p.layers_);
  std::string extra;
  for (const auto& kv : loaded)
    if (!used.count(kv.first)) extra += (extra.empty() ? "" : ", ") + kv.first;
  if (!extra.empty()) Fail(what, "unknown tensor(s) not used by any layer: " + extra);

  p.buf_a_.assign(p.max_act_, 0.f);
  p.buf_b_.assign(p.max_act_, 0.f);
  p.br_a_.assign(p.max_act_, 0.f);
  p.br_b_.assign(p.max_act_, 0.f);
  return p;
}

void Policy::ParseSpec(const std::string& spec_text, const std::string& what) {
  json spec = json::parse(spec_text, nullptr, false);
  if (spec.is_discarded()) Fail(what, "the 'jaxcc' spec is not valid JSON");
  if (!spec.is_object()) Fail(what, "spec must be a JSON object");
  spec_json_ = spec_text;
  if (!spec.contains("format") || spec["format"] != "jaxcc-policy")
    Fail(what, "wrong magic: format is " + (spec.contains("format") ? spec["format"].dump() : std::string("missing")) +
                   ", expected \"jaxcc-policy\"");
  if (!spec.contains("version") || spec["version"] != kVersion)
    Fail(what, "unsupported version " + (spec.contains("version") ? spec["version"].dump() : std::string("(missing)")) +
                   " (this reader understands version 1)");
  algorithm_ = spec.contains("algorithm") && spec["algorithm"].is_string() ? spec["algorithm"].get<std::string>() : "";
  const json& feats = Req(spec, "features", "spec", what);
  if (!feats.is_object()) Fail(what, "spec.features must be an object");
  const json& fname = Req(feats, "name", "spec.features", what);
  if (!fname.is_string() || fname.get<std::string>().empty())
    Fail(what, "spec.features.name must be a non-empty string");
  feature_name_ = fname.get<std::string>();
  features_json_ = feats.dump();
  history_ = PosInt(Req(feats, "history", "spec.features", what), "spec.features.history", what);
  obs_dim_ = PosInt(Req(feats, "obs_dim", "spec.features", what), "spec.features.obs_dim", what);
  if (static_cast<int64_t>(history_) * obs_dim_ > (1 << 20)) Fail(what, "observation window is implausibly large");
  mi_rtts_ = Num(Req(spec, "mi_rtts", "spec", what), "spec.mi_rtts", what);
  if (mi_rtts_ <= 0) Fail(what, "spec.mi_rtts must be > 0");
  goal_dim_ = 0;
  if (spec.contains("goal_dim")) {
    const json& g = spec["goal_dim"];
    if (!g.is_number_integer() || g.get<int64_t>() < 0 || g.get<int64_t>() > 4096)
      Fail(what, "spec.goal_dim must be an integer >= 0, got " + g.dump());
    goal_dim_ = static_cast<int>(g.get<int64_t>());
  }

  const json& layers = Req(spec, "layers", "spec", what);
  if (!layers.is_array() || layers.empty()) Fail(what, "spec.layers must be a non-empty list");
  if (layers.size() > 256) Fail(what, "spec.layers has implausibly many layers");
  int rows = history_, cols = obs_dim_;  // rows == 0: a vector
  bool used_goal = false;
  max_act_ = static_cast<size_t>(history_) * obs_dim_;
  std::set<std::string> names;
  layers_ = ParseLayers(layers, goal_dim_, &rows, &cols, /*in_branch=*/false, "", &names, &used_goal, &max_act_, what);
  if (goal_dim_ > 0 && !used_goal)
    Fail(what, "spec.goal_dim is " + std::to_string(goal_dim_) + " but no concat_goal or goal layer uses the goal");
  if (rows) Fail(what, "network output must be a vector, got a [time, features] shape (add last_step or flatten)");
  const int out_dim = cols;

  const json& hj = Req(spec, "head", "spec", what);
  const json htype = hj.is_object() && hj.contains("type") ? hj["type"] : json();
  if (htype == "continuous") head_.type = HeadType::kContinuous;
  else if (htype == "gaussian_mean") head_.type = HeadType::kGaussianMean;
  else if (htype == "discrete") head_.type = HeadType::kDiscrete;
  else if (htype == "q_values") head_.type = HeadType::kQValues;
  else Fail(what, "unknown head type " + htype.dump() + " (known: continuous, gaussian_mean, discrete, q_values)");
  const bool discrete = head_.type == HeadType::kDiscrete || head_.type == HeadType::kQValues;
  if (!discrete) {
    head_.low = Num(Req(hj, "low", "head", what), "head.low", what);
    head_.high = Num(Req(hj, "high", "head", what), "head.high", what);
    if (!(head_.low < head_.high)) Fail(what, "head.low must be < head.high");
  } else {
    head_.n = PosInt(Req(hj, "n", "head", what), "head.n", what);
  }
  if (hj.contains("objectives")) {
    if (head_.type != HeadType::kQValues)
      Fail(what, "head.objectives is only for q_values heads, this head is " + htype.dump());
    head_.objectives = PosInt(hj["objectives"], "head.objectives", what);
  }
  if (discrete) {
    const int M = head_.objectives;
    if (M == 1 && head_.n != out_dim)
      Fail(what, "head (" + htype.get<std::string>() + ") has n=" + std::to_string(head_.n) +
                     " but the network outputs " + std::to_string(out_dim) + " values");
    if (M > 1 && static_cast<int64_t>(head_.n) * M != out_dim)
      Fail(what, "head (q_values) has n=" + std::to_string(head_.n) + " and objectives=" + std::to_string(M) +
                     " but the final layer outputs " + std::to_string(out_dim) + " values (needs n*objectives = " +
                     std::to_string(static_cast<int64_t>(head_.n) * M) + ")");
    if (M > 1 && goal_dim_ != M)
      Fail(what, "head.objectives is " + std::to_string(M) + " but spec.goal_dim is " + std::to_string(goal_dim_) +
                     " (the goal weights the objectives: goal_dim must equal objectives)");
  }
  // Number of actions (discrete) or of continuous outputs: what an action table indexes.
  const int n_out = discrete ? head_.n : out_dim;

  const json& aj = Req(spec, "action", "spec", what);
  const json atype = aj.is_object() && aj.contains("type") ? aj["type"] : json();
  if (atype == "rate_multiplicative") action_.type = ActionType::kRateMultiplicative;
  else if (atype == "aurora") action_.type = ActionType::kAurora;
  else if (atype == "rate_table") action_.type = ActionType::kRateTable;
  else if (atype == "cwnd_table") action_.type = ActionType::kCwndTable;
  else if (atype == "rate_absolute") action_.type = ActionType::kRateAbsolute;
  else
    Fail(what, "unknown action type " + atype.dump() +
                   " (known: rate_multiplicative, aurora, rate_table, cwnd_table, rate_absolute)");
  const std::string an = atype.get<std::string>();
  if ((action_.type == ActionType::kRateMultiplicative || action_.type == ActionType::kAurora) && discrete)
    Fail(what, "action " + an + " needs a continuous head");
  if ((action_.type == ActionType::kRateTable || action_.type == ActionType::kCwndTable) && !discrete)
    Fail(what, "action " + an + " needs a discrete or q_values head");
  if (action_.type == ActionType::kAurora) action_.alpha = Num(Req(aj, "alpha", "action (aurora)", what), "action.alpha", what);
  if (action_.type == ActionType::kRateTable || action_.type == ActionType::kCwndTable) {
    const char* key = action_.type == ActionType::kRateTable ? "multipliers" : "deltas";
    const json& tb = Req(aj, key, "action (" + an + ")", what);
    if (!tb.is_array() || static_cast<int>(tb.size()) != n_out)
      Fail(what, std::string("action.") + key + " must be a list of " + std::to_string(n_out) +
                     " numbers (one per action)");
    for (size_t j = 0; j < tb.size(); ++j)
      action_.table.push_back(Num(tb[j], std::string("action.") + key + "[" + std::to_string(j) + "]", what));
  }
  if (action_.type == ActionType::kCwndTable) {
    action_.cwnd_mults.assign(action_.table.size(), 1.0);
    if (aj.contains("multipliers")) {
      const json& mk = aj["multipliers"];
      if (!mk.is_array() || mk.size() != action_.table.size())
        Fail(what, "action.multipliers must be a list of " + std::to_string(action_.table.size()) +
                       " numbers > 0 (one per head output)");
      for (size_t j = 0; j < mk.size(); ++j) {
        const std::string where = "action.multipliers[" + std::to_string(j) + "]";
        action_.cwnd_mults[j] = Num(mk[j], where, what);
        if (!(action_.cwnd_mults[j] > 0)) Fail(what, where + " must be > 0");
      }
    }
  }
  if (action_.type == ActionType::kRateAbsolute) {
    action_.bound_mbps = Num(Req(aj, "bound_mbps", "action (rate_absolute)", what), "action.bound_mbps", what);
    if (action_.bound_mbps <= 0) Fail(what, "action.bound_mbps must be > 0");
    if (discrete && n_out < 2) Fail(what, "action rate_absolute with a discrete head needs n >= 2");
    const json scale = aj.contains("scale") ? aj["scale"] : json("linear");
    if (scale != "linear" && scale != "log")
      Fail(what, "action.scale must be one of linear, log, got " + scale.dump());
    action_.log_scale = scale == "log";
    if (action_.log_scale) {
      action_.low_mbps = Num(Req(aj, "low_mbps", "action (rate_absolute, scale log)", what), "action.low_mbps", what);
      if (!(action_.low_mbps > 0 && action_.low_mbps < action_.bound_mbps))
        Fail(what, "action.low_mbps must be in (0, bound_mbps=" + aj["bound_mbps"].dump() + "), got " +
                       aj["low_mbps"].dump());
    } else if (aj.contains("low_mbps")) {
      Fail(what, "action.low_mbps is only allowed with scale 'log' (a linear rate starts at 0)");
    }
  } else if (aj.contains("scale") || aj.contains("low_mbps")) {
    Fail(what, "action.scale and action.low_mbps are only allowed on rate_absolute, got " + an);
  }
  if (aj.contains("min_mbps")) action_.min_mbps = Num(aj["min_mbps"], "action.min_mbps", what);
  if (aj.contains("max_mbps")) action_.max_mbps = Num(aj["max_mbps"], "action.max_mbps", what);
  if (!(action_.min_mbps > 0 && action_.min_mbps <= action_.max_mbps))
    Fail(what, "action needs 0 < min_mbps <= max_mbps");
}

float* Policy::RunLayers(const std::vector<Layer>& layers, float* cur, float* nxt, int rows, int cols,
                         const float* goal) const {
  for (const Layer& l : layers) {
    const int nrows = std::max(rows, 1);
    switch (l.type) {
      case LayerType::kDense: {
        const float* w = tensors_[l.w].data.data();
        const float* b = tensors_[l.b].data.data();
        for (int r = 0; r < nrows; ++r) MatVec(cur + r * cols, cols, w, b, l.out, nxt + r * l.out);
        Activate(nxt, static_cast<size_t>(nrows) * l.out, l.act);
        std::swap(cur, nxt);
        break;
      }
      case LayerType::kLstm: {
        const int H = l.hidden;
        const float* wi = tensors_[l.w].data.data();
        const float* wh = tensors_[l.u].data.data();
        const float* b = tensors_[l.b].data.data();
        // Input projection for every step first (one pass over W_i), then the recurrence.
        // nxt holds [T, 4H] projections; results are written into cur afterwards, which is
        // safe because the input rows are no longer needed once projected.
        for (int t = 0; t < rows; ++t) MatVec(cur + t * cols, cols, wi, b, 4 * H, nxt + t * 4 * H);
        h_.assign(H, 0.f);
        c_.assign(H, 0.f);
        gates_.resize(4 * H);
        for (int t = 0; t < rows; ++t) {
          LstmStep(nxt + t * 4 * H, wh, H, gates_.data(), h_.data(), c_.data());
          std::memcpy(cur + t * H, h_.data(), sizeof(float) * H);
        }
        break;
      }
      case LayerType::kConv1d: {
        const float* w = tensors_[l.w].data.data();  // [K, in, out]
        const float* b = tensors_[l.b].data.data();
        const int L = rows - l.kernel + 1;
        for (int s = 0; s < L; ++s) {
          float* y = nxt + s * l.out;
          std::memcpy(y, b, sizeof(float) * l.out);
          for (int k = 0; k < l.kernel; ++k) {
            const float* x = cur + (s + k) * cols;
            const float* wk = w + static_cast<size_t>(k) * cols * l.out;
            for (int i = 0; i < cols; ++i) {
              const float xi = x[i];
              const float* row = wk + static_cast<size_t>(i) * l.out;
              for (int j = 0; j < l.out; ++j) y[j] += xi * row[j];
            }
          }
        }
        Activate(nxt, static_cast<size_t>(L) * l.out, l.act);
        std::swap(cur, nxt);
        break;
      }
      case LayerType::kLastStep:
        std::memmove(cur, cur + (rows - 1) * cols, sizeof(float) * cols);
        break;
      case LayerType::kFlatten:
        break;  // row-major storage is already flat
      case LayerType::kConcatGoal:
        std::memcpy(cur + cols, goal, sizeof(float) * goal_dim_);
        break;
      case LayerType::kSelect: {
        // In place, row by row: row r moves to r*(stop-start), never past its own source.
        const int w = l.stop - l.start;
        for (int r = 0; r < nrows; ++r) std::memmove(cur + r * w, cur + r * cols + l.start, sizeof(float) * w);
        break;
      }
      case LayerType::kGoal:
        std::memcpy(cur, goal, sizeof(float) * goal_dim_);
        break;
      case LayerType::kBranches: {
        // Each branch on its own copy of the input (scratch br_a_/br_b_; branches do not nest),
        // outputs concatenated into nxt in branch order.
        int off = 0;
        for (const std::vector<Layer>& br : l.branches) {
          std::memcpy(br_a_.data(), cur, sizeof(float) * nrows * cols);
          const float* res = RunLayers(br, br_a_.data(), br_b_.data(), rows, cols, goal);
          const int w = br.back().out_cols;
          std::memcpy(nxt + off, res, sizeof(float) * w);
          off += w;
        }
        std::swap(cur, nxt);
        break;
      }
    }
    rows = l.out_rows;
    cols = l.out_cols;
  }
  return cur;
}

void Policy::Forward(const float* obs, const float* goal, std::vector<float>* out) const {
  std::memcpy(buf_a_.data(), obs, sizeof(float) * history_ * obs_dim_);
  const float* res = RunLayers(layers_, buf_a_.data(), buf_b_.data(), history_, obs_dim_, goal);
  out->assign(res, res + layers_.back().out_cols);
}

const PolicyOutput& Policy::Apply(const float* obs, const float* goal) const {
  if (goal_dim_ > 0 && goal == nullptr) throw PolicyError("this policy needs a goal vector (goal_dim > 0)");
  Forward(obs, goal, &result_.net);
  result_.values.clear();
  result_.scores.clear();
  result_.index = -1;
  switch (head_.type) {
    case HeadType::kContinuous: {
      const float lo = static_cast<float>(head_.low), half = static_cast<float>(0.5 * (head_.high - head_.low));
      for (float z : result_.net) result_.values.push_back(lo + (std::tanh(z) + 1.0f) * half);
      break;
    }
    case HeadType::kGaussianMean:
      for (float z : result_.net)
        result_.values.push_back(std::min(std::max(z, static_cast<float>(head_.low)), static_cast<float>(head_.high)));
      break;
    case HeadType::kQValues:
      if (head_.objectives > 1) {
        // argmax_a goal . Q(s, a, goal) (first maximum), the same float32 sum in objective
        // order as jaxcc.policyfile.apply.
        const int M = head_.objectives;
        for (int a = 0; a < head_.n; ++a) {
          float s = 0.0f;
          for (int k = 0; k < M; ++k) s += goal[k] * result_.net[static_cast<size_t>(a) * M + k];
          result_.scores.push_back(s);
        }
        result_.index =
            static_cast<int>(std::max_element(result_.scores.begin(), result_.scores.end()) - result_.scores.begin());
        break;
      }
      [[fallthrough]];
    case HeadType::kDiscrete:
      result_.index = static_cast<int>(std::max_element(result_.net.begin(), result_.net.end()) - result_.net.begin());
      break;
  }
  return result_;
}

void Policy::MapAction(const PolicyOutput& out, double rate, double cwnd, double* new_rate, double* new_cwnd) const {
  const bool discrete = out.index >= 0;
  const double a = discrete || out.values.empty() ? 0.0 : out.values[0];
  switch (action_.type) {
    case ActionType::kRateMultiplicative:
      rate = rate * (1.0 + a);
      break;
    case ActionType::kAurora:
      rate = a >= 0 ? rate * (1.0 + action_.alpha * a) : rate / (1.0 - action_.alpha * a);
      break;
    case ActionType::kRateTable:
      rate = rate * action_.table[out.index];
      break;
    case ActionType::kCwndTable:
      cwnd = std::max(cwnd * action_.cwnd_mults[out.index] + action_.table[out.index], 2.0 * kMss);
      break;
    case ActionType::kRateAbsolute: {
      const double u = discrete ? static_cast<double>(out.index) / (head_.n - 1)
                                : (a - head_.low) / (head_.high - head_.low);
      rate = action_.log_scale ? action_.low_mbps * std::pow(action_.bound_mbps / action_.low_mbps, u) * kBytesPerMbit
                               : u * action_.bound_mbps * kBytesPerMbit;
      break;
    }
  }
  // Clamp so one bad output can neither stop nor flood the flow; NaN falls to the floor.
  const double lo = action_.min_mbps * kBytesPerMbit, hi = action_.max_mbps * kBytesPerMbit;
  if (!(rate >= lo)) rate = lo;
  if (rate > hi) rate = hi;
  *new_rate = rate;
  *new_cwnd = cwnd;
}

}  // namespace jaxcc
