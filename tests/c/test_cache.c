/* Tests the larder cache C ABI: builds a file through the C builder, reads every type back,
 * checks status codes for missing keys, type mismatches and null arguments, and follows
 * published files with a swapper (rename onto a path, rewritten pointer file).
 * Prints "N passed, M failed" last; exits non-zero on any failure.
 *
 * `test_cache --bench [N]` instead builds N (default 1,000,000) keys key_<i> -> val_<i> and
 * times shuffled lookups through the C ABI. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "larder_cache.h"

static int passed = 0;
static int failed = 0;

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (cond) {                                                        \
            passed++;                                                      \
        } else {                                                           \
            failed++;                                                      \
            fprintf(stderr, "FAIL %s:%d: %s (last error: %s)\n", __FILE__, \
                    __LINE__, #cond, larder_last_error_message());         \
        }                                                                  \
    } while (0)

#define K(s) (const uint8_t *)(s), strlen(s)

static int bytes_eq(const uint8_t *p, size_t n, const char *s) {
    return n == strlen(s) && memcmp(p, s, n) == 0;
}

static void build_all_types(const char *path) {
    larder_cache_builder *b = NULL;
    CHECK(larder_cache_builder_new(path, &b) == LARDER_OK);
    CHECK(larder_cache_builder_set_name(b, K("c-test")) == LARDER_OK);
    CHECK(larder_cache_builder_enable_dedup(b) == LARDER_OK);
    const uint8_t raw[] = {0, 1, 2, 255};
    CHECK(larder_cache_builder_insert_bytes(b, K("bytes"), raw, sizeof raw) == LARDER_OK);
    CHECK(larder_cache_builder_insert_str(b, K("str"), K("h\xc3\xa9llo")) == LARDER_OK);
    CHECK(larder_cache_builder_insert_i64(b, K("i64"), -42) == LARDER_OK);
    CHECK(larder_cache_builder_insert_f64(b, K("f64"), 2.5) == LARDER_OK);
    CHECK(larder_cache_builder_insert_bool(b, K("bool"), true) == LARDER_OK);
    const float f32s[] = {1.0f, -2.5f, 3.25f};
    CHECK(larder_cache_builder_insert_f32_list(b, K("f32s"), f32s, 3) == LARDER_OK);
    const double f64s[] = {0.5, 1e300};
    CHECK(larder_cache_builder_insert_f64_list(b, K("f64s"), f64s, 2) == LARDER_OK);
    const uint8_t *items[] = {(const uint8_t *)"alpha", (const uint8_t *)"", (const uint8_t *)"gamma"};
    const size_t lens[] = {5, 0, 5};
    CHECK(larder_cache_builder_insert_str_list(b, K("strs"), items, lens, 3) == LARDER_OK);
    const char *shared = "a value long enough to be stored once";
    CHECK(larder_cache_builder_insert_str(b, K("shared1"), K(shared)) == LARDER_OK);
    CHECK(larder_cache_builder_insert_str(b, K("shared2"), K(shared)) == LARDER_OK);
    /* Invalid arguments are rejected without ending the build. */
    CHECK(larder_cache_builder_insert_str(b, K("bad"), (const uint8_t *)"\xff", 1) ==
          LARDER_INVALID_ARGUMENT);
    CHECK(larder_cache_builder_insert_i64(b, NULL, 3, 1) == LARDER_NULL_ARGUMENT);
    CHECK(larder_cache_builder_insert_i64(NULL, K("k"), 1) == LARDER_NULL_ARGUMENT);
    larder_build_stats stats;
    CHECK(larder_cache_builder_finish(b, &stats) == LARDER_OK);
    CHECK(stats.key_count == 10);
    CHECK(stats.deduped_values == 1);
    CHECK(stats.dedup_saved_bytes > 30);
    CHECK(stats.file_bytes > 0);
}

