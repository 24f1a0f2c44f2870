#include "decision_loop.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "clock.h"
#include "learner_link.h"
#include "pacer.h"
#include "preference.h"

namespace jaxcc {

std::string ShortFloat(float x) {
  char buf[32];
  for (int prec = 6; prec <= 9; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*g", prec, static_cast<double>(x));
    if (std::strtof(buf, nullptr) == x) break;
  }
  return buf;
}

std::string JoinGoal(const std::vector<float>& g) {
  std::string s;
  for (size_t i = 0; i < g.size(); ++i) s += (i ? ";" : "") + ShortFloat(g[i]);
  return s;
}

nlohmann::json GoalJson(const std::vector<float>& g) {
  nlohmann::json a = nlohmann::json::array();
  for (float x : g) a.push_back(std::strtod(ShortFloat(x).c_str(), nullptr));
  return a;
}

void WriteDecisionLogHeader(std::ostream& log) {
  log.precision(17);
  log << "t_s,mi_s,rate_mbps,cwnd_bytes,sent_mbps,throughput_mbps,loss,rtt_mean_ms,rtt_min_ms,rtt_max_ms,"
         "min_rtt_ms,action,decision_us,goal,weight_version,control\n";
}

void ReadControlInput(int fd, const std::atomic<bool>* stop, GoalControl* gc, const std::string& why_not,
                      const std::string& why_not_target, uint64_t t0_ns, std::ostream* err) {
  std::ostream& out = err ? *err : std::cerr;
  std::string buf;
  char chunk[4096];
  int line_no = 0;
  constexpr size_t kMaxLine = 4096;
  auto handle = [&](const std::string& line) {
    ++line_no;
    const ControlLine c = ParseControlLine(line);
    if (c.kind == ControlLine::kNothing) return;
    const bool is_target = c.kind == ControlLine::kTarget;
    const std::string& why = c.kind == ControlLine::kError ? c.error : (is_target ? why_not_target : why_not);
    if (!why.empty()) {
      out << "jaxcc-sender: control line " << line_no << " ignored: " << why << "\n";
      return;
    }
    const double t = (MonoNs() - t0_ns) * 1e-9;
    {
      std::lock_guard<std::mutex> lk(gc->mu);
      gc->is_target = is_target;
      if (is_target) {
        gc->target = c.target;
      } else {
        gc->goal.assign(c.preference.begin(), c.preference.end());
      }
      gc->received_s = t;
      gc->line = line_no;
      gc->pending.store(true);
    }
    const auto& v = is_target ? c.target : c.preference;
    out << "jaxcc-sender: control line " << line_no << ": "
        << (is_target ? "target " : c.kind == ControlLine::kGoal ? "goal " : "preference ") << v[0] << ","
        << v[1] << "," << v[2] << " received at t=" << t << " s\n";
  };
  bool skipping = false;  // inside an over-long line, already reported: drop up to its newline
  while (!stop->load()) {
    pollfd pfd{fd, POLLIN, 0};
    const int r = poll(&pfd, 1, 50);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    if (r == 0) continue;
    const ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;  // EOF or error: no more changes, the run goes on
    for (ssize_t i = 0; i < n; ++i) {
      const char ch = chunk[i];
      if (ch == '\n') {
        if (!skipping) handle(buf);
        skipping = false;
        buf.clear();
      } else if (!skipping) {
        buf.push_back(ch);
        if (buf.size() > kMaxLine) {
          out << "jaxcc-sender: control line " << ++line_no << " ignored: longer than " << kMaxLine << " bytes\n";
          skipping = true;
          buf.clear();
        }
      }
    }
  }
  if (!buf.empty() && !skipping && !stop->load()) handle(buf);  // a last line without a newline
}

namespace {

// The number the --log column `action` and the summary's initial_action show: the discrete
// index, else the first mapped value (0 when there is none).
double ActionOf(const PolicyOutput& out) {
  return out.index >= 0 ? out.index : (out.values.empty() ? 0.0 : out.values[0]);
}

}  // namespace

DecisionLoop::DecisionLoop(std::unique_ptr<Policy> policy, std::unique_ptr<FeatureFn> features, DecisionOptions opt)
    : policy_(std::move(policy)),
      features_(std::move(features)),
      keep_rtts_(features_ && features_->NeedsRttSamples()),
      opt_(std::move(opt)), goal_(opt_.goal), initial_goal_(opt_.goal) {
  if (!policy_ != !features_) throw std::invalid_argument("DecisionLoop: a policy needs its feature function");
  if (policy_) {
    if (features_->dim() != policy_->obs_dim())
      throw std::invalid_argument("DecisionLoop: the features' dim is not the policy's obs_dim");
    // The history padding (spec.features.empty), as in the environment's reset.
    const std::vector<float> empty = features_->Empty();
    for (int t = 0; t < policy_->history(); ++t) window_.insert(window_.end(), empty.begin(), empty.end());
    feat_.assign(policy_->obs_dim(), 0.0f);
    if (opt_.target_given) {
      if (goal_.size() != static_cast<size_t>(GoalTuner::kDim))
        throw std::invalid_argument("DecisionLoop: goal tuning needs a goal of 3 values");
      tuner_ = std::make_unique<GoalTuner>(opt_.target, GoalTuner::Vec{goal_[0], goal_[1], goal_[2]}, opt_.tuner);
    }
    if (opt_.safety)
      monitor_ = std::make_unique<SafetyMonitor>(MisFor(kEnterRtts, opt_.mi_rtts), MisFor(kExitRtts, opt_.mi_rtts));
  }
  tune_every_ = GoalTuner::IntervalDecisions(opt_.mi_rtts);
}

FirstDecision DecisionLoop::Start(double init_rate, bool init_rate_given, size_t packet_size, double rtt_hint_s) {
  double cwnd = policy_->action().type == ActionType::kCwndTable ? 10.0 * packet_size : 1e30;
  double paper_rate = init_rate;
  features_->SetRttGuess(rtt_hint_s);
  features_->Start(&paper_rate, &cwnd);
  const double rate = init_rate_given ? init_rate : paper_rate;
  FirstDecision d;
  d.rate = rate;
  d.cwnd = cwnd;
  const PolicyOutput& out = policy_->Apply(window_.data(), goal_.empty() ? nullptr : goal_.data());
  jaxcc::Decide(*policy_, features_.get(), out, RunningStats(), rate, cwnd, features_->rtt_guess(), &d.rate, &d.cwnd);
  d.action = ActionOf(out);
  initial_action_ = d.action;
  return d;
}

void DecisionLoop::Attach(const DecisionIo& io) {
  if (!io.flow || !io.min_rtt) throw std::invalid_argument("DecisionLoop: DecisionIo needs flow and min_rtt");
  if (monitor_ && (!io.ack_mu || !io.bbr_drives))
    throw std::invalid_argument(
        "DecisionLoop: a policy's safety monitor needs the ACK thread's BBR (ack_mu, bbr_drives)");
  io_ = io;
  rec_.assign(io_.link && policy_ ? proto::kRecordHead + policy_->obs_dim() : 0, 0.0);
}

void DecisionLoop::BeginInterval(uint64_t start_ns) {
  mi_start_ = start_ns;
  end_fixed_ = false;
}

uint64_t DecisionLoop::IntervalEnd(double min_rtt_s) {
  if (!end_fixed_) {
    end_fixed_ = min_rtt_s > 0;
    const double mi_s =
        std::max(end_fixed_ ? opt_.mi_rtts * min_rtt_s : opt_.initial_mi_ms * 1e-3, opt_.min_mi_ms * 1e-3);
    end_ = mi_start_ + static_cast<uint64_t>(mi_s * 1e9);
  }
  return end_;
}

std::ostream& DecisionLoop::err() const { return io_.err ? *io_.err : std::cerr; }

void DecisionLoop::CloseInterval(MonitorStats mi, uint64_t now_ns) {
  FlowShared* sh = io_.flow;
  DecisionCounters& c = counters_;
  const uint64_t sent_now = sh->sent_bytes.load();
  mi.sent = static_cast<double>(sent_now - sent_prev_);
  sent_prev_ = sent_now;
  mi.duration = (now_ns - mi_start_) * 1e-9;
  mi.active = mi.duration;
  run_.Update(mi);
  if (prev_decision_ns_) c.max_gap_s = std::max(c.max_gap_s, (now_ns - prev_decision_ns_) * 1e-9);
  prev_decision_ns_ = now_ns;
  c.mi_sum_s += mi.duration;
  // The safety net engages once the path has answered (src/safety.h).
  answered_ = run_.min_rtt < kBig * 0.5;
  if (monitor_) monitor_->Step(mi.acked, mi.lost, mi.n_samples, mi.duration, answered_);
  if (io_.bbr_drives && (monitor_ || io_.link)) HandOverToBbr(now_ns);
  // What was in force during the MI (the --log row and the learner record show it).
  const double rate = sh->rate_bps.load(), cwnd = sh->cwnd_bytes.load();
  double action = std::nan("");
  double dec_us = 0;
  // A new goal from the control input: this decision uses it.
  if (policy_ && io_.goal_control && io_.goal_control->pending.load()) ApplyGoalChange(now_ns);
  if (policy_) PolicyDecision(mi, now_ns, rate, cwnd, &action, &dec_us);
  if (io_.log) {
    *io_.log << Ts(now_ns) << "," << mi.duration << "," << rate * 8 / 1e6 << "," << (cwnd >= 1e29 ? -1 : cwnd) << ","
             << mi.SendRate() * 8 / 1e6 << "," << mi.DeliveryRate() * 8 / 1e6 << "," << mi.LossRate() << ","
             << mi.RttMean() * 1e3 << "," << (mi.HasRtt() ? mi.rtt_min * 1e3 : 0.0) << "," << mi.rtt_max * 1e3 << ","
             << io_.min_rtt->load() * 1e3 << "," << action << "," << dec_us << ","
             << (policy_ ? JoinGoal(goal_) : std::string()) << "," << c.weight_version << "," << control_ << "\n";
  }
  ++c.mi_rows;
  BeginInterval(now_ns);
}

// BBR (fed by the ACK thread all along) paces while the safety monitor says so and, with
// --learner --fallback=bbr, while the learner is gone; then the policy resumes from the rate in
// force. The window the policy set is kept aside meanwhile and put back when it resumes.
void DecisionLoop::HandOverToBbr(uint64_t now_ns) {
  const bool gone = io_.link && io_.link->gone();
  const bool unsafe = monitor_ && monitor_->fallback();
  const bool fb = gone || unsafe;
  if (fb == in_fallback_) return;
  std::lock_guard<std::mutex> lk(*io_.ack_mu);  // the ACK thread publishes BBR's outputs under it
  *io_.bbr_drives = fb;
  if (fb) {
    saved_cwnd_ = io_.flow->cwnd_bytes.load();
  } else {
    io_.flow->cwnd_bytes.store(saved_cwnd_);
  }
  in_fallback_ = fb;
  const char* why = fb ? (unsafe ? "safety monitor: out of the envelope" : "learner gone")
                      : (by_monitor_ ? "safety monitor: link recovered" : "learner back");
  by_monitor_ = fb && unsafe;
  if (monitor_) {
    safety_events_.push_back(
        {{"t_s", Ts(now_ns)}, {"to", fb ? "bbr" : "policy"}, {"why", why}, {"decision", counters_.mi_rows}});
  }
  err() << "jaxcc-sender: " << why << ": " << (fb ? "bbr paces" : "the policy resumes") << " from decision "
        << counters_.mi_rows << " (t=" << Ts(now_ns) << " s)\n";
}

void DecisionLoop::ApplyGoalChange(uint64_t now_ns) {
  GoalControl& gc = *io_.goal_control;
  std::lock_guard<std::mutex> lk(gc.mu);
  gc.pending.store(false);
  const double applied_s = Ts(now_ns);
  const uint64_t decisions = counters_.decisions;
  nlohmann::json ch = {{"line", gc.line}, {"received_s", gc.received_s}, {"applied_s", applied_s},
                       {"decision", decisions}};
  if (gc.is_target) {  // tuning (re)starts from the goal in force; a running tuner keeps its history
    if (tuner_) {
      tuner_->set_target(gc.target);
    } else {
      tuner_ = std::make_unique<GoalTuner>(gc.target, GoalTuner::Vec{goal_[0], goal_[1], goal_[2]}, opt_.tuner);
      tune_acc_ = {};
      tune_n_ = 0;
      tune_delay_.clear();
    }
    const std::vector<float> tv(gc.target.begin(), gc.target.end());
    ch["target"] = GoalJson(tv);
    err() << "jaxcc-sender: target " << JoinGoal(tv) << " applied at decision " << decisions << " (t=" << applied_s
          << " s)\n";
  } else {  // a fixed goal: tuning stops
    goal_ = gc.goal;
    tuner_.reset();
    ch["goal"] = GoalJson(goal_);
    err() << "jaxcc-sender: goal " << JoinGoal(goal_) << " applied at decision " << decisions << " (t=" << applied_s
          << " s)\n";
  }
  goal_changes_.push_back(ch);
}

void DecisionLoop::PolicyDecision(const MonitorStats& mi, uint64_t now_ns, double rate, double cwnd, double* action,
                                  double* decision_us) {
  DecisionCounters& c = counters_;
  const uint64_t d0 = MonoNs();
  if (io_.link) {  // between two decisions: a validated newer policy from the learner
    std::unique_ptr<Policy> np;
    uint64_t v = 0;
    if (io_.link->TakeWeights(&np, &v, c.mi_rows, Ts(now_ns))) {
      policy_.swap(np);  // the old one is freed here, off the pacing and ACK paths
      c.weight_version = v;
      err() << "jaxcc-sender: weights version " << v << " applied at decision " << c.mi_rows << " (t=" << Ts(now_ns)
            << " s)\n";
    }
  }
  features_->Compute(mi, run_, feat_.data());
  thr_max_ = std::max(thr_max_, mi.DeliveryRate());
  if (tuner_) {  // §IV-C: a tuning step every tune_every decisions on their mean measurement
    for (int i = 0; i < GoalTuner::kDim; ++i) tune_acc_[i] += feat_[4 + i];
    tune_delay_.push_back(feat_[5]);
    if (++tune_n_ >= tune_every_) {
      GoalTuner::Vec mean;
      for (int i = 0; i < GoalTuner::kDim; ++i) mean[i] = tune_acc_[i] / static_cast<float>(tune_n_);
      tuner_->Step(mean, static_cast<float>(thr_max_), static_cast<float>(run_.KnownMinRtt(features_->rtt_guess())),
                   GoalTuner::DelayTail(tune_delay_));
      goal_.assign(tuner_->goal().begin(), tuner_->goal().end());
      tune_acc_ = {};
      tune_n_ = 0;
      tune_delay_.clear();
      ++c.tuning_steps;
    }
  }
  // Slide the window: drop the oldest step, append the newest (oldest first).
  const int D = policy_->obs_dim();
  std::memmove(window_.data(), window_.data() + D, sizeof(float) * (window_.size() - D));
  std::memcpy(window_.data() + window_.size() - D, feat_.data(), sizeof(float) * D);
  double new_rate = rate;
  control_ = in_fallback_ ? "bbr" : "policy";
  if (in_fallback_) {
    ++c.fallback_decisions;  // features and window stay current; BBR sets the rate
  } else {
    const PolicyOutput& out = policy_->Apply(window_.data(), goal_.empty() ? nullptr : goal_.data());
    double new_cwnd = cwnd;
    // A window action without a paper pacing rule is paced at twice window/RTT so the
    // window, not the pacer, limits the flow while bursts are still smoothed.
    const double srtt = mi.RttMean() > 0 ? mi.RttMean() : std::max(io_.min_rtt->load(), 1e-3);
    jaxcc::Decide(*policy_, features_.get(), out, run_, rate, cwnd, srtt, &new_rate, &new_cwnd);
    if (monitor_ && answered_ && NoFeedback(mi)) {  // no increase without feedback
      if (new_rate > rate || new_cwnd > cwnd) {
        ++c.guarded_decisions;
        control_ = "guard";
      }
      Guard(true, rate, cwnd, &new_rate, &new_cwnd);
    }
    io_.flow->rate_bps.store(new_rate);
    io_.flow->cwnd_bytes.store(new_cwnd);
    *action = ActionOf(out);
  }
  if (io_.link) {  // the decision's record: a memcpy into the bounded queue, never the socket
    rec_[0] = static_cast<double>(c.mi_rows);
    rec_[1] = Ts(now_ns);
    rec_[2] = static_cast<double>(c.weight_version);
    rec_[3] = *action;
    rec_[4] = rate;
    rec_[5] = in_fallback_ ? io_.flow->rate_bps.load() : new_rate;
    rec_[6] = run_.KnownMinRtt(0.0);
    MonitorSums(mi, &rec_[7]);
    rec_[23] = static_cast<double>(io_.link->records_dropped());
    for (int i = 0; i < D; ++i) rec_[proto::kRecordHead + i] = feat_[i];
    io_.link->PushRecord(rec_.data());
  }
  *decision_us = (MonoNs() - d0) * 1e-3;
  if (!in_fallback_) {
    ++c.decisions;
    c.decision_us_sum += *decision_us;
    c.decision_us_max = std::max(c.decision_us_max, *decision_us);
  }
}

void DecisionLoop::AddSummary(nlohmann::json* s, const std::string& policy_file, bool preference_given,
                              bool control_stdin) const {
  if (!policy_) return;
  nlohmann::json& j = *s;
  const DecisionCounters& c = counters_;
  j["policy"] = {{"file", policy_file}, {"algorithm", policy_->algorithm()},
                 {"features", policy_->feature_name()}, {"mi_rtts", policy_->mi_rtts()}};
  j["decisions"] = c.decisions;
  j["initial_action"] = initial_action_;
  j["decision_us_mean"] = c.decisions ? c.decision_us_sum / c.decisions : 0.0;
  j["decision_us_max"] = c.decision_us_max;
  if (policy_->goal_dim() > 0) j["goal"] = GoalJson(initial_goal_);
  if (preference_given) j["preference"] = GoalJson(initial_goal_);
  if (control_stdin) j["goal_changes"] = goal_changes_;
  j["safety"] = {{"enabled", monitor_ != nullptr}};
  if (monitor_) {
    j["safety"].update({{"enter_mis", monitor_->enter_mis()}, {"exit_mis", monitor_->exit_mis()},
                        {"fallbacks", monitor_->entries()}, {"fallback_mis", monitor_->fallback_mis()},
                        {"guarded_decisions", c.guarded_decisions}, {"events", safety_events_}});
  }
  if (opt_.target_given || c.tuning_steps > 0) {
    if (opt_.target_given)
      j["target"] = {{"throughput_mbps", GoalJson({opt_.target[0]})[0]}, {"delay_ms", GoalJson({opt_.target[1]})[0]},
                     {"loss", GoalJson({opt_.target[2]})[0]}};
    j["tuning_steps"] = c.tuning_steps;
    j["tuner"] = GoalTuner::ModeName(opt_.tuner);
    j["tuning_interval_decisions"] = tune_every_;
    j["goal_final"] = GoalJson(goal_);
    // The tuner's own judgement (src/goal_tuning.h): steps whose 4-RTT interval met the whole
    // target, and the first one (0: never) -- "how many tuning intervals it took".
    j["tuning_met_steps"] = tuner_ ? tuner_->met_steps() : 0;
    j["tuning_first_met_step"] = tuner_ ? tuner_->first_met_step() : 0;
  }
}

}  // namespace jaxcc
