/* Segments Aiven's plugin stored, read through the C ABI (`aiven.read.enabled`): rsm-c-fixture writes the
 * closed segments of the partition into WORK/aiven-store as that plugin would have (compressed, encrypted under
 * an RSA key pair), under the ids the other cases copy them with. Each reads back whole and from every batch,
 * its offset index exactly, and every batch's offsets to its position, all checked against the partition's
 * files read here. Run as `rsm_test aiven`. */
#include "cases.h"

#define MAX_AIVEN_BATCHES 4096

void test_aiven(fixture *fx, const char *work) {
  char url[1100], key[1100];
  snprintf(url, sizeof url, "file://%s/aiven-store", work);
  snprintf(key, sizeof key, "%s/aiven-key1.pem", work);
  rsm_setting settings[] = {
      {"store.url", url},
      {"fs.fsync", "false"},
      {"aiven.read.enabled", "true"},
      {"aiven.encryption.key.pairs", "key1"},
      {"aiven.encryption.key.pairs.key1.private.key.file", key},
  };
  rsm_store *store = NULL;
  OK(rsm_store_open(settings, sizeof settings / sizeof settings[0], &store, ERR));
  static batch batches[MAX_AIVEN_BATCHES];
  for (size_t i = 0; i < fx->n; i++) {
    const segment *sg = &fx->seg[i];
    bytes log = read_file(sg->log);
    bytes got = fetch(store, &sg->md, 0, RSM_END_OF_SEGMENT, 65536);
    expect_same(got.data, got.len, log.data, log.len, sg->log);
    free(got.data);
    size_t nb = batches_of(&log, batches, MAX_AIVEN_BATCHES);
    for (size_t k = 0; k < nb; k += nb / 9 + 1) {
      got = fetch(store, &sg->md, batches[k].position, RSM_END_OF_SEGMENT, 4093);
      expect_same(got.data, got.len, log.data + batches[k].position, log.len - (size_t)batches[k].position, sg->log);
      free(got.data);
    }
    for (size_t k = 0; k < nb; k++) {
      int64_t p = -2;
      OK(rsm_position_of_offset(store, &sg->md, batches[k].last_offset, &p, ERR));
      CHECK(p == batches[k].position, "%s: offset %lld at %lld, want %lld", sg->log, (long long)batches[k].last_offset,
            (long long)p, (long long)batches[k].position);
    }
    rsm_stream *s = NULL;
    OK(rsm_fetch_index(store, &sg->md, RSM_INDEX_TYPE_OFFSET, &s, ERR));
    bytes index = read_all(s, 777), want = read_file(sg->index);
    expect_same(index.data, index.len, want.data, want.len, sg->index);
    free(index.data);
    free(want.data);
    free(log.data);
  }
  CHECK(rsm_store_close(store) == RSM_RESULT_OK, "close");
  expect_no_open_handles();
}
