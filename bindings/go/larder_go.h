/* Thin C shims between the Go package and the larder cache C ABI.
 *
 * Each shim makes exactly one C ABI call and returns everything by value, so that
 *  - a lookup is one cgo call and passes Go no pointer to Go memory it must keep track of
 *    (the key is the only Go pointer, and the C side does not keep it past the call);
 *  - an error message is copied out of the library's thread-local slot on the OS thread that
 *    made the failing call, before the goroutine can migrate to another thread. The copy is on
 *    the C heap (`msg`); Go frees it. Success and NOT_FOUND never allocate.
 */
#ifndef LARDER_GO_H
#define LARDER_GO_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "larder_cache.h"

/* A copy of the thread-local error message for a failed status, or NULL. */
static inline char *lg_message(larder_status s) {
    if (s == LARDER_OK || s == LARDER_NOT_FOUND) {
        return NULL;
    }
    return strdup(larder_last_error_message());
}

/* The outcome of a call that returns nothing else. */
typedef struct lg_status {
    larder_status status;
    char *msg;
} lg_status;

static inline lg_status lg_status_of(larder_status s) {
    lg_status r = {s, lg_message(s)};
    return r;
}

/* Handles cross into Go as uintptr_t: they point at C memory, and an integer keeps cgo from
 * checking them as possible Go pointers on every call. */
#define LG_CACHE(h) ((const larder_cache *)(h))
#define LG_BUILDER(h) ((larder_cache_builder *)(h))
#define LG_SWAPPER(h) ((const larder_cache_swapper *)(h))

/* ---- reading ------------------------------------------------------------------------------ */

typedef struct lg_open_result {
    larder_status status;
    char *msg;
    uintptr_t cache;
} lg_open_result;

static inline lg_open_result lg_open(const char *path) {
    larder_cache *cache = NULL;
    lg_open_result r = {LARDER_OK, NULL, 0};
    r.status = larder_cache_open(path, &cache);
    r.msg = lg_message(r.status);
    r.cache = (uintptr_t)cache;
    return r;
}

static inline void lg_close(uintptr_t cache) { larder_cache_close((larder_cache *)cache); }

/* A looked-up value, flattened: what every getter needs in 48 bytes.
 *
 * Pointers to empty data are NULL, never the dangling, aligned placeholders (0x1, 0x4, 0x8)
 * that Rust uses for empty slices: Go holds these fields as pointers, and its stack copier
 * aborts the program on a pointer-typed value below 4096. */
typedef struct lg_ref {
    larder_status status;
    uint32_t value_type;
    /* BYTES, STR, F32_LIST, F64_LIST: the data in the mapping; STR_LIST: the end offsets. */
    const void *data;
    /* BYTES, STR: length in bytes; lists: element count; I64, BOOL: the value; F64: its bits. */
    uint64_t word;
    /* STR_LIST: the concatenated text and its length. */
    const uint8_t *aux;
    uint64_t aux_len;
    /* A failed status's message (C heap, freed by Go), else NULL. */
    char *msg;
} lg_ref;

static inline void lg_lookup_into(uintptr_t cache, const uint8_t *key, size_t key_len,
                                  lg_ref *r) {
    larder_value v;
    r->status = larder_cache_get(LG_CACHE(cache), key, key_len, &v);
    r->aux = NULL;
    r->aux_len = 0;
    if (r->status != LARDER_OK) {
        r->value_type = 0;
        r->data = NULL;
        r->word = 0;
        r->msg = lg_message(r->status);
        return;
    }
    r->value_type = (uint32_t)v.value_type;
    r->msg = NULL;
    switch (v.value_type) {
    case LARDER_TYPE_I64:
    case LARDER_TYPE_BOOL:
        r->data = NULL;
        r->word = (uint64_t)v.i64_value;
        break;
    case LARDER_TYPE_F64:
        r->data = NULL;
        memcpy(&r->word, &v.f64_value, sizeof r->word);
        break;
    case LARDER_TYPE_STR_LIST:
        r->data = v.str_list.count ? (const void *)v.str_list.ends : NULL;
        r->word = (uint64_t)v.str_list.count;
        r->aux = v.str_list.text_len ? v.str_list.text : NULL;
        r->aux_len = (uint64_t)v.str_list.text_len;
        break;
    default:
        r->data = v.len ? v.data : NULL;
        r->word = (uint64_t)v.len;
        break;
    }
}

