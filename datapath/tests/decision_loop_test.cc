// The sender's decision loop (src/decision_loop.h) driven MI by MI without sockets or threads:
// made-up MI statistics and clocks in, the published rate/cwnd, the --log rows, the goal in
// force and the summary out, each against figures worked out by hand in the comments.
#include "decision_loop.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "goal_tuning.h"
#include "mi_features.h"
#include "monitor.h"
#include "pacer.h"
#include "policy.h"
#include "test_util.h"

namespace {

using jaxcc::DecisionIo;
using jaxcc::DecisionLoop;
using jaxcc::DecisionOptions;
using jaxcc::FeatureFn;
using jaxcc::FlowShared;
using jaxcc::GoalTuner;
using jaxcc::MonitorStats;
using jaxcc::Policy;
using jaxcc::RunningStats;
using json = nlohmann::json;

constexpr uint64_t kMs = 1'000'000;  // ns
constexpr uint64_t kT0 = 5'000 * kMs;

// Features the test sets before each MI (`next`), so the policy's input is known exactly; it
// keeps a copy of the MI and running statistics it was given. Start() sets the rate when
// start_rate > 0, as a feature set with a paper start does.
class ScriptedFeatures : public FeatureFn {
 public:
  ScriptedFeatures(int dim, std::vector<float> empty) : next(dim, 0.0f), dim_(dim), empty_(std::move(empty)) {}
  int dim() const override { return dim_; }
  void Compute(const MonitorStats& mi, const RunningStats& run, float* out) override {
    last_mi = mi;
    last_run = run;
    ++computed;
    for (int i = 0; i < dim_; ++i) out[i] = next[i];
  }
  std::vector<float> Empty() const override { return empty_; }
  void Start(double* rate, double* cwnd) override {
    (void)cwnd;
    if (start_rate > 0) *rate = start_rate;
  }

  std::vector<float> next;
  double start_rate = 0;
  MonitorStats last_mi;
  RunningStats last_run;
  int computed = 0;

 private:
  int dim_;
  std::vector<float> empty_;
};

std::unique_ptr<Policy> Load(const json& spec, const std::map<std::string, jaxcc_test::T>& tensors) {
  const auto blob = jaxcc_test::MakeSafetensors(spec, tensors);
  return std::make_unique<Policy>(Policy::LoadBytes(blob.data(), blob.size()));
}

// history 2 x obs_dim 1 -> flatten -> dense(2 -> 1): a = clip(0.5 x_old + 1.0 x_new, -2, 2);
// aurora with alpha 0.5: rate x (1 + a/2) for a >= 0, rate / (1 - a/2) below; 1..40 Mbit/s.
std::unique_ptr<Policy> RatePolicy() {
  const json spec = json::parse(R"({
    "format": "jaxcc-policy", "version": 1, "algorithm": "random",
    "features": {"name": "test", "history": 2, "obs_dim": 1}, "mi_rtts": 1.0, "goal_dim": 0,
    "layers": [{"type": "flatten"}, {"type": "dense", "name": "fc", "in": 2, "out": 1, "activation": "linear"}],
    "head": {"type": "gaussian_mean", "low": -2.0, "high": 2.0},
    "action": {"type": "aurora", "alpha": 0.5, "min_mbps": 1.0, "max_mbps": 40.0}})");
  return Load(spec, {{"fc.kernel", {{2, 1}, {0.5f, 1.0f}}}, {"fc.bias", {{1}, {0.0f}}}});
}

// history 1 x obs_dim D, goal_dim 3 -> flatten -> concat_goal -> dense(D + 3 -> 1) reading only
// the goal: a = g0 - g1 (throughput weight minus delay weight); aurora alpha 0.5 as above.
std::unique_ptr<Policy> GoalPolicy(int D) {
  json spec = json::parse(R"({
    "format": "jaxcc-policy", "version": 1, "algorithm": "random",
    "features": {"name": "test", "history": 1}, "mi_rtts": 1.0, "goal_dim": 3,
    "layers": [{"type": "flatten"}, {"type": "concat_goal"},
               {"type": "dense", "name": "fc", "out": 1, "activation": "linear"}],
    "head": {"type": "gaussian_mean", "low": -2.0, "high": 2.0},
    "action": {"type": "aurora", "alpha": 0.5}})");
  spec["features"]["obs_dim"] = D;
  spec["layers"][2]["in"] = D + 3;
  std::vector<float> w(D + 3, 0.0f);
  w[D] = 1.0f;
  w[D + 1] = -1.0f;
  return Load(spec, {{"fc.kernel", {{D + 3, 1}, w}}, {"fc.bias", {{1}, {0.0f}}}});
}

// obs_dim 1 -> dense(1 -> 3) = (0, 0, x), discrete head: action 2 (+3000 B) when x > 0, else 0
// (-3000 B; the first maximum); cwnd_table, so the window is paced at 2 cwnd / srtt.
std::unique_ptr<Policy> WindowPolicy() {
  const json spec = json::parse(R"({
    "format": "jaxcc-policy", "version": 1, "algorithm": "random",
    "features": {"name": "test", "history": 1, "obs_dim": 1}, "mi_rtts": 1.0, "goal_dim": 0,
    "layers": [{"type": "flatten"}, {"type": "dense", "name": "fc", "in": 1, "out": 3, "activation": "linear"}],
    "head": {"type": "discrete", "n": 3},
    "action": {"type": "cwnd_table", "deltas": [-3000.0, 0.0, 3000.0]}})");
  return Load(spec, {{"fc.kernel", {{1, 3}, {0.0f, 0.0f, 1.0f}}}, {"fc.bias", {{3}, {0.0f, 0.0f, 0.0f}}}});
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  if (!s.empty() && s.back() == sep) out.push_back("");
  return out;
}

// The --log rows after the header, each split into its 16 columns.
std::vector<std::vector<std::string>> Rows(const std::ostringstream& log) {
  std::vector<std::vector<std::string>> rows;
  const auto lines = Split(log.str(), '\n');
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    rows.push_back(Split(lines[i], ','));
    EXPECT_EQ(rows.back().size(), 16u) << lines[i];
  }
  return rows;
}

double Num(const std::string& s) { return std::stod(s); }

// Within 1e-6 of `want`, relative: the policy's float32 output carries into the rate.
void ExpectRel(double got, double want, const std::string& what = "") {
  EXPECT_NEAR(got, want, 1e-6 * std::fabs(want)) << what;
}

