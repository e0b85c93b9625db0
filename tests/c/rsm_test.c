/* C host tests of librsm over the filesystem store (file:// URLs), on a real Kafka partition written by
 * rsm-c-fixture. Every byte the library returns is compared with the source files.
 *
 * usage: rsm_test CASE FIXTURE_DIR WORK_DIR
 *   round_trip  copy every closed segment, list, fetch whole segments and ranges, every index, positions
 *               of offsets and timestamps, delete
 *   s3_round_trip  the round trip on the S3 server of the test command (RSM_TEST_S3_* from moto.sh)
 *   errors      every error path: missing segment, NULL and invalid arguments, bad settings, a corrupt
 *               manifest, closed handles, a panic
 *   threads     8 threads fetching from one store at once
 *   async       the asynchronous form: copy, fetch, delete with callbacks; cancellation of operations
 *               that hang (an S3 endpoint that never answers)
 *   populate    copies the segments into WORK/store-readme for the README example
 *   records     the record iterator over the partition of transactions and compressed batches (txns.txt,
 *               records.txt): every record at both isolation levels, paging, refusals
 *   aiven       segments Aiven's plugin stored (FIXTURE_DIR/aiven-store), read with aiven.read.enabled
 * The cases async, records and aiven live in async.c, records.c and aiven.c; what the cases share is in cases.h and common.h.
 */
#include "cases.h"

#define MAX_BATCHES 4096

rsm_store *open_store(const char *url) {
  rsm_setting settings[] = {
      {"store.url", url},
      {"chunk.size", "65536"},      /* several chunks per segment */
      {"chunk.block.size", "4096"}, /* several CRC blocks per chunk */
      {"fs.fsync", "false"},
      {"broker.id", "1"},
  };
  rsm_store *store = NULL;
  OK(rsm_store_open(settings, sizeof settings / sizeof settings[0], &store, ERR));
  CHECK(store != NULL, "a store");
  return store;
}

void copy_all(rsm_store *store, fixture *fx) {
  for (size_t i = 0; i < fx->n; i++) {
    rsm_buffer *custom = (rsm_buffer *)1; /* must be overwritten */
    OK(rsm_copy(store, &fx->seg[i].md, &fx->seg[i].files, &custom, ERR));
    /* The library returns no custom metadata today; whatever it returns must be readable and freeable. */
    CHECK(custom == NULL || rsm_buffer_data(custom) != NULL, "custom metadata");
    rsm_buffer_free(custom);
  }
}

bytes fetch(rsm_store *store, const rsm_segment_metadata *md, int64_t start, int64_t end, size_t step) {
  rsm_stream *s = NULL;
  OK(rsm_fetch(store, md, start, end, &s, ERR));
  return read_all(s, step);
}

static void check_range(rsm_store *store, const segment *sg, const bytes *log, int64_t start, int64_t end,
                        size_t step) {
  bytes got = fetch(store, &sg->md, start, end, step);
  size_t stop = end == RSM_END_OF_SEGMENT || (size_t)end >= log->len ? log->len : (size_t)end + 1;
  char what[700];
  snprintf(what, sizeof what, "%s bytes %lld..%lld (reads of %zu)", sg->log, (long long)start, (long long)end, step);
  expect_same(got.data, got.len, log->data + start, stop - (size_t)start, what);
  free(got.data);
}

static void check_index(rsm_store *store, const segment *sg, int32_t type, const uint8_t *want, size_t want_len,
                        const char *what) {
  rsm_stream *s = NULL;
  OK(rsm_fetch_index(store, &sg->md, type, &s, ERR));
  bytes got = read_all(s, 777);
  expect_same(got.data, got.len, want, want_len, what);
  free(got.data);
}

/* The S3 server the test command starts (tools/servers/moto.sh exports RSM_TEST_S3_*), under a prefix of
 * this run's own. */
