// jaxcc-sender: paces a UDP flow with a learned policy, a fixed rate or a BBR-like controller.
//
// Three threads, none of which waits for another (Pareto §V-A):
//   pacer     sends packets at the current rate/cwnd (atomics), records each send in a ring
//             (src/pacer.h);
//   ACK       receives ACKs, runs loss detection, accumulates monitor-interval statistics,
//             drives BBR per ACK (src/ack_thread.h);
//   decision  at the end of every monitor interval computes features, runs the policy and
//             publishes the new rate/cwnd, and writes the per-MI log (src/decision_loop.h).
// With --control-stdin a fourth thread reads goal changes for the decision thread. This file
// parses the options, loads the policy, opens the socket, starts the threads with their
// shared state and writes the summary.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "ack_thread.h"
#include "args.h"
#include "bbr.h"
#include "clock.h"
#include "decision_loop.h"
#include "goal_tuning.h"
#include "learner_link.h"
#include "mi_features.h"
#include "monitor.h"
#include "pacer.h"
#include "policy.h"
#include "preference.h"
#include "protocol.h"
#include "stats.h"

namespace jaxcc {
namespace {

constexpr int kExitBadInput = 2;

const char* kHelp = R"(jaxcc-sender: send one paced UDP flow to a jaxcc-receiver and measure it.

Usage: jaxcc-sender --controller=SPEC --dest=IP --port=N [options]

Controllers (--controller):
  policy:FILE     an exported jaxcc policy (.safetensors); decisions once per monitor
                  interval (spec.mi_rtts x min RTT) from the features named in the file
                  (aurora_v1, aurora_v2, pareto_v1, pareto_v2, eagle_v1, mocc_v1, deepcc_v1; others
                  exit 2). As in the environments, the first decision is taken on the empty
                  history before the first packet. Deployed with a safety net unless
                  --raw-policy (src/safety.h; jaxcc/senders/safety.py is its simulator twin):
                  a decision on an MI with neither an ACK nor an RTT sample may not raise the
                  rate or window, and a runtime monitor hands the pacing to the in-sender BBR
                  (fed by every ACK) after 3 RTTs of MIs without ACKs or with >= 50% loss,
                  and back to the policy after 3 RTTs of MIs with ACKs and < 20% loss
  fixed:MBPS      constant pacing rate, no window
  bbr             BBR-like controller (startup/drain/probe-bw/probe-rtt)

Options:
  --dest=IP            receiver IPv4 address (default 127.0.0.1)
  --port=N             receiver UDP port (default 9000)
  --duration=S         seconds to send (default 10)
  --start-delay=S      wait S seconds before sending (default 0)
  --drain=S            after sending, wait up to S seconds for the last ACKs (default 0.5)
  --log=FILE           per-monitor-interval CSV: t_s,mi_s,rate_mbps,cwnd_bytes,sent_mbps,
                       throughput_mbps,loss,rtt_mean_ms,rtt_min_ms,rtt_max_ms,min_rtt_ms,
                       action,decision_us,goal,weight_version (17 significant digits; rate_mbps
                       and cwnd_bytes are what was in force during the MI, action is the
                       decision after it, goal the goal that decision used, its values joined
                       by ';', empty without a goal; weight_version the policy version that
                       took the decision: 0 = the file, then the learner's; --learner;
                       control who took it: policy, guard (the policy, held by the safety
                       guard) or bbr (the in-sender BBR paced; empty without a policy)
  --summary=FILE       JSON summary: throughput_mbps (acked IP bytes over the sending time;
                       goodput_mbps the same in payload bytes), p50/p95_owd_ms (receiver time minus send time, from ACKs),
                       p95_qdelay_ms (OWD minus the flow's minimum OWD), p50/p95_rtt_ms,
                       loss (lost / (acked + lost) packets), sent, acked, lost, counters
  --flow-id=N          flow id carried in every packet (default 0)
  --packet-size=B      UDP payload bytes, 32..65507 (default 1472 = one 1500-byte IP packet).
                       Rates, windows and byte counts (--log, the summary, --init-mbps,
                       fixed:MBPS) are of wire (IP) bytes, payload + 28 header bytes, as the
                       simulator and the emulated link count them; goodput_mbps is payload
  --init-mbps=X        starting rate for policy and bbr controllers (default 1; a policy starts
                       where the simulator's sender for its feature set does unless this is
                       given: aurora_v1/v2 10 packets per RTT (--rtt-hint-ms), pareto_v1/v2 the env's
                       init_pkts_per_rtt / init_rtt_s, eagle_v1 the paper's 300 kbit/s)
  --rtt-hint-ms=X      path RTT to assume until the first RTT sample (default 100): the start
                       of aurora_v1/v2, the pacing of mocc_v1's first window, the features'
                       fallback; the simulator knows the link's RTT, jaxcc.emulate passes it
  --mi-rtts=K          monitor interval for fixed/bbr logging, in min RTTs (default 1)
  --min-mi-ms=X        shortest monitor interval (default 1; loopback RTTs are microseconds)
  --initial-mi-ms=X    longest first monitor interval without any RTT sample (default 1000):
                       as in the environments, the first MI ends mi-rtts x the first RTT
                       sample after the start (at once if that has passed)
  --goal=a,b,...       goal/preference vector for policies with goal_dim > 0 (default 1/G each)
  --preference=a,b,c   MOCC preference (throughput, delay, loss): 3 numbers >= 0 summing to 1
                       (within 1e-3), the goal of a policy with goal_dim 3 whose objectives are
                       in that order; the checked form of --goal (give one of the two)
  --target=x,y,z       DeepCC online goal tuning (IEEE/ACM ToN 2022 §IV-C; needs a deepcc_v1
                       policy, goal_dim 3): throughput_mbps >= x, 95th-percentile queueing delay
                       (RTT - min RTT) <= y ms, loss <= z (x, y >= 0, z in [0, 1]). Every
                       ceil(4 / mi_rtts) decisions (4 RTT) the goal is tuned on the mean of those
                       decisions' measurements (src/goal_tuning.h; the same algorithm as
                       jaxcc/senders/goal_tuning.py), starting from --goal/--preference (default
                       1/3 each); the summary has target, tuning_steps, goal_final,
                       tuning_met_steps and tuning_first_met_step (intervals that met the
                       whole target; the first, 1-based, 0 never)
  --tuner=NAME         the tuner a target (--target or a target line) gets: p95 (default;
                       the delay judged by the 95th percentile of the interval's MI delay
                       ratios, the loss weight following the delay weight while the delay is
                       unmet; src/goal_tuning.h) or paper (§IV-C read literally)
  --control-stdin      read control lines from stdin while running; commands:
                         preference a,b,c   (checked as --preference) applied at the next
                                            decision, without a restart
                         goal a,b,c         the same, a DeepCC fixed goal (a preference or
                                            goal line stops goal tuning)
                         target x,y,z       (checked as --target) a new DeepCC target: tuning
                                            (re)starts from the goal in force
                       a bad line is reported on stderr with the reason and ignored; every
                       applied change is on stderr, in the --log column goal and in the
                       summary's goal_changes (received_s, applied_s, decision = --log row)
  --min-timeout-ms=X   floor of the loss-detection timeout max(2*srtt, X) (default 20)
  --realtime           run the pacing thread at SCHED_FIFO priority 1 (needs CAP_SYS_NICE;
                       ignored without it): steadier pacing on a busy host
  --raw-policy         run the policy without its safety net (no guard, no monitor); the
                       summary's "safety" says which ran, with the monitor's fallbacks,
                       fallback_mis, guarded_decisions and events {t_s, to, why, decision}
  --fallback=keep|bbr  bbr: if the policy file is rejected, log why and run BBR instead of
                       exiting 2 (the reason is kept in the summary as "fallback_reason"); with
                       --learner also while the learner is gone (below): the in-sender BBR
                       (fed by every ACK all along) paces until a frame from the learner
                       arrives, then the policy resumes from the rate in force. keep (default):
                       exit 2 on a rejected file, keep the policy in force while the learner
                       is gone
  --learner=ADDR       online fine-tuning (Pareto §IV, Algorithm 4): stream every
                       decision's record to a learner at unix:/abs/path or tcp:HOST:PORT and
                       take new weights from it (src/learner_link.h has the protocol). Its own
                       I/O thread does all socket work; a decision only pushes its record into a
                       bounded queue and, between two decisions, swaps in a fully validated
                       blob (same spec, finite values, newer version; a bad one is rejected,
                       logged and the last good policy kept). Needs a policy:FILE controller.
                       The summary gets an "online" object (records, weights, versions,
                       rejections, learner_gone, max_decision_gap_s, max_rss_kb, ...)
  --learner-key=FILE   authenticate the link with the pre-shared key in FILE (at least 16 bytes
                       after a trailing newline is stripped; the learner's --key=FILE): protocol
                       2, fresh nonces per connection, HMAC-SHA256 session keys and a sequence
                       number and tag on every frame (src/frame_auth.h). Frames that fail are
                       refused, counted (online.auth_refused) and the connection dropped; the
                       policy in force keeps running. Required for tcp:HOST:PORT
  --record-queue=N     records waiting for the learner, 1..1048576 (default 8192); when full the
                       oldest is dropped and counted (records_dropped)
  --learner-timeout-s=X  the learner is gone after X s without a connection or a frame
                       (default 5; it sends PING at least every second)
  --max-lag-ms=X       pacing credit kept after the sender was descheduled, i.e. the longest
                       catch-up burst (default 10)
  --help               this text

Loss: a packet is lost when an ACK for a packet sent 3 or more after it arrives, or when it
has been unacknowledged for max(2*srtt, min-timeout). Duplicate ACKs are ignored.
Exit status: 0 ok, 1 runtime error (socket), 2 rejected input (bad option or policy file).
)";

std::atomic<bool>* g_stop = nullptr;
void OnSignal(int) {
  if (g_stop) g_stop->store(true);
}

enum class Kind { kPolicy, kFixed, kBbr };

struct Config {
  Kind kind = Kind::kFixed;
  std::string controller, policy_path;
  double fixed_mbps = 0;
  std::string dest = "127.0.0.1";
  int port = 9000;
  double duration = 10, start_delay = 0, drain = 0.5;
  std::string log_path, summary_path;
  uint32_t flow_id = 0;
  size_t packet_size = kDefaultPacketSize;
  bool init_mbps_given = false;
  double init_mbps = 1, mi_rtts = 1, min_mi_ms = 1, initial_mi_ms = 1000, min_timeout_ms = 20, max_lag_ms = 10;
  double rtt_hint_ms = 100;
  std::vector<float> goal;
  bool preference_given = false;  // cfg.goal came from --preference (checked against the policy)
  bool control_stdin = false;
  bool target_given = false;  // --target: DeepCC online goal tuning
  GoalTuner::Vec target{};
  GoalTuner::Mode tuner = GoalTuner::kDefaultMode;  // --tuner
  std::string fallback;
  bool realtime = false;
  std::string learner;           // --learner address ("" = streaming off)
  std::string learner_psk;       // --learner-key file's bytes ("" = proto 1, unix: only)
  bool raw_policy = false;       // --raw-policy: no safety net
  size_t record_queue = 8192;
  double learner_timeout_s = 5;
};

std::vector<float> ParseGoal(const std::string& s) {
  std::vector<float> g;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) g.push_back(static_cast<float>(Args::ParseNum(item, "--goal")));
  return g;
}

Config ParseConfig(int argc, char** argv) {
  Args a(argc, argv, {"controller", "dest", "port", "duration", "start-delay", "drain", "log", "summary",
                      "flow-id", "packet-size", "init-mbps", "mi-rtts", "min-mi-ms", "initial-mi-ms", "rtt-hint-ms", "goal",
                      "min-timeout-ms", "max-lag-ms", "fallback", "realtime", "preference", "control-stdin",
                      "target", "tuner", "learner", "learner-key", "record-queue", "learner-timeout-s", "raw-policy",
                      "help"});
  if (a.has("help")) {
    std::cout << kHelp;
    std::exit(0);
  }
  Config c;
  c.controller = a.str("controller");
  if (c.controller.rfind("policy:", 0) == 0) {
    c.kind = Kind::kPolicy;
    c.policy_path = c.controller.substr(7);
  } else if (c.controller.rfind("fixed:", 0) == 0) {
    c.kind = Kind::kFixed;
    c.fixed_mbps = Args::ParseNum(c.controller.substr(6), "fixed:MBPS");
    if (c.fixed_mbps <= 0) throw std::invalid_argument("fixed:MBPS needs a rate > 0");
  } else if (c.controller == "bbr") {
    c.kind = Kind::kBbr;
  } else {
    throw std::invalid_argument("--controller must be policy:FILE, fixed:MBPS or bbr (got '" + c.controller + "')");
  }
  c.dest = a.str("dest", c.dest);
  c.port = static_cast<int>(a.num("port", c.port));
  if (c.port <= 0 || c.port > 65535) throw std::invalid_argument("--port must be 1..65535");
  c.duration = a.num("duration", c.duration);
  c.start_delay = a.num("start-delay", 0);
  c.drain = a.num("drain", c.drain);
  if (c.duration <= 0 || c.start_delay < 0 || c.drain < 0)
    throw std::invalid_argument("--duration must be > 0, --start-delay and --drain >= 0");
  c.log_path = a.str("log");
  c.summary_path = a.str("summary");
  c.flow_id = static_cast<uint32_t>(a.num("flow-id", 0));
  c.packet_size = static_cast<size_t>(a.num("packet-size", kDefaultPacketSize));
  if (c.packet_size < kDataHeaderSize || c.packet_size > kMaxDatagram)
    throw std::invalid_argument("--packet-size must be 32..65507");
  c.init_mbps = a.num("init-mbps", 1);
  c.init_mbps_given = a.has("init-mbps");
  c.mi_rtts = a.num("mi-rtts", 1);
  c.min_mi_ms = a.num("min-mi-ms", 1);
  c.initial_mi_ms = a.num("initial-mi-ms", 1000);
  c.rtt_hint_ms = a.num("rtt-hint-ms", 100);
  c.min_timeout_ms = a.num("min-timeout-ms", 20);
  c.max_lag_ms = a.num("max-lag-ms", 10);
  if (c.max_lag_ms < 0) throw std::invalid_argument("--max-lag-ms must be >= 0");
  if (c.init_mbps <= 0 || c.mi_rtts <= 0 || c.min_mi_ms <= 0 || c.initial_mi_ms <= 0 || c.min_timeout_ms <= 0 ||
      c.rtt_hint_ms <= 0)
    throw std::invalid_argument(
        "--init-mbps, --mi-rtts, --min-mi-ms, --initial-mi-ms, --min-timeout-ms, --rtt-hint-ms must be > 0");
  if (a.has("goal")) c.goal = ParseGoal(a.str("goal"));
  if (a.has("preference")) {
    if (a.has("goal")) throw std::invalid_argument("give --preference or --goal, not both");
    if (c.kind != Kind::kPolicy)
      throw std::invalid_argument("--preference needs a policy:FILE controller (a policy with a preference input)");
    Preference pref;
    const std::string why = ParsePreference(a.str("preference"), &pref);
    if (!why.empty()) throw std::invalid_argument("--preference " + why);
    c.goal.assign(pref.begin(), pref.end());
    c.preference_given = true;
  }
  if (a.has("target")) {
    if (c.kind != Kind::kPolicy)
      throw std::invalid_argument("--target needs a policy:FILE controller (a DeepCC policy, features deepcc_v1)");
    const std::string why = GoalTuner::ParseTarget(a.str("target"), &c.target);
    if (!why.empty()) throw std::invalid_argument("--target " + why);
    c.target_given = true;
  }
  if (a.has("tuner")) {
    if (c.kind != Kind::kPolicy)
      throw std::invalid_argument("--tuner needs a policy:FILE controller (a DeepCC policy, features deepcc_v1)");
    if (!GoalTuner::ParseMode(a.str("tuner"), &c.tuner))
      throw std::invalid_argument("--tuner must be paper or p95, got '" + a.str("tuner") + "'");
  }
  c.control_stdin = a.has("control-stdin");
  c.raw_policy = a.has("raw-policy");
  if (c.raw_policy && c.kind != Kind::kPolicy)
    throw std::invalid_argument("--raw-policy needs a policy:FILE controller");
  c.fallback = a.str("fallback");
  c.realtime = a.has("realtime");
  if (!c.fallback.empty() && c.fallback != "bbr" && c.fallback != "keep")
    throw std::invalid_argument("--fallback must be keep or bbr, got '" + c.fallback + "'");
  if (c.fallback == "keep") c.fallback.clear();
  c.learner = a.str("learner");
  if (a.has("learner")) {
    if (c.kind != Kind::kPolicy) throw std::invalid_argument("--learner needs a policy:FILE controller");
    LearnerAddress la;
    const std::string why = ParseLearnerAddress(c.learner, &la);
    if (!why.empty()) throw std::invalid_argument(why);
    if (a.has("learner-key")) {
      const std::string bad = auth::ReadKeyFile(a.str("learner-key"), "--learner-key", &c.learner_psk);
      if (!bad.empty()) throw std::invalid_argument(bad);
    } else if (!la.is_unix) {
      throw std::invalid_argument("--learner=" + c.learner +
                                  " needs --learner-key=FILE: a tcp: learner link must be authenticated");
    }
  } else if (a.has("record-queue") || a.has("learner-timeout-s") || a.has("learner-key")) {
    throw std::invalid_argument("--record-queue, --learner-timeout-s and --learner-key need --learner");
  }
  const double rq = a.num("record-queue", 8192);
  if (rq < 1 || rq > (1 << 20) || rq != std::floor(rq))
    throw std::invalid_argument("--record-queue must be an integer in 1..1048576");
  c.record_queue = static_cast<size_t>(rq);
  c.learner_timeout_s = a.num("learner-timeout-s", 5);
  if (c.learner_timeout_s <= 0 || c.learner_timeout_s > 3600)
    throw std::invalid_argument("--learner-timeout-s must be in (0, 3600]");
  return c;
}

int Main(int argc, char** argv) {
  Config cfg;
  try {
    cfg = ParseConfig(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "jaxcc-sender: " << e.what() << "\n";
    return kExitBadInput;
  }
  // Load everything that can be rejected before touching the network.
  std::unique_ptr<Policy> policy;
  std::unique_ptr<FeatureFn> features;
  std::string fallback_reason;
  if (cfg.kind == Kind::kPolicy) {
    try {
      policy = std::make_unique<Policy>(Policy::LoadFile(cfg.policy_path));
      features = MakeFeatureFn(policy->feature_name(), policy->features_json());
      if (features->dim() != policy->obs_dim())
        throw PolicyError("feature set '" + policy->feature_name() + "' has " + std::to_string(features->dim()) +
                          " features but the policy expects obs_dim " + std::to_string(policy->obs_dim()));
      features->Check(*policy);
      if (cfg.preference_given) {  // the file is fine but does not take --preference: bad input
        const std::string why = PreferenceMismatch(*policy);
        if (!why.empty()) throw std::invalid_argument("--preference: " + why);
      }
      if (cfg.target_given) {  // the file is fine but cannot be tuned: bad input
        const std::string why = TargetMismatch(*policy);
        if (!why.empty()) throw std::invalid_argument("--target: " + why);
      }
      if (policy->goal_dim() > 0) {
        if (cfg.goal.empty()) cfg.goal.assign(policy->goal_dim(), 1.0f / policy->goal_dim());
        if (static_cast<int>(cfg.goal.size()) != policy->goal_dim())
          throw PolicyError("--goal has " + std::to_string(cfg.goal.size()) + " values, the policy needs " +
                            std::to_string(policy->goal_dim()));
      }
      cfg.mi_rtts = policy->mi_rtts();
    } catch (const std::invalid_argument& e) {  // an option that does not fit the policy
      std::cerr << "jaxcc-sender: " << e.what() << "\n";
      return kExitBadInput;
    } catch (const PolicyError& e) {
      std::cerr << "jaxcc-sender: " << e.what() << "\n";
      if (cfg.fallback != "bbr") return kExitBadInput;
      std::cerr << "jaxcc-sender: falling back to bbr\n";
      fallback_reason = e.what();
      policy.reset();
      features.reset();
      cfg.kind = Kind::kBbr;
      cfg.mi_rtts = 1;
    }
  }
  // The decision side (src/decision_loop.h) owns the policy from here on; the decision thread
  // may swap in a newer one from the learner, so read it through loop.policy().
  DecisionOptions dopt;
  dopt.mi_rtts = cfg.mi_rtts;
  dopt.min_mi_ms = cfg.min_mi_ms;
  dopt.initial_mi_ms = cfg.initial_mi_ms;
  dopt.goal = cfg.goal;
  dopt.target_given = cfg.target_given;
  dopt.target = cfg.target;
  dopt.tuner = cfg.tuner;
  dopt.safety = !cfg.raw_policy;
  DecisionLoop loop(std::move(policy), std::move(features), dopt);
  std::ofstream log;
  if (!cfg.log_path.empty()) {
    log.open(cfg.log_path);
    if (!log) {
      std::cerr << "jaxcc-sender: cannot write --log file " << cfg.log_path << "\n";
      return kExitBadInput;
    }
    // Every number round-trips (17 significant digits), so a run can be replayed exactly
    // through the Python sender (tests/test_pareto_v2_features.py).
    WriteDecisionLogHeader(log);
  }

  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) {
    std::perror("jaxcc-sender: socket");
    return 1;
  }
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<uint16_t>(cfg.port));
  if (inet_pton(AF_INET, cfg.dest.c_str(), &dst.sin_addr) != 1) {
    std::cerr << "jaxcc-sender: --dest must be an IPv4 address, got '" << cfg.dest << "'\n";
    return kExitBadInput;
  }
  // Large buffers: at 1 Gbit/s a 10 ms scheduling hiccup is ~850 packets of ACKs.
  int big = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
  if (connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof(dst)) != 0) {
    std::perror("jaxcc-sender: connect");
    return 1;
  }