// Options of the raw policy (no safety net): the tests of the decision itself close MIs
// without ACKs freely; those of the safety net (below) start from DecisionOptions{}.
DecisionOptions Raw() {
  DecisionOptions o;
  o.safety = false;
  return o;
}

// One decision loop wired to a flow, a min-RTT cell, the ACK thread's BBR flag, a control
// input, a log and an error stream.
struct Rig {
  FlowShared flow{16};
  std::atomic<double> min_rtt{0};
  std::mutex ack_mu;
  bool bbr_drives = false;
  jaxcc::GoalControl gc;
  std::ostringstream log, err;
  ScriptedFeatures* features = nullptr;  // owned by the loop
  std::unique_ptr<DecisionLoop> loop;

  Rig(std::unique_ptr<Policy> policy, int feature_dim, std::vector<float> empty, DecisionOptions opt = Raw()) {
    std::unique_ptr<ScriptedFeatures> f;
    if (policy) {
      f = std::make_unique<ScriptedFeatures>(feature_dim, std::move(empty));
      features = f.get();
    }
    loop = std::make_unique<DecisionLoop>(std::move(policy), std::move(f), std::move(opt));
    jaxcc::WriteDecisionLogHeader(log);
  }
  void Attach(uint64_t start_ns = kT0) {
    DecisionIo io;
    io.flow = &flow;
    io.min_rtt = &min_rtt;
    io.ack_mu = &ack_mu;
    io.bbr_drives = &bbr_drives;
    io.goal_control = &gc;
    io.log = &log;
    io.err = &err;
    io.t0_ns = kT0;
    loop->Attach(io);
    loop->BeginInterval(start_ns);
  }
  // Publishes the first decision as jaxcc-sender does before the first packet.
  jaxcc::FirstDecision Start(double init_rate, bool given, double rtt_hint_s = 0.1) {
    const jaxcc::FirstDecision d = loop->Start(init_rate, given, 1500, rtt_hint_s);  // wire bytes
    flow.rate_bps = d.rate;
    flow.cwnd_bytes = d.cwnd;
    return d;
  }
  // Closes an MI at `now_ns` after the pacer sent `sent` more bytes.
  void Close(uint64_t now_ns, uint64_t sent, MonitorStats mi = MonitorStats()) {
    flow.sent_bytes += sent;
    loop->CloseInterval(std::move(mi), now_ns);
  }
};

TEST(DecisionLoop, LogHeaderIsTheDocumentedColumns) {
  std::ostringstream log;
  jaxcc::WriteDecisionLogHeader(log);
  EXPECT_EQ(log.str(),
            "t_s,mi_s,rate_mbps,cwnd_bytes,sent_mbps,throughput_mbps,loss,rtt_mean_ms,rtt_min_ms,rtt_max_ms,"
            "min_rtt_ms,action,decision_us,goal,weight_version,control\n");
  EXPECT_EQ(log.precision(), 17);
}

// The MI ends mi_rtts x min RTT after its start (at least min_mi_ms); before the first RTT
// sample it ends initial_mi_ms after it, and the first sample fixes the end for the MI.
TEST(DecisionLoop, IntervalEndFollowsTheFirstRttSample) {
  DecisionOptions opt = Raw();
  opt.mi_rtts = 2;
  opt.min_mi_ms = 5;
  opt.initial_mi_ms = 250;
  Rig r(nullptr, 0, {}, opt);
  const uint64_t start = kT0 + 1000 * kMs;
  r.Attach(start);
  EXPECT_EQ(r.loop->IntervalEnd(0.0), start + 250 * kMs);
  EXPECT_FALSE(r.loop->interval_end_fixed());
  EXPECT_EQ(r.loop->IntervalEnd(0.015625), start + 31'250'000);  // 2 x 15.625 ms
  EXPECT_TRUE(r.loop->interval_end_fixed());
  EXPECT_EQ(r.loop->IntervalEnd(0.001), start + 31'250'000);  // a newer, smaller sample: still fixed
  // The next MI starts where this one was closed; 2 x 1 ms is under the 5 ms floor.
  const uint64_t now = start + 40 * kMs;
  r.Close(now, 0);
  EXPECT_FALSE(r.loop->interval_end_fixed());
  EXPECT_EQ(r.loop->IntervalEnd(0.001), now + 5 * kMs);
  // initial_mi_ms below the floor: the floor.
  opt.initial_mi_ms = 2;
  Rig r2(nullptr, 0, {}, opt);
  r2.Attach(start);
  EXPECT_EQ(r2.loop->IntervalEnd(0.0), start + 5 * kMs);
}

// fixed:MBPS / bbr: no policy, so the rate stays and the row only measures. 125 ms MI, 6000 B
// sent, two packets ACKed (1500 B each, RTT 10 and 30 ms), 1500 B lost.
TEST(DecisionLoop, WithoutPolicyTheRowMeasuresAndNothingIsDecided) {
  Rig r(nullptr, 0, {});
  const uint64_t start = kT0 + 1000 * kMs;
  r.Attach(start);
  r.flow.rate_bps = 2.5e6;  // 20 Mbit/s
  r.min_rtt = 0.008;
  MonitorStats mi;
  mi.AddSample(1500, 0.010, 0.001);
  mi.AddSample(1500, 0.030, 0.002);
  mi.lost = 1500;
  r.Close(start + 125 * kMs, 6000, mi);
  EXPECT_EQ(r.flow.rate_bps.load(), 2.5e6);
  EXPECT_EQ(r.flow.cwnd_bytes.load(), 1e30);
  const auto rows = Rows(r.log);
  ASSERT_EQ(rows.size(), 1u);
  const auto& c = rows[0];
  EXPECT_NEAR(Num(c[0]), 1.125, 1e-12);   // t_s: 1.125 s after t0
  EXPECT_NEAR(Num(c[1]), 0.125, 1e-12);   // mi_s
  EXPECT_NEAR(Num(c[2]), 20.0, 1e-12);    // rate_mbps in force
  EXPECT_EQ(c[3], "-1");                  // no window
  EXPECT_NEAR(Num(c[4]), 0.384, 1e-12);   // 6000 B x 8 / 0.125 s
  EXPECT_NEAR(Num(c[5]), 0.192, 1e-12);   // 3000 B x 8 / 0.125 s
  EXPECT_NEAR(Num(c[6]), 1.0 / 3, 1e-12); // 1500 / 4500
  EXPECT_NEAR(Num(c[7]), 20.0, 1e-9);     // byte-weighted mean RTT
  EXPECT_NEAR(Num(c[8]), 10.0, 1e-9);
  EXPECT_NEAR(Num(c[9]), 30.0, 1e-9);
  EXPECT_NEAR(Num(c[10]), 8.0, 1e-12);    // the flow's min RTT
  EXPECT_EQ(c[11], "nan");                // no action
  EXPECT_EQ(c[12], "0");                  // no decision time
  EXPECT_EQ(c[13], "");                   // no goal
  EXPECT_EQ(c[14], "0");
  // A second MI 50 ms later: one more row; counters for the summary.
  r.Close(start + 175 * kMs, 3000);
  const auto& k = r.loop->counters();
  EXPECT_EQ(k.mi_rows, 2u);
  EXPECT_EQ(k.decisions, 0u);
  EXPECT_NEAR(k.mi_sum_s, 0.175, 1e-12);
  EXPECT_NEAR(k.max_gap_s, 0.050, 1e-12);
  json s = json::object();
  r.loop->AddSummary(&s, "x.safetensors", false, true);
  EXPECT_TRUE(s.empty()) << s.dump();
}

