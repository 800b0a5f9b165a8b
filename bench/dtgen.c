/* dtgen: a closed-loop RESP2 load generator for the data-type benchmarks (datatype_compare.py).
 *
 *   dtgen run HOST PORT CLIENTS PIPELINE REQUESTS SEED ARG...
 *       CLIENTS connections on one epoll thread, each writing PIPELINE commands at a time and
 *       waiting for their PIPELINE replies, until REQUESTS replies came back. The command is
 *       ARG... with placeholders expanded afresh for every command:
 *         {N}    a uniform random integer in [0, N), decimal        h:{100000} -> h:4711
 *         {N:W}  the same, zero-padded to W digits                  v{10000000:7} -> v0004711
 *         {fN}   a uniform random double in [0, N), 6 decimals      {f1000000} -> 4711.123456
 *       A request's latency runs from the write of its pipeline batch to the parse of its own
 *       reply (as in resp_compare.py's mixgen).
 *
 *   dtgen pushpop HOST PORT PRODUCERS CONSUMERS PIPELINE POPS WINDOW ITEM_BYTES SEED KEY
 *       PRODUCERS connections send `LPUSH KEY item` (PIPELINE a write) while CONSUMERS connections
 *       send `BRPOP KEY 0` (PIPELINE a write, each waiting for its replies), all on one epoll
 *       thread, until POPS items have been popped. A producer writes only while fewer than WINDOW
 *       items are pushed but not yet popped, so the list stays short and the consumers block
 *       whenever they overtake the producers. Every item starts with its push time (20 digits,
 *       CLOCK_MONOTONIC ns, padded with 'x' to ITEM_BYTES); a pop's latency runs from that push
 *       write to the parse of the BRPOP reply that carried it.
 *
 *   dtgen group HOST PORT CONSUMERS COUNT ENTRIES SEED KEY GROUP
 *       CONSUMERS connections, consumer i named c<i>, each in a loop: `XREADGROUP GROUP GROUP c<i>
 *       COUNT COUNT STREAMS KEY >`, wait for the entries, `XACK KEY GROUP <the IDs received>`,
 *       wait for its reply; no new read once ENTRIES entries were delivered, so the run acks
 *       ENTRIES to ENTRIES + (CONSUMERS - 1) * COUNT entries. The stream must hold them already
 *       (the group reads a prefilled stream). requests = entries acked; a latency sample is one
 *       cycle, from the XREADGROUP write to the parse of its XACK reply. An XACK that acks fewer
 *       IDs than it names is an error; a read that finds nothing ends that consumer (counted).
 *
 * Prints one JSON line: requests, elapsed_s, rps, errors (and the first error reply), nil
 * replies, integer replies > 0, array replies, and latency avg/min/p50/p95/p99/p99.9/max in ms
 * (exact nearest rank over every request; for pushpop, over every pop, plus the LPUSH replies'
 * push_p50_ms/push_p99_ms). Exit status 3 when the server closes a connection or answers
 * nothing for 10 s (a consumer never woken, say). */
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

enum { ROLE_RUN, ROLE_PRODUCER, ROLE_CONSUMER, ROLE_GROUP };

typedef struct {
  int fd, role, pending, want_out, idle;
  int acking, nids, stopped; /* group: XACK in flight, IDs it names, consumer finished */
  char *ids; size_t idslen, idscap; /* group: the IDs of the last read, as RESP bulk strings */
  char *wbuf; size_t wlen, wcap, woff;
  char *rbuf; size_t rlen, rcap;
  uint64_t t0;
} conn_t;

/* one placeholder-expanded argument: literal pieces and placeholders */
typedef struct { int kind; char *lit; size_t litlen; long long n; int width; } seg_t;
typedef struct { seg_t *segs; int nsegs; } arg_t;

typedef struct {
  char type; int nil; long long ival;
  const char *bulk; long long blen; /* the last bulk string seen (BRPOP's item) */
} reply_t;

static int ep;
static uint64_t rng = 88172645463325252ull;
static long long errs, nils, nonzero, arrays;
static char first_err[160];

