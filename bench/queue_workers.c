/* Queue workers in C for bench/queue_latency.py: N connections on one epoll loop, each a
 * worker that blocks for a message, times it, and asks again. Python's asyncio adds
 * milliseconds of its own to the tail; this does not.
 *
 *   queue_workers PORT N larder|redis
 *
 * larder: each worker loops `QGET q w<i> AUTOACK BLOCK 0` (reply: [token, payload, priority,
 * deliveries]). redis: each loops `XREADGROUP GROUP g w<i> COUNT 1 BLOCK 0 STREAMS q >`, then
 * sends `XACK q g <id>` together with its next XREADGROUP. A payload is "<seq>:<t>", t the
 * CLOCK_MONOTONIC ns when the producer sent it; latency = the time of the read that completed
 * the reply - t. Prints "ready\n" once every worker has sent its first request; then, on the
 * line "stop" on stdin, prints one line of JSON: messages, duplicates, the highest seq, and the
 * latency histogram (10 µs buckets), and exits. */
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

#define BUCKET_US 10
#define BUCKETS 200000
#define BUF 65536
#define MAX_SEQ 100000000
#define MAX_BULKS 16

struct conn {
    int fd;
    char buf[BUF];
    size_t len;
};

static long long hist[BUCKETS + 1];
static unsigned char *seen;
static long long messages, duplicates, max_seq = -1;
static int redis_mode;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Parses one complete RESP2 reply at p[0..n): its length, 0 while incomplete, -1 if bad.
 * Bulk strings are collected (start, length) up to MAX_BULKS. */
static long parse(const char *p, size_t n, const char **bulk, size_t *blen, int *nb) {
    const char *eol = memmem(p, n, "\r\n", 2);
    if (!eol)
        return 0;
    long head = (long)(eol - p) + 2;
    long v = strtol(p + 1, NULL, 10);
    switch (p[0]) {
    case '+':
    case '-':
    case ':':
        return head;
    case '$':
        if (v < 0)
            return head;
        if ((size_t)(head + v + 2) > n)
            return 0;
        if (*nb < MAX_BULKS) {
            bulk[*nb] = p + head;
            blen[*nb] = (size_t)v;
            (*nb)++;
        }
        return head + v + 2;
    case '*': {
        long at = head;
        for (long i = 0; i < v; i++) {
            long r = parse(p + at, n - at, bulk, blen, nb);
            if (r <= 0)
                return r;
            at += r;
        }
        return at;
    }
    }
    return -1;
}

static void send_next(struct conn *c, int i, const char *ack_id, size_t ack_len) {
    char req[512];
    int k = 0;
    char name[32];
    int nl = snprintf(name, sizeof name, "w%d", i);
    if (redis_mode) {
        if (ack_id)
            k += snprintf(req + k, sizeof req - k, "*4\r\n$4\r\nXACK\r\n$1\r\nq\r\n$1\r\ng\r\n$%zu\r\n%.*s\r\n",
                          ack_len, (int)ack_len, ack_id);
        k += snprintf(req + k, sizeof req - k,
                      "*11\r\n$10\r\nXREADGROUP\r\n$5\r\nGROUP\r\n$1\r\ng\r\n$%d\r\n%s\r\n$5\r\nCOUNT\r\n$1\r\n1\r\n"
                      "$5\r\nBLOCK\r\n$1\r\n0\r\n$7\r\nSTREAMS\r\n$1\r\nq\r\n$1\r\n>\r\n",
                      nl, name);
    } else {
        k += snprintf(req + k, sizeof req - k,
                      "*6\r\n$4\r\nQGET\r\n$1\r\nq\r\n$%d\r\n%s\r\n$7\r\nAUTOACK\r\n$5\r\nBLOCK\r\n$1\r\n0\r\n",
                      nl, name);
    }
    if (write(c->fd, req, k) != k) {
        perror("write");
        exit(1);
    }
}

