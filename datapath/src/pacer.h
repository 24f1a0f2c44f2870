// The pacing thread and the state it shares with the ACK and decision threads.
//
// Pacing must never wait for a decision (Pareto §V-A): the controller publishes rate and
// cwnd through atomics and the pacer reads whatever is current. The pacer, in turn,
// publishes each packet's send record into a ring indexed by seq and then advances
// `sent_count` with release ordering, so the ACK thread can read the records lock-free.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace jaxcc {

struct SendRecord {
  uint64_t send_wall_ns = 0;      // CLOCK_REALTIME, also written into the packet
  uint64_t send_mono_ns = 0;      // CLOCK_MONOTONIC, for local timing
  double delivered_at_send = 0;   // FlowShared::delivered_bytes when sent (rate samples)
  uint64_t delivered_time_ns = 0; // FlowShared::delivered_time_ns when sent
  uint32_t bytes = 0;
};

struct FlowShared {
  explicit FlowShared(size_t ring_pow2 = 1u << 20) : ring(ring_pow2), mask(ring_pow2 - 1) {}

  // Controller outputs (written by the ACK or decision thread, read by the pacer).
  // Every byte count here is of wire (IP) bytes: UDP payload + kIpUdpHeaderBytes (protocol.h).
  std::atomic<double> rate_bps{125000.0};  // bytes/s
  std::atomic<double> cwnd_bytes{1e30};    // bytes; "unlimited" for pure rate control

  // Written by the pacer.
  std::atomic<uint64_t> sent_count{0};  // packets sent = next seq
  std::atomic<uint64_t> sent_bytes{0};
  std::atomic<uint64_t> send_errors{0};
  std::atomic<uint64_t> cwnd_limited_ns{0};
  std::vector<SendRecord> ring;
  size_t mask;

  // Written by the ACK thread.
  std::atomic<uint64_t> acked_bytes{0};
  std::atomic<uint64_t> lost_bytes{0};
  std::atomic<double> delivered_bytes{0};
  std::atomic<uint64_t> delivered_time_ns{0};

  std::atomic<bool> stop{false};

  double inflight() const {
    return static_cast<double>(sent_bytes.load(std::memory_order_relaxed)) -
           static_cast<double>(acked_bytes.load(std::memory_order_relaxed)) -
           static_cast<double>(lost_bytes.load(std::memory_order_relaxed));
  }
};

struct PacerOptions {
  size_t packet_size = 1472;
  uint32_t flow_id = 0;
  int max_batch = 32;          // packets per sendmmsg call when catching up
  uint64_t spin_ns = 20'000;   // busy-wait the last part of a sleep when packets are sparse
  // Shortest time between two wake-ups. Above ~1/min_gap packets/s the pacer sends the
  // packets due in batches (one sendmmsg) instead of waking for every packet: at 500 Mbit/s
  // that is 10k instead of 42k wake-ups per second, for 100 us micro-bursts of ~4 packets.
  uint64_t min_gap_ns = 100'000;
  // Ask for SCHED_FIFO (priority 1) for the pacing thread so a busy host cannot hold it off
  // the CPU for tens of ms; silently stays at normal priority without the privilege.
  bool realtime = false;
  // Credit kept after a stall, bounding the catch-up burst. 10 ms: on a busy 2-core host
  // the pacer is regularly descheduled for a few ms, and dropping that credit made the
  // achieved rate 5-30% low; 10 ms of catch-up is at most ~17 packets at 20 Mbit/s.
  uint64_t max_lag_ns = 10'000'000;
};

class Pacer {
 public:
  Pacer(int fd, FlowShared* shared, const PacerOptions& opt);
  // Sends until shared->stop or the monotonic time end_mono_ns. Returns packets sent.
  uint64_t Run(uint64_t end_mono_ns);
  bool got_realtime() const { return got_realtime_; }

 private:
  int fd_;
  FlowShared* sh_;
  PacerOptions opt_;
  std::vector<uint8_t> bufs_;
  bool got_realtime_ = false;
};

}  // namespace jaxcc
