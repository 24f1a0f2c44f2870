// nfq_delay: user-space propagation delay for the emulated links of jaxcc.
//
// Why this exists: the kernels we run on (and CI) are built without sch_netem, and there are
// no modules to load, so `tc qdisc ... netem delay` is not available. Propagation delay is
// therefore added in user space: iptables sends packets to an NFQUEUE, this program receives
// only their metadata (packet id, never the payload), remembers the moment each one arrived,
// and gives the verdict NF_ACCEPT exactly D ms later. The kernel keeps the packet itself
// while we wait, so the cost per packet is one small netlink message each way.
//
// Usage (inside the router namespace, one process for all queues):
//   nfq_delay --queue=1:20 --queue=2:20 [--capacity=65536] [--rcvbuf=8388608] [--stats=FILE]
//             [--rt=PRIO] [--cpu=N] [--arrival=kernel|read] [--stall=EVERY_MS:STALL_MS]
// Each --queue=NUM:DELAY_MS binds NFQUEUE number NUM and holds its packets DELAY_MS
// (fractional ms are fine). Separate queues give per-direction and per-flow delays; the
// harness (jaxcc/emulate.py) steers packets to them with iptables rules. The program prints
// "ready" on stdout once every queue is bound, so callers can add the iptables rules only
// then (with no listener on a queue, the kernel drops what is sent to it).
//
// Properties the emulation relies on:
//  * Order: a queue has one constant delay, so release order = arrival order. Each queue is
//    a FIFO ring, and the kernel hands us packets of one queue in order. Released packets get
//    one batch verdict ("accept every id <= N"), valid because ids grow monotonically and
//    everything older has already been released or dropped.
//  * Accuracy: deadlines are CLOCK_MONOTONIC nanoseconds; we sleep in ppoll() with a
//    nanosecond timeout and the timer slack set to 1 ns (the default 50 us slack would smear
//    releases), so releases are late by only the wake-up latency (tens of microseconds).
//  * Bounded memory: each ring has a fixed capacity, and the kernel queue length is set to
//    the same number. A packet that finds its ring full is dropped (as a real line would
//    lose it), and counted.
//  * Clean exit: SIGTERM/SIGINT/SIGHUP set a flag; the loop then accepts every held packet
//    (so no packet is silently lost on shutdown), unbinds the queues and writes stats.
//
// Self-check (the stats file): every packet's actual hold is measured against the configured
// delay, from an arrival time we do not take ourselves: the kernel's receive timestamp of the
// packet (NFQA_TIMESTAMP, skb->tstamp, stamped when the router's veth received it). The kernel
// stamps received packets only while some socket on the machine asks for receive timestamps,
// so we open one UDP socket with SO_TIMESTAMPNS (it is never read). A late wake-up, a late
// read of the netlink socket or a late verdict all show up as hold error = verdict time -
// kernel arrival - delay; its per-queue and overall histograms (10 us bins) give p50/p95/max
// in the stats file, with the read lateness (read time - kernel arrival) beside them. Packets
// without a usable kernel stamp (none, or one that is not a receive time, e.g. a TCP
// sender's earliest-departure time kept across the veth) are counted and measured from our
// read time instead (then a late read is invisible for them).
//  * --arrival=kernel (default) also sets each deadline from the kernel stamp, so a read that
//    is late by less than the delay costs nothing; --arrival=read is the old behaviour
//    (deadline = our read time + delay), kept to measure the difference.
//  * --rt=PRIO: SCHED_FIFO at PRIO plus mlockall; --cpu=N pins the process to CPU N. What took
//    effect (sched_getscheduler / sched_getaffinity after the calls) is in the stats file.
//  * --stall=EVERY_MS:STALL_MS is a TEST KNOB, never for real runs: every EVERY_MS the loop
//    sleeps STALL_MS without serving the queues, as a starved process on an overloaded machine
//    would. Tests use it to show that the self-check flags such a run.
#define _GNU_SOURCE
#include <errno.h>
#include <arpa/inet.h>
#include <inttypes.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include <libnetfilter_queue/libnetfilter_queue.h>