// The first decision on the empty history, then two MIs: the window slides oldest-first and
// each decision acts on the rate in force.
TEST(DecisionLoop, PolicyDecidesOnTheSlidingWindow) {
  Rig r(RatePolicy(), 1, {0.4f});
  EXPECT_EQ(r.loop->window(), (std::vector<float>{0.4f, 0.4f}));
  // --init-mbps 8 given: 1e6 B/s; a = 0.5 x 0.4 + 0.4 = 0.6 -> x 1.3.
  const auto d = r.Start(1e6, true);
  ExpectRel(d.rate, 1.3e6);
  EXPECT_EQ(d.cwnd, 1e30);
  EXPECT_NEAR(d.action, 0.6, 1e-6);
  r.Attach();
  // MI 1 (20 ms, 5000 B sent): feature 1.0 -> window (0.4, 1.0), a = 1.2 -> x 1.6 = 2.08e6.
  r.features->next = {1.0f};
  r.Close(kT0 + 20 * kMs, 5000);
  EXPECT_EQ(r.loop->window(), (std::vector<float>{0.4f, 1.0f}));
  ExpectRel(r.flow.rate_bps.load(), 2.08e6);
  EXPECT_NEAR(r.features->last_mi.duration, 0.020, 1e-12);
  EXPECT_EQ(r.features->last_mi.sent, 5000.0);
  EXPECT_NEAR(r.features->last_mi.active, 0.020, 1e-12);
  // MI 2 (30 ms, 7000 B more): feature -1 -> window (1.0, -1.0), a = -0.5 -> / 1.25 = 1.664e6.
  r.features->next = {-1.0f};
  r.Close(kT0 + 50 * kMs, 7000);
  EXPECT_EQ(r.loop->window(), (std::vector<float>{1.0f, -1.0f}));
  ExpectRel(r.flow.rate_bps.load(), 1.664e6);
  EXPECT_EQ(r.features->last_mi.sent, 7000.0);  // this MI's bytes, not the total
  EXPECT_NEAR(r.features->last_mi.duration, 0.030, 1e-12);
  const auto rows = Rows(r.log);
  ASSERT_EQ(rows.size(), 2u);
  ExpectRel(Num(rows[0][2]), 10.4);  // rate in force during MI 1: 1.3e6 B/s
  EXPECT_NEAR(Num(rows[0][11]), 1.2, 1e-6);  // the decision after it
  ExpectRel(Num(rows[1][2]), 16.64);
  EXPECT_NEAR(Num(rows[1][11]), -0.5, 1e-6);
  EXPECT_EQ(rows[1][13], "");  // goal_dim 0, no --goal
  EXPECT_EQ(r.loop->counters().decisions, 2u);
  json s = json::object();
  r.loop->AddSummary(&s, "p.safetensors", false, false);
  EXPECT_EQ(s["decisions"], 2);
  EXPECT_NEAR(s["initial_action"].get<double>(), 0.6, 1e-6);
  EXPECT_EQ(s["policy"]["file"], "p.safetensors");
  EXPECT_EQ(s["policy"]["features"], "test");
  EXPECT_FALSE(s.contains("goal"));
  EXPECT_FALSE(s.contains("goal_changes"));
  EXPECT_FALSE(s.contains("tuning_steps"));
}

// Without --init-mbps the feature set's start rate is used.
TEST(DecisionLoop, StartUsesTheFeatureSetsRateUnlessGiven) {
  Rig r(RatePolicy(), 1, {0.0f});
  r.features->start_rate = 5e5;
  EXPECT_NEAR(r.Start(1e6, false).rate, 5e5, 1e-6);  // a = 0: unchanged
  Rig g(RatePolicy(), 1, {0.0f});
  g.features->start_rate = 5e5;
  EXPECT_NEAR(g.Start(1e6, true).rate, 1e6, 1e-6);
}

// The action block's [min_mbps, max_mbps] = [1, 40] Mbit/s bounds every decision.
TEST(DecisionLoop, RateIsClampedToTheActionBounds) {
  Rig r(RatePolicy(), 1, {0.0f});
  r.Start(2.5e6, true);  // 20 Mbit/s, a = 0
  r.Attach();
  uint64_t t = kT0;
  auto mbps = [&]() { return r.flow.rate_bps.load() * 8 / 1e6; };
  r.features->next = {2.0f};  // a = clip(x_old / 2 + 2) = 2: doubles
  r.Close(t += 10 * kMs, 0);
  EXPECT_NEAR(mbps(), 40.0, 1e-9);
  r.Close(t += 10 * kMs, 0);
  EXPECT_NEAR(mbps(), 40.0, 1e-9);  // 80 clamped
  r.features->next = {-10.0f};      // a = -2: halves
  const double want[] = {40.0, 20.0, 10.0, 5.0, 2.5, 1.25, 1.0, 1.0};
  for (int i = 1; i < 8; ++i) {
    r.Close(t += 10 * kMs, 0);
    EXPECT_NEAR(mbps(), want[i], 1e-9) << "halving " << i;  // 0.625 clamped to 1
  }
}

