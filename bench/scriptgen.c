/* scriptgen: a RESP2 load generator for the scripting benchmark (script_compare.py).
 *
 *   scriptgen HOST PORT CLIENTS PIPELINE REQUESTS RATE SEED ARG...
 *       CLIENTS connections on one epoll thread send the command ARG... until REQUESTS replies
 *       came back. Placeholders in ARG are expanded afresh for every command:
 *         {N}    a uniform random integer in [0, N), decimal          k:{100000} -> k:4711
 *         {N:W}  the same, zero-padded to W digits
 *         {c}    the connection's index (0 .. CLIENTS-1): keys no other connection touches
 *         {i}    the connection's own request counter: tokens and members that never repeat
 *       RATE 0: closed loop, each connection writes PIPELINE commands and waits for their
 *       replies; a request's latency runs from the write of its batch to the parse of its reply.
 *       RATE > 0: open loop at RATE requests/s in all (PIPELINE must be 1): request k is due at
 *       start + k/RATE on connection k mod CLIENTS, written when due (a timerfd armed for the
 *       next due request) whatever is still in flight, and its latency runs from when it was
 *       due, so a server that falls behind is charged for the queue it builds.
 *
 * Prints one JSON line: requests, elapsed_s, rps, offered_rate, errors (and the first error
 * reply), nil_replies, int_replies, nonzero (integer replies > 0), array_replies, and latency
 * avg/p50/p99/p99.9/max in ms (exact nearest rank over every request). Exit status 3 when the
 * server closes a connection or answers nothing for 10 s. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  int fd, want_out;
  unsigned long long counter;     /* {i} */
  uint64_t *due; size_t qh, qt, qcap; /* send (or due) times of the requests in flight, FIFO */
  char *wbuf; size_t wlen, wcap, woff;
  char *rbuf; size_t rlen, rcap;
} conn_t;

typedef struct { int kind; const char *lit; size_t litlen; long long n; int width; } seg_t;
typedef struct { seg_t *segs; int nsegs; } arg_t;

static int ep, ntargs;
static arg_t *targs;
static uint64_t rng = 88172645463325252ull;
static long long errs, nils, ints, nonzero, arrays;
static char first_err[160];

static uint64_t now_ns(void) {
  struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static uint64_t xrand(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }
static void die(const char *m) { perror(m); exit(2); }
static void *grow(void *p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return p;
  while (*cap < need) *cap = *cap ? *cap * 2 : 4096;
  p = realloc(p, *cap * elem);
  if (!p) die("realloc");
  return p;
}

static void put(conn_t *c, const void *p, size_t n) {
  c->wbuf = grow(c->wbuf, &c->wcap, c->wlen + n, 1);
  memcpy(c->wbuf + c->wlen, p, n); c->wlen += n;
}

static void watch(conn_t *c, uint32_t id, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.u32 = id};
  if (epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev) < 0) die("epoll_ctl");
}

static void flush_out(conn_t *c, uint32_t id) {
  while (c->woff < c->wlen) {
    ssize_t w = write(c->fd, c->wbuf + c->woff, c->wlen - c->woff);
    if (w < 0) { if (errno == EAGAIN) break; die("write"); }
    c->woff += (size_t)w;
  }
  if (c->woff == c->wlen) c->woff = c->wlen = 0;
  int more = c->wlen > 0;
  if (more != c->want_out) {
    c->want_out = more;
    watch(c, id, more ? EPOLLIN | EPOLLOUT : EPOLLIN);
  }
}

static void parse_template(int argc, char **argv) {
  ntargs = argc; targs = calloc((size_t)argc, sizeof(arg_t));
  if (!targs) die("calloc");
  for (int i = 0; i < argc; i++) {
    const char *s = argv[i]; arg_t *a = &targs[i];
    a->segs = calloc(strlen(s) + 1, sizeof(seg_t));
    if (!a->segs) die("calloc");
    while (*s) {
      seg_t *g = &a->segs[a->nsegs++];
      const char *close = *s == '{' ? strchr(s, '}') : NULL;
      if (close && (s[1] == 'c' || s[1] == 'i') && close == s + 2) {
        g->kind = s[1] == 'c' ? 2 : 3; s = close + 1;
      } else if (close) {
        char *end; g->kind = 1; g->n = strtoll(s + 1, &end, 10);
        if (*end == ':') g->width = atoi(end + 1);
        if (g->n < 1) { fprintf(stderr, "bad placeholder in %s\n", argv[i]); exit(2); }
        s = close + 1;
      } else {
        const char *next = strchr(s + 1, '{');
        g->lit = s; g->litlen = next ? (size_t)(next - s) : strlen(s); s += g->litlen;
      }
    }
  }
}