#define MAX_QUEUES 64

typedef struct {
  uint32_t id;      // netfilter packet id
  int64_t due_ns;   // CLOCK_MONOTONIC release time
  int64_t arr_ns;   // CLOCK_MONOTONIC arrival (kernel stamp if usable, else our read time)
} held_t;

// Histogram of non-negative durations in 10 us bins up to 200 ms (the last bin: beyond).
#define HIST_BIN_NS 10000LL
#define HIST_BINS 20001
typedef struct {
  uint64_t *bins;
  uint64_t n;
  int64_t max_ns;
  double sum_ns;
} hist_t;

static int hist_init(hist_t *h) {
  memset(h, 0, sizeof *h);
  h->bins = calloc(HIST_BINS, sizeof(uint64_t));
  return h->bins != NULL;
}

static void hist_add(hist_t *h, int64_t v) {
  if (v < 0) v = 0;
  int64_t b = v / HIST_BIN_NS;
  if (b >= HIST_BINS) b = HIST_BINS - 1;
  h->bins[b]++;
  h->n++;
  h->sum_ns += (double)v;
  if (v > h->max_ns) h->max_ns = v;
}

static void hist_merge(hist_t *into, const hist_t *h) {
  for (int b = 0; b < HIST_BINS; b++) into->bins[b] += h->bins[b];
  into->n += h->n;
  into->sum_ns += h->sum_ns;
  if (h->max_ns > into->max_ns) into->max_ns = h->max_ns;
}

// The q-quantile (nearest rank) in us: the upper edge of its bin, never above the maximum.
static double hist_quantile_us(const hist_t *h, double q) {
  if (h->n == 0) return 0.0;
  uint64_t rank = (uint64_t)(q * (double)h->n + 0.999999);
  if (rank < 1) rank = 1;
  uint64_t c = 0;
  for (int b = 0; b < HIST_BINS; b++) {
    c += h->bins[b];
    if (c >= rank) {
      if (b == HIST_BINS - 1) break;
      double edge = (double)((b + 1) * HIST_BIN_NS);
      return (edge < (double)h->max_ns ? edge : (double)h->max_ns) / 1e3;
    }
  }
  return h->max_ns / 1e3;
}

static void hist_json(FILE *f, const hist_t *h) {
  fprintf(f,
          "{\"n\": %" PRIu64 ", \"p50\": %.1f, \"p95\": %.1f, \"p99\": %.1f, \"max\": %.1f, "
          "\"mean\": %.1f}",
          h->n, hist_quantile_us(h, 0.50), hist_quantile_us(h, 0.95), hist_quantile_us(h, 0.99),
          h->max_ns / 1e3, h->n ? h->sum_ns / (double)h->n / 1e3 : 0.0);
}

typedef struct {
  uint16_t num;
  int64_t delay_ns;
  struct nfq_q_handle *qh;
  held_t *ring;
  uint32_t cap, head, count;
  // stats
  uint64_t packets, dropped_full, max_held;
  int64_t max_late_ns;    // worst release lateness observed
  double sum_late_ns;     // for the mean lateness
  uint64_t released;
  uint64_t kstamped;      // packets whose arrival came from a usable kernel stamp
  uint64_t kstamp_bad;    // stamped, but not a plausible receive time (see on_packet)
  hist_t hold_err;        // actual hold - configured delay, per released packet
  hist_t read_late;       // our read time - kernel arrival (kernel-stamped packets only)
} queue_t;

static volatile sig_atomic_t g_stop = 0;
static queue_t g_q[MAX_QUEUES];
static int g_nq = 0;
static int64_t g_now_ns = 0;  // our read time, once per receive batch
static int64_t g_real_off_ns = 0;  // CLOCK_REALTIME - CLOCK_MONOTONIC at that read
static int g_arrival_kernel = 1;   // deadlines from the kernel stamp (else from g_now_ns)

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