  auto sh = std::make_unique<FlowShared>();
  AckSide as;
  std::unique_ptr<BbrController> bbr;
  double rate0 = cfg.init_mbps * kBytesPerMbit;
  switch (cfg.kind) {
    case Kind::kFixed:
      rate0 = cfg.fixed_mbps * kBytesPerMbit;
      break;
    case Kind::kBbr:
      bbr = std::make_unique<BbrController>(static_cast<double>(WireBytes(cfg.packet_size)), rate0, cfg.flow_id + 1);
      sh->cwnd_bytes = bbr->cwnd();
      break;
    case Kind::kPolicy: {
      // Fed by every ACK, BBR drives only as a fallback: the safety monitor's and, with
      // --learner --fallback=bbr, while the learner is gone.
      if (!cfg.raw_policy || (!cfg.learner.empty() && cfg.fallback == "bbr")) {
        bbr = std::make_unique<BbrController>(static_cast<double>(WireBytes(cfg.packet_size)), rate0, cfg.flow_id + 1);
        as.bbr_drives = false;
      }
      // The paper's start, then the first decision on the empty history (the environments act
      // once at reset, before any feedback): the first packets already go at the policy's
      // chosen rate/cwnd.
      const FirstDecision first = loop.Start(rate0, cfg.init_mbps_given, WireBytes(cfg.packet_size),
                                                  cfg.rtt_hint_ms * 1e-3);
      rate0 = first.rate;
      sh->cwnd_bytes = first.cwnd;
      break;
    }
  }
  sh->rate_bps = rate0;
  as.mi.keep_rtts = loop.keep_rtts();

  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  g_stop = &sh->stop;
  if (cfg.start_delay > 0) SleepUntilMono(MonoNs() + static_cast<uint64_t>(cfg.start_delay * 1e9));

