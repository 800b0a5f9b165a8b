/* pubsub_bench: the compiled load generators and receivers of bench/pubsub_compare.py.
 *
 * pubsub_compare.py compiles this file with `cc -O2 -pthread` on first use (into
 * $TMPDIR/larder-bench/, keyed by a hash of the source) and runs one subcommand per measured run:
 *
 *   pubsub_bench publish --port P [--pid SERVER_PID] --subs N --rx-threads T --mode max|rate
 *                        [--rate MSG_PER_S] --seconds D [--payload B] [--pipeline K] [--window W]
 *   pubsub_bench expiry  --port P [--pid SERVER_PID] --keys N --spread-ms S --grace-ms G
 *   pubsub_bench multi   --port P [--pid SERVER_PID] --clients C --txns N [--keyspace K]
 *                        [--plain 1]
 *   pubsub_bench stalled --port P [--pid SERVER_PID] --seconds D --kv-rate R [--stalled 0|1]
 *                        [--pub-bytes-per-s B] [--msg-bytes M] [--rcvbuf BYTES]
 *
 * Each prints one JSON object on stdout. Exit status 0: measured; 4: the server answered an
 * error to a command the workload needs (the message, e.g. "ERR unknown command 'SUBSCRIBE'",
 * is in {"error": ...} and on stderr); 3: anything else went wrong (timeout, protocol error,
 * connection closed); 2: bad usage. With --pid, the server's CPU time (utime+stime from
 * /proc/PID/stat) and RSS (VmRSS) are read at the edges of the measured window, so connection
 * setup and subscription are not counted.
 *
 * RESP: a small parser (rparse) that takes one complete top-level value from a buffer, or says
 * that the buffer holds only part of one (then the bytes stay, the buffer grows if it is full,
 * and parsing resumes from the start of that value after the next read). It reads RESP2 and
 * RESP3 types; push frames are `*3\r\n$7\r\nmessage\r\n$<n>\r\n<channel>\r\n$<n>\r\n<payload>\r\n`
 * (or `>3` under RESP3). Latencies go into a log-linear histogram (128 sub-buckets per power of
 * two of nanoseconds: < 0.8% relative error); percentiles are nearest-rank, maxima are exact.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ basics */

static const char *g_host = "127.0.0.1";
static int g_port, g_pid;

static uint64_t mono_ns(void) {
  struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static uint64_t real_ns(void) {
  struct timespec ts; clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static void sleep_until(uint64_t t) {
  struct timespec ts = {.tv_sec = (time_t)(t / 1000000000ull), .tv_nsec = (long)(t % 1000000000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
}
static __thread uint64_t rng_state = 88172645463325252ull;
static uint64_t xrand(void) {
  uint64_t x = rng_state; x ^= x << 13; x ^= x >> 7; x ^= x << 17; return rng_state = x;
}

/* JSON string body: escape what JSON needs, drop other control bytes. */
static void json_str(FILE *f, const char *s, size_t n) {
  fputc('"', f);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') { fputc('\\', f); fputc(c, f); }
    else if (c == '\n') fputs("\\n", f);
    else if (c >= 0x20 && c < 0x7f) fputc(c, f);
  }
  fputc('"', f);
}

/* Print {"error": msg} on stdout and msg on stderr, and exit with code. */
static void fail(int code, const char *fmt, ...) {
  char msg[1024]; va_list ap; va_start(ap, fmt); vsnprintf(msg, sizeof msg, fmt, ap); va_end(ap);
  size_t ml = strlen(msg);
  while (ml && (msg[ml - 1] == ' ' || msg[ml - 1] == ':')) msg[--ml] = 0;
  printf("{\"error\": "); json_str(stdout, msg, strlen(msg)); printf(", \"exit\": %d}\n", code);
  fflush(stdout);
  fprintf(stderr, "pubsub_bench: %s\n", msg);
  _exit(code);
}

/* ------------------------------------------------------------------ options */

static int g_argc; static char **g_argv;
static const char *opt_s(const char *name, const char *def) {
  for (int i = 2; i + 1 < g_argc; i += 2)
    if (!strcmp(g_argv[i] + 2, name)) return g_argv[i + 1];
  return def;
}
static long long opt_ll(const char *name, long long def) {
  const char *s = opt_s(name, NULL); return s ? atoll(s) : def;
}
static double opt_d(const char *name, double def) {
  const char *s = opt_s(name, NULL); return s ? atof(s) : def;
}

/* ------------------------------------------------------------------ the server's /proc */

static double server_cpu_s(void) {
  if (g_pid <= 0) return -1;
  char path[64], buf[4096]; snprintf(path, sizeof path, "/proc/%d/stat", g_pid);
  FILE *f = fopen(path, "r"); if (!f) return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f); fclose(f); buf[n] = 0;
  char *p = strrchr(buf, ')'); if (!p) return -1;
  unsigned long long ut = 0, st = 0;
  /* after ") ": state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime */
  if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
    return -1;
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}
static long long server_rss(void) {
  if (g_pid <= 0) return -1;
  char path[64], line[256]; snprintf(path, sizeof path, "/proc/%d/status", g_pid);
  FILE *f = fopen(path, "r"); if (!f) return -1;
  long long kb = -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "VmRSS:", 6)) { kb = atoll(line + 6); break; }
  fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}