static void usage(const char *argv0) {
  fprintf(stderr,
          "usage: %s --queue=NUM:DELAY_MS [--queue=NUM:DELAY_MS ...] [--capacity=N]\n"
          "          [--rcvbuf=BYTES] [--stats=FILE] [--rt=PRIO] [--cpu=N]\n"
          "          [--arrival=kernel|read] [--stall=EVERY_MS:STALL_MS (test knob)]\n",
          argv0);
}

// Callback for each queued packet: remember it; the verdict comes later from release().
static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *nfa,
                     void *data) {
  (void)msg;
  queue_t *q = (queue_t *)data;
  struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
  if (!ph) return 0;
  uint32_t id = ntohl(ph->packet_id);
  q->packets++;
  if (q->count == q->cap) {
    q->dropped_full++;
    nfq_set_verdict(qh, id, NF_DROP, 0, NULL);
    return 0;
  }
  // The kernel's receive stamp (CLOCK_REALTIME, us) as CLOCK_MONOTONIC. Only a stamp from
  // the last second up to now is a receive time; anything else (e.g. a TCP sender's
  // CLOCK_MONOTONIC departure time kept across the veth) is not used.
  int64_t arr = g_now_ns;
  struct timeval tv;
  if (nfq_get_timestamp(nfa, &tv) == 0 && (tv.tv_sec || tv.tv_usec)) {
    int64_t k = (int64_t)tv.tv_sec * 1000000000LL + (int64_t)tv.tv_usec * 1000LL - g_real_off_ns;
    int64_t late = g_now_ns - k;
    if (late >= -2000 && late < 1000000000LL) {   // 2 us: the stamp's truncation to us
      arr = k < g_now_ns ? k : g_now_ns;
      q->kstamped++;
      hist_add(&q->read_late, g_now_ns - arr);
    } else {
      q->kstamp_bad++;
    }
  }
  held_t *h = &q->ring[(q->head + q->count) % q->cap];
  h->id = id;
  h->arr_ns = arr;
  h->due_ns = (g_arrival_kernel ? arr : g_now_ns) + q->delay_ns;
  q->count++;
  if (q->count > q->max_held) q->max_held = q->count;
  return 0;
}

// Accept every packet whose deadline is <= now (or all, if flush); one batch verdict per queue.
static void release(int64_t now, int flush) {
  for (int i = 0; i < g_nq; i++) {
    queue_t *q = &g_q[i];
    uint32_t last_id = 0;
    int n = 0;
    while (q->count > 0) {
      held_t *h = &q->ring[q->head];
      if (!flush && h->due_ns > now) break;
      int64_t late = now - h->due_ns;
      if (!flush) {
        if (late > q->max_late_ns) q->max_late_ns = late;
        q->sum_late_ns += (double)late;
        q->released++;
        hist_add(&q->hold_err, now - h->arr_ns - q->delay_ns);
      }
      last_id = h->id;
      n++;
      q->head = (q->head + 1) % q->cap;
      q->count--;
    }
    if (n == 1) {
      nfq_set_verdict(q->qh, last_id, NF_ACCEPT, 0, NULL);
    } else if (n > 1) {
      nfq_set_verdict_batch(q->qh, last_id, NF_ACCEPT);
    }
  }
}

static int64_t next_due(void) {
  int64_t best = INT64_MAX;
  for (int i = 0; i < g_nq; i++)
    if (g_q[i].count > 0 && g_q[i].ring[g_q[i].head].due_ns < best)
      best = g_q[i].ring[g_q[i].head].due_ns;
  return best;
}

static const char *g_sched_desc = "SCHED_OTHER";
static int g_sched_prio = 0;
static int g_cpu = -1;
static double g_stall_every_ms = 0, g_stall_ms = 0;
static uint64_t g_stalls = 0;

