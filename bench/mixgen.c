/* mixgen: a minimal closed-loop RESP2 load generator with a fixed SET:GET mix.
 * usage: mixgen HOST PORT CLIENTS PIPELINE REQUESTS KEYSPACE VALUE_BYTES SET_W GET_W SEED
 * One thread and epoll, like redis-benchmark. A global sequence number interleaves the ops
 * exactly (seq % (SET_W+GET_W) < SET_W -> SET); keys are "key:%012d", uniform in [0, KEYSPACE),
 * the format of redis-benchmark's key:__rand_int__. A request's latency runs from the write of
 * its pipeline batch to the moment its own reply is parsed. Error replies are counted, not
 * fatal. With MIXGEN_AUTH="user password" each connection first logs in with AUTH.
 * Prints one JSON line. */
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
#include <time.h>
#include <unistd.h>

typedef struct {
  int fd, pending, want_out;
  char *wbuf; size_t wlen, wcap, woff;
  char rbuf[65536]; size_t rlen;
  long long bulk_left; /* bulk payload + CRLF still to skip; -1 when not inside a bulk */
  uint64_t t0;
} conn_t;

static int ep, pipeline, wset, wget;
static long long requests, keyspace, vlen, issued, done, seq, sets, gets, hits, misses, errs;
static char *val, vhdr[32]; static int vhdrlen;
static uint64_t *lat, rng = 88172645463325252ull;

static uint64_t now_ns(void) {
  struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static uint64_t xrand(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }
static void die(const char *m) { perror(m); exit(2); }

/* AUTH as "user password" (env MIXGEN_AUTH) on a still blocking socket; exits unless +OK. */
static void login(int fd, const char *auth) {
  const char *sp = strchr(auth, ' ');
  if (!sp) { fprintf(stderr, "MIXGEN_AUTH: \"user password\"\n"); exit(2); }
  char req[1024], rep[256];
  int ulen = (int)(sp - auth), plen = (int)strlen(sp + 1);
  int n = snprintf(req, sizeof req, "*3\r\n$4\r\nAUTH\r\n$%d\r\n%.*s\r\n$%d\r\n%s\r\n",
                   ulen, ulen, auth, plen, sp + 1);
  if (n <= 0 || n >= (int)sizeof req || write(fd, req, (size_t)n) != n) die("auth write");
  ssize_t got = 0;
  while (got < 2 || memcmp(rep + got - 2, "\r\n", 2) != 0) {
    ssize_t r = read(fd, rep + got, sizeof rep - 1 - (size_t)got);
    if (r <= 0) die("auth read");
    got += r;
  }
  if (memcmp(rep, "+OK", 3) != 0) { fprintf(stderr, "AUTH refused: %.*s", (int)got, rep); exit(2); }
}
static void put(conn_t *c, const void *p, size_t n) {
  if (c->wlen + n > c->wcap) {
    while (c->wlen + n > c->wcap) c->wcap = c->wcap ? c->wcap * 2 : 65536;
    if (!(c->wbuf = realloc(c->wbuf, c->wcap))) die("realloc");
  }
  memcpy(c->wbuf + c->wlen, p, n); c->wlen += n;
}
static void watch(conn_t *c, uint32_t id, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.u32 = id};
  if (epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev) < 0) die("epoll_ctl");
}
static void flush_out(conn_t *c, uint32_t id) {
  ssize_t w = write(c->fd, c->wbuf + c->woff, c->wlen - c->woff);
  if (w < 0 && errno != EAGAIN) die("write");
  if (w > 0) c->woff += (size_t)w;
  int more = c->woff < c->wlen;
  if (more != c->want_out) {
    c->want_out = more;
    watch(c, id, more ? EPOLLIN | EPOLLOUT : EPOLLIN);
  }
}
static void send_batch(conn_t *c, uint32_t id) {
  static const char set_hdr[] = "*3\r\n$3\r\nSET\r\n$16\r\n";
  static const char get_hdr[] = "*2\r\n$3\r\nGET\r\n$16\r\n";
  int n = pipeline;
  if (issued >= requests) return;
  if (issued + n > requests) n = (int)(requests - issued);
  c->wlen = c->woff = 0;
  for (int k = 0; k < n; k++) {
    char key[16]; uint64_t r = xrand() % (uint64_t)keyspace;
    memcpy(key, "key:", 4);
    for (int i = 15; i >= 4; i--) { key[i] = (char)('0' + r % 10); r /= 10; }
    if (seq++ % (wset + wget) < wset) {
      put(c, set_hdr, sizeof set_hdr - 1); put(c, key, 16); put(c, "\r\n", 2);
      put(c, vhdr, (size_t)vhdrlen); put(c, val, (size_t)vlen); put(c, "\r\n", 2); sets++;
    } else {
      put(c, get_hdr, sizeof get_hdr - 1); put(c, key, 16); put(c, "\r\n", 2); gets++;
    }
  }
  issued += n; c->pending = n; c->t0 = now_ns();
  flush_out(c, id);
}
static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b; return (x > y) - (x < y);
}
static double pct(double p) { /* nearest rank */
  long long r = (long long)(p * (double)requests); if ((double)r < p * (double)requests) r++;
  if (r < 1) r = 1;
  return (double)lat[r - 1] / 1e6;
}