static double self_cpu_s(void) {
  struct rusage ru; getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* ------------------------------------------------------------------ histogram */

#define HSUB 7
#define HBUCKETS ((64 - HSUB + 1) << HSUB)
typedef struct { uint64_t n, max, min; double sum; uint64_t b[HBUCKETS]; } hist_t;

static int hidx(uint64_t v) {
  if (v < (1u << HSUB)) return (int)v;
  int e = 63 - __builtin_clzll(v);
  return ((e - HSUB + 1) << HSUB) + (int)((v >> (e - HSUB)) & ((1u << HSUB) - 1));
}
static uint64_t hmid(int i) {
  if (i < (1 << HSUB)) return (uint64_t)i;
  int e = (i >> HSUB) + HSUB - 1;
  uint64_t lo = (1ull << e) | ((uint64_t)(i & ((1 << HSUB) - 1)) << (e - HSUB));
  return lo + (1ull << (e - HSUB)) / 2;
}
static void hinit(hist_t *h) { memset(h, 0, sizeof *h); h->min = UINT64_MAX; }
static void hadd(hist_t *h, uint64_t v) {
  h->b[hidx(v)]++; h->n++; h->sum += (double)v;
  if (v > h->max) h->max = v;
  if (v < h->min) h->min = v;
}
static void hmerge(hist_t *d, const hist_t *s) {
  for (int i = 0; i < HBUCKETS; i++) d->b[i] += s->b[i];
  d->n += s->n; d->sum += s->sum;
  if (s->max > d->max) d->max = s->max;
  if (s->min < d->min) d->min = s->min;
}
static double hpct_ms(const hist_t *h, double p) { /* nearest rank */
  if (!h->n) return -1;
  uint64_t r = (uint64_t)(p * (double)h->n); if ((double)r < p * (double)h->n) r++;
  if (r < 1) r = 1;
  uint64_t c = 0;
  for (int i = 0; i < HBUCKETS; i++) {
    c += h->b[i];
    if (c >= r) {
      uint64_t v = hmid(i);
      if (v > h->max) v = h->max;
      if (v < h->min) v = h->min;
      return (double)v / 1e6;
    }
  }
  return (double)h->max / 1e6;
}
/* ,"<prefix>p50_ms": ..., p90, p99, p999, max, avg, count */
static void hprint(const char *prefix, const hist_t *h) {
  if (!h->n) { printf(", \"%scount\": 0", prefix); return; }
  printf(", \"%sp50_ms\": %.4f, \"%sp90_ms\": %.4f, \"%sp99_ms\": %.4f, \"%sp999_ms\": %.4f, "
         "\"%smax_ms\": %.4f, \"%savg_ms\": %.4f, \"%scount\": %llu",
         prefix, hpct_ms(h, 0.50), prefix, hpct_ms(h, 0.90), prefix, hpct_ms(h, 0.99), prefix,
         hpct_ms(h, 0.999), prefix, (double)h->max / 1e6, prefix, h->sum / (double)h->n / 1e6,
         prefix, (unsigned long long)h->n);
}

/* ------------------------------------------------------------------ RESP */

typedef struct { char t; long long i; const char *s; long long len; } rel_t;

/* Parse one value at p (n bytes there). Returns the bytes it spans, 0 if only part of it is
 * there, -1 on a protocol error. h (if not NULL) gets its type and, for scalars, its text
 * ('+', '-', ':', ...: the line; '$': the payload, s NULL for a null bulk) and for integers,
 * lengths and counts the number in i. For an aggregate, el[0..maxel) get its first elements and
 * *nel how many were stored. Nested aggregates are parsed but not stored. */
static long long rparse(const char *p, size_t n, rel_t *h, rel_t *el, int maxel, int *nel,
                        int depth) {
  if (nel) *nel = 0;
  if (n < 3) return 0;
  const char *cr = memchr(p, '\r', n);
  if (!cr || (size_t)(cr - p) + 1 >= n) return 0;
  if (cr[1] != '\n') return -1;
  size_t hl = (size_t)(cr - p) + 2;
  char t = p[0];
  long long num = 0;
  if (t == ':' || t == '$' || t == '*' || t == '>' || t == '~' || t == '%' || t == '=' ||
      t == '!' || t == '|') {
    const char *q = p + 1; int neg = 0;
    if (*q == '-') { neg = 1; q++; }
    if (q == cr) return -1;
    for (; q < cr; q++) {
      if (*q < '0' || *q > '9') return -1;
      num = num * 10 + (*q - '0');
    }
    if (neg) num = -num;
  }
  if (h) { h->t = t; h->i = num; h->s = p + 1; h->len = cr - p - 1; }
  switch (t) {
  case '+': case '-': case ':': case '_': case ',': case '#': case '(':
    return (long long)hl;
  case '$': case '=': case '!': {
    if (num < 0) { if (h) { h->s = NULL; h->len = -1; } return (long long)hl; }
    if ((unsigned long long)(n - hl) < (unsigned long long)num + 2) return 0;
    if (p[hl + num] != '\r' || p[hl + num + 1] != '\n') return -1;
    if (h) { h->s = p + hl; h->len = num; }
    return (long long)hl + num + 2;
  }
  case '*': case '>': case '~': case '%': case '|': {
    if (num < 0) return (long long)hl;
    if (depth > 16) return -1;
    long long cnt = (t == '%' || t == '|') ? 2 * num : num;
    size_t off = hl;
    for (long long k = 0; k < cnt; k++) {
      rel_t *dst = (el && k < maxel) ? &el[k] : NULL;
      long long r = rparse(p + off, n - off, dst, NULL, 0, NULL, depth + 1);
      if (r <= 0) return r;
      off += (size_t)r;
    }
    if (nel) *nel = (int)(cnt < maxel ? cnt : maxel);
    if (t == '|') { /* an attribute precedes the real value */
      long long r = rparse(p + off, n - off, h, el, maxel, nel, depth + 1);
      if (r <= 0) return r;
      off += (size_t)r;
    }
    return (long long)off;
  }
  default:
    return -1;
  }
}
static int is_str(const rel_t *e, const char *s) {
  size_t n = strlen(s);
  return (e->t == '$' || e->t == '+') && e->len == (long long)n && !memcmp(e->s, s, n);
}

/* A connection: fd, a read buffer that keeps a partial value across reads, a write buffer. */
typedef struct {
  int fd, closed;
  char *rb; size_t rcap, rlen, roff;
  char *wb; size_t wcap, wlen, woff;
} conn_t;

static int dial(int rcvbuf) {
  int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  if (fd < 0) fail(3, "socket: %s", strerror(errno));
  if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET; sa.sin_port = htons((uint16_t)g_port);
  if (inet_pton(AF_INET, g_host, &sa.sin_addr) != 1) fail(2, "bad IPv4 address %s", g_host);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
    fail(3, "connect to %s:%d: %s", g_host, g_port, strerror(errno));
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}
static conn_t *conn_new(int rcvbuf) {
  conn_t *c = calloc(1, sizeof *c);
  if (!c) fail(3, "out of memory");
  c->fd = dial(rcvbuf);
  c->rcap = 16384; c->rb = malloc(c->rcap);
  if (!c->rb) fail(3, "out of memory");
  return c;
}
static void set_nonblock(int fd) {
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) fail(3, "fcntl: %s", strerror(errno));
}
static void wput(conn_t *c, const void *p, size_t n) {
  if (c->wlen + n > c->wcap) {
    if (c->woff) { memmove(c->wb, c->wb + c->woff, c->wlen - c->woff); c->wlen -= c->woff; c->woff = 0; }
    while (c->wlen + n > c->wcap) c->wcap = c->wcap ? c->wcap * 2 : 65536;
    if (!(c->wb = realloc(c->wb, c->wcap))) fail(3, "out of memory");
  }
  memcpy(c->wb + c->wlen, p, n); c->wlen += n;
}
static void wbulk(conn_t *c, const char *s, size_t n) {
  char hdr[32]; int k = snprintf(hdr, sizeof hdr, "$%zu\r\n", n);
  wput(c, hdr, (size_t)k); wput(c, s, n); wput(c, "\r\n", 2);
}
/* Append a command: argc NUL-terminated strings. */
static void wcmd(conn_t *c, int argc, ...) {
  char hdr[32]; int k = snprintf(hdr, sizeof hdr, "*%d\r\n", argc);
  wput(c, hdr, (size_t)k);
  va_list ap; va_start(ap, argc);
  for (int i = 0; i < argc; i++) { const char *s = va_arg(ap, const char *); wbulk(c, s, strlen(s)); }
  va_end(ap);
}
/* Write what is pending without blocking; returns 1 if something is still pending. */
static int wflush(conn_t *c) {
  while (c->woff < c->wlen) {
    ssize_t w = write(c->fd, c->wb + c->woff, c->wlen - c->woff);
    if (w < 0) {
      if (errno == EAGAIN || errno == EINTR) return 1;
      fail(3, "write: %s", strerror(errno));
    }
    c->woff += (size_t)w;
  }
  c->wlen = c->woff = 0;
  return 0;
}
/* Write everything, waiting for the socket where it is non-blocking. */
static void wflush_all(conn_t *c) {
  while (wflush(c)) {
    struct pollfd pf = {.fd = c->fd, .events = POLLOUT};
    if (poll(&pf, 1, 10000) == 0) fail(3, "server took no data for 10 s");
  }
}
/* One read into the buffer (keeping any partial value; growing the buffer when it is full).
 * Returns bytes read, 0 on EOF, -1 when nothing is there (EAGAIN). */
