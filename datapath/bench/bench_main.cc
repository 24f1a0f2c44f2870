// jaxcc-bench: policy inference time per decision and the pacer's maximum rate on loopback.
// Prints one JSON object. Usage: jaxcc-bench [--policy=FILE] [--iters=N] [--pace-seconds=S]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <utility>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "args.h"
#include "clock.h"
#include "pacer.h"
#include "policy.h"

using namespace jaxcc;

int main(int argc, char** argv) {
  std::string policy_path;
  int iters = 20000;
  double pace_s = 1.0;
  try {
    Args a(argc, argv, {"policy", "iters", "pace-seconds", "help"});
    if (a.has("help")) {
      std::cout << "jaxcc-bench [--policy=FILE (default tests/vectors/lstm.safetensors)] [--iters=N] "
                   "[--pace-seconds=S]\nPrints JSON: inference_us (median/p99 per decision, one core) and "
                   "max_pacing_mbps (fixed rate far above what loopback can take).\n";
      return 0;
    }
    policy_path = a.str("policy", JAXCC_DEFAULT_POLICY);
    iters = static_cast<int>(a.num("iters", iters));
    pace_s = a.num("pace-seconds", pace_s);
  } catch (const std::exception& e) {
    std::cerr << "jaxcc-bench: " << e.what() << "\n";
    return 2;
  }
  // One core: pin to the CPU we are on so the figure is per-core, not a migration average.
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(sched_getcpu(), &set);
  sched_setaffinity(0, sizeof(set), &set);

  nlohmann::json out;
  try {
    Policy p = Policy::LoadFile(policy_path);
    std::mt19937 rng(1);
    std::normal_distribution<float> nd;
    std::vector<float> obs(static_cast<size_t>(p.history()) * p.obs_dim()), goal(p.goal_dim(), 0.5f);
    for (float& v : obs) v = nd(rng);
    std::vector<double> us;
    us.reserve(iters);
    double sink = 0;
    for (int i = 0; i < iters + 1000; ++i) {
      obs[i % obs.size()] = nd(rng);  // new input every time, like a real decision
      const uint64_t t0 = MonoNs();
      const PolicyOutput& o = p.Apply(obs.data(), goal.empty() ? nullptr : goal.data());
      double r, c;
      p.MapAction(o, 1e6, 1e5, &r, &c);
      const uint64_t t1 = MonoNs();
      sink += r;
      if (i >= 1000) us.push_back((t1 - t0) * 1e-3);  // first 1000: warm-up
    }
    // CPU time of this thread over a block of decisions: excludes time spent preempted, so
    // it is the figure that matters on a busy machine.
    const uint64_t c0 = NowNs(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < iters; ++i) {
      obs[i % obs.size()] = static_cast<float>(i % 7) * 0.1f;
      const PolicyOutput& o = p.Apply(obs.data(), goal.empty() ? nullptr : goal.data());
      sink += o.net[0];
    }
    const double cpu_us = (NowNs(CLOCK_THREAD_CPUTIME_ID) - c0) * 1e-3 / iters;
    std::sort(us.begin(), us.end());
    double mean = 0;
    for (double v : us) mean += v;
    out["policy"] = policy_path;
    out["history"] = p.history();
    out["obs_dim"] = p.obs_dim();
    out["inference_us"] = {{"median", us[us.size() / 2]}, {"p99", us[us.size() * 99 / 100]},
                           {"mean", mean / us.size()}, {"cpu_mean", cpu_us}, {"iters", iters}};
    out["checksum"] = sink;
  } catch (const PolicyError& e) {
    std::cerr << "jaxcc-bench: " << e.what() << "\n";
    return 2;
  }

  // Max pacing rate: ask for 100 Gbit/s to a bound, unread loopback socket.
  int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(rx, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(rx, reinterpret_cast<sockaddr*>(&a), &len);
  connect(tx, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  auto pace = [&](double mbps, size_t size, bool rt, double seconds) {
    FlowShared sh(1 << 16);
    sh.rate_bps = mbps * 125000.0;
    PacerOptions po;
    po.packet_size = size;
    po.realtime = rt;
    Pacer pacer(tx, &sh, po);
    const uint64_t t0 = MonoNs();
    pacer.Run(t0 + static_cast<uint64_t>(seconds * 1e9));
    const double el = (MonoNs() - t0) * 1e-9;
    return std::make_pair(sh.sent_bytes.load() * 8.0 / el / 1e6, sh.sent_count.load() / el);
  };
  for (bool rt : {false, true}) {
    const std::string tag = rt ? "_realtime" : "";
    for (size_t size : {size_t{1472}, size_t{8972}}) {
      auto r = pace(100000, size, rt, pace_s);  // ask for 100 Gbit/s: whatever comes out is the max
      out["max_pacing_mbps_" + std::to_string(size) + "B" + tag] = r.first;
      out["max_pacing_pps_" + std::to_string(size) + "B" + tag] = r.second;
    }
    nlohmann::json acc;
    for (double target : {10.0, 100.0, 500.0, 1000.0}) acc[std::to_string(static_cast<int>(target))] = pace(target, 1472, rt, pace_s).first;
    out["pacing_achieved_mbps_1472B" + tag] = acc;
  }
  close(rx);
  close(tx);
  std::cout << out.dump(1) << "\n";
  return 0;
}
