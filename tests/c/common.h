/* Helpers shared by the C tests: checks that fail the process with a message, the fixture's segments
 * (written by rsm-c-fixture: see ffi/c/src/bin/rsm-c-fixture.rs), whole-file reads, and temp stores. */
#ifndef RSM_TEST_COMMON_H
#define RSM_TEST_COMMON_H

#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rsm.h>

static inline void fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s:%d: ", file, line);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

#define CHECK(cond, ...)                                    \
  do {                                                      \
    if (!(cond)) fail(__FILE__, __LINE__, __VA_ARGS__);     \
  } while (0)

/* Calls an rsm function that must succeed; on failure prints its error. */
#define OK(call)                                                                                     \
  do {                                                                                               \
    rsm_error *ok_err_ = NULL;                                                                       \
    rsm_result ok_r_ = (call);                                                                       \
    if (ok_r_ != RSM_RESULT_OK)                                                                      \
      fail(__FILE__, __LINE__, "%s returned %d: %s", #call, (int)ok_r_, rsm_error_message(ok_err_)); \
  } while (0)
/* OK() for calls whose last argument is `&err`: the macro passes its own. */
#define ERR (&ok_err_)

/* Expects a failure with `code` and a message containing `needle`; frees the error. */
#define EXPECT_ERR(code, needle, call)                                                                  \
  do {                                                                                                  \
    rsm_error *ok_err_ = NULL;                                                                          \
    rsm_result ok_r_ = (call);                                                                          \
    const char *ok_msg_ = rsm_error_message(ok_err_);                                                   \
    if (ok_r_ != (code) || rsm_error_code(ok_err_) != (code) || strstr(ok_msg_, (needle)) == NULL)      \
      fail(__FILE__, __LINE__, "%s: expected %d with \"%s\", got %d: \"%s\"", #call, (int)(code), needle, \
           (int)ok_r_, ok_msg_);                                                                        \
    rsm_error_free(ok_err_);                                                                            \
  } while (0)

typedef struct {
  uint8_t *data;
  size_t len;
} bytes;

static inline bytes read_file(const char *path) {
  bytes b = {NULL, 0};
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL, "cannot open %s: %s", path, strerror(errno));
  CHECK(fseek(f, 0, SEEK_END) == 0, "seek %s", path);
  long n = ftell(f);
  CHECK(n >= 0, "size of %s", path);
  rewind(f);
  b.len = (size_t)n;
  b.data = malloc(b.len ? b.len : 1);
  CHECK(b.data != NULL, "malloc");
  CHECK(fread(b.data, 1, b.len, f) == b.len, "read %s", path);
  fclose(f);
  return b;
}

#define MAX_SEGMENTS 16
#define MAX_EPOCHS 64

typedef struct {
  char log[512], index[512], timeindex[512], txnindex[512], snapshot[512];
  int64_t start, end, max_ts;
  int32_t size;
  size_t epochs_len;
  rsm_leader_epoch epochs[MAX_EPOCHS];
  rsm_segment_metadata md; /* points into this struct and the fixture's topic */
  rsm_segment_files files; /* idem, and the fixture's checkpoint bytes */
} segment;

typedef struct {
  char topic[128];
  int32_t partition;
  rsm_uuid topic_id;
  rsm_topic_id_partition tp;
  bytes checkpoint;
  size_t n;
  segment seg[MAX_SEGMENTS];
} fixture;

/* Reads DIR/NAME (segments.txt, or txns.txt for the partition of transactions). Segment ids are fixed per
 * segment index, so a test is repeatable. */