  const uint64_t t0 = MonoNs();
  const uint64_t t_end = t0 + static_cast<uint64_t>(cfg.duration * 1e9);
  as.mi_start_ns = t0;
  // The policy from the file (the decision thread may swap in the learner's once it runs).
  const Policy* file_policy = loop.policy();
  // Online fine-tuning (--learner): the link's I/O thread connects, streams and validates.
  std::unique_ptr<LearnerLink> link;
  if (!cfg.learner.empty() && !file_policy) {
    std::cerr << "jaxcc-sender: no policy in force (fell back to bbr): --learner ignored\n";
  } else if (!cfg.learner.empty()) {
    LinkOptions lo;
    lo.address = cfg.learner;
    lo.queue = cfg.record_queue;
    lo.timeout_s = cfg.learner_timeout_s;
    lo.obs_dim = file_policy->obs_dim();
    lo.running_spec = file_policy->spec_json();
    lo.t0_ns = t0;
    lo.psk = cfg.learner_psk;
    lo.hello = {{"flow_id", cfg.flow_id}, {"feature_set", file_policy->feature_name()},
                {"history", file_policy->history()}, {"obs_dim", file_policy->obs_dim()},
                {"mi_rtts", file_policy->mi_rtts()},
                {"policy_sha256", Sha256File(cfg.policy_path)}, {"fallback", cfg.fallback == "bbr" ? "bbr" : "keep"}};
    link = std::make_unique<LearnerLink>(lo);
    link->Start();
  }
  std::atomic<bool> ack_stop{false};
  std::thread ack_thr(AckThread, fd, cfg.flow_id, cfg.min_timeout_ms, sh.get(), &as, bbr.get(), &ack_stop);