static void put_command(conn_t *c, unsigned idx, uint64_t due) {
  char h[32]; int hl = snprintf(h, sizeof h, "*%d\r\n", ntargs);
  put(c, h, (size_t)hl);
  for (int i = 0; i < ntargs; i++) {
    char buf[8192]; size_t len = 0; arg_t *a = &targs[i];
    for (int k = 0; k < a->nsegs; k++) {
      seg_t *g = &a->segs[k]; size_t room = sizeof buf - len; int w;
      if (g->kind == 0) {
        if (g->litlen >= room) { fprintf(stderr, "argument too long\n"); exit(2); }
        memcpy(buf + len, g->lit, g->litlen); len += g->litlen; continue;
      }
      if (g->kind == 1)
        w = snprintf(buf + len, room, "%0*llu", g->width,
                     (unsigned long long)(xrand() % (uint64_t)g->n));
      else
        w = snprintf(buf + len, room, "%llu", g->kind == 2 ? (unsigned long long)idx : c->counter);
      if (w < 0 || (size_t)w >= room) { fprintf(stderr, "argument too long\n"); exit(2); }
      len += (size_t)w;
    }
    hl = snprintf(h, sizeof h, "$%zu\r\n", len);
    put(c, h, (size_t)hl); put(c, buf, len); put(c, "\r\n", 2);
  }
  c->counter++;
  c->due = grow(c->due, &c->qcap, c->qt + 1, sizeof *c->due);
  c->due[c->qt++] = due;
}

