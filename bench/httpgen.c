/* httpgen: a minimal load generator for small GETs and writes over HTTP/1.1 keep-alive or RESP2.
 * usage: httpgen PROTO HOST PORT CLIENTS REQUESTS KEYSPACE VALUE_BYTES OP RATE SEED
 *   PROTO  http   larder's key API: GET /v1/kv/KEY, PUT /v1/kv/KEY with the value as body
 *          webdis webdis's:        GET /GET/KEY.txt, PUT /SET/KEY with the value as body
 *          resp   RESP2:           GET KEY, SET KEY VALUE
 *   OP     get | set
 *   RATE   0: closed loop, each connection sends its next request when the reply is in;
 *          N: open loop at N requests/s in all, each request's latency counted from the moment
 *          it was due (so a server that falls behind is not excused by the generator waiting).
 * One thread and epoll, one request in flight per connection (no pipelining). Keys are
 * "key:%012d", uniform in [0, KEYSPACE), the format of redis-benchmark's key:__rand_int__.
 * Prints one JSON line. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

enum { P_HTTP, P_WEBDIS, P_RESP };

typedef struct {
  int fd, busy;
  char *wbuf; size_t wlen, woff;
  char rbuf[1 << 16]; size_t rlen;
  uint64_t t0;
} conn_t;

static int proto, is_set, ep;
static long long requests, keyspace, vlen, issued, done, hits, misses, errs;
static char *val;
static uint64_t *lat, rng = 88172645463325252ull;

static uint64_t now_ns(void) {
  struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static uint64_t xrand(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }
static void die(const char *m) { perror(m); exit(2); }
static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void watch_out(conn_t *c, uint32_t id, int out) {
  struct epoll_event ev = {.events = EPOLLIN | (out ? EPOLLOUT : 0), .data.u32 = id};
  if (epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev) < 0) die("epoll_ctl");
}

static void flush_out(conn_t *c, uint32_t id) {
  ssize_t w = write(c->fd, c->wbuf + c->woff, c->wlen - c->woff);
  if (w < 0 && errno != EAGAIN) die("write");
  if (w > 0) c->woff += (size_t)w;
  if (c->woff < c->wlen) watch_out(c, id, 1);
}

/* Builds and sends one request on an idle connection; t0 is when it was due. */
static void send_one(conn_t *c, uint32_t id, uint64_t t0) {
  char key[17]; uint64_t r = xrand() % (uint64_t)keyspace;
  memcpy(key, "key:", 4);
  for (int i = 15; i >= 4; i--) { key[i] = (char)('0' + r % 10); r /= 10; }
  key[16] = 0;
  char *p = c->wbuf; int n;
  if (proto == P_RESP) {
    if (is_set) n = sprintf(p, "*3\r\n$3\r\nSET\r\n$16\r\n%s\r\n$%lld\r\n", key, vlen);
    else n = sprintf(p, "*2\r\n$3\r\nGET\r\n$16\r\n%s\r\n", key);
  } else {
    const char *path = proto == P_HTTP ? "/v1/kv/" : is_set ? "/SET/" : "/GET/";
    const char *ext = proto == P_WEBDIS && !is_set ? ".txt" : "";
    if (is_set)
      n = sprintf(p, "PUT %s%s HTTP/1.1\r\nHost: bench\r\nContent-Length: %lld\r\n\r\n", path,
                  key, vlen);
    else n = sprintf(p, "GET %s%s%s HTTP/1.1\r\nHost: bench\r\n\r\n", path, key, ext);
  }
  if (is_set) {
    memcpy(p + n, val, (size_t)vlen); n += (int)vlen;
    if (proto == P_RESP) { memcpy(p + n, "\r\n", 2); n += 2; }
  }
  c->wlen = (size_t)n; c->woff = 0; c->busy = 1; c->t0 = t0; issued++;
  flush_out(c, id);
}

/* Length of the complete reply at the front of the buffer, 0 if incomplete; sets *kind to
 * 1 (hit or write done), 0 (miss), -1 (error). */
static size_t reply_len(conn_t *c, int *kind) {
  char *b = c->rbuf; size_t n = c->rlen;
  if (proto == P_RESP) {
    char *e = memmem(b, n, "\r\n", 2);
    if (!e) return 0;
    size_t line = (size_t)(e - b) + 2;
    if (b[0] == '$') {
      long long l = atoll(b + 1);
      if (l < 0) { *kind = 0; return line; }
      if (n < line + (size_t)l + 2) return 0;
      *kind = 1; return line + (size_t)l + 2;
    }
    *kind = b[0] == '-' ? -1 : 1;
    return line;
  }
  char *e = memmem(b, n, "\r\n\r\n", 4);
  if (!e) return 0;
  size_t head = (size_t)(e - b) + 4, body = 0;
  int status = atoi(b + 9);
  for (char *h = memchr(b, '\n', head); h && h < e; h = memchr(h + 1, '\n', (size_t)(e - h))) {
    if (strncasecmp(h + 1, "Content-Length:", 15) == 0) body = (size_t)atoll(h + 16);
  }
  if (n < head + body) return 0;
  if (status == 404) *kind = 0;
  else if (status >= 200 && status < 300) *kind = 1;
  else *kind = -1;
  return head + body;
}