static rsm_store *open_s3_store(void) {
  const char *vars[] = {"RSM_TEST_S3_ENDPOINT", "RSM_TEST_S3_BUCKET", "RSM_TEST_S3_REGION", "RSM_TEST_S3_ACCESS_KEY",
                        "RSM_TEST_S3_SECRET_KEY"};
  for (size_t i = 0; i < 5; i++) CHECK(getenv(vars[i]) != NULL, "%s is not set (start tools/servers/moto.sh)", vars[i]);
  static char url[512];
  snprintf(url, sizeof url, "s3://%s/c-tests-%ld-%ld", getenv("RSM_TEST_S3_BUCKET"), (long)getpid(), (long)time(NULL));
  rsm_setting settings[] = {
      {"store.url", url},
      {"s3.endpoint.url", getenv("RSM_TEST_S3_ENDPOINT")},
      {"s3.region", getenv("RSM_TEST_S3_REGION")},
      {"aws.access.key.id", getenv("RSM_TEST_S3_ACCESS_KEY")},
      {"aws.secret.access.key", getenv("RSM_TEST_S3_SECRET_KEY")},
      {"chunk.size", "65536"},
      {"chunk.block.size", "4096"},
  };
  rsm_store *store = NULL;
  OK(rsm_store_open(settings, sizeof settings / sizeof settings[0], &store, ERR));
  return store;
}