static void read_all_types(const char *path) {
    larder_cache *c = NULL;
    CHECK(larder_cache_open(path, &c) == LARDER_OK);
    if (c == NULL) return;

    uint64_t n = 0;
    CHECK(larder_cache_len(c, &n) == LARDER_OK && n == 10);

    const uint8_t *p = NULL;
    size_t len = 0;
    CHECK(larder_cache_get_bytes(c, K("bytes"), &p, &len) == LARDER_OK && len == 4 && p[3] == 255);
    CHECK(larder_cache_get_str(c, K("str"), &p, &len) == LARDER_OK && bytes_eq(p, len, "h\xc3\xa9llo"));
    CHECK(larder_cache_get_bytes(c, K("str"), &p, &len) == LARDER_OK && len == 6);
    int64_t i = 0;
    CHECK(larder_cache_get_i64(c, K("i64"), &i) == LARDER_OK && i == -42);
    double d = 0;
    CHECK(larder_cache_get_f64(c, K("f64"), &d) == LARDER_OK && d == 2.5);
    bool flag = false;
    CHECK(larder_cache_get_bool(c, K("bool"), &flag) == LARDER_OK && flag);
    const float *fl = NULL;
    CHECK(larder_cache_get_f32_list(c, K("f32s"), &fl, &len) == LARDER_OK && len == 3 &&
          fl[1] == -2.5f && ((uintptr_t)fl % sizeof(float)) == 0);
    const double *dl = NULL;
    CHECK(larder_cache_get_f64_list(c, K("f64s"), &dl, &len) == LARDER_OK && len == 2 &&
          dl[1] == 1e300 && ((uintptr_t)dl % sizeof(double)) == 0);
    larder_str_list list;
    CHECK(larder_cache_get_str_list(c, K("strs"), &list) == LARDER_OK && list.count == 3);
    CHECK(larder_str_list_get(&list, 0, &p, &len) == LARDER_OK && bytes_eq(p, len, "alpha"));
    CHECK(larder_str_list_get(&list, 1, &p, &len) == LARDER_OK && len == 0);
    CHECK(larder_str_list_get(&list, 2, &p, &len) == LARDER_OK && bytes_eq(p, len, "gamma"));
    CHECK(larder_str_list_get(&list, 3, &p, &len) == LARDER_OUT_OF_RANGE);
    CHECK(larder_cache_get_str(c, K("shared2"), &p, &len) == LARDER_OK &&
          bytes_eq(p, len, "a value long enough to be stored once"));

    /* The one-call generic getter. */
    larder_value v;
    CHECK(larder_cache_get(c, K("i64"), &v) == LARDER_OK && v.value_type == LARDER_TYPE_I64 &&
          v.i64_value == -42);
    CHECK(larder_cache_get(c, K("f64"), &v) == LARDER_OK && v.value_type == LARDER_TYPE_F64 &&
          v.f64_value == 2.5);
    CHECK(larder_cache_get(c, K("bool"), &v) == LARDER_OK && v.value_type == LARDER_TYPE_BOOL &&
          v.i64_value == 1);
    CHECK(larder_cache_get(c, K("str"), &v) == LARDER_OK && v.value_type == LARDER_TYPE_STR &&
          bytes_eq(v.data, v.len, "h\xc3\xa9llo"));
    CHECK(larder_cache_get(c, K("bytes"), &v) == LARDER_OK && v.value_type == LARDER_TYPE_BYTES &&
          v.len == 4);
    CHECK(larder_cache_get(c, K("f32s"), &v) == LARDER_OK &&
          v.value_type == LARDER_TYPE_F32_LIST && v.len == 3 && ((const float *)v.data)[2] == 3.25f);
    CHECK(larder_cache_get(c, K("f64s"), &v) == LARDER_OK &&
          v.value_type == LARDER_TYPE_F64_LIST && v.len == 2);
    CHECK(larder_cache_get(c, K("strs"), &v) == LARDER_OK &&
          v.value_type == LARDER_TYPE_STR_LIST && v.len == 3 &&
          larder_str_list_get(&v.str_list, 2, &p, &len) == LARDER_OK && bytes_eq(p, len, "gamma"));
    larder_value_type t;
    CHECK(larder_cache_value_type(c, K("f32s"), &t) == LARDER_OK && t == LARDER_TYPE_F32_LIST);

    /* Missing keys, type mismatches, null arguments. */
    CHECK(larder_cache_get_i64(c, K("missing"), &i) == LARDER_NOT_FOUND);
    CHECK(larder_cache_get(c, K("missing"), &v) == LARDER_NOT_FOUND);
    CHECK(larder_cache_contains(c, K("missing")) == LARDER_NOT_FOUND);
    CHECK(larder_cache_contains(c, K("bool")) == LARDER_OK);
    CHECK(larder_cache_get_i64(c, K("str"), &i) == LARDER_TYPE_MISMATCH);
    CHECK(strstr(larder_last_error_message(), "type mismatch") != NULL);
    CHECK(larder_cache_get_str(c, K("bytes"), &p, &len) == LARDER_TYPE_MISMATCH);
    CHECK(larder_cache_get_f64_list(c, K("f32s"), &dl, &len) == LARDER_TYPE_MISMATCH);
    CHECK(larder_cache_get_bool(c, K("i64"), &flag) == LARDER_TYPE_MISMATCH);
    CHECK(larder_cache_get_i64(NULL, K("i64"), &i) == LARDER_NULL_ARGUMENT);
    CHECK(larder_cache_get_i64(c, NULL, 3, &i) == LARDER_NULL_ARGUMENT);
    CHECK(larder_cache_get_i64(c, K("i64"), NULL) == LARDER_NULL_ARGUMENT);
    CHECK(larder_cache_get_bytes(c, K("bytes"), NULL, &len) == LARDER_NULL_ARGUMENT);
    CHECK(larder_cache_get(c, K("i64"), NULL) == LARDER_NULL_ARGUMENT);
    CHECK(larder_cache_len(NULL, &n) == LARDER_NULL_ARGUMENT);
    CHECK(larder_str_list_get(NULL, 0, &p, &len) == LARDER_NULL_ARGUMENT);
    CHECK(larder_cache_get_i64(c, NULL, 0, &i) == LARDER_NOT_FOUND); /* empty key, absent */

    larder_info info;
    CHECK(larder_cache_info(c, &info) == LARDER_OK && bytes_eq(info.name, info.name_len, "c-test") &&
          info.key_count == 10 && info.format_version == 1 && info.dedup == 1 &&
          info.value_count == 9 && info.created_unix_ms > 0);
    CHECK(larder_cache_verify(c) == LARDER_OK);

    /* The layout a binding reads the mapping with: the file starts with the magic number. */
    larder_layout layout;
    CHECK(larder_cache_layout(c, &layout) == LARDER_OK && layout.base != NULL &&
          memcmp(layout.base, "LARDCACH", 8) == 0 && layout.format_version == 1 &&
          layout.offset_width == 4 && layout.index_end == layout.len &&
          layout.len == info.file_bytes && layout.data_end <= layout.index_start &&
          (layout.index_end - layout.index_start) % 64 == 0 && layout.home_bucket_count >= 1 &&
          layout.key_count == 10);
    CHECK(larder_cache_layout(NULL, &layout) == LARDER_NULL_ARGUMENT);
    CHECK(larder_cache_layout(c, NULL) == LARDER_NULL_ARGUMENT);
    larder_cache_close(c);
    larder_cache_close(NULL);
}

