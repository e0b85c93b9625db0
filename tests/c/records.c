/* The record iterator of librsm over the partition of transactions and compressed batches (txns.txt,
 * records.txt): every record at both isolation levels, paging, refusals. Run as `rsm_test records`. */
#include "cases.h"

/* ---- records: rsm_records_fetch over FIXTURE_DIR/txns.txt, checked against FIXTURE_DIR/records.txt ---- */

#define MAX_WANT 32
#define HEX 256

typedef struct {
  long long offset, timestamp;
  int ts_type;
  char key[HEX], value[HEX];
  size_t nh;
  char hk[4][HEX], hv[4][HEX];
} want_record;

typedef struct {
  long long next;
  size_t n;
  want_record r[MAX_WANT];
} want_fetch;

/* want[segment][isolation]: what a fetch of each closed segment from its first offset returns. */
static void load_wants(const char *dir, want_fetch want[][2], size_t segments) {
  char path[1024];
  snprintf(path, sizeof path, "%s/records.txt", dir);
  FILE *f = fopen(path, "r");
  CHECK(f != NULL, "cannot open %s: %s", path, strerror(errno));
  size_t seg, iso, n;
  long long next;
  while (fscanf(f, " expect %zu %zu %lld %zu", &seg, &iso, &next, &n) == 4) {
    CHECK(seg < segments && iso < 2 && n <= MAX_WANT, "expect %zu %zu %zu", seg, iso, n);
    want_fetch *w = &want[seg][iso];
    w->next = next;
    w->n = n;
    for (size_t i = 0; i < n; i++) {
      want_record *r = &w->r[i];
      CHECK(fscanf(f, " record %lld %lld %d %255s %255s %zu", &r->offset, &r->timestamp, &r->ts_type, r->key, r->value,
                   &r->nh) == 6,
            "record %zu of segment %zu", i, seg);
      CHECK(r->nh <= 4, "headers");
      for (size_t h = 0; h < r->nh; h++) CHECK(fscanf(f, " %255s %255s", r->hk[h], r->hv[h]) == 2, "header %zu", h);
    }
  }
  fclose(f);
}

/* `p`/`len` as the header defines them against the fixture's hex: `-` null (NULL, 0), `.` empty (not NULL, 0). */
static void expect_hex(const void *p, size_t len, const char *hex, const char *what, long long offset) {
  if (strcmp(hex, "-") == 0) {
    CHECK(p == NULL && len == 0, "%s of record %lld: want null, got %p with %zu bytes", what, offset, p, len);
    return;
  }
  CHECK(p != NULL, "%s of record %lld is NULL", what, offset);
  size_t want_len = strcmp(hex, ".") == 0 ? 0 : strlen(hex) / 2;
  CHECK(len == want_len, "%s of record %lld: %zu bytes, want %zu", what, offset, len, want_len);
  for (size_t i = 0; i < len; i++) {
    unsigned b;
    CHECK(sscanf(hex + 2 * i, "%2x", &b) == 1, "hex");
    CHECK(((const uint8_t *)p)[i] == b, "%s of record %lld: byte %zu", what, offset, i);
  }
}

static void check_record(const rsm_record *r, const want_record *w) {
  CHECK(r != NULL, "record %lld missing", w->offset);
  CHECK(rsm_record_offset(r) == w->offset, "offset %lld, want %lld", (long long)rsm_record_offset(r), w->offset);
  CHECK(rsm_record_timestamp(r) == w->timestamp, "timestamp of %lld", w->offset);
  CHECK(rsm_record_timestamp_type(r) == w->ts_type, "timestamp type of %lld: %d", w->offset,
        rsm_record_timestamp_type(r));
  size_t len = 99;
  const uint8_t *key = rsm_record_key(r, &len);
  expect_hex(key, len, w->key, "key", w->offset);
  len = 99;
  const uint8_t *value = rsm_record_value(r, &len);
  expect_hex(value, len, w->value, "value", w->offset);
  CHECK(rsm_record_header_count(r) == w->nh, "headers of %lld", w->offset);
  for (size_t h = 0; h < w->nh; h++) {
    const char *k = NULL;
    const uint8_t *v = NULL;
    size_t kl = 99, vl = 99;
    CHECK(rsm_record_header(r, h, &k, &kl, &v, &vl) == RSM_RESULT_OK, "header %zu of %lld", h, w->offset);
    expect_hex(k, kl, w->hk[h], "header key", w->offset);
    expect_hex(v, vl, w->hv[h], "header value", w->offset);
  }
  CHECK(rsm_record_header(r, w->nh, NULL, NULL, NULL, NULL) == RSM_RESULT_INVALID_ARGUMENT, "header past the count");
}

/* A fetch of segment `i` of `tx` with every later segment. */
static rsm_records *fetch_records(rsm_store *store, fixture *tx, size_t i, int64_t offset, uint32_t max_bytes,
                                  size_t max_records, int32_t isolation) {
  const rsm_segment_metadata *later[MAX_SEGMENTS];
  size_t n = 0;
  for (size_t j = i + 1; j < tx->n; j++) later[n++] = &tx->seg[j].md;
  rsm_records *records = NULL;
  OK(rsm_records_fetch(store, &tx->seg[i].md, n ? later : NULL, n, offset, max_bytes, max_records, isolation, 0,
                       &records, ERR));
  CHECK(records != NULL, "records");
  return records;
}