static void test_round_trip(fixture *fx, const char *work, int s3) {
  char dir[1024], url[1100];
  CHECK(rsm_abi_version() == RSM_ABI_VERSION, "ABI %u, header %d", rsm_abi_version(), RSM_ABI_VERSION);
  CHECK(strlen(rsm_version()) >= 5, "version %s", rsm_version());
  rsm_store *store;
  if (s3) {
    store = open_s3_store();
  } else {
    fresh_store(work, "store-round-trip", dir, sizeof dir, url, sizeof url);
    store = open_store(url);
  }
  copy_all(store, fx);

  /* Listing: the partition's segments, oldest first, with the metadata they were copied with. */
  rsm_segment_list *list = NULL;
  OK(rsm_list_segments(store, &fx->tp, &list, ERR));
  CHECK(rsm_segment_list_len(list) == fx->n, "listed %zu segments, copied %zu", rsm_segment_list_len(list), fx->n);
  for (size_t i = 0; i < fx->n; i++) {
    const rsm_segment_metadata *m = rsm_segment_list_get(list, i);
    const rsm_segment_metadata *want = &fx->seg[i].md;
    CHECK(m != NULL, "entry %zu", i);
    CHECK(m->start_offset == want->start_offset && m->end_offset == want->end_offset, "offsets of %zu", i);
    CHECK(m->segment_id.most_significant_bits == want->segment_id.most_significant_bits &&
              m->segment_id.least_significant_bits == want->segment_id.least_significant_bits,
          "id of %zu", i);
    CHECK(strcmp(m->topic_id_partition.topic, fx->topic) == 0 && m->topic_id_partition.partition == fx->partition,
          "topic of %zu: %s", i, m->topic_id_partition.topic);
    CHECK(m->segment_size_in_bytes == want->segment_size_in_bytes && m->max_timestamp_ms == want->max_timestamp_ms,
          "size and timestamp of %zu", i);
    CHECK(m->leader_epochs_len == want->leader_epochs_len, "epochs of %zu", i);
    for (size_t e = 0; e < m->leader_epochs_len; e++)
      CHECK(m->leader_epochs[e].epoch == want->leader_epochs[e].epoch &&
                m->leader_epochs[e].start_offset == want->leader_epochs[e].start_offset,
            "epoch %zu of %zu", e, i);
    /* A listed entry is itself valid metadata to fetch with. */
    bytes head = fetch(store, m, 0, 99, 4096);
    CHECK(head.len == 100, "100 bytes through a listed entry, got %zu", head.len);
    free(head.data);
  }
  CHECK(rsm_segment_list_get(list, fx->n) == NULL, "past the end");
  rsm_segment_list_free(list);
  OK(rsm_list_segments(store, NULL, &list, ERR));
  CHECK(rsm_segment_list_len(list) == fx->n, "the whole store lists %zu", rsm_segment_list_len(list));
  rsm_segment_list_free(list);
  rsm_topic_id_partition other = fx->tp;
  other.partition = fx->partition + 1;
  OK(rsm_list_segments(store, &other, &list, ERR));
  CHECK(rsm_segment_list_len(list) == 0, "another partition lists %zu", rsm_segment_list_len(list));
  rsm_segment_list_free(list);

  batch *batches = malloc(sizeof(batch) * MAX_BATCHES);
  CHECK(batches != NULL, "malloc");
  for (size_t i = 0; i < fx->n; i++) {
    const segment *sg = &fx->seg[i];
    bytes log = read_file(sg->log);
    CHECK(log.len == (size_t)sg->size, "size of %s", sg->log);
    size_t nb = batches_of(&log, batches, MAX_BATCHES);
    CHECK(nb > 8, "%zu batches", nb);

    /* Whole segment, with big, odd and tiny reads (short reads are the stream's right). */
    check_range(store, sg, &log, 0, RSM_END_OF_SEGMENT, 1 << 20);
    check_range(store, sg, &log, 0, RSM_END_OF_SEGMENT, 4093);
    if (i == 0) check_range(store, sg, &log, 0, 20000, 1);
    /* Ranges: one batch, from a batch to the end, across chunks, unaligned, an end past the segment. */
    for (size_t k = 0; k < nb; k += nb / 7) {
      const batch *b = &batches[k];
      check_range(store, sg, &log, b->position, b->position + b->length - 1, 65536);
      check_range(store, sg, &log, b->position, RSM_END_OF_SEGMENT, 65536);
    }
    check_range(store, sg, &log, 1, 70001, 8192);
    check_range(store, sg, &log, (int32_t)log.len - 1, RSM_END_OF_SEGMENT, 16);
    check_range(store, sg, &log, 12345, INT32_MAX, 65536);

    /* Offsets and timestamps to positions, against the batches read from the file here. */
    for (size_t k = 0; k < nb; k++) {
      int64_t p = -2;
      OK(rsm_position_of_offset(store, &sg->md, batches[k].base_offset, &p, ERR));
      CHECK(p == batches[k].position, "offset %lld at %lld, want %lld", (long long)batches[k].base_offset,
            (long long)p, (long long)batches[k].position);
      OK(rsm_position_of_offset(store, &sg->md, batches[k].last_offset, &p, ERR));
      CHECK(p == batches[k].position, "offset %lld at %lld", (long long)batches[k].last_offset, (long long)p);
    }
    for (size_t k = 0; k < nb; k += 5) {
      int64_t ts = batches[k].max_timestamp;
      int64_t want = -1;
      for (size_t j = 0; j < nb; j++)
        if (batches[j].max_timestamp >= ts) {
          want = batches[j].position;
          break;
        }
      int64_t p = -2;
      OK(rsm_position_of_timestamp(store, &sg->md, ts, &p, ERR));
      CHECK(p == want, "timestamp %lld at %lld, want %lld", (long long)ts, (long long)p, (long long)want);
    }
    int64_t p = -2;
    OK(rsm_position_of_timestamp(store, &sg->md, sg->max_ts + 1, &p, ERR));
    CHECK(p == -1, "a timestamp after the segment: %lld", (long long)p);

    /* Every index, byte for byte. */
    bytes idx = read_file(sg->index), tidx = read_file(sg->timeindex), snap = read_file(sg->snapshot);
    check_index(store, sg, RSM_INDEX_TYPE_OFFSET, idx.data, idx.len, "offset index");
    check_index(store, sg, RSM_INDEX_TYPE_TIMESTAMP, tidx.data, tidx.len, "time index");
    check_index(store, sg, RSM_INDEX_TYPE_PRODUCER_SNAPSHOT, snap.data, snap.len, "producer snapshot");
    check_index(store, sg, RSM_INDEX_TYPE_LEADER_EPOCH, fx->checkpoint.data, fx->checkpoint.len,
                "leader-epoch checkpoint");
    if (sg->files.transaction_index == NULL) {
      rsm_stream *s = (rsm_stream *)1;
      EXPECT_ERR(RSM_RESULT_NOT_FOUND, "index", rsm_fetch_index(store, &sg->md, RSM_INDEX_TYPE_TRANSACTION, &s, ERR));
      CHECK(s == NULL, "no stream on failure");
    } else {
      bytes txn = read_file(sg->txnindex);
      check_index(store, sg, RSM_INDEX_TYPE_TRANSACTION, txn.data, txn.len, "transaction index");
      free(txn.data);
    }
    free(idx.data);
    free(tidx.data);
    free(snap.data);
    free(log.data);
  }
  free(batches);

  /* Delete: the segments are gone, and deleting again is not an error. */
  for (size_t i = 0; i < fx->n; i++) OK(rsm_delete(store, &fx->seg[i].md, ERR));
  OK(rsm_list_segments(store, &fx->tp, &list, ERR));
  CHECK(rsm_segment_list_len(list) == 0, "%zu segments after delete", rsm_segment_list_len(list));
  rsm_segment_list_free(list);
  rsm_stream *s = NULL;
  EXPECT_ERR(RSM_RESULT_NOT_FOUND, "", rsm_fetch(store, &fx->seg[0].md, 0, RSM_END_OF_SEGMENT, &s, ERR));
  OK(rsm_delete(store, &fx->seg[0].md, ERR));
  CHECK(rsm_store_close(store) == RSM_RESULT_OK, "close");
  expect_no_open_handles();
  if (!s3) remove_tree(dir);
}