static ssize_t rfill(conn_t *c) {
  if (c->roff) {
    memmove(c->rb, c->rb + c->roff, c->rlen - c->roff);
    c->rlen -= c->roff; c->roff = 0;
  }
  if (c->rlen == c->rcap) {
    c->rcap *= 2;
    if (!(c->rb = realloc(c->rb, c->rcap))) fail(3, "out of memory");
  }
  for (;;) {
    ssize_t r = read(c->fd, c->rb + c->rlen, c->rcap - c->rlen);
    if (r > 0) { c->rlen += (size_t)r; return r; }
    if (r == 0) { c->closed = 1; return 0; }
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return -1;
    if (errno == ECONNRESET) { c->closed = 1; return 0; }
    fail(3, "read: %s", strerror(errno));
  }
}
/* Take the next complete value out of the buffer: 1 if one was there, 0 if not. */
static int rnext(conn_t *c, rel_t *h, rel_t *el, int maxel, int *nel) {
  long long r = rparse(c->rb + c->roff, c->rlen - c->roff, h, el, maxel, nel, 0);
  if (r < 0) {
    size_t n = c->rlen - c->roff; if (n > 80) n = 80;
    fail(3, "protocol error in server reply near: %.*s", (int)n, c->rb + c->roff);
  }
  if (r == 0) return 0;
  c->roff += (size_t)r;
  return 1;
}
/* Blocking: the next value (waits up to 10 s). */
static void rwait(conn_t *c, rel_t *h, rel_t *el, int maxel, int *nel, const char *what) {
  uint64_t deadline = mono_ns() + 10000000000ull;
  while (!rnext(c, h, el, maxel, nel)) {
    struct pollfd pf = {.fd = c->fd, .events = POLLIN};
    int left = (int)(((int64_t)deadline - (int64_t)mono_ns()) / 1000000);
    if (left <= 0 || poll(&pf, 1, left) == 0) fail(3, "no reply to %s within 10 s", what);
    ssize_t r = rfill(c);
    if (r == 0) fail(3, "server closed the connection (waiting for the reply to %s)", what);
  }
}
/* A command whose reply must not be an error (exit 4 with the server's message if it is). */
static void expect_ok(conn_t *c, const char *what, rel_t *h, rel_t *el, int maxel, int *nel) {
  wflush_all(c);
  rwait(c, h, el, maxel, nel, what);
  if (h->t == '-') fail(4, "server refused %s: %.*s", what, (int)h->len, h->s);
}

/* SUBSCRIBE channel on c and wait for the confirmation. */
static void subscribe(conn_t *c, const char *channel) {
  rel_t h, el[3]; int nel;
  wcmd(c, 2, "SUBSCRIBE", channel);
  expect_ok(c, "SUBSCRIBE", &h, el, 3, &nel);
  if (!((h.t == '*' || h.t == '>') && nel == 3 && is_str(&el[0], "subscribe")))
    fail(3, "unexpected reply to SUBSCRIBE (type %c, %d elements)", h.t, nel);
}

static void json_common(double cpu, double wall, double self_cpu, long long rss) {
  printf(", \"window_s\": %.4f, \"window_server_cpu_s\": %.3f, \"window_client_cpu_s\": %.3f, "
         "\"window_server_rss_bytes\": %lld", wall, cpu, self_cpu, rss);
}

/* ------------------------------------------------------------------ publish */

static const char *g_channel = "bench:pubsub";
static atomic_ullong g_delivered;
static atomic_int g_stop;
#define STAMP_DIGITS 20

typedef struct {
  conn_t **cs; int n, ep, closed;
  hist_t h; uint64_t delivered, other;
  pthread_t th;
} rx_t;

static void *rx_main(void *arg) {
  rx_t *x = arg;
  struct epoll_event evs[256];
  rel_t h, el[3]; int nel;
  while (!atomic_load(&g_stop)) {
    int ne = epoll_wait(x->ep, evs, 256, 20);
    if (ne < 0) { if (errno == EINTR) continue; fail(3, "epoll_wait: %s", strerror(errno)); }
    for (int e = 0; e < ne; e++) {
      conn_t *c = x->cs[evs[e].data.u32];
      for (int reads = 0; reads < 4; reads++) {
        ssize_t r = rfill(c);
        if (r < 0) break;
        if (r == 0) { x->closed++; epoll_ctl(x->ep, EPOLL_CTL_DEL, c->fd, NULL); break; }
        uint64_t t = mono_ns(), cnt = 0;
        while (rnext(c, &h, el, 3, &nel)) {
          if ((h.t == '*' || h.t == '>') && nel == 3 && is_str(&el[0], "message") &&
              el[2].t == '$' && el[2].len >= STAMP_DIGITS) {
            uint64_t stamp = 0;
            for (int k = 0; k < STAMP_DIGITS; k++) stamp = stamp * 10 + (uint64_t)(el[2].s[k] - '0');
            hadd(&x->h, t > stamp ? t - stamp : 0);
            cnt++;
          } else if (h.t == '-') {
            fail(4, "server sent an error to a subscriber: %.*s", (int)h.len, h.s);
          } else {
            x->other++;
          }
        }
        if (cnt) { x->delivered += cnt; atomic_fetch_add(&g_delivered, cnt); }
        if ((size_t)r < 4096) break;
      }
    }
  }
  return NULL;
}

typedef struct {
  long long sent, acked, reply_sum, mismatched; int expect;
  int seen_receiver; uint64_t dropped_at; /* first reply of 0 receivers after one of >= 1 */
} pubstat_t;

