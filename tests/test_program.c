/* Validation: every bad input to the builder gives its named status and a
 * message naming the argument, and leaves the program exactly as it was. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

TestSuite(validation, .fini = crec_test_leak_check);

/* A program with kernel "k", argument "x" (256 bytes), temporary "t" (256),
 * constant "c" (64), bound scalars "n" (i32) and "f" (f32). */
typedef struct fixture {
  crec_program *p;
  crec_kernel k;
  crec_buffer x, t, c;
  crec_scalar n, f;
  crec_region body;
} fixture;

static fixture make_fixture(void) {
  fixture fx;
  static const unsigned char data[64] = {0};
  fx.p = crec_test_program(&fx.k);
  EXPECT_OK(crec_program_add_argument(fx.p, "x", 256, NULL, &fx.x));
  EXPECT_OK(crec_program_add_temporary(fx.p, "t", 256, &fx.t));
  EXPECT_OK(crec_program_add_constant(fx.p, "c", data, sizeof data, &fx.c));
  EXPECT_OK(crec_program_add_scalar(fx.p, "n", CREC_TYPE_I32, &fx.n));
  EXPECT_OK(crec_program_add_scalar(fx.p, "f", CREC_TYPE_F32, &fx.f));
  fx.body = crec_program_body(fx.p);
  return fx;
}

/* A second program whose handles must be refused by the first: its items have
 * the same indices as the first's, so only the program part of a handle differs. */
static fixture other_program(void) { return make_fixture(); }

static int host_noop(void *user, const crec_value *in, crec_value *out) {
  (void)user;
  (void)in;
  (void)out;
  return 0;
}

/* Expects add_memcpy(dst, src) to fail with `status` mentioning `needle`, leaving
 * the program unchanged and the output handle 0. */
static void refuse_memcpy(fixture *fx, crec_range dst, crec_range src, crec_status status,
                          const char *needle) {
  crec_command out = {CREC_TEST_GARBAGE_ID};
  EXPECT_REFUSED(fx->p, crec_program_add_memcpy(fx->p, fx->body, "cp", dst, src, &out), status, needle);
  EXPECT_ERROR_MENTIONS("crec_program_add_memcpy: ");
  cr_assert_eq(out.id, 0, "the refused memcpy's handle is 0x%x, not 0", out.id);
}

static void refuse_memset(fixture *fx, crec_range dst, uint32_t value, uint32_t elem,
                          crec_status status, const char *needle) {
  crec_command out = {CREC_TEST_GARBAGE_ID};
  EXPECT_REFUSED(fx->p, crec_program_add_memset(fx->p, fx->body, "set", dst, value, elem, &out),
                 status, needle);
  EXPECT_ERROR_MENTIONS("crec_program_add_memset: ");
  cr_assert_eq(out.id, 0, "the refused memset's handle is 0x%x, not 0", out.id);
}

static void refuse_launch(fixture *fx, const crec_launch *l, crec_status status, const char *needle) {
  crec_command out = {CREC_TEST_GARBAGE_ID};
  EXPECT_REFUSED(fx->p, crec_program_add_launch(fx->p, fx->body, "go", l, &out), status, needle);
  EXPECT_ERROR_MENTIONS("crec_program_add_launch: ");
  cr_assert_eq(out.id, 0, "the refused launch's handle is 0x%x, not 0", out.id);
}

static void refuse_while(fixture *fx, crec_region region, crec_range pred, crec_status status,
                         const char *needle) {
  crec_command out = {CREC_TEST_GARBAGE_ID};
  crec_region cond = {CREC_TEST_GARBAGE_ID}, body = {CREC_TEST_GARBAGE_ID};
  EXPECT_REFUSED(fx->p, crec_program_add_while(fx->p, region, "loop", pred, &out, &cond, &body),
                 status, needle);
  EXPECT_ERROR_MENTIONS("crec_program_add_while: ");
  cr_assert(out.id == 0 && cond.id == 0 && body.id == 0,
            "the refused while left handles 0x%x, 0x%x, 0x%x", out.id, cond.id, body.id);
}

static void refuse_if(fixture *fx, crec_region region, crec_range pred, crec_status status,
                      const char *needle) {
  crec_command out = {CREC_TEST_GARBAGE_ID};
  crec_region then_r = {CREC_TEST_GARBAGE_ID}, else_r = {CREC_TEST_GARBAGE_ID};
  EXPECT_REFUSED(fx->p, crec_program_add_if(fx->p, region, "branch", pred, &out, &then_r, &else_r),
                 status, needle);
  EXPECT_ERROR_MENTIONS("crec_program_add_if: ");
  cr_assert(out.id == 0 && then_r.id == 0 && else_r.id == 0,
            "the refused if left handles 0x%x, 0x%x, 0x%x", out.id, then_r.id, else_r.id);
}

static void refuse_switch(fixture *fx, crec_region region, crec_range index, size_t n,
                          const int32_t *cases, crec_status status, const char *needle) {
  crec_command out = {CREC_TEST_GARBAGE_ID};
  crec_region branches[4] = {{CREC_TEST_GARBAGE_ID}, {CREC_TEST_GARBAGE_ID}, {CREC_TEST_GARBAGE_ID},
                             {CREC_TEST_GARBAGE_ID}};
  EXPECT_REFUSED(fx->p, crec_program_add_switch(fx->p, region, "sw", index, n, cases, &out, branches),
                 status, needle);
  EXPECT_ERROR_MENTIONS("crec_program_add_switch: ");
  cr_assert_eq(out.id, 0, "the refused switch's handle is 0x%x", out.id);
  for (size_t i = 0; i < n && i < 4; i++)
    cr_assert_eq(branches[i].id, 0, "the refused switch left branch %zu as 0x%x", i, branches[i].id);
}

/* Adds a valid memcpy, proving the program still accepts commands after refusals. */
static void still_works(fixture *fx) {
  size_t before = crec_program_command_count(fx->p);
  crec_region_info body;
  EXPECT_OK(crec_region_get_info(fx->p, fx->body, &body));
  crec_command c;
  EXPECT_OK(crec_program_add_memcpy(fx->p, fx->body, "ok", crec_range_of(fx->t, 0, 64),
                                    crec_range_of(fx->x, 0, 64), &c));
  cr_assert_neq(c.id, 0);
  cr_assert_eq(crec_program_command_count(fx->p), before + 1);
  crec_command_info info = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(fx->p, c, &info));
  cr_assert_eq(info.index_in_region, body.num_commands, "the new command is at position %zu of %zu",
               info.index_in_region, body.num_commands);
  cr_assert_eq(crec_region_command(fx->p, fx->body, body.num_commands).id, c.id);
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(fx->p, NULL, &plan));
  crec_plan_destroy(plan);
}

static void done(fixture *fx) {
  still_works(fx);
  crec_program_destroy(fx->p);
  cr_assert_eq(crec_debug_live_objects(), 0, "objects leaked: %lld", (long long)crec_debug_live_objects());
}

/* ---- handles from another program or out of range ---- */

Test(validation, buffer_from_another_program_or_out_of_range) {
  fixture fx = make_fixture(), o = other_program();
  crec_buffer beyond = {fx.c.id + 10}, zero = {0}, garbage = {CREC_TEST_GARBAGE_ID};
  refuse_memcpy(&fx, crec_range_of(o.x, 0, 8), crec_range_of(fx.x, 0, 8), CREC_ERR_INVALID_HANDLE, "'dst'");
  refuse_memcpy(&fx, crec_range_of(fx.x, 0, 8), crec_range_of(o.t, 0, 8), CREC_ERR_INVALID_HANDLE, "'src'");
  refuse_memcpy(&fx, crec_range_of(beyond, 0, 8), crec_range_of(fx.x, 0, 8), CREC_ERR_INVALID_HANDLE, "'dst'");
  refuse_memcpy(&fx, crec_range_of(fx.t, 0, 8), crec_range_of(zero, 0, 8), CREC_ERR_INVALID_HANDLE, "'src'");
  refuse_memcpy(&fx, crec_range_of(garbage, 0, 8), crec_range_of(fx.x, 0, 8), CREC_ERR_INVALID_HANDLE, "'dst'");
  refuse_memset(&fx, crec_range_of(o.t, 0, 8), 0, 1, CREC_ERR_INVALID_HANDLE, "'dst'");
  refuse_while(&fx, fx.body, crec_range_of(o.x, 0, 1), CREC_ERR_INVALID_HANDLE, "'predicate'");
  refuse_if(&fx, fx.body, crec_range_of(beyond, 0, 1), CREC_ERR_INVALID_HANDLE, "'predicate'");
  refuse_switch(&fx, fx.body, crec_range_of(o.x, 0, 4), 2, NULL, CREC_ERR_INVALID_HANDLE, "'index'");

  crec_arg args[2] = {crec_arg_buffer(crec_range_of(fx.x, 0, 8), CREC_ACCESS_READ),
                      crec_arg_buffer(crec_range_of(o.x, 0, 8), CREC_ACCESS_WRITE)};
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = fx.k;
  l.args = args;
  l.num_args = 2;
  refuse_launch(&fx, &l, CREC_ERR_INVALID_HANDLE, "'launch.args[1]'");

  crec_scalar s = {CREC_TEST_GARBAGE_ID};
  EXPECT_REFUSED(fx.p, crec_program_add_size_scalar(fx.p, "sz", o.x, &s), CREC_ERR_INVALID_HANDLE, "'buffer'");
  cr_assert_eq(s.id, 0);
  crec_program_destroy(o.p);
  done(&fx);
}

Test(validation, scalar_from_another_program_or_out_of_range) {
  fixture fx = make_fixture(), o = other_program();
  crec_scalar beyond = {fx.f.id + 7};
  crec_arg args[2] = {crec_arg_scalar(fx.n), crec_arg_scalar(o.n)};
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = fx.k;
  l.args = args;
  l.num_args = 2;
  refuse_launch(&fx, &l, CREC_ERR_INVALID_HANDLE, "'launch.args[1]'");
  args[1] = crec_arg_scalar(beyond);
  refuse_launch(&fx, &l, CREC_ERR_INVALID_HANDLE, "'launch.args[1]'");

  crec_launch d = CREC_LAUNCH_INIT;
  d.kernel = fx.k;
  d.grid[0] = crec_dim_from(o.n);
  refuse_launch(&fx, &d, CREC_ERR_INVALID_HANDLE, "'launch.grid.x'");
  d.grid[0] = crec_dim_of(1);
  d.block[2] = crec_dim_from(beyond);
  refuse_launch(&fx, &d, CREC_ERR_INVALID_HANDLE, "'launch.block.z'");
  d.block[2] = crec_dim_of(1);
  d.shared_bytes = crec_dim_from(o.n);
  refuse_launch(&fx, &d, CREC_ERR_INVALID_HANDLE, "'launch.shared_bytes'");

  crec_scalar derived;
  EXPECT_OK(crec_program_add_derived_scalar(fx.p, "d", CREC_TYPE_I64, &derived));
  crec_scalar in_other[1] = {o.n}, in_ok[1] = {fx.n}, out_other[1] = {o.n}, out_ok[1] = {derived};
  EXPECT_REFUSED(fx.p, crec_program_add_host_function(fx.p, "h", host_noop, NULL, NULL, in_other, 1, out_ok, 1),
                 CREC_ERR_INVALID_HANDLE, "'inputs[0]'");
  EXPECT_REFUSED(fx.p, crec_program_add_host_function(fx.p, "h", host_noop, NULL, NULL, in_ok, 1, out_other, 1),
                 CREC_ERR_INVALID_HANDLE, "'outputs[0]'");
  EXPECT_OK(crec_program_add_host_function(fx.p, "h", host_noop, NULL, NULL, in_ok, 1, out_ok, 1));
  crec_program_destroy(o.p);
  done(&fx);
}

Test(validation, kernel_from_another_program_or_out_of_range) {
  fixture fx = make_fixture(), o = other_program();
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = o.k;
  refuse_launch(&fx, &l, CREC_ERR_INVALID_HANDLE, "'launch.kernel'");
  l.kernel.id = fx.k.id + 1;
  refuse_launch(&fx, &l, CREC_ERR_INVALID_HANDLE, "'launch.kernel'");
  l.kernel.id = 0;
  refuse_launch(&fx, &l, CREC_ERR_INVALID_HANDLE, "'launch.kernel'");
  crec_program_destroy(o.p);
  done(&fx);
}