// An MI without ACKs: the row has zero throughput/RTT figures and a window action is paced at
// 2 cwnd over the flow's min RTT (1 ms when none), not over the MI's (absent) mean RTT.
TEST(DecisionLoop, IntervalWithoutAcksPacesTheWindowOnTheFlowMinRtt) {
  Rig r(WindowPolicy(), 1, {0.0f});
  // Start: 10 x 1500 = 15000 B; empty feature 0 -> action 0: 12000 B at 2 x 12000 / 0.1 s.
  const auto d = r.Start(1e6, true, 0.1);
  EXPECT_EQ(d.cwnd, 12000.0);
  EXPECT_NEAR(d.rate, 240000.0, 1e-6);
  EXPECT_EQ(d.action, 0.0);
  r.Attach();
  r.min_rtt = 0.004;
  r.features->next = {1.0f};  // action 2: +3000 B
  r.Close(kT0 + 10 * kMs, 15000);
  EXPECT_EQ(r.flow.cwnd_bytes.load(), 15000.0);
  EXPECT_NEAR(r.flow.rate_bps.load(), 2 * 15000 / 0.004, 1e-3);
  auto rows = Rows(r.log);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][3], "12000");              // cwnd in force during the MI
  EXPECT_NEAR(Num(rows[0][4]), 12.0, 1e-9);    // 15000 B x 8 / 10 ms
  EXPECT_EQ(rows[0][5], "0");                  // throughput
  EXPECT_EQ(rows[0][6], "0");                  // loss
  EXPECT_EQ(rows[0][7], "0");                  // rtt_mean_ms
  EXPECT_EQ(rows[0][8], "0");                  // rtt_min_ms: no sample
  EXPECT_EQ(rows[0][9], "0");                  // rtt_max_ms
  EXPECT_NEAR(Num(rows[0][10]), 4.0, 1e-12);
  EXPECT_EQ(rows[0][11], "2");
  EXPECT_GE(Num(rows[0][12]), 0.0);
  // No RTT sample at all yet: srtt = 1 ms.
  Rig r0(WindowPolicy(), 1, {0.0f});
  r0.Start(1e6, true, 0.1);
  r0.Attach();
  r0.features->next = {1.0f};
  r0.Close(kT0 + 10 * kMs, 0);
  EXPECT_NEAR(r0.flow.rate_bps.load(), 2 * 15000 / 0.001, 1e-3);
  // With ACKs the MI's mean RTT (25 ms) paces it.
  MonitorStats mi;
  mi.AddSample(1000, 0.025, 0.001);
  r.Close(kT0 + 20 * kMs, 0, mi);
  EXPECT_EQ(r.flow.cwnd_bytes.load(), 18000.0);
  EXPECT_NEAR(r.flow.rate_bps.load(), 2 * 18000 / 0.025, 1e-3);
}

// A goal from the control input is taken by the next decision (its --log row shows it) and
// recorded in goal_changes with the decision count before it.
TEST(DecisionLoop, PendingGoalChangeAppliesAtTheNextDecision) {
  DecisionOptions opt = Raw();
  opt.goal = {1.0f / 3, 1.0f / 3, 1.0f / 3};
  Rig r(GoalPolicy(1), 1, {0.0f}, opt);
  r.Start(1e6, true);  // a = 0
  r.Attach();
  r.Close(kT0 + 100 * kMs, 0);
  EXPECT_NEAR(r.flow.rate_bps.load(), 1e6, 1e-6);  // equal weights: a = 0
  {
    std::lock_guard<std::mutex> lk(r.gc.mu);
    r.gc.goal = {0.6f, 0.2f, 0.2f};
    r.gc.is_target = false;
    r.gc.received_s = 0.15;
    r.gc.line = 4;
    r.gc.pending = true;
  }
  r.Close(kT0 + 200 * kMs, 0);
  EXPECT_FALSE(r.gc.pending.load());
  ExpectRel(r.flow.rate_bps.load(), 1.2e6);  // a = 0.6 - 0.2 = 0.4 -> x 1.2
  EXPECT_EQ(r.loop->goal(), (std::vector<float>{0.6f, 0.2f, 0.2f}));
  const auto rows = Rows(r.log);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][13], "0.33333334;0.33333334;0.33333334");
  EXPECT_EQ(rows[1][13], "0.6;0.2;0.2");
  ASSERT_EQ(r.loop->goal_changes().size(), 1u);
  const json& ch = r.loop->goal_changes()[0];
  EXPECT_EQ(ch["line"], 4);
  EXPECT_EQ(ch["decision"], 1);  // one decision before it
  EXPECT_DOUBLE_EQ(ch["received_s"].get<double>(), 0.15);
  EXPECT_NEAR(ch["applied_s"].get<double>(), 0.2, 1e-12);
  EXPECT_EQ(ch["goal"], json::parse("[0.6, 0.2, 0.2]"));
  EXPECT_NE(r.err.str().find("jaxcc-sender: goal 0.6;0.2;0.2 applied at decision 1 (t=0.2 s)"), std::string::npos)
      << r.err.str();
  json s = json::object();
  r.loop->AddSummary(&s, "p.safetensors", true, true);
  EXPECT_EQ(s["goal"], json::parse("[0.33333334, 0.33333334, 0.33333334]"));
  EXPECT_EQ(s["preference"], s["goal"]);  // the starting goal, not the one in force
  EXPECT_EQ(s["goal_changes"].size(), 1u);
  EXPECT_FALSE(s.contains("tuning_steps"));
}

// One MI of the tuning test: RTT samples and delivery, and the three measurements (features
// 4..6) the tuner averages.
struct TuneMi {
  double acked, rtt, dur_ms;
  float m0, m1, m2;
};

