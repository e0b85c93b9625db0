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
 */
#include "common.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>

#define MAX_BATCHES 4096

static rsm_store *open_store(const char *url) {
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

static void copy_all(rsm_store *store, fixture *fx) {
  for (size_t i = 0; i < fx->n; i++) {
    rsm_buffer *custom = (rsm_buffer *)1; /* must be overwritten */
    OK(rsm_copy(store, &fx->seg[i].md, &fx->seg[i].files, &custom, ERR));
    /* The library returns no custom metadata today; whatever it returns must be readable and freeable. */
    CHECK(custom == NULL || rsm_buffer_data(custom) != NULL, "custom metadata");
    rsm_buffer_free(custom);
  }
}

static bytes fetch(rsm_store *store, const rsm_segment_metadata *md, int32_t start, int32_t end, size_t step) {
  rsm_stream *s = NULL;
  OK(rsm_fetch(store, md, start, end, &s, ERR));
  return read_all(s, step);
}

static void check_range(rsm_store *store, const segment *sg, const bytes *log, int32_t start, int32_t end,
                        size_t step) {
  bytes got = fetch(store, &sg->md, start, end, step);
  size_t stop = end == RSM_END_OF_SEGMENT || (size_t)end >= log->len ? log->len : (size_t)end + 1;
  char what[700];
  snprintf(what, sizeof what, "%s bytes %d..%d (reads of %zu)", sg->log, start, end, step);
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
      int32_t p = -2;
      OK(rsm_position_of_offset(store, &sg->md, batches[k].base_offset, &p, ERR));
      CHECK(p == batches[k].position, "offset %lld at %d, want %d", (long long)batches[k].base_offset, p,
            batches[k].position);
      OK(rsm_position_of_offset(store, &sg->md, batches[k].last_offset, &p, ERR));
      CHECK(p == batches[k].position, "offset %lld at %d", (long long)batches[k].last_offset, p);
    }
    for (size_t k = 0; k < nb; k += 5) {
      int64_t ts = batches[k].max_timestamp;
      int32_t want = -1;
      for (size_t j = 0; j < nb; j++)
        if (batches[j].max_timestamp >= ts) {
          want = batches[j].position;
          break;
        }
      int32_t p = -2;
      OK(rsm_position_of_timestamp(store, &sg->md, ts, &p, ERR));
      CHECK(p == want, "timestamp %lld at %d, want %d", (long long)ts, p, want);
    }
    int32_t p = -2;
    OK(rsm_position_of_timestamp(store, &sg->md, sg->max_ts + 1, &p, ERR));
    CHECK(p == -1, "a timestamp after the segment: %d", p);

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
  int32_t pos = 0;
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
    CHECK(pos == -1, "position on failure: %d", pos);
    snprintf(want, sizeof want, "(offsets %lld to %lld inclusive)", (long long)sg->start, (long long)sg->end);
    EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, want, rsm_position_of_offset(store, &sg->md, outside[i], &pos, ERR));
  }
  OK(rsm_position_of_offset(store, &sg->md, sg->end, &pos, ERR));
  CHECK(pos > 0 && pos < sg->size, "the last offset at %d", pos);
  OK(rsm_position_of_timestamp(store, &sg->md, INT64_MIN, &pos, ERR));
  CHECK(pos == 0, "INT64_MIN at %d", pos);
  OK(rsm_position_of_timestamp(store, &sg->md, INT64_MAX, &pos, ERR));
  CHECK(pos == -1, "INT64_MAX at %d", pos);

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
  CHECK(pos == -1, "position on failure: %d", pos);

  /* A panic inside the library is caught and reported; the library goes on working. */
  EXPECT_ERR(RSM_RESULT_PANIC, "a deliberate panic", rsm_self_test_panic(ERR));
  OK(rsm_position_of_offset(store, &sg->md, sg->start, &pos, ERR));
  CHECK(pos == 0, "the first offset at %d", pos);
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
    int32_t start = (int32_t)(((size_t)w->id * 7919 + (size_t)round * 104729) % log->len);
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

/* ---- The asynchronous form ------------------------------------------------------------------------ */

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done, calls, blocking_refused;
  rsm_result result;
  rsm_stream *stream;
  rsm_buffer *custom;
  rsm_error *err;
} waiter;

static void waiter_init(waiter *w) {
  memset(w, 0, sizeof *w);
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
}

static void waiter_destroy(waiter *w) {
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
}