static inline lg_ref lg_lookup(uintptr_t cache, const uint8_t *key, size_t key_len) {
    lg_ref r;
    lg_lookup_into(cache, key, key_len, &r);
    return r;
}

/* Looks up `count` keys, key i being text[ends[i-1]..ends[i]] (from 0 for the first), into
 * out[i]. One cgo call for many lookups: the CPU overlaps their cache misses, which separate
 * cgo calls (each a full memory barrier) prevent. Returns how many results carry a message. */
static inline size_t lg_lookup_batch(uintptr_t cache, const uint8_t *text, const size_t *ends,
                                     size_t count, lg_ref *out) {
    size_t failed = 0;
    size_t start = 0;
    for (size_t i = 0; i < count; i++) {
        lg_lookup_into(cache, text == NULL ? NULL : text + start, ends[i] - start, &out[i]);
        failed += out[i].msg != NULL;
        start = ends[i];
    }
    return failed;
}

static inline lg_status lg_contains(uintptr_t cache, const uint8_t *key, size_t key_len) {
    return lg_status_of(larder_cache_contains(LG_CACHE(cache), key, key_len));
}

static inline uint64_t lg_len(uintptr_t cache) {
    uint64_t n = 0;
    if (larder_cache_len(LG_CACHE(cache), &n) != LARDER_OK) {
        return 0;
    }
    return n;
}

typedef struct lg_info_result {
    larder_status status;
    char *msg;
    larder_info info;
} lg_info_result;

static inline lg_info_result lg_info(uintptr_t cache) {
    lg_info_result r;
    memset(&r, 0, sizeof r);
    r.status = larder_cache_info(LG_CACHE(cache), &r.info);
    r.msg = lg_message(r.status);
    if (r.info.name_len == 0) {
        r.info.name = NULL; /* see lg_ref */
    }
    return r;
}

static inline lg_status lg_verify(uintptr_t cache) {
    return lg_status_of(larder_cache_verify(LG_CACHE(cache)));
}

/* The mapping and its validated section bounds, fetched once per handle: the Go binding reads
 * the file itself from then on (reader.go), without a cgo call per lookup. */
typedef struct lg_layout_result {
    larder_status status;
    char *msg;
    larder_layout layout;
} lg_layout_result;

static inline lg_layout_result lg_layout(uintptr_t cache) {
    lg_layout_result r;
    memset(&r, 0, sizeof r);
    r.status = larder_cache_layout(LG_CACHE(cache), &r.layout);
    r.msg = lg_message(r.status);
    return r;
}

/* ---- swapping ----------------------------------------------------------------------------- */

typedef struct lg_swapper_result {
    larder_status status;
    char *msg;
    uintptr_t swapper;
} lg_swapper_result;

/* Opens a swapper on a watched path (pointer == 0) or a pointer file (pointer != 0). */
static inline lg_swapper_result lg_watch(const char *path, int pointer) {
    larder_cache_swapper *swapper = NULL;
    lg_swapper_result r = {LARDER_OK, NULL, 0};
    r.status = pointer ? larder_cache_watch_pointer(path, &swapper)
                       : larder_cache_watch_path(path, &swapper);
    r.msg = lg_message(r.status);
    r.swapper = (uintptr_t)swapper;
    return r;
}

static inline void lg_swapper_close(uintptr_t swapper) {
    larder_cache_swapper_close((larder_cache_swapper *)swapper);
}

typedef struct lg_refresh_result {
    larder_status status;
    char *msg;
    int changed;
} lg_refresh_result;

static inline lg_refresh_result lg_swapper_refresh(uintptr_t swapper) {
    bool changed = false;
    lg_refresh_result r = {LARDER_OK, NULL, 0};
    r.status = larder_cache_swapper_refresh(LG_SWAPPER(swapper), &changed);
    r.msg = lg_message(r.status);
    r.changed = changed;
    return r;
}