// --target: every tune_every = ceil(4 / mi_rtts) decisions the goal takes one GoalTuner step on
// the mean of those decisions' features 4..6, with the flow's max MI delivery rate and min RTT;
// the step's decision already uses the new goal, and the next interval's mean starts afresh.
TEST(DecisionLoop, GoalTuningStepsEveryFourRttsOnTheMeanMeasurement) {
  DecisionOptions opt = Raw();
  opt.mi_rtts = 1;
  opt.goal = {0.5f, 0.25f, 0.25f};
  opt.tuner = GoalTuner::Mode::kPaper;  // the reference steps below are on the interval's mean alone
  opt.target_given = true;
  opt.target = {8.0f, 5.0f, 0.01f};
  Rig r(GoalPolicy(7), 7, std::vector<float>(7, 0.0f), opt);
  EXPECT_EQ(r.loop->tune_every(), 4);
  ASSERT_NE(r.loop->tuner(), nullptr);
  r.Start(1e6, true, 0.1);
  r.Attach();
  // Delivery rates 1e6, 2e6 (the max), 0.5e6, 1e6 B/s, then 1e6 each; min RTT 12 ms (MI 2).
  const TuneMi mis[] = {{10000, 0.020, 10, 0.5f, 1.0f, 0.0f},  {20000, 0.012, 10, 0.25f, 1.5f, 0.0f},
                        {5000, 0.030, 10, 0.5f, 1.0f, 0.25f},  {10000, 0.016, 10, 0.25f, 1.5f, 0.25f},
                        {10000, 0.020, 10, 1.0f, 2.0f, 0.0f},  {10000, 0.020, 10, 1.0f, 2.0f, 0.0f},
                        {10000, 0.020, 10, 0.5f, 2.0f, 0.0f},  {10000, 0.020, 10, 0.5f, 2.0f, 0.0f}};
  uint64_t t = kT0;
  std::vector<std::vector<float>> goals;  // the goal in force after each decision
  for (const TuneMi& m : mis) {
    MonitorStats mi;
    mi.AddSample(m.acked, m.rtt, 0.001);
    r.features->next = {0, 0, 0, 0, m.m0, m.m1, m.m2};
    r.Close(t += static_cast<uint64_t>(m.dur_ms) * kMs, 0, mi);
    goals.push_back(r.loop->goal());
  }
  for (int i = 0; i < 3; ++i) EXPECT_EQ(goals[i], opt.goal) << "decision " << i + 1;
  // The reference: steps on the hand-computed means, (1.5/4, 5/4, 0.5/4) then (3/4, 8/4, 0),
  // with thr_max 2e6 B/s and min RTT 12 ms: the target in eq.-1 units is (0.5, 1 + 5/12, 0.01),
  // so the first mean misses throughput (0.375) and loss, meets delay (1.25).
  GoalTuner ref(opt.target, {0.5f, 0.25f, 0.25f}, GoalTuner::Mode::kPaper);
  ref.Step({0.375f, 1.25f, 0.125f}, 2e6f, 0.012f);
  const std::vector<float> want1(ref.goal().begin(), ref.goal().end());
  EXPECT_NE(want1, opt.goal);  // the step moved the goal
  for (int i = 3; i < 7; ++i) EXPECT_EQ(goals[i], want1) << "decision " << i + 1;
  ref.Step({0.75f, 2.0f, 0.0f}, 2e6f, 0.012f);
  const std::vector<float> want2(ref.goal().begin(), ref.goal().end());
  EXPECT_NE(want2, want1);
  EXPECT_EQ(goals[7], want2);
  EXPECT_EQ(r.loop->counters().tuning_steps, 2);
  // The last MI's rate (target 1.0: a jump-out) or the RTT guess of 100 ms (delay target 1.05:
  // missed) in place of the flow's figures would give other goals.
  for (auto [thr, rtt] : {std::pair<float, float>{1e6f, 0.012f}, {2e6f, 0.1f}}) {
    GoalTuner wrong(opt.target, {0.5f, 0.25f, 0.25f}, GoalTuner::Mode::kPaper);
    wrong.Step({0.375f, 1.25f, 0.125f}, thr, rtt);
    EXPECT_NE(std::vector<float>(wrong.goal().begin(), wrong.goal().end()), want1) << thr << " " << rtt;
  }
  const auto rows = Rows(r.log);
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[2][13], "0.5;0.25;0.25");
  EXPECT_EQ(rows[3][13], jaxcc::JoinGoal(want1));  // the 4th decision used the tuned goal
  EXPECT_NEAR(Num(rows[3][11]), static_cast<double>(want1[0] - want1[1]), 1e-6);  // a = g0 - g1
  EXPECT_EQ(rows[7][13], jaxcc::JoinGoal(want2));
  json s = json::object();
  r.loop->AddSummary(&s, "p.safetensors", false, false);
  EXPECT_EQ(s["tuning_steps"], 2);
  EXPECT_EQ(s["tuning_interval_decisions"], 4);
  EXPECT_EQ(s["goal_final"], jaxcc::GoalJson(want2));
  EXPECT_EQ(s["goal"], json::parse("[0.5, 0.25, 0.25]"));
  EXPECT_EQ(s["target"]["throughput_mbps"], 8.0);
  EXPECT_EQ(s["target"]["delay_ms"], 5.0);
  EXPECT_EQ(s["target"]["loss"], 0.01);
  EXPECT_EQ(s["tuning_met_steps"], ref.met_steps());
  EXPECT_EQ(s["tuning_first_met_step"], ref.first_met_step());
}

TEST(DecisionLoop, TuningIntervalIsFourRttsInDecisions) {
  for (auto [mi_rtts, want] : {std::pair<double, int>{1, 4}, {2, 2}, {0.5, 8}, {3, 2}, {8, 1}}) {
    DecisionOptions opt = Raw();
    opt.mi_rtts = mi_rtts;
    Rig r(nullptr, 0, {}, opt);
    EXPECT_EQ(r.loop->tune_every(), want) << "mi_rtts " << mi_rtts;
  }
}