static void test_errors(fixture *fx, const char *work) {
  char dir[1024], url[1100];
  fresh_store(work, "store-errors", dir, sizeof dir, url, sizeof url);

  /* Bad settings name the key (and never echo a value). */
  rsm_store *store = (rsm_store *)1;
  rsm_setting unknown[] = {{"store.url", url}, {"chunk.sise", "1"}};
  EXPECT_ERR(RSM_RESULT_CONFIG, "`chunk.sise`: unknown setting", rsm_store_open(unknown, 2, &store, ERR));
  CHECK(store == NULL, "no store on failure");
  rsm_setting bad[] = {{"store.url", url}, {"chunk.size", "12"}};
  EXPECT_ERR(RSM_RESULT_CONFIG, "`chunk.size`", rsm_store_open(bad, 2, &store, ERR));
  rsm_setting no_url[] = {{"chunk.size", "1048576"}};
  EXPECT_ERR(RSM_RESULT_CONFIG, "`store.url`: is required", rsm_store_open(no_url, 1, &store, ERR));
  EXPECT_ERR(RSM_RESULT_CONFIG, "`store.url`", rsm_store_open(NULL, 0, &store, ERR));
  rsm_setting scheme[] = {{"store.url", "ftp://somewhere"}};
  EXPECT_ERR(RSM_RESULT_CONFIG, "unsupported store URL scheme `ftp`", rsm_store_open(scheme, 1, &store, ERR));
  rsm_setting twice[] = {{"store.url", url}, {"store.url", url}};
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "setting `store.url` is given twice", rsm_store_open(twice, 2, &store, ERR));
  rsm_setting null_value[] = {{"store.url", url}, {"chunk.size", NULL}};
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`settings[1].value` is NULL", rsm_store_open(null_value, 2, &store, ERR));
  rsm_setting null_key[] = {{NULL, "x"}};
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`settings[0].key` is NULL", rsm_store_open(null_key, 1, &store, ERR));
  rsm_setting not_utf8[] = {{"store.url", url}, {"\xff\xfe", "1"}};
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`settings[1].key` is not UTF-8", rsm_store_open(not_utf8, 2, &store, ERR));
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`settings` is NULL", rsm_store_open(NULL, 3, &store, ERR));
  rsm_setting good[] = {{"store.url", url}};
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`store_out` is NULL", rsm_store_open(good, 1, NULL, ERR));
  /* `err` may be NULL: the code alone. */
  CHECK(rsm_store_open(unknown, 2, &store, NULL) == RSM_RESULT_CONFIG, "no error object wanted");

  store = open_store(url);
  const segment *sg = &fx->seg[0];
  rsm_buffer *custom = NULL;
  OK(rsm_copy(store, &sg->md, &sg->files, &custom, ERR));
  rsm_buffer_free(custom);

  /* NULL and invalid arguments of every call, each named. */
  rsm_stream *s = (rsm_stream *)1, *s2 = NULL;
  int64_t pos = 0;
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`store` is NULL", rsm_fetch(NULL, &sg->md, 0, -1, &s, ERR));
  CHECK(s == NULL, "the out-parameter is cleared on failure");
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`metadata` is NULL", rsm_fetch(store, NULL, 0, -1, &s, ERR));
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`stream_out` is NULL", rsm_fetch(store, &sg->md, 0, -1, NULL, ERR));
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`end_position` -7", rsm_fetch(store, &sg->md, 0, -7, &s, ERR));
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "start position -5", rsm_fetch(store, &sg->md, -5, -1, &s, ERR));
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "start position 2000000000",
             rsm_fetch(store, &sg->md, 2000000000, -1, &s, ERR));
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "end position 10 is before start position 20",
             rsm_fetch(store, &sg->md, 20, 10, &s, ERR));
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`index_type` 9", rsm_fetch_index(store, &sg->md, 9, &s, ERR));
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`index_type` -1", rsm_fetch_index(store, &sg->md, -1, &s, ERR));
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`metadata` is NULL", rsm_delete(store, NULL, ERR));
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`files` is NULL", rsm_copy(store, &sg->md, NULL, NULL, ERR));
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`position` is NULL",
             rsm_position_of_offset(store, &sg->md, sg->start, NULL, ERR));
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`list_out` is NULL", rsm_list_segments(store, NULL, NULL, ERR));
  rsm_segment_metadata md = sg->md;
  md.topic_id_partition.topic = NULL;
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`metadata.topic_id_partition.topic` is NULL",
             rsm_fetch(store, &md, 0, -1, &s, ERR));
  md = sg->md;
  md.leader_epochs = NULL;
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`metadata.leader_epochs` is NULL but its length is",
             rsm_delete(store, &md, ERR));
  md = sg->md;
  md.state = 7;
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`metadata.state`", rsm_delete(store, &md, ERR));
  rsm_segment_files files = sg->files;
  files.log = NULL;
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`files.log` is NULL", rsm_copy(store, &sg->md, &files, NULL, ERR));
  /* Segment 1's files (its metadata must describe its own `.log`), one of them missing. */
  files = fx->seg[1].files;
  files.time_index = "/nonexistent/00000000000000000000.timeindex";
  rsm_result r = rsm_copy(store, &fx->seg[1].md, &files, NULL, NULL);
  CHECK(r == RSM_RESULT_NOT_FOUND, "a copy of a missing file: %d", (int)r);
  uint8_t buf[16];
  size_t n = 5;
  OK(rsm_fetch(store, &sg->md, 0, -1, &s, ERR));
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`buf` is NULL but `len` is 16", rsm_stream_read(s, NULL, 16, &n, ERR));
  /* `n` may be NULL: the bytes are read, their count is not reported. */
  bytes log0 = read_file(sg->log);
  memset(buf, 0, sizeof buf);
  OK(rsm_stream_read(s, buf, 4, NULL, ERR));
  expect_same(buf, 4, log0.data, 4, "a read without a count");
  OK(rsm_stream_read(s, buf, 0, &n, ERR));
  CHECK(n == 0, "a read of 0 bytes");
  OK(rsm_stream_read(s, buf, sizeof buf, &n, ERR));
  CHECK(n > 0 && n <= sizeof buf, "a read");
  expect_same(buf, n, log0.data + 4, n, "the read after one without a count");
  OK(rsm_stream_read(s, NULL, 0, NULL, ERR));
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`buf` is NULL but `len` is 3", rsm_stream_read(s, NULL, 3, NULL, ERR));

  /* rsm_copy's checks of its arguments against the files: each refused as an invalid argument naming
   * the field and its value, by the blocking and the asynchronous copy alike. */
  char want[1200];
  md = fx->seg[1].md;
  md.segment_size_in_bytes = fx->seg[1].size + 1;
  snprintf(want, sizeof want, "`metadata.segment_size_in_bytes` %d is not the length of `files.log` %s (%d bytes)",
           fx->seg[1].size + 1, fx->seg[1].log, fx->seg[1].size);
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, want, rsm_copy(store, &md, &fx->seg[1].files, NULL, ERR));
  rsm_operation *op = (rsm_operation *)1;
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, want,
             rsm_copy_async(store, &md, &fx->seg[1].files, NULL, NULL, &op, ERR));
  CHECK(op == NULL, "no operation on failure");
  md.segment_size_in_bytes = fx->seg[1].size - 1;
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`metadata.segment_size_in_bytes`",
             rsm_copy(store, &md, &fx->seg[1].files, NULL, ERR));
  static const char garbage[] = "this is not a checkpoint\n";
  static const char trailing[] = "0\n1\n0 0\n1 5\n";
  files = fx->seg[1].files;
  files.leader_epoch_checkpoint = (const uint8_t *)garbage;
  files.leader_epoch_checkpoint_len = sizeof garbage - 1;
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`files.leader_epoch_checkpoint` is not a leader-epoch checkpoint",
             rsm_copy(store, &fx->seg[1].md, &files, NULL, ERR));
  files.leader_epoch_checkpoint = (const uint8_t *)trailing;
  files.leader_epoch_checkpoint_len = sizeof trailing - 1;
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "line 4 `1 5` follows the 1 entries",
             rsm_copy(store, &fx->seg[1].md, &files, NULL, ERR));
  files.leader_epoch_checkpoint = NULL;
  files.leader_epoch_checkpoint_len = 9;
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`files.leader_epoch_checkpoint` is NULL but its length is 9",
             rsm_copy(store, &fx->seg[1].md, &files, NULL, ERR));
  md = fx->seg[1].md;
  md.custom_metadata = NULL;
  md.custom_metadata_len = SIZE_MAX;
  snprintf(want, sizeof want, "`metadata.custom_metadata` is NULL but its length is %zu", (size_t)SIZE_MAX);
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, want, rsm_copy(store, &md, &fx->seg[1].files, NULL, ERR));
  md.custom_metadata_len = 1;
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`metadata.custom_metadata` is NULL but its length is 1",
             rsm_fetch(store, &md, 0, -1, &s2, ERR));
  /* None of the refused copies wrote the segment. */
  EXPECT_ERR(RSM_RESULT_NOT_FOUND, "", rsm_fetch(store, &fx->seg[1].md, 0, -1, &s2, ERR));
  free(log0.data);

  /* Offsets outside the segment: refused the same way below it and above it. Timestamps are a search:
   * before the segment, its first batch; after it, none (-1). */
  const int64_t outside[] = {INT64_MIN, -1, sg->start - 1, sg->end + 1, INT64_MAX};
  for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++) {
    snprintf(want, sizeof want, "`offset` %lld is outside segment", (long long)outside[i]);
    pos = 7;
    EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, want, rsm_position_of_offset(store, &sg->md, outside[i], &pos, ERR));
    CHECK(pos == -1, "position on failure: %lld", (long long)pos);
    snprintf(want, sizeof want, "(offsets %lld to %lld inclusive)", (long long)sg->start, (long long)sg->end);
    EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, want, rsm_position_of_offset(store, &sg->md, outside[i], &pos, ERR));
  }
  OK(rsm_position_of_offset(store, &sg->md, sg->end, &pos, ERR));
  CHECK(pos > 0 && pos < sg->size, "the last offset at %lld", (long long)pos);
  OK(rsm_position_of_timestamp(store, &sg->md, INT64_MIN, &pos, ERR));
  CHECK(pos == 0, "INT64_MIN at %lld", (long long)pos);
  OK(rsm_position_of_timestamp(store, &sg->md, INT64_MAX, &pos, ERR));
  CHECK(pos == -1, "INT64_MAX at %lld", (long long)pos);

  /* Closed and forged handles: errors, never crashes; closing twice is harmless. */
  CHECK(rsm_stream_close(s) == RSM_RESULT_OK, "close");
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`stream` is not an open stream handle",
             rsm_stream_read(s, buf, sizeof buf, &n, ERR));
  CHECK(rsm_stream_close(s) == RSM_RESULT_INVALID_ARGUMENT, "a second close says so");
  CHECK(rsm_stream_close(NULL) == RSM_RESULT_OK, "closing NULL");
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`store` is not an open store handle",
             rsm_fetch((rsm_store *)s, &sg->md, 0, -1, &s, ERR));
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`stream` is not an open stream handle",
             rsm_stream_read((rsm_stream *)store, buf, sizeof buf, &n, ERR));

  /* A missing segment: not found. */
  md = sg->md;
  md.segment_id.least_significant_bits ^= 1;
  EXPECT_ERR(RSM_RESULT_NOT_FOUND, "", rsm_fetch(store, &md, 0, -1, &s, ERR));
  EXPECT_ERR(RSM_RESULT_NOT_FOUND, "", rsm_fetch_index(store, &md, RSM_INDEX_TYPE_OFFSET, &s, ERR));
  EXPECT_ERR(RSM_RESULT_NOT_FOUND, "", rsm_position_of_offset(store, &md, sg->start, &pos, ERR));
  CHECK(pos == -1, "position on failure: %lld", (long long)pos);

  /* A panic inside the library is caught and reported; the library goes on working. */
  EXPECT_ERR(RSM_RESULT_PANIC, "a deliberate panic", rsm_self_test_panic(ERR));
  OK(rsm_position_of_offset(store, &sg->md, sg->start, &pos, ERR));
  CHECK(pos == 0, "the first offset at %lld", (long long)pos);
  rsm_error_free(NULL);
  rsm_buffer_free(NULL);
  rsm_segment_list_free(NULL);
  CHECK(strcmp(rsm_error_message(NULL), "") == 0 && rsm_error_code(NULL) == RSM_RESULT_OK, "NULL errors");

  /* A corrupt manifest: every .manifest file of the store gets one byte flipped. A fresh store (no
   * cached manifest) must refuse it. */
  CHECK(rsm_store_close(store) == RSM_RESULT_OK, "close");
  char cmd[2300];
  snprintf(cmd, sizeof cmd,
           "find '%s' -name '*.manifest' | while read -r f; do printf '\\377' | dd of=\"$f\" bs=1 seek=40 "
           "conv=notrunc status=none; done",
           dir);
  CHECK(system(cmd) == 0, "damaging the manifest");
  store = open_store(url);
  EXPECT_ERR(RSM_RESULT_CORRUPT, "", rsm_fetch(store, &sg->md, 0, -1, &s, ERR));
  CHECK(s == NULL, "no stream");
  CHECK(rsm_store_close(store) == RSM_RESULT_OK, "close");

  /* A closed store. */
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`store` is not an open store handle",
             rsm_fetch(store, &sg->md, 0, -1, &s, ERR));
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`store` is not an open store handle", rsm_delete(store, &sg->md, ERR));
  CHECK(rsm_store_close(store) == RSM_RESULT_INVALID_ARGUMENT, "a second close says so");
  expect_no_open_handles();
  remove_tree(dir);
}

