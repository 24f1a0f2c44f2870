#include "loss_detector.h"

#include <algorithm>

namespace jaxcc {

void LossDetector::OnSent(uint64_t seq, uint64_t send_ns, uint32_t bytes) {
  if (!started_) {
    base_ = seq;
    scan_ = seq;
    started_ = true;
  }
  // Gaps would break the seq -> index mapping; the sender never makes them, so register any
  // skipped seqs as zero-byte packets that resolve immediately instead of trusting callers.
  while (next_seq() < seq) window_.push_back(Entry{send_ns, 0, kAckedState});
  if (seq < next_seq()) return;  // already registered
  window_.push_back(Entry{send_ns, bytes, kOutstanding});
  ++outstanding_;
  outstanding_bytes_ += bytes;
}

uint64_t LossDetector::timeout_ns() const {
  if (srtt_ns_ == 0) return std::max<uint64_t>(min_timeout_ns_, 1'000'000'000);  // no sample yet: 1 s
  return std::max<uint64_t>(min_timeout_ns_, static_cast<uint64_t>(kTimeFactor * srtt_ns_));
}

uint32_t LossDetector::TakeRecentLost(uint64_t seq) {
  auto it = std::lower_bound(recent_lost_.begin(), recent_lost_.end(), std::make_pair(seq, uint32_t{0}));
  if (it == recent_lost_.end() || it->first != seq) return 0;
  const uint32_t b = it->second;
  recent_lost_.erase(it);
  return b;
}

void LossDetector::PopResolved() {
  while (!window_.empty() && window_.front().state != kOutstanding) {
    window_.pop_front();
    ++base_;
  }
}

}  // namespace jaxcc