static void pub_cmd(conn_t *c, uint64_t stamp, int payload) {
  char buf[80 + 65536]; int k;
  size_t clen = strlen(g_channel);
  k = snprintf(buf, sizeof buf, "*3\r\n$7\r\nPUBLISH\r\n$%zu\r\n%s\r\n$%d\r\n%020llu", clen,
               g_channel, payload, (unsigned long long)stamp);
  wput(c, buf, (size_t)k);
  int pad = payload - STAMP_DIGITS;
  while (pad > 0) {
    int m = pad < 4096 ? pad : 4096;
    static char xs[4096];
    if (!xs[0]) memset(xs, 'x', sizeof xs);
    wput(c, xs, (size_t)m); pad -= m;
  }
  wput(c, "\r\n", 2);
}
/* Read the publisher's replies that are there; each must be an integer. */
static void pub_drain(conn_t *c, pubstat_t *ps, const char *what) {
  rel_t h; int nel;
  for (;;) {
    while (rnext(c, &h, NULL, 0, &nel)) {
      if (h.t == '-') fail(4, "server refused %s: %.*s", what, (int)h.len, h.s);
      if (h.t != ':') fail(3, "unexpected reply type '%c' to %s", h.t, what);
      ps->acked++; ps->reply_sum += h.i;
      if (ps->expect >= 0 && h.i != ps->expect) ps->mismatched++;
      if (h.i > 0) ps->seen_receiver = 1;
      else if (ps->seen_receiver && !ps->dropped_at) ps->dropped_at = mono_ns();
    }
    ssize_t r = rfill(c);
    if (r < 0) return;
    if (r == 0) fail(3, "server closed the publisher's connection");
  }
}

static int cmd_publish(void) {
  int nsubs = (int)opt_ll("subs", 1), nth = (int)opt_ll("rx-threads", 2);
  const char *mode = opt_s("mode", "max");
  double rate = opt_d("rate", 10000), seconds = opt_d("seconds", 3);
  int payload = (int)opt_ll("payload", 64), pipeline = (int)opt_ll("pipeline", 32);
  long long window = opt_ll("window", 256);
  int max_mode = !strcmp(mode, "max");
  if (nsubs < 1 || nth < 1 || payload < STAMP_DIGITS || payload > 65536 || pipeline < 1 ||
      window < 1 || rate <= 0 || seconds <= 0 || (!max_mode && strcmp(mode, "rate")))
    fail(2, "bad arguments (payload must be %d..65536 bytes, mode max or rate)", STAMP_DIGITS);
  if (nth > nsubs) nth = nsubs;
  g_channel = opt_s("channel", g_channel);

  /* subscribers: connect and subscribe all of them before anything is published */
  conn_t **subs = calloc((size_t)nsubs, sizeof *subs);
  for (int i = 0; i < nsubs; i++) {
    subs[i] = conn_new(0);
    wcmd(subs[i], 2, "SUBSCRIBE", g_channel);
    wflush_all(subs[i]);
  }
  for (int i = 0; i < nsubs; i++) {
    rel_t h, el[3]; int nel;
    rwait(subs[i], &h, el, 3, &nel, "SUBSCRIBE");
    if (h.t == '-') fail(4, "server refused SUBSCRIBE: %.*s", (int)h.len, h.s);
    if (!((h.t == '*' || h.t == '>') && nel == 3 && is_str(&el[0], "subscribe")))
      fail(3, "unexpected reply to SUBSCRIBE (type %c)", h.t);
    set_nonblock(subs[i]->fd);
  }
  rx_t *rx = calloc((size_t)nth, sizeof *rx);
  for (int t = 0; t < nth; t++) {
    rx[t].cs = calloc((size_t)nsubs, sizeof(conn_t *));
    rx[t].ep = epoll_create1(0);
    hinit(&rx[t].h);
  }
  for (int i = 0; i < nsubs; i++) {
    rx_t *x = &rx[i % nth];
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)x->n};
    x->cs[x->n++] = subs[i];
    if (epoll_ctl(x->ep, EPOLL_CTL_ADD, subs[i]->fd, &ev) < 0) fail(3, "epoll_ctl: %s", strerror(errno));
  }
  for (int t = 0; t < nth; t++) pthread_create(&rx[t].th, NULL, rx_main, &rx[t]);

  conn_t *pub = conn_new(0);
  pubstat_t ps = {.expect = nsubs};
  /* one synchronous PUBLISH first: a refusal is reported here, and the subscribers are live */
  pub_cmd(pub, mono_ns(), payload); ps.sent++;
  wflush_all(pub);
  { rel_t h; int nel; rwait(pub, &h, NULL, 0, &nel, "PUBLISH");
    if (h.t == '-') fail(4, "server refused PUBLISH: %.*s", (int)h.len, h.s);
    if (h.t != ':') fail(3, "unexpected reply type '%c' to PUBLISH", h.t);
    ps.acked++; ps.reply_sum += h.i; if (h.i != nsubs) ps.mismatched++; }
  set_nonblock(pub->fd);
  /* wait for that first delivery everywhere, then start the window */
  { uint64_t dl = mono_ns() + 10000000000ull;
    while (atomic_load(&g_delivered) < (unsigned long long)nsubs && mono_ns() < dl) usleep(1000); }
  for (int t = 0; t < nth; t++) hinit(&rx[t].h); /* not yet read by rx (no traffic) */
  atomic_store(&g_delivered, 0);
  for (int t = 0; t < nth; t++) rx[t].delivered = 0;
  ps = (pubstat_t){.expect = nsubs};

  double cpu0 = server_cpu_s(), self0 = self_cpu_s();
  uint64_t t0 = mono_ns(), end = t0 + (uint64_t)(seconds * 1e9);
  struct timespec pause = {0, 50000};
  if (max_mode) {
    for (;;) {
      uint64_t now = mono_ns();
      if (now >= end) break;
      pub_drain(pub, &ps, "PUBLISH");
      if (wflush(pub)) {
        struct pollfd pf = {.fd = pub->fd, .events = POLLOUT | POLLIN};
        ppoll(&pf, 1, &pause, NULL);
        continue;
      }
      unsigned long long deliv = atomic_load(&g_delivered);
      long long room = window - ps.sent + (long long)(deliv / (unsigned long long)nsubs);
      if (room > pipeline) room = pipeline;
      if (room <= 0) {
        struct pollfd pf = {.fd = pub->fd, .events = POLLIN};
        ppoll(&pf, 1, &pause, NULL);
        continue;
      }
      uint64_t stamp = mono_ns();
      for (long long k = 0; k < room; k++) pub_cmd(pub, stamp, payload);
      ps.sent += room;
      wflush(pub);
    }
  } else {
    double interval = 1e9 / rate;
    long long i = 0;
    for (;;) {
      uint64_t now = mono_ns(), next = t0 + (uint64_t)((double)i * interval);
      if (next >= end) break;
      while (next <= now && next < end) { /* catch up if late: stamp = the scheduled time */
        pub_cmd(pub, next, payload); ps.sent++; i++;
        next = t0 + (uint64_t)((double)i * interval);
      }
      wflush(pub);
      pub_drain(pub, &ps, "PUBLISH");
      if (next < end) sleep_until(next);
    }
  }
  uint64_t pub_end = mono_ns();
  /* drain: every reply, every delivery (or give up after 20 s without progress) */
  uint64_t last_progress = mono_ns(); unsigned long long last_d = 0; long long last_a = 0;
  for (;;) {
    wflush(pub);
    pub_drain(pub, &ps, "PUBLISH");
    unsigned long long d = atomic_load(&g_delivered);
    if (ps.acked == ps.sent && pub->woff == pub->wlen &&
        d >= (unsigned long long)ps.sent * (unsigned long long)nsubs)
      break;
    if (ps.acked == ps.sent && d >= (unsigned long long)ps.reply_sum && mono_ns() - last_progress > 1000000000ull)
      break; /* the server delivered what it said it would; some subscribers are gone */
    if (d != last_d || ps.acked != last_a) { last_d = d; last_a = ps.acked; last_progress = mono_ns(); }
    if (mono_ns() - last_progress > 20000000000ull) break;
    struct pollfd pf = {.fd = pub->fd, .events = POLLIN};
    ppoll(&pf, 1, &pause, NULL);
  }
  uint64_t t1 = mono_ns();
  double cpu1 = server_cpu_s(), self1 = self_cpu_s();
  long long rss = server_rss();
  atomic_store(&g_stop, 1);
  hist_t all; hinit(&all);
  long long closed = 0, other = 0;
  for (int t = 0; t < nth; t++) {
    pthread_join(rx[t].th, NULL);
    hmerge(&all, &rx[t].h); closed += rx[t].closed; other += (long long)rx[t].other;
  }
  unsigned long long d = atomic_load(&g_delivered);
  double wall = (double)(t1 - t0) / 1e9;
  double scpu = cpu1 - cpu0;
  printf("{\"mode\": \"%s\", \"subs\": %d, \"rx_threads\": %d, \"payload\": %d, \"messages\": %lld, "
         "\"deliveries\": %llu, \"expected_deliveries\": %lld, \"server_reported_deliveries\": %lld, "
         "\"lost_deliveries\": %lld, \"publish_reply_mismatches\": %lld, \"subscribers_closed\": %lld, "
         "\"other_frames\": %lld, \"publish_s\": %.4f, \"msg_per_s\": %.1f, \"deliveries_per_s\": %.1f, "
         "\"offered_msg_per_s\": %.1f, \"deliveries_per_server_cpu_s\": %.1f, \"window\": %lld, "
         "\"pipeline\": %d",
         mode, nsubs, nth, payload, ps.sent, d, ps.sent * (long long)nsubs, ps.reply_sum,
         ps.sent * (long long)nsubs - (long long)d, ps.mismatched, closed, other,
         (double)(pub_end - t0) / 1e9, (double)ps.sent / wall, (double)d / wall,
         max_mode ? 0.0 : rate, scpu > 0 ? (double)d / scpu : -1, window, pipeline);
  json_common(scpu, wall, self1 - self0, rss);
  hprint("", &all);
  printf("}\n");
  return 0;
}