static uint64_t now_ns(void) {
  struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static uint64_t xrand(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }
static void die(const char *m) { perror(m); exit(2); }
static void put(conn_t *c, const void *p, size_t n) {
  if (c->wlen + n > c->wcap) {
    while (c->wlen + n > c->wcap) c->wcap = c->wcap ? c->wcap * 2 : 65536;
    if (!(c->wbuf = realloc(c->wbuf, c->wcap))) die("realloc");
  }
  memcpy(c->wbuf + c->wlen, p, n); c->wlen += n;
}
static void put_bulk(conn_t *c, const char *p, size_t n) {
  char h[32]; int hl = snprintf(h, sizeof h, "$%zu\r\n", n);
  put(c, h, (size_t)hl); put(c, p, n); put(c, "\r\n", 2);
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

/* ---------------------------------------------------------------- command templates */

static arg_t *targs; static int ntargs;

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
      if (close) {
        const char *p = s + 1;
        g->kind = 1;
        if (*p == 'f') { g->kind = 2; p++; }
        char *end; g->n = strtoll(p, &end, 10);
        if (*end == ':') g->width = atoi(end + 1);
        if (g->n < 1) { fprintf(stderr, "bad placeholder in %s\n", argv[i]); exit(2); }
        s = close + 1;
      } else {
        const char *next = strchr(s + 1, '{');
        g->lit = (char *)s; g->litlen = next ? (size_t)(next - s) : strlen(s);
        s += g->litlen;
      }
    }
  }
}

static void put_command(conn_t *c) {
  char h[16]; int hl = snprintf(h, sizeof h, "*%d\r\n", ntargs);
  put(c, h, (size_t)hl);
  for (int i = 0; i < ntargs; i++) {
    char buf[4096]; size_t len = 0; arg_t *a = &targs[i];
    for (int k = 0; k < a->nsegs; k++) {
      seg_t *g = &a->segs[k]; size_t room = sizeof buf - len;
      int w = 0;
      if (g->kind == 0) {
        if (g->litlen >= room) { fprintf(stderr, "argument too long\n"); exit(2); }
        memcpy(buf + len, g->lit, g->litlen); len += g->litlen; continue;
      } else if (g->kind == 1) {
        w = snprintf(buf + len, room, "%0*llu", g->width,
                     (unsigned long long)(xrand() % (uint64_t)g->n));
      } else {
        double f = (double)(xrand() >> 11) / 9007199254740992.0 * (double)g->n;
        w = snprintf(buf + len, room, "%.6f", f);
      }
      if (w < 0 || (size_t)w >= room) { fprintf(stderr, "argument too long\n"); exit(2); }
      len += (size_t)w;
    }
    put_bulk(c, buf, len);
  }
}

/* ---------------------------------------------------------------- replies */

/* Parse one RESP2 reply at p; returns the bytes it spans, 0 if incomplete, -1 if malformed. */
static long parse_reply(const char *p, size_t n, reply_t *r, int depth) {
  const char *nl = memchr(p, '\n', n);
  if (!nl) return 0;
  long hl = (long)(nl - p) + 1;
  long long v = strtoll(p + 1, NULL, 10);
  switch (p[0]) {
  case '+': case ':': case '-': case ',': case '#': case '(':
    if (depth == 0) {
      r->type = p[0]; r->ival = v;
      if (p[0] == '-' && !first_err[0]) {
        size_t k = 0;
        for (const char *q = p + 1; q < nl - 1 && k < sizeof first_err - 1; q++)
          first_err[k++] = (*q == '"' || *q == '\\' || *q < 32) ? '\'' : *q;
        first_err[k] = 0;
      }
    }
    return hl;
  case '_':
    if (depth == 0) { r->type = '_'; r->nil = 1; }
    return hl;
  case '$':
    if (depth == 0) r->type = '$';
    if (v < 0) { if (depth == 0) r->nil = 1; return hl; }
    if ((long long)n < hl + v + 2) return 0;
    r->bulk = p + hl; r->blen = v;
    return hl + (long)v + 2;
  case '*': case '~': case '%': {
    if (depth == 0) r->type = '*';
    if (v < 0) { if (depth == 0) r->nil = 1; return hl; }
    if (p[0] == '%') v *= 2;
    long off = hl;
    for (long long i = 0; i < v; i++) {
      long k = parse_reply(p + off, n - (size_t)off, r, depth + 1);
      if (k <= 0) return k;
      off += k;
    }
    return off;
  }
  default:
    return -1;
  }
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b; return (x > y) - (x < y);
}
static double pct(uint64_t *lat, long long n, double p) { /* nearest rank */
  if (n < 1) return 0;
  long long r = (long long)(p * (double)n); if ((double)r < p * (double)n) r++;
  if (r < 1) r = 1;
  return (double)lat[r - 1] / 1e6;
}