static inline void fixture_load_file(fixture *fx, const char *dir, const char *name) {
  char path[1024], checkpoint[512];
  memset(fx, 0, sizeof *fx);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  CHECK(f != NULL, "cannot open %s (run rsm-c-fixture first): %s", path, strerror(errno));
  long long msb, lsb;
  CHECK(fscanf(f, "topic %127s %d %lld %lld\n", fx->topic, &fx->partition, &msb, &lsb) == 4, "topic line");
  CHECK(fscanf(f, "checkpoint %511s\n", checkpoint) == 1, "checkpoint line");
  fx->topic_id.most_significant_bits = msb;
  fx->topic_id.least_significant_bits = lsb;
  fx->tp.topic_id = fx->topic_id;
  fx->tp.topic = fx->topic;
  fx->tp.partition = fx->partition;
  fx->checkpoint = read_file(checkpoint);
  for (;;) {
    segment *s = &fx->seg[fx->n];
    long long start, end, max_ts;
    int size;
    size_t ne;
    int got = fscanf(f, " segment %lld %lld %lld %d %511s %511s %511s %511s %511s %zu", &start, &end, &max_ts, &size,
                     s->log, s->index, s->timeindex, s->txnindex, s->snapshot, &ne);
    if (got == EOF) break;
    CHECK(got == 10, "segment line %zu: %d fields", fx->n, got);
    CHECK(ne > 0 && ne <= MAX_EPOCHS, "epochs %zu", ne);
    s->start = start;
    s->end = end;
    s->max_ts = max_ts;
    s->size = size;
    s->epochs_len = ne;
    for (size_t i = 0; i < ne; i++) {
      long long o;
      CHECK(fscanf(f, " %d %lld", &s->epochs[i].epoch, &o) == 2, "epoch %zu", i);
      s->epochs[i].start_offset = o;
    }
    rsm_segment_metadata *md = &s->md;
    md->topic_id_partition = fx->tp;
    md->segment_id.most_significant_bits = 0x1111222233334444LL + (int64_t)fx->n;
    md->segment_id.least_significant_bits = 0x5555666677778888LL;
    md->start_offset = s->start;
    md->end_offset = s->end;
    md->max_timestamp_ms = s->max_ts;
    md->broker_id = 1;
    md->event_timestamp_ms = 1700000000000LL;
    md->segment_size_in_bytes = s->size;
    md->leader_epochs = s->epochs;
    md->leader_epochs_len = s->epochs_len;
    md->custom_metadata = NULL;
    md->custom_metadata_len = 0;
    md->state = RSM_SEGMENT_STATE_COPY_SEGMENT_STARTED;
    md->txn_idx_empty = strcmp(s->txnindex, "-") == 0;
    rsm_segment_files *fl = &s->files;
    fl->log = s->log;
    fl->offset_index = s->index;
    fl->time_index = s->timeindex;
    fl->transaction_index = strcmp(s->txnindex, "-") == 0 ? NULL : s->txnindex;
    fl->producer_snapshot = s->snapshot;
    fl->leader_epoch_checkpoint = fx->checkpoint.data;
    fl->leader_epoch_checkpoint_len = fx->checkpoint.len;
    fx->n++;
    CHECK(fx->n < MAX_SEGMENTS, "too many segments");
  }
  fclose(f);
  CHECK(fx->n >= 2, "the fixture has %zu closed segments, want at least 2", fx->n);
}

/* Reads DIR/segments.txt. */
static inline void fixture_load(fixture *fx, const char *dir) { fixture_load_file(fx, dir, "segments.txt"); }

static inline void fixture_free(fixture *fx) { free(fx->checkpoint.data); }

static inline int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(p);
}

/* A fresh empty directory `base/name`; its file:// URL in `url`. */
static inline void fresh_store(const char *base, const char *name, char *dir, size_t dir_len, char *url, size_t url_len) {
  snprintf(dir, dir_len, "%s/%s", base, name);
  nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  CHECK(mkdir(dir, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", dir, strerror(errno));
  snprintf(url, url_len, "file://%s", dir);
}

static inline void remove_tree(const char *dir) { nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

/* Reads a whole stream with reads of at most `step` bytes, then closes it. */
static inline bytes read_all(rsm_stream *s, size_t step) {
  bytes b = {NULL, 0};
  size_t cap = 0;
  uint8_t *buf = malloc(step);
  CHECK(buf != NULL, "malloc");
  for (;;) {
    size_t n = 99;
    OK(rsm_stream_read(s, buf, step, &n, ERR));
    CHECK(n <= step, "read %zu bytes into %zu", n, step);
    if (n == 0) break;
    if (b.len + n > cap) {
      cap = (b.len + n) * 2;
      b.data = realloc(b.data, cap);
      CHECK(b.data != NULL, "realloc");
    }
    memcpy(b.data + b.len, buf, n);
    b.len += n;
  }
  free(buf);
  CHECK(rsm_stream_close(s) == RSM_RESULT_OK, "close");
  return b;
}

static inline void expect_same(const uint8_t *got, size_t got_len, const uint8_t *want, size_t want_len, const char *what) {
  CHECK(got_len == want_len, "%s: %zu bytes, want %zu", what, got_len, want_len);
  for (size_t i = 0; i < want_len; i++)
    CHECK(got[i] == want[i], "%s: byte %zu is %u, want %u", what, i, got[i], want[i]);
}

static inline uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}
static inline int64_t be64(const uint8_t *p) { return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4)); }

/* A record batch as Kafka's v2 header lays it out: read here from the .log file itself, an independent
 * check of the library's positions. */
typedef struct {
  int64_t position; /* where the batch starts */
  int32_t length;   /* bytes of the whole batch */
  int64_t base_offset, last_offset, max_timestamp;
} batch;

static inline size_t batches_of(const bytes *log, batch *out, size_t max) {
  size_t n = 0, pos = 0;
  while (pos + 61 <= log->len && n < max) {
    const uint8_t *h = log->data + pos;
    batch b;
    b.position = (int64_t)pos;
    b.base_offset = be64(h);
    b.length = (int32_t)be32(h + 8) + 12;
    b.last_offset = b.base_offset + (int32_t)be32(h + 23);
    b.max_timestamp = be64(h + 35);
    out[n++] = b;
    pos += (size_t)b.length;
  }
  CHECK(pos == log->len, "batches cover %zu of %zu bytes", pos, log->len);
  return n;
}

static inline void expect_no_open_handles(void) {
  size_t stores = 99, streams = 99;
  CHECK(rsm_open_handles(&stores, &streams) == RSM_RESULT_OK, "rsm_open_handles");
  CHECK(stores == 0 && streams == 0, "%zu stores and %zu streams still open", stores, streams);
}

#endif