/* ------------------------------------------------------------------ expiry */

typedef struct {
  conn_t *c; hist_t h; long long received, early, other; int64_t min_late_ns;
  uint64_t last_rx_real;
} exrx_t;
static atomic_llong g_ex_received;

static void *exrx_main(void *arg) {
  exrx_t *x = arg;
  rel_t h, el[3]; int nel;
  while (!atomic_load(&g_stop)) {
    struct pollfd pf = {.fd = x->c->fd, .events = POLLIN};
    int pr = poll(&pf, 1, 20);
    if (pr <= 0) continue;
    for (;;) {
      ssize_t r = rfill(x->c);
      if (r < 0) break;
      if (r == 0) fail(3, "server closed the subscriber's connection");
      uint64_t t = real_ns(); long long cnt = 0;
      while (rnext(x->c, &h, el, 3, &nel)) {
        long long dl = -1;
        if ((h.t == '*' || h.t == '>') && nel == 3 && is_str(&el[0], "message") &&
            el[2].t == '$' && el[2].len > 4 && !memcmp(el[2].s, "exp:", 4)) {
          dl = 0;
          for (const char *q = el[2].s + 4; q < el[2].s + el[2].len && *q >= '0' && *q <= '9'; q++)
            dl = dl * 10 + (*q - '0');
        }
        if (dl <= 0) { x->other++; continue; }
        int64_t late = (int64_t)t - dl * 1000000ll;
        if (late < x->min_late_ns) x->min_late_ns = late;
        if (late < 0) { x->early++; late = 0; }
        hadd(&x->h, (uint64_t)late);
        cnt++;
      }
      if (cnt) { x->received += cnt; x->last_rx_real = t; atomic_fetch_add(&g_ex_received, cnt); }
    }
  }
  return NULL;
}