static void errors(const char *dir) {
    larder_cache *c = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/does-not-exist.lcache", dir);
    CHECK(larder_cache_open(path, &c) == LARDER_IO_ERROR && c == NULL);
    CHECK(strlen(larder_last_error_message()) > 0);
    CHECK(larder_cache_open(NULL, &c) == LARDER_NULL_ARGUMENT);
    CHECK(larder_cache_open(path, NULL) == LARDER_NULL_ARGUMENT);

    snprintf(path, sizeof path, "%s/garbage.lcache", dir);
    FILE *f = fopen(path, "wb");
    if (f) {
        for (int k = 0; k < 1000; k++) fputc(k * 7, f);
        fclose(f);
    }
    CHECK(larder_cache_open(path, &c) == LARDER_CORRUPT);
    CHECK(strstr(larder_last_error_message(), "not a larder cache file") != NULL);

    /* Duplicate keys: rejected on request, else the last insert wins. */
    snprintf(path, sizeof path, "%s/dups.lcache", dir);
    larder_cache_builder *b = NULL;
    CHECK(larder_cache_builder_new(path, &b) == LARDER_OK);
    CHECK(larder_cache_builder_reject_duplicates(b) == LARDER_OK);
    CHECK(larder_cache_builder_insert_i64(b, K("k"), 1) == LARDER_OK);
    CHECK(larder_cache_builder_insert_i64(b, K("k"), 2) == LARDER_OK);
    CHECK(larder_cache_builder_finish(b, NULL) == LARDER_DUPLICATE_KEY);
    CHECK(access(path, F_OK) != 0);
    CHECK(larder_cache_builder_new(path, &b) == LARDER_OK);
    CHECK(larder_cache_builder_insert_i64(b, K("k"), 1) == LARDER_OK);
    CHECK(larder_cache_builder_insert_i64(b, K("k"), 2) == LARDER_OK);
    larder_build_stats stats;
    CHECK(larder_cache_builder_finish(b, &stats) == LARDER_OK && stats.duplicate_keys == 1);
    CHECK(larder_cache_open(path, &c) == LARDER_OK);
    int64_t i = 0;
    CHECK(larder_cache_get_i64(c, K("k"), &i) == LARDER_OK && i == 2);
    larder_cache_close(c);
    CHECK(larder_cache_builder_finish(NULL, NULL) == LARDER_NULL_ARGUMENT);

    /* An aborted build leaves no file. */
    snprintf(path, sizeof path, "%s/aborted.lcache", dir);
    CHECK(larder_cache_builder_new(path, &b) == LARDER_OK);
    CHECK(larder_cache_builder_insert_i64(b, K("k"), 1) == LARDER_OK);
    larder_cache_builder_abort(b);
    larder_cache_builder_abort(NULL);
    CHECK(access(path, F_OK) != 0);
}

