/* Multi-GPU pieces without a device: the barrier across ranks (builder
 * validation, what it keeps, the order it imposes, dumps) and the calls that
 * bound waits for other ranks (argument checks, statuses). The multi-rank GPU
 * tests are tests/multi_tests.c, started by tools/crec-launch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

TestSuite(multi, .fini = crec_test_leak_check);

Test(multi, wait_and_agreement_calls_check_their_arguments) {
  EXPECT_STATUS(crec_comm_abort(NULL), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("crec_comm_abort: argument 'comm' is NULL");
  cr_assert_eq(crec_comm_aborted(NULL), 0);
  EXPECT_STATUS(crec_comm_synchronize(NULL, NULL, 1000), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("crec_comm_synchronize: argument 'comm' is NULL");
  EXPECT_STATUS(crec_comm_agree(NULL, CREC_OK, 1000), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("crec_comm_agree: argument 'comm' is NULL");
}

Test(multi, the_statuses_of_failed_ranks_have_names) {
  cr_assert_str_eq(crec_status_name(CREC_ERR_TIMEOUT), "ERR_TIMEOUT");
  cr_assert_str_eq(crec_status_name(CREC_ERR_REMOTE), "ERR_REMOTE");
  cr_assert(strstr(crec_status_string(CREC_ERR_TIMEOUT), "deadline"));
  cr_assert(strstr(crec_status_string(CREC_ERR_REMOTE), "another rank"));
}

/* ---- the barrier across ranks ---- */

#define R(b, off, size) crec_arg_buffer(crec_range_of((b), (off), (size)), CREC_ACCESS_READ)
#define W(b, off, size) crec_arg_buffer(crec_range_of((b), (off), (size)), CREC_ACCESS_WRITE)

typedef struct fix {
  crec_program *p;
  crec_kernel k;
  crec_region body;
  crec_comm_slot world;
} fix;

static fix fix_make(int ranks) {
  fix f;
  f.p = crec_test_program(&f.k);
  f.body = crec_program_body(f.p);
  EXPECT_OK(crec_program_add_communicator(f.p, "world", ranks, &f.world));
  return f;
}

static crec_command launch_in(fix *f, crec_region r, const char *name, crec_arg a, crec_arg b) {
  crec_arg args[3] = {a, b, crec_arg_i32(1)};
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = f->k;
  l.args = args;
  l.num_args = 3;
  crec_command c;
  EXPECT_OK(crec_program_add_launch(f->p, r, name, &l, &c));
  return c;
}

static crec_buffer arg(fix *f, const char *name) {
  crec_buffer b;
  EXPECT_OK(crec_program_add_argument(f->p, name, 256, NULL, &b));
  return b;
}