  // Runtime goal changes (--control-stdin): read by their own thread, applied by the decision
  // thread at its next decision.
  GoalControl gc;
  std::atomic<bool> control_stop{false};
  std::thread control_thr;
  if (cfg.control_stdin) {
    const std::string not_policy = "the controller is " + cfg.controller +
                                   (fallback_reason.empty() ? "" : " (fell back to bbr)") +
                                   ", not a policy with a preference input";
    std::string why_not = file_policy ? PreferenceMismatch(*file_policy) : not_policy;
    std::string why_not_target = file_policy ? TargetMismatch(*file_policy) : not_policy;
    control_thr = std::thread(ReadControlInput, 0, &control_stop, &gc, why_not, why_not_target, t0, nullptr);
  }

  // Decision thread: waits for the end of each MI, takes the MI's statistics from the ACK
  // thread and hands them to the decision loop.
  DecisionIo dio;
  dio.flow = sh.get();
  dio.min_rtt = &as.min_rtt;
  if (bbr) {  // BBR paces while the safety monitor or a gone learner (--fallback=bbr) says so
    dio.ack_mu = &as.mu;
    dio.bbr_drives = &as.bbr_drives;
  }
  dio.link = link.get();
  dio.goal_control = &gc;
  dio.log = log.is_open() ? &log : nullptr;
  dio.t0_ns = t0;
  loop.Attach(dio);
  std::atomic<bool> decision_stop{false};
  std::thread dec_thr([&]() {
    {
      std::lock_guard<std::mutex> lk(as.mu);
      as.mi_start_ns = MonoNs();
      loop.BeginInterval(as.mi_start_ns);
    }
    while (!decision_stop.load()) {
      // Before the first RTT sample, look every millisecond (the MI then ends mi_rtts x that
      // sample after its start, as the environments' first MI does); then every 50 ms, so a
      // stop request is seen in time.
      while (!decision_stop.load()) {
        const uint64_t due = loop.IntervalEnd(as.min_rtt.load());
        const uint64_t t = MonoNs();
        if (t >= due) break;
        SleepUntilMono(std::min(due, t + (loop.interval_end_fixed() ? 50'000'000 : 1'000'000)));
      }
      if (decision_stop.load()) break;
      const uint64_t now = MonoNs();
      MonitorStats mi;
      {
        std::lock_guard<std::mutex> lk(as.mu);
        mi = std::move(as.mi);
        as.mi = MonitorStats();
        as.mi.keep_rtts = loop.keep_rtts();
        as.mi_start_ns = now;
      }
      loop.CloseInterval(std::move(mi), now);
    }
  });