/* Builds a one-key-per-type file whose values say which generation it is. */
static void build_generation(const char *path, int64_t generation, const char *label) {
    larder_cache_builder *b = NULL;
    CHECK(larder_cache_builder_new(path, &b) == LARDER_OK);
    CHECK(larder_cache_builder_insert_i64(b, K("generation"), generation) == LARDER_OK);
    CHECK(larder_cache_builder_insert_str(b, K("label"), K(label)) == LARDER_OK);
    CHECK(larder_cache_builder_finish(b, NULL) == LARDER_OK);
}

static int64_t generation_of(const larder_cache *c) {
    int64_t g = -1;
    if (larder_cache_get_i64(c, K("generation"), &g) != LARDER_OK) return -1;
    return g;
}

/* Writes `text` to `path` through a temporary file and a rename, as a publisher would. */
static void publish_text(const char *path, const char *text) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
    CHECK(rename(tmp, path) == 0);
}

/* Rename onto a watched path: handles taken before a refresh keep reading the old file (and
 * their borrowed pointers stay valid), handles taken after read the new one. */
static void swap_by_rename(const char *dir) {
    char live[4096], next[4096];
    snprintf(live, sizeof live, "%s/live.lcache", dir);
    snprintf(next, sizeof next, "%s/next.lcache", dir);
    build_generation(live, 1, "file A");

    larder_cache_swapper *sw = NULL;
    CHECK(larder_cache_watch_path(live, &sw) == LARDER_OK && sw != NULL);
    if (sw == NULL) return;
    larder_cache *before = NULL;
    CHECK(larder_cache_swapper_current(sw, &before) == LARDER_OK && before != NULL);
    if (before == NULL) return;
    CHECK(generation_of(before) == 1);
    const uint8_t *label = NULL;
    size_t label_len = 0;
    CHECK(larder_cache_get_str(before, K("label"), &label, &label_len) == LARDER_OK);

    bool changed = true;
    CHECK(larder_cache_swapper_refresh(sw, &changed) == LARDER_OK && !changed);

    build_generation(next, 2, "file B");
    CHECK(rename(next, live) == 0);
    CHECK(larder_cache_swapper_refresh(sw, &changed) == LARDER_OK && changed);
    CHECK(larder_cache_swapper_refresh(sw, &changed) == LARDER_OK && !changed);
    CHECK(larder_cache_swapper_refresh(sw, NULL) == LARDER_OK);

    /* The old handle still reads file A, through the pointer borrowed before the swap too. */
    CHECK(generation_of(before) == 1);
    CHECK(label != NULL && bytes_eq(label, label_len, "file A"));
    larder_cache *after = NULL;
    CHECK(larder_cache_swapper_current(sw, &after) == LARDER_OK && after != NULL);
    CHECK(generation_of(after) == 2);
    CHECK(larder_cache_get_str(after, K("label"), &label, &label_len) == LARDER_OK &&
          bytes_eq(label, label_len, "file B"));
    uint64_t n = 0;
    CHECK(larder_cache_len(after, &n) == LARDER_OK && n == 2);
    CHECK(larder_cache_verify(after) == LARDER_OK);

    /* Handles outlive their swapper. */
    larder_cache_swapper_close(sw);
    CHECK(generation_of(after) == 2);
    CHECK(generation_of(before) == 1);
    larder_cache_close(before);
    larder_cache_close(after);
    larder_cache_swapper_close(NULL);
}