/* One RESP reply at p: the bytes it spans, 0 if incomplete, -1 if malformed. */
static long parse_reply(const char *p, size_t n, int depth) {
  const char *nl = memchr(p, '\n', n);
  if (!nl) return 0;
  long hl = (long)(nl - p) + 1;
  long long v = strtoll(p + 1, NULL, 10);
  switch (p[0]) {
  case '+': case ',': case '#': case '(': return hl;
  case ':':
    if (depth == 0) { ints++; if (v > 0) nonzero++; }
    return hl;
  case '-':
    if (depth == 0) {
      errs++;
      if (!first_err[0]) {
        size_t k = 0;
        for (const char *q = p + 1; q < nl - 1 && k < sizeof first_err - 1; q++)
          first_err[k++] = (*q == '"' || *q == '\\' || *q < 32) ? '\'' : *q;
        first_err[k] = 0;
      }
    }
    return hl;
  case '_': if (depth == 0) nils++; return hl;
  case '$':
    if (v < 0) { if (depth == 0) nils++; return hl; }
    if ((long long)n < hl + v + 2) return 0;
    return hl + (long)v + 2;
  case '*': case '~': case '%': {
    if (v < 0) { if (depth == 0) nils++; return hl; }
    if (depth == 0) arrays++;
    if (p[0] == '%') v *= 2;
    long off = hl;
    for (long long i = 0; i < v; i++) {
      long k = parse_reply(p + off, n - (size_t)off, depth + 1);
      if (k <= 0) return k;
      off += k;
    }
    return off;
  }
  default: return -1;
  }
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static double pct(const uint64_t *lat, long long n, double q) {
  long long k = (long long)(q * (double)n + 0.999999) - 1;
  if (k < 0) k = 0;
  if (k >= n) k = n - 1;
  return (double)lat[k] / 1e6;
}

int main(int argc, char **argv) {
  if (argc < 9) {
    fprintf(stderr, "usage: scriptgen HOST PORT CLIENTS PIPELINE REQUESTS RATE SEED ARG...\n");
    return 2;
  }
  int nconn = atoi(argv[3]), pipeline = atoi(argv[4]);
  long long want = atoll(argv[5]);
  double rate = atof(argv[6]);
  rng ^= (uint64_t)atoll(argv[7]) * 0x9E3779B97F4A7C15ull;
  if (!rng) rng = 1;
  if (nconn < 1 || pipeline < 1 || want < 1 || (rate > 0 && pipeline != 1)) {
    fprintf(stderr, "bad arguments (open loop needs PIPELINE 1)\n");
    return 2;
  }
  parse_template(argc - 8, argv + 8);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
  if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) die("inet_pton");
  ep = epoll_create1(0);
  if (ep < 0) die("epoll_create1");
  conn_t *cs = calloc((size_t)nconn, sizeof *cs);
  uint64_t *lat = malloc((size_t)want * sizeof *lat);
  if (!cs || !lat) die("alloc");
  for (int i = 0; i < nconn; i++) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) die("connect");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    cs[i].fd = fd;
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl");
  }
  int tfd = -1;
  if (rate > 0) {
    tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = UINT32_MAX};
    if (tfd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev) < 0) die("timerfd");
  }
  long long sent = 0, done = 0;
  uint64_t t0 = now_ns(), last_progress = t0;
  if (rate > 0) {
    struct itimerspec its = {.it_value = {.tv_sec = (time_t)(t0 / 1000000000ull),
                                          .tv_nsec = (long)(t0 % 1000000000ull)}};
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
  } else {
    for (int i = 0; i < nconn && sent < want; i++) {
      uint64_t t = now_ns();
      for (int k = 0; k < pipeline && sent < want; k++, sent++) put_command(&cs[i], (unsigned)i, t);
      flush_out(&cs[i], (uint32_t)i);
    }
  }
  struct epoll_event evs[256];
  while (done < want) {
    int n = epoll_wait(ep, evs, 256, 1000);
    if (n < 0) { if (errno == EINTR) continue; die("epoll_wait"); }
    uint64_t now = now_ns();
    if (n == 0 && now - last_progress > 10000000000ull) {
      fprintf(stderr, "no reply for 10 s (%lld of %lld done)\n", done, want);
      return 3;
    }
    for (int e = 0; e < n; e++) {
      uint32_t id = evs[e].data.u32;
      if (id == UINT32_MAX) { /* the open loop's timer: send everything due */
        uint64_t x; (void)!read(tfd, &x, sizeof x);
        now = now_ns();
        while (sent < want) {
          uint64_t due = t0 + (uint64_t)((double)sent * 1e9 / rate);
          if (due > now) {
            struct itimerspec its = {.it_value = {.tv_sec = (time_t)(due / 1000000000ull),
                                                  .tv_nsec = (long)(due % 1000000000ull)}};
            timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
            break;
          }
          int ci = (int)(sent % nconn);
          put_command(&cs[ci], (unsigned)ci, due);
          flush_out(&cs[ci], (uint32_t)ci);
          sent++;
        }
        continue;
      }
      conn_t *c = &cs[id];
      if (evs[e].events & EPOLLOUT) flush_out(c, id);
      if (!(evs[e].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) continue;
      for (;;) {
        c->rbuf = grow(c->rbuf, &c->rcap, c->rlen + 65536, 1);
        ssize_t r = read(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen);
        if (r < 0) { if (errno == EAGAIN) break; die("read"); }
        if (r == 0) { fprintf(stderr, "server closed a connection\n"); return 3; }
        c->rlen += (size_t)r;
      }
      size_t off = 0;
      now = now_ns();
      while (off < c->rlen) {
        long k = parse_reply(c->rbuf + off, c->rlen - off, 0);
        if (k < 0) { fprintf(stderr, "malformed reply\n"); return 3; }
        if (k == 0) break;
        off += (size_t)k;
        if (c->qh == c->qt) { fprintf(stderr, "reply without a request\n"); return 3; }
        uint64_t d = c->due[c->qh++];
        if (done < want) lat[done] = now > d ? now - d : 0;
        done++;
        last_progress = now;
      }
      memmove(c->rbuf, c->rbuf + off, c->rlen - off);
      c->rlen -= off;
      if (c->qh == c->qt) {
        c->qh = c->qt = 0;
        if (rate <= 0 && sent < want) {
          uint64_t t = now_ns();
          for (int k = 0; k < pipeline && sent < want; k++, sent++) put_command(c, id, t);
          flush_out(c, id);
        }
      }
    }
  }
  double el = (double)(now_ns() - t0) / 1e9;
  qsort(lat, (size_t)want, sizeof *lat, cmp_u64);
  double sum = 0;
  for (long long i = 0; i < want; i++) sum += (double)lat[i];
  printf("{\"requests\":%lld,\"elapsed_s\":%.4f,\"rps\":%.1f,\"offered_rate\":%.1f,"
         "\"errors\":%lld,\"first_error\":\"%s\",\"nil_replies\":%lld,\"int_replies\":%lld,"
         "\"nonzero\":%lld,\"array_replies\":%lld,\"avg_ms\":%.4f,\"p50_ms\":%.4f,"
         "\"p99_ms\":%.4f,\"p999_ms\":%.4f,\"max_ms\":%.4f}\n",
         want, el, (double)want / el, rate, errs, first_err, nils, ints, nonzero, arrays,
         sum / (double)want / 1e6, pct(lat, want, 0.5), pct(lat, want, 0.99),
         pct(lat, want, 0.999), (double)lat[want - 1] / 1e6);
  return 0;
}
