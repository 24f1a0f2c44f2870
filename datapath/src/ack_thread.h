// The ACK side of jaxcc-sender: the thread that receives ACKs, and what it shares.
//
// The ACK thread reads ACK datagrams in batches (recvmmsg), matches them to the pacer's send
// records, runs loss detection (src/loss_detector.h), accumulates the monitor interval's
// statistics for the decision thread (src/decision_loop.h), feeds BBR per ACK and loss and,
// while BBR drives, publishes its rate/cwnd to the pacer.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "monitor.h"
#include "protocol.h"

namespace jaxcc {

class BbrController;
struct FlowShared;

// What the ACK thread shares with the decision thread (the MI in progress, the min RTT, who
// publishes rate/cwnd) and, once joined, with the summary (its counters and samples).
struct AckSide {
  std::mutex mu;           // guards `mi`, `mi_start_ns` and `bbr_drives` (shared with the decision thread)
  // The ACK thread publishes BBR's rate/cwnd only while set: always for --controller=bbr; for a
  // policy with --learner --fallback=bbr while the learner is gone (BBR is fed all along).
  bool bbr_drives = true;
  MonitorStats mi;
  uint64_t mi_start_ns = 0;  // CLOCK_MONOTONIC start of the MI being accumulated
  std::atomic<double> min_rtt{0};
  // Owned by the ACK thread until it is joined.
  std::vector<float> rtt_ms, owd_ms;
  uint64_t acked_pkts = 0, lost_pkts = 0, late_pkts = 0;
  double late_bytes = 0;
  ParseCounters parse;
  uint64_t foreign_flow = 0;
  uint64_t dup_acks = 0, late_acks = 0, unknown_acks = 0;
  uint64_t outstanding_at_end = 0;
};

// Receives ACKs on `fd` (a connected UDP socket) for flow `flow_id` until *ack_stop. A packet is
// lost once a packet sent 3 or more after it is acknowledged, or after max(2 srtt,
// min_timeout_ms) without its ACK. `bbr` may be null. On return the end-of-run counters in *as
// (dup_acks, late_acks, unknown_acks, outstanding_at_end) are filled in.
void AckThread(int fd, uint32_t flow_id, double min_timeout_ms, FlowShared* sh, AckSide* as, BbrController* bbr,
               std::atomic<bool>* ack_stop);

}  // namespace jaxcc
