#include "ack_thread.h"

#include <poll.h>
#include <sys/socket.h>

#include <cstring>
#include <thread>

#include "bbr.h"
#include "clock.h"
#include "loss_detector.h"
#include "pacer.h"

namespace jaxcc {

void AckThread(int fd, uint32_t flow_id, double min_timeout_ms, FlowShared* sh, AckSide* as, BbrController* bbr,
               std::atomic<bool>* ack_stop) {
  LossDetector det(static_cast<uint64_t>(min_timeout_ms * 1e6));
  uint64_t registered = 0;
  constexpr int kBatch = 64;
  std::vector<uint8_t> bufs(kBatch * 2048);
  std::vector<mmsghdr> msgs(kBatch);
  std::vector<iovec> iovs(kBatch);
  double delivered = 0;
  auto sync = [&]() {
    const uint64_t sc = sh->sent_count.load(std::memory_order_acquire);
    for (; registered < sc; ++registered) {
      const SendRecord& r = sh->ring[registered & sh->mask];
      det.OnSent(registered, r.send_mono_ns, r.bytes);
    }
  };
  while (!ack_stop->load(std::memory_order_relaxed)) {
    pollfd pfd{fd, POLLIN, 0};
    poll(&pfd, 1, 1);
    for (int i = 0; i < kBatch; ++i) {
      iovs[i].iov_base = bufs.data() + i * 2048;
      iovs[i].iov_len = 2048;
      std::memset(&msgs[i], 0, sizeof(mmsghdr));
      msgs[i].msg_hdr.msg_iov = &iovs[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
    }
    const int n = recvmmsg(fd, msgs.data(), kBatch, MSG_DONTWAIT, nullptr);
    const uint64_t now = MonoNs();
    sync();
    // One lock per batch (not per ACK): the decision thread only takes it to swap MIs.
    std::unique_lock<std::mutex> lk(as->mu);
    MonitorStats& mi = as->mi;
    const double t_in_mi = now > as->mi_start_ns ? (now - as->mi_start_ns) * 1e-9 : 0.0;
    for (int i = 0; i < n; ++i) {
      AckPacket ack;
      const uint8_t* b = bufs.data() + i * 2048;
      // A datagram longer than the buffer is truncated; its length then fails ParseAck.
      const size_t len = (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) ? 0 : msgs[i].msg_len;
      ParseResult pr = ParseAck(b, len, &ack);
      as->parse.Add(pr);
      if (pr != ParseResult::kOk) continue;
      if (ack.flow_id != flow_id) {
        ++as->foreign_flow;
        continue;
      }
      if (ack.seq >= registered) {
        // The pacer publishes sent_count just after sendmmsg returns; on loopback the ACK
        // can win that race by a few microseconds. Wait briefly rather than drop it.
        for (int k = 0; k < 1000 && ack.seq >= registered; ++k) {
          std::this_thread::yield();
          sync();
        }
      }
      if (ack.seq < registered && registered - ack.seq > sh->mask) {  // record overwritten
        ++as->unknown_acks;
        continue;
      }
      const SendRecord rec = ack.seq < registered ? sh->ring[ack.seq & sh->mask] : SendRecord{};
      const uint64_t rtt_ns = now > rec.send_mono_ns ? now - rec.send_mono_ns : 0;
      det.OnAck(ack.seq, now, rtt_ns, [&](const LossDetector::Event& ev) {
        if (ev.kind == LossDetector::Event::kAcked) {
          const double rtt = rtt_ns * 1e-9;
          delivered += ev.bytes;
          mi.AddSample(ev.bytes, rtt, t_in_mi);  // mi.py mi_add_sample, per packet
          ++as->acked_pkts;
          sh->acked_bytes.fetch_add(ev.bytes, std::memory_order_relaxed);
          sh->delivered_bytes.store(delivered, std::memory_order_release);
          sh->delivered_time_ns.store(now, std::memory_order_relaxed);
          as->rtt_ms.push_back(static_cast<float>(rtt * 1e3));
          const double owd = (static_cast<double>(ack.recv_ts_ns) - static_cast<double>(ack.echo_send_ts_ns)) * 1e-6;
          as->owd_ms.push_back(static_cast<float>(owd));
          const double mr = as->min_rtt.load(std::memory_order_relaxed);
          if (mr == 0 || rtt < mr) as->min_rtt.store(rtt, std::memory_order_relaxed);
          if (bbr) {
            RateSample rs;
            rs.now_ns = now;
            rs.rtt_s = rtt;
            rs.delivered = delivered;
            rs.prior_delivered = rec.delivered_at_send;
            rs.prior_time_ns = rec.delivered_time_ns ? rec.delivered_time_ns : rec.send_mono_ns;
            rs.send_ns = rec.send_mono_ns;
            rs.inflight = sh->inflight();
            bbr->OnAck(rs);
          }
        } else if (ev.kind == LossDetector::Event::kLost) {
          mi.lost += ev.bytes;
          ++as->lost_pkts;
          sh->lost_bytes.fetch_add(ev.bytes, std::memory_order_relaxed);
          if (bbr) bbr->OnLoss(ev.bytes, sh->inflight(), now);
        } else {  // kLate: declared lost, then its ACK came (a stall or deep reordering)
          ++as->late_pkts;
          as->late_bytes += ev.bytes;
        }
      });
    }
    det.OnTimer(now, [&](const LossDetector::Event& ev) {
      mi.lost += ev.bytes;
      ++as->lost_pkts;
      sh->lost_bytes.fetch_add(ev.bytes, std::memory_order_relaxed);
      if (bbr) bbr->OnLoss(ev.bytes, sh->inflight(), now);
    });
    if (bbr && as->bbr_drives) {
      sh->rate_bps.store(bbr->pacing_rate(), std::memory_order_relaxed);
      sh->cwnd_bytes.store(bbr->cwnd(), std::memory_order_relaxed);
    }
    lk.unlock();
  }
  as->dup_acks = det.duplicate_acks();
  as->late_acks = det.late_acks();
  as->unknown_acks += det.unknown_acks();
  as->outstanding_at_end = det.outstanding_packets();
}

}  // namespace jaxcc