/* A pointer file names the current file; a bad target leaves the current one in service. */
static void swap_by_pointer(const char *dir) {
    char a[4096], b[4096], garbage[4096], pointer[4096];
    snprintf(a, sizeof a, "%s/a.lcache", dir);
    snprintf(b, sizeof b, "%s/b.lcache", dir);
    snprintf(garbage, sizeof garbage, "%s/garbage-target.lcache", dir);
    snprintf(pointer, sizeof pointer, "%s/CURRENT", dir);
    build_generation(a, 1, "file A");
    build_generation(b, 2, "file B");
    publish_text(garbage, "not a cache file, but long enough to be looked at as one......");
    publish_text(pointer, "a.lcache\n"); /* relative to the pointer's directory */

    larder_cache_swapper *sw = NULL;
    CHECK(larder_cache_watch_pointer(pointer, &sw) == LARDER_OK && sw != NULL);
    if (sw == NULL) return;
    larder_cache *before = NULL;
    CHECK(larder_cache_swapper_current(sw, &before) == LARDER_OK);
    CHECK(generation_of(before) == 1);
    bool changed = true;
    CHECK(larder_cache_swapper_refresh(sw, &changed) == LARDER_OK && !changed);

    publish_text(pointer, b); /* an absolute path works too */
    CHECK(larder_cache_swapper_refresh(sw, &changed) == LARDER_OK && changed);
    CHECK(larder_cache_swapper_refresh(sw, &changed) == LARDER_OK && !changed);
    CHECK(generation_of(before) == 1);
    larder_cache *after = NULL;
    CHECK(larder_cache_swapper_current(sw, &after) == LARDER_OK);
    CHECK(generation_of(after) == 2);
    larder_cache_close(after);

    /* Bad pointers: an error, changed = false, and file B stays current. */
    publish_text(pointer, "garbage-target.lcache");
    changed = true;
    CHECK(larder_cache_swapper_refresh(sw, &changed) == LARDER_CORRUPT && !changed);
    CHECK(strlen(larder_last_error_message()) > 0);
    publish_text(pointer, "missing.lcache");
    changed = true;
    CHECK(larder_cache_swapper_refresh(sw, &changed) == LARDER_IO_ERROR && !changed);
    publish_text(pointer, "  \n");
    CHECK(larder_cache_swapper_refresh(sw, &changed) == LARDER_IO_ERROR && !changed);
    CHECK(strstr(larder_last_error_message(), "empty") != NULL);
    CHECK(larder_cache_swapper_current(sw, &after) == LARDER_OK);
    CHECK(generation_of(after) == 2);
    larder_cache_close(after);

    /* Pointing back at a good file recovers. */
    publish_text(pointer, "a.lcache");
    CHECK(larder_cache_swapper_refresh(sw, &changed) == LARDER_OK && changed);
    CHECK(larder_cache_swapper_current(sw, &after) == LARDER_OK);
    CHECK(generation_of(after) == 1);
    larder_cache_close(after);

    larder_cache_close(before);
    larder_cache_swapper_close(sw);
}