Test(multi, a_barrier_across_ranks_is_a_barrier_with_a_communicator_and_a_scratch) {
  fix f = fix_make(2);
  crec_command b1, b2, b3, local;
  EXPECT_OK(crec_program_add_comm_barrier(f.p, f.body, "sync", f.world, &b1));
  EXPECT_OK(crec_program_add_comm_barrier(f.p, f.body, "sync", f.world, &b2));
  EXPECT_OK(crec_program_add_comm_barrier(f.p, f.body, NULL, f.world, &b3));
  EXPECT_OK(crec_program_add_barrier(f.p, f.body, NULL, &local));
  crec_command_info info = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(f.p, b1, &info));
  cr_assert_eq(info.kind, CREC_COMMAND_BARRIER);
  cr_assert_str_eq(info.name, "sync");
  cr_assert_eq(info.num_operands, 1);
  crec_comm_slot c;
  crec_buffer scratch;
  EXPECT_OK(crec_command_get_barrier(f.p, b1, &c, &scratch));
  cr_assert_eq(c.id, f.world.id);
  cr_assert_eq(scratch.id, info.workspace.id, "the info's workspace is the scratch");
  crec_buffer_info bi;
  EXPECT_OK(crec_buffer_get_info(f.p, scratch, &bi));
  cr_assert_str_eq(bi.name, "sync.scratch");
  cr_assert_eq(bi.kind, CREC_BUFFER_TEMPORARY);
  cr_assert_eq(bi.size, 4);
  crec_range r;
  crec_access a;
  EXPECT_OK(crec_command_get_operand(f.p, b1, 0, &r, &a));
  cr_assert(r.buffer.id == scratch.id && r.offset == 0 && r.size == 4 && a == CREC_ACCESS_READ_WRITE);
  /* a taken scratch name gets a number; no name gives "barrier" */
  EXPECT_OK(crec_command_get_barrier(f.p, b2, NULL, &scratch));
  EXPECT_OK(crec_buffer_get_info(f.p, scratch, &bi));
  cr_assert_str_eq(bi.name, "sync.scratch2");
  EXPECT_OK(crec_command_get_barrier(f.p, b3, &c, &scratch));
  EXPECT_OK(crec_buffer_get_info(f.p, scratch, &bi));
  cr_assert_str_eq(bi.name, "barrier.scratch");
  /* a barrier within the rank has neither */
  EXPECT_OK(crec_command_get_barrier(f.p, local, &c, &scratch));
  cr_assert(c.id == 0 && scratch.id == 0);
  EXPECT_OK(crec_command_get_info(f.p, local, &info));
  cr_assert_eq(info.num_operands, 0);
  EXPECT_STATUS(crec_command_get_operand(f.p, local, 0, &r, &a), CREC_ERR_INVALID_ARGUMENT);
  crec_program_destroy(f.p);
}

