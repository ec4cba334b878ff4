/* CPU suite for infeed and outfeed (feed.h): the queues (order, sizes,
 * capacity, deadlines, a waiting reader woken by a writer), the commands the
 * builders make, and their host callbacks run here as a host node would run
 * them, errors left on the queue included. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

Test(feed, queues_keep_order_and_sizes_and_say_when_they_wait_too_long) {
  int a = 1, b = 2, got = 0;
  EXPECT_OK(crec_infeed_push("q.order", &a, sizeof a, 0));
  EXPECT_OK(crec_infeed_push("q.order", &b, sizeof b, 0));
  size_t queued = 0;
  EXPECT_OK(crec_feed_check("q.order", &queued));
  cr_assert_eq(queued, 2);
  /* an infeed queue is popped by feed commands; the outfeed side pops the same way */
  EXPECT_OK(crec_outfeed_pop("q.order", &got, sizeof got, 0));
  cr_assert_eq(got, 1, "first in, first out");
  int64_t wide;
  EXPECT_STATUS(crec_outfeed_pop("q.order", &wide, sizeof wide, 0), CREC_ERR_BINDING);
  EXPECT_ERROR_MENTIONS("its next value has 4 bytes, not 8");
  EXPECT_OK(crec_outfeed_pop("q.order", &got, sizeof got, 0));
  cr_assert_eq(got, 2, "a value of another size stays queued");
  EXPECT_STATUS(crec_outfeed_pop("q.order", &got, sizeof got, 20), CREC_ERR_TIMEOUT);
  EXPECT_ERROR_MENTIONS("queue 'q.order' stayed empty for 20 ms");
  EXPECT_OK(crec_feed_set_capacity("q.order", 1));
  EXPECT_OK(crec_infeed_push("q.order", &a, sizeof a, 0));
  EXPECT_STATUS(crec_infeed_push("q.order", &b, sizeof b, 20), CREC_ERR_TIMEOUT);
  EXPECT_ERROR_MENTIONS("queue 'q.order' stayed full (1 values) for 20 ms");
  EXPECT_STATUS(crec_infeed_push("q.order", &a, 0, 0), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_STATUS(crec_infeed_push(NULL, &a, 4, 0), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_feed_set_capacity("q.order", 0), CREC_ERR_INVALID_ARGUMENT);
}

static void *push_later(void *arg) {
  usleep(50 * 1000);
  static const int v = 42;
  (void)arg;
  crec_infeed_push("q.wake", &v, sizeof v, 1000);
  return NULL;
}

Test(feed, a_waiting_pop_wakes_when_a_value_comes) {
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, push_later, NULL), 0);
  int got = 0;
  EXPECT_OK(crec_outfeed_pop("q.wake", &got, sizeof got, 5000));
  cr_assert_eq(got, 42);
  pthread_join(t, NULL);
}

/* A program x -> infeed writes x, outfeed reads x. */
static crec_program *feed_program(crec_buffer *x) {
  crec_program *p;
  EXPECT_OK(crec_program_create(&p));
  EXPECT_OK(crec_program_add_argument(p, "x", 16, NULL, x));
  return p;
}

static crec_host_callback callback_of(const crec_program *p, size_t index) {
  crec_host_callback cb = CREC_HOST_CALLBACK_INIT;
  EXPECT_OK(crec_command_get_host_callback(p, crec_program_command(p, index), &cb));
  cr_assert_not_null(cb.fn_buffers);
  cr_assert_eq(cb.num_operands, 1);
  return cb;
}