Test(validation, module_from_another_program_or_out_of_range) {
  fixture fx = make_fixture(), o = other_program();
  crec_module om = crec_program_module(o.p, 0), mine = crec_program_module(fx.p, 0);
  cr_assert_neq(om.id, 0);
  crec_kernel k = {CREC_TEST_GARBAGE_ID};
  EXPECT_REFUSED(fx.p, crec_program_add_kernel(fx.p, om, "k", NULL, &k), CREC_ERR_INVALID_HANDLE, "'module'");
  cr_assert_eq(k.id, 0);
  crec_module beyond = {mine.id + 1};
  EXPECT_REFUSED(fx.p, crec_program_add_kernel(fx.p, beyond, "k", NULL, &k), CREC_ERR_INVALID_HANDLE, "'module'");
  crec_module_info info;
  EXPECT_STATUS(crec_module_get_info(fx.p, om, &info), CREC_ERR_INVALID_HANDLE);
  EXPECT_OK(crec_program_add_kernel(fx.p, mine, "k", NULL, &k));
  cr_assert_neq(k.id, 0);
  crec_program_destroy(o.p);
  done(&fx);
}

Test(validation, region_from_another_program_or_out_of_range) {
  fixture fx = make_fixture(), o = other_program();
  crec_region foreign = crec_program_body(o.p), beyond = {fx.body.id + 1};
  crec_region bad[] = {foreign, beyond, {0}, {CREC_TEST_GARBAGE_ID}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    crec_region r = bad[i];
    crec_command out = {CREC_TEST_GARBAGE_ID};
    EXPECT_REFUSED(fx.p, crec_program_add_memcpy(fx.p, r, NULL, crec_range_of(fx.t, 0, 8), crec_range_of(fx.x, 0, 8), &out),
                   CREC_ERR_INVALID_HANDLE, "'region'");
    cr_assert_eq(out.id, 0);
    EXPECT_REFUSED(fx.p, crec_program_add_memset(fx.p, r, NULL, crec_range_of(fx.t, 0, 8), 0, 1, &out),
                   CREC_ERR_INVALID_HANDLE, "'region'");
    EXPECT_REFUSED(fx.p, crec_program_add_barrier(fx.p, r, NULL, &out), CREC_ERR_INVALID_HANDLE, "'region'");
    crec_launch l = CREC_LAUNCH_INIT;
    l.kernel = fx.k;
    EXPECT_REFUSED(fx.p, crec_program_add_launch(fx.p, r, NULL, &l, &out), CREC_ERR_INVALID_HANDLE, "'region'");
    cr_assert_eq(out.id, 0);
    refuse_while(&fx, r, crec_range_of(fx.x, 0, 1), CREC_ERR_INVALID_HANDLE, "'region'");
    refuse_if(&fx, r, crec_range_of(fx.x, 0, 1), CREC_ERR_INVALID_HANDLE, "'region'");
    refuse_switch(&fx, r, crec_range_of(fx.x, 0, 4), 3, NULL, CREC_ERR_INVALID_HANDLE, "'region'");
  }
  /* regions of this program's own control flow are accepted */
  crec_command w;
  crec_region cond, body;
  EXPECT_OK(crec_program_add_while(fx.p, fx.body, NULL, crec_range_of(fx.x, 0, 1), &w, &cond, &body));
  crec_command in_body;
  EXPECT_OK(crec_program_add_barrier(fx.p, body, NULL, &in_body));
  crec_program_destroy(o.p);
  done(&fx);
}

/* ---- byte ranges ---- */

Test(validation, range_beyond_its_buffer) {
  fixture fx = make_fixture();
  refuse_memcpy(&fx, crec_range_of(fx.x, 200, 64), crec_range_of(fx.t, 0, 64), CREC_ERR_OUT_OF_RANGE, "'dst'");
  EXPECT_ERROR_MENTIONS("offset 200 + size 64 exceeds buffer size 256");
  EXPECT_ERROR_MENTIONS("buffer 'x'");
  refuse_memcpy(&fx, crec_range_of(fx.x, 0, 64), crec_range_of(fx.c, 32, 64), CREC_ERR_OUT_OF_RANGE, "'src'");
  refuse_memcpy(&fx, crec_range_of(fx.x, 256, 1), crec_range_of(fx.t, 0, 1), CREC_ERR_OUT_OF_RANGE, "'dst'");
  refuse_memcpy(&fx, crec_range_of(fx.x, 0, 1), crec_range_of(fx.t, 256, CREC_WHOLE), CREC_ERR_OUT_OF_RANGE, "'src'");
  /* an offset + size that wraps around 64 bits is beyond the buffer too */
  refuse_memcpy(&fx, crec_range_of(fx.x, 16, UINT64_MAX - 8), crec_range_of(fx.t, 0, 1), CREC_ERR_OUT_OF_RANGE, "'dst'");
  refuse_memset(&fx, crec_range_of(fx.t, 255, 2), 0, 1, CREC_ERR_OUT_OF_RANGE, "'dst'");
  refuse_while(&fx, fx.body, crec_range_of(fx.x, 256, 1), CREC_ERR_OUT_OF_RANGE, "'predicate'");
  refuse_switch(&fx, fx.body, crec_range_of(fx.t, 256, 4), 2, NULL, CREC_ERR_OUT_OF_RANGE, "'index'");

  crec_arg args[1] = {crec_arg_buffer(crec_range_of(fx.x, 1, 256), CREC_ACCESS_READ)};
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = fx.k;
  l.args = args;
  l.num_args = 1;
  refuse_launch(&fx, &l, CREC_ERR_OUT_OF_RANGE, "'launch.args[0]'");
  /* the last byte, and the whole buffer, are fine */
  crec_command c;
  args[0] = crec_arg_buffer(crec_range_of(fx.x, 255, 1), CREC_ACCESS_READ);
  EXPECT_OK(crec_program_add_launch(fx.p, fx.body, NULL, &l, &c));
  args[0] = crec_arg_buffer(crec_range_whole(fx.x), CREC_ACCESS_READ);
  EXPECT_OK(crec_program_add_launch(fx.p, fx.body, NULL, &l, &c));
  done(&fx);
}

Test(validation, range_of_a_dynamic_buffer_must_not_wrap) {
  fixture fx = make_fixture();
  crec_argument_options o = CREC_ARGUMENT_OPTIONS_INIT;
  o.dynamic_size = 1;
  crec_buffer d;
  EXPECT_OK(crec_program_add_argument(fx.p, "d", 64, &o, &d));
  /* past the minimum size is fine (checked against each binding), but no buffer
   * reaches beyond 2^64 bytes */
  refuse_memcpy(&fx, crec_range_of(d, UINT64_MAX - 8, 16), crec_range_of(fx.x, 0, 16), CREC_ERR_OUT_OF_RANGE, "'dst'");
  EXPECT_ERROR_MENTIONS("buffer 'd'");
  refuse_memset(&fx, crec_range_of(d, 8, UINT64_MAX - 4), 0, 1, CREC_ERR_OUT_OF_RANGE, "'dst'");
  crec_arg args[1] = {crec_arg_buffer(crec_range_of(d, 1ull << 63, 1ull << 63), CREC_ACCESS_WRITE)};
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = fx.k;
  l.args = args;
  l.num_args = 1;
  refuse_launch(&fx, &l, CREC_ERR_OUT_OF_RANGE, "'launch.args[0]'");
  crec_command c;
  args[0] = crec_arg_buffer(crec_range_of(d, 1 << 20, 4096), CREC_ACCESS_WRITE);
  EXPECT_OK(crec_program_add_launch(fx.p, fx.body, NULL, &l, &c));
  args[0] = crec_arg_buffer(crec_range_of(d, UINT64_MAX - 16, CREC_WHOLE), CREC_ACCESS_WRITE);
  EXPECT_OK(crec_program_add_launch(fx.p, fx.body, NULL, &l, &c));
  done(&fx);
}

Test(validation, handles_of_a_live_program_stay_foreign_to_later_programs, .timeout = 60) {
  /* programs come and go (a cache, a server); a live program's handles must
   * never become valid in another program */
  fixture fx = make_fixture();
  for (int i = 0; i < 5000; i++) {
    crec_program *q = NULL;
    EXPECT_OK(crec_program_create(&q));
    crec_buffer t;
    crec_command c = {CREC_TEST_GARBAGE_ID};
    EXPECT_OK(crec_program_add_temporary(q, "t", 256, &t));
    cr_assert_eq(crec_handle_index(t.id), crec_handle_index(fx.x.id));
    crec_status s = crec_program_add_memcpy(q, crec_program_body(q), NULL, crec_range_of(t, 0, 8),
                                            crec_range_of(fx.x, 0, 8), &c);
    cr_assert_eq(s, CREC_ERR_INVALID_HANDLE, "program %d took a buffer of another live program (%s)", i,
                 crec_status_name(s));
    cr_assert_eq(crec_program_body(q).id == fx.body.id, 0, "program %d has the same body handle", i);
    crec_program_destroy(q);
  }
  done(&fx);
}

Test(validation, memcpy_sizes_and_destinations) {
  fixture fx = make_fixture();
  refuse_memcpy(&fx, crec_range_of(fx.x, 0, 16), crec_range_of(fx.t, 0, 8), CREC_ERR_INVALID_ARGUMENT, "sizes differ");
  EXPECT_ERROR_MENTIONS("'dst'");
  EXPECT_ERROR_MENTIONS("'src'");
  refuse_memcpy(&fx, crec_range_of(fx.x, 0, 0), crec_range_of(fx.t, 0, 0), CREC_ERR_INVALID_ARGUMENT, "'dst'");
  refuse_memcpy(&fx, crec_range_of(fx.c, 0, 8), crec_range_of(fx.t, 0, 8), CREC_ERR_INVALID_ARGUMENT, "'dst'");
  EXPECT_ERROR_MENTIONS("constant");
  /* a whole destination smaller than an explicit source */
  refuse_memcpy(&fx, crec_range_of(fx.x, 250, CREC_WHOLE), crec_range_of(fx.t, 0, 8), CREC_ERR_OUT_OF_RANGE, "'dst'");
  /* two whole ranges of different remaining sizes */
  refuse_memcpy(&fx, crec_range_whole(fx.x), crec_range_whole(fx.c), CREC_ERR_INVALID_ARGUMENT, "sizes differ");
  /* overlapping ranges of one buffer have no defined copy */
  refuse_memcpy(&fx, crec_range_of(fx.x, 8, 16), crec_range_of(fx.x, 0, 16), CREC_ERR_INVALID_ARGUMENT, "overlap in buffer 'x'");
  refuse_memcpy(&fx, crec_range_of(fx.x, 0, CREC_WHOLE), crec_range_of(fx.x, 8, 16), CREC_ERR_INVALID_ARGUMENT, "overlap");
  /* a whole range takes the other's size */
  crec_command c;
  EXPECT_OK(crec_program_add_memcpy(fx.p, fx.body, NULL, crec_range_of(fx.x, 16, 16), crec_range_of(fx.x, 0, 16), &c));
  crec_command_info info = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_program_add_memcpy(fx.p, fx.body, NULL, crec_range_of(fx.x, 8, CREC_WHOLE), crec_range_of(fx.c, 0, 48), &c));
  EXPECT_OK(crec_command_get_info(fx.p, c, &info));
  cr_assert_eq(info.bytes, 48);
  cr_assert_eq(info.dst.size, 48);
  EXPECT_OK(crec_program_add_memcpy(fx.p, fx.body, NULL, crec_range_of(fx.x, 0, 64), crec_range_whole(fx.c), &c));
  EXPECT_OK(crec_command_get_info(fx.p, c, &info));
  cr_assert_eq(info.bytes, 64);
  EXPECT_OK(crec_program_add_memcpy(fx.p, fx.body, NULL, crec_range_whole(fx.t), crec_range_whole(fx.x), &c));
  EXPECT_OK(crec_command_get_info(fx.p, c, &info));
  cr_assert_eq(info.bytes, 256);
  done(&fx);
}

/* ---- memset ---- */

Test(validation, memset_element_size_and_value) {
  fixture fx = make_fixture();
  const uint32_t bad_sizes[] = {0, 3, 8, 16};
  for (size_t i = 0; i < sizeof bad_sizes / sizeof *bad_sizes; i++)
    refuse_memset(&fx, crec_range_of(fx.t, 0, 16), 0, bad_sizes[i], CREC_ERR_INVALID_ARGUMENT, "'element_size'");
  refuse_memset(&fx, crec_range_of(fx.t, 0, 16), 0x100, 1, CREC_ERR_INVALID_ARGUMENT, "'value'");
  refuse_memset(&fx, crec_range_of(fx.t, 0, 16), 0x10000, 2, CREC_ERR_INVALID_ARGUMENT, "'value'");
  refuse_memset(&fx, crec_range_of(fx.t, 0, 6), 0, 4, CREC_ERR_INVALID_ARGUMENT, "'dst'");
  refuse_memset(&fx, crec_range_of(fx.c, 0, 4), 0, 4, CREC_ERR_INVALID_ARGUMENT, "'dst'");
  crec_command c;
  EXPECT_OK(crec_program_add_memset(fx.p, fx.body, NULL, crec_range_of(fx.t, 0, 16), 0xff, 1, &c));
  EXPECT_OK(crec_program_add_memset(fx.p, fx.body, NULL, crec_range_of(fx.t, 0, 16), 0xffff, 2, &c));
  EXPECT_OK(crec_program_add_memset(fx.p, fx.body, NULL, crec_range_of(fx.t, 0, 16), 0xffffffffu, 4, &c));
  crec_command_info info = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(fx.p, c, &info));
  cr_assert_eq(info.memset_value, 0xffffffffu);
  cr_assert_eq(info.memset_element_size, 4);
  cr_assert_eq(info.bytes, 16);
  done(&fx);
}