void test_records(const char *fixture_dir, const char *work) {
  char dir[1024], url[1100];
  fixture *tx = malloc(sizeof *tx);
  want_fetch(*want)[2] = calloc(MAX_SEGMENTS, sizeof *want);
  CHECK(tx != NULL && want != NULL, "malloc");
  fixture_load_file(tx, fixture_dir, "txns.txt");
  load_wants(fixture_dir, want, tx->n);
  fresh_store(work, "store-records", dir, sizeof dir, url, sizeof url);
  rsm_store *store = open_store(url);
  copy_all(store, tx);

  /* Each closed segment from its first offset, at both levels: every record as the fixture wrote it. */
  const int32_t levels[2] = {RSM_ISOLATION_READ_UNCOMMITTED, RSM_ISOLATION_READ_COMMITTED};
  for (size_t i = 0; i < tx->n; i++) {
    for (size_t iso = 0; iso < 2; iso++) {
      const want_fetch *w = &want[i][iso];
      rsm_records *records = fetch_records(store, tx, i, tx->seg[i].start, 1 << 20, 1000, levels[iso]);
      CHECK(rsm_records_len(records) == w->n, "segment %zu at level %zu: %zu records, want %zu", i, iso,
            rsm_records_len(records), w->n);
      for (size_t r = 0; r < w->n; r++) check_record(rsm_records_get(records, r), &w->r[r]);
      CHECK(rsm_records_get(records, w->n) == NULL, "NULL past the end");
      CHECK(rsm_records_next_offset(records) == w->next, "next offset %lld, want %lld",
            (long long)rsm_records_next_offset(records), w->next);
      rsm_records_free(records);
    }
  }
  CHECK(want[0][1].n < want[0][0].n, "read_committed drops the aborted records");

  /* Paging through the whole partition two records (or one batch) at a time, on to the next segment past
   * each one's end: the same records. */
  for (size_t iso = 0; iso < 2; iso++) {
    int64_t offset = tx->seg[0].start;
    size_t seg = 0, got = 0, wi = 0, calls = 0;
    while (seg < tx->n) {
      if (offset > tx->seg[seg].end) {
        seg++;
        wi = 0;
        continue;
      }
      rsm_records *records = fetch_records(store, tx, seg, offset, 1, 2, levels[iso]);
      CHECK(rsm_records_len(records) <= 2, "at most 2 records");
      for (size_t r = 0; r < rsm_records_len(records); r++, got++) {
        CHECK(wi < want[seg][iso].n, "more records than expected in segment %zu", seg);
        check_record(rsm_records_get(records, r), &want[seg][iso].r[wi++]);
      }
      int64_t next = rsm_records_next_offset(records);
      CHECK(next > offset, "next offset %lld after %lld", (long long)next, (long long)offset);
      offset = next;
      rsm_records_free(records);
      CHECK(++calls < 100, "paging ends");
    }
    size_t total = 0;
    for (size_t i = 0; i < tx->n; i++) total += want[i][iso].n;
    CHECK(got == total, "paged %zu records at level %zu, want %zu", got, iso, total);
  }

  /* Refusals, each naming the argument. */
  rsm_records *records = (rsm_records *)1;
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`isolation` 2 is not an rsm_isolation",
             rsm_records_fetch(store, &tx->seg[0].md, NULL, 0, 0, 1 << 20, 10, 2, 0, &records, ERR));
  CHECK(records == NULL, "NULL on failure");
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`records_out` is NULL",
             rsm_records_fetch(store, &tx->seg[0].md, NULL, 0, 0, 1 << 20, 10, 0, 0, NULL, ERR));
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`later` is NULL but its length is 1",
             rsm_records_fetch(store, &tx->seg[0].md, NULL, 1, 0, 1 << 20, 10, 1, 0, &records, ERR));
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "is outside segment",
             rsm_records_fetch(store, &tx->seg[0].md, NULL, 0, tx->seg[0].end + 1, 1 << 20, 10, 0, 0, &records, ERR));
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`segment` is NULL",
             rsm_records_fetch(store, NULL, NULL, 0, 0, 1 << 20, 10, 0, 0, &records, ERR));
  /* NULL-safe accessors. */
  rsm_records_free(NULL);
  size_t len = 99;
  CHECK(rsm_records_len(NULL) == 0 && rsm_records_next_offset(NULL) == -1 && rsm_records_get(NULL, 0) == NULL,
        "NULL records");
  CHECK(rsm_record_key(NULL, &len) == NULL && len == 0 && rsm_record_offset(NULL) == -1 &&
            rsm_record_timestamp_type(NULL) == RSM_TIMESTAMP_TYPE_NO_TIMESTAMP_TYPE,
        "NULL record");

  CHECK(rsm_store_close(store) == RSM_RESULT_OK, "close");
  expect_no_open_handles();
  fixture_free(tx);
  free(tx);
  free(want);
}
