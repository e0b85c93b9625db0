/* What the test cases of rsm_test share beyond common.h: the store every case opens, the copy of the fixture's
 * segments, a whole fetch, and the cases kept in files of their own (async.c, records.c, aiven.c). */
#ifndef RSM_TEST_CASES_H
#define RSM_TEST_CASES_H

#include "common.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>

/* A filesystem store at `url`, with several chunks per segment and several CRC blocks per chunk. */
rsm_store *open_store(const char *url);
/* Copies every closed segment of `fx`. */
void copy_all(rsm_store *store, fixture *fx);
/* Fetches bytes `start..end` of a segment, read `step` bytes at a time. */
bytes fetch(rsm_store *store, const rsm_segment_metadata *md, int64_t start, int64_t end, size_t step);

void test_async(fixture *fx, const char *work);
void test_records(const char *fixture_dir, const char *work);
void test_aiven(fixture *fx, const char *work);

#endif
