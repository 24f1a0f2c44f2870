// jaxcc-features-check: replays feature-set parity vectors (tests/vectors/features_<set>.json,
// written by `python -m jaxcc.parity_vectors`) through this build's feature sets and policy
// loader, and says where the C++ disagrees with Python.
//
//   jaxcc-features-check tests/vectors/features_pareto_v2.json [more.json ...]
//
// Per vector file: the policy it names is loaded, MakeFeatureFn builds the set from the file's
// features block, and every MI's per-packet events go through MonitorStats -> FeatureFn::Compute
// -> Policy::Apply -> Decide, exactly as jaxcc-sender runs them and as
// datapath/tests/features_test.cc checks the committed sets. A file with a "start" record is the
// sender's whole loop (Start, the first decision on the empty history, then rate and cwnd chained
// from MI to MI); without it, the action block runs from each MI's recorded rate_in.
//
// Tolerances (those of features_test.cc): MI statistics 1e-12 relative (the slope 1e-6);
// features 1e-6 relative + 1e-6 absolute (they are float32 on both sides); network outputs
// 1e-5 relative + 1e-6 absolute; rates and windows 1e-5 relative + 1e-3 absolute (bytes/s,
// bytes); discrete actions exactly.
//
// Prints one line per file ("ok" or the number of mismatches) and up to 20 mismatches per file.
// Exit status: 0 every file agrees, 1 some value disagrees, 2 a file cannot be read or its policy
// or feature set is refused (the message names the file).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mi_features.h"
#include "monitor.h"
#include "policy.h"

namespace {

using json = nlohmann::json;
constexpr int kMaxShown = 20;

struct Checker {
  std::string file;
  int mismatches = 0;

  void Close(double got, double want, double rel, double abs_tol, const std::string& what) {
    if (std::fabs(got - want) <= rel * std::fabs(want) + abs_tol) return;
    Fail(what + ": C++ " + Num(got) + ", Python " + Num(want));
  }
  void Fail(const std::string& msg) {
    if (mismatches++ < kMaxShown) std::printf("  %s: %s\n", file.c_str(), msg.c_str());
  }
  static std::string Num(double x) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%.9g", x);
    return buf;
  }
};

