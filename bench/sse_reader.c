/* SSE watchers in C for bench/sse_fanout.py (`--reader c`): N connections on one epoll loop,
 * each `GET PATH` on the HTTP door, every event parsed as it arrives. Python's asyncio cannot
 * parse a million events a second; this reader can, so the server is what is measured.
 *
 *   sse_reader PORT N PATH
 *
 * Prints "ready\n" once every watcher has its response head. Then reads stdin for a line
 * "stop FINAL": from then on a watcher that has read change number FINAL is done, and after
 * GRACE seconds the rest stop as unfinished. Prints one line of JSON with each watcher's
 * counts and the latency histogram, in the shape sse_fanout.py's Python readers report.
 *
 * Per event (as the Python reader): the SSE `id:`, the change number i and the send time t
 * from the value "i:t" (t: CLOCK_MONOTONIC ns when the writer sent it), latency = the time of
 * the read that brought the event - t. A `resync` event excuses the next id gap. */
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUCKET_US 10
#define BUCKETS 200000
#define GRACE_S 60
#define BUF 262144

struct watcher {
    int fd;
    int head_done;
    int done;
    char *buf;
    size_t len;
    long long events, resyncs, gaps, out_of_order, last_id, last_seq;
    int after_resync;
};

static long long hist[BUCKETS + 1];

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* One complete event block (without its blank line). */
static void on_event(struct watcher *w, const char *b, size_t n, long long t_read) {
    if (n == 0 || b[0] == ':')
        return; /* heartbeat */
    if (n >= 13 && memcmp(b, "event: resync", 13) == 0) {
        w->resyncs++;
        w->after_resync = 1;
        return;
    }
    /* Also `id: N\nevent: resync` ordering: look for a resync line anywhere. */
    if (memmem(b, n, "\nevent: resync", 14)) {
        w->resyncs++;
        w->after_resync = 1;
        return;
    }
    if (n < 4 || memcmp(b, "id: ", 4) != 0)
        return;
    long long id = strtoll(b + 4, NULL, 10);
    const char *v = memmem(b, n, "\"value\":\"", 9);
    if (!v)
        return;
    v += 9;
    char *end;
    long long seq = strtoll(v, &end, 10);
    if (*end != ':')
        return;
    long long sent = strtoll(end + 1, NULL, 10);
    if (w->last_id >= 0 && id != w->last_id + 1 && !w->after_resync)
        w->gaps++;
    if (seq <= w->last_seq)
        w->out_of_order++;
    w->after_resync = 0;
    w->last_id = id;
    w->last_seq = seq;
    w->events++;
    long long us = (t_read - sent) / 1000;
    if (us < 0)
        us = 0;
    long long bucket = us / BUCKET_US;
    hist[bucket > BUCKETS ? BUCKETS : bucket]++;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: sse_reader PORT N PATH\n");
        return 2;
    }
    int port = atoi(argv[1]), n = atoi(argv[2]);
    const char *path = argv[3];
    struct watcher *ws = calloc(n, sizeof *ws);
    int ep = epoll_create1(0);
    char req[1024];
    int reqlen = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: bench\r\n\r\n", path);
    for (int i = 0; i < n; i++) {
        struct watcher *w = &ws[i];
        w->last_id = -1;
        w->last_seq = -1;
        w->buf = malloc(BUF);
        w->fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
        inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        if (connect(w->fd, (struct sockaddr *)&a, sizeof a) != 0) {
            perror("connect");
            return 1;
        }
        if (write(w->fd, req, reqlen) != reqlen) {
            perror("write");
            return 1;
        }
        fcntl(w->fd, F_SETFL, O_NONBLOCK);
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, w->fd, &ev);
    }
    fcntl(0, F_SETFL, O_NONBLOCK);
    struct epoll_event sev = {.events = EPOLLIN, .data.u32 = UINT32_MAX};
    epoll_ctl(ep, EPOLL_CTL_ADD, 0, &sev);

    int heads = 0, finished = 0;
    long long final_seq = -1, grace_ns = 0;
    double cpu0 = 0, cpu1 = 0;
    long long wall0 = 0, wall1 = 0;
    char stdin_buf[256];
    size_t stdin_len = 0;
    struct epoll_event evs[256];
    while (finished < n) {
        int k = epoll_wait(ep, evs, 256, 100);
        long long t = now_ns();
        if (grace_ns && t > grace_ns)
            break;
        for (int e = 0; e < k; e++) {
            uint32_t id = evs[e].data.u32;
            if (id == UINT32_MAX) {
                ssize_t r = read(0, stdin_buf + stdin_len, sizeof stdin_buf - 1 - stdin_len);
                if (r > 0) {
                    stdin_len += r;
                    stdin_buf[stdin_len] = 0;
                    char *nl = strchr(stdin_buf, '\n');
                    if (nl && strncmp(stdin_buf, "stop ", 5) == 0) {
                        final_seq = strtoll(stdin_buf + 5, NULL, 10);
                        grace_ns = t + GRACE_S * 1000000000LL;
                        cpu1 = cpu_s();
                        wall1 = t;
                        for (int i = 0; i < n; i++)
                            if (!ws[i].done && ws[i].last_seq >= final_seq) {
                                ws[i].done = 1;
                                finished++;
                            }
                        epoll_ctl(ep, EPOLL_CTL_DEL, 0, NULL);
                    }
                } else {
                    epoll_ctl(ep, EPOLL_CTL_DEL, 0, NULL);
                }
                continue;
            }
            struct watcher *w = &ws[id];
            for (;;) {
                if (w->len == BUF) {
                    fprintf(stderr, "event larger than the buffer\n");
                    return 1;
                }
                ssize_t r = read(w->fd, w->buf + w->len, BUF - w->len);
                if (r <= 0) {
                    if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
                        if (!w->done) {
                            w->done = 1;
                            finished++;
                        }
                        epoll_ctl(ep, EPOLL_CTL_DEL, w->fd, NULL);
                    }
                    break;
                }
                w->len += r;
                size_t at = 0;
                if (!w->head_done) {
                    char *h = memmem(w->buf, w->len, "\r\n\r\n", 4);
                    if (!h)
                        continue;
                    if (memcmp(w->buf, "HTTP/1.1 200", 12) != 0) {
                        fprintf(stderr, "watch refused: %.60s\n", w->buf);
                        return 1;
                    }
                    w->head_done = 1;
                    at = (size_t)(h - w->buf) + 4;
                    if (++heads == n) {
                        printf("ready\n");
                        fflush(stdout);
                        cpu0 = cpu_s();
                        wall0 = now_ns();
                    }
                }
                for (;;) {
                    char *end = memmem(w->buf + at, w->len - at, "\n\n", 2);
                    if (!end)
                        break;
                    on_event(w, w->buf + at, (size_t)(end - (w->buf + at)), t);
                    at = (size_t)(end - w->buf) + 2;
                }
                memmove(w->buf, w->buf + at, w->len - at);
                w->len -= at;
                if (!w->done && final_seq >= 0 && w->last_seq >= final_seq) {
                    w->done = 1;
                    finished++;
                }
            }
        }
    }
    if (!wall1) {
        cpu1 = cpu_s();
        wall1 = now_ns();
    }
    printf("{\"tallies\":[");
    for (int i = 0; i < n; i++) {
        struct watcher *w = &ws[i];
        printf("%s{\"events\":%lld,\"resyncs\":%lld,\"gaps\":%lld,\"out_of_order\":%lld,"
               "\"last_id\":%lld,\"last_seq\":%lld}",
               i ? "," : "", w->events, w->resyncs, w->gaps, w->out_of_order, w->last_id,
               w->last_seq);
    }
    printf("],\"hist\":{");
    int first = 1;
    for (int b = 0; b <= BUCKETS; b++)
        if (hist[b]) {
            printf("%s\"%d\":%lld", first ? "" : ",", b, hist[b]);
            first = 0;
        }
    printf("},\"cpu_s\":%.6f,\"wall_s\":%.6f}\n", cpu1 - cpu0, (wall1 - wall0) / 1e9);
    return 0;
}