Test(feed, an_infeed_is_a_host_callback_into_staging_then_a_copy) {
  crec_buffer x;
  crec_program *p = feed_program(&x);
  crec_feed f = CREC_FEED_INIT;
  f.queue = "q.in";
  f.timeout_ms = 30;
  crec_command c;
  EXPECT_OK(crec_program_add_infeed(p, crec_program_body(p), "in", &f, crec_range_whole(x), &c));
  cr_assert_eq(crec_program_command_count(p), 2);
  crec_command_info h = crec_test_command(p, 0), m = crec_test_command(p, 1);
  cr_assert_eq(h.kind, CREC_COMMAND_HOST);
  cr_assert_str_eq(h.name, "in");
  cr_assert_eq(m.kind, CREC_COMMAND_MEMCPY);
  cr_assert_eq(m.bytes, 16);
  cr_assert_eq(c.id, crec_program_command(p, 1).id, "*out is the copy, after which x holds the value");
  crec_buffer st;
  EXPECT_OK(crec_program_find_buffer(p, "in.staging", &st));
  crec_buffer_info bi;
  EXPECT_OK(crec_buffer_get_info(p, st, &bi));
  cr_assert_eq(bi.memory, CREC_MEMORY_HOST);
  cr_assert_eq(bi.size, 16);
  /* the callback, as a host node runs it: the next value into the staging memory */
  crec_host_callback cb = callback_of(p, 0);
  cr_assert_eq(cb.operands[0].access, CREC_ACCESS_WRITE);
  uint32_t value[4] = {1, 2, 3, 4}, staging[4];
  EXPECT_OK(crec_infeed_push("q.in", value, sizeof value, 0));
  void *addr[1] = {staging};
  cb.fn_buffers(cb.user, addr, 1);
  cr_assert_arr_eq(staging, value, sizeof value);
  /* nothing queued: after its deadline it copies zeros and leaves the error on the queue */
  cb.fn_buffers(cb.user, addr, 1);
  for (int i = 0; i < 4; i++) cr_assert_eq(staging[i], 0);
  size_t queued = 1;
  EXPECT_STATUS(crec_feed_check("q.in", &queued), CREC_ERR_TIMEOUT);
  EXPECT_ERROR_MENTIONS("infeed 'in' (queue 'q.in'): waited 30 ms for a value");
  cr_assert_eq(queued, 0);
  EXPECT_OK(crec_feed_check("q.in", NULL)); /* reported once */
  /* a value of another size is dropped (at the head it would stop every later
   * execution); the push after says so, and the next execution takes its value */
  uint32_t small = 9;
  EXPECT_OK(crec_infeed_push("q.in", &small, sizeof small, 0));
  cb.fn_buffers(cb.user, addr, 1);
  EXPECT_STATUS(crec_infeed_push("q.in", value, sizeof value, 0), CREC_ERR_BINDING);
  EXPECT_ERROR_MENTIONS("the next value had 4 bytes, not 16; it was dropped");
  EXPECT_OK(crec_feed_check("q.in", &queued));
  cr_assert_eq(queued, 0);
  EXPECT_OK(crec_infeed_push("q.in", value, sizeof value, 0));
  cb.fn_buffers(cb.user, addr, 1);
  cr_assert_arr_eq(staging, value, sizeof value);
  crec_program_destroy(p);
}

Test(feed, an_outfeed_is_a_copy_to_staging_then_a_host_callback_that_queues_it) {
  crec_buffer x;
  crec_program *p = feed_program(&x);
  crec_feed f = CREC_FEED_INIT;
  f.queue = "q.out";
  f.timeout_ms = 20;
  crec_command c;
  EXPECT_OK(crec_program_add_outfeed(p, crec_program_body(p), NULL, &f, crec_range_of(x, 8, 8), &c));
  cr_assert_eq(crec_program_command_count(p), 2);
  cr_assert_eq(crec_test_command(p, 0).kind, CREC_COMMAND_MEMCPY);
  cr_assert_eq(crec_test_command(p, 1).kind, CREC_COMMAND_HOST);
  cr_assert_str_eq(crec_test_command(p, 1).name, "outfeed0", "unnamed: after the commands before it");
  crec_host_callback cb = callback_of(p, 1);
  cr_assert_eq(cb.operands[0].access, CREC_ACCESS_READ);
  uint64_t staging = 0x1122334455667788ull, got = 0;
  void *addr[1] = {&staging};
  cb.fn_buffers(cb.user, addr, 1);
  EXPECT_OK(crec_outfeed_pop("q.out", &got, sizeof got, 0));
  cr_assert_eq(got, staging);
  /* full queue: the value is dropped after the deadline, and the next pop says so */
  EXPECT_OK(crec_feed_set_capacity("q.out", 1));
  cb.fn_buffers(cb.user, addr, 1);
  cb.fn_buffers(cb.user, addr, 1);
  EXPECT_STATUS(crec_outfeed_pop("q.out", &got, sizeof got, 0), CREC_ERR_TIMEOUT);
  EXPECT_ERROR_MENTIONS("outfeed 'outfeed0' (queue 'q.out'): waited 20 ms for room on the queue");
  EXPECT_OK(crec_outfeed_pop("q.out", &got, sizeof got, 0));
  crec_program_destroy(p);
}

Test(feed, unnamed_feeds_get_names_of_their_own) {
  crec_buffer x;
  crec_program *p = feed_program(&x);
  crec_feed f = CREC_FEED_INIT;
  f.queue = "q.names";
  EXPECT_OK(crec_program_add_infeed(p, crec_program_body(p), NULL, &f, crec_range_whole(x), NULL));
  EXPECT_OK(crec_program_add_infeed(p, crec_program_body(p), NULL, &f, crec_range_whole(x), NULL));
  cr_assert_str_eq(crec_test_command(p, 0).name, "infeed0");
  cr_assert_str_eq(crec_test_command(p, 2).name, "infeed2");
  crec_program_destroy(p);
}