std::string Dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// Replays one vector file; returns the number of mismatches. Throws on unreadable input.
int CheckFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open");
  const json v = json::parse(in, nullptr, false);
  if (v.is_discarded() || !v.is_object() || !v.contains("policy") || !v.contains("mis"))
    throw std::runtime_error("not a feature-set vector file (needs 'policy' and 'mis')");
  const jaxcc::Policy p = jaxcc::Policy::LoadFile(Dirname(path) + "/" + v["policy"].get<std::string>());
  if (v.contains("features") && p.feature_name() != v["features"].get<std::string>())
    throw std::runtime_error("the policy's feature set is '" + p.feature_name() + "', the vector's '" +
                             v["features"].get<std::string>() + "'");
  std::unique_ptr<jaxcc::FeatureFn> fn = jaxcc::MakeFeatureFn(p.feature_name(), p.features_json());
  if (fn->dim() != p.obs_dim())
    throw std::runtime_error("feature set '" + p.feature_name() + "' has " + std::to_string(fn->dim()) +
                             " features but the policy expects obs_dim " + std::to_string(p.obs_dim()));
  fn->Check(p);

  Checker c{path};
  std::vector<float> window;
  for (int t = 0; t < p.history(); ++t) {
    const std::vector<float> e = fn->Empty();
    window.insert(window.end(), e.begin(), e.end());
  }
  std::vector<float> goal = v.contains("goal") ? v["goal"].get<std::vector<float>>() : std::vector<float>();
  if (static_cast<int>(goal.size()) != p.goal_dim())
    throw std::runtime_error("the vector's goal has " + std::to_string(goal.size()) +
                             " values, the policy's goal_dim is " + std::to_string(p.goal_dim()));
  jaxcc::RunningStats run;
  const bool loop = v.contains("start");
  double rate = 0, cwnd = 1e30;

  auto check_out = [&](const json& rec, const jaxcc::PolicyOutput& out, const std::string& tag) {
    const auto net = rec["net_out"].get<std::vector<double>>();
    if (out.net.size() != net.size())
      return c.Fail(tag + ": net_out has " + std::to_string(out.net.size()) + " values");
    for (size_t k = 0; k < net.size(); ++k)
      c.Close(out.net[k], net[k], 1e-5, 1e-6, tag + " net_out[" + std::to_string(k) + "]");
    if (rec["output"].is_number_integer() && out.index != rec["output"].get<int>())
      c.Fail(tag + " action index: C++ " + std::to_string(out.index) + ", Python " +
             std::to_string(rec["output"].get<int>()));
  };
  auto decide = [&](const json& rec, const jaxcc::PolicyOutput& out, const std::string& tag) {
    c.Close(rate, rec["rate_in"].get<double>(), 1e-5, 1e-3, tag + " rate_in");
    c.Close(cwnd, rec["cwnd_in"].get<double>(), 1e-5, 1e-3, tag + " cwnd_in");
    jaxcc::Decide(p, fn.get(), out, run, rate, cwnd, 0.05, &rate, &cwnd);
    c.Close(rate, rec["rate"].get<double>(), 1e-5, 1e-3, tag + " rate");
    c.Close(cwnd, rec["cwnd"].get<double>(), 1e-5, 1e-3, tag + " cwnd");
    // Chain from Python's values, so one early miss is reported once, not in every MI after it.
    rate = rec["rate"].get<double>();
    cwnd = rec["cwnd"].get<double>();
  };
  if (loop) {
    fn->SetRttGuess(v["rtt_guess"].get<double>());
    rate = jaxcc::kBytesPerMbit;  // jaxcc-sender's defaults: --init-mbps 1, no window / 10 packets
    cwnd = p.action().type == jaxcc::ActionType::kCwndTable ? 10.0 * 1472 : 1e30;
    fn->Start(&rate, &cwnd);
    const auto& out = p.Apply(window.data(), goal.empty() ? nullptr : goal.data());
    check_out(v["start"], out, "start");
    decide(v["start"], out, "start");
  }
  std::vector<float> feat(fn->dim());
  int i = 0;
  for (const json& mj : v["mis"]) {
    const std::string tag = "MI " + std::to_string(i++);
    jaxcc::MonitorStats m;
    m.keep_rtts = fn->NeedsRttSamples();
    for (const json& s : mj["samples"]) m.AddSample(s[0].get<double>(), s[1].get<double>(), s[2].get<double>());
    m.duration = m.active = mj["duration"].get<double>();
    m.sent = mj["sent"].get<double>();
    m.lost = mj["lost"].get<double>();
    run.Update(m);
    c.Close(m.RttMean(), mj["rtt_mean"].get<double>(), 1e-12, 1e-15, tag + " rtt_mean");
    c.Close(m.RttSlope(), mj["rtt_slope"].get<double>(), 1e-6, 1e-9, tag + " rtt_slope");
    c.Close(m.LossRate(), mj["loss_rate"].get<double>(), 1e-12, 1e-15, tag + " loss_rate");
    fn->Compute(m, run, feat.data());
    const auto want = mj["features"].get<std::vector<double>>();
    if (want.size() != feat.size())
      throw std::runtime_error(tag + " lists " + std::to_string(want.size()) + " features, the set computes " +
                               std::to_string(feat.size()));
    for (size_t k = 0; k < want.size(); ++k)
      c.Close(feat[k], want[k], 1e-6, 1e-6, tag + " feature " + std::to_string(k));
    // The window takes Python's features, so a feature miss is not also reported as every
    // network output after it.
    const int D = p.obs_dim();
    std::memmove(window.data(), window.data() + D, sizeof(float) * (window.size() - D));
    for (int k = 0; k < D; ++k) window[window.size() - D + k] = static_cast<float>(want[k]);
    if (mj.contains("goal")) goal = mj["goal"].get<std::vector<float>>();  // a preference change
    const auto& out = p.Apply(window.data(), goal.empty() ? nullptr : goal.data());
    check_out(mj, out, tag);
    if (loop) {
      decide(mj, out, tag);
    } else {
      double r, cw;
      p.MapAction(out, mj["rate_in"].get<double>(), 1e30, &r, &cw);
      c.Close(r, mj["rate"].get<double>(), 1e-5, 1e-3, tag + " rate");
    }
  }
  if (c.mismatches > kMaxShown) std::printf("  %s: ... %d more\n", path.c_str(), c.mismatches - kMaxShown);
  std::printf("%s: %s (%d MIs)\n", path.c_str(),
              c.mismatches ? (std::to_string(c.mismatches) + " mismatches").c_str() : "ok", i);
  return c.mismatches;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fprintf(argc < 2 ? stderr : stdout,
                 "usage: jaxcc-features-check VECTORS.json [VECTORS.json ...]\n"
                 "Replays feature-set parity vectors (python -m jaxcc.parity_vectors) through this build.\n"
                 "Exit 0: all agree; 1: some value disagrees; 2: a file or its policy is refused.\n");
    return argc < 2 ? 2 : 0;
  }
  bool differs = false;
  for (int a = 1; a < argc; ++a) {
    try {
      differs = CheckFile(argv[a]) > 0 || differs;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s: %s\n", argv[a], e.what());
      return 2;
    }
  }
  return differs ? 1 : 0;
}