static void swap_errors(const char *dir) {
    char path[4096];
    larder_cache_swapper *sw = NULL;
    snprintf(path, sizeof path, "%s/does-not-exist.lcache", dir);
    CHECK(larder_cache_watch_path(path, &sw) == LARDER_IO_ERROR && sw == NULL);
    CHECK(strlen(larder_last_error_message()) > 0);
    snprintf(path, sizeof path, "%s/NO-SUCH-POINTER", dir);
    CHECK(larder_cache_watch_pointer(path, &sw) == LARDER_IO_ERROR && sw == NULL);

    /* A pointer naming something that is not a cache file. */
    char target[4096];
    snprintf(target, sizeof target, "%s/not-a-cache.lcache", dir);
    publish_text(target, "definitely not a larder cache file; padded to a plausible size.....");
    snprintf(path, sizeof path, "%s/BAD-POINTER", dir);
    publish_text(path, "not-a-cache.lcache");
    CHECK(larder_cache_watch_pointer(path, &sw) == LARDER_CORRUPT && sw == NULL);
    publish_text(path, "");
    CHECK(larder_cache_watch_pointer(path, &sw) == LARDER_IO_ERROR && sw == NULL);

    CHECK(larder_cache_watch_path(NULL, &sw) == LARDER_NULL_ARGUMENT);
    CHECK(larder_cache_watch_path(target, NULL) == LARDER_NULL_ARGUMENT);
    CHECK(larder_cache_watch_pointer(NULL, &sw) == LARDER_NULL_ARGUMENT);
    bool changed = false;
    CHECK(larder_cache_swapper_refresh(NULL, &changed) == LARDER_NULL_ARGUMENT);
    larder_cache *c = NULL;
    CHECK(larder_cache_swapper_current(NULL, &c) == LARDER_NULL_ARGUMENT && c == NULL);
}

/* Thread CPU time: the benchmark machine is shared, and wall time would include time spent
 * descheduled. Same clock as bench/cache-rust. */
static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int bench(const char *dir, size_t n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/bench.lcache", dir);
    char (*keys)[24] = malloc(n * sizeof *keys);
    size_t *order = malloc(n * sizeof *order);
    if (!keys || !order) return 1;
    for (size_t i = 0; i < n; i++) snprintf(keys[i], sizeof keys[i], "key_%zu", i);
    double t0 = now_ns();
    larder_cache_builder *b = NULL;
    if (larder_cache_builder_new(path, &b) != LARDER_OK) return 1;
    char val[24];
    for (size_t i = 0; i < n; i++) {
        int vl = snprintf(val, sizeof val, "val_%zu", i);
        larder_cache_builder_insert_str(b, K(keys[i]), (const uint8_t *)val, (size_t)vl);
    }
    if (larder_cache_builder_finish(b, NULL) != LARDER_OK) return 1;
    double build_ns = now_ns() - t0;
    for (size_t i = 0; i < n; i++) order[i] = i;
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (size_t i = n - 1; i > 0; i--) {
        s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
        size_t j = (size_t)((s * 0x2545F4914F6CDD1Dull) % (i + 1));
        size_t t = order[i];
        order[i] = order[j], order[j] = t;
    }
    larder_cache *c = NULL;
    if (larder_cache_open(path, &c) != LARDER_OK) return 1;
    printf("C ABI, %zu keys key_<i> -> val_<i>: build %.1f ns/key (thread CPU time)\n", n,
           build_ns / n);
    for (int run = 0; run < 3; run++) {
        size_t total = 0;
        const uint8_t *p;
        size_t len;
        t0 = now_ns();
        for (size_t i = 0; i < n; i++) {
            const char *k = keys[order[i]];
            if (larder_cache_get_str(c, K(k), &p, &len) == LARDER_OK) total += len;
        }
        double get_str = (now_ns() - t0) / n;
        larder_value v;
        t0 = now_ns();
        for (size_t i = 0; i < n; i++) {
            const char *k = keys[order[i]];
            if (larder_cache_get(c, K(k), &v) == LARDER_OK) total += v.len;
        }
        double get = (now_ns() - t0) / n;
        printf("run %d: larder_cache_get_str %.1f ns/lookup, larder_cache_get %.1f ns/lookup "
               "(thread CPU time; checksum %zu)\n",
               run + 1, get_str, get, total);
    }
    larder_cache_close(c);
    unlink(path);
    free(keys);
    free(order);
    return 0;
}

int main(int argc, char **argv) {
    const char *tmp = getenv("TMPDIR");
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/larder-c-test-%d", tmp ? tmp : "/tmp", (int)getpid());
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    if (system(cmd) != 0) return 2;

    if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
        size_t n = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 1000000;
        return bench(dir, n);
    }

    char path[4096];
    snprintf(path, sizeof path, "%s/all-types.lcache", dir);
    build_all_types(path);
    read_all_types(path);
    errors(dir);
    swap_by_rename(dir);
    swap_by_pointer(dir);
    swap_errors(dir);

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