/* ---------------------------------------------------------------- connections and loop */

static conn_t *cs; static int nconns;
static int pipeline;
static long long requests, issued, done;           /* run */
static long long pushed, push_done, pop_issued, popped, window; /* pushpop */
static uint64_t *lat, *push_lat; static long long nlat, npush_lat;
static char *item; static int item_bytes; static const char *qkey;
static const char *gname; /* group */
static long long delivered, acked, empty_reads, ack_short, latcap;
static int active; /* group: consumers still reading */

/* One RESP2 header line at *p (before end): returns its type byte and sets *v to its number, or
 * returns 0 when there is no complete line; *p moves past the line. */
static char header(const char **p, const char *end, long long *v) {
  const char *nl = memchr(*p, '\n', (size_t)(end - *p));
  if (!nl || nl - *p < 2) return 0;
  char t = **p;
  *v = strtoll(*p + 1, NULL, 10); *p = nl + 1;
  return t;
}

/* The entry IDs of one complete XREADGROUP reply (RESP2: [[key, [[id, [field, value, ...]],
 * ...]], ...]) into c->ids as RESP bulk strings, c->nids of them (0 for a nil reply or an
 * error). Returns -1 if the reply does not have that shape. */
static int xread_ids(const char *p, size_t n, conn_t *c) {
  const char *end = p + n; long long v, two, len, entries;
  c->nids = 0; c->idslen = 0;
  if (header(&p, end, &v) != '*' || v < 0) return 0;
  for (long long s = 0; s < v; s++) {
    if (header(&p, end, &two) != '*' || two != 2) return -1;
    if (header(&p, end, &len) != '$' || len < 0 || len + 2 > end - p) return -1;
    p += len + 2;
    if (header(&p, end, &entries) != '*') return -1;
    for (long long e = 0; e < entries; e++) {
      if (header(&p, end, &two) != '*' || two != 2) return -1;
      const char *id0 = p;
      if (header(&p, end, &len) != '$' || len < 0 || len + 2 > end - p) return -1;
      size_t idbytes = (size_t)(p - id0) + (size_t)len + 2; /* "$len\r\nID\r\n" */
      if (c->idslen + idbytes > c->idscap) {
        while (c->idslen + idbytes > c->idscap) c->idscap = c->idscap ? c->idscap * 2 : 4096;
        if (!(c->ids = realloc(c->ids, c->idscap))) die("realloc");
      }
      memcpy(c->ids + c->idslen, id0, idbytes); c->idslen += idbytes; c->nids++;
      p += len + 2;
      reply_t skip = {0};
      long k = parse_reply(p, (size_t)(end - p), &skip, 1); /* the fields, or nil if deleted */
      if (k <= 0) return -1;
      p += k;
    }
  }
  return 0;
}

#define PUT_LIT(c, lit) put(c, lit, sizeof lit - 1)

/* group: the next command of consumer c (number id): XACK of what it read, else a new read. */
static void send_group(conn_t *c, uint32_t id) {
  char h[64]; int hl;
  c->wlen = c->woff = 0;
  if (c->acking) {
    hl = snprintf(h, sizeof h, "*%d\r\n$4\r\nXACK\r\n", 3 + c->nids);
    put(c, h, (size_t)hl); put_bulk(c, qkey, strlen(qkey)); put_bulk(c, gname, strlen(gname));
    put(c, c->ids, c->idslen);
  } else {
    if (delivered >= requests) { c->stopped = 1; active--; return; }
    PUT_LIT(c, "*9\r\n$10\r\nXREADGROUP\r\n$5\r\nGROUP\r\n");
    put_bulk(c, gname, strlen(gname));
    hl = snprintf(h, sizeof h, "c%u", id); put_bulk(c, h, (size_t)hl);
    PUT_LIT(c, "$5\r\nCOUNT\r\n");
    hl = snprintf(h, sizeof h, "%d", pipeline); put_bulk(c, h, (size_t)hl);
    PUT_LIT(c, "$7\r\nSTREAMS\r\n"); put_bulk(c, qkey, strlen(qkey)); PUT_LIT(c, "$1\r\n>\r\n");
    c->t0 = now_ns();
  }
  c->pending = 1;
  flush_out(c, id);
}