static void finish(waiter *w, rsm_result r, rsm_stream *s, rsm_buffer *custom, rsm_error *err) {
  pthread_mutex_lock(&w->mu);
  w->result = r;
  w->stream = s;
  w->custom = custom;
  w->err = err;
  w->calls++;
  w->done = 1;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

static void on_copy(void *user, rsm_result r, rsm_buffer *custom, rsm_error *err) { finish(user, r, NULL, custom, err); }
static void on_delete(void *user, rsm_result r, rsm_error *err) { finish(user, r, NULL, NULL, err); }
static void on_fetch(void *user, rsm_result r, rsm_stream *s, rsm_error *err) {
  waiter *w = user;
  if (s != NULL) {
    /* The documented rule: no blocking call on the runtime's thread; the library refuses it. */
    uint8_t b[1];
    size_t n = 0;
    rsm_error *e = NULL;
    if (rsm_stream_read(s, b, 1, &n, &e) == RSM_RESULT_INVALID_ARGUMENT && strstr(rsm_error_message(e), "runtime thread"))
      w->blocking_refused = 1;
    rsm_error_free(e);
  }
  finish(w, r, s, NULL, err);
}

/* Waits for the callback (at most 120 s: valgrind is slow) and checks it was called once. */
static void wait_for(waiter *w, const char *what) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 120;
  pthread_mutex_lock(&w->mu);
  while (!w->done)
    if (pthread_cond_timedwait(&w->cv, &w->mu, &until) != 0) break;
  int done = w->done;
  pthread_mutex_unlock(&w->mu);
  CHECK(done, "%s: no callback within 120 s", what);
  CHECK(w->calls == 1, "%s: %d callbacks", what, w->calls);
}