Test(multi, a_barrier_across_ranks_is_refused_without_changing_the_program) {
  fix f = fix_make(4);
  fix other = fix_make(4);
  crec_command c = {7};
  EXPECT_REFUSED(f.p, crec_program_add_comm_barrier(f.p, f.body, "b", other.world, &c), CREC_ERR_INVALID_HANDLE,
                 "barrier 'b': argument 'communicator'");
  cr_assert_eq(c.id, 0);
  crec_comm_slot none = {0}, garbage = {CREC_TEST_GARBAGE_ID};
  EXPECT_REFUSED(f.p, crec_program_add_comm_barrier(f.p, f.body, NULL, none, &c), CREC_ERR_INVALID_HANDLE,
                 "barrier 'barrier': argument 'communicator': handle 0x00000000");
  EXPECT_REFUSED(f.p, crec_program_add_comm_barrier(f.p, f.body, NULL, garbage, &c), CREC_ERR_INVALID_HANDLE,
                 "is not a communicator of this program");
  crec_region bad = {CREC_TEST_GARBAGE_ID};
  EXPECT_REFUSED(f.p, crec_program_add_comm_barrier(f.p, bad, NULL, f.world, &c), CREC_ERR_INVALID_HANDLE, "region");
  EXPECT_STATUS(crec_program_add_comm_barrier(f.p, f.body, NULL, f.world, NULL), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_program_add_comm_barrier(NULL, f.body, NULL, f.world, &c), CREC_ERR_NULL_POINTER);
  /* getters */
  crec_command l = launch_in(&f, f.body, "l", W(arg(&f, "x"), 0, 4), R(arg(&f, "y"), 0, 4));
  crec_comm_slot got = {9};
  EXPECT_STATUS(crec_command_get_barrier(f.p, l, &got, NULL), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("command 'l' is a launch, not a barrier");
  cr_assert_eq(got.id, 0);
  EXPECT_STATUS(crec_command_get_barrier(NULL, l, &got, NULL), CREC_ERR_NULL_POINTER);
  crec_command garbage_c = {CREC_TEST_GARBAGE_ID};
  EXPECT_STATUS(crec_command_get_barrier(f.p, garbage_c, &got, NULL), CREC_ERR_INVALID_HANDLE);
  crec_program_destroy(other.p);
  crec_program_destroy(f.p);
}

Test(multi, a_barrier_across_ranks_refused_for_lack_of_memory_adds_nothing) {
  fix f = fix_make(2);
  crec_command c;
  uint64_t n = 1;
  for (;; n++) {
    crec_test_counts before = crec_test_counts_of(f.p);
    crec_debug_fail_after(CREC_FAULT_ALLOC, n);
    crec_status s = crec_program_add_comm_barrier(f.p, f.body, "sync", f.world, &c);
    crec_debug_fail_after(CREC_FAULT_ALLOC, 0);
    if (s == CREC_OK) break;
    cr_assert_eq(s, CREC_ERR_OUT_OF_MEMORY, "allocation %llu: %s", (unsigned long long)n, crec_last_error());
    EXPECT_ERROR_MENTIONS("crec_program_add_comm_barrier");
    cr_assert_eq(c.id, 0);
    crec_test_expect_counts(f.p, &before, "crec_program_add_comm_barrier under a failed allocation");
    cr_assert_lt(n, 100);
  }
  cr_assert_gt(n, 3, "the builder allocates: the loop must have failed some");
  crec_buffer scratch;
  EXPECT_OK(crec_command_get_barrier(f.p, c, NULL, &scratch));
  crec_buffer_info bi;
  EXPECT_OK(crec_buffer_get_info(f.p, scratch, &bi));
  cr_assert_str_eq(bi.name, "sync.scratch", "a refused attempt left a scratch behind");
  crec_program_destroy(f.p);
}

Test(multi, a_barrier_across_ranks_orders_like_a_barrier) {
  fix f = fix_make(2);
  crec_buffer x = arg(&f, "x"), y = arg(&f, "y"), z = arg(&f, "z"), u = arg(&f, "u");
  crec_command a = launch_in(&f, f.body, "a", W(x, 0, 4), R(u, 0, 4));
  crec_command b = launch_in(&f, f.body, "b", W(y, 0, 4), R(u, 0, 4));
  crec_command bar;
  EXPECT_OK(crec_program_add_comm_barrier(f.p, f.body, "sync", f.world, &bar));
  crec_command c = launch_in(&f, f.body, "c", R(x, 0, 4), W(u, 64, 4));
  crec_command d = launch_in(&f, f.body, "d", R(z, 0, 4), W(u, 128, 4));
  for (int sequential = 0; sequential < 2; sequential++) {
    crec_plan_options o = CREC_PLAN_OPTIONS_INIT;
    o.schedule = sequential ? CREC_SCHEDULE_SEQUENTIAL : CREC_SCHEDULE_CONCURRENT;
    crec_plan *plan;
    EXPECT_OK(crec_plan_create(f.p, &o, &plan));
    if (sequential) {
      EXPECT_DEPS(plan, bar, b);
    } else {
      EXPECT_DEPS(plan, bar, a, b); /* b touches nothing of a: both come first all the same */
    }
    EXPECT_DEPS(plan, c, bar);
    if (sequential) {
      EXPECT_DEPS(plan, d, c);
    } else {
      EXPECT_DEPS(plan, d, bar); /* independent of everything before, yet after the barrier */
    }
    crec_plan_destroy(plan);
  }
  crec_program_destroy(f.p);
}

Test(multi, a_barrier_inside_a_loop_shows_its_scratch_to_the_loop) {
  /* t is live before the loop only, so its arena bytes are the scratch's: the
   * loop (whose barrier writes the scratch) must wait for t's last reader */
  fix f = fix_make(2);
  crec_buffer x = arg(&f, "x"), flag = arg(&f, "flag"), t;
  EXPECT_OK(crec_program_add_temporary(f.p, "t", 4, &t));
  crec_command w1 = launch_in(&f, f.body, "w1", W(t, 0, 4), R(flag, 0, 4));
  crec_command r1 = launch_in(&f, f.body, "r1", R(t, 0, 4), W(x, 0, 4));
  crec_command loop;
  crec_region cond, body;
  EXPECT_OK(crec_program_add_while(f.p, f.body, "loop", crec_range_of(flag, 8, 1), &loop, &cond, &body));
  crec_command bar;
  EXPECT_OK(crec_program_add_comm_barrier(f.p, body, "sync", f.world, &bar));
  crec_plan *plan;
  EXPECT_OK(crec_plan_create(f.p, NULL, &plan));
  crec_buffer scratch;
  EXPECT_OK(crec_command_get_barrier(f.p, bar, NULL, &scratch));
  uint64_t ot, os;
  EXPECT_OK(crec_plan_get_temporary(plan, t, &ot));
  EXPECT_OK(crec_plan_get_temporary(plan, scratch, &os));
  cr_assert_eq(ot, os, "t and the scratch never live together, so they share the arena");
  EXPECT_DEPS(plan, r1, w1);
  EXPECT_DEPS(plan, loop, r1);
  crec_plan_destroy(plan);
  crec_program_destroy(f.p);
}

Test(multi, dumps_show_the_barrier_across_ranks) {
  fix f = fix_make(2);
  crec_command c;
  EXPECT_OK(crec_program_add_comm_barrier(f.p, f.body, "sync", f.world, &c));
  crec_comm_slot solo;
  EXPECT_OK(crec_program_add_communicator(f.p, "solo\"x", 1, &solo));
  EXPECT_OK(crec_program_add_comm_barrier(f.p, f.body, "alone", solo, &c));
  EXPECT_OK(crec_program_add_barrier(f.p, f.body, "local", &c));
  EXPECT_DUMP_HAS(f.p, CREC_DUMP_TEXT, "#0 barrier 'sync' across the 2 ranks of 'world' (scratch sync.scratch)\n",
                  "#1 barrier 'alone' across the 1 ranks of 'solo\"x' (scratch alone.scratch), one rank: "
                  "no NCCL after #0\n",
                  "#2 barrier 'local' after #1\n", "sync.scratch     temporary 4 bytes, arena offset");
  /* a barrier across ranks touches its scratch word; a local one touches nothing */
  EXPECT_DUMP_HAS(f.p, CREC_DUMP_JSON,
                  "{\"id\":0,\"kind\":\"barrier\",\"name\":\"sync\",\"region\":0,\"deps\":[],\"operands\":["
                  "{\"buffer\":\"sync.scratch\",\"offset\":0,\"end\":4,\"access\":\"read-write\"}]}",
                  "{\"id\":2,\"kind\":\"barrier\",\"name\":\"local\",\"region\":0,\"deps\":[1]}]}");
  EXPECT_DUMP_HAS(f.p, CREC_DUMP_DOT, "label=\"#0 barrier\\nsync\\nacross world\"",
                  "label=\"#1 barrier\\nalone\\nacross solo\\\"x\"", "label=\"#2 barrier\\nlocal\"");
  crec_program_destroy(f.p);
}

Test(multi, a_barrier_across_ranks_needs_its_communicator_bound) {
  fix f = fix_make(2);
  crec_command c;
  EXPECT_OK(crec_program_add_comm_barrier(f.p, f.body, "sync", f.world, &c));
  crec_bindings b = CREC_BINDINGS_INIT;
  crec_exec *e = NULL;
  EXPECT_STATUS(crec_record(f.p, &b, NULL, &e), CREC_ERR_BINDING);
  EXPECT_ERROR_MENTIONS("0 communicator bindings given, but the program has 1");
  crec_comm *none[1] = {NULL};
  b.communicators = none;
  b.num_communicators = 1;
  EXPECT_STATUS(crec_record(f.p, &b, NULL, &e), CREC_ERR_BINDING);
  EXPECT_ERROR_MENTIONS("crec_record: command 0 ('sync'): communicator binding 0 ('world'): NULL");
  EXPECT_STATUS(crec_run_eager(f.p, &b, NULL), CREC_ERR_BINDING);
  EXPECT_ERROR_MENTIONS("crec_run_eager: command 0 ('sync'): communicator binding 0 ('world'): NULL");
  cr_assert_null(e);
  crec_program_destroy(f.p);
}

/* ---- NCCL work in program order ---- */

static crec_command all_reduce(fix *f, crec_region r, const char *name, crec_comm_slot c, crec_buffer send,
                               crec_buffer recv, int async, int single_rank_groups) {
  static const int32_t singles[2] = {0, 1}; /* two groups of one rank each */
  crec_collective d = CREC_COLLECTIVE_INIT;
  d.communicator = c;
  d.type = CREC_ELEMENT_I32;
  d.send = crec_range_of(send, 0, 64);
  d.recv = crec_range_of(recv, 0, 64);
  d.async = async;
  if (single_rank_groups) d.groups = singles, d.num_groups = 2, d.group_size = 1;
  crec_command cmd;
  EXPECT_OK(crec_program_add_collective(f->p, r, name, &d, &cmd));
  return cmd;
}

Test(multi, collectives_over_one_communicator_run_in_program_order) {
  /* disjoint buffers, so no hazard orders them: only the communicator does */
  fix f = fix_make(2);
  crec_comm_slot other;
  EXPECT_OK(crec_program_add_communicator(f.p, "other", 2, &other));
  crec_buffer b[10];
  for (int i = 0; i < 10; i++) {
    char name[8];
    snprintf(name, sizeof name, "b%d", i);
    b[i] = arg(&f, name);
  }
  crec_command a1 = all_reduce(&f, f.body, "a1", f.world, b[0], b[1], 1, 0); /* async start */
  crec_command o1 = all_reduce(&f, f.body, "o1", other, b[2], b[3], 0, 0);
  crec_command a2 = all_reduce(&f, f.body, "a2", f.world, b[4], b[5], 0, 0);
  crec_command done;
  EXPECT_OK(crec_program_add_collective_done(f.p, f.body, NULL, a1, &done));
  crec_command copy = all_reduce(&f, f.body, "copy", f.world, b[6], b[7], 0, 1); /* single-rank groups: no NCCL */
  crec_command bar;
  EXPECT_OK(crec_program_add_comm_barrier(f.p, f.body, "sync", f.world, &bar));
  crec_command loop;
  crec_region cond, body;
  EXPECT_OK(crec_program_add_while(f.p, f.body, "loop", crec_range_of(b[8], 0, 1), &loop, &cond, &body));
  all_reduce(&f, body, "inner", f.world, b[8], b[9], 0, 0);
  crec_plan *plan;
  EXPECT_OK(crec_plan_create(f.p, NULL, &plan));
  EXPECT_DEPS(plan, a2, a1); /* not o1: another communicator */
  crec_test_expect_deps(plan, o1, 0, NULL, "o1");
  crec_test_expect_deps(plan, copy, 0, NULL, "copy (no NCCL work)");
  EXPECT_DEPS(plan, done, a1);
  EXPECT_DEPS(plan, bar, o1, a2, done, copy);
  EXPECT_DEPS(plan, loop, bar);
  crec_plan_destroy(plan);
  /* sequential: the chain skips the async start, the next NCCL work does not */
  crec_plan_options o = CREC_PLAN_OPTIONS_INIT;
  o.schedule = CREC_SCHEDULE_SEQUENTIAL;
  EXPECT_OK(crec_plan_create(f.p, &o, &plan));
  EXPECT_DEPS(plan, o1);
  EXPECT_DEPS(plan, a2, a1, o1);
  crec_plan_destroy(plan);
  crec_program_destroy(f.p);
}