Test(validation, memset_misaligned_destination) {
  fixture fx = make_fixture();
  refuse_memset(&fx, crec_range_of(fx.x, 2, 4), 0, 4, CREC_ERR_MISALIGNED, "'dst'");
  EXPECT_ERROR_MENTIONS("offset 2");
  refuse_memset(&fx, crec_range_of(fx.x, 1, 2), 0, 2, CREC_ERR_MISALIGNED, "'dst'");
  /* an argument whose bound pointer need only be 2-byte aligned cannot take 4-byte elements */
  crec_argument_options o = CREC_ARGUMENT_OPTIONS_INIT;
  o.alignment = 2;
  crec_buffer loose;
  EXPECT_OK(crec_program_add_argument(fx.p, "loose", 64, &o, &loose));
  refuse_memset(&fx, crec_range_of(loose, 0, 8), 0, 4, CREC_ERR_MISALIGNED, "'dst'");
  EXPECT_ERROR_MENTIONS("alignment 2");
  crec_command c;
  EXPECT_OK(crec_program_add_memset(fx.p, fx.body, NULL, crec_range_of(loose, 2, 8), 0, 2, &c));
  EXPECT_OK(crec_program_add_memset(fx.p, fx.body, NULL, crec_range_of(fx.x, 4, 8), 0, 4, &c));
  done(&fx);
}

Test(validation, memset_host_destination) {
  fixture fx = make_fixture();
  crec_argument_options o = CREC_ARGUMENT_OPTIONS_INIT;
  o.memory = CREC_MEMORY_HOST;
  crec_buffer h;
  EXPECT_OK(crec_program_add_argument(fx.p, "h", 64, &o, &h));
  refuse_memset(&fx, crec_range_of(h, 0, 8), 0, 1, CREC_ERR_INVALID_ARGUMENT, "'dst'");
  EXPECT_ERROR_MENTIONS("host memory");
  /* memcpy may touch host memory */
  crec_command c;
  EXPECT_OK(crec_program_add_memcpy(fx.p, fx.body, NULL, crec_range_of(fx.x, 0, 64), crec_range_whole(h), &c));
  done(&fx);
}

/* ---- control flow ---- */

Test(validation, predicate_smaller_than_one_byte) {
  fixture fx = make_fixture();
  refuse_while(&fx, fx.body, crec_range_of(fx.x, 0, 0), CREC_ERR_OUT_OF_RANGE, "'predicate'");
  refuse_if(&fx, fx.body, crec_range_of(fx.t, 8, 0), CREC_ERR_OUT_OF_RANGE, "'predicate'");
  /* one byte is enough, anywhere in the buffer */
  crec_command w;
  crec_region a, b;
  EXPECT_OK(crec_program_add_while(fx.p, fx.body, NULL, crec_range_of(fx.x, 255, 1), &w, &a, &b));
  crec_command_info info = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(fx.p, w, &info));
  cr_assert_eq(info.predicate.offset, 255);
  cr_assert_eq(info.predicate.size, 1);
  EXPECT_OK(crec_program_add_if(fx.p, b, NULL, crec_range_whole(fx.c), &w, &a, &b));
  EXPECT_OK(crec_command_get_info(fx.p, w, &info));
  cr_assert_eq(info.predicate.size, 1, "an if reads one byte of its predicate, not %llu",
               (unsigned long long)info.predicate.size);
  done(&fx);
}

Test(validation, predicate_in_host_memory) {
  fixture fx = make_fixture();
  crec_argument_options o = CREC_ARGUMENT_OPTIONS_INIT;
  o.memory = CREC_MEMORY_HOST;
  crec_buffer h;
  EXPECT_OK(crec_program_add_argument(fx.p, "h", 64, &o, &h));
  refuse_while(&fx, fx.body, crec_range_of(h, 0, 1), CREC_ERR_INVALID_ARGUMENT, "'predicate'");
  refuse_if(&fx, fx.body, crec_range_of(h, 0, 1), CREC_ERR_INVALID_ARGUMENT, "'predicate'");
  refuse_switch(&fx, fx.body, crec_range_of(h, 0, 4), 2, NULL, CREC_ERR_INVALID_ARGUMENT, "'index'");
  done(&fx);
}

Test(validation, switch_without_branches) {
  fixture fx = make_fixture();
  refuse_switch(&fx, fx.body, crec_range_of(fx.x, 0, 4), 0, NULL, CREC_ERR_INVALID_ARGUMENT, "'num_branches'");
  crec_command s;
  crec_region only;
  EXPECT_OK(crec_program_add_switch(fx.p, fx.body, NULL, crec_range_of(fx.x, 0, 4), 1, NULL, &s, &only));
  cr_assert_neq(only.id, 0);
  done(&fx);
}

Test(validation, switch_repeated_case_values) {
  fixture fx = make_fixture();
  const int32_t repeated[] = {5, 7, 5};
  refuse_switch(&fx, fx.body, crec_range_of(fx.x, 0, 4), 4, repeated, CREC_ERR_INVALID_ARGUMENT, "'case_values'");
  EXPECT_ERROR_MENTIONS("5");
  const int32_t adjacent[] = {-1, -1, 3};
  refuse_switch(&fx, fx.body, crec_range_of(fx.x, 0, 4), 4, adjacent, CREC_ERR_INVALID_ARGUMENT, "'case_values'");
  /* only the first n-1 values are cases: the default has none */
  const int32_t fine[] = {5, 7, 9, 5};
  crec_command s;
  crec_region br[4];
  EXPECT_OK(crec_program_add_switch(fx.p, fx.body, NULL, crec_range_of(fx.x, 0, 4), 4, fine, &s, br));
  crec_command_info info = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(fx.p, s, &info));
  cr_assert_eq(info.num_regions, 4);
  cr_assert_not_null(info.case_values);
  cr_assert(info.case_values[0] == 5 && info.case_values[1] == 7 && info.case_values[2] == 9);
  done(&fx);
}

Test(validation, switch_index_too_small_or_misaligned) {
  fixture fx = make_fixture();
  refuse_switch(&fx, fx.body, crec_range_of(fx.x, 0, 2), 2, NULL, CREC_ERR_OUT_OF_RANGE, "'index'");
  EXPECT_ERROR_MENTIONS("2 bytes");
  refuse_switch(&fx, fx.body, crec_range_of(fx.x, 0, 0), 2, NULL, CREC_ERR_OUT_OF_RANGE, "'index'");
  refuse_switch(&fx, fx.body, crec_range_of(fx.x, 254, CREC_WHOLE), 2, NULL, CREC_ERR_OUT_OF_RANGE, "'index'");
  refuse_switch(&fx, fx.body, crec_range_of(fx.x, 2, 4), 2, NULL, CREC_ERR_MISALIGNED, "'index'");
  crec_argument_options o = CREC_ARGUMENT_OPTIONS_INIT;
  o.alignment = 2;
  crec_buffer loose;
  EXPECT_OK(crec_program_add_argument(fx.p, "loose", 64, &o, &loose));
  refuse_switch(&fx, fx.body, crec_range_of(loose, 0, 4), 2, NULL, CREC_ERR_MISALIGNED, "'index'");
  crec_command s;
  crec_region br[2];
  EXPECT_OK(crec_program_add_switch(fx.p, fx.body, NULL, crec_range_of(fx.x, 252, CREC_WHOLE), 2, NULL, &s, br));
  crec_command_info info = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(fx.p, s, &info));
  cr_assert_eq(info.predicate.offset, 252);
  cr_assert_eq(info.predicate.size, 4);
  done(&fx);
}

/* ---- kernel parameters ---- */

static crec_arg *buffer_args(fixture *fx, size_t n) {
  crec_arg *a = calloc(n, sizeof *a);
  cr_assert_not_null(a);
  for (size_t i = 0; i < n; i++) a[i] = crec_arg_buffer(crec_range_of(fx->x, i % 256, 1), CREC_ACCESS_READ);
  return a;
}

Test(validation, param_bytes_many_arguments) {
  fixture fx = make_fixture();
  crec_arg *args = buffer_args(&fx, 513);
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = fx.k;
  l.args = args;
  l.num_args = 513; /* 4104 bytes of pointers */
  refuse_launch(&fx, &l, CREC_ERR_TOO_LARGE, "'launch.args'");
  EXPECT_ERROR_MENTIONS("4104");
  l.num_args = 512; /* exactly 4096 */
  crec_command c;
  EXPECT_OK(crec_program_add_launch(fx.p, fx.body, NULL, &l, &c));
  crec_command_info info = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(fx.p, c, &info));
  cr_assert_eq(info.num_args, 512);
  free(args);
  done(&fx);
}

Test(validation, param_bytes_count_alignment_padding) {
  fixture fx = make_fixture();
  crec_arg *args = buffer_args(&fx, 513);
  /* an i32, then 511 pointers aligned to 8: 4 + 4 padding + 4088 = 4096 */
  args[0] = crec_arg_i32(1);
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = fx.k;
  l.args = args;
  l.num_args = 512;
  crec_command c;
  EXPECT_OK(crec_program_add_launch(fx.p, fx.body, NULL, &l, &c));
  /* one more i32 makes 4100, though the unpadded sizes sum to 4096 */
  args[512] = crec_arg_i32(2);
  l.num_args = 513;
  refuse_launch(&fx, &l, CREC_ERR_TOO_LARGE, "'launch.args'");
  free(args);
  done(&fx);
}

Test(validation, param_bytes_one_big_immediate) {
  fixture fx = make_fixture();
  unsigned char *blob = calloc(5000, 1);
  cr_assert_not_null(blob);
  crec_arg args[2] = {crec_arg_bytes(blob, 4096), crec_arg_i32(7)};
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = fx.k;
  l.args = args;
  l.num_args = 2;
  refuse_launch(&fx, &l, CREC_ERR_TOO_LARGE, "'launch.args'");
  args[0] = crec_arg_i32(7);
  args[1] = crec_arg_bytes(blob, 4092); /* 4 + 4092 = 4096 with 4-byte alignment */
  crec_command c;
  EXPECT_OK(crec_program_add_launch(fx.p, fx.body, NULL, &l, &c));
  args[1] = crec_arg_bytes(blob, 4096);
  refuse_launch(&fx, &l, CREC_ERR_TOO_LARGE, "'launch.args'");
  /* an immediate above the limit on its own is not a valid immediate */
  args[0] = crec_arg_bytes(blob, 4097);
  l.num_args = 1;
  refuse_launch(&fx, &l, CREC_ERR_INVALID_ARGUMENT, "'launch.args[0]'");
  args[0] = crec_arg_bytes(blob, 4096);
  EXPECT_OK(crec_program_add_launch(fx.p, fx.body, NULL, &l, &c));
  free(blob);
  done(&fx);
}

Test(validation, bad_kernel_arguments) {
  fixture fx = make_fixture();
  unsigned char blob[16] = {0};
  crec_arg args[1];
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = fx.k;
  l.args = args;
  l.num_args = 1;
  args[0] = crec_arg_bytes(blob, 0);
  refuse_launch(&fx, &l, CREC_ERR_INVALID_ARGUMENT, "'launch.args[0]'");
  args[0] = crec_arg_bytes(NULL, 16);
  refuse_launch(&fx, &l, CREC_ERR_NULL_POINTER, "'launch.args[0]'");
  args[0] = crec_arg_i32(1);
  args[0].size = 8; /* labelled i32 but 8 bytes */
  refuse_launch(&fx, &l, CREC_ERR_TYPE_MISMATCH, "'launch.args[0]'");
  args[0] = crec_arg_buffer(crec_range_of(fx.x, 0, 8), (crec_access)0);
  refuse_launch(&fx, &l, CREC_ERR_INVALID_ARGUMENT, "'launch.args[0]'");
  args[0] = crec_arg_buffer(crec_range_of(fx.x, 0, 8), (crec_access)4);
  refuse_launch(&fx, &l, CREC_ERR_INVALID_ARGUMENT, "'launch.args[0]'");
  args[0] = crec_arg_buffer(crec_range_of(fx.x, 0, 0), CREC_ACCESS_READ);
  refuse_launch(&fx, &l, CREC_ERR_INVALID_ARGUMENT, "'launch.args[0]'");
  args[0] = crec_arg_buffer(crec_range_of(fx.c, 0, 8), CREC_ACCESS_READ_WRITE);
  refuse_launch(&fx, &l, CREC_ERR_INVALID_ARGUMENT, "'launch.args[0]': buffer 'c' is a constant");
  args[0].kind = (crec_arg_kind)9;
  refuse_launch(&fx, &l, CREC_ERR_INVALID_ARGUMENT, "'launch.args[0]'");
  l.args = NULL;
  refuse_launch(&fx, &l, CREC_ERR_NULL_POINTER, "'launch.args'");
  done(&fx);
}

