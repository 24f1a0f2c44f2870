// Exported policy files (safetensors + JSON spec): loader, forward pass, action mapping.
//
// The format is defined in jaxcc/policyfile/; this file implements the same rules in C++
// without any ML runtime so the sender can run a trained policy in a few microseconds.
// Everything a bad file can get wrong is checked at load time, so the forward pass itself
// never needs to check anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace jaxcc {

// Thrown for every problem with a policy file; what() names the problem.
class PolicyError : public std::runtime_error {
 public:
  explicit PolicyError(const std::string& msg) : std::runtime_error(msg) {}
};

enum class LayerType { kDense, kLstm, kConv1d, kLastStep, kFlatten, kConcatGoal, kSelect, kGoal, kBranches };
enum class Activation { kRelu, kTanh, kSigmoid, kLinear };
enum class HeadType { kContinuous, kGaussianMean, kDiscrete, kQValues };
enum class ActionType { kRateMultiplicative, kAurora, kRateTable, kCwndTable, kRateAbsolute };

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

struct Layer {
  LayerType type = LayerType::kFlatten;
  std::string name;
  int in = 0, out = 0, hidden = 0, kernel = 0;
  Activation act = Activation::kLinear;
  // Indices into Policy::tensors_ (dense/conv1d: w=kernel, b=bias; lstm: w=kernel_i,
  // u=kernel_h, b=bias); -1 when unused.
  int w = -1, u = -1, b = -1;
  // Shape of this layer's output: rows = 0 means a vector of `cols` values.
  int out_rows = 0, out_cols = 0;
  int start = 0, stop = 0;  // select: features [start, stop) of the last axis
  // branches: each a non-empty layer list (no nested branches) run on a copy of the input;
  // their vector outputs are concatenated in order.
  std::vector<std::vector<Layer>> branches;
};

struct Head {
  HeadType type = HeadType::kContinuous;
  double low = 0, high = 1;
  int n = 0;  // discrete / q_values: number of actions
  // q_values only (spec head.objectives, default 1): with M > 1 the network outputs n*M
  // values action-major, z[a*M + k] = Q_k(s, a, goal), spec.goal_dim must be M, and the
  // action is argmax_a sum_k goal[k] * z[a*M + k] (envelope MOQ's argmax of goal . Q; MOCC,
  // IWQoS 2021, eq. 5-12).
  int objectives = 1;
};

struct Action {
  ActionType type = ActionType::kRateMultiplicative;
  double alpha = 0;
  std::vector<double> table;  // multipliers (rate_table) or deltas in bytes (cwnd_table)
  std::vector<double> cwnd_mults;  // cwnd_table: cwnd x cwnd_mults[i] + table[i] (1 each unless given)
  double bound_mbps = 0;
  // rate_absolute: rate = u * bound (linear) or low * (bound / low)^u (log_scale, low = low_mbps).
  bool log_scale = false;
  double low_mbps = 0;
  double min_mbps = 0.01, max_mbps = 100000.0;
};

// Result of a forward pass through the head.
struct PolicyOutput {
  std::vector<float> net;     // pre-head network output
  std::vector<float> values;  // continuous heads: mapped values; discrete heads: empty
  // q_values heads with objectives M > 1: the goal-weighted value of each action,
  // scores[a] = sum_k goal[k] * net[a*M + k] (float32, k in order); empty otherwise.
  std::vector<float> scores;
  int index = -1;             // discrete / q_values heads: argmax (first maximum) of net, or of
                              // scores with objectives > 1
};

class Policy {
 public:
  static constexpr int kVersion = 1;
  // Refuse files larger than this: a policy for a congestion controller is kilobytes to a
  // few megabytes, and a bound keeps a corrupted file from exhausting memory.
  static constexpr size_t kMaxFileBytes = 256u << 20;
  static constexpr uint64_t kMaxHeaderBytes = 16u << 20;

  // Loads and validates. Throws PolicyError with a message naming the problem.
  static Policy LoadFile(const std::string& path);
  static Policy LoadBytes(const uint8_t* data, size_t size, const std::string& what = "<memory>");

  // Runs layers + head. obs: [history * obs_dim] row-major, oldest step first; goal:
  // [goal_dim] (may be null when goal_dim == 0). Not thread-safe: it reuses scratch buffers
  // so a decision allocates nothing (the sender has one decision thread).
  const PolicyOutput& Apply(const float* obs, const float* goal) const;

  // Maps the output to a new (rate bytes/s, cwnd bytes) following the spec's action block.
  void MapAction(const PolicyOutput& out, double rate, double cwnd, double* new_rate,
                 double* new_cwnd) const;

  int history() const { return history_; }
  int obs_dim() const { return obs_dim_; }
  int goal_dim() const { return goal_dim_; }
  double mi_rtts() const { return mi_rtts_; }
  const std::string& feature_name() const { return feature_name_; }
  const std::string& algorithm() const { return algorithm_; }
  // The raw JSON text of the spec's "features" object (scalings etc.).
  const std::string& features_json() const { return features_json_; }
  const std::string& spec_json() const { return spec_json_; }
  const Head& head() const { return head_; }
  const Action& action() const { return action_; }
  const std::vector<Layer>& layers() const { return layers_; }

 private:
  void ParseSpec(const std::string& spec_text, const std::string& what);
  // Runs `layers` on the [rows, cols] activation in *a (scratch *b); returns the buffer that
  // holds the output.
  float* RunLayers(const std::vector<Layer>& layers, float* a, float* b, int rows, int cols,
                   const float* goal) const;
  void Forward(const float* obs, const float* goal, std::vector<float>* out) const;

  int history_ = 0, obs_dim_ = 0, goal_dim_ = 0;
  double mi_rtts_ = 1.0;
  std::string feature_name_, algorithm_, features_json_, spec_json_;
  std::vector<Layer> layers_;
  std::vector<Tensor> tensors_;
  std::vector<std::string> tensor_names_;
  Head head_;
  Action action_;
  size_t max_act_ = 0;  // largest activation buffer any layer needs
  mutable std::vector<float> buf_a_, buf_b_, br_a_, br_b_, gates_, h_, c_;  // br_*: a branch's scratch
  mutable PolicyOutput result_;
};

constexpr double kBytesPerMbit = 125000.0;
constexpr double kMss = 1500.0;

}  // namespace jaxcc
