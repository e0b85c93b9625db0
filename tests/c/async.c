/* The asynchronous form of librsm: copy, fetch and delete with callbacks, and cancellation of operations that
 * hang (an S3 endpoint that never answers). Run as `rsm_test async`. */
#include "cases.h"

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

void test_async(fixture *fx, const char *work) {
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
