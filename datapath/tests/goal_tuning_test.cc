// DeepCC's goal tuner (src/goal_tuning.h) against the Python tuner's vectors
// (tests/vectors/goal_tuning.txt, written by python -m jaxcc.parity_vectors) and by hand.
#include "goal_tuning.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using jaxcc::GoalTuner;

namespace {

struct Step {
  GoalTuner::Vec m, goal;
  float thr_max, min_rtt;
  std::vector<float> delays;  // "p95" cases: the interval's MI delay ratios
};
struct Case {
  std::string name;
  GoalTuner::Mode mode = GoalTuner::Mode::kPaper;
  GoalTuner::Vec target{}, g0{};
  std::vector<Step> steps;
};

std::vector<Case> ReadCases() {
  std::ifstream in(std::string(JAXCC_VECTORS_DIR) + "/goal_tuning.txt");
  EXPECT_TRUE(in.good()) << "missing tests/vectors/goal_tuning.txt";
  std::vector<Case> cases;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string tag;
    ss >> tag;
    if (tag.empty() || tag[0] == '#' || tag == "end") continue;
    if (tag == "case") {
      cases.emplace_back();
      ss >> cases.back().name;
    } else if (tag == "target") {
      for (float& x : cases.back().target) ss >> x;
    } else if (tag == "tuner") {
      std::string name;
      ss >> name;
      EXPECT_TRUE(GoalTuner::ParseMode(name, &cases.back().mode)) << line;
    } else if (tag == "goal0") {
      for (float& x : cases.back().g0) ss >> x;
    } else if (tag == "step" || tag == "pstep") {
      Step s;
      for (float& x : s.m) ss >> x;
      ss >> s.thr_max >> s.min_rtt;
      if (tag == "pstep") {
        int n = 0;
        ss >> n;
        s.delays.resize(n);
        for (float& x : s.delays) ss >> x;
      }
      for (float& x : s.goal) ss >> x;
      cases.back().steps.push_back(s);
    }
    EXPECT_FALSE(ss.fail()) << "bad vector line: " << line;
  }
  return cases;
}

TEST(GoalTuner, MatchesPythonVectors) {
  const std::vector<Case> cases = ReadCases();
  ASSERT_GE(cases.size(), 8u);
  int steps = 0, p95_cases = 0;
  for (const Case& c : cases) {
    GoalTuner t(c.target, c.g0, c.mode);
    p95_cases += c.mode == GoalTuner::Mode::kP95;
    for (size_t k = 0; k < c.steps.size(); ++k) {
      const Step& s = c.steps[k];
      t.Step(s.m, s.thr_max, s.min_rtt, GoalTuner::DelayTail(s.delays));
      for (int i = 0; i < 3; ++i)
        EXPECT_NEAR(t.goal()[i], s.goal[i], 1e-5) << c.name << " step " << k << " dim " << i;
      ++steps;
    }
    EXPECT_EQ(t.steps(), static_cast<int>(c.steps.size()));
  }
  EXPECT_GE(steps, 80);
  EXPECT_GE(p95_cases, 5);
}

// DelayTail: the nearest-rank 95th percentile, r = ceil(0.95 n): the max for n <= 20, the 20th
// smallest of 21, the 19th of 20.
TEST(GoalTuner, DelayTailByHand) {
  EXPECT_FLOAT_EQ(GoalTuner::DelayTail({1.3f, 1.1f, 1.9f, 1.2f}), 1.9f);
  std::vector<float> v21;
  for (int i = 21; i >= 1; --i) v21.push_back(static_cast<float>(i));
  EXPECT_FLOAT_EQ(GoalTuner::DelayTail(v21), 20.0f);
  std::vector<float> v20(v21.begin() + 1, v21.end());  // 20 .. 1
  EXPECT_FLOAT_EQ(GoalTuner::DelayTail(v20), 19.0f);
  EXPECT_FLOAT_EQ(GoalTuner::DelayTail({}), 0.0f);
}

