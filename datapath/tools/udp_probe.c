// udp_probe: a minimal fixed-rate UDP sender + echoing receiver, used only to self-test the
// emulated-link harness (jaxcc/emulate.py) independently of the real datapath. It is NOT the
// jaxcc sender: it has no congestion control, it just paces packets at a fixed rate against an
// absolute schedule and measures what comes back.
//
//   udp_probe recv --port=N [--bind=IP] [--duration=S] [--summary=FILE.json]
//   udp_probe send --dest=IP --port=N --rate=MBPS --duration=S [--size=PAYLOAD]
//                  [--start-delay=S] [--summary=FILE.json] [--log=FILE.csv]
//
// Rate counts IP packet bytes (payload + 28 for UDP/IPv4), the way the simulator and
// Mahimahi count a 1500-byte packet. Every data packet carries {magic, seq, send time}; the
// receiver echoes a 16-byte ACK with the same fields plus nothing else, so the sender gets RTT
// samples and the receiver gets one-way delays (CLOCK_MONOTONIC is shared by namespaces).
// A one-way delay ends at the kernel's receive stamp (SO_TIMESTAMPNS), not when the receiver
// process reads the packet: on a busy machine the read can come late, and that lateness is the
// receiver's, not the link's; its p95 is reported apart as p95_read_late_ms.
// Summary keys follow the jaxcc-sender/receiver contract: throughput_mbps (goodput, payload
// bits over the active time), p95_owd_ms / p95_rtt_ms, loss (fraction), counts.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAGIC 0x6a786363u  // "jxcc"
#define HIST_BIN_US 50
#define HIST_BINS (20 * 1000 * 1000 / HIST_BIN_US)  // up to 20 s

typedef struct {
  uint32_t magic, seq;
  int64_t send_ns;
} hdr_t;

static volatile sig_atomic_t g_stop = 0;
static void on_signal(int s) {
  (void)s;
  g_stop = 1;
}

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_until(int64_t t_ns) {
  struct timespec ts = {.tv_sec = t_ns / 1000000000LL, .tv_nsec = t_ns % 1000000000LL};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !g_stop) {
  }
}

typedef struct {
  uint32_t *bins;
  uint64_t n;
  double sum_ms, min_ms, max_ms;
} hist_t;

static void hist_init(hist_t *h) {
  h->bins = calloc(HIST_BINS, sizeof(uint32_t));
  h->n = 0;
  h->sum_ms = 0;
  h->min_ms = 1e18;
  h->max_ms = 0;
}
static void hist_add(hist_t *h, int64_t ns) {
  if (ns < 0) ns = 0;
  int64_t b = ns / 1000 / HIST_BIN_US;
  if (b >= HIST_BINS) b = HIST_BINS - 1;
  h->bins[b]++;
  h->n++;
  double ms = ns / 1e6;
  h->sum_ms += ms;
  if (ms < h->min_ms) h->min_ms = ms;
  if (ms > h->max_ms) h->max_ms = ms;
}
static double hist_q(const hist_t *h, double q) {
  if (h->n == 0) return 0;
  uint64_t target = (uint64_t)(q * (h->n - 1)) + 1, acc = 0;
  for (int i = 0; i < HIST_BINS; i++) {
    acc += h->bins[i];
    if (acc >= target) return (i + 0.5) * HIST_BIN_US / 1000.0;
  }
  return h->max_ms;
}

static const char *arg(int argc, char **argv, const char *name, const char *def) {
  size_t n = strlen(name);
  for (int i = 2; i < argc; i++)
    if (!strncmp(argv[i], name, n) && argv[i][n] == '=') return argv[i] + n + 1;
  return def;
}

static int udp_socket(void) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  int big = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  return fd;
}