typedef struct {
  rsm_store *store;
  const fixture *fx;
  const bytes *logs;
  int id;
  int failures;
} worker;

static void *fetch_worker(void *arg) {
  worker *w = arg;
  uint8_t *buf = malloc(10000);
  for (int round = 0; round < 6; round++) {
    size_t i = (size_t)(w->id + round) % w->fx->n;
    const bytes *log = &w->logs[i];
    int64_t start = (int64_t)(((size_t)w->id * 7919 + (size_t)round * 104729) % log->len);
    rsm_stream *s = NULL;
    rsm_error *err = NULL;
    if (rsm_fetch(w->store, &w->fx->seg[i].md, start, RSM_END_OF_SEGMENT, &s, &err) != RSM_RESULT_OK) {
      fprintf(stderr, "thread %d: %s\n", w->id, rsm_error_message(err));
      rsm_error_free(err);
      w->failures++;
      continue;
    }
    size_t at = (size_t)start, n = 0;
    for (;;) {
      if (rsm_stream_read(s, buf, 10000, &n, &err) != RSM_RESULT_OK) {
        fprintf(stderr, "thread %d: %s\n", w->id, rsm_error_message(err));
        rsm_error_free(err);
        w->failures++;
        break;
      }
      if (n == 0) break;
      if (at + n > log->len || memcmp(buf, log->data + at, n) != 0) {
        fprintf(stderr, "thread %d: wrong bytes at %zu of segment %zu\n", w->id, at, i);
        w->failures++;
        break;
      }
      at += n;
    }
    if (at != log->len) {
      fprintf(stderr, "thread %d: stopped at %zu of %zu\n", w->id, at, log->len);
      w->failures++;
    }
    rsm_stream_close(s);
  }
  free(buf);
  return NULL;
}