static int cmd_expiry(void) {
  long long nkeys = opt_ll("keys", 100000), spread = opt_ll("spread-ms", 10000);
  long long grace = opt_ll("grace-ms", 15000), batch = opt_ll("batch", 1000);
  if (nkeys < 1 || spread < 1 || grace < 0 || batch < 1) fail(2, "bad arguments");
  rng_state ^= (uint64_t)opt_ll("seed", 1) * 0x9E3779B97F4A7C15ull;
  exrx_t x = {0}; hinit(&x.h); x.min_late_ns = INT64_MAX;
  x.c = conn_new(0);
  subscribe(x.c, "__keyevent@0__:expired");
  set_nonblock(x.c->fd);
  pthread_t th; pthread_create(&th, NULL, exrx_main, &x);

  conn_t *ld = conn_new(0);
  double cpu0 = server_cpu_s(), self0 = self_cpu_s();
  uint64_t t0 = mono_ns(), r0 = real_ns();
  long long max_deadline = 0, min_deadline = INT64_MAX;
  char key[64], ttl[32];
  for (long long i = 0; i < nkeys; i += batch) {
    long long n = nkeys - i < batch ? nkeys - i : batch;
    long long now_ms = (long long)(real_ns() / 1000000ull);
    for (long long k = 0; k < n; k++) {
      long long t = 1 + (long long)(xrand() % (uint64_t)spread);
      long long dl = now_ms + t;
      if (dl > max_deadline) max_deadline = dl;
      if (dl < min_deadline) min_deadline = dl;
      snprintf(key, sizeof key, "exp:%013lld:%09lld", dl, i + k);
      snprintf(ttl, sizeof ttl, "%lld", t);
      wcmd(ld, 5, "SET", key, "1", "PX", ttl);
    }
    wflush_all(ld);
    for (long long k = 0; k < n; k++) {
      rel_t h; int nel;
      rwait(ld, &h, NULL, 0, &nel, "SET ... PX");
      if (h.t == '-') fail(4, "server refused SET ... PX: %.*s", (int)h.len, h.s);
    }
  }
  uint64_t t_loaded = mono_ns(), r_loaded = real_ns();
  double cpu_loaded = server_cpu_s();
  long long rss_loaded = server_rss();
  /* wait for every event, or until the last deadline plus the grace period */
  long long stop_ms = max_deadline + grace;
  while (atomic_load(&g_ex_received) < nkeys && (long long)(real_ns() / 1000000ull) < stop_ms)
    usleep(20000);
  usleep(50000); /* events already on the wire */
  atomic_store(&g_stop, 1);
  pthread_join(th, NULL);
  uint64_t t1 = mono_ns();
  double cpu1 = server_cpu_s(), self1 = self_cpu_s();
  long long rss1 = server_rss();
  double wall = (double)(t1 - t0) / 1e9;
  printf("{\"keys\": %lld, \"spread_ms\": %lld, \"grace_ms\": %lld, \"received\": %lld, "
         "\"missing\": %lld, \"early\": %lld, \"other_frames\": %lld, \"min_lateness_ms\": %.3f, "
         "\"load_s\": %.3f, \"load_server_cpu_s\": %.3f, \"expire_server_cpu_s\": %.3f, "
         "\"server_rss_loaded_bytes\": %lld, \"first_deadline_after_load_start_ms\": %lld, "
         "\"last_deadline_after_load_end_ms\": %lld, \"last_event_after_last_deadline_ms\": %lld, "
         "\"received_frac\": %.6f",
         nkeys, spread, grace, x.received, nkeys - x.received, x.early, x.other,
         x.received ? (double)x.min_late_ns / 1e6 : 0.0, (double)(t_loaded - t0) / 1e9,
         cpu_loaded - cpu0, cpu1 - cpu_loaded, rss_loaded,
         min_deadline - (long long)(r0 / 1000000ull), max_deadline - (long long)(r_loaded / 1000000ull),
         x.last_rx_real ? (long long)(x.last_rx_real / 1000000ull) - max_deadline : 0,
         (double)x.received / (double)nkeys);
  json_common(cpu1 - cpu0, wall, self1 - self0, rss1);
  hprint("lateness_", &x.h);
  printf("}\n");
  return 0;
}

/* ------------------------------------------------------------------ multi */

static int cmd_multi(void) {
  int nclients = (int)opt_ll("clients", 50), plain = (int)opt_ll("plain", 0);
  long long txns = opt_ll("txns", 100000), keyspace = opt_ll("keyspace", 100000);
  int vlen = (int)opt_ll("value-bytes", 32);
  if (nclients < 1 || txns < 1 || keyspace < 1 || vlen < 1 || vlen > 65536) fail(2, "bad arguments");
  rng_state ^= (uint64_t)opt_ll("seed", 1) * 0x9E3779B97F4A7C15ull;
  char *val = malloc((size_t)vlen + 1); memset(val, 'v', (size_t)vlen); val[vlen] = 0;
  int per_txn = plain ? 5 : 7;
  conn_t **cs = calloc((size_t)nclients, sizeof *cs);
  int *pending = calloc((size_t)nclients, sizeof(int));
  uint64_t *tstart = calloc((size_t)nclients, sizeof(uint64_t));
  int ep = epoll_create1(0);
  for (int i = 0; i < nclients; i++) {
    cs[i] = conn_new(0);
    set_nonblock(cs[i]->fd);
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, cs[i]->fd, &ev) < 0) fail(3, "epoll_ctl: %s", strerror(errno));
  }
  hist_t h; hinit(&h);
  long long issued = 0, done = 0, aborted = 0, bad = 0, incr_ok = 0, get_hits = 0;
  double cpu0 = server_cpu_s(), self0 = self_cpu_s();
  uint64_t t0 = mono_ns();
#define KEYARG(buf, pfx) snprintf(buf, sizeof buf, "%s%010llu", pfx, (unsigned long long)(xrand() % (uint64_t)keyspace))
  struct epoll_event evs[256];
  /* send_txn: one write holding MULTI, SET, INCR, GET, SET, GET, EXEC */
#define SEND_TXN(i) do { \
    conn_t *c_ = cs[i]; char k1[32], k2[32], k3[32], k4[32], k5[32]; \
    KEYARG(k1, "ms:"); KEYARG(k2, "mc:"); KEYARG(k3, "ms:"); KEYARG(k4, "mt:"); KEYARG(k5, "mt:"); \
    if (!plain) wcmd(c_, 1, "MULTI"); \
    wcmd(c_, 3, "SET", k1, val); wcmd(c_, 2, "INCR", k2); wcmd(c_, 2, "GET", k3); \
    wcmd(c_, 3, "SET", k4, val); wcmd(c_, 2, "GET", k5); \
    if (!plain) wcmd(c_, 1, "EXEC"); \
    pending[i] = per_txn; tstart[i] = mono_ns(); issued++; wflush_all(c_); \
  } while (0)
  for (int i = 0; i < nclients && issued < txns; i++) SEND_TXN(i);
  while (done < txns) {
    int ne = epoll_wait(ep, evs, 256, 10000);
    if (ne < 0) { if (errno == EINTR) continue; fail(3, "epoll_wait: %s", strerror(errno)); }
    if (ne == 0) fail(3, "no reply for 10 s (%lld of %lld transactions done)", done, txns);
    for (int e = 0; e < ne; e++) {
      int i = (int)evs[e].data.u32; conn_t *c = cs[i];
      if (c->woff < c->wlen) wflush(c);
      ssize_t r = rfill(c);
      if (r < 0) continue;
      if (r == 0) fail(3, "server closed a connection");
      uint64_t t = mono_ns();
      rel_t hh, el[5]; int nel;
      while (rnext(c, &hh, el, 5, &nel)) {
        int idx = per_txn - pending[i]; /* which reply of the batch this is */
        if (hh.t == '-') {
          const char *cmd = plain ? (const char *[]){"SET", "INCR", "GET", "SET", "GET"}[idx]
                                  : (const char *[]){"MULTI", "SET", "INCR", "GET", "SET", "GET", "EXEC"}[idx];
          fail(4, "server refused %s: %.*s", cmd, (int)hh.len, hh.s);
        }
        if (plain) {
          if (idx == 1 && hh.t == ':') incr_ok++;
          if ((idx == 2 || idx == 4) && hh.t == '$' && hh.s) get_hits++;
        } else if (idx == 0) {
          if (!is_str(&hh, "OK")) bad++;
        } else if (idx < 6) {
          if (!is_str(&hh, "QUEUED")) bad++;
        } else {
          if (hh.t == '*' && hh.i < 0) aborted++;
          else if (hh.t != '*' || nel != 5) bad++;
          else {
            for (int k = 0; k < 5; k++)
              if (el[k].t == '-') fail(4, "EXEC returned an error for command %d: %.*s", k + 1,
                                       (int)el[k].len, el[k].s);
            if (el[1].t == ':') incr_ok++;
            if (el[2].t == '$' && el[2].s) get_hits++;
            if (el[4].t == '$' && el[4].s) get_hits++;
          }
        }
        if (--pending[i] == 0) {
          hadd(&h, t - tstart[i]); done++;
          if (issued < txns) SEND_TXN(i);
        }
      }
    }
  }
  uint64_t t1 = mono_ns();
  double cpu1 = server_cpu_s(), self1 = self_cpu_s();
  long long rss = server_rss();
  double wall = (double)(t1 - t0) / 1e9, scpu = cpu1 - cpu0;
  printf("{\"plain\": %d, \"clients\": %d, \"txns\": %lld, \"commands_per_txn\": 5, "
         "\"aborted\": %lld, \"unexpected_replies\": %lld, \"incr_ok\": %lld, \"get_hits\": %lld, "
         "\"txn_per_s\": %.1f, \"txn_per_server_cpu_s\": %.1f",
         plain, nclients, txns, aborted, bad, incr_ok, get_hits, (double)txns / wall,
         scpu > 0 ? (double)txns / scpu : -1);
  json_common(scpu, wall, self1 - self0, rss);
  hprint("", &h);
  printf("}\n");
  return 0;
}