static int do_recv(int argc, char **argv) {
  int port = atoi(arg(argc, argv, "--port", "9000"));
  const char *bind_ip = arg(argc, argv, "--bind", "0.0.0.0");
  double duration = atof(arg(argc, argv, "--duration", "0"));
  const char *summary = arg(argc, argv, "--summary", NULL);
  int fd = udp_socket();
  int on = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) < 0) {
    perror("udp_probe recv: SO_TIMESTAMPNS");
    return 1;
  }
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, bind_ip, &a.sin_addr);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
    perror("udp_probe recv: bind");
    return 1;
  }
  hist_t owd, read_late;
  hist_init(&owd);
  hist_init(&read_late);
  uint64_t unstamped = 0;  // packets that came without a kernel stamp: their delay ends at the read
  uint64_t pkts = 0, bytes = 0, ack_errors = 0;
  uint32_t max_seq = 0;
  int last_ack_errno = 0;
  int64_t max_gap = 0;  // the longest time between two received packets: a stalled receiver shows here
  int64_t first = 0, last = 0, t_end = duration > 0 ? mono_ns() + (int64_t)(duration * 1e9) : 0;
  char buf[65536];
  while (!g_stop) {
    int64_t now = mono_ns();
    if (t_end && now >= t_end) break;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 100) <= 0) continue;
    struct sockaddr_in from;
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
    char ctl[CMSG_SPACE(sizeof(struct timespec))];
    struct msghdr m = {.msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &iov, .msg_iovlen = 1,
                       .msg_control = ctl, .msg_controllen = sizeof ctl};
    ssize_t n = recvmsg(fd, &m, 0);
    socklen_t fl = m.msg_namelen;
    if (n < (ssize_t)sizeof(hdr_t)) continue;
    hdr_t h;
    memcpy(&h, buf, sizeof h);
    if (h.magic != MAGIC) continue;
    now = mono_ns();
    // The kernel stamps in CLOCK_REALTIME: the packet's age at this read, taken on that clock,
    // moves its arrival onto CLOCK_MONOTONIC, the clock of the sender's send_ns.
    int64_t age = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        struct timespec k, r;
        memcpy(&k, CMSG_DATA(c), sizeof k);
        clock_gettime(CLOCK_REALTIME, &r);
        age = ((int64_t)r.tv_sec - k.tv_sec) * 1000000000LL + (r.tv_nsec - k.tv_nsec);
      }
    if (age < 0) {
      unstamped++;
      age = 0;
    }
    hist_add(&owd, now - age - h.send_ns);
    hist_add(&read_late, age);
    if (!pkts) first = now;
    else if (now - last > max_gap) max_gap = now - last;
    last = now;
    pkts++;
    bytes += (uint64_t)n;
    if (h.seq + 1 > max_seq) max_seq = h.seq + 1;
    if (sendto(fd, &h, sizeof h, MSG_DONTWAIT, (struct sockaddr *)&from, fl) < 0) {
      ack_errors++;  // counted, not retried: the sender sees the ACK as lost
      last_ack_errno = errno;
    }
  }
  double active = (last - first) / 1e9;
  FILE *f = summary ? fopen(summary, "w") : stdout;
  fprintf(f,
          "{\"throughput_mbps\": %.4f, \"p95_owd_ms\": %.3f, \"p50_owd_ms\": %.3f, "
          "\"min_owd_ms\": %.3f, \"loss\": %.5f, \"packets\": %" PRIu64 ", \"bytes\": %" PRIu64
          ", \"active_s\": %.3f, \"ack_errors\": %" PRIu64 ", \"last_ack_errno\": %d"
          ", \"max_gap_ms\": %.3f, \"p95_read_late_ms\": %.3f, \"unstamped\": %" PRIu64 "}\n",
          active > 0 ? bytes * 8 / active / 1e6 : 0.0, hist_q(&owd, 0.95), hist_q(&owd, 0.5),
          owd.n ? owd.min_ms : 0.0, max_seq ? 1.0 - (double)pkts / max_seq : 0.0, pkts, bytes,
          active, ack_errors, last_ack_errno, max_gap / 1e6, hist_q(&read_late, 0.95), unstamped);
  if (f != stdout) fclose(f);
  return 0;
}