/* A new cache handle on the swapper's current file, freed with lg_close. */
static inline lg_open_result lg_swapper_current(uintptr_t swapper) {
    larder_cache *cache = NULL;
    lg_open_result r = {LARDER_OK, NULL, 0};
    r.status = larder_cache_swapper_current(LG_SWAPPER(swapper), &cache);
    r.msg = lg_message(r.status);
    r.cache = (uintptr_t)cache;
    return r;
}

/* ---- building ----------------------------------------------------------------------------- */

typedef struct lg_builder_result {
    larder_status status;
    char *msg;
    uintptr_t builder;
} lg_builder_result;

static inline lg_builder_result lg_builder_new(const char *path) {
    larder_cache_builder *builder = NULL;
    lg_builder_result r = {LARDER_OK, NULL, 0};
    r.status = larder_cache_builder_new(path, &builder);
    r.msg = lg_message(r.status);
    r.builder = (uintptr_t)builder;
    return r;
}

static inline void lg_builder_abort(uintptr_t b) { larder_cache_builder_abort(LG_BUILDER(b)); }

static inline lg_status lg_builder_set_name(uintptr_t b, const uint8_t *name,
                                            size_t name_len) {
    return lg_status_of(larder_cache_builder_set_name(LG_BUILDER(b), name, name_len));
}

static inline lg_status lg_builder_enable_dedup(uintptr_t b) {
    return lg_status_of(larder_cache_builder_enable_dedup(LG_BUILDER(b)));
}

static inline lg_status lg_builder_reject_duplicates(uintptr_t b) {
    return lg_status_of(larder_cache_builder_reject_duplicates(LG_BUILDER(b)));
}

static inline lg_status lg_insert_bytes(uintptr_t b, const uint8_t *key, size_t key_len,
                                        const uint8_t *value, size_t value_len) {
    larder_cache_builder *h = LG_BUILDER(b);
    return lg_status_of(larder_cache_builder_insert_bytes(h, key, key_len, value, value_len));
}

static inline lg_status lg_insert_str(uintptr_t b, const uint8_t *key, size_t key_len,
                                      const uint8_t *value, size_t value_len) {
    larder_cache_builder *h = LG_BUILDER(b);
    return lg_status_of(larder_cache_builder_insert_str(h, key, key_len, value, value_len));
}

static inline lg_status lg_insert_i64(uintptr_t b, const uint8_t *key, size_t key_len,
                                      int64_t value) {
    return lg_status_of(larder_cache_builder_insert_i64(LG_BUILDER(b), key, key_len, value));
}

static inline lg_status lg_insert_f64(uintptr_t b, const uint8_t *key, size_t key_len,
                                      double value) {
    return lg_status_of(larder_cache_builder_insert_f64(LG_BUILDER(b), key, key_len, value));
}

static inline lg_status lg_insert_bool(uintptr_t b, const uint8_t *key, size_t key_len,
                                       int value) {
    larder_cache_builder *h = LG_BUILDER(b);
    return lg_status_of(larder_cache_builder_insert_bool(h, key, key_len, value != 0));
}

static inline lg_status lg_insert_f32_list(uintptr_t b, const uint8_t *key, size_t key_len,
                                           const float *values, size_t count) {
    larder_cache_builder *h = LG_BUILDER(b);
    return lg_status_of(larder_cache_builder_insert_f32_list(h, key, key_len, values, count));
}

static inline lg_status lg_insert_f64_list(uintptr_t b, const uint8_t *key, size_t key_len,
                                           const double *values, size_t count) {
    larder_cache_builder *h = LG_BUILDER(b);
    return lg_status_of(larder_cache_builder_insert_f64_list(h, key, key_len, values, count));
}

/* A STR_LIST insert from the strings concatenated in `text` with their lengths in `lens`.
 * Go may not pass C memory that holds Go pointers, so the array of item pointers is built
 * here. `text` is NULL when every string is empty; NULL items of length 0 are accepted. */
