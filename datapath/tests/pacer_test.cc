// Pacing accuracy on loopback: the achieved rate must be within a few % of the target.
#include "pacer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "clock.h"

namespace {

// A bound UDP socket nobody reads: the kernel drops what overflows its buffer, so the
// sender measures its own pacing without a receiver competing for the CPU.
struct Sink {
  int rx = -1, tx = -1;
  Sink() {
    rx = socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    bind(rx, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    getsockname(rx, reinterpret_cast<sockaddr*>(&a), &len);
    tx = socket(AF_INET, SOCK_DGRAM, 0);
    connect(tx, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  }
  ~Sink() {
    close(rx);
    close(tx);
  }
};

double Measure(double mbps, double seconds) {
  Sink s;
  jaxcc::FlowShared sh(1 << 16);
  sh.rate_bps = mbps * 125000.0;
  jaxcc::PacerOptions o;
  o.realtime = true;  // as jaxcc-sender --realtime; falls back to normal priority if refused
  jaxcc::Pacer p(s.tx, &sh, o);
  const uint64_t t0 = jaxcc::MonoNs();
  p.Run(t0 + static_cast<uint64_t>(seconds * 1e9));
  const double el = (jaxcc::MonoNs() - t0) * 1e-9;
  EXPECT_EQ(sh.send_errors.load(), 0u);
  if (!p.got_realtime()) std::printf("(normal priority: SCHED_FIFO refused)\n");
  return sh.sent_bytes.load() * 8.0 / el / 1e6;
}

// Best of three: a pacing bug misses every time, while a busy shared CI host (the sender
// descheduled for longer than its catch-up credit) only spoils an occasional run.
double BestOf3(double mbps) {
  double best = 0;
  for (int i = 0; i < 3; ++i) {
    const double got = Measure(mbps, 1.0);
    std::printf("target %.0f Mbit/s: achieved %.3f Mbit/s\n", mbps, got);
    if (std::fabs(got - mbps) < std::fabs(best - mbps)) best = got;
    if (std::fabs(got - mbps) < 0.01 * mbps) break;
  }
  return best;
}

TEST(Pacer, Accurate10Mbps) {
  const double got = BestOf3(10);
  EXPECT_NEAR(got, 10, 0.3) << got;  // 3%
}

TEST(Pacer, Accurate500Mbps) {
  const double got = BestOf3(500);
  EXPECT_NEAR(got, 500, 15) << got;  // 3%
}

TEST(Pacer, RespectsCwnd) {
  Sink s;
  jaxcc::FlowShared sh(1 << 16);
  sh.rate_bps = 100e6;
  sh.cwnd_bytes = 10 * 1500;  // nothing is ever acked: exactly 10 packets (wire bytes) may go out
  jaxcc::PacerOptions o;
  jaxcc::Pacer p(s.tx, &sh, o);
  p.Run(jaxcc::MonoNs() + 100'000'000);
  EXPECT_EQ(sh.sent_count.load(), 10u);
  EXPECT_EQ(sh.sent_bytes.load(), 10u * 1500);  // 1472-byte datagrams count 1500 IP bytes each
}

// One packet short of the window: 9 go out (a 1472-byte payload would have let 10 fit).
TEST(Pacer, WindowCountsWireBytes) {
  Sink s;
  jaxcc::FlowShared sh(1 << 16);
  sh.rate_bps = 100e6;
  sh.cwnd_bytes = 10 * 1472 + 100;
  jaxcc::PacerOptions o;
  jaxcc::Pacer p(s.tx, &sh, o);
  p.Run(jaxcc::MonoNs() + 100'000'000);
  EXPECT_EQ(sh.sent_count.load(), 9u);
}

}  // namespace