static void write_stats(const char *path) {
  FILE *f = path ? fopen(path, "w") : stderr;
  if (!f) {
    perror("nfq_delay: stats file");
    f = stderr;
  }
  hist_t all_err, all_read;
  int have_all = hist_init(&all_err) && hist_init(&all_read);
  uint64_t all_released = 0, all_k = 0, all_bad = 0, all_pk = 0, all_drop = 0;
  fprintf(f, "{\"version\": 2, \"sched\": \"%s\", \"sched_priority\": %d, \"cpu\": %d, "
             "\"arrival\": \"%s\", \"stall_every_ms\": %.3f, \"stall_ms\": %.3f, "
             "\"stalls\": %" PRIu64 ", \"queues\": [",
          g_sched_desc, g_sched_prio, g_cpu, g_arrival_kernel ? "kernel" : "read",
          g_stall_every_ms, g_stall_ms, g_stalls);
  for (int i = 0; i < g_nq; i++) {
    queue_t *q = &g_q[i];
    fprintf(f,
            "%s{\"queue\": %u, \"delay_ms\": %.3f, \"packets\": %" PRIu64
            ", \"dropped_full\": %" PRIu64 ", \"max_held\": %" PRIu64
            ", \"mean_late_us\": %.1f, \"max_late_us\": %.1f, \"released\": %" PRIu64
            ", \"kstamped\": %" PRIu64 ", \"kstamp_bad\": %" PRIu64 ", \"hold_err_us\": ",
            i ? ", " : "", q->num, q->delay_ns / 1e6, q->packets, q->dropped_full, q->max_held,
            q->released ? q->sum_late_ns / q->released / 1e3 : 0.0, q->max_late_ns / 1e3,
            q->released, q->kstamped, q->kstamp_bad);
    hist_json(f, &q->hold_err);
    fprintf(f, ", \"read_late_us\": ");
    hist_json(f, &q->read_late);
    fprintf(f, "}");
    if (have_all) {
      hist_merge(&all_err, &q->hold_err);
      hist_merge(&all_read, &q->read_late);
    }
    all_released += q->released;
    all_k += q->kstamped;
    all_bad += q->kstamp_bad;
    all_pk += q->packets;
    all_drop += q->dropped_full;
  }
  fprintf(f, "], \"overall\": {\"packets\": %" PRIu64 ", \"dropped_full\": %" PRIu64
             ", \"released\": %" PRIu64 ", \"kstamped\": %" PRIu64 ", \"kstamp_bad\": %" PRIu64,
          all_pk, all_drop, all_released, all_k, all_bad);
  if (have_all) {
    fprintf(f, ", \"hold_err_us\": ");
    hist_json(f, &all_err);
    fprintf(f, ", \"read_late_us\": ");
    hist_json(f, &all_read);
  }
  fprintf(f, "}}\n");
  free(all_err.bins);
  free(all_read.bins);
  if (f != stderr) fclose(f);
}