static int do_send(int argc, char **argv) {
  const char *dest = arg(argc, argv, "--dest", "127.0.0.1");
  int port = atoi(arg(argc, argv, "--port", "9000"));
  double rate = atof(arg(argc, argv, "--rate", "1"));
  double duration = atof(arg(argc, argv, "--duration", "10"));
  double start_delay = atof(arg(argc, argv, "--start-delay", "0"));
  int size = atoi(arg(argc, argv, "--size", "1472"));
  const char *summary = arg(argc, argv, "--summary", NULL);
  const char *logp = arg(argc, argv, "--log", NULL);
  if (size < (int)sizeof(hdr_t) || size > 65000 || rate <= 0) {
    fprintf(stderr, "udp_probe send: bad --size or --rate\n");
    return 2;
  }
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  int fd = udp_socket();
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  if (inet_pton(AF_INET, dest, &a.sin_addr) != 1) {
    fprintf(stderr, "udp_probe send: bad --dest\n");
    return 2;
  }
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
    perror("udp_probe send: connect");
    return 1;
  }
  FILE *log = logp ? fopen(logp, "w") : NULL;
  if (log) fprintf(log, "t_s,sent_bytes,acked_bytes,mean_rtt_ms\n");
  int64_t t0 = mono_ns() + (int64_t)(start_delay * 1e9);
  sleep_until(t0);
  // Packet interval from IP bytes: rate counts payload + 28 (UDP + IPv4 headers).
  double gap_ns = (size + 28) * 8.0 / (rate * 1e6) * 1e9;
  int64_t t_stop = t0 + (int64_t)(duration * 1e9);
  hist_t rtt;
  hist_init(&rtt);
  char buf[65536];
  memset(buf, 0xab, sizeof buf);
  uint64_t sent = 0, acked = 0, send_err = 0;
  uint64_t bin_sent = 0, bin_acked = 0, bin_rtt_n = 0;
  double bin_rtt_sum = 0;
  int64_t next_bin = t0 + 1000000000LL;
  int64_t grace_end = t_stop + 1500000000LL;  // wait for ACKs of the last packets
  for (;;) {
    int64_t now = mono_ns();
    if (g_stop || now >= grace_end) break;
    if (log && now >= next_bin) {
      fprintf(log, "%.3f,%" PRIu64 ",%" PRIu64 ",%.3f\n", (next_bin - t0) / 1e9, bin_sent,
              bin_acked, bin_rtt_n ? bin_rtt_sum / bin_rtt_n : 0.0);
      bin_sent = bin_acked = bin_rtt_n = 0;
      bin_rtt_sum = 0;
      next_bin += 1000000000LL;
    }
    int64_t due = t0 + (int64_t)(sent * gap_ns);
    if (due < t_stop && now >= due) {
      hdr_t h = {MAGIC, (uint32_t)sent, now};
      memcpy(buf, &h, sizeof h);
      if (send(fd, buf, size, 0) < 0) send_err++;
      sent++;
      bin_sent += size;
      continue;
    }
    // Wait for an ACK until the next send (or a short tick after the last one).
    int64_t wake = due < t_stop ? due : now + 5000000;
    if (wake > next_bin) wake = next_bin;
    int64_t wait = wake - now;
    struct timespec ts = {.tv_sec = wait / 1000000000LL, .tv_nsec = wait % 1000000000LL};
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (ppoll(&p, 1, &ts, NULL) > 0) {
      hdr_t h;
      while (recv(fd, &h, sizeof h, MSG_DONTWAIT) == (ssize_t)sizeof h) {
        if (h.magic != MAGIC) continue;
        int64_t r = mono_ns() - h.send_ns;
        hist_add(&rtt, r);
        acked++;
        bin_acked += size;
        bin_rtt_n++;
        bin_rtt_sum += r / 1e6;
      }
    }
  }
  if (log) fclose(log);
  FILE *f = summary ? fopen(summary, "w") : stdout;
  double dur = (t_stop - t0) / 1e9;
  fprintf(f,
          "{\"throughput_mbps\": %.4f, \"p95_rtt_ms\": %.3f, \"p50_rtt_ms\": %.3f, "
          "\"min_rtt_ms\": %.3f, \"loss\": %.5f, \"sent\": %" PRIu64 ", \"acked\": %" PRIu64
          ", \"send_errors\": %" PRIu64 ", \"duration_s\": %.3f}\n",
          acked * (double)size * 8 / dur / 1e6, hist_q(&rtt, 0.95), hist_q(&rtt, 0.5),
          rtt.n ? rtt.min_ms : 0.0, sent ? 1.0 - (double)acked / sent : 0.0, sent, acked,
          send_err, dur);
  if (f != stdout) fclose(f);
  return 0;
}

int main(int argc, char **argv) {
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  if (argc >= 2 && !strcmp(argv[1], "recv")) return do_recv(argc, argv);
  if (argc >= 2 && !strcmp(argv[1], "send")) return do_send(argc, argv);
  fprintf(stderr, "usage: udp_probe recv|send --flag=value ... (see source)\n");
  return 2;
}