// A target line starts tuning from the goal in force; a goal line then stops it.
TEST(DecisionLoop, TargetLineStartsTuningAndGoalLineStopsIt) {
  DecisionOptions opt = Raw();
  opt.mi_rtts = 2;  // a step every 2 decisions
  opt.goal = {0.4f, 0.4f, 0.2f};
  opt.tuner = GoalTuner::Mode::kPaper;  // the reference steps below are on the interval's mean alone
  Rig r(GoalPolicy(7), 7, std::vector<float>(7, 0.0f), opt);
  r.Start(1e6, true);
  r.Attach();
  EXPECT_EQ(r.loop->tuner(), nullptr);
  uint64_t t = kT0;
  MonitorStats mi;
  mi.AddSample(10000, 0.020, 0.001);
  r.features->next = {0, 0, 0, 0, 1.0f, 1.5f, 0.0f};
  r.Close(t += 10 * kMs, 0, mi);
  {
    std::lock_guard<std::mutex> lk(r.gc.mu);
    r.gc.is_target = true;
    r.gc.target = {20.0f, 5.0f, 0.01f};
    r.gc.line = 2;
    r.gc.received_s = 0.012;
    r.gc.pending = true;
  }
  r.Close(t += 10 * kMs, 0, mi);  // decision 2: tuner from (0.4, 0.4, 0.2), first measurement
  ASSERT_NE(r.loop->tuner(), nullptr);
  EXPECT_EQ(r.loop->tuner()->target(), (GoalTuner::Vec{20.0f, 5.0f, 0.01f}));
  EXPECT_EQ(r.loop->counters().tuning_steps, 0);
  EXPECT_NE(r.err.str().find("jaxcc-sender: target 20;5;0.01 applied at decision 1 (t=0.02 s)"), std::string::npos)
      << r.err.str();
  EXPECT_EQ(r.loop->goal_changes()[0]["target"], json::parse("[20, 5, 0.01]"));
  r.Close(t += 10 * kMs, 0, mi);  // decision 3: the step, on the two measurements since the line
  EXPECT_EQ(r.loop->counters().tuning_steps, 1);
  // Mean of two equal measurements; thr_max 10000 B / 10 ms = 1e6 B/s, min RTT 20 ms.
  GoalTuner ref({20.0f, 5.0f, 0.01f}, {0.4f, 0.4f, 0.2f}, GoalTuner::Mode::kPaper);
  ref.Step({1.0f, 1.5f, 0.0f}, 1e6f, 0.020f);
  EXPECT_EQ(r.loop->goal(), std::vector<float>(ref.goal().begin(), ref.goal().end()));
  r.Close(t += 10 * kMs, 0, mi);  // decision 4: half an interval
  {
    std::lock_guard<std::mutex> lk(r.gc.mu);
    r.gc.is_target = false;
    r.gc.goal = {0.2f, 0.7f, 0.1f};
    r.gc.line = 3;
    r.gc.pending = true;
  }
  for (int i = 0; i < 4; ++i) r.Close(t += 10 * kMs, 0, mi);  // decisions 5..8
  EXPECT_EQ(r.loop->tuner(), nullptr);
  EXPECT_EQ(r.loop->counters().tuning_steps, 1);
  EXPECT_EQ(r.loop->goal(), (std::vector<float>{0.2f, 0.7f, 0.1f}));
  json s = json::object();
  r.loop->AddSummary(&s, "p.safetensors", false, true);
  EXPECT_FALSE(s.contains("target"));  // no --target
  EXPECT_EQ(s["tuning_steps"], 1);     // but a step happened
  EXPECT_EQ(s["goal_final"], json::parse("[0.2, 0.7, 0.1]"));
  EXPECT_EQ(s["tuning_met_steps"], 0);  // the tuner is gone
  EXPECT_EQ(s["goal_changes"].size(), 2u);
  // A new target line: a new tuner from (0.2, 0.7, 0.1) whose first interval is the next two
  // decisions, not the half interval left over from decision 4.
  {
    std::lock_guard<std::mutex> lk(r.gc.mu);
    r.gc.is_target = true;
    r.gc.target = {20.0f, 5.0f, 0.01f};
    r.gc.line = 4;
    r.gc.pending = true;
  }
  r.features->next = {0, 0, 0, 0, 0.5f, 1.0f, 0.0f};
  r.Close(t += 10 * kMs, 0, mi);  // decision 9
  EXPECT_EQ(r.loop->counters().tuning_steps, 1);
  r.features->next = {0, 0, 0, 0, 1.5f, 1.0f, 0.5f};
  r.Close(t += 10 * kMs, 0, mi);  // decision 10: a step on (1, 1, 0.25)
  EXPECT_EQ(r.loop->counters().tuning_steps, 2);
  GoalTuner ref2({20.0f, 5.0f, 0.01f}, {0.2f, 0.7f, 0.1f}, GoalTuner::Mode::kPaper);
  ref2.Step({1.0f, 1.0f, 0.25f}, 1e6f, 0.020f);
  EXPECT_EQ(r.loop->goal(), std::vector<float>(ref2.goal().begin(), ref2.goal().end()));
}