// "p95", one step by hand: target (1 Mbit/s, 20 ms, 1 %), min RTT 0.1 s: T2 = 1.2. The interval's
// mean delay ratio 1.15 meets it, its tail 1.25 does not: 0.05 / 0.2 = 25 % of T2 over (no jump).
// Delay unmet: g3 follows g2, each gets Adam's first step +kLrP95 = +0.4; throughput and loss met.
// g = (0.7, 0.6, 0.5) / 1.8. The paper's tuner on the same step keeps the goal (all met).
TEST(GoalTuner, P95OneStepByHand) {
  ASSERT_FLOAT_EQ(GoalTuner::kLrP95, 0.4f);
  GoalTuner t({1.0f, 20.0f, 0.01f}, {0.7f, 0.2f, 0.1f}, GoalTuner::Mode::kP95);
  t.Step({0.9f, 1.15f, 0.0f}, 2e6f, 0.1f, 1.25f);
  EXPECT_NEAR(t.goal()[0], 0.7 / 1.8, 2e-6);
  EXPECT_NEAR(t.goal()[1], 0.6 / 1.8, 2e-6);
  EXPECT_NEAR(t.goal()[2], 0.5 / 1.8, 2e-6);
  GoalTuner paper({1.0f, 20.0f, 0.01f}, {0.7f, 0.2f, 0.1f}, GoalTuner::Mode::kPaper);
  paper.Step({0.9f, 1.15f, 0.0f}, 2e6f, 0.1f, 1.25f);
  EXPECT_FLOAT_EQ(paper.goal()[1], 0.2f);
  // Tail 1.4: 0.2 / 0.2 = 100 % of T2 over -> g2 and g3 also jump by 0.1: (0.7, 0.7, 0.6) / 2.
  GoalTuner j({1.0f, 20.0f, 0.01f}, {0.7f, 0.2f, 0.1f}, GoalTuner::Mode::kP95);
  j.Step({0.9f, 1.15f, 0.0f}, 2e6f, 0.1f, 1.4f);
  EXPECT_NEAR(j.goal()[1], 0.7 / 2.0, 2e-6);
  EXPECT_NEAR(j.goal()[2], 0.6 / 2.0, 2e-6);
}

// The tuner a target gets when none is named: "p95", as jaxcc.sim.controller.DEFAULT_TUNER.
TEST(GoalTuner, DefaultModeIsP95) { EXPECT_EQ(GoalTuner::kDefaultMode, GoalTuner::Mode::kP95); }

TEST(GoalTuner, ParseMode) {
  GoalTuner::Mode m = GoalTuner::Mode::kPaper;
  EXPECT_TRUE(GoalTuner::ParseMode("p95", &m));
  EXPECT_EQ(m, GoalTuner::Mode::kP95);
  EXPECT_FALSE(GoalTuner::ParseMode("P95", &m));
  EXPECT_EQ(m, GoalTuner::Mode::kP95);
  EXPECT_TRUE(GoalTuner::ParseMode("paper", &m));
  EXPECT_EQ(m, GoalTuner::Mode::kPaper);
}

// One step by hand: target (20 Mbit/s, 50 ms, 1 %), thr_max 2e6 B/s, min RTT 0.1 s ->
// T = (1.25, 1.5, 0.01); m = (0.8, 1.1, 0): throughput short (relative distance 0.36 < 0.5:
// no jump), delay and loss met. dJ/df1 = 0.8 - 1.25 = -0.45, no usable pair: prior +1, so
// grad1 = -0.45; Adam's first step is -lr * sign = +0.05; g = (1/3 + 0.05, 1/3, 1/3) / 1.05.
TEST(GoalTuner, OneAdamStepByHand) {
  GoalTuner t({20.0f, 50.0f, 0.01f}, {1.0f / 3, 1.0f / 3, 1.0f / 3}, GoalTuner::Mode::kPaper);
  t.Step({0.8f, 1.1f, 0.0f}, 2e6f, 0.1f);
  const double s = 1.0 + 0.05;
  EXPECT_NEAR(t.goal()[0], (1.0 / 3 + 0.05) / s, 1e-6);
  EXPECT_NEAR(t.goal()[1], (1.0 / 3) / s, 1e-6);
  EXPECT_NEAR(t.goal()[2], (1.0 / 3) / s, 1e-6);
}

