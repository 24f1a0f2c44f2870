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
//             [--rt=PRIO]
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
#include <time.h>
#include <unistd.h>

#include <libnetfilter_queue/libnetfilter_queue.h>

#define MAX_QUEUES 64

typedef struct {
  uint32_t id;      // netfilter packet id
  int64_t due_ns;   // CLOCK_MONOTONIC release time
} held_t;

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
} queue_t;

static volatile sig_atomic_t g_stop = 0;
static queue_t g_q[MAX_QUEUES];
static int g_nq = 0;
static int64_t g_now_ns = 0;  // arrival time stamped once per receive batch

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
          "          [--rcvbuf=BYTES] [--stats=FILE] [--rt=PRIO]\n",
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
  held_t *h = &q->ring[(q->head + q->count) % q->cap];
  h->id = id;
  h->due_ns = g_now_ns + q->delay_ns;
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

static void write_stats(const char *path) {
  FILE *f = path ? fopen(path, "w") : stderr;
  if (!f) {
    perror("nfq_delay: stats file");
    f = stderr;
  }
  fprintf(f, "{\"queues\": [");
  for (int i = 0; i < g_nq; i++) {
    queue_t *q = &g_q[i];
    fprintf(f,
            "%s{\"queue\": %u, \"delay_ms\": %.3f, \"packets\": %" PRIu64
            ", \"dropped_full\": %" PRIu64 ", \"max_held\": %" PRIu64
            ", \"mean_late_us\": %.1f, \"max_late_us\": %.1f}",
            i ? ", " : "", q->num, q->delay_ns / 1e6, q->packets, q->dropped_full, q->max_held,
            q->released ? q->sum_late_ns / q->released / 1e3 : 0.0, q->max_late_ns / 1e3);
  }
  fprintf(f, "]}\n");
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
    if (!q->ring) {
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
  while (!g_stop) {
    int64_t now = mono_ns();
    release(now, 0);
    int64_t due = next_due();
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
    // Drain everything readable; one timestamp per wake-up is exact enough (we read for only
    // microseconds) and keeps the syscalls per packet low.
    g_now_ns = mono_ns();
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
  }
  nfq_close(h);
  return 0;
}
