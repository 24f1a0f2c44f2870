// jaxcc-bench: policy inference time per decision and the pacer's maximum rate on loopback.
// Prints one JSON object. Usage: jaxcc-bench [--policy=FILE] [--iters=N] [--pace-seconds=S]
//   [--stream-decisions=N] [--stream-interval-us=U]
// decision_streaming: the per-decision cost with online streaming off vs on (online fine-tuning): N
// decisions, one every U us, each Apply + MapAction; "on" adds what the sender's decision
// thread does with --learner (fill the record, push it into the bounded queue, check the weight
// mailbox) while a LearnerLink I/O thread streams to a sink learner on a unix socket.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iostream>
#include <thread>
#include <utility>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "args.h"
#include "clock.h"
#include "learner_link.h"
#include "monitor.h"
#include "pacer.h"
#include "policy.h"

using namespace jaxcc;

namespace {

struct Lat {
  double median, p99, max, mean;
};
Lat Summarise(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  double m = 0;
  for (double x : v) m += x;
  return {v[v.size() / 2], v[v.size() * 99 / 100], v.back(), m / v.size()};
}
nlohmann::json ToJson(const Lat& l) { return {{"median", l.median}, {"p99", l.p99}, {"max", l.max}, {"mean", l.mean}}; }

// Decision cost with streaming off and on (see the top of the file).
nlohmann::json DecisionStreaming(const std::string& policy_path, int n, double interval_us) {
  Policy p = Policy::LoadFile(policy_path);
  const int D = p.obs_dim();
  std::vector<float> obs(static_cast<size_t>(p.history()) * D, 0.1f), goal(p.goal_dim(), 0.5f);
  // The sink learner: accepts one connection, reads everything, pings every 0.5 s.
  const std::string path = "/tmp/jaxcc_bench_" + std::to_string(getpid()) + ".sock";
  unlink(path.c_str());
  int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, path.c_str(), sizeof(sa.sun_path) - 1);
  if (bind(lfd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || listen(lfd, 1) != 0)
    throw std::runtime_error("cannot listen on " + path);
  std::atomic<bool> sink_stop{false};
  std::atomic<uint64_t> sink_bytes{0};
  std::thread sink([&]() {
    pollfd pl{lfd, POLLIN, 0};
    if (poll(&pl, 1, 5000) != 1) return;
    const int fd = accept(lfd, nullptr, nullptr);
    std::vector<char> buf(1 << 16);
    uint64_t next_ping = 0;
    while (!sink_stop.load()) {
      if (MonoNs() >= next_ping) {
        const char ping[5] = {1, 0, 0, 0, proto::kPing};
        if (write(fd, ping, 5) != 5) break;
        next_ping = MonoNs() + 500'000'000;
      }
      pollfd pf{fd, POLLIN, 0};
      if (poll(&pf, 1, 20) != 1) continue;
      const ssize_t r = read(fd, buf.data(), buf.size());
      if (r <= 0) break;
      sink_bytes += static_cast<uint64_t>(r);
    }
    close(fd);
  });
  std::mt19937 rng(2);
  std::normal_distribution<float> nd;
  auto run = [&](LearnerLink* link) {
    std::vector<double> us, rec(proto::kRecordHead + D, 0.0);
    us.reserve(n);
    MonitorStats mi;
    uint64_t next = MonoNs();
    for (int i = 0; i < n; ++i) {
      next += static_cast<uint64_t>(interval_us * 1e3);
      SleepUntilMono(next);
      for (int k = 0; k < D; ++k) obs[(i * D + k) % obs.size()] = nd(rng);
      const uint64_t t0 = MonoNs();
      if (link) {
        std::unique_ptr<Policy> np;
        uint64_t v;
        link->TakeWeights(&np, &v, static_cast<uint64_t>(i), 0.0);
      }
      const PolicyOutput& o = p.Apply(obs.data(), goal.empty() ? nullptr : goal.data());
      double r, c;
      p.MapAction(o, 1e6, 1e5, &r, &c);
      if (link) {
        rec[0] = i, rec[1] = i * interval_us * 1e-6, rec[3] = o.values.empty() ? o.index : o.values[0];
        rec[4] = 1e6, rec[5] = r, rec[6] = 0.01;
        MonitorSums(mi, &rec[7]);
        rec[23] = static_cast<double>(link->records_dropped());
        for (int k = 0; k < D; ++k) rec[proto::kRecordHead + k] = obs[obs.size() - D + k];
        link->PushRecord(rec.data());
      }
      us.push_back((MonoNs() - t0) * 1e-3);
    }
    return us;
  };
  nlohmann::json out;
  out["decisions"] = n;
  out["interval_us"] = interval_us;
  out["off_us"] = ToJson(Summarise(run(nullptr)));
  LinkOptions lo;
  lo.address = "unix:" + path;
  lo.obs_dim = D;
  lo.running_spec = p.spec_json();
  lo.hello = {{"flow_id", 0}, {"feature_set", p.feature_name()}};
  lo.t0_ns = MonoNs();
  LearnerLink link(lo);
  link.Start();
  SleepUntilMono(MonoNs() + 200'000'000);  // connected
  out["on_us"] = ToJson(Summarise(run(&link)));
  link.Stop({});
  sink_stop = true;
  sink.join();
  close(lfd);
  unlink(path.c_str());
  const nlohmann::json c = link.Counters();
  out["records_sent"] = c["records_sent"];
  out["records_dropped"] = c["records_dropped"];
  out["bytes_streamed"] = sink_bytes.load();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string policy_path;
  int iters = 20000;
  double pace_s = 1.0;
  int stream_n = 3000;
  double stream_interval_us = 1000;
  try {
    Args a(argc, argv, {"policy", "iters", "pace-seconds", "stream-decisions", "stream-interval-us", "help"});
    if (a.has("help")) {
      std::cout << "jaxcc-bench [--policy=FILE (default tests/vectors/lstm.safetensors)] [--iters=N] "
                   "[--pace-seconds=S] [--stream-decisions=N (default 3000; 0 skips)] [--stream-interval-us=U (default 1000)]\n"
                   "Prints JSON: inference_us (median/p99 per decision, one core) and "
                   "max_pacing_mbps (fixed rate far above what loopback can take).\n";
      return 0;
    }
    policy_path = a.str("policy", JAXCC_DEFAULT_POLICY);
    iters = static_cast<int>(a.num("iters", iters));
    pace_s = a.num("pace-seconds", pace_s);
    stream_n = static_cast<int>(a.num("stream-decisions", stream_n));
    stream_interval_us = a.num("stream-interval-us", stream_interval_us);
    if (stream_n < 0 || stream_interval_us <= 0)
      throw std::invalid_argument("--stream-decisions must be >= 0 and --stream-interval-us > 0");
  } catch (const std::exception& e) {
    std::cerr << "jaxcc-bench: " << e.what() << "\n";
    return 2;
  }
  // Streaming on vs off first, unpinned: the sender's threads are not pinned either.
  nlohmann::json streaming;
  if (stream_n > 0) {
    try {
      streaming = DecisionStreaming(policy_path, stream_n, stream_interval_us);
    } catch (const std::exception& e) {
      std::cerr << "jaxcc-bench: " << e.what() << "\n";
      return 2;
    }
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
    if (stream_n > 0) out["decision_streaming"] = streaming;
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