static inline lg_status lg_insert_str_list(uintptr_t b, const uint8_t *key, size_t key_len,
                                           const uint8_t *text, const size_t *lens,
                                           size_t count) {
    enum { STACK_ITEMS = 32 };
    const uint8_t *stack_items[STACK_ITEMS];
    const uint8_t **items = stack_items;
    if (count > STACK_ITEMS) {
        items = (const uint8_t **)malloc(count * sizeof *items);
        if (items == NULL) {
            lg_status r = {LARDER_IO_ERROR, strdup("out of memory building a string list")};
            return r;
        }
    }
    size_t at = 0;
    for (size_t i = 0; i < count; i++) {
        items[i] = text == NULL ? NULL : text + at;
        at += lens[i];
    }
    larder_status s = larder_cache_builder_insert_str_list(LG_BUILDER(b), key, key_len,
                                                           count ? items : NULL, lens, count);
    if (items != stack_items) {
        free((void *)items);
    }
    return lg_status_of(s);
}

/* Many inserts in one cgo call. `buf` holds `count` entries, each a 16-byte header (u32
 * value type, u32 key length, u64 word: the value's length for BYTES and STR, the value for
 * I64 and BOOL, its bits for F64), then the key, then for BYTES and STR the value's bytes.
 * Every entry is inserted even after a failure, as separate calls would be; the first failure
 * is reported with its index. */
typedef struct lg_batch_status {
    larder_status status;
    char *msg;
    size_t failed;
} lg_batch_status;

static inline lg_batch_status lg_insert_batch(uintptr_t b, const uint8_t *buf, size_t count) {
    larder_cache_builder *h = LG_BUILDER(b);
    lg_batch_status r = {LARDER_OK, NULL, 0};
    size_t at = 0;
    for (size_t i = 0; i < count; i++) {
        uint32_t value_type, key_len;
        uint64_t word;
        memcpy(&value_type, buf + at, sizeof value_type);
        memcpy(&key_len, buf + at + 4, sizeof key_len);
        memcpy(&word, buf + at + 8, sizeof word);
        const uint8_t *key = buf + at + 16;
        const uint8_t *value = key + key_len;
        at += 16 + (size_t)key_len;
        larder_status s;
        char *msg = NULL;
        switch (value_type) {
        case LARDER_TYPE_BYTES:
            s = larder_cache_builder_insert_bytes(h, key, key_len, value, (size_t)word);
            at += (size_t)word;
            break;
        case LARDER_TYPE_STR:
            s = larder_cache_builder_insert_str(h, key, key_len, value, (size_t)word);
            at += (size_t)word;
            break;
        case LARDER_TYPE_I64:
            s = larder_cache_builder_insert_i64(h, key, key_len, (int64_t)word);
            break;
        case LARDER_TYPE_F64: {
            double d;
            memcpy(&d, &word, sizeof d);
            s = larder_cache_builder_insert_f64(h, key, key_len, d);
            break;
        }
        case LARDER_TYPE_BOOL:
            s = larder_cache_builder_insert_bool(h, key, key_len, word != 0);
            break;
        default:
            /* Not a type the Go side buffers: a bug there. The header gives no value length,
             * so the rest of the buffer cannot be parsed. */
            s = LARDER_PANIC;
            msg = strdup("Go binding: unknown value type in an insert batch");
            if (r.status == LARDER_OK) {
                r.status = s;
                r.msg = msg;
                r.failed = i;
            } else {
                free(msg);
            }
            return r;
        }
        if (s != LARDER_OK && r.status == LARDER_OK) {
            r.status = s;
            r.msg = lg_message(s);
            r.failed = i;
        }
    }
    return r;
}

typedef struct lg_finish_result {
    larder_status status;
    char *msg;
    larder_build_stats stats;
} lg_finish_result;

static inline lg_finish_result lg_builder_finish(uintptr_t b) {
    lg_finish_result r;
    memset(&r, 0, sizeof r);
    r.status = larder_cache_builder_finish(LG_BUILDER(b), &r.stats);
    r.msg = lg_message(r.status);
    return r;
}

#endif /* LARDER_GO_H */