// The control input on a pipe (no thread: the reader returns at end of input).
TEST(DecisionLoop, ControlInputKeepsTheLastAcceptedLine) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const std::string text =
      "# comment\n"
      "preference 0.2,0.3,0.5\n"
      "goal 1,0\n"
      "target 10,5,0.01\n"
      "warp 9\n"
      "goal 0.1,0.1,0.8";  // a last line without a newline
  ASSERT_EQ(write(p[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(p[1]);
  std::atomic<bool> stop{false};
  jaxcc::GoalControl gc;
  std::ostringstream err;
  jaxcc::ReadControlInput(p[0], &stop, &gc, "", "not a deepcc_v1 policy", 0, &err);
  close(p[0]);
  const std::string e = err.str();
  EXPECT_NE(e.find("jaxcc-sender: control line 2: preference 0.2,0.3,0.5 received at t="), std::string::npos) << e;
  EXPECT_NE(e.find("jaxcc-sender: control line 3 ignored: goal "), std::string::npos) << e;
  EXPECT_NE(e.find("jaxcc-sender: control line 4 ignored: not a deepcc_v1 policy"), std::string::npos) << e;
  EXPECT_NE(e.find("jaxcc-sender: control line 5 ignored: unknown command"), std::string::npos) << e;
  EXPECT_NE(e.find("jaxcc-sender: control line 6: goal 0.1,0.1,0.8 received at t="), std::string::npos) << e;
  EXPECT_TRUE(gc.pending.load());
  EXPECT_FALSE(gc.is_target);
  EXPECT_EQ(gc.line, 6);
  EXPECT_EQ(gc.goal, (std::vector<float>{0.1f, 0.1f, 0.8f}));
}

// A sender that cannot take a preference reports every such line and leaves nothing pending.
TEST(DecisionLoop, ControlInputRefusedWhenTheSenderCannotTakeIt) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const std::string text = "preference 0.2,0.3,0.5\n" + std::string(5000, 'x') + "\n";
  ASSERT_EQ(write(p[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(p[1]);
  std::atomic<bool> stop{false};
  jaxcc::GoalControl gc;
  std::ostringstream err;
  jaxcc::ReadControlInput(p[0], &stop, &gc, "the controller is fixed:5", "x", 0, &err);
  close(p[0]);
  EXPECT_FALSE(gc.pending.load());
  EXPECT_NE(err.str().find("control line 1 ignored: the controller is fixed:5"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("control line 2 ignored: longer than 4096 bytes"), std::string::npos) << err.str();
}

TEST(DecisionLoop, GoalTextIsTheShortestRoundTrip) {
  EXPECT_EQ(jaxcc::ShortFloat(0.6f), "0.6");
  EXPECT_EQ(jaxcc::ShortFloat(1.0f / 3), "0.33333334");
  EXPECT_EQ(jaxcc::JoinGoal({0.5f, 0.25f, 1.0f}), "0.5;0.25;1");
  EXPECT_EQ(jaxcc::JoinGoal({}), "");
  EXPECT_EQ(jaxcc::GoalJson({0.6f, 0.2f}), json::parse("[0.6, 0.2]"));
}

TEST(DecisionLoop, RejectsAPolicyWithoutMatchingFeatures) {
  EXPECT_THROW({ DecisionLoop l(RatePolicy(), nullptr, {}); }, std::invalid_argument);
  EXPECT_THROW({ DecisionLoop l(RatePolicy(), std::make_unique<ScriptedFeatures>(2, std::vector<float>{0, 0}), {}); },
               std::invalid_argument);
}

// An MI with ACKs and an RTT sample (20 ms): what makes the path "answered".
MonitorStats Answered() {
  MonitorStats mi;
  mi.AddSample(1000, 0.02, 0.001);
  return mi;
}

// The guard: once the path has answered, a decision on an MI with neither an ACK nor an RTT
// sample may lower the rate but not raise it; with feedback the same action raises it.
TEST(DecisionLoop, NoIncreaseWithoutFeedback) {
  Rig r(RatePolicy(), 1, {0.0f}, DecisionOptions{});
  r.Start(1e6, true);  // a = 0
  r.Attach();
  uint64_t t = kT0;
  r.Close(t += 10 * kMs, 5000, Answered());  // feature 0: a = 0
  ExpectRel(r.flow.rate_bps.load(), 1e6);
  r.features->next = {1.0f};  // window (0, 1): a = 1 -> x 1.5, held at 1e6
  r.Close(t += 10 * kMs, 5000);
  ExpectRel(r.flow.rate_bps.load(), 1e6);
  r.features->next = {-1.0f};  // window (1, -1): a = -0.5 -> / 1.25 = 8e5, a decrease passes
  r.Close(t += 10 * kMs, 5000);
  ExpectRel(r.flow.rate_bps.load(), 8e5);
  r.features->next = {1.0f};  // ACKs: window (-1, 1): a = 0.5 -> x 1.25 = 1e6
  r.Close(t += 10 * kMs, 5000, Answered());
  ExpectRel(r.flow.rate_bps.load(), 1e6);
  const auto rows = Rows(r.log);
  ASSERT_EQ(rows.size(), 4u);
  const char* want[] = {"policy", "guard", "policy", "policy"};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(rows[i][15], want[i]) << "row " << i;
  json s = json::object();
  r.loop->AddSummary(&s, "p.safetensors", false, false);
  EXPECT_EQ(s["safety"]["enabled"], true);
  EXPECT_EQ(s["safety"]["guarded_decisions"], 1);
  EXPECT_EQ(s["safety"]["fallbacks"], 0);
  EXPECT_FALSE(r.bbr_drives);
}

// Before the path's first answer (no RTT sample yet) neither the guard nor the monitor acts:
// a first round trip without ACKs is the path's delay. Here 30 dark 10 ms MIs raise the rate.
TEST(DecisionLoop, SafetyNetWaitsForTheFirstAnswer) {
  Rig r(RatePolicy(), 1, {0.0f}, DecisionOptions{});
  r.Start(1e6, true);
  r.Attach();
  r.features->next = {1.0f};  // a = 1, then 1.5: x 1.5, x 1.75 ... to the 40 Mbit/s bound
  for (int i = 1; i <= 30; ++i) r.Close(kT0 + i * 10 * kMs, 5000);
  EXPECT_NEAR(r.flow.rate_bps.load() * 8 / 1e6, 40.0, 1e-9);
  EXPECT_FALSE(r.bbr_drives);
  EXPECT_EQ(r.loop->monitor()->bad_run(), 0);
  EXPECT_EQ(r.loop->counters().guarded_decisions, 0u);
}

// The raw policy (--raw-policy): a dark MI after ACKs raises the rate, no monitor.
TEST(DecisionLoop, RawPolicyHasNoSafetyNet) {
  Rig r(RatePolicy(), 1, {0.0f});
  r.Start(1e6, true);
  r.Attach();
  r.Close(kT0 + 10 * kMs, 5000, Answered());
  r.features->next = {1.0f};
  for (int i = 2; i <= 6; ++i) r.Close(kT0 + i * 10 * kMs, 5000);
  EXPECT_NEAR(r.flow.rate_bps.load() * 8 / 1e6, 40.0, 1e-9);  // raised to the action's bound
  EXPECT_FALSE(r.bbr_drives);
  EXPECT_EQ(r.loop->monitor(), nullptr);
  json s = json::object();
  r.loop->AddSummary(&s, "p.safetensors", false, false);
  EXPECT_EQ(s["safety"], (json{{"enabled", false}}));
}

// The monitor (mi_rtts 1: 3 MIs each way, 100 ms MIs): after the path has answered, three
// dark MIs hand the pacing to BBR, which the ACK thread then publishes; the policy observes but
// does not decide; three MIs with ACKs and little loss hand it back, and the policy decides on
// that MI from BBR's rate, its window the one it had set.
TEST(DecisionLoop, MonitorHandsThePacingToBbrAndBack) {
  Rig r(WindowPolicy(), 1, {0.0f}, DecisionOptions{});
  EXPECT_EQ(r.loop->monitor()->enter_mis(), 3);
  EXPECT_EQ(r.loop->monitor()->exit_mis(), 3);
  r.Start(1e6, true, 0.1);  // 12000 B
  r.Attach();
  uint64_t t = kT0;
  r.features->next = {-1.0f};  // action 0: -3000 B each MI
  r.Close(t += 100 * kMs, 1000, Answered());  // 9000 B at 2 x 9000 / 20 ms
  EXPECT_EQ(r.flow.cwnd_bytes.load(), 9000.0);
  EXPECT_NEAR(r.flow.rate_bps.load(), 900000.0, 1e-6);
  r.Close(t += 100 * kMs, 1000);  // dark: 6000 B, allowed; its pacing at 2 cwnd / 1 ms (no
  r.Close(t += 100 * kMs, 1000);  // min RTT in the rig) would rise: held at 900000 B/s; 3000 B
  EXPECT_EQ(r.flow.cwnd_bytes.load(), 3000.0);
  EXPECT_NEAR(r.flow.rate_bps.load(), 900000.0, 1e-6);
  EXPECT_FALSE(r.bbr_drives);
  r.Close(t += 100 * kMs, 1000);  // the third dark MI: BBR paces from here, no decision taken
  EXPECT_TRUE(r.bbr_drives);
  EXPECT_TRUE(r.loop->bbr_paces());
  EXPECT_EQ(r.flow.cwnd_bytes.load(), 3000.0);
  r.flow.rate_bps = 3e6;  // what the ACK thread publishes for BBR
  r.flow.cwnd_bytes = 60000;
  MonitorStats lossy;  // loss 0.6: bad, keeps BBR pacing
  lossy.AddSample(400, 0.02, 0.001);
  lossy.lost = 600;
  r.Close(t += 100 * kMs, 1000, lossy);
  EXPECT_TRUE(r.bbr_drives);
  MonitorStats ok;  // loss 0.1: good
  ok.AddSample(900, 0.02, 0.001);
  ok.lost = 100;
  r.features->next = {1.0f};  // action 2: +3000 B
  r.Close(t += 100 * kMs, 1000, ok);
  r.Close(t += 100 * kMs, 1000, ok);
  EXPECT_TRUE(r.bbr_drives);
  EXPECT_EQ(r.flow.rate_bps.load(), 3e6);  // the policy has not decided
  r.Close(t += 100 * kMs, 1000, ok);       // the third good MI: back to the policy
  EXPECT_FALSE(r.bbr_drives);
  EXPECT_EQ(r.flow.cwnd_bytes.load(), 6000.0);  // its window 3000 + 3000, paced at 2 cwnd / 20 ms
  EXPECT_NEAR(r.flow.rate_bps.load(), 2 * 6000 / 0.02, 1e-3);
  const auto rows = Rows(r.log);
  ASSERT_EQ(rows.size(), 8u);
  const char* want[] = {"policy", "guard", "guard", "bbr", "bbr", "bbr", "bbr", "policy"};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(rows[i][15], want[i]) << "row " << i;
  EXPECT_NEAR(Num(rows[7][2]), 24.0, 1e-9);  // BBR's 3e6 B/s in force during the last MI
  EXPECT_NEAR(Num(rows[0][1]), 0.1, 1e-12);  // mi_s
  json s = json::object();
  r.loop->AddSummary(&s, "p.safetensors", false, false);
  EXPECT_EQ(s["safety"]["fallbacks"], 1);
  EXPECT_EQ(s["safety"]["fallback_mis"], 4);  // MIs 5-8 were paced by BBR
  EXPECT_EQ(s["safety"]["guarded_decisions"], 2);
  ASSERT_EQ(s["safety"]["events"].size(), 2u);
  EXPECT_EQ(s["safety"]["events"][0]["to"], "bbr");
  EXPECT_EQ(s["safety"]["events"][0]["decision"], 3);
  EXPECT_EQ(s["safety"]["events"][1]["to"], "policy");
  EXPECT_EQ(s["safety"]["events"][1]["why"], "safety monitor: link recovered");
  EXPECT_NE(r.err.str().find("safety monitor: out of the envelope: bbr paces"), std::string::npos);
}

// A streak is broken by an MI that is not bad: two dark MIs, one with ACKs, two dark again
// never reach three in a row. An Eagle-like MI of 3 RTTs (100 ms RTT) trips after one.
TEST(DecisionLoop, MonitorCountsBadIntervalsInARow) {
  Rig r(RatePolicy(), 1, {0.0f}, DecisionOptions{});
  r.Start(1e6, true);
  r.Attach();
  uint64_t t = kT0;
  r.Close(t += 100 * kMs, 1000, Answered());
  for (int i = 0; i < 2; ++i) r.Close(t += 100 * kMs, 1000);
  r.Close(t += 100 * kMs, 1000, Answered());
  for (int i = 0; i < 2; ++i) r.Close(t += 100 * kMs, 1000);
  EXPECT_FALSE(r.bbr_drives);
  EXPECT_EQ(r.loop->monitor()->bad_run(), 2);
  DecisionOptions three;
  three.mi_rtts = 3;
  Rig e(RatePolicy(), 1, {0.0f}, three);
  EXPECT_EQ(e.loop->monitor()->enter_mis(), 1);
  e.Start(1e6, true);
  e.Attach();
  e.Close(kT0 + 300 * kMs, 1000, Answered());
  EXPECT_FALSE(e.bbr_drives);
  e.Close(kT0 + 600 * kMs, 1000);
  EXPECT_TRUE(e.bbr_drives);
}

// However many MIs, the streak must last 200 ms (Linux's minimum RTO) in all: 10 ms MIs (a
// sub-millisecond path's MIs are floored by --min-mi-ms) hand over at the 20th, not the 3rd.
TEST(DecisionLoop, MonitorWaitsTheMinimumRto) {
  Rig r(RatePolicy(), 1, {0.0f}, DecisionOptions{});
  r.Start(1e6, true);
  r.Attach();
  r.Close(kT0 + 10 * kMs, 1000, Answered());
  for (int i = 2; i <= 20; ++i) r.Close(kT0 + i * 10 * kMs, 1000);
  EXPECT_FALSE(r.bbr_drives);
  EXPECT_NEAR(r.loop->monitor()->bad_s(), 0.19, 1e-9);
  r.Close(kT0 + 210 * kMs, 1000);
  EXPECT_TRUE(r.bbr_drives);
}

// A policy with the safety net needs the ACK thread's BBR to hand the pacing to.
TEST(DecisionLoop, SafetyNeedsTheAckThreadsBbr) {
  DecisionLoop loop(RatePolicy(), std::make_unique<ScriptedFeatures>(1, std::vector<float>{0.0f}), DecisionOptions{});
  FlowShared flow{16};
  std::atomic<double> min_rtt{0};
  DecisionIo io;
  io.flow = &flow;
  io.min_rtt = &min_rtt;
  EXPECT_THROW(loop.Attach(io), std::invalid_argument);
}

}  // namespace