static void test_threads(fixture *fx, const char *work) {
  char dir[1024], url[1100];
  fresh_store(work, "store-threads", dir, sizeof dir, url, sizeof url);
  rsm_store *store = open_store(url);
  copy_all(store, fx);
  bytes logs[MAX_SEGMENTS];
  for (size_t i = 0; i < fx->n; i++) logs[i] = read_file(fx->seg[i].log);
  enum { THREADS = 8 };
  pthread_t t[THREADS];
  worker w[THREADS];
  for (int i = 0; i < THREADS; i++) {
    w[i] = (worker){store, fx, logs, i, 0};
    CHECK(pthread_create(&t[i], NULL, fetch_worker, &w[i]) == 0, "pthread_create");
  }
  int failures = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    failures += w[i].failures;
  }
  CHECK(failures == 0, "%d failures in %d threads", failures, THREADS);
  for (size_t i = 0; i < fx->n; i++) free(logs[i].data);
  CHECK(rsm_store_close(store) == RSM_RESULT_OK, "close");
  expect_no_open_handles();
  remove_tree(dir);
}

static void populate(fixture *fx, const char *work) {
  char dir[1024], url[1100];
  fresh_store(work, "store-readme", dir, sizeof dir, url, sizeof url);
  rsm_store *store = open_store(url);
  copy_all(store, fx);
  CHECK(rsm_store_close(store) == RSM_RESULT_OK, "close");
  expect_no_open_handles();
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s round_trip|s3_round_trip|errors|threads|async|populate|records|aiven FIXTURE_DIR WORK_DIR\n", argv[0]);
    return 2;
  }
  fixture *fx = malloc(sizeof *fx);
  CHECK(fx != NULL, "malloc");
  fixture_load(fx, argv[2]);
  if (strcmp(argv[1], "round_trip") == 0)
    test_round_trip(fx, argv[3], 0);
  else if (strcmp(argv[1], "s3_round_trip") == 0)
    test_round_trip(fx, argv[3], 1);
  else if (strcmp(argv[1], "errors") == 0)
    test_errors(fx, argv[3]);
  else if (strcmp(argv[1], "threads") == 0)
    test_threads(fx, argv[3]);
  else if (strcmp(argv[1], "async") == 0)
    test_async(fx, argv[3]);
  else if (strcmp(argv[1], "populate") == 0)
    populate(fx, argv[3]);
  else if (strcmp(argv[1], "records") == 0)
    test_records(argv[2], argv[3]);
  else if (strcmp(argv[1], "aiven") == 0)
    test_aiven(fx, argv[2]);
  else
    CHECK(0, "unknown case %s", argv[1]);
  fixture_free(fx);
  free(fx);
  printf("%s: ok\n", argv[1]);
  return 0;
}