/* ------------------------------------------------------------------ stalled subscriber */

static atomic_int g_stall_gone; static atomic_llong g_stall_gone_ns;
static uint64_t g_t0;
typedef struct { long long sent, acked, reply_sum; int msg_bytes; double rate; uint64_t end, dropped_at; } stpub_t;

static void *stall_watch(void *arg) {
  conn_t *c = arg;
  while (!atomic_load(&g_stop)) {
    /* never reads: POLLRDHUP/POLLHUP/POLLERR say the server closed the connection */
    struct pollfd pf = {.fd = c->fd, .events = POLLRDHUP};
    int r = poll(&pf, 1, 20);
    if (r > 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
      atomic_store(&g_stall_gone_ns, (long long)(mono_ns() - g_t0));
      atomic_store(&g_stall_gone, 1);
      return NULL;
    }
  }
  return NULL;
}
static void *stall_pub(void *arg) {
  stpub_t *p = arg;
  conn_t *c = conn_new(0);
  set_nonblock(c->fd);
  pubstat_t ps = {.expect = -1};
  double interval = 1e9 / p->rate;
  for (long long i = 0;; i++) {
    uint64_t next = g_t0 + (uint64_t)((double)i * interval);
    if (next >= p->end) break;
    sleep_until(next);
    pub_cmd(c, mono_ns(), p->msg_bytes);
    ps.sent++;
    wflush(c);
    pub_drain(c, &ps, "PUBLISH");
  }
  uint64_t dl = mono_ns() + 5000000000ull;
  while (ps.acked < ps.sent && mono_ns() < dl) {
    wflush(c); pub_drain(c, &ps, "PUBLISH"); usleep(1000);
  }
  p->sent = ps.sent; p->acked = ps.acked; p->reply_sum = ps.reply_sum; p->dropped_at = ps.dropped_at;
  return NULL;
}