static void on_payload(const char *p, size_t n, long long t) {
    char tmp[64];
    if (n >= sizeof tmp)
        return;
    memcpy(tmp, p, n);
    tmp[n] = 0;
    char *colon = strchr(tmp, ':');
    if (!colon)
        return;
    long long seq = strtoll(tmp, NULL, 10), sent = strtoll(colon + 1, NULL, 10);
    if (seq < 0 || seq >= MAX_SEQ)
        return; /* the wake-up messages the script sends at the end */
    if (seen[seq]) {
        duplicates++;
        return;
    }
    seen[seq] = 1;
    messages++;
    if (seq > max_seq)
        max_seq = seq;
    long long us = (t - sent) / 1000;
    if (us < 0)
        us = 0;
    long long b = us / BUCKET_US;
    hist[b > BUCKETS ? BUCKETS : b]++;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: queue_workers PORT N larder|redis\n");
        return 2;
    }
    int port = atoi(argv[1]), n = atoi(argv[2]);
    redis_mode = strcmp(argv[3], "redis") == 0;
    seen = calloc(MAX_SEQ, 1);
    struct conn *cs = calloc(n, sizeof *cs);
    int ep = epoll_create1(0);
    for (int i = 0; i < n; i++) {
        struct conn *c = &cs[i];
        c->fd = socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
        inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        if (connect(c->fd, (struct sockaddr *)&a, sizeof a) != 0) {
            perror("connect");
            return 1;
        }
        send_next(c, i, NULL, 0);
        fcntl(c->fd, F_SETFL, O_NONBLOCK);
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
    }
    fcntl(0, F_SETFL, O_NONBLOCK);
    struct epoll_event sev = {.events = EPOLLIN, .data.u32 = UINT32_MAX};
    epoll_ctl(ep, EPOLL_CTL_ADD, 0, &sev);
    printf("ready\n");
    fflush(stdout);
    struct epoll_event evs[256];
    for (;;) {
        int k = epoll_wait(ep, evs, 256, -1);
        long long t = now_ns();
        for (int e = 0; e < k; e++) {
            uint32_t id = evs[e].data.u32;
            if (id == UINT32_MAX) {
                char line[64];
                ssize_t r = read(0, line, sizeof line - 1);
                if (r <= 0 || (line[r] = 0, strstr(line, "stop"))) {
                    printf("{\"messages\":%lld,\"duplicates\":%lld,\"max_seq\":%lld,\"hist\":{",
                           messages, duplicates, max_seq);
                    int first = 1;
                    for (int b = 0; b <= BUCKETS; b++)
                        if (hist[b]) {
                            printf("%s\"%d\":%lld", first ? "" : ",", b, hist[b]);
                            first = 0;
                        }
                    printf("}}\n");
                    return 0;
                }
                continue;
            }
            struct conn *c = &cs[id];
            for (;;) {
                ssize_t r = read(c->fd, c->buf + c->len, BUF - c->len);
                if (r <= 0) {
                    if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
                        epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                    }
                    break;
                }
                c->len += r;
                size_t at = 0;
                for (;;) {
                    const char *bulk[MAX_BULKS];
                    size_t blen[MAX_BULKS];
                    int nb = 0;
                    long used = parse(c->buf + at, c->len - at, bulk, blen, &nb);
                    if (used < 0) {
                        fprintf(stderr, "bad reply: %.40s\n", c->buf + at);
                        return 1;
                    }
                    if (used == 0)
                        break;
                    at += used;
                    if (c->buf[at - used] == ':' || c->buf[at - used] == '+')
                        continue; /* XACK's reply */
                    if (c->buf[at - used] == '-') {
                        fprintf(stderr, "error: %.80s\n", c->buf + at - used);
                        return 1;
                    }
                    if (redis_mode && nb >= 4) {
                        on_payload(bulk[3], blen[3], t);
                        send_next(c, (int)id, bulk[1], blen[1]);
                    } else if (!redis_mode && nb >= 2) {
                        on_payload(bulk[1], blen[1], t);
                        send_next(c, (int)id, NULL, 0);
                    } else {
                        send_next(c, (int)id, NULL, 0);
                    }
                }
                memmove(c->buf, c->buf + at, c->len - at);
                c->len -= at;
            }
        }
    }
}
