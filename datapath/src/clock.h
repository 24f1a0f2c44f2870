// Clocks. Wire timestamps use CLOCK_REALTIME so one-way delays mean something between two
// hosts with synchronised clocks (and are exact between namespaces of one host); pacing uses
// CLOCK_MONOTONIC, which never jumps.
#pragma once

#include <cstdint>
#include <ctime>

namespace jaxcc {

inline uint64_t NowNs(clockid_t clk) {
  timespec ts;
  clock_gettime(clk, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}
inline uint64_t WallNs() { return NowNs(CLOCK_REALTIME); }
inline uint64_t MonoNs() { return NowNs(CLOCK_MONOTONIC); }

// Sleeps until the monotonic time t_ns (absolute deadline, so repeated sleeps never drift).
inline void SleepUntilMono(uint64_t t_ns) {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(t_ns / 1'000'000'000ull);
  ts.tv_nsec = static_cast<long>(t_ns % 1'000'000'000ull);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }
}

}  // namespace jaxcc