/* ---- launch dimensions ---- */

Test(validation, zero_dims) {
  fixture fx = make_fixture();
  static const char *const names[2][3] = {{"'launch.grid.x'", "'launch.grid.y'", "'launch.grid.z'"},
                                          {"'launch.block.x'", "'launch.block.y'", "'launch.block.z'"}};
  for (int g = 0; g < 2; g++)
    for (int axis = 0; axis < 3; axis++) {
      crec_launch l = CREC_LAUNCH_INIT;
      l.kernel = fx.k;
      (g ? l.block : l.grid)[axis] = crec_dim_of(0);
      refuse_launch(&fx, &l, CREC_ERR_INVALID_ARGUMENT, names[g][axis]);
    }
  done(&fx);
}

Test(validation, float_scalar_as_dim) {
  fixture fx = make_fixture();
  crec_scalar d;
  EXPECT_OK(crec_program_add_scalar(fx.p, "d", CREC_TYPE_F64, &d));
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = fx.k;
  l.grid[0] = crec_dim_from(fx.f);
  refuse_launch(&fx, &l, CREC_ERR_TYPE_MISMATCH, "'launch.grid.x'");
  EXPECT_ERROR_MENTIONS("'f'");
  l.grid[0] = crec_dim_of(1);
  l.block[1] = crec_dim_from(d);
  refuse_launch(&fx, &l, CREC_ERR_TYPE_MISMATCH, "'launch.block.y'");
  l.block[1] = crec_dim_of(1);
  l.shared_bytes = crec_dim_from(fx.f);
  refuse_launch(&fx, &l, CREC_ERR_TYPE_MISMATCH, "'launch.shared_bytes'");
  /* integer scalars of either width are fine */
  crec_scalar wide;
  EXPECT_OK(crec_program_add_scalar(fx.p, "wide", CREC_TYPE_I64, &wide));
  l.shared_bytes = crec_dim_from(fx.n);
  l.grid[0] = crec_dim_from(wide);
  l.block[0] = crec_dim_from(fx.n);
  crec_command c;
  EXPECT_OK(crec_program_add_launch(fx.p, fx.body, NULL, &l, &c));
  done(&fx);
}

Test(validation, dims_above_cuda_limits) {
  fixture fx = make_fixture();
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = fx.k;
  l.block[0] = crec_dim_of(1025);
  refuse_launch(&fx, &l, CREC_ERR_OUT_OF_RANGE, "'launch.block.x'");
  l.block[0] = crec_dim_of(64);
  l.block[1] = crec_dim_of(32);
  refuse_launch(&fx, &l, CREC_ERR_OUT_OF_RANGE, "'launch.block'");
  EXPECT_ERROR_MENTIONS("2048 threads");
  l.block[1] = crec_dim_of(16);
  l.grid[1] = crec_dim_of(65536);
  refuse_launch(&fx, &l, CREC_ERR_OUT_OF_RANGE, "'launch.grid.y'");
  l.grid[1] = crec_dim_of(65535);
  l.grid[0] = crec_dim_of(0x7fffffffu);
  crec_command c;
  EXPECT_OK(crec_program_add_launch(fx.p, fx.body, NULL, &l, &c));
  done(&fx);
}

Test(validation, dynamic_shared_memory_above_the_kernels) {
  fixture fx = make_fixture();
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = fx.k;
  l.shared_bytes = crec_dim_of(48 * 1024 + 1);
  refuse_launch(&fx, &l, CREC_ERR_TOO_LARGE, "'launch.shared_bytes'");
  crec_kernel_options ko = CREC_KERNEL_OPTIONS_INIT;
  ko.shared_bytes = 100 * 1024;
  crec_kernel big;
  EXPECT_OK(crec_program_add_kernel(fx.p, crec_program_module(fx.p, 0), "k", &ko, &big));
  l.kernel = big;
  crec_command c;
  EXPECT_OK(crec_program_add_launch(fx.p, fx.body, NULL, &l, &c));
  l.shared_bytes = crec_dim_of(100 * 1024 + 1);
  refuse_launch(&fx, &l, CREC_ERR_TOO_LARGE, "'launch.shared_bytes'");
  done(&fx);
}

/* ---- NULL pointers and names ---- */