  PacerOptions po;
  po.packet_size = cfg.packet_size;
  po.flow_id = cfg.flow_id;
  po.max_lag_ns = static_cast<uint64_t>(cfg.max_lag_ms * 1e6);
  po.realtime = cfg.realtime;
  Pacer pacer(fd, sh.get(), po);
  pacer.Run(t_end);
  if (cfg.realtime && !pacer.got_realtime()) std::cerr << "jaxcc-sender: --realtime refused, paced at normal priority\n";
  const uint64_t t_stop = std::min(MonoNs(), t_end);
  const bool interrupted = sh->stop.load();
  decision_stop = true;
  dec_thr.join();
  // The link's counters plus the decision thread's (the summary's `online` object and BYE).
  auto online_extra = [&]() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    const DecisionCounters& dc = loop.counters();
    return nlohmann::json{{"fallback_decisions", dc.fallback_decisions}, {"max_decision_gap_s", dc.max_gap_s},
                          {"mi_mean_s", dc.mi_rows ? dc.mi_sum_s / dc.mi_rows : 0.0}, {"max_rss_kb", ru.ru_maxrss},
                          {"decisions", dc.mi_rows}};
  };
  if (link) link->Stop(online_extra());
  control_stop = true;
  if (control_thr.joinable()) control_thr.join();
  // Drain: give the last ACKs time to arrive (the ACK thread keeps running).
  if (!interrupted) {
    const uint64_t drain_end = MonoNs() + static_cast<uint64_t>(cfg.drain * 1e9);
    while (MonoNs() < drain_end && sh->inflight() > 0 && !sh->stop.load())
      SleepUntilMono(std::min(drain_end, MonoNs() + 5'000'000));
  }
  ack_stop = true;
  ack_thr.join();
  close(fd);

