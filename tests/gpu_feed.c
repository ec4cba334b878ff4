/* GPU suite for infeed and outfeed (feed.h): values pushed by the host reach a
 * kernel, and what it computed comes back, in order, over replays and eager
 * runs. Skips without a CUDA device. */
#include <stdio.h>

#include "gpu_util.h"

static crec_stream stream;

static void setup(void) {
  REQUIRE_DEVICE();
  EXPECT_OK(crec_stream_create(0, &stream));
}
static void teardown(void) { crec_stream_destroy(stream); }

TestSuite(gpu_feed, .init = setup, .fini = teardown);

enum { N = 256, B = N * 4 };

/* infeed x; x += 1 (t_inc); outfeed x: each execution returns its value plus one */
Test(gpu_feed, values_go_in_and_results_come_out_in_order_over_replays) {
  gt t;
  gt_init(&t, 0);
  crec_buffer x;
  EXPECT_OK(crec_program_add_argument(t.p, "x", B, NULL, &x));
  crec_region body = crec_program_body(t.p);
  crec_feed in = CREC_FEED_INIT, out = CREC_FEED_INIT;
  in.queue = "gpu_feed.in";
  out.queue = "gpu_feed.out";
  EXPECT_OK(crec_program_add_infeed(t.p, body, "in", &in, crec_range_whole(x), NULL));
  crec_arg a[] = {crec_arg_buffer(crec_range_whole(x), CREC_ACCESS_READ_WRITE), crec_arg_i32(N)};
  gt_launch(&t, body, t.inc, N, a, 2);
  EXPECT_OK(crec_program_add_outfeed(t.p, body, "out", &out, crec_range_whole(x), NULL));
  void *dev = gt_alloc(B);
  crec_binding bd[1] = {{dev, B}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 1;
  uint32_t v[N], r[N];
  /* pushes first, as a producer thread would: the host nodes take them in order */
  for (int k = 0; k < 10; k++) {
    for (int i = 0; i < N; i++) v[i] = (uint32_t)(k * 1000 + i);
    EXPECT_OK(crec_infeed_push("gpu_feed.in", v, B, 1000));
  }
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &bs, NULL, &ex));
  for (int k = 0; k < 10; k++) gt_replay(ex, &bs, stream);
  for (int k = 0; k < 10; k++) {
    EXPECT_OK(crec_outfeed_pop("gpu_feed.out", r, B, 10000));
    for (int i = 0; i < N; i++)
      cr_assert_eq(r[i], (uint32_t)(k * 1000 + i) + 1u, "replay %d, element %d: %u", k, i, r[i]);
  }
  EXPECT_OK(crec_stream_synchronize(stream));
  /* an eager run takes the next value too */
  for (int i = 0; i < N; i++) v[i] = 7;
  EXPECT_OK(crec_infeed_push("gpu_feed.in", v, B, 1000));
  gt_eager(t.p, &bs, stream);
  EXPECT_OK(crec_outfeed_pop("gpu_feed.out", r, B, 10000));
  cr_assert_eq(r[0], 8u);
  EXPECT_OK(crec_feed_check("gpu_feed.in", NULL));
  EXPECT_OK(crec_feed_check("gpu_feed.out", NULL));
  crec_exec_destroy(ex);
  crec_device_free(dev);
  crec_program_destroy(t.p);
}