Test(validation, null_program_and_outputs) {
  fixture fx = make_fixture();
  crec_buffer b;
  crec_scalar s;
  crec_command c;
  crec_region r1, r2;
  EXPECT_STATUS(crec_program_create(NULL), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("'out'");
  EXPECT_STATUS(crec_program_add_argument(NULL, "a", 8, NULL, &b), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("'program'");
  cr_assert_eq(b.id, 0);
  EXPECT_STATUS(crec_program_add_temporary(NULL, "a", 8, &b), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("'program'");
  EXPECT_STATUS(crec_program_add_scalar(NULL, "a", CREC_TYPE_I32, &s), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("'program'");
  EXPECT_STATUS(crec_program_add_barrier(NULL, fx.body, NULL, &c), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("'program'");
  EXPECT_STATUS(crec_program_add_while(NULL, fx.body, NULL, crec_range_of(fx.x, 0, 1), &c, &r1, &r2),
                CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("'program'");

  EXPECT_REFUSED(fx.p, crec_program_add_argument(fx.p, "a", 8, NULL, NULL), CREC_ERR_NULL_POINTER, "'out'");
  EXPECT_REFUSED(fx.p, crec_program_add_temporary(fx.p, "a", 8, NULL), CREC_ERR_NULL_POINTER, "'out'");
  EXPECT_REFUSED(fx.p, crec_program_add_constant(fx.p, "a", "abc", 3, NULL), CREC_ERR_NULL_POINTER, "'out'");
  EXPECT_REFUSED(fx.p, crec_program_add_scalar(fx.p, "a", CREC_TYPE_I32, NULL), CREC_ERR_NULL_POINTER, "'out'");
  EXPECT_REFUSED(fx.p, crec_program_add_derived_scalar(fx.p, "a", CREC_TYPE_I32, NULL), CREC_ERR_NULL_POINTER, "'out'");
  EXPECT_REFUSED(fx.p, crec_program_add_size_scalar(fx.p, "a", fx.x, NULL), CREC_ERR_NULL_POINTER, "'out'");
  EXPECT_REFUSED(fx.p, crec_program_add_module(fx.p, "m2", CREC_IMAGE_PTX, crec_test_ptx, strlen(crec_test_ptx), NULL),
                 CREC_ERR_NULL_POINTER, "'out'");
  EXPECT_REFUSED(fx.p, crec_program_add_kernel(fx.p, crec_program_module(fx.p, 0), "k", NULL, NULL),
                 CREC_ERR_NULL_POINTER, "'out'");
  EXPECT_REFUSED(fx.p, crec_program_add_barrier(fx.p, fx.body, NULL, NULL), CREC_ERR_NULL_POINTER, "'out'");
  EXPECT_REFUSED(fx.p, crec_program_add_memcpy(fx.p, fx.body, NULL, crec_range_of(fx.t, 0, 1), crec_range_of(fx.x, 0, 1), NULL),
                 CREC_ERR_NULL_POINTER, "'out'");
  EXPECT_REFUSED(fx.p, crec_program_add_memset(fx.p, fx.body, NULL, crec_range_of(fx.t, 0, 1), 0, 1, NULL),
                 CREC_ERR_NULL_POINTER, "'out'");
  EXPECT_REFUSED(fx.p, crec_program_add_launch(fx.p, fx.body, NULL, NULL, &c), CREC_ERR_NULL_POINTER, "'launch'");
  cr_assert_eq(c.id, 0);
  EXPECT_REFUSED(fx.p, crec_program_add_while(fx.p, fx.body, NULL, crec_range_of(fx.x, 0, 1), &c, NULL, &r2),
                 CREC_ERR_NULL_POINTER, "'cond_out'");
  EXPECT_REFUSED(fx.p, crec_program_add_while(fx.p, fx.body, NULL, crec_range_of(fx.x, 0, 1), &c, &r1, NULL),
                 CREC_ERR_NULL_POINTER, "'body_out'");
  EXPECT_REFUSED(fx.p, crec_program_add_if(fx.p, fx.body, NULL, crec_range_of(fx.x, 0, 1), &c, NULL, &r2),
                 CREC_ERR_NULL_POINTER, "'then_out'");
  EXPECT_REFUSED(fx.p, crec_program_add_if(fx.p, fx.body, NULL, crec_range_of(fx.x, 0, 1), &c, &r1, NULL),
                 CREC_ERR_NULL_POINTER, "'else_out'");
  EXPECT_REFUSED(fx.p, crec_program_add_switch(fx.p, fx.body, NULL, crec_range_of(fx.x, 0, 4), 2, NULL, &c, NULL),
                 CREC_ERR_NULL_POINTER, "'branches_out'");
  cr_assert_eq(c.id, 0);
  done(&fx);
}

Test(validation, null_and_empty_names) {
  fixture fx = make_fixture();
  crec_buffer b = {CREC_TEST_GARBAGE_ID};
  crec_scalar s = {CREC_TEST_GARBAGE_ID};
  crec_module m = {CREC_TEST_GARBAGE_ID};
  crec_kernel k = {CREC_TEST_GARBAGE_ID};
  EXPECT_REFUSED(fx.p, crec_program_add_argument(fx.p, NULL, 8, NULL, &b), CREC_ERR_NULL_POINTER, "'name'");
  cr_assert_eq(b.id, 0);
  b.id = CREC_TEST_GARBAGE_ID;
  EXPECT_REFUSED(fx.p, crec_program_add_temporary(fx.p, NULL, 8, &b), CREC_ERR_NULL_POINTER, "'name'");
  cr_assert_eq(b.id, 0);
  EXPECT_REFUSED(fx.p, crec_program_add_constant(fx.p, NULL, "abc", 3, &b), CREC_ERR_NULL_POINTER, "'name'");
  EXPECT_REFUSED(fx.p, crec_program_add_scalar(fx.p, NULL, CREC_TYPE_I32, &s), CREC_ERR_NULL_POINTER, "'name'");
  cr_assert_eq(s.id, 0);
  EXPECT_REFUSED(fx.p, crec_program_add_derived_scalar(fx.p, NULL, CREC_TYPE_I32, &s), CREC_ERR_NULL_POINTER, "'name'");
  EXPECT_REFUSED(fx.p, crec_program_add_size_scalar(fx.p, NULL, fx.x, &s), CREC_ERR_NULL_POINTER, "'name'");
  EXPECT_REFUSED(fx.p, crec_program_add_module(fx.p, NULL, CREC_IMAGE_PTX, crec_test_ptx, strlen(crec_test_ptx), &m),
                 CREC_ERR_NULL_POINTER, "'name'");
  cr_assert_eq(m.id, 0);
  EXPECT_REFUSED(fx.p, crec_program_add_kernel(fx.p, crec_program_module(fx.p, 0), NULL, NULL, &k),
                 CREC_ERR_NULL_POINTER, "'entry'");
  cr_assert_eq(k.id, 0);
  EXPECT_REFUSED(fx.p, crec_program_add_kernel(fx.p, crec_program_module(fx.p, 0), "", NULL, &k),
                 CREC_ERR_INVALID_ARGUMENT, "'entry'");
  EXPECT_REFUSED(fx.p, crec_program_add_argument(fx.p, "", 8, NULL, &b), CREC_ERR_INVALID_ARGUMENT, "'name'");
  EXPECT_REFUSED(fx.p, crec_program_add_scalar(fx.p, "", CREC_TYPE_I32, &s), CREC_ERR_INVALID_ARGUMENT, "'name'");
  EXPECT_REFUSED(fx.p, crec_program_add_constant(fx.p, "cc", NULL, 3, &b), CREC_ERR_NULL_POINTER, "'data'");
  EXPECT_REFUSED(fx.p, crec_program_add_module(fx.p, "m2", CREC_IMAGE_PTX, NULL, 10, &m), CREC_ERR_NULL_POINTER, "'image'");
  /* commands may go unnamed: they take the kernel's entry or their kind */
  crec_command c;
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = fx.k;
  EXPECT_OK(crec_program_add_launch(fx.p, fx.body, NULL, &l, &c));
  crec_command_info info = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(fx.p, c, &info));
  cr_assert_str_eq(info.name, "k");
  EXPECT_OK(crec_program_add_barrier(fx.p, fx.body, NULL, &c));
  EXPECT_OK(crec_command_get_info(fx.p, c, &info));
  cr_assert_str_eq(info.name, "barrier");
  done(&fx);
}

Test(validation, null_host_function_arguments) {
  fixture fx = make_fixture();
  crec_scalar d;
  EXPECT_OK(crec_program_add_derived_scalar(fx.p, "d", CREC_TYPE_I32, &d));
  crec_scalar in[1] = {fx.n}, outs[1] = {d};
  crec_host_fn f = host_noop;
  EXPECT_REFUSED(fx.p, crec_program_add_host_function(NULL, "h", f, NULL, NULL, in, 1, outs, 1), CREC_ERR_NULL_POINTER, "'program'");
  EXPECT_REFUSED(fx.p, crec_program_add_host_function(fx.p, NULL, f, NULL, NULL, in, 1, outs, 1), CREC_ERR_NULL_POINTER, "'name'");
  EXPECT_REFUSED(fx.p, crec_program_add_host_function(fx.p, "h", NULL, NULL, NULL, in, 1, outs, 1), CREC_ERR_NULL_POINTER, "'fn'");
  EXPECT_REFUSED(fx.p, crec_program_add_host_function(fx.p, "h", f, NULL, NULL, NULL, 1, outs, 1), CREC_ERR_NULL_POINTER, "'inputs'");
  EXPECT_REFUSED(fx.p, crec_program_add_host_function(fx.p, "h", f, NULL, NULL, in, 1, NULL, 1), CREC_ERR_NULL_POINTER, "'outputs'");
  EXPECT_REFUSED(fx.p, crec_program_add_host_function(fx.p, "", f, NULL, NULL, in, 1, outs, 1), CREC_ERR_INVALID_ARGUMENT, "'name' is empty");
  EXPECT_OK(crec_program_add_host_function(fx.p, "h", f, NULL, NULL, in, 1, outs, 1));
  done(&fx);
}

/* ---- duplicate names ---- */

Test(validation, duplicate_names) {
  fixture fx = make_fixture();
  crec_buffer b = {CREC_TEST_GARBAGE_ID};
  crec_scalar s = {CREC_TEST_GARBAGE_ID};
  /* buffers share one name space, whatever their kind */
  EXPECT_REFUSED(fx.p, crec_program_add_argument(fx.p, "t", 8, NULL, &b), CREC_ERR_DUPLICATE_NAME, "'name'");
  EXPECT_ERROR_MENTIONS("'t'");
  cr_assert_eq(b.id, 0);
  EXPECT_REFUSED(fx.p, crec_program_add_temporary(fx.p, "x", 8, &b), CREC_ERR_DUPLICATE_NAME, "'x'");
  EXPECT_REFUSED(fx.p, crec_program_add_constant(fx.p, "c", "abc", 3, &b), CREC_ERR_DUPLICATE_NAME, "'c'");
  EXPECT_REFUSED(fx.p, crec_program_add_scalar(fx.p, "n", CREC_TYPE_I64, &s), CREC_ERR_DUPLICATE_NAME, "'n'");
  cr_assert_eq(s.id, 0);
  EXPECT_REFUSED(fx.p, crec_program_add_derived_scalar(fx.p, "f", CREC_TYPE_I64, &s), CREC_ERR_DUPLICATE_NAME, "'f'");
  EXPECT_REFUSED(fx.p, crec_program_add_size_scalar(fx.p, "n", fx.x, &s), CREC_ERR_DUPLICATE_NAME, "'n'");
  /* buffers and scalars are separate name spaces */
  EXPECT_OK(crec_program_add_scalar(fx.p, "x", CREC_TYPE_I32, &s));
  EXPECT_OK(crec_program_add_temporary(fx.p, "n", 8, &b));
  crec_buffer found;
  EXPECT_OK(crec_program_find_buffer(fx.p, "n", &found));
  cr_assert_eq(found.id, b.id);
  done(&fx);
}

Test(validation, many_names_stay_distinct) {
  /* the name table grows: every name is still found, and duplicates still refused */
  crec_program *p = NULL;
  EXPECT_OK(crec_program_create(&p));
  crec_buffer b[300];
  char name[32];
  for (int i = 0; i < 300; i++) {
    snprintf(name, sizeof name, "buf%d", i);
    EXPECT_OK(crec_program_add_temporary(p, name, 8, &b[i]));
  }
  for (int i = 0; i < 300; i++) {
    snprintf(name, sizeof name, "buf%d", i);
    crec_buffer found, dup = {CREC_TEST_GARBAGE_ID};
    EXPECT_OK(crec_program_find_buffer(p, name, &found));
    cr_assert_eq(found.id, b[i].id, "'%s' found as another buffer", name);
    EXPECT_REFUSED(p, crec_program_add_argument(p, name, 8, NULL, &dup), CREC_ERR_DUPLICATE_NAME, name);
  }
  crec_buffer none;
  EXPECT_STATUS(crec_program_find_buffer(p, "buf300", &none), CREC_ERR_NOT_FOUND);
  cr_assert_eq(none.id, 0);
  crec_program_destroy(p);
}

/* ---- sizes, types and options ---- */

Test(validation, zero_sizes_and_bad_types) {
  fixture fx = make_fixture();
  crec_buffer b;
  crec_scalar s;
  EXPECT_REFUSED(fx.p, crec_program_add_argument(fx.p, "a", 0, NULL, &b), CREC_ERR_INVALID_ARGUMENT, "'size'");
  EXPECT_REFUSED(fx.p, crec_program_add_temporary(fx.p, "a", 0, &b), CREC_ERR_INVALID_ARGUMENT, "'size'");
  EXPECT_REFUSED(fx.p, crec_program_add_constant(fx.p, "a", "abc", 0, &b), CREC_ERR_INVALID_ARGUMENT, "'size'");
  EXPECT_REFUSED(fx.p, crec_program_add_scalar(fx.p, "s", (crec_type)4, &s), CREC_ERR_INVALID_ARGUMENT, "'type'");
  EXPECT_REFUSED(fx.p, crec_program_add_scalar(fx.p, "s", CREC_TYPE_NONE, &s), CREC_ERR_INVALID_ARGUMENT, "'type'");
  EXPECT_REFUSED(fx.p, crec_program_add_derived_scalar(fx.p, "s", (crec_type)-7, &s), CREC_ERR_INVALID_ARGUMENT, "'type'");
  EXPECT_REFUSED(fx.p, crec_program_add_size_scalar(fx.p, "s", fx.t, &s), CREC_ERR_INVALID_ARGUMENT, "'buffer'");
  EXPECT_ERROR_MENTIONS("temporary");
  /* a dynamic-size argument may have no minimum */
  crec_argument_options o = CREC_ARGUMENT_OPTIONS_INIT;
  o.dynamic_size = 1;
  EXPECT_OK(crec_program_add_argument(fx.p, "dyn", 0, &o, &b));
  EXPECT_OK(crec_program_add_size_scalar(fx.p, "dyn_bytes", b, &s));
  crec_scalar_info si;
  EXPECT_OK(crec_scalar_get_info(fx.p, s, &si));
  cr_assert_eq(si.kind, CREC_SCALAR_SIZE);
  cr_assert_eq(si.type, CREC_TYPE_I64);
  cr_assert_eq(si.buffer.id, b.id);
  done(&fx);
}

Test(validation, struct_size_too_small) {
  fixture fx = make_fixture();
  crec_buffer b;
  crec_argument_options ao = CREC_ARGUMENT_OPTIONS_INIT;
  ao.struct_size = sizeof ao - 1;
  EXPECT_REFUSED(fx.p, crec_program_add_argument(fx.p, "a", 8, &ao, &b), CREC_ERR_INVALID_ARGUMENT, "'options'");
  EXPECT_ERROR_MENTIONS("struct_size");
  ao.struct_size = 0;
  EXPECT_REFUSED(fx.p, crec_program_add_argument(fx.p, "a", 8, &ao, &b), CREC_ERR_INVALID_ARGUMENT, "'options'");
  crec_kernel_options ko = CREC_KERNEL_OPTIONS_INIT;
  ko.struct_size = sizeof(size_t);
  crec_kernel k;
  EXPECT_REFUSED(fx.p, crec_program_add_kernel(fx.p, crec_program_module(fx.p, 0), "k", &ko, &k),
                 CREC_ERR_INVALID_ARGUMENT, "'options'");
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = fx.k;
  l.struct_size = offsetof(crec_launch, num_args);
  refuse_launch(&fx, &l, CREC_ERR_INVALID_ARGUMENT, "'launch'");
  EXPECT_ERROR_MENTIONS("struct_size");
  crec_plan_options po = CREC_PLAN_OPTIONS_INIT;
  po.struct_size = 4;
  crec_plan *plan = (crec_plan *)&po; /* must be reset to NULL */
  EXPECT_STATUS(crec_plan_create(fx.p, &po, &plan), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("'options'");
  cr_assert_null(plan);
  done(&fx);
}

Test(validation, argument_options) {
  fixture fx = make_fixture();
  crec_buffer b;
  crec_argument_options o = CREC_ARGUMENT_OPTIONS_INIT;
  const uint32_t bad_alignments[] = {0, 3, 12, 0x80000001u};
  for (size_t i = 0; i < sizeof bad_alignments / sizeof *bad_alignments; i++) {
    o.alignment = bad_alignments[i];
    EXPECT_REFUSED(fx.p, crec_program_add_argument(fx.p, "a", 8, &o, &b), CREC_ERR_INVALID_ARGUMENT, "'options'");
    EXPECT_ERROR_MENTIONS("alignment");
  }
  o = (crec_argument_options)CREC_ARGUMENT_OPTIONS_INIT;
  o.memory = (crec_memory)2;
  EXPECT_REFUSED(fx.p, crec_program_add_argument(fx.p, "a", 8, &o, &b), CREC_ERR_INVALID_ARGUMENT, "'options'");
  o = (crec_argument_options)CREC_ARGUMENT_OPTIONS_INIT;
  o.element = (crec_element)9;
  EXPECT_REFUSED(fx.p, crec_program_add_argument(fx.p, "a", 8, &o, &b), CREC_ERR_INVALID_ARGUMENT, "'options'");
  o = (crec_argument_options)CREC_ARGUMENT_OPTIONS_INIT;
  o.alignment = 256;
  o.element = CREC_ELEMENT_F16;
  EXPECT_OK(crec_program_add_argument(fx.p, "a", 8, &o, &b));
  crec_buffer_info info;
  EXPECT_OK(crec_buffer_get_info(fx.p, b, &info));
  cr_assert_eq(info.alignment, 256);
  cr_assert_eq(info.element, CREC_ELEMENT_F16);
  cr_assert_eq(info.argument_index, 1, "the second argument is binding %zu", info.argument_index);
  done(&fx);
}

Test(validation, kernel_cluster_dims_partly_zero) {
  fixture fx = make_fixture();
  crec_kernel_options o = CREC_KERNEL_OPTIONS_INIT;
  o.cluster[0] = 2;
  o.cluster[1] = 0;
  o.cluster[2] = 1;
  crec_kernel k;
  EXPECT_REFUSED(fx.p, crec_program_add_kernel(fx.p, crec_program_module(fx.p, 0), "k", &o, &k),
                 CREC_ERR_INVALID_ARGUMENT, "'options'");
  EXPECT_ERROR_MENTIONS("cluster");
  o.cluster[1] = 1;
  EXPECT_OK(crec_program_add_kernel(fx.p, crec_program_module(fx.p, 0), "k", &o, &k));
  crec_kernel_info info;
  EXPECT_OK(crec_kernel_get_info(fx.p, k, &info));
  cr_assert(info.cluster[0] == 2 && info.cluster[1] == 1 && info.cluster[2] == 1);
  done(&fx);
}

Test(validation, host_function_outputs_and_inputs) {
  fixture fx = make_fixture();
  crec_scalar d1, d2;
  EXPECT_OK(crec_program_add_derived_scalar(fx.p, "d1", CREC_TYPE_I32, &d1));
  EXPECT_OK(crec_program_add_derived_scalar(fx.p, "d2", CREC_TYPE_I32, &d2));
  crec_host_fn f = host_noop;
  crec_scalar bound_out[1] = {fx.n}, d1_in[1] = {d1}, d1_out[1] = {d1}, twice[2] = {d1, d1}, n_in[1] = {fx.n};
  EXPECT_REFUSED(fx.p, crec_program_add_host_function(fx.p, "h", f, NULL, NULL, n_in, 1, bound_out, 1),
                 CREC_ERR_INVALID_ARGUMENT, "'outputs[0]'");
  EXPECT_REFUSED(fx.p, crec_program_add_host_function(fx.p, "h", f, NULL, NULL, d1_in, 1, d1_out, 1),
                 CREC_ERR_INVALID_ARGUMENT, "'inputs[0]'");
  EXPECT_REFUSED(fx.p, crec_program_add_host_function(fx.p, "h", f, NULL, NULL, n_in, 1, twice, 2),
                 CREC_ERR_INVALID_ARGUMENT, "'outputs[1]'");
  EXPECT_REFUSED(fx.p, crec_program_add_host_function(fx.p, "h", f, NULL, NULL, n_in, 1, d1_out, 0),
                 CREC_ERR_INVALID_ARGUMENT, "no outputs");
  /* a plan refuses the program while a derived scalar has no function */
  crec_plan *plan = NULL;
  EXPECT_STATUS(crec_plan_create(fx.p, NULL, &plan), CREC_ERR_INVALID_PROGRAM);
  EXPECT_ERROR_MENTIONS("'d1'");
  EXPECT_OK(crec_program_add_host_function(fx.p, "h1", f, NULL, NULL, n_in, 1, d1_out, 1));
  crec_scalar d2_out[1] = {d2};
  EXPECT_REFUSED(fx.p, crec_program_add_host_function(fx.p, "h", f, NULL, NULL, n_in, 1, d1_out, 1),
                 CREC_ERR_INVALID_ARGUMENT, "'h1'");
  EXPECT_OK(crec_program_add_host_function(fx.p, "h2", f, NULL, NULL, d1_in, 1, d2_out, 1));
  EXPECT_OK(crec_program_validate(fx.p));
  cr_assert_eq(crec_program_host_function_count(fx.p), 2);
  done(&fx);
}

static int freed_users;
static void count_free(void *user) { freed_users += *(int *)user; }

Test(validation, host_function_user_data_ownership) {
  fixture fx = make_fixture();
  crec_scalar d;
  EXPECT_OK(crec_program_add_derived_scalar(fx.p, "d", CREC_TYPE_I32, &d));
  crec_scalar in[1] = {fx.n}, outs[1] = {d}, bad[1] = {fx.f};
  int refused = 100, accepted = 1;
  freed_users = 0;
  /* a refused function leaves `user` with the caller */
  EXPECT_REFUSED(fx.p, crec_program_add_host_function(fx.p, "h", host_noop, &refused, count_free, in, 1, bad, 1),
                 CREC_ERR_INVALID_ARGUMENT, "'outputs[0]'");
  EXPECT_OK(crec_program_add_host_function(fx.p, "h", host_noop, &accepted, count_free, in, 1, outs, 1));
  cr_assert_eq(freed_users, 0);
  crec_host_function_info info;
  EXPECT_OK(crec_program_get_host_function(fx.p, 0, &info));
  cr_assert_eq(info.user, &accepted);
  cr_assert_str_eq(info.name, "h");
  crec_program_destroy(fx.p);
  cr_assert_eq(freed_users, 1, "user_free was called for %d", freed_users);
}

/* ---- module images ---- */

Test(validation, bad_image_formats) {
  fixture fx = make_fixture();
  crec_module m = {CREC_TEST_GARBAGE_ID};
  static const char no_entry[] = ".version 7.0\n.target sm_75\n.func f() { ret; }\n";
  static const unsigned char not_elf[] = {0x7f, 'E', 'L', 'G', 1, 2, 3, 4};
  static const unsigned char not_fatbin[] = {0x50, 0xED, 0x55, 0xBB, 0, 0, 0, 0};
  static const unsigned char elf[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
  static const unsigned char fatbin[] = {0x50, 0xED, 0x55, 0xBA, 1, 0, 0x10, 0};
  static const unsigned char wrapper[] = {0xB1, 0x43, 0x62, 0x46, 1, 0, 0, 0};
  EXPECT_REFUSED(fx.p, crec_program_add_module(fx.p, "a", CREC_IMAGE_PTX, no_entry, strlen(no_entry), &m),
                 CREC_ERR_INVALID_ARGUMENT, "'image'");
  EXPECT_ERROR_MENTIONS("ptx");
  cr_assert_eq(m.id, 0);
  /* ".entry" cut off by the size is not there */
  EXPECT_REFUSED(fx.p, crec_program_add_module(fx.p, "a", CREC_IMAGE_PTX, crec_test_ptx,
                                                (size_t)(strstr(crec_test_ptx, ".entry") - crec_test_ptx) + 5, &m),
                 CREC_ERR_INVALID_ARGUMENT, "'image'");
  EXPECT_REFUSED(fx.p, crec_program_add_module(fx.p, "a", CREC_IMAGE_CUBIN, not_elf, sizeof not_elf, &m),
                 CREC_ERR_INVALID_ARGUMENT, "'image'");
  EXPECT_REFUSED(fx.p, crec_program_add_module(fx.p, "a", CREC_IMAGE_CUBIN, crec_test_ptx, strlen(crec_test_ptx), &m),
                 CREC_ERR_INVALID_ARGUMENT, "'image'");
  EXPECT_REFUSED(fx.p, crec_program_add_module(fx.p, "a", CREC_IMAGE_CUBIN, elf, 3, &m),
                 CREC_ERR_INVALID_ARGUMENT, "'image'");
  EXPECT_REFUSED(fx.p, crec_program_add_module(fx.p, "a", CREC_IMAGE_FATBIN, not_fatbin, sizeof not_fatbin, &m),
                 CREC_ERR_INVALID_ARGUMENT, "'image'");
  EXPECT_REFUSED(fx.p, crec_program_add_module(fx.p, "a", CREC_IMAGE_FATBIN, elf, sizeof elf, &m),
                 CREC_ERR_INVALID_ARGUMENT, "'image'");
  EXPECT_REFUSED(fx.p, crec_program_add_module(fx.p, "a", CREC_IMAGE_PTX, crec_test_ptx, 0, &m),
                 CREC_ERR_INVALID_ARGUMENT, "'size'");
  EXPECT_REFUSED(fx.p, crec_program_add_module(fx.p, "a", (crec_image_format)3, elf, sizeof elf, &m),
                 CREC_ERR_INVALID_ARGUMENT, "'format'");
  EXPECT_OK(crec_program_add_module(fx.p, "cubin", CREC_IMAGE_CUBIN, elf, sizeof elf, &m));
  EXPECT_OK(crec_program_add_module(fx.p, "fatbin", CREC_IMAGE_FATBIN, fatbin, sizeof fatbin, &m));
  EXPECT_OK(crec_program_add_module(fx.p, "wrapped", CREC_IMAGE_FATBIN, wrapper, sizeof wrapper, &m));
  crec_module_info info;
  EXPECT_OK(crec_module_get_info(fx.p, m, &info));
  cr_assert_str_eq(info.name, "wrapped");
  cr_assert_eq(info.format, CREC_IMAGE_FATBIN);
  cr_assert_eq(info.size, sizeof wrapper);
  cr_assert_eq(memcmp(info.image, wrapper, sizeof wrapper), 0);
  done(&fx);
}

Test(validation, ptx_need_not_be_nul_terminated) {
  fixture fx = make_fixture();
  size_t n = strlen(crec_test_ptx);
  char *copy = malloc(n);
  cr_assert_not_null(copy);
  memcpy(copy, crec_test_ptx, n); /* no NUL */
  crec_module m;
  EXPECT_OK(crec_program_add_module(fx.p, "m2", CREC_IMAGE_PTX, copy, n, &m));
  memset(copy, 'x', n); /* the program keeps its own copy */
  free(copy);
  crec_module_info info;
  EXPECT_OK(crec_module_get_info(fx.p, m, &info));
  cr_assert_eq(info.size, n);
  cr_assert_str_eq((const char *)info.image, crec_test_ptx);
  done(&fx);
}

/* A whole range of a dynamic-size buffer copied to or from a static one takes
 * the static side's size, so a binding too small for it is refused (it used
 * to need only one byte, and the copy overran it). */
Test(validation, memcpy_between_whole_dynamic_and_static_ranges_needs_the_bytes) {
  fixture fx = make_fixture();
  crec_argument_options dyn = CREC_ARGUMENT_OPTIONS_INIT;
  dyn.dynamic_size = 1;
  crec_buffer d, s;
  EXPECT_OK(crec_program_add_argument(fx.p, "d", 0, &dyn, &d));
  EXPECT_OK(crec_program_add_argument(fx.p, "s", 4096, NULL, &s));
  crec_command c;
  crec_command_info info = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_program_add_memcpy(fx.p, fx.body, NULL, crec_range_whole(d), crec_range_whole(s), &c));
  EXPECT_OK(crec_command_get_info(fx.p, c, &info));
  cr_assert_eq(info.bytes, 4096);
  cr_assert_eq(info.dst.size, 4096, "the dynamic destination's range is %llu bytes", (unsigned long long)info.dst.size);
  /* recording checks the bindings before it needs a device */
  static uint8_t mem[3][8192] __attribute__((aligned(256)));
  crec_binding b[3] = {{mem[0], 256}, {mem[1], 16}, {mem[2], 4096}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = b;
  bs.num_buffers = 3;
  crec_value v[2] = {{.i32 = 1}, {.f32 = 1}};
  bs.scalars = v;
  bs.num_scalars = 2;
  crec_exec *e = NULL;
  EXPECT_STATUS(crec_record(fx.p, &bs, NULL, &e), CREC_ERR_BINDING);
  EXPECT_ERROR_MENTIONS("binding 1 ('d'): 16 bytes given, 4096 needed");
  /* recording froze the program, so it cannot take the usual still-works check */
  crec_program_destroy(fx.p);
  cr_assert_eq(crec_debug_live_objects(), 0, "objects leaked: %lld", (long long)crec_debug_live_objects());
}

/* Update strategies an exec could not take are refused before anything needs a
 * device, naming the option; the cost model's calls refuse NULL. */
Test(validation, record_refuses_update_strategies_it_cannot_take) {
  fixture fx = make_fixture();
  crec_exec *e = NULL;
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  cr_expect_eq(o.update_strategy, CREC_UPDATE_AUTO, "the cost model decides by default");
  o.update_strategy = CREC_UPDATE_DEVICE;
  EXPECT_STATUS(crec_record(fx.p, NULL, &o, &e), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("update_strategy CREC_UPDATE_DEVICE needs device_updates");
  o.device_updates = 1, o.update_strategy = CREC_UPDATE_WHOLE_GRAPH;
  EXPECT_STATUS(crec_record(fx.p, NULL, &o, &e), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("CREC_UPDATE_WHOLE_GRAPH with device_updates");
  o.update_strategy = (crec_update_strategy)7;
  EXPECT_STATUS(crec_record(fx.p, NULL, &o, &e), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("unknown update_strategy 7");
  cr_expect_null(e);
  crec_update_model m = CREC_UPDATE_MODEL_INIT;
  crec_update_estimate est = CREC_UPDATE_ESTIMATE_INIT;
  EXPECT_STATUS(crec_exec_get_update_model(NULL, &m), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_exec_set_update_model(NULL, &m), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_exec_estimate_update(NULL, 1, 0, &est), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("argument 'exec' is NULL");
  done(&fx);
}

/* Variants that an exec could not keep are refused before anything needs a
 * device, naming the option they clash with; one is the default. */
Test(validation, record_refuses_variants_it_cannot_keep) {
  fixture fx = make_fixture();
  crec_exec *e = NULL;
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  cr_expect_eq(o.variants, 1, "one executable graph by default");
  o.variants = 17;
  EXPECT_STATUS(crec_record(fx.p, NULL, &o, &e), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("variants 17 is above 16");
  o.variants = 2, o.device_updates = 1;
  EXPECT_STATUS(crec_record(fx.p, NULL, &o, &e), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("variants 2 with device_updates");
  o.device_updates = 0, o.whole_update_percent = 50;
  EXPECT_STATUS(crec_record(fx.p, NULL, &o, &e), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("variants 2 with whole_update_percent");
  o.whole_update_percent = 0, o.update_strategy = CREC_UPDATE_WHOLE_GRAPH;
  EXPECT_STATUS(crec_record(fx.p, NULL, &o, &e), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("variants 2 with update_strategy CREC_UPDATE_WHOLE_GRAPH");
  cr_expect_null(e);
  done(&fx);
}

/* ---- warnings: reads of temporary bytes that nothing wrote before ---- */

TestSuite(warnings, .fini = crec_test_leak_check);

/* A launch of "k" named `name` in `region` with the buffer arguments given. */
static crec_command launch_of(fixture *fx, crec_region region, const char *name, size_t n, const crec_arg *args) {
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = fx->k;
  l.args = args;
  l.num_args = n;
  crec_command c;
  EXPECT_OK(crec_program_add_launch(fx->p, region, name, &l, &c));
  return c;
}
static crec_command reads(fixture *fx, crec_region region, const char *name, crec_range r) {
  crec_arg a = crec_arg_buffer(r, CREC_ACCESS_READ);
  return launch_of(fx, region, name, 1, &a);
}
static crec_command writes(fixture *fx, crec_region region, const char *name, crec_range r) {
  crec_arg a = crec_arg_buffer(r, CREC_ACCESS_WRITE);
  return launch_of(fx, region, name, 1, &a);
}

/* Validates the program and returns its warnings' messages, one per line ("" for none). */
static const char *warnings_of(const crec_program *p) {
  static char text[8192];
  EXPECT_OK(crec_program_validate(p));
  text[0] = '\0';
  size_t n = crec_program_warning_count(p), used = 0;
  for (size_t i = 0; i < n; i++) {
    crec_warning_info w;
    EXPECT_OK(crec_program_get_warning(p, i, &w));
    cr_assert_not_null(w.message);
    used += (size_t)snprintf(text + used, sizeof text - used, "%s\n", w.message);
    cr_assert_lt(used, sizeof text);
  }
  return text;
}

Test(warnings, a_read_of_a_fresh_temporary_names_the_command_the_buffer_and_the_fix) {
  fixture fx = make_fixture();
  crec_command use = reads(&fx, fx.body, "use", crec_range_whole(fx.t));
  cr_assert_str_eq(warnings_of(fx.p), "command 0 ('use') reads 't', which nothing wrote before: its bytes are "
                                      "undefined (write it first, e.g. zero it with crec_program_add_memset)\n");
  crec_warning_info w;
  EXPECT_OK(crec_program_get_warning(fx.p, 0, &w));
  cr_assert_eq(w.command.id, use.id);
  cr_assert_eq(w.range.buffer.id, fx.t.id);
  cr_assert_eq(w.range.offset, 0);
  cr_assert_eq(w.range.size, 256, "the range is resolved, not CREC_WHOLE");
  cr_assert_eq(w.access, CREC_ACCESS_READ);
  crec_program_destroy(fx.p);

  /* the fix the message suggests silences it */
  fx = make_fixture();
  crec_command c;
  EXPECT_OK(crec_program_add_memset(fx.p, fx.body, NULL, crec_range_whole(fx.t), 0, 4, &c));
  reads(&fx, fx.body, "use", crec_range_whole(fx.t));
  cr_assert_str_eq(warnings_of(fx.p), "");
  done(&fx);
}

Test(warnings, accumulating_into_a_fresh_temporary) {
  fixture fx = make_fixture();
  crec_arg rw = crec_arg_buffer(crec_range_of(fx.t, 64, 64), CREC_ACCESS_READ_WRITE);
  launch_of(&fx, fx.body, "add", 1, &rw);
  cr_assert_str_eq(warnings_of(fx.p), "command 0 ('add') reads and writes bytes [64, 128) of 't', which nothing "
                                      "wrote before: its bytes are undefined (zero it first with "
                                      "crec_program_add_memset)\n");
  crec_warning_info w;
  EXPECT_OK(crec_program_get_warning(fx.p, 0, &w));
  cr_assert_eq(w.access, CREC_ACCESS_READ_WRITE);
  crec_program_destroy(fx.p);

  /* a GEMM with beta 1 and no C accumulates into D; its workspace is crec's own scratch */
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  crec_buffer a, b, acc, out;
  EXPECT_OK(crec_program_add_argument(p, "a", 64, NULL, &a));
  EXPECT_OK(crec_program_add_argument(p, "b", 64, NULL, &b));
  EXPECT_OK(crec_program_add_temporary(p, "acc", 64, &acc));
  EXPECT_OK(crec_program_add_temporary(p, "out", 64, &out));
  crec_gemm g = CREC_GEMM_INIT;
  g.a = crec_matrix_of(crec_range_whole(a), 4, 4);
  g.b = crec_matrix_of(crec_range_whole(b), 4, 4);
  g.d = crec_matrix_of(crec_range_whole(acc), 4, 4);
  g.beta = 1.0;
  crec_command mm, plain;
  EXPECT_OK(crec_program_add_gemm(p, crec_program_body(p), "mm", &g, &mm));
  /* beta 0 overwrites D: nothing is read */
  g.d = crec_matrix_of(crec_range_whole(out), 4, 4);
  g.beta = 0.0;
  EXPECT_OK(crec_program_add_gemm(p, crec_program_body(p), "plain", &g, &plain));
  cr_assert_str_eq(warnings_of(p), "command 0 ('mm') accumulates into 'acc', which nothing wrote before: its bytes "
                                   "are undefined (zero it first with crec_program_add_memset)\n");
  crec_program_destroy(p);
}

Test(warnings, arguments_and_constants_are_never_flagged) {
  fixture fx = make_fixture();
  crec_arg args[2] = {crec_arg_buffer(crec_range_whole(fx.x), CREC_ACCESS_READ_WRITE),
                      crec_arg_buffer(crec_range_whole(fx.c), CREC_ACCESS_READ)};
  launch_of(&fx, fx.body, "k", 2, args);
  crec_command c;
  EXPECT_OK(crec_program_add_memcpy(fx.p, fx.body, NULL, crec_range_of(fx.x, 0, 64), crec_range_whole(fx.c), &c));
  cr_assert_str_eq(warnings_of(fx.p), "");
  /* the same reads from the temporary are flagged */
  args[0].range = crec_range_whole(fx.t);
  launch_of(&fx, fx.body, "k2", 2, args);
  cr_assert_str_eq(warnings_of(fx.p), "command 2 ('k2') reads and writes 't', which nothing wrote before: its bytes "
                                      "are undefined (zero it first with crec_program_add_memset)\n");
  crec_program_destroy(fx.p);
}

/* Writes count wherever they come earlier in program order: inside an earlier
 * loop's body, in both branches of an if, by a copy. */
Test(warnings, earlier_writes_in_loops_and_branches_count) {
  fixture fx = make_fixture();
  crec_buffer flag, u, v, w;
  EXPECT_OK(crec_program_add_argument(fx.p, "flag", 16, NULL, &flag));
  EXPECT_OK(crec_program_add_temporary(fx.p, "u", 256, &u));
  EXPECT_OK(crec_program_add_temporary(fx.p, "v", 256, &v));
  EXPECT_OK(crec_program_add_temporary(fx.p, "w", 256, &w));
  crec_command loop, cond;
  crec_region cr, body, then_r, else_r;
  EXPECT_OK(crec_program_add_while(fx.p, fx.body, "loop", crec_range_of(flag, 0, 1), &loop, &cr, &body));
  writes(&fx, body, "fill t", crec_range_whole(fx.t));
  EXPECT_OK(crec_program_add_if(fx.p, fx.body, "if", crec_range_of(flag, 1, 1), &cond, &then_r, &else_r));
  writes(&fx, then_r, "fill u", crec_range_whole(u));
  crec_command c;
  EXPECT_OK(crec_program_add_memset(fx.p, else_r, "zero u", crec_range_whole(u), 0, 4, &c));
  EXPECT_OK(crec_program_add_memcpy(fx.p, fx.body, "copy v", crec_range_whole(v), crec_range_whole(fx.x), &c));
  reads(&fx, fx.body, "read t", crec_range_whole(fx.t));
  reads(&fx, fx.body, "read u", crec_range_whole(u));
  reads(&fx, fx.body, "read v", crec_range_whole(v));
  cr_assert_str_eq(warnings_of(fx.p), "");
  reads(&fx, fx.body, "read w", crec_range_whole(w));
  cr_assert_str_eq(warnings_of(fx.p), "command 9 ('read w') reads 'w', which nothing wrote before: its bytes are "
                                      "undefined (write it first, e.g. zero it with crec_program_add_memset)\n");
  crec_program_destroy(fx.p);
}

/* In a loop, the first iteration runs in program order: a write later in the
 * body comes too late for a read that runs in every iteration, but may come in
 * time for a read that an iteration can skip. */
Test(warnings, later_writes_in_a_loop_count_only_for_reads_an_iteration_may_skip) {
  fixture fx = make_fixture();
  crec_buffer flag, u, v, w;
  EXPECT_OK(crec_program_add_argument(fx.p, "flag", 16, NULL, &flag));
  EXPECT_OK(crec_program_add_temporary(fx.p, "u", 256, &u));
  EXPECT_OK(crec_program_add_temporary(fx.p, "v", 256, &v));
  EXPECT_OK(crec_program_add_temporary(fx.p, "w", 256, &w));
  crec_command loop, cond, inner;
  crec_region cr, body, then_r, else_r, icond, ibody;
  EXPECT_OK(crec_program_add_while(fx.p, fx.body, "loop", crec_range_of(flag, 0, 1), &loop, &cr, &body));
  /* every iteration reads t before it writes it: the first reads undefined bytes */
  reads(&fx, body, "read t", crec_range_whole(fx.t));
  /* the first iteration may skip this read, and a later one see the write below */
  EXPECT_OK(crec_program_add_if(fx.p, body, "if", crec_range_of(flag, 1, 1), &cond, &then_r, &else_r));
  reads(&fx, then_r, "read u", crec_range_whole(u));
  /* an inner loop's body may not run in the first iteration either */
  EXPECT_OK(crec_program_add_while(fx.p, body, "inner", crec_range_of(flag, 2, 1), &inner, &icond, &ibody));
  reads(&fx, ibody, "read v", crec_range_whole(v));
  /* but within the inner loop, a read before the write always comes first */
  reads(&fx, ibody, "read w", crec_range_whole(w));
  writes(&fx, ibody, "write w", crec_range_whole(w));
  writes(&fx, body, "write t", crec_range_whole(fx.t));
  writes(&fx, body, "write u", crec_range_whole(u));
  writes(&fx, body, "write v", crec_range_whole(v));
  cr_assert_str_eq(warnings_of(fx.p),
                   "command 1 ('read t') reads 't', which nothing wrote before: its bytes are undefined (write it "
                   "first, e.g. zero it with crec_program_add_memset)\n"
                   "command 6 ('read w') reads 'w', which nothing wrote before: its bytes are undefined (write it "
                   "first, e.g. zero it with crec_program_add_memset)\n");
  crec_program_destroy(fx.p);
}

/* A condition is read after its loop's cond region; an if's and a switch's before their branches. */
Test(warnings, conditions_read_from_temporaries) {
  fixture fx = make_fixture();
  crec_buffer flag, idx;
  EXPECT_OK(crec_program_add_temporary(fx.p, "flag", 16, &flag));
  EXPECT_OK(crec_program_add_temporary(fx.p, "idx", 16, &idx));
  crec_command loop, sw, cond;
  crec_region cr, body, br[2], then_r, else_r;
  /* the cond region writes the predicate before each test */
  EXPECT_OK(crec_program_add_while(fx.p, fx.body, "loop", crec_range_of(flag, 0, 1), &loop, &cr, &body));
  writes(&fx, cr, "check", crec_range_of(flag, 0, 1));
  cr_assert_str_eq(warnings_of(fx.p), "");
  /* nothing writes these */
  EXPECT_OK(crec_program_add_switch(fx.p, fx.body, "sw", crec_range_of(idx, 0, 4), 2, NULL, &sw, br));
  EXPECT_OK(crec_program_add_if(fx.p, fx.body, "if", crec_range_of(flag, 8, 1), &cond, &then_r, &else_r));
  /* a write in a branch comes after the test */
  writes(&fx, then_r, "set", crec_range_of(flag, 8, 1));
  cr_assert_str_eq(warnings_of(fx.p),
                   "command 2 ('sw') reads its index from bytes [0, 4) of 'idx', which nothing wrote before: its "
                   "bytes are undefined (write it first, e.g. zero it with crec_program_add_memset)\n"
                   "command 3 ('if') reads its condition from bytes [8, 9) of 'flag', which nothing wrote before: "
                   "its bytes are undefined (write it first, e.g. zero it with crec_program_add_memset)\n");
  crec_program_destroy(fx.p);
}

/* "Nothing wrote it": a range written in part is not flagged; one read of undefined bytes is reported once. */
Test(warnings, byte_ranges_and_one_report_per_range) {
  fixture fx = make_fixture();
  writes(&fx, fx.body, "half", crec_range_of(fx.t, 0, 128));
  reads(&fx, fx.body, "all", crec_range_whole(fx.t));
  reads(&fx, fx.body, "upper", crec_range_of(fx.t, 128, 64));
  reads(&fx, fx.body, "upper again", crec_range_of(fx.t, 160, 96));
  reads(&fx, fx.body, "last", crec_range_of(fx.t, 192, 64));
  cr_assert_str_eq(warnings_of(fx.p), "command 2 ('upper') reads bytes [128, 192) of 't', which nothing wrote before: "
                                      "its bytes are undefined (write it first, e.g. zero it with "
                                      "crec_program_add_memset)\n"
                                      "command 4 ('last') reads bytes [192, 256) of 't', which nothing wrote before: "
                                      "its bytes are undefined (write it first, e.g. zero it with "
                                      "crec_program_add_memset)\n");
  crec_program_destroy(fx.p);
}

/* The scratch crec adds (a GEMM's workspace, a barrier's), and a collective's done, are not reads. */
Test(warnings, scratch_crec_owns_is_not_read) {
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  crec_region body = crec_program_body(p);
  crec_comm_slot world;
  EXPECT_OK(crec_program_add_communicator(p, "world", 2, &world));
  crec_buffer s, r, q;
  EXPECT_OK(crec_program_add_temporary(p, "s", 256, &s));
  EXPECT_OK(crec_program_add_temporary(p, "r", 256, &r));
  EXPECT_OK(crec_program_add_temporary(p, "q", 256, &q));
  crec_command c, start;
  EXPECT_OK(crec_program_add_comm_barrier(p, body, "sync", world, &c));
  EXPECT_OK(crec_program_add_memset(p, body, NULL, crec_range_whole(s), 0, 4, &c));
  crec_collective d = CREC_COLLECTIVE_INIT;
  d.communicator = world;
  d.send = crec_range_whole(s);
  d.recv = crec_range_whole(r);
  d.async = 1;
  EXPECT_OK(crec_program_add_collective(p, body, "ar", &d, &start));
  EXPECT_OK(crec_program_add_collective_done(p, body, NULL, start, &c));
  cr_assert_str_eq(warnings_of(p), "");
  /* an all_reduce in place on a fresh temporary reduces undefined bytes */
  d.send = d.recv = crec_range_whole(q);
  d.async = 0;
  EXPECT_OK(crec_program_add_collective(p, body, "in place", &d, &c));
  cr_assert_str_eq(warnings_of(p), "command 4 ('in place') reads 'q', which nothing wrote before: its bytes are "
                                   "undefined (write it first, e.g. zero it with crec_program_add_memset)\n");
  crec_program_destroy(p);
}

Test(warnings, follow_the_program_as_it_changes) {
  fixture fx = make_fixture();
  cr_assert_eq(crec_program_warning_count(NULL), 0);
  cr_assert_eq(crec_program_warning_count(fx.p), 0, "not validated yet");
  reads(&fx, fx.body, "one", crec_range_of(fx.t, 0, 64));
  cr_assert_eq(crec_program_warning_count(fx.p), 0, "not validated since the change");
  EXPECT_OK(crec_program_validate(fx.p));
  cr_assert_eq(crec_program_warning_count(fx.p), 1);
  crec_warning_info w;
  w.message = "stale";
  EXPECT_STATUS(crec_program_get_warning(fx.p, 1, &w), CREC_ERR_OUT_OF_RANGE);
  EXPECT_ERROR_MENTIONS("crec_program_get_warning: argument 'index': 1, but the program has 1 warnings");
  cr_assert_null(w.message, "a failed get clears its output");
  EXPECT_STATUS(crec_program_get_warning(NULL, 0, &w), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_program_get_warning(fx.p, 0, NULL), CREC_ERR_NULL_POINTER);
  /* a new command: the old warnings no longer describe the program */
  reads(&fx, fx.body, "two", crec_range_of(fx.t, 64, 64));
  cr_assert_eq(crec_program_warning_count(fx.p), 0);
  EXPECT_STATUS(crec_program_get_warning(fx.p, 0, &w), CREC_ERR_OUT_OF_RANGE);
  /* planning validates */
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(fx.p, NULL, &plan));
  crec_plan_destroy(plan);
  cr_assert_eq(crec_program_warning_count(fx.p), 2);
  EXPECT_OK(crec_program_get_warning(fx.p, 1, &w));
  cr_assert_str_eq(w.message, "command 1 ('two') reads bytes [64, 128) of 't', which nothing wrote before: its "
                              "bytes are undefined (write it first, e.g. zero it with crec_program_add_memset)");
  /* validating again keeps the same messages */
  EXPECT_OK(crec_program_validate(fx.p));
  crec_warning_info again;
  EXPECT_OK(crec_program_get_warning(fx.p, 1, &again));
  cr_assert_eq(again.message, w.message);
  crec_program_destroy(fx.p);
}

static void *validate_and_read(void *arg) {
  const crec_program *p = arg;
  const char *first = NULL;
  for (int i = 0; i < 200; i++) {
    if (crec_program_validate(p) != CREC_OK || crec_program_warning_count(p) != 3) return (void *)"count";
    crec_warning_info w;
    if (crec_program_get_warning(p, 2, &w) != CREC_OK) return (void *)"get";
    if (first && w.message != first) return (void *)"the messages moved";
    first = w.message;
    if (strncmp(first, "command 2 ('r2') reads", 22) != 0) return (void *)first;
  }
  return NULL;
}

/* Programs are validated by several threads at once (recording, planning): they share one set of warnings. */
Test(warnings, validated_from_several_threads) {
  fixture fx = make_fixture();
  crec_buffer u, v;
  EXPECT_OK(crec_program_add_temporary(fx.p, "u", 64, &u));
  EXPECT_OK(crec_program_add_temporary(fx.p, "v", 64, &v));
  reads(&fx, fx.body, "r0", crec_range_whole(fx.t));
  reads(&fx, fx.body, "r1", crec_range_whole(u));
  reads(&fx, fx.body, "r2", crec_range_whole(v));
  pthread_t th[4];
  for (int i = 0; i < 4; i++) cr_assert_eq(pthread_create(&th[i], NULL, validate_and_read, fx.p), 0);
  for (int i = 0; i < 4; i++) {
    void *err = NULL;
    pthread_join(th[i], &err);
    cr_assert_null(err, "thread %d: %s", i, (const char *)err);
  }
  crec_program_destroy(fx.p);
}

/* Finding warnings allocates: each allocation's failure is reported, leaks nothing, and a retry finds them all. */
Test(warnings, allocation_failures) {
  fixture fx = make_fixture();
  crec_buffer u;
  EXPECT_OK(crec_program_add_temporary(fx.p, "u", 64, &u));
  reads(&fx, fx.body, "r0", crec_range_whole(fx.t));
  reads(&fx, fx.body, "r1", crec_range_whole(u));
  int failures = 0;
  for (uint64_t n = 1;; n++) {
    crec_debug_fail_after(CREC_FAULT_ALLOC, n);
    crec_status s = crec_program_validate(fx.p);
    crec_debug_fail_after(CREC_FAULT_ALLOC, 0);
    if (s == CREC_OK) break;
    cr_assert_eq(s, CREC_ERR_OUT_OF_MEMORY, "allocation %llu: %s", (unsigned long long)n, crec_status_name(s));
    EXPECT_ERROR_MENTIONS("crec_program_validate: ");
    cr_assert_eq(crec_program_warning_count(fx.p), 0, "a failed validation keeps no warnings");
    failures++;
  }
  cr_assert_gt(failures, 3, "only %d allocations could fail", failures);
  cr_assert_eq(crec_program_warning_count(fx.p), 2);
  crec_program_destroy(fx.p);
}

/* ---- early start (CREC_LAUNCH_EARLY_START) ---- */

/* PTX of three kernels: `waits` runs griddepcontrol.wait through a .func it calls
 * before it reads, `eager` has no wait, `reads_first` loads before its wait (a
 * kernel's text runs to the next .entry or .func). */
static const char early_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".func wait_for_them()\n{\n\tgriddepcontrol.wait;\n\tret;\n}\n"
    ".visible .entry eager(.param .u64 p)\n{\n\tret;\n}\n"
    ".visible .entry waits(.param .u64 p)\n{\n\tld.param.u64 %rd1, [p];\n\tcall.uni wait_for_them, ();\n"
    "\tld.global.u32 %r1, [%rd1];\n\tret;\n}\n"
    ".visible .entry reads_first(.param .u64 p)\n{\n\tld.param.u64 %rd1, [p];\n\t@%p1 ld.global.nc.u32 %r1, [%rd1];\n"
    "\tgriddepcontrol.wait;\n\tret;\n}\n";

Test(validation, early_start_is_checked_against_the_kernels_ptx_and_kept) {
  crec_program *p = NULL;
  EXPECT_OK(crec_program_create(&p));
  crec_module m;
  EXPECT_OK(crec_program_add_module(p, "early", CREC_IMAGE_PTX, early_ptx, strlen(early_ptx), &m));
  crec_kernel waits, eager, reads_first;
  EXPECT_OK(crec_program_add_kernel(p, m, "waits", NULL, &waits));
  EXPECT_OK(crec_program_add_kernel(p, m, "eager", NULL, &eager));
  EXPECT_OK(crec_program_add_kernel(p, m, "reads_first", NULL, &reads_first));
  crec_buffer x;
  EXPECT_OK(crec_program_add_argument(p, "x", 64, NULL, &x));
  crec_arg a[] = {crec_arg_buffer(crec_range_whole(x), CREC_ACCESS_READ_WRITE)};
  crec_launch l = CREC_LAUNCH_INIT;
  l.args = a;
  l.num_args = 1;
  crec_region body = crec_program_body(p);
  crec_command c0, c1, c2;
  /* a kernel whose code has no wait is refused, naming it */
  l.kernel = eager;
  l.flags = CREC_LAUNCH_EARLY_START;
  EXPECT_STATUS(crec_program_add_launch(p, body, "first", &l, &c0), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("kernel 'eager' of PTX module 'early' has no griddepcontrol.wait");
  cr_assert_eq(crec_program_command_count(p), 0);
  /* so is one that reads global memory before its wait (a predicated load, here) */
  l.kernel = reads_first;
  EXPECT_STATUS(crec_program_add_launch(p, body, "first", &l, &c0), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("kernel 'reads_first' of PTX module 'early' touches memory before its griddepcontrol.wait "
                        "('ld.global.nc.u32 %r1, [%rd1];')");
  cr_assert_eq(crec_program_command_count(p), 0);
  l.kernel = eager;
  /* unknown bits are refused */
  l.flags = 0x6;
  EXPECT_STATUS(crec_program_add_launch(p, body, "first", &l, &c0), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("argument 'launch.flags': unknown bits 0x6");
  /* without the flag it runs in order; with it, the kernel that waits may start early */
  l.flags = 0;
  EXPECT_OK(crec_program_add_launch(p, body, "first", &l, &c0));
  l.kernel = waits;
  l.flags = CREC_LAUNCH_EARLY_START;
  EXPECT_OK(crec_program_add_launch(p, body, "second", &l, &c1));
  EXPECT_OK(crec_program_add_launch(p, body, "third", &l, &c2));
  crec_command_info info = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(p, c0, &info));
  cr_expect_eq(info.launch_flags, 0);
  EXPECT_OK(crec_command_get_info(p, c1, &info));
  cr_expect_eq(info.launch_flags, CREC_LAUNCH_EARLY_START);
  /* the dumps say so: the text and JSON on the launch, DOT on the edges into it */
  char *text = NULL, *json = NULL, *dot = NULL;
  EXPECT_OK(crec_dump(p, NULL, CREC_DUMP_TEXT, &text, NULL));
  EXPECT_OK(crec_dump(p, NULL, CREC_DUMP_JSON, &json, NULL));
  EXPECT_OK(crec_dump(p, NULL, CREC_DUMP_DOT, &dot, NULL));
  cr_expect(strstr(text, "eager<<<1x1x1, 1x1x1>>>") != NULL, "%s", text);
  cr_expect(strstr(text, "waits<<<1x1x1, 1x1x1, early start>>>") != NULL, "%s", text);
  const char *second = strstr(json, "\"name\":\"second\"");
  cr_assert_not_null(second, "%s", json);
  cr_expect(strstr(second, "\"early_start\":true") != NULL, "%s", json);
  cr_expect(strstr(json, "\"early_start\"") == strstr(second, "\"early_start\""),
            "the first launch does not say so: %s", json);
  cr_expect(strstr(dot, "c0 -> c1 [style=dashed, label=\"early\"];") != NULL, "%s", dot);
  cr_expect(strstr(dot, "c1 -> c2 [style=dashed, label=\"early\"];") != NULL, "%s", dot);
  crec_free(text);
  crec_free(json);
  crec_free(dot);
  /* a caller built before flags existed passes the older size: no flags */
  crec_launch old = CREC_LAUNCH_INIT;
  old.struct_size = offsetof(crec_launch, flags);
  old.kernel = eager;
  old.args = a;
  old.num_args = 1;
  old.flags = CREC_LAUNCH_EARLY_START; /* beyond its size: not read */
  crec_command c3;
  EXPECT_OK(crec_program_add_launch(p, body, "old", &old, &c3));
  EXPECT_OK(crec_command_get_info(p, c3, &info));
  cr_expect_eq(info.launch_flags, 0);
  crec_program_destroy(p);
}