int main(int argc, char **argv) {
  if (argc != 11) {
    fprintf(stderr, "usage: mixgen HOST PORT CLIENTS PIPELINE REQUESTS KEYSPACE VALUE_BYTES"
                    " SET_W GET_W SEED\n");
    return 2;
  }
  int port = atoi(argv[2]), nclients = atoi(argv[3]);
  pipeline = atoi(argv[4]); requests = atoll(argv[5]); keyspace = atoll(argv[6]);
  vlen = atoll(argv[7]); wset = atoi(argv[8]); wget = atoi(argv[9]);
  rng ^= (uint64_t)atoll(argv[10]) * 0x9E3779B97F4A7C15ull;
  if (nclients < 1 || pipeline < 1 || requests < 1 || keyspace < 1 || keyspace > 1000000000000ll ||
      vlen < 0 || wset < 0 || wget < 0 || wset + wget < 1) return 2;
  val = malloc((size_t)vlen + 1); memset(val, 'x', (size_t)vlen);
  vhdrlen = snprintf(vhdr, sizeof vhdr, "$%lld\r\n", vlen);
  lat = malloc(sizeof(uint64_t) * (size_t)requests);
  conn_t *cs = calloc((size_t)nclients, sizeof(conn_t));
  if (!val || !lat || !cs) die("malloc");
  const char *auth = getenv("MIXGEN_AUTH");
  ep = epoll_create1(0);
  struct sockaddr_in sa = {0}; sa.sin_family = AF_INET; sa.sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) {
    fprintf(stderr, "bad IPv4 address\n");
    return 2;
  }
  for (int i = 0; i < nclients; i++) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd < 0) die("socket");
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) die("connect");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (auth) login(fd, auth);
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) die("fcntl");
    cs[i].fd = fd; cs[i].bulk_left = -1;
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl");
  }
  uint64_t start = now_ns();
  for (int i = 0; i < nclients; i++) send_batch(&cs[i], (uint32_t)i);
  struct epoll_event evs[256];
  while (done < requests) {
    int ne = epoll_wait(ep, evs, 256, 10000);
    if (ne < 0) { if (errno == EINTR) continue; die("epoll_wait"); }
    if (ne == 0) {
      fprintf(stderr, "no reply for 10 s (done %lld of %lld)\n", done, requests);
      return 3;
    }
    for (int e = 0; e < ne; e++) {
      uint32_t id = evs[e].data.u32; conn_t *c = &cs[id];
      if ((evs[e].events & EPOLLOUT) && c->want_out) flush_out(c, id);
      if (!(evs[e].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) continue;
      for (;;) {
        size_t room = sizeof c->rbuf - c->rlen;
        ssize_t r = read(c->fd, c->rbuf + c->rlen, room);
        if (r == 0) { fprintf(stderr, "server closed the connection\n"); return 3; }
        if (r < 0) { if (errno == EAGAIN) break; die("read"); }
        c->rlen += (size_t)r;
        uint64_t t = now_ns();
        size_t off = 0;
        while (off < c->rlen) {
          if (c->bulk_left >= 0) {
            size_t take = c->rlen - off;
            if ((long long)take > c->bulk_left) take = (size_t)c->bulk_left;
            off += take; c->bulk_left -= (long long)take;
            if (c->bulk_left > 0) break;
            c->bulk_left = -1; hits++;
          } else {
            char *nl = memchr(c->rbuf + off, '\n', c->rlen - off);
            if (!nl) {
              if (off == 0 && c->rlen == sizeof c->rbuf) {
                fprintf(stderr, "reply line too long\n");
                return 3;
              }
              break;
            }
            char type = c->rbuf[off]; long long len = atoll(c->rbuf + off + 1);
            off = (size_t)(nl - c->rbuf) + 1;
            if (type == '$') {
              if (len >= 0) { c->bulk_left = len + 2; continue; }
              misses++;
            } else if (type == '_') misses++;
            else if (type == '-') errs++;
            else if (type != '+' && type != ':') {
              fprintf(stderr, "unexpected reply type '%c'\n", type);
              return 3;
            }
          }
          if (done < requests) lat[done] = t - c->t0;
          done++;
          if (--c->pending == 0) send_batch(c, id);
        }
        memmove(c->rbuf, c->rbuf + off, c->rlen - off); c->rlen -= off;
        if ((size_t)r < room) break;
      }
    }
  }
  double el = (double)(now_ns() - start) / 1e9;
  qsort(lat, (size_t)requests, sizeof(uint64_t), cmp_u64);
  double sum = 0; for (long long i = 0; i < requests; i++) sum += (double)lat[i];
  printf("{\"requests\": %lld, \"elapsed_s\": %.6f, \"rps\": %.2f, \"sets\": %lld, \"gets\": %lld, "
         "\"hits\": %lld, \"misses\": %lld, \"errors\": %lld, \"avg_ms\": %.4f, \"min_ms\": %.4f, "
         "\"p50_ms\": %.4f, \"p95_ms\": %.4f, \"p99_ms\": %.4f, \"p999_ms\": %.4f, "
         "\"max_ms\": %.4f}\n",
         requests, el, (double)requests / el, sets, gets, hits, misses, errs,
         sum / (double)requests / 1e6, (double)lat[0] / 1e6, pct(0.50), pct(0.95), pct(0.99),
         pct(0.999), (double)lat[requests - 1] / 1e6);
  return 0;
}
