#include "loss_detector.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

using jaxcc::LossDetector;

namespace {

struct Rec {
  std::vector<uint64_t> acked, lost, late;
  void operator()(const LossDetector::Event& e) {
    switch (e.kind) {
      case LossDetector::Event::kAcked: acked.push_back(e.seq); break;
      case LossDetector::Event::kLost: lost.push_back(e.seq); break;
      case LossDetector::Event::kLate: late.push_back(e.seq); break;
    }
  }
};

constexpr uint64_t kMs = 1'000'000;

TEST(LossDetector, InOrderNoLoss) {
  LossDetector d;
  Rec r;
  for (uint64_t s = 0; s < 100; ++s) d.OnSent(s, s * kMs, 1500);
  for (uint64_t s = 0; s < 100; ++s) EXPECT_TRUE(d.OnAck(s, 100 * kMs + s, 10 * kMs, r));
  EXPECT_EQ(r.acked.size(), 100u);
  EXPECT_TRUE(r.lost.empty());
  EXPECT_EQ(d.outstanding_packets(), 0u);
}

TEST(LossDetector, ReorderingWithinThresholdIsNotLoss) {
  LossDetector d;
  Rec r;
  for (uint64_t s = 0; s < 10; ++s) d.OnSent(s, 0, 1500);
  // seq 0 arrives after seqs 1 and 2 (reordered by two): highest acked 2 < 0 + 3.
  for (uint64_t s : {1, 2, 0, 3, 4, 5, 6, 7, 8, 9}) d.OnAck(s, 5 * kMs, kMs, r);
  EXPECT_TRUE(r.lost.empty());
  EXPECT_EQ(r.acked.size(), 10u);
}

TEST(LossDetector, PacketThresholdDeclaresLoss) {
  LossDetector d;
  Rec r;
  for (uint64_t s = 0; s < 10; ++s) d.OnSent(s, 0, 1500);
  d.OnAck(1, kMs, kMs, r);
  d.OnAck(2, kMs, kMs, r);
  EXPECT_TRUE(r.lost.empty());
  d.OnAck(3, kMs, kMs, r);  // seq 3 = 0 + 3 acked: seq 0 is lost
  ASSERT_EQ(r.lost.size(), 1u);
  EXPECT_EQ(r.lost[0], 0u);
  // A late ACK for the lost packet changes nothing.
  EXPECT_FALSE(d.OnAck(0, 2 * kMs, kMs, r));
  EXPECT_EQ(r.acked.size(), 3u);
  EXPECT_EQ(d.late_acks(), 1u);  // reported as a spurious loss, even after leaving the window
  ASSERT_EQ(r.late.size(), 1u);
  EXPECT_EQ(r.late[0], 0u);
  EXPECT_FALSE(d.OnAck(0, 2 * kMs, kMs, r));  // again: now just a duplicate
  EXPECT_EQ(d.duplicate_acks(), 1u);
  EXPECT_EQ(r.late.size(), 1u);
}

TEST(LossDetector, DuplicatesIgnored) {
  LossDetector d;
  Rec r;
  for (uint64_t s = 0; s < 5; ++s) d.OnSent(s, 0, 1000);
  for (int k = 0; k < 3; ++k)
    for (uint64_t s = 0; s < 5; ++s) d.OnAck(s, kMs, kMs, r);
  EXPECT_EQ(r.acked.size(), 5u);
  EXPECT_EQ(d.duplicate_acks(), 10u);
  EXPECT_TRUE(r.lost.empty());
  EXPECT_FALSE(d.OnAck(1000, kMs, kMs, r));  // never sent
  EXPECT_EQ(d.unknown_acks(), 1u);
}

TEST(LossDetector, TimeoutCatchesTailLoss) {
  LossDetector d(20 * kMs);
  Rec r;
  for (uint64_t s = 0; s < 3; ++s) d.OnSent(s, s * kMs, 1500);
  d.OnAck(0, 10 * kMs, 10 * kMs, r);  // srtt 10 ms -> timeout max(20, 20) ms
  d.OnTimer(15 * kMs, r);
  EXPECT_TRUE(r.lost.empty());
  d.OnTimer(22 * kMs, r);  // seq 1 sent at 1 ms, outstanding 21 ms > 20 ms
  ASSERT_EQ(r.lost.size(), 1u);
  EXPECT_EQ(r.lost[0], 1u);
  d.OnTimer(30 * kMs, r);
  EXPECT_EQ(r.lost.size(), 2u);
  EXPECT_EQ(d.outstanding_packets(), 0u);
}

TEST(LossDetector, TimeoutScalesWithSrtt) {
  LossDetector d(1 * kMs);
  Rec r;
  d.OnSent(0, 0, 1500);
  d.OnSent(1, 0, 1500);
  d.OnAck(0, 100 * kMs, 100 * kMs, r);
  EXPECT_EQ(d.timeout_ns(), 200 * kMs);
  d.OnTimer(150 * kMs, r);
  EXPECT_TRUE(r.lost.empty());
  d.OnTimer(201 * kMs, r);
  EXPECT_EQ(r.lost.size(), 1u);
}

// Every packet is resolved exactly once, whatever the reordering and duplication; and
// with reordering of at most 2 positions and no drops, nothing is called lost.
TEST(LossDetector, RandomReorderDuplicationConservation) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    LossDetector d(1'000 * kMs);
    Rec r;
    const uint64_t n = 2000;
    for (uint64_t s = 0; s < n; ++s) d.OnSent(s, s, 1500);
    // Reordering by at most 2 positions: shuffle within blocks of 3 consecutive seqs.
    std::vector<uint64_t> seqs(n);
    for (uint64_t s = 0; s < n; ++s) seqs[s] = s;
    for (uint64_t b = 0; b + 3 <= n; b += 3) std::shuffle(seqs.begin() + b, seqs.begin() + b + 3, rng);
    std::vector<uint64_t> order;
    std::vector<bool> dropped(n, false);
    const bool drops = trial % 2;
    for (uint64_t s : seqs) {
      if (drops && rng() % 20 == 0) {
        dropped[s] = true;
        continue;
      }
      order.push_back(s);
      if (rng() % 10 == 0) order.push_back(s);  // duplicate
    }
    for (uint64_t s : order) d.OnAck(s, 5 * kMs, kMs, r);
    d.OnTimer(10'000 * kMs, r);
    std::vector<int> seen(n, 0);
    for (uint64_t s : r.acked) ++seen[s];
    for (uint64_t s : r.lost) ++seen[s];
    for (uint64_t s = 0; s < n; ++s) ASSERT_EQ(seen[s], 1) << "seq " << s << " trial " << trial;
    if (!drops) {
      EXPECT_TRUE(r.lost.empty()) << "trial " << trial;
    } else {
      for (uint64_t s : r.lost) EXPECT_TRUE(dropped[s]) << "seq " << s << " called lost but was acked";
    }
  }
}

}  // namespace