static void test_async(fixture *fx, const char *work) {
  char dir[1024], url[1100];
  fresh_store(work, "store-async", dir, sizeof dir, url, sizeof url);
  rsm_store *store = open_store(url);
  waiter w[MAX_SEGMENTS];

  /* Copies, all in flight at once. */
  for (size_t i = 0; i < fx->n; i++) {
    waiter_init(&w[i]);
    rsm_operation *op = NULL;
    OK(rsm_copy_async(store, &fx->seg[i].md, &fx->seg[i].files, on_copy, &w[i], &op, ERR));
    CHECK(op != NULL, "an operation handle");
  }
  for (size_t i = 0; i < fx->n; i++) {
    wait_for(&w[i], "copy");
    CHECK(w[i].result == RSM_RESULT_OK, "copy %zu: %d %s", i, (int)w[i].result, rsm_error_message(w[i].err));
    rsm_buffer_free(w[i].custom);
    waiter_destroy(&w[i]);
  }

  /* Fetches: the stream comes to the callback, and is read here, on the host's thread. */
  for (size_t i = 0; i < fx->n; i++) {
    waiter_init(&w[i]);
    OK(rsm_fetch_async(store, &fx->seg[i].md, 0, RSM_END_OF_SEGMENT, on_fetch, &w[i], NULL, ERR));
  }
  for (size_t i = 0; i < fx->n; i++) {
    wait_for(&w[i], "fetch");
    CHECK(w[i].result == RSM_RESULT_OK && w[i].stream != NULL, "fetch %zu: %s", i, rsm_error_message(w[i].err));
    CHECK(w[i].blocking_refused, "a blocking call in a callback is refused");
    bytes got = read_all(w[i].stream, 65536), log = read_file(fx->seg[i].log);
    expect_same(got.data, got.len, log.data, log.len, "an asynchronous fetch");
    free(got.data);
    free(log.data);
    waiter_destroy(&w[i]);
  }

  /* A missing segment: the callback gets the error. */
  rsm_segment_metadata missing = fx->seg[0].md;
  missing.segment_id.least_significant_bits ^= 0x100;
  waiter_init(&w[0]);
  OK(rsm_fetch_async(store, &missing, 0, RSM_END_OF_SEGMENT, on_fetch, &w[0], NULL, ERR));
  wait_for(&w[0], "fetch of a missing segment");
  CHECK(w[0].result == RSM_RESULT_NOT_FOUND && w[0].stream == NULL && rsm_error_code(w[0].err) == RSM_RESULT_NOT_FOUND,
        "missing: %d", (int)w[0].result);
  rsm_error_free(w[0].err);
  waiter_destroy(&w[0]);
  EXPECT_ERR(RSM_RESULT_INVALID_ARGUMENT, "`callback` is NULL",
             rsm_delete_async(store, &fx->seg[0].md, NULL, NULL, NULL, ERR));

  /* Deletes. */
  for (size_t i = 0; i < fx->n; i++) {
    waiter_init(&w[i]);
    OK(rsm_delete_async(store, &fx->seg[i].md, on_delete, &w[i], NULL, ERR));
  }
  for (size_t i = 0; i < fx->n; i++) {
    wait_for(&w[i], "delete");
    CHECK(w[i].result == RSM_RESULT_OK, "delete %zu: %s", i, rsm_error_message(w[i].err));
    waiter_destroy(&w[i]);
  }
  rsm_segment_list *list = NULL;
  OK(rsm_list_segments(store, &fx->tp, &list, ERR));
  CHECK(rsm_segment_list_len(list) == 0, "deleted");
  rsm_segment_list_free(list);
  CHECK(rsm_store_close(store) == RSM_RESULT_OK, "close");

  /* Cancellation: an S3 store whose server accepts connections and never answers, so every operation
   * hangs until it is cancelled. */
  int srv = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {0};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK(srv >= 0 && bind(srv, (struct sockaddr *)&addr, sizeof addr) == 0 && listen(srv, 64) == 0, "a socket");
  socklen_t len = sizeof addr;
  CHECK(getsockname(srv, (struct sockaddr *)&addr, &len) == 0, "getsockname");
  char endpoint[64];
  snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d", ntohs(addr.sin_port));
  rsm_setting s3[] = {
      {"store.url", "s3://silent-bucket/tiered"},
      {"s3.endpoint.url", endpoint},
      {"s3.region", "us-east-1"},
      {"aws.access.key.id", "AKIDEXAMPLE"},
      {"aws.secret.access.key", "not-a-real-secret"},
      /* This part tests cancellation: the fetch deadline (500 ms by default) must not end the fetch first,
       * which it did under valgrind. The deadline has its own check below. */
      {"fetch.timeout.ms", "600000"},
  };
  OK(rsm_store_open(s3, sizeof s3 / sizeof s3[0], &store, ERR));
  rsm_operation *fetch_op = NULL, *copy_op = NULL;
  waiter wf, wc;
  waiter_init(&wf);
  waiter_init(&wc);
  OK(rsm_fetch_async(store, &fx->seg[0].md, 0, RSM_END_OF_SEGMENT, on_fetch, &wf, &fetch_op, ERR));
  OK(rsm_copy_async(store, &fx->seg[0].md, &fx->seg[0].files, on_copy, &wc, &copy_op, ERR));
  usleep(300 * 1000);
  pthread_mutex_lock(&wf.mu);
  CHECK(!wf.done, "the fetch hangs until cancelled");
  pthread_mutex_unlock(&wf.mu);
  CHECK(rsm_operation_cancel(fetch_op) == RSM_RESULT_OK, "cancel the fetch");
  CHECK(rsm_operation_cancel(copy_op) == RSM_RESULT_OK, "cancel the copy");
  wait_for(&wf, "cancelled fetch");
  wait_for(&wc, "cancelled copy");
  CHECK(wf.result == RSM_RESULT_CANCELLED && wf.stream == NULL && rsm_error_code(wf.err) == RSM_RESULT_CANCELLED &&
            strstr(rsm_error_message(wf.err), "cancelled") != NULL,
        "the fetch was cancelled: %d %s", (int)wf.result, rsm_error_message(wf.err));
  CHECK(wc.result == RSM_RESULT_CANCELLED, "the copy was cancelled: %d %s", (int)wc.result, rsm_error_message(wc.err));
  CHECK(strstr(rsm_error_message(wc.err), "not-a-real-secret") == NULL, "no secret in a message");
  CHECK(rsm_operation_cancel(fetch_op) == RSM_RESULT_INVALID_ARGUMENT, "a finished operation cannot be cancelled");
  CHECK(rsm_operation_cancel(NULL) == RSM_RESULT_INVALID_ARGUMENT, "NULL");
  rsm_error_free(wf.err);
  rsm_error_free(wc.err);
  waiter_destroy(&wf);
  waiter_destroy(&wc);
  CHECK(rsm_store_close(store) == RSM_RESULT_OK, "close");

  /* The fetch deadline: against the same silent server, a fetch nobody cancels ends by itself with a
   * transient error naming the segment, so a broker's fetch thread is not held for ever. */
  s3[5].value = "200";
  OK(rsm_store_open(s3, sizeof s3 / sizeof s3[0], &store, ERR));
  waiter_init(&wf);
  OK(rsm_fetch_async(store, &fx->seg[0].md, 0, RSM_END_OF_SEGMENT, on_fetch, &wf, NULL, ERR));
  wait_for(&wf, "a fetch past its deadline");
  CHECK(wf.result == RSM_RESULT_STORAGE_TRANSIENT && wf.stream == NULL &&
            rsm_error_code(wf.err) == RSM_RESULT_STORAGE_TRANSIENT &&
            strstr(rsm_error_message(wf.err), "orders-0") != NULL,
        "the fetch timed out: %d %s", (int)wf.result, rsm_error_message(wf.err));
  rsm_error_free(wf.err);
  waiter_destroy(&wf);
  CHECK(rsm_store_close(store) == RSM_RESULT_OK, "close");
  close(srv);
  expect_no_open_handles();
  remove_tree(dir);
}

/* Copies the segments into WORK/store-readme for the README example, and leaves them there. */
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

static void test_records(const char *fixture_dir, const char *work) {
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
    fprintf(stderr, "usage: %s round_trip|s3_round_trip|errors|threads|async|populate|records FIXTURE_DIR WORK_DIR\n", argv[0]);
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
  else
    CHECK(0, "unknown case %s", argv[1]);
  fixture_free(fx);
  free(fx);
  printf("%s: ok\n", argv[1]);
  return 0;
}