int main(int argc, char **argv) {
  if (argc != 11) {
    fprintf(stderr, "usage: %s http|webdis|resp HOST PORT CLIENTS REQUESTS KEYSPACE "
                    "VALUE_BYTES get|set RATE SEED\n", argv[0]);
    return 2;
  }
  proto = !strcmp(argv[1], "http") ? P_HTTP : !strcmp(argv[1], "webdis") ? P_WEBDIS : P_RESP;
  int clients = atoi(argv[4]);
  requests = atoll(argv[5]); keyspace = atoll(argv[6]); vlen = atoll(argv[7]);
  is_set = !strcmp(argv[8], "set");
  double rate = atof(argv[9]);
  rng ^= (uint64_t)atoll(argv[10]) * 0x9E3779B97F4A7C15ull;
  if (clients < 1 || requests < 1 || keyspace < 1 || vlen < 0) { fprintf(stderr, "bad args\n"); return 2; }
  val = malloc((size_t)vlen + 1); memset(val, 'v', (size_t)vlen);
  lat = malloc(sizeof *lat * (size_t)requests);
  conn_t *cs = calloc((size_t)clients, sizeof *cs);
  uint32_t *idle = malloc(sizeof *idle * (size_t)clients); int nidle = 0;
  if (!val || !lat || !cs || !idle) die("malloc");
  if ((ep = epoll_create1(0)) < 0) die("epoll_create1");
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[3]))};
  if (inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1) die("inet_pton");
  for (int i = 0; i < clients; i++) {
    conn_t *c = &cs[i];
    if ((c->fd = socket(AF_INET, SOCK_STREAM, 0)) < 0) die("socket");
    int one = 1; setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0) die("connect");
    c->wbuf = malloc((size_t)vlen + 256);
    if (!c->wbuf) die("malloc");
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) < 0) die("epoll_ctl");
    idle[nidle++] = (uint32_t)i;
  }
  /* The open loop's clock: a timer armed for the next due request (no spinning, no
   * millisecond rounding). */
  int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  if (tfd < 0) die("timerfd_create");
  struct epoll_event tev = {.events = EPOLLIN, .data.u32 = UINT32_MAX};
  if (epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &tev) < 0) die("epoll_ctl");
  uint64_t start = now_ns(), interval = rate > 0 ? (uint64_t)(1e9 / rate) : 0;
  struct epoll_event evs[256];
  while (done < requests) {
    uint64_t now = now_ns();
    /* Send what is due on idle connections (closed loop: everything, at once). */
    while (nidle > 0 && issued < requests) {
      uint64_t due = interval ? start + (uint64_t)issued * interval : now;
      if (due > now) break;
      uint32_t id = idle[--nidle];
      send_one(&cs[id], id, interval ? due : now);
    }
    if (interval && issued < requests && nidle > 0) {
      uint64_t due = start + (uint64_t)issued * interval;
      struct itimerspec its = {.it_value = {.tv_sec = (time_t)(due / 1000000000ull),
                                            .tv_nsec = (long)(due % 1000000000ull)}};
      if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0) die("timerfd_settime");
    }
    int n = epoll_wait(ep, evs, 256, -1);
    if (n < 0 && errno != EINTR) die("epoll_wait");
    for (int k = 0; k < n; k++) {
      uint32_t id = evs[k].data.u32;
      if (id == UINT32_MAX) {
        uint64_t expirations;
        if (read(tfd, &expirations, sizeof expirations) < 0 && errno != EAGAIN) die("timerfd");
        continue;
      }
      conn_t *c = &cs[id];
      if (evs[k].events & EPOLLOUT) {
        flush_out(c, id);
        if (c->woff == c->wlen) watch_out(c, id, 0);
      }
      if (!(evs[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) continue;
      ssize_t r = read(c->fd, c->rbuf + c->rlen, sizeof c->rbuf - c->rlen);
      if (r == 0) { fprintf(stderr, "server closed a connection\n"); return 1; }
      if (r < 0) { if (errno == EAGAIN) continue; die("read"); }
      c->rlen += (size_t)r;
      int kind;
      size_t used = reply_len(c, &kind);
      if (!used) {
        if (c->rlen == sizeof c->rbuf) { fprintf(stderr, "reply too large\n"); return 1; }
        continue;
      }
      uint64_t t = now_ns();
      lat[done++] = t - c->t0;
      if (kind < 0) errs++; else if (kind == 0) misses++; else hits++;
      memmove(c->rbuf, c->rbuf + used, c->rlen - used); c->rlen -= used;
      c->busy = 0;
      if (!interval && issued < requests) send_one(c, id, t);
      else idle[nidle++] = id;
    }
  }
  double secs = (double)(now_ns() - start) / 1e9;
  qsort(lat, (size_t)done, sizeof *lat, cmp_u64);
#define PCT(p) ((double)lat[(size_t)((double)(done - 1) * (p))] / 1000.0)
  printf("{\"proto\":\"%s\",\"op\":\"%s\",\"clients\":%d,\"requests\":%lld,\"seconds\":%.4f,"
         "\"ops_per_s\":%.1f,\"offered_rate\":%.1f,\"p50_us\":%.1f,\"p99_us\":%.1f,"
         "\"p999_us\":%.1f,\"max_us\":%.1f,\"hits\":%lld,\"misses\":%lld,\"errors\":%lld}\n",
         argv[1], argv[8], clients, done, secs, (double)done / secs, rate, PCT(0.5), PCT(0.99),
         PCT(0.999), (double)lat[done - 1] / 1000.0, hits, misses, errs);
  return 0;
}