// Jump-out: T1 = 100 Mbit/s / 12 Mbit/s = 8.33, m1 = 0.9 (relative distance 0.89 > 0.5):
// g1 += 0.05 (Adam) + 0.1 (jump); delay and loss targets loose (met).
TEST(GoalTuner, JumpOutByHand) {
  GoalTuner t({100.0f, 1000.0f, 1.0f}, {1.0f / 3, 1.0f / 3, 1.0f / 3}, GoalTuner::Mode::kPaper);
  t.Step({0.9f, 1.2f, 0.0f}, 1.5e6f, 0.1f);
  const double s = 1.0 + 0.15;
  EXPECT_NEAR(t.goal()[0], (1.0 / 3 + 0.15) / s, 1e-6);
  EXPECT_NEAR(t.goal()[1], (1.0 / 3) / s, 1e-6);
}

TEST(GoalTuner, AllMetKeepsGoal) {
  GoalTuner t({1.0f, 200.0f, 0.05f}, {0.7f, 0.2f, 0.1f}, GoalTuner::Mode::kPaper);
  for (int k = 0; k < 5; ++k) t.Step({0.9f, 1.1f, 0.0f}, 2e6f, 0.1f);
  EXPECT_FLOAT_EQ(t.goal()[0], 0.7f);
  EXPECT_FLOAT_EQ(t.goal()[1], 0.2f);
  EXPECT_FLOAT_EQ(t.goal()[2], 0.1f);
}

TEST(GoalTuner, CountsStepsThatMetTheWholeTarget) {
  // Target 8 Mbit/s of a 2e6 B/s max (T1 = 0.5), 50 ms over 0.2 s (T2 = 1.25), loss 0.02.
  GoalTuner t({8.0f, 50.0f, 0.02f}, {1.0f / 3, 1.0f / 3, 1.0f / 3}, GoalTuner::Mode::kPaper);
  t.Step({0.4f, 1.1f, 0.0f}, 2e6f, 0.2f);  // throughput short
  t.Step({0.6f, 1.3f, 0.0f}, 2e6f, 0.2f);  // delay over
  EXPECT_EQ(t.first_met_step(), 0);
  t.Step({0.6f, 1.2f, 0.01f}, 2e6f, 0.2f);  // all met: step 3
  t.Step({0.6f, 1.2f, 0.03f}, 2e6f, 0.2f);  // loss over
  t.Step({0.5f, 1.25f, 0.02f}, 2e6f, 0.2f);  // met at the bounds: step 5
  EXPECT_EQ(t.first_met_step(), 3);
  EXPECT_EQ(t.met_steps(), 2);
  EXPECT_EQ(t.steps(), 5);
}

TEST(GoalTuner, IntervalAndTargetHat) {
  EXPECT_EQ(GoalTuner::IntervalDecisions(0.5), 8);
  EXPECT_EQ(GoalTuner::IntervalDecisions(1.0), 4);
  EXPECT_EQ(GoalTuner::IntervalDecisions(3.0), 2);
  EXPECT_EQ(GoalTuner::IntervalDecisions(8.0), 1);
  const GoalTuner::Vec h = GoalTuner::TargetHat({8.0f, 50.0f, 0.02f}, 2e6f, 0.2f);
  EXPECT_FLOAT_EQ(h[0], 0.5f);
  EXPECT_FLOAT_EQ(h[1], 1.25f);
  EXPECT_FLOAT_EQ(h[2], 0.02f);
}

TEST(GoalTuner, ParseTarget) {
  GoalTuner::Vec v{};
  EXPECT_EQ(GoalTuner::ParseTarget("8, 50 ,0.01", &v), "");
  EXPECT_FLOAT_EQ(v[0], 8.0f);
  EXPECT_FLOAT_EQ(v[1], 50.0f);
  EXPECT_FLOAT_EQ(v[2], 0.01f);
  for (const char* bad : {"8,50", "8,50,0.01,1", "-1,50,0", "8,-5,0", "8,50,1.5", "8,x,0", ""}) {
    GoalTuner::Vec keep{1, 2, 3};
    const std::string why = GoalTuner::ParseTarget(bad, &keep);
    EXPECT_NE(why.find("throughput_mbps,delay_ms,loss"), std::string::npos) << bad;
    EXPECT_FLOAT_EQ(keep[0], 1.0f);
  }
}

}  // namespace