static int cmd_stalled(void) {
  double seconds = opt_d("seconds", 10), kv_rate = opt_d("kv-rate", 2000);
  double bps = opt_d("pub-bytes-per-s", 1048576);
  int msg_bytes = (int)opt_ll("msg-bytes", 1024), stalled = (int)opt_ll("stalled", 1);
  int rcvbuf = (int)opt_ll("rcvbuf", 0), vlen = (int)opt_ll("value-bytes", 64);
  long long keyspace = opt_ll("keyspace", 10000);
  if (seconds <= 0 || kv_rate <= 0 || bps <= 0 || msg_bytes < STAMP_DIGITS || msg_bytes > 65536 ||
      vlen < 1 || vlen > 65536 || keyspace < 1)
    fail(2, "bad arguments");
  g_channel = opt_s("channel", "bench:stalled");
  conn_t *st = NULL; pthread_t wth, pth;
  if (stalled) {
    st = conn_new(rcvbuf);
    rel_t h; int nel;
    wcmd(st, 3, "CLIENT", "SETNAME", "stalled-sub");
    wflush_all(st);
    rwait(st, &h, NULL, 0, &nel, "CLIENT SETNAME"); /* an error here is fine: matched by sub=1 */
    subscribe(st, g_channel);
  }
  conn_t *kv = conn_new(0);
  { /* check SET/GET work before the clock starts */
    rel_t h, el[1]; int nel;
    wcmd(kv, 3, "SET", "kv:probe", "1");
    expect_ok(kv, "SET", &h, el, 1, &nel);
  }
  set_nonblock(kv->fd);
  char *val = malloc((size_t)vlen + 1); memset(val, 'v', (size_t)vlen); val[vlen] = 0;

  long long rss0 = server_rss();
  double cpu0 = server_cpu_s(), self0 = self_cpu_s();
  g_t0 = mono_ns();
  uint64_t end = g_t0 + (uint64_t)(seconds * 1e9);
  stpub_t sp = {.msg_bytes = msg_bytes, .rate = bps / msg_bytes, .end = end};
  if (stalled) pthread_create(&wth, NULL, stall_watch, st);
  pthread_create(&pth, NULL, stall_pub, &sp);

  /* the KV client: open loop at kv_rate, SET and GET alternating; latency from the scheduled
   * send time to the reply, so a stall delays the requests scheduled behind it too */
  size_t qcap = 1 << 20; uint64_t *q = malloc(qcap * sizeof *q); size_t qh = 0, qt = 0;
  hist_t hall, hset, hget; hinit(&hall); hinit(&hset); hinit(&hget);
  double interval = 1e9 / kv_rate;
  long long i = 0, done = 0, misses = 0;
  for (;;) {
    uint64_t now = mono_ns(), next = g_t0 + (uint64_t)((double)i * interval);
    while (next <= now && next < end) {
      char key[32];
      snprintf(key, sizeof key, "kv:%08llu", (unsigned long long)(xrand() % (uint64_t)keyspace));
      if (i % 2 == 0) wcmd(kv, 3, "SET", key, val); else wcmd(kv, 2, "GET", key);
      if (qt - qh == qcap) fail(3, "more than %zu KV requests outstanding", qcap);
      q[qt++ % qcap] = next; i++;
      next = g_t0 + (uint64_t)((double)i * interval);
    }
    if (kv->woff < kv->wlen) wflush(kv);
    ssize_t r;
    while ((r = rfill(kv)) > 0) {
      uint64_t t = mono_ns(); rel_t h; int nel;
      while (rnext(kv, &h, NULL, 0, &nel)) {
        if (h.t == '-') fail(4, "server refused SET/GET: %.*s", (int)h.len, h.s);
        if (qh == qt) fail(3, "more replies than requests");
        uint64_t s = q[qh % qcap]; int is_set = (done % 2 == 0);
        qh++; done++;
        uint64_t lat = t > s ? t - s : 0;
        hadd(&hall, lat); hadd(is_set ? &hset : &hget, lat);
        if (!is_set && h.t == '$' && !h.s) misses++;
      }
    }
    if (r == 0) fail(3, "server closed the KV connection");
    if (next >= end) {
      if (qh == qt) break;
      if (mono_ns() > end + 10000000000ull) fail(3, "KV replies still missing 10 s after the end");
      next = mono_ns() + 1000000;
    }
    /* wait for a reply or the next send time, whichever comes first */
    now = mono_ns();
    if (next > now) {
      uint64_t d = next - now;
      struct timespec ts = {(time_t)(d / 1000000000ull), (long)(d % 1000000000ull)};
      struct pollfd pf = {.fd = kv->fd, .events = POLLIN | (kv->woff < kv->wlen ? POLLOUT : 0)};
      ppoll(&pf, 1, &ts, NULL);
    }
  }
  pthread_join(pth, NULL);
  uint64_t t1 = mono_ns();
  double cpu1 = server_cpu_s(), self1 = self_cpu_s();
  long long rss1 = server_rss();
  /* look at the stalled client from the server's side before it goes away */
  char line[1024] = ""; long long omem = -1, totmem = -1; int in_list = 0;
  char cl_err[256] = "";
  {
    conn_t *c = conn_new(0); rel_t h; int nel;
    wcmd(c, 2, "CLIENT", "LIST");
    wflush_all(c);
    rwait(c, &h, NULL, 0, &nel, "CLIENT LIST");
    if (h.t == '-') snprintf(cl_err, sizeof cl_err, "%.*s", (int)h.len, h.s);
    else if (h.t == '$' && h.s) {
      const char *s = h.s, *e = h.s + h.len, *hit = NULL, *hit_end = NULL;
      while (s < e) {
        const char *nl = memchr(s, '\n', (size_t)(e - s)); if (!nl) nl = e;
        size_t n = (size_t)(nl - s);
        if ((memmem(s, n, "name=stalled-sub", 16)) ||
            (!hit && memmem(s, n, " sub=1 ", 7))) { hit = s; hit_end = nl;
          if (memmem(s, n, "name=stalled-sub", 16)) break; }
        s = nl + 1;
      }
      if (hit) {
        in_list = 1;
        size_t n = (size_t)(hit_end - hit); if (n > sizeof line - 1) n = sizeof line - 1;
        memcpy(line, hit, n); line[n] = 0;
        char *o = strstr(line, " omem="); if (o) omem = atoll(o + 6);
        char *tm = strstr(line, " tot-mem="); if (tm) totmem = atoll(tm + 9);
      }
    }
    close(c->fd);
  }
  atomic_store(&g_stop, 1);
  if (stalled) pthread_join(wth, NULL);
  double wall = (double)(t1 - g_t0) / 1e9;
  /* Disconnected: PUBLISH to its channel started answering 0 receivers, or the server closed
   * the socket and the FIN got through (it usually does not: it queues behind the data the
   * client never reads), or CLIENT LIST worked and does not show it any more. */
  int fin = stalled && atomic_load(&g_stall_gone);
  int gone = stalled && (sp.dropped_at || fin || (!in_list && !cl_err[0]));
  double gone_after = !gone ? -1.0 : sp.dropped_at ? (double)(sp.dropped_at - g_t0) / 1e9
                    : fin ? (double)atomic_load(&g_stall_gone_ns) / 1e9 : -1.0;
  printf("{\"stalled\": %d, \"seconds\": %.3f, \"kv_rate\": %.1f, \"kv_done\": %lld, "
         "\"kv_get_misses\": %lld, \"pub_msgs\": %lld, \"pub_msg_bytes\": %d, \"pub_bytes_per_s\": %.1f, "
         "\"pub_acked\": %lld, \"pub_deliveries\": %lld, \"stalled_disconnected\": %s, "
         "\"stalled_disconnected_after_s\": %.3f, \"stalled_fin_seen\": %s, "
         "\"stalled_fin_after_s\": %.3f, \"stalled_dropped_after_s\": %.3f, "
         "\"stalled_in_client_list\": %s, "
         "\"stalled_omem_bytes\": %lld, \"stalled_tot_mem_bytes\": %lld, \"server_rss_start_bytes\": %lld, "
         "\"client_list_error\": ",
         stalled, seconds, kv_rate, done, misses, sp.sent, msg_bytes,
         (double)sp.sent * msg_bytes / wall, sp.acked, sp.reply_sum,
         gone ? "true" : "false", gone_after,
         fin ? "true" : "false", fin ? (double)atomic_load(&g_stall_gone_ns) / 1e9 : -1.0,
         sp.dropped_at ? (double)(sp.dropped_at - g_t0) / 1e9 : -1.0,
         in_list ? "true" : "false", omem, totmem, rss0);
  json_str(stdout, cl_err, strlen(cl_err));
  printf(", \"stalled_client_line\": "); json_str(stdout, line, strlen(line));
  json_common(cpu1 - cpu0, wall, self1 - self0, rss1);
  hprint("", &hall); hprint("set_", &hset); hprint("get_", &hget);
  printf("}\n");
  return 0;
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv) {
  g_argc = argc; g_argv = argv;
  if (argc < 2 || (argc % 2) != 0) {
    fprintf(stderr, "usage: pubsub_bench publish|expiry|multi|stalled --port P [--name value]...\n");
    return 2;
  }
  for (int i = 2; i < argc; i += 2)
    if (strncmp(argv[i], "--", 2)) { fprintf(stderr, "bad option %s\n", argv[i]); return 2; }
  g_host = opt_s("host", g_host);
  g_port = (int)opt_ll("port", 6379);
  g_pid = (int)opt_ll("pid", 0);
  prctl(PR_SET_TIMERSLACK, 1000UL); /* 1 µs: paced senders wake on time */
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max; setrlimit(RLIMIT_NOFILE, &rl);
  }
  signal(SIGPIPE, SIG_IGN);
  if (!strcmp(argv[1], "publish")) return cmd_publish();
  if (!strcmp(argv[1], "expiry")) return cmd_expiry();
  if (!strcmp(argv[1], "multi")) return cmd_multi();
  if (!strcmp(argv[1], "stalled")) return cmd_stalled();
  fprintf(stderr, "unknown subcommand %s\n", argv[1]);
  return 2;
}
