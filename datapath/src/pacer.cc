#include "pacer.h"

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "clock.h"
#include "protocol.h"

namespace jaxcc {

Pacer::Pacer(int fd, FlowShared* shared, const PacerOptions& opt)
    : fd_(fd), sh_(shared), opt_(opt), bufs_(static_cast<size_t>(opt.max_batch) * opt.packet_size, 0) {}

uint64_t Pacer::Run(uint64_t end_mono_ns) {
  // The default 50 us timer slack would make every sleep overshoot by up to 50 us; pacing
  // wants its wake-ups where it asked for them.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  int old_policy = SCHED_OTHER;
  sched_param old_param{};
  pthread_getschedparam(pthread_self(), &old_policy, &old_param);
  if (opt_.realtime) {
    // Priority 1: above every normal task, below any real-time task the system relies on.
    // The loop sleeps whenever nothing is due, so it cannot monopolise a core.
    sched_param sp{};
    sp.sched_priority = 1;
    got_realtime_ = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
  }
  // Paced, windowed and counted in wire (IP) bytes: payload + IP/UDP headers (src/protocol.h).
  const size_t wire = WireBytes(opt_.packet_size);
  const double pkt = static_cast<double>(wire);
  std::vector<mmsghdr> msgs(opt_.max_batch);
  std::vector<iovec> iovs(opt_.max_batch);
  uint64_t next = MonoNs();  // when the next packet is due
  uint64_t last_batch = 0;   // when the last batch went out
  uint64_t sent_total = 0;
  while (!sh_->stop.load(std::memory_order_relaxed)) {
    uint64_t now = MonoNs();
    if (now >= end_mono_ns) break;
    const double rate = std::max(sh_->rate_bps.load(std::memory_order_relaxed), 1.0);
    const double interval = pkt * 1e9 / rate;  // ns between packets at this rate
    const uint64_t wake = std::max(next, last_batch + opt_.min_gap_ns);
    if (now < wake) {
      // Sleep most of the wait; spin the tail only when packets are sparse (spinning at
      // high rates would burn a core for nothing, as batching absorbs wake-up jitter).
      const uint64_t wait = wake - now;
      const bool spin = interval > 4.0 * static_cast<double>(opt_.spin_ns);
      if (!spin || wait > opt_.spin_ns) SleepUntilMono(std::min(spin ? wake - opt_.spin_ns : wake, end_mono_ns));
      if (spin)
        while (MonoNs() < wake) {
        }
      continue;
    }
    last_batch = now;
    // Credit: packets due now. Bounded so a stall turns into a bounded burst, not a flood.
    const uint64_t lag_cap = std::max<uint64_t>(opt_.max_lag_ns, static_cast<uint64_t>(2 * interval));
    if (now - next > lag_cap) next = now - lag_cap;
    uint64_t due = 1 + static_cast<uint64_t>(static_cast<double>(now - next) / interval);
    int n = static_cast<int>(std::min<uint64_t>(due, static_cast<uint64_t>(opt_.max_batch)));
    // Window: send only what fits under cwnd; without room, wait for ACKs without building
    // up credit (a window-limited sender restarts at its rate, not with a burst).
    const double room = sh_->cwnd_bytes.load(std::memory_order_relaxed) - sh_->inflight();
    if (room < pkt) {
      next = now + std::min<uint64_t>(static_cast<uint64_t>(interval), 50'000);
      sh_->cwnd_limited_ns.fetch_add(next - now, std::memory_order_relaxed);
      continue;
    }
    n = std::min<int>(n, static_cast<int>(std::min(room / pkt, 1e6)));
    const uint64_t seq0 = sh_->sent_count.load(std::memory_order_relaxed);
    const uint64_t wall = WallNs();
    const double delivered = sh_->delivered_bytes.load(std::memory_order_acquire);
    const uint64_t delivered_t = sh_->delivered_time_ns.load(std::memory_order_relaxed);
    for (int i = 0; i < n; ++i) {
      uint8_t* b = bufs_.data() + static_cast<size_t>(i) * opt_.packet_size;
      DataPacket dp;
      dp.flow_id = opt_.flow_id;
      dp.size = static_cast<uint32_t>(opt_.packet_size);
      dp.seq = seq0 + i;
      dp.send_ts_ns = wall;
      EncodeData(dp, b);
      iovs[i].iov_base = b;
      iovs[i].iov_len = opt_.packet_size;
      std::memset(&msgs[i], 0, sizeof(mmsghdr));
      msgs[i].msg_hdr.msg_iov = &iovs[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
    }
    // Records first, then the packets: an ACK can never arrive for a seq whose record the
    // ACK thread cannot see yet (it waits for sent_count, published below).
    for (int i = 0; i < n; ++i) {
      SendRecord& r = sh_->ring[(seq0 + i) & sh_->mask];
      r.send_wall_ns = wall;
      r.send_mono_ns = now;
      r.delivered_at_send = delivered;
      r.delivered_time_ns = delivered_t;
      r.bytes = static_cast<uint32_t>(wire);
    }
    int sent = sendmmsg(fd_, msgs.data(), static_cast<unsigned>(n), 0);
    if (sent <= 0) {
      // ECONNREFUSED (an ICMP port-unreachable from an earlier packet: receiver not up yet),
      // ENOBUFS, EINTR: count, move the schedule on as if sent (the packets are simply lost
      // for the flow), and keep going.
      sh_->send_errors.fetch_add(1, std::memory_order_relaxed);
      sent = 0;
      next += static_cast<uint64_t>(interval);
      continue;
    }
    sh_->sent_count.store(seq0 + sent, std::memory_order_release);
    sh_->sent_bytes.fetch_add(static_cast<uint64_t>(sent) * wire, std::memory_order_relaxed);
    sent_total += sent;
    next += static_cast<uint64_t>(interval * sent);
  }
  if (got_realtime_) pthread_setschedparam(pthread_self(), old_policy, &old_param);
  return sent_total;
}

}  // namespace jaxcc