static void send_batch(conn_t *c, uint32_t id) {
  int n = pipeline;
  if (c->role == ROLE_GROUP) { send_group(c, id); return; }
  c->wlen = c->woff = 0;
  if (c->role == ROLE_RUN) {
    if (issued + n > requests) n = (int)(requests - issued);
    if (n <= 0) return;
    for (int k = 0; k < n; k++) put_command(c);
    issued += n;
  } else if (c->role == ROLE_PRODUCER) {
    long long room = window - (pushed - popped);
    if (n > room) n = (int)room;
    if (pushed + n > requests) n = (int)(requests - pushed);
    if (n <= 0) { c->idle = 1; return; }
    c->idle = 0;
    uint64_t t = now_ns();
    char ts[24]; snprintf(ts, sizeof ts, "%020llu", (unsigned long long)t);
    memcpy(item, ts, 20);
    for (int k = 0; k < n; k++) {
      put(c, "*3\r\n$5\r\nLPUSH\r\n", 15); put_bulk(c, qkey, strlen(qkey));
      put_bulk(c, item, (size_t)item_bytes);
    }
    pushed += n;
  } else {
    if (pop_issued + n > requests) n = (int)(requests - pop_issued);
    if (n <= 0) return;
    for (int k = 0; k < n; k++) {
      put(c, "*3\r\n$5\r\nBRPOP\r\n", 15); put_bulk(c, qkey, strlen(qkey));
      put(c, "$1\r\n0\r\n", 7);
    }
    pop_issued += n;
  }
  c->pending = n; c->t0 = now_ns();
  flush_out(c, id);
}

static void wake_producers(void) {
  for (int i = 0; i < nconns; i++)
    if (cs[i].role == ROLE_PRODUCER && cs[i].idle && cs[i].pending == 0)
      send_batch(&cs[i], (uint32_t)i);
}

static void on_reply(conn_t *c, uint32_t id, reply_t *r, uint64_t t) {
  if (r->type == '-') errs++;
  else if (r->nil) nils++;
  else if (r->type == ':' && r->ival > 0) nonzero++;
  else if (r->type == '*') arrays++;
  if (c->role == ROLE_GROUP) {
    if (c->acking) {
      long long n = r->type == ':' ? r->ival : 0;
      if (n != c->nids) ack_short++;
      acked += n; c->acking = 0;
      if (nlat < latcap) lat[nlat++] = t - c->t0;
    } else if (c->nids == 0) { /* nothing left to read: this consumer is done */
      empty_reads++; c->stopped = 1; active--; c->pending = 0;
      return;
    } else {
      delivered += c->nids; c->acking = 1;
    }
  } else if (c->role == ROLE_RUN) {
    if (done < requests) lat[nlat++] = t - c->t0;
    done++;
  } else if (c->role == ROLE_PRODUCER) {
    if (npush_lat < requests) push_lat[npush_lat++] = t - c->t0;
    push_done++;
  } else {
    uint64_t t_push = 0;
    if (r->type == '*' && !r->nil && r->bulk && r->blen >= 20) {
      for (int k = 0; k < 20; k++) t_push = t_push * 10 + (uint64_t)(r->bulk[k] - '0');
      if (nlat < requests) lat[nlat++] = t - t_push;
    }
    popped++; done++;
  }
  if (--c->pending == 0) send_batch(c, id);
}

static void connect_all(const char *host, int port, int nprod, int ncons, int nrun) {
  nconns = nrun < 0 ? ncons : nprod + ncons + nrun; /* nrun < 0: ncons group consumers */
  cs = calloc((size_t)nconns, sizeof(conn_t));
  if (!cs) die("calloc");
  struct sockaddr_in sa = {0}; sa.sin_family = AF_INET; sa.sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) { fprintf(stderr, "bad IPv4 address\n"); exit(2); }
  ep = epoll_create1(0);
  for (int i = 0; i < nconns; i++) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd < 0) die("socket");
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) die("connect");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) die("fcntl");
    cs[i].fd = fd;
    cs[i].role = nrun < 0 ? ROLE_GROUP : i < nrun ? ROLE_RUN
                 : i < nrun + nprod ? ROLE_PRODUCER : ROLE_CONSUMER;
    cs[i].rcap = 65536; cs[i].rbuf = malloc(cs[i].rcap);
    if (!cs[i].rbuf) die("malloc");
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl");
  }
}