Test(feed, builders_refuse_what_a_feed_cannot_move) {
  crec_buffer x, dyn, k;
  crec_program *p = feed_program(&x);
  crec_argument_options o = CREC_ARGUMENT_OPTIONS_INIT;
  o.dynamic_size = 1;
  EXPECT_OK(crec_program_add_argument(p, "dyn", 16, &o, &dyn));
  static const float data[4] = {1, 2, 3, 4};
  EXPECT_OK(crec_program_add_constant(p, "k", data, sizeof data, &k));
  crec_region body = crec_program_body(p);
  crec_feed f = CREC_FEED_INIT;
  EXPECT_STATUS(crec_program_add_infeed(p, body, "a", NULL, crec_range_whole(x), NULL), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_program_add_infeed(p, body, "a", &f, crec_range_whole(x), NULL), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("'feed->queue' is NULL");
  f.queue = "";
  EXPECT_STATUS(crec_program_add_infeed(p, body, "a", &f, crec_range_whole(x), NULL), CREC_ERR_INVALID_ARGUMENT);
  f.queue = "q";
  EXPECT_STATUS(crec_program_add_infeed(p, body, "a", &f, crec_range_whole(dyn), NULL), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("a dynamic-size argument");
  EXPECT_STATUS(crec_program_add_infeed(p, body, "a", &f, crec_range_of(x, 8, 16), NULL), CREC_ERR_OUT_OF_RANGE);
  EXPECT_ERROR_MENTIONS("infeed 'a': bytes 8+16 of 'x', which has 16");
  EXPECT_STATUS(crec_program_add_infeed(p, body, "a", &f, crec_range_whole(k), NULL), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("'k' is a constant");
  f.struct_size = 4;
  EXPECT_STATUS(crec_program_add_outfeed(p, body, "a", &f, crec_range_whole(x), NULL), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("CREC_FEED_INIT");
  cr_assert_eq(crec_program_command_count(p), 0, "nothing was added");
  crec_program_destroy(p);
}

/* "crec.infeed" and "crec.outfeed" in MLIR: the same commands, named after the op. */
Test(feed, mlir_feed_ops_lower_to_feed_commands, .init = crec_test_require_mlir) {
  crec_program *p = crec_test_lower_text(
      "func.func @main(%x: memref<16xi32> {crec.name = \"x\"}) {\n"
      "  %h = memref.subview %x[8] [8] [1] : memref<16xi32> to memref<8xi32, strided<[1], offset: 8>>\n"
      "  \"crec.infeed\"(%x) {queue = \"q.mlir.in\", timeout_ms = 5000 : i64} : (memref<16xi32>) -> ()\n"
      "  \"crec.outfeed\"(%h) {queue = \"q.mlir.out\"} : (memref<8xi32, strided<[1], offset: 8>>) -> ()\n"
      "  return\n"
      "}\n");
  cr_assert_eq(crec_program_command_count(p), 4);
  crec_command_kind kinds[4] = {CREC_COMMAND_HOST, CREC_COMMAND_MEMCPY, CREC_COMMAND_MEMCPY, CREC_COMMAND_HOST};
  for (size_t i = 0; i < 4; i++) cr_assert_eq(crec_test_command(p, i).kind, kinds[i], "command %zu", i);
  crec_command_info out_copy = crec_test_command(p, 2);
  crec_test_expect_range(p, out_copy.src, "x", 32, 32);
  /* the infeed's callback fills what the copy then moves: run it as a host node would */
  crec_host_callback cb = callback_of(p, 0);
  int32_t v[16], staging[16];
  for (int i = 0; i < 16; i++) v[i] = i * i;
  EXPECT_OK(crec_infeed_push("q.mlir.in", v, sizeof v, 0));
  void *addr[1] = {staging};
  cb.fn_buffers(cb.user, addr, 1);
  cr_assert_arr_eq(staging, v, sizeof v);
  crec_program_destroy(p);
}

Test(feed, mlir_feed_ops_say_what_they_need, .init = crec_test_require_mlir) {
  crec_program *p = NULL;
  static const char text[] = "func.func @main(%x: memref<16xi32>) {\n"
                             "  \"crec.infeed\"(%x) : (memref<16xi32>) -> ()\n"
                             "  return\n"
                             "}\n";
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  EXPECT_STATUS(crec_lower_mlir_string(text, strlen(text), &o, &p), CREC_ERR_MLIR);
  EXPECT_ERROR_MENTIONS(":2:3: 'crec.infeed': crec.infeed needs a string attribute 'queue'");
  cr_assert_null(p);
}