  const double active_s = (t_stop - t0) * 1e-9;
  const uint64_t sent_pkts = sh->sent_count.load();
  const double acked_bytes = static_cast<double>(sh->acked_bytes.load());
  nlohmann::json s;
  s["controller"] = cfg.controller;
  s["flow_id"] = cfg.flow_id;
  s["duration_s"] = active_s;
  s["packet_size"] = cfg.packet_size;
  s["sent"] = sent_pkts;
  s["sent_bytes"] = sh->sent_bytes.load();
  // Final figures count a packet whose ACK came after it was declared lost as delivered
  // (the receiver did get it); the per-MI log keeps what the sender knew at the time.
  const uint64_t lost_final = as.lost_pkts - std::min(as.lost_pkts, as.late_pkts);
  const double delivered_bytes = acked_bytes + as.late_bytes;
  s["acked"] = as.acked_pkts + as.late_pkts;
  s["acked_bytes"] = delivered_bytes;
  s["lost"] = lost_final;
  s["spurious_losses"] = as.late_pkts;
  s["unresolved_at_end"] = as.outstanding_at_end;
  s["throughput_mbps"] = active_s > 0 ? delivered_bytes * 8 / active_s / 1e6 : 0.0;
  // The same delivery in UDP payload bytes (what an application gets).
  s["goodput_mbps"] = active_s > 0 ? delivered_bytes * cfg.packet_size / WireBytes(cfg.packet_size) * 8 / active_s / 1e6
                                   : 0.0;
  s["send_rate_mbps"] = active_s > 0 ? sh->sent_bytes.load() * 8.0 / active_s / 1e6 : 0.0;
  const double resolved = static_cast<double>(as.acked_pkts + as.late_pkts + lost_final);
  s["loss"] = resolved > 0 ? lost_final / resolved : 0.0;
  auto pct = [](std::vector<float>& v, double q) -> nlohmann::json {
    if (v.empty()) return nullptr;
    std::vector<double> d(v.begin(), v.end());
    return Percentile(d, q);
  };
  s["p50_rtt_ms"] = pct(as.rtt_ms, 50);
  s["p95_rtt_ms"] = pct(as.rtt_ms, 95);
  s["min_rtt_ms"] = as.min_rtt.load() > 0 ? nlohmann::json(as.min_rtt.load() * 1e3) : nlohmann::json(nullptr);
  s["p50_owd_ms"] = pct(as.owd_ms, 50);
  s["p95_owd_ms"] = pct(as.owd_ms, 95);
  if (!as.owd_ms.empty()) {
    const float mn = *std::min_element(as.owd_ms.begin(), as.owd_ms.end());
    std::vector<double> q;
    q.reserve(as.owd_ms.size());
    for (float v : as.owd_ms) q.push_back(v - mn);
    s["p95_qdelay_ms"] = Percentile(q, 95);
    s["min_owd_ms"] = mn;
  } else {
    s["p95_qdelay_ms"] = nullptr;
  }
  s["duplicate_acks"] = as.dup_acks;
  s["late_acks"] = as.late_acks;
  s["unknown_acks"] = as.unknown_acks;
  s["foreign_flow_acks"] = as.foreign_flow;
  s["garbage_datagrams"] = as.parse.garbage();
  nlohmann::json pc;
  for (int i = 0; i < 7; ++i) pc[ParseResultName(static_cast<ParseResult>(i))] = as.parse.counts[i];
  s["parse"] = pc;
  s["send_errors"] = sh->send_errors.load();
  s["interrupted"] = interrupted;
  // CLOCK_MONOTONIC seconds of t_s = 0 in --log (Python's time.monotonic() on Linux): lets a
  // driver relate its own clock (e.g. when it wrote a control line) to the log.
  s["start_mono_s"] = t0 * 1e-9;
  if (!fallback_reason.empty()) s["fallback_reason"] = fallback_reason;
  loop.AddSummary(&s, cfg.policy_path, cfg.preference_given, cfg.control_stdin);
  if (link) {
    nlohmann::json o = link->Counters();
    const nlohmann::json extra = online_extra();
    for (auto it = extra.begin(); it != extra.end(); ++it) o[it.key()] = it.value();
    s["online"] = o;
  }
  if (bbr) s["bbr"] = {{"max_bw_mbps", bbr->max_bw() * 8 / 1e6}, {"min_rtt_ms", bbr->min_rtt_s() * 1e3},
                       {"rounds", bbr->round_count()}};
  const std::string text = s.dump(1);
  return WriteSummary(text, cfg.summary_path, "jaxcc-sender");
}

}  // namespace
}  // namespace jaxcc

int main(int argc, char** argv) { return jaxcc::Main(argc, argv); }
