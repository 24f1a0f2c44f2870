// Per-packet delivery/loss bookkeeping for one flow, robust to reordering and duplication.
//
// Rules (the same two QUIC uses, RFC 9002 §6.1, with our constants):
//  * packet threshold: seq s is lost once an ACK for some seq >= s + kReorderThreshold has
//    arrived. Three packets of slack absorb mild reordering without calling it loss.
//  * time threshold: seq s is lost once it has been outstanding for
//    max(kTimeFactor * srtt, min_timeout). That catches losses at the tail of a burst, where
//    no later packet exists to trigger the packet threshold.
// ACKs for a seq that is already acked (duplicates) or already declared lost (late) change
// nothing except counters: each packet is counted exactly once, as delivered or as lost.
// A late ACK is reported as a kLate event (a spurious loss: the packet did arrive), so
// summaries can correct their loss figure; the MI statistics keep what the sender knew then.
//
// Single-threaded: the sender's ACK thread owns it.
#pragma once

#include <cstdint>
#include <cstddef>
#include <deque>
#include <utility>

namespace jaxcc {

class LossDetector {
 public:
  static constexpr uint64_t kReorderThreshold = 3;
  static constexpr double kTimeFactor = 2.0;

  struct Event {
    enum Kind { kAcked, kLost, kLate } kind;
    uint64_t seq;
    uint32_t bytes;
    uint64_t send_ns;
  };

  // min_timeout_ns: floor of the time threshold. On loopback srtt is tens of microseconds,
  // far below scheduling jitter, so without a floor every context switch would be "loss".
  explicit LossDetector(uint64_t min_timeout_ns = 20'000'000) : min_timeout_ns_(min_timeout_ns) {}

  // Packets must be registered in sequence order, starting at the first seq registered.
  void OnSent(uint64_t seq, uint64_t send_ns, uint32_t bytes);

  // Processes an ACK for seq at time now_ns with RTT sample rtt_ns (used for srtt).
  // Appends resulting events (the ack itself and any losses it reveals) to *events.
  // Returns false (and changes nothing) for duplicate, late or unknown ACKs.
  template <class Sink>
  bool OnAck(uint64_t seq, uint64_t now_ns, uint64_t rtt_ns, Sink&& sink);

  // Declares packets lost that have been outstanding too long.
  template <class Sink>
  void OnTimer(uint64_t now_ns, Sink&& sink);

  uint64_t timeout_ns() const;
  double srtt_ns() const { return srtt_ns_; }
  uint64_t outstanding_packets() const { return outstanding_; }
  uint64_t outstanding_bytes() const { return outstanding_bytes_; }
  uint64_t duplicate_acks() const { return duplicates_; }
  uint64_t late_acks() const { return late_; }      // ACK for a seq already declared lost
  uint64_t unknown_acks() const { return unknown_; }  // ACK for a seq never sent
  uint64_t next_seq() const { return base_ + window_.size(); }

 private:
  enum State : uint8_t { kOutstanding, kAckedState, kLostState };
  struct Entry {
    uint64_t send_ns;
    uint32_t bytes;
    State state;
  };
  template <class Sink>
  void MarkLost(uint64_t seq, Entry& e, Sink& sink);
  void PopResolved();

  uint64_t min_timeout_ns_;
  std::deque<Entry> window_;  // entries for seqs [base_, base_ + size)
  uint64_t base_ = 0;
  bool started_ = false;
  uint64_t scan_ = 0;  // every seq below scan_ has been checked against the packet threshold
  bool have_acked_ = false;
  uint64_t highest_acked_ = 0;
  double srtt_ns_ = 0;
  uint64_t outstanding_ = 0, outstanding_bytes_ = 0;
  uint64_t duplicates_ = 0, late_ = 0, unknown_ = 0;
  // Recently lost (seq, bytes), ascending (both rules declare losses in seq order), so a
  // late ACK is told apart from a duplicate even after its seq left the window. Bounded:
  // an ACK later than kLostMemory losses ago counts as a duplicate.
  static constexpr size_t kLostMemory = 1 << 16;
  std::deque<std::pair<uint64_t, uint32_t>> recent_lost_;
  // Returns the bytes of seq if it is a remembered loss (and forgets it), else 0.
  uint32_t TakeRecentLost(uint64_t seq);
};

// ---- template implementations

template <class Sink>
void LossDetector::MarkLost(uint64_t seq, Entry& e, Sink& sink) {
  e.state = kLostState;
  --outstanding_;
  outstanding_bytes_ -= e.bytes;
  recent_lost_.emplace_back(seq, e.bytes);
  if (recent_lost_.size() > kLostMemory) recent_lost_.pop_front();
  sink(Event{Event::kLost, seq, e.bytes, e.send_ns});
}

template <class Sink>
bool LossDetector::OnAck(uint64_t seq, uint64_t now_ns, uint64_t rtt_ns, Sink&& sink) {
  (void)now_ns;
  if (!started_ || seq >= next_seq()) {
    ++unknown_;
    return false;
  }
  if (seq < base_ || window_[seq - base_].state != kOutstanding) {
    if (const uint32_t b = TakeRecentLost(seq)) {
      ++late_;
      sink(Event{Event::kLate, seq, b, 0});
    } else {
      ++duplicates_;
    }
    return false;
  }
  Entry& e = window_[seq - base_];
  e.state = kAckedState;
  --outstanding_;
  outstanding_bytes_ -= e.bytes;
  sink(Event{Event::kAcked, seq, e.bytes, e.send_ns});
  // Smoothed RTT as in RFC 6298 (gain 1/8); only feeds the time threshold.
  const double r = static_cast<double>(rtt_ns);
  srtt_ns_ = srtt_ns_ == 0 ? r : 0.875 * srtt_ns_ + 0.125 * r;
  if (!have_acked_ || seq > highest_acked_) {
    highest_acked_ = seq;
    have_acked_ = true;
  }
  if (highest_acked_ >= kReorderThreshold) {
    const uint64_t limit = highest_acked_ - kReorderThreshold + 1;  // seqs < limit are decided
    if (scan_ < base_) scan_ = base_;
    for (; scan_ < limit; ++scan_) {
      Entry& x = window_[scan_ - base_];
      if (x.state == kOutstanding) MarkLost(scan_, x, sink);
    }
  }
  PopResolved();
  return true;
}

template <class Sink>
void LossDetector::OnTimer(uint64_t now_ns, Sink&& sink) {
  const uint64_t to = timeout_ns();
  // Send times grow with seq, so the scan can stop at the first packet still in time.
  for (size_t i = 0; i < window_.size(); ++i) {
    Entry& e = window_[i];
    if (e.state != kOutstanding) continue;
    if (now_ns < e.send_ns || now_ns - e.send_ns <= to) break;
    MarkLost(base_ + i, e, sink);
  }
  PopResolved();
}

}  // namespace jaxcc