static int finished(void) {
  if (cs[0].role == ROLE_GROUP) return active == 0;
  return cs[0].role == ROLE_RUN ? done >= requests : popped >= requests && push_done >= requests;
}

static void loop(void) {
  struct epoll_event evs[256];
  while (!finished()) {
    int ne = epoll_wait(ep, evs, 256, 10000);
    if (ne < 0) { if (errno == EINTR) continue; die("epoll_wait"); }
    if (ne == 0) {
      fprintf(stderr, "no reply for 10 s (done %lld of %lld; pushed %lld, popped %lld)\n",
              done, requests, pushed, popped);
      exit(3);
    }
    for (int e = 0; e < ne; e++) {
      uint32_t id = evs[e].data.u32; conn_t *c = &cs[id];
      if ((evs[e].events & EPOLLOUT) && c->want_out) flush_out(c, id);
      if (!(evs[e].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) continue;
      for (;;) {
        if (c->rlen == c->rcap) {
          c->rcap *= 2;
          if (!(c->rbuf = realloc(c->rbuf, c->rcap))) die("realloc");
        }
        size_t room = c->rcap - c->rlen;
        ssize_t r = read(c->fd, c->rbuf + c->rlen, room);
        if (r == 0) { fprintf(stderr, "server closed the connection\n"); exit(3); }
        if (r < 0) { if (errno == EAGAIN) break; die("read"); }
        c->rlen += (size_t)r;
        uint64_t t = now_ns();
        size_t off = 0;
        while (off < c->rlen && c->pending > 0) {
          reply_t rep = {0};
          long k = parse_reply(c->rbuf + off, c->rlen - off, &rep, 0);
          if (k < 0) { fprintf(stderr, "malformed reply\n"); exit(3); }
          if (k == 0) break;
          if (c->role == ROLE_GROUP && !c->acking && xread_ids(c->rbuf + off, (size_t)k, c) < 0) {
            fprintf(stderr, "malformed XREADGROUP reply\n"); exit(3);
          }
          off += (size_t)k;
          on_reply(c, id, &rep, t);
        }
        if (off < c->rlen && c->pending == 0) {
          fprintf(stderr, "unexpected extra reply data\n"); exit(3);
        }
        memmove(c->rbuf, c->rbuf + off, c->rlen - off); c->rlen -= off;
        if (c->role == ROLE_CONSUMER) wake_producers();
        if ((size_t)r < room) break;
      }
    }
  }
}

static void report(double el, const char *extra) {
  qsort(lat, (size_t)nlat, sizeof(uint64_t), cmp_u64);
  double sum = 0; for (long long i = 0; i < nlat; i++) sum += (double)lat[i];
  printf("{\"requests\": %lld, \"elapsed_s\": %.6f, \"rps\": %.2f, \"errors\": %lld, "
         "\"first_error\": \"%s\", \"nil_replies\": %lld, \"nonzero_int_replies\": %lld, "
         "\"array_replies\": %lld, \"latency_samples\": %lld, \"avg_ms\": %.4f, \"min_ms\": %.4f, "
         "\"p50_ms\": %.4f, \"p95_ms\": %.4f, \"p99_ms\": %.4f, \"p999_ms\": %.4f, "
         "\"max_ms\": %.4f%s}\n",
         requests, el, (double)requests / el, errs, first_err, nils, nonzero, arrays, nlat,
         nlat ? sum / (double)nlat / 1e6 : 0, nlat ? (double)lat[0] / 1e6 : 0, pct(lat, nlat, 0.50),
         pct(lat, nlat, 0.95), pct(lat, nlat, 0.99), pct(lat, nlat, 0.999),
         nlat ? (double)lat[nlat - 1] / 1e6 : 0, extra);
}

static void usage(void) {
  fprintf(stderr, "usage: dtgen run HOST PORT CLIENTS PIPELINE REQUESTS SEED ARG...\n"
                  "       dtgen pushpop HOST PORT PRODUCERS CONSUMERS PIPELINE POPS WINDOW"
                  " ITEM_BYTES SEED KEY\n"
                  "       dtgen group HOST PORT CONSUMERS COUNT ENTRIES SEED KEY GROUP\n");
  exit(2);
}

int main(int argc, char **argv) {
  if (argc < 2) usage();
  if (!strcmp(argv[1], "run")) {
    if (argc < 9) usage();
    int clients = atoi(argv[4]);
    pipeline = atoi(argv[5]); requests = atoll(argv[6]);
    rng ^= (uint64_t)atoll(argv[7]) * 0x9E3779B97F4A7C15ull;
    if (clients < 1 || pipeline < 1 || requests < 1) usage();
    parse_template(argc - 8, argv + 8);
    lat = malloc(sizeof(uint64_t) * (size_t)requests);
    if (!lat) die("malloc");
    connect_all(argv[2], atoi(argv[3]), 0, 0, clients);
    uint64_t start = now_ns();
    for (int i = 0; i < nconns; i++) send_batch(&cs[i], (uint32_t)i);
    loop();
    report((double)(now_ns() - start) / 1e9, "");
  } else if (!strcmp(argv[1], "pushpop")) {
    if (argc != 12) usage();
    int prod = atoi(argv[4]), cons = atoi(argv[5]);
    pipeline = atoi(argv[6]); requests = atoll(argv[7]); window = atoll(argv[8]);
    item_bytes = atoi(argv[9]);
    rng ^= (uint64_t)atoll(argv[10]) * 0x9E3779B97F4A7C15ull;
    qkey = argv[11];
    if (prod < 1 || cons < 1 || pipeline < 1 || requests < 1 || window < 1 || item_bytes < 20)
      usage();
    item = malloc((size_t)item_bytes); lat = malloc(sizeof(uint64_t) * (size_t)requests);
    push_lat = malloc(sizeof(uint64_t) * (size_t)requests);
    if (!item || !lat || !push_lat) die("malloc");
    memset(item, 'x', (size_t)item_bytes);
    connect_all(argv[2], atoi(argv[3]), prod, cons, 0);
    uint64_t start = now_ns();
    for (int i = 0; i < nconns; i++) send_batch(&cs[i], (uint32_t)i);
    loop();
    double el = (double)(now_ns() - start) / 1e9;
    qsort(push_lat, (size_t)npush_lat, sizeof(uint64_t), cmp_u64);
    char extra[160];
    snprintf(extra, sizeof extra, ", \"pushes\": %lld, \"push_p50_ms\": %.4f, \"push_p99_ms\": %.4f",
             push_done, pct(push_lat, npush_lat, 0.50), pct(push_lat, npush_lat, 0.99));
    report(el, extra);
  } else if (!strcmp(argv[1], "group")) {
    if (argc != 10) usage();
    int cons = atoi(argv[4]);
    pipeline = atoi(argv[5]); requests = atoll(argv[6]);
    rng ^= (uint64_t)atoll(argv[7]) * 0x9E3779B97F4A7C15ull;
    qkey = argv[8]; gname = argv[9];
    if (cons < 1 || pipeline < 1 || requests < 1) usage();
    latcap = requests + cons;
    if (!(lat = malloc(sizeof(uint64_t) * (size_t)latcap))) die("malloc");
    connect_all(argv[2], atoi(argv[3]), 0, cons, -1);
    active = cons;
    uint64_t start = now_ns();
    for (int i = 0; i < nconns; i++) send_batch(&cs[i], (uint32_t)i);
    loop();
    double el = (double)(now_ns() - start) / 1e9;
    if (ack_short && !first_err[0])
      snprintf(first_err, sizeof first_err, "XACK acked fewer IDs than it named");
    errs += ack_short;
    requests = acked;
    char extra[200];
    snprintf(extra, sizeof extra, ", \"delivered\": %lld, \"acked\": %lld, \"empty_reads\": %lld, "
             "\"short_acks\": %lld", delivered, acked, empty_reads, ack_short);
    report(el, extra);
  } else {
    usage();
  }
  return 0;
}