int main(int argc, char **argv) {
  uint32_t capacity = 65536;
  int rcvbuf = 8 << 20;
  const char *stats_path = NULL;
  int rt_prio = 0;
  struct {
    unsigned num;
    double ms;
  } spec[MAX_QUEUES];
  int nspec = 0;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strncmp(a, "--queue=", 8)) {
      if (nspec == MAX_QUEUES || sscanf(a + 8, "%u:%lf", &spec[nspec].num, &spec[nspec].ms) != 2 ||
          spec[nspec].num > 65535 || spec[nspec].ms < 0) {
        fprintf(stderr, "nfq_delay: bad %s (want --queue=NUM:DELAY_MS)\n", a);
        return 2;
      }
      nspec++;
    } else if (!strncmp(a, "--capacity=", 11)) {
      capacity = (uint32_t)strtoul(a + 11, NULL, 10);
    } else if (!strncmp(a, "--rcvbuf=", 9)) {
      rcvbuf = atoi(a + 9);
    } else if (!strncmp(a, "--rt=", 5)) {
      rt_prio = atoi(a + 5);
    } else if (!strncmp(a, "--cpu=", 6)) {
      char *end = NULL;
      long cpu = strtol(a + 6, &end, 10);
      if (end == a + 6 || *end != '\0' || cpu < 0 || cpu > 4095) {
        fprintf(stderr, "nfq_delay: bad %s (want --cpu=N, N in 0..4095)\n", a);
        return 2;
      }
      g_cpu = (int)cpu;
    } else if (!strcmp(a, "--arrival=kernel")) {
      g_arrival_kernel = 1;
    } else if (!strcmp(a, "--arrival=read")) {
      g_arrival_kernel = 0;
    } else if (!strncmp(a, "--stall=", 8)) {
      if (sscanf(a + 8, "%lf:%lf", &g_stall_every_ms, &g_stall_ms) != 2 || g_stall_ms <= 0 ||
          g_stall_every_ms <= g_stall_ms) {
        fprintf(stderr, "nfq_delay: bad %s (want --stall=EVERY_MS:STALL_MS, EVERY > STALL > 0)\n", a);
        return 2;
      }
    } else if (!strncmp(a, "--stats=", 8)) {
      stats_path = a + 8;
    } else {
      usage(argv[0]);
      return 2;
    }
  }
  if (nspec == 0 || capacity < 16) {
    usage(argv[0]);
    return 2;
  }

  // Sleep precisely: the default 50 us timer slack would add up to 50 us to every release.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  // On a small shared machine a busy neighbour can delay our wake-up by milliseconds.
  // SCHED_FIFO (we sleep in ppoll, so it never spins) plus locked memory keeps releases
  // on time; without the privilege we just warn and carry on with normal scheduling.
  if (rt_prio > 0) {
    struct sched_param sp = {.sched_priority = rt_prio};
    if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0) perror("nfq_delay: SCHED_FIFO (ignored)");
    if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0) perror("nfq_delay: mlockall (ignored)");
  }
  if (g_cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(g_cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) < 0) {
      perror("nfq_delay: sched_setaffinity (ignored)");
      g_cpu = -1;
    }
  }
  // What actually took effect goes into the stats file.
  int pol = sched_getscheduler(0);
  g_sched_desc = pol == SCHED_FIFO ? "SCHED_FIFO" : pol == SCHED_RR ? "SCHED_RR" : "SCHED_OTHER";
  struct sched_param cur;
  if (sched_getparam(0, &cur) == 0) g_sched_prio = cur.sched_priority;
  // Ask the kernel to stamp received packets (a global switch: any socket that wants receive
  // timestamps turns it on); the stamps come back to us as NFQA_TIMESTAMP.
  int tsock = socket(AF_INET, SOCK_DGRAM, 0);
  int one = 1;
  if (tsock < 0 || setsockopt(tsock, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) < 0)
    perror("nfq_delay: SO_TIMESTAMPNS (hold errors measured from read times)");

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;  // no SA_RESTART: ppoll returns EINTR and we leave the loop
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  // Block the stop signals except while sleeping in ppoll(), so a signal that arrives just
  // before the sleep is not missed until the next packet or deadline.
  sigset_t stopset, waitmask;
  sigemptyset(&stopset);
  sigaddset(&stopset, SIGTERM);
  sigaddset(&stopset, SIGINT);
  sigaddset(&stopset, SIGHUP);
  sigprocmask(SIG_BLOCK, &stopset, &waitmask);  // waitmask = the mask without them

  struct nfq_handle *h = nfq_open();
  if (!h) {
    perror("nfq_delay: nfq_open (need CAP_NET_ADMIN)");
    return 1;
  }
  // nfq_bind_pf is a no-op on kernels >= 3.8 but harmless; ignore its result.
  nfq_bind_pf(h, AF_INET);

  for (int i = 0; i < nspec; i++) {
    queue_t *q = &g_q[g_nq];
    memset(q, 0, sizeof *q);
    q->num = (uint16_t)spec[i].num;
    q->delay_ns = (int64_t)(spec[i].ms * 1e6 + 0.5);
    q->cap = capacity;
    q->ring = calloc(capacity, sizeof(held_t));
    if (!q->ring || !hist_init(&q->hold_err) || !hist_init(&q->read_late)) {
      fprintf(stderr, "nfq_delay: out of memory\n");
      return 1;
    }
    q->qh = nfq_create_queue(h, q->num, &on_packet, q);
    if (!q->qh) {
      fprintf(stderr, "nfq_delay: cannot bind queue %u (already in use?): %s\n", q->num,
              strerror(errno));
      return 1;
    }
    // Metadata only: we never look at the payload, so do not copy it to user space.
    if (nfq_set_mode(q->qh, NFQNL_COPY_META, 0) < 0) {
      fprintf(stderr, "nfq_delay: nfq_set_mode failed on queue %u\n", q->num);
      return 1;
    }
    // The kernel's default queue length (1024) would cap the bandwidth-delay product at
    // 1024 packets; match it to our ring so both bound memory at the same point.
    nfq_set_queue_maxlen(q->qh, capacity);
    g_nq++;
  }

  // A big receive buffer absorbs bursts while we are inside a verdict loop; if it still
  // overflows the kernel drops the packet (counted in /proc/net/netfilter/nfnetlink_queue).
  nfnl_rcvbufsiz(nfq_nfnlh(h), (unsigned)rcvbuf);
  int fd = nfq_fd(h);

  printf("ready\n");
  fflush(stdout);

  char buf[65536] __attribute__((aligned));
  const int64_t stall_every_ns = (int64_t)(g_stall_every_ms * 1e6);
  const int64_t stall_ns = (int64_t)(g_stall_ms * 1e6);
  int64_t next_stall = stall_ns > 0 ? mono_ns() + stall_every_ns : INT64_MAX;
  while (!g_stop) {
    int64_t now = mono_ns();
    if (now >= next_stall) {  // test knob: starve the queues for stall_ns
      struct timespec st = {.tv_sec = stall_ns / 1000000000LL, .tv_nsec = stall_ns % 1000000000LL};
      nanosleep(&st, NULL);
      g_stalls++;
      next_stall += stall_every_ns;
      now = mono_ns();
      if (next_stall <= now) next_stall = now + stall_every_ns;
    }
    release(now, 0);
    int64_t due = next_due();
    if (next_stall < due) due = next_stall;
    struct timespec ts, *tsp = NULL;
    if (due != INT64_MAX) {
      int64_t wait = due - mono_ns();
      if (wait < 0) wait = 0;
      ts.tv_sec = wait / 1000000000LL;
      ts.tv_nsec = wait % 1000000000LL;
      tsp = &ts;
    }
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int r = ppoll(&pfd, 1, tsp, &waitmask);
    if (r < 0) {
      if (errno == EINTR) continue;
      perror("nfq_delay: ppoll");
      break;
    }
    if (r == 0) continue;  // timeout: a deadline is due
    // Drain everything readable; one read time per wake-up is exact enough (we read for only
    // microseconds, and the kernel stamps give each packet's own arrival) and keeps the
    // syscalls per packet low.
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    g_now_ns = mono_ns();
    g_real_off_ns = (int64_t)rt.tv_sec * 1000000000LL + rt.tv_nsec - g_now_ns;
    for (;;) {
      ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
        if (errno == ENOBUFS) {  // kernel dropped notifications; keep going
          fprintf(stderr, "nfq_delay: ENOBUFS (receive buffer overflow)\n");
          continue;
        }
        perror("nfq_delay: recv");
        g_stop = 1;
        break;
      }
      nfq_handle_packet(h, buf, (int)n);
    }
  }

  // Shutdown: let every held packet go now rather than have the kernel drop them on unbind.
  release(mono_ns(), 1);
  write_stats(stats_path);
  for (int i = 0; i < g_nq; i++) {
    nfq_destroy_queue(g_q[i].qh);
    free(g_q[i].ring);
    free(g_q[i].hold_err.bins);
    free(g_q[i].read_late.bins);
  }
  nfq_close(h);
  return 0;
}
