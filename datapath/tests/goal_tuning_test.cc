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
};
struct Case {
  std::string name;
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
    } else if (tag == "goal0") {
      for (float& x : cases.back().g0) ss >> x;
    } else if (tag == "step") {
      Step s;
      for (float& x : s.m) ss >> x;
      ss >> s.thr_max >> s.min_rtt;
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
  int steps = 0;
  for (const Case& c : cases) {
    GoalTuner t(c.target, c.g0);
    for (size_t k = 0; k < c.steps.size(); ++k) {
      const Step& s = c.steps[k];
      t.Step(s.m, s.thr_max, s.min_rtt);
      for (int i = 0; i < 3; ++i)
        EXPECT_NEAR(t.goal()[i], s.goal[i], 1e-5) << c.name << " step " << k << " dim " << i;
      ++steps;
    }
    EXPECT_EQ(t.steps(), static_cast<int>(c.steps.size()));
  }
  EXPECT_GE(steps, 80);
}

// One step by hand: target (20 Mbit/s, 50 ms, 1 %), thr_max 2e6 B/s, min RTT 0.1 s ->
// T = (1.25, 1.5, 0.01); m = (0.8, 1.1, 0): throughput short (relative distance 0.36 < 0.5:
// no jump), delay and loss met. dJ/df1 = 0.8 - 1.25 = -0.45, no usable pair: prior +1, so
// grad1 = -0.45; Adam's first step is -lr * sign = +0.05; g = (1/3 + 0.05, 1/3, 1/3) / 1.05.
TEST(GoalTuner, OneAdamStepByHand) {
  GoalTuner t({20.0f, 50.0f, 0.01f}, {1.0f / 3, 1.0f / 3, 1.0f / 3});
  t.Step({0.8f, 1.1f, 0.0f}, 2e6f, 0.1f);
  const double s = 1.0 + 0.05;
  EXPECT_NEAR(t.goal()[0], (1.0 / 3 + 0.05) / s, 1e-6);
  EXPECT_NEAR(t.goal()[1], (1.0 / 3) / s, 1e-6);
  EXPECT_NEAR(t.goal()[2], (1.0 / 3) / s, 1e-6);
}

// Jump-out: T1 = 100 Mbit/s / 12 Mbit/s = 8.33, m1 = 0.9 (relative distance 0.89 > 0.5):
// g1 += 0.05 (Adam) + 0.1 (jump); delay and loss targets loose (met).
TEST(GoalTuner, JumpOutByHand) {
  GoalTuner t({100.0f, 1000.0f, 1.0f}, {1.0f / 3, 1.0f / 3, 1.0f / 3});
  t.Step({0.9f, 1.2f, 0.0f}, 1.5e6f, 0.1f);
  const double s = 1.0 + 0.15;
  EXPECT_NEAR(t.goal()[0], (1.0 / 3 + 0.15) / s, 1e-6);
  EXPECT_NEAR(t.goal()[1], (1.0 / 3) / s, 1e-6);
}

TEST(GoalTuner, AllMetKeepsGoal) {
  GoalTuner t({1.0f, 200.0f, 0.05f}, {0.7f, 0.2f, 0.1f});
  for (int k = 0; k < 5; ++k) t.Step({0.9f, 1.1f, 0.0f}, 2e6f, 0.1f);
  EXPECT_FLOAT_EQ(t.goal()[0], 0.7f);
  EXPECT_FLOAT_EQ(t.goal()[1], 0.2f);
  EXPECT_FLOAT_EQ(t.goal()[2], 0.1f);
}

TEST(GoalTuner, CountsStepsThatMetTheWholeTarget) {
  // Target 8 Mbit/s of a 2e6 B/s max (T1 = 0.5), 50 ms over 0.2 s (T2 = 1.25), loss 0.02.
  GoalTuner t({8.0f, 50.0f, 0.02f}, {1.0f / 3, 1.0f / 3, 1.0f / 3});
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
