/* GPU suite for device-side control flow: while, if and switch as conditional
 * graph nodes, compared byte for byte with the host-driven eager executor and
 * with expected values, in both the native and the legacy (one IF node per
 * branch) forms. Skips without a CUDA device. */
#include <limits.h>
#include <stdlib.h>

#include "gpu_util.h"

static crec_stream stream;

static void setup(void) {
  REQUIRE_DEVICE();
  EXPECT_OK(crec_stream_create(0, &stream));
}
static void teardown(void) { crec_stream_destroy(stream); }

TestSuite(control, .init = setup, .fini = teardown);

enum { N = 256, NB = N * 4, LOG = 64 };

/* Arguments shared by these programs: `state` holds counters (ints at 0, 4, 8)
 * and predicate bytes (at 16, 17), `acc` N words, `log` LOG ints plus a position
 * at LOG*4. */
typedef struct cf {
  gt t;
  crec_buffer state, acc, log;
  crec_region body;
} cf;

static void cf_init(cf *c) {
  gt_init(&c->t, 0);
  EXPECT_OK(crec_program_add_argument(c->t.p, "state", 64, NULL, &c->state));
  EXPECT_OK(crec_program_add_argument(c->t.p, "acc", NB, NULL, &c->acc));
  EXPECT_OK(crec_program_add_argument(c->t.p, "log", LOG * 4 + 4, NULL, &c->log));
  c->body = crec_program_body(c->t.p);
}

static crec_range counter(cf *c, int i) { return crec_range_of(c->state, (uint64_t)i * 4, 4); }
static crec_range pred(cf *c, int i) { return crec_range_of(c->state, 16 + (uint64_t)i, 1); }

static void inc_acc(cf *c, crec_region r) {
  crec_arg a[] = {crec_arg_buffer(crec_range_whole(c->acc), CREC_ACCESS_READ_WRITE), crec_arg_i32(N)};
  gt_launch(&c->t, r, c->t.inc, N, a, 2);
}
static void countdown(cf *c, crec_region r, int i, int p) {
  crec_arg a[] = {crec_arg_buffer(counter(c, i), CREC_ACCESS_READ_WRITE), crec_arg_buffer(pred(c, p), CREC_ACCESS_WRITE)};
  gt_launch1(&c->t, r, c->t.countdown, a, 2);
}
static void test_positive(cf *c, crec_region r, int i, int p) {
  crec_arg a[] = {crec_arg_buffer(counter(c, i), CREC_ACCESS_READ), crec_arg_buffer(pred(c, p), CREC_ACCESS_WRITE)};
  gt_launch1(&c->t, r, c->t.test_positive, a, 2);
}
static void store(cf *c, crec_region r, int i, int v) {
  crec_arg a[] = {crec_arg_buffer(counter(c, i), CREC_ACCESS_WRITE), crec_arg_i32(v)};
  gt_launch1(&c->t, r, c->t.store_i32, a, 2);
}
static void log_tag(cf *c, crec_region r, int tag) {
  crec_arg a[] = {crec_arg_buffer(crec_range_of(c->log, 0, LOG * 4), CREC_ACCESS_READ_WRITE),
                  crec_arg_buffer(crec_range_of(c->log, LOG * 4, 4), CREC_ACCESS_READ_WRITE), crec_arg_i32(tag)};
  gt_launch1(&c->t, r, c->t.log, a, 3);
}

/* Device memory for one side (graph or eager): three copies of state (where
 * predicates and indexes live) and of acc, for rotation. */
typedef struct side {
  int32_t *state[3];
  uint32_t *acc[3];
  int32_t *log;
} side;

static void side_alloc(side *s) {
  for (int k = 0; k < 3; k++) s->state[k] = gt_alloc(64);
  for (int k = 0; k < 3; k++) s->acc[k] = gt_alloc(NB);
  s->log = gt_alloc(LOG * 4 + 4);
}
static void side_free(side *s) {
  for (int k = 0; k < 3; k++) crec_device_free(s->state[k]);
  for (int k = 0; k < 3; k++) crec_device_free(s->acc[k]);
  crec_device_free(s->log);
}
/* Resets state copy k (counters c0..c2, predicates 0) and the log. */
static void side_reset(side *s, int k, int c0, int c1, int c2) {
  int32_t st[16] = {c0, c1, c2};
  gt_upload(s->state[k], st, sizeof st);
  int32_t lg[LOG + 1] = {0};
  gt_upload(s->log, lg, sizeof lg);
}
static void side_bind(side *s, int k, crec_binding b[3]) {
  b[0] = (crec_binding){s->state[k], 64};
  b[1] = (crec_binding){s->acc[k], NB};
  b[2] = (crec_binding){s->log, LOG * 4 + 4};
}

/* Replays (recorded with `o`) and runs eagerly `reps` times with counters from
 * `init` (reset before each run) and acc rotated; compares every argument byte.
 * Returns the exec's stats. */
static crec_exec_stats run_both_with(cf *c, const crec_record_options *o, int reps, int c0, int c1, int c2,
                                     int32_t *log_out) {
  side g, e;
  side_alloc(&g);
  side_alloc(&e);
  for (int k = 0; k < 3; k++) {
    gt_fill(g.acc[k], NB, (uint32_t)k);
    gt_fill(e.acc[k], NB, (uint32_t)k);
  }
  crec_binding gb[3], eb[3];
  crec_bindings bg = CREC_BINDINGS_INIT, be = CREC_BINDINGS_INIT;
  bg.buffers = gb, be.buffers = eb;
  bg.num_buffers = be.num_buffers = 3;
  side_bind(&g, 0, gb);
  crec_exec *ex;
  EXPECT_OK(crec_record(c->t.p, &bg, o, &ex));
  reps = gt_reps(reps);
  for (int it = 0; it < reps; it++) {
    /* everything rotates, the predicates' and indexes' buffer too */
    side_reset(&g, it % 3, c0, c1, c2);
    side_reset(&e, it % 3, c0, c1, c2);
    side_bind(&g, it % 3, gb);
    side_bind(&e, it % 3, eb);
    gt_replay(ex, &bg, stream);
    gt_eager(c->t.p, &be, stream);
    gt_expect_same(g.state[it % 3], e.state[it % 3], 64, "state");
    gt_expect_same(g.acc[it % 3], e.acc[it % 3], NB, "acc");
    gt_expect_same(g.log, e.log, LOG * 4 + 4, "log");
  }
  if (log_out) gt_download(log_out, g.log, LOG * 4 + 4);
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  crec_exec_destroy(ex);
  side_free(&g);
  side_free(&e);
  return st;
}

/* run_both_with() with native or legacy conditionals. */
static crec_exec_stats run_both(cf *c, int legacy, int reps, int c0, int c1, int c2, int32_t *log_out) {
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.legacy_conditionals = legacy;
  return run_both_with(c, &o, reps, c0, c1, c2, log_out);
}

/* Records with `o` (NULL: defaults), replays once with counter 0 at `c0` and
 * acc zeroed, and returns acc[0]: the iterations run (every element must agree).
 * `*check` (may be NULL) gets crec_exec_check()'s status after the replay. */
static uint32_t count_run(cf *c, const crec_record_options *o, int c0, crec_status *check) {
  side g;
  side_alloc(&g);
  uint32_t h[N] = {0};
  gt_upload(g.acc[0], h, NB);
  side_reset(&g, 0, c0, 0, 0);
  crec_binding gb[3];
  crec_bindings bg = CREC_BINDINGS_INIT;
  bg.buffers = gb;
  bg.num_buffers = 3;
  side_bind(&g, 0, gb);
  crec_exec *ex;
  EXPECT_OK(crec_record(c->t.p, &bg, o, &ex));
  gt_replay(ex, &bg, stream);
  crec_status st = crec_exec_check(ex);
  if (check) *check = st;
  gt_download(h, g.acc[0], NB);
  crec_exec_destroy(ex);
  side_free(&g);
  for (int i = 1; i < N; i++) cr_assert_eq(h[i], h[0], "element %d ran %u times, element 0 %u", i, h[i], h[0]);
  return h[0];
}

/* acc[0] after one replay (native or legacy conditionals), for counting iterations */
static uint32_t acc0_after(cf *c, int legacy, int c0) {
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.legacy_conditionals = legacy;
  return count_run(c, &o, c0, NULL);
}

/* while (counter > 0) { acc += 1; counter -= 1 } with the condition in the cond region */
static void build_count_loop(cf *c) {
  crec_command w;
  crec_region cond, body;
  EXPECT_OK(crec_program_add_while(c->t.p, c->body, "loop", pred(c, 0), &w, &cond, &body));
  test_positive(c, cond, 0, 0);
  inc_acc(c, body);
  crec_arg a[] = {crec_arg_buffer(counter(c, 0), CREC_ACCESS_READ_WRITE), crec_arg_buffer(pred(c, 1), CREC_ACCESS_WRITE)};
  gt_launch1(&c->t, body, c->t.countdown, a, 2);
}

Test(control, while_runs_0_1_and_1000_iterations) {
  cf c;
  cf_init(&c);
  build_count_loop(&c);
  int counts[] = {0, 1, 1000};
  for (int i = 0; i < 3; i++) {
    cr_expect_eq(acc0_after(&c, 0, counts[i]), (uint32_t)counts[i], "counter %d", counts[i]);
    run_both(&c, 0, 6, counts[i], 0, 0, NULL);
  }
  crec_program_destroy(c.t.p);
}

Test(control, body_writes_its_own_predicate) {
  cf c;
  cf_init(&c);
  test_positive(&c, c.body, 0, 0);
  crec_command w;
  crec_region cond, body;
  EXPECT_OK(crec_program_add_while(c.t.p, c.body, "loop", pred(&c, 0), &w, &cond, &body));
  inc_acc(&c, body);
  countdown(&c, body, 0, 0); /* writes the loop's own predicate; cond is empty */
  cr_expect_eq(acc0_after(&c, 0, 37), 37);
  cr_expect_eq(acc0_after(&c, 0, 0), 0);
  run_both(&c, 0, 12, 25, 0, 0, NULL);
  crec_program_destroy(c.t.p);
}

/* A record loads the program's module and crec's set-condition kernels, whose
 * fatbin has cubins for sm_80, 90, 100 and 120 (and their later minors); the
 * test kernels' fatbin has sm_90's. Where both have one, nothing is compiled from
 * PTX; a second record of the program loads nothing. */
Test(control, a_record_loads_cubins_where_the_chip_has_them) {
  int major = 0, minor = 0;
  char name[128];
  EXPECT_OK(crec_device_describe(0, name, sizeof name, &major, &minor));
  for (int fatbin = 0; fatbin < 2; fatbin++) {
    cf c;
    gt_init(&c.t, fatbin);
    EXPECT_OK(crec_program_add_argument(c.t.p, "state", 64, NULL, &c.state));
    EXPECT_OK(crec_program_add_argument(c.t.p, "acc", NB, NULL, &c.acc));
    EXPECT_OK(crec_program_add_argument(c.t.p, "log", LOG * 4 + 4, NULL, &c.log));
    c.body = crec_program_body(c.t.p);
    crec_command w;
    crec_region cond, body;
    EXPECT_OK(crec_program_add_while(c.t.p, c.body, "loop", pred(&c, 0), &w, &cond, &body));
    test_positive(&c, cond, 0, 0);
    inc_acc(&c, body);
    countdown(&c, body, 0, 1);
    bool own_cubin = major == 8 || major == 9 || major == 10 || major == 12;
    bool test_cubin = fatbin && major == 9;
    crec_exec_stats st = run_both(&c, 0, 3, 4, 0, 0, NULL);
    cr_expect_eq(st.modules_loaded, 2, "%s, fatbin %d: %llu modules loaded", name, fatbin,
                 (unsigned long long)st.modules_loaded);
    cr_expect_eq(st.modules_jit, (uint64_t)!own_cubin + !test_cubin, "%s (sm_%d%d), fatbin %d: %llu compiled from PTX",
                 name, major, minor, fatbin, (unsigned long long)st.modules_jit);
    st = run_both(&c, 0, 1, 4, 0, 0, NULL);
    cr_expect_eq(st.modules_loaded, 0, "a second record of the program loaded %llu modules",
                 (unsigned long long)st.modules_loaded);
    crec_program_destroy(c.t.p);
  }
}

/* while (counter0 > 0) { counter1 = 4; while (counter1 > 0) { acc += 1; counter1 -= 1 } counter0 -= 1 };
 * returns the inner loop */
static crec_command build_nested_loops(cf *c) {
  crec_command outer, inner;
  crec_region cond, body, icond, ibody;
  EXPECT_OK(crec_program_add_while(c->t.p, c->body, "outer", pred(c, 0), &outer, &cond, &body));
  test_positive(c, cond, 0, 0);
  store(c, body, 1, 4);
  EXPECT_OK(crec_program_add_while(c->t.p, body, "inner", pred(c, 1), &inner, &icond, &ibody));
  test_positive(c, icond, 1, 1);
  inc_acc(c, ibody);
  countdown(c, ibody, 1, 2);
  countdown(c, body, 0, 3);
  return inner;
}

Test(control, while_inside_while) {
  cf c;
  cf_init(&c);
  build_nested_loops(&c);
  cr_expect_eq(acc0_after(&c, 0, 3), 12);
  run_both(&c, 0, 9, 3, 0, 0, NULL);
  run_both(&c, 1, 9, 5, 0, 0, NULL);
  crec_program_destroy(c.t.p);
}

/* while (counter > 0) { [acc += 1;] switch (counter) { n (at most 8) branches,
 * branch b logs tag0 + b }; counter -= 1 } */
static void build_switch_loop(cf *c, bool count, int n, int tag0) {
  crec_command w, sw;
  crec_region cond, body, br[8];
  EXPECT_OK(crec_program_add_while(c->t.p, c->body, "loop", pred(c, 0), &w, &cond, &body));
  test_positive(c, cond, 0, 0);
  if (count) inc_acc(c, body);
  EXPECT_OK(crec_program_add_switch(c->t.p, body, "dispatch", counter(c, 0), (size_t)n, NULL, &sw, br));
  for (int b = 0; b < n; b++) log_tag(c, br[b], tag0 + b);
  countdown(c, body, 0, 1);
}

static void check_switch_inside_while(int legacy) {
  cf c;
  cf_init(&c);
  build_switch_loop(&c, false, 4, 10);
  int32_t lg[LOG + 1];
  run_both(&c, legacy, 6, 6, 0, 0, lg);
  /* counter 6,5,4 → default (3); 3,2,1 → branches 3,2,1 */
  int32_t expect[] = {13, 13, 13, 13, 12, 11};
  cr_expect_eq(lg[LOG], 6, "legacy %d: %d log entries", legacy, lg[LOG]);
  for (int i = 0; i < 6; i++) cr_expect_eq(lg[i], expect[i], "legacy %d, entry %d: %d", legacy, i, lg[i]);
  crec_program_destroy(c.t.p);
}

Test(control, switch_inside_while) { check_switch_inside_while(0); }

Test(control, switch_inside_while_legacy) { check_switch_inside_while(1); }

static void check_switch(int legacy, const int32_t *cases) {
  cf c;
  cf_init(&c);
  crec_command sw;
  crec_region br[5];
  EXPECT_OK(crec_program_add_switch(c.t.p, c.body, "switch", counter(&c, 0), 5, cases, &sw, br));
  for (int b = 0; b < 5; b++) log_tag(&c, br[b], b);
  int32_t idx[] = {0, 1, 2, 3, 4, 5, -1, INT32_MIN, INT32_MAX, 100, -100, 7};
  for (size_t i = 0; i < sizeof idx / sizeof *idx; i++) {
    int32_t lg[LOG + 1];
    run_both(&c, legacy, 3, idx[i], 0, 0, lg);
    int expect = 4;
    for (int b = 0; b < 4; b++)
      if ((cases ? cases[b] : b) == idx[i]) expect = b;
    cr_expect_eq(lg[LOG], 1, "index %d: %d branches ran", idx[i], lg[LOG]);
    cr_expect_eq(lg[0], expect, "legacy %d, %s, index %d: branch %d ran, expected %d", legacy,
                 cases ? "case table" : "plain", idx[i], lg[0], expect);
  }
  crec_program_destroy(c.t.p);
}

Test(control, switch_on_every_index_and_out_of_range) {
  static const int32_t cases[4] = {7, -100, INT32_MAX, 0};
  for (int legacy = 0; legacy < 2; legacy++) {
    check_switch(legacy, NULL);
    check_switch(legacy, cases);
  }
}

Test(control, switch_with_one_branch_always_runs_it) {
  cf c;
  cf_init(&c);
  crec_command sw;
  crec_region br[1];
  EXPECT_OK(crec_program_add_switch(c.t.p, c.body, "switch", counter(&c, 0), 1, NULL, &sw, br));
  log_tag(&c, br[0], 42);
  int32_t lg[LOG + 1];
  run_both(&c, 0, 3, 5, 0, 0, lg);
  cr_expect_eq(lg[0], 42);
  crec_program_destroy(c.t.p);
}

Test(control, if_else_and_empty_branches) {
  for (int legacy = 0; legacy < 2; legacy++)
    for (int shape = 0; shape < 3; shape++) {
      /* shape 0: then and else; 1: then only; 2: else only */
      cf c;
      cf_init(&c);
      test_positive(&c, c.body, 0, 0);
      crec_command cmd;
      crec_region th, el;
      EXPECT_OK(crec_program_add_if(c.t.p, c.body, "if", pred(&c, 0), &cmd, &th, &el));
      if (shape != 2) log_tag(&c, th, 1);
      if (shape != 1) log_tag(&c, el, 2);
      log_tag(&c, c.body, 3);
      for (int v = 0; v < 2; v++) {
        int32_t lg[LOG + 1];
        run_both(&c, legacy, 4, v ? 9 : -3, 0, 0, lg);
        int ran = v ? (shape != 2 ? 1 : 0) : (shape != 1 ? 2 : 0);
        int n = ran ? 2 : 1;
        cr_expect_eq(lg[LOG], n, "legacy %d shape %d pred %d: %d entries", legacy, shape, v, lg[LOG]);
        if (ran) cr_expect_eq(lg[0], ran, "legacy %d shape %d pred %d", legacy, shape, v);
        cr_expect_eq(lg[n - 1], 3);
      }
      crec_program_destroy(c.t.p);
    }
}

Test(control, empty_loop_body_and_cond_only_loop) {
  cf c;
  cf_init(&c);
  /* while (counter-- > 0) {}: the countdown is the whole cond region */
  crec_command w;
  crec_region cond, body;
  EXPECT_OK(crec_program_add_while(c.t.p, c.body, "spin", pred(&c, 0), &w, &cond, &body));
  countdown(&c, cond, 0, 0);
  inc_acc(&c, c.body);
  run_both(&c, 0, 4, 50, 0, 0, NULL);
  run_both(&c, 1, 4, 1, 0, 0, NULL);
  crec_program_destroy(c.t.p);
}

Test(control, buffers_used_only_inside_bodies_follow_rotation) {
  cf c;
  cf_init(&c);
  build_count_loop(&c);
  const int reps = gt_reps(30);
  crec_exec_stats st = run_both(&c, 0, reps, 20, 0, 0, NULL);
  /* acc rotates every replay: its node inside the WHILE body is updated in place */
  cr_expect_geq(st.last_nodes_updated, 1);
  cr_expect_geq(st.nodes_updated, (uint64_t)reps - 1);
  crec_program_destroy(c.t.p);
}

/* A copy and a fill inside the WHILE body, on arguments that rotate: their nodes
 * sit in the conditional body graph and are updated there each replay. The JAX
 * loop benchmark's 'x = x_next' memcpy node failed to update there
 * (cuGraphExecMemcpyNodeSetParams: CUDA_ERROR_INVALID_VALUE, on an H100 at
 * 9d7f2da, inside jax.jit); such copies and fills are crec's kernels now. */
Test(control, copies_and_fills_inside_a_loop_body_follow_rotation) {
  cf c;
  cf_init(&c);
  crec_command w, cmd;
  crec_region cond, body;
  EXPECT_OK(crec_program_add_while(c.t.p, c.body, "loop", pred(&c, 0), &w, &cond, &body));
  test_positive(&c, cond, 0, 0);
  inc_acc(&c, body);
  EXPECT_OK(crec_program_add_memcpy(c.t.p, body, "log = acc", crec_range_of(c.log, 0, 128),
                                    crec_range_of(c.acc, 0, 128), &cmd));
  EXPECT_OK(crec_program_add_memset(c.t.p, body, "acc tail = 7", crec_range_of(c.acc, NB - 64, 64), 7, 4, &cmd));
  crec_arg a[] = {crec_arg_buffer(counter(&c, 0), CREC_ACCESS_READ_WRITE), crec_arg_buffer(pred(&c, 1), CREC_ACCESS_WRITE)};
  gt_launch1(&c.t, body, c.t.countdown, a, 2);
  const int reps = gt_reps(30);
  crec_exec_stats st = run_both(&c, 0, reps, 5, 0, 0, NULL);
  cr_expect_geq(st.nodes_updated, (uint64_t)reps - 1);
  crec_program_destroy(c.t.p);
}

/* CUDA instantiates a graph with conditional nodes once: variants of a loop
 * are refused at record, naming why, leaking nothing; eager control flow has
 * no graph and keeps one. */
Test(control, variants_of_a_graph_with_conditional_nodes_are_refused) {
  long long live = crec_debug_live_objects();
  cf c;
  cf_init(&c);
  build_count_loop(&c);
  side g;
  side_alloc(&g);
  crec_binding gb[3];
  crec_bindings bg = CREC_BINDINGS_INIT;
  bg.buffers = gb;
  bg.num_buffers = 3;
  side_bind(&g, 0, gb);
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.variants = 2;
  crec_exec *ex = NULL;
  EXPECT_STATUS(crec_record(c.t.p, &bg, &o, &ex), CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("variants 2, but the graph holds 1 conditional node");
  cr_expect_null(ex);
  o.eager_control_flow = 1;
  crec_exec_stats st = run_both_with(&c, &o, 3, 20, 0, 0, NULL);
  cr_expect_eq(st.variants, 1, "an eager exec keeps %llu variants", (unsigned long long)st.variants);
  side_free(&g);
  crec_program_destroy(c.t.p);
  /* the program's runtime (its modules, per context) goes with the program */
  cr_expect_eq(crec_debug_live_objects(), live, "%lld objects leaked", crec_debug_live_objects() - live);
}

Test(control, loop_of_1000_iterations_with_rotation_matches_eager) {
  cf c;
  cf_init(&c);
  build_count_loop(&c);
  run_both(&c, 0, 20, 1000, 0, 0, NULL);
  run_both(&c, 1, 5, 1000, 0, 0, NULL);
  crec_program_destroy(c.t.p);
}

/* Without conditional nodes (drivers before CUDA 12.3, or forced) the exec
 * replays its program eagerly, and the stats say so. */
Test(control, without_conditional_nodes_replays_run_eagerly) {
  cf c;
  cf_init(&c);
  build_switch_loop(&c, true, 3, 0);
  side g, e;
  side_alloc(&g);
  side_alloc(&e);
  crec_binding gb[3], eb[3];
  crec_bindings bg = CREC_BINDINGS_INIT, be = CREC_BINDINGS_INIT;
  bg.buffers = gb, be.buffers = eb;
  bg.num_buffers = be.num_buffers = 3;
  side_bind(&g, 0, gb);
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.eager_control_flow = 1;
  crec_exec *ex;
  EXPECT_OK(crec_record(c.t.p, &bg, &o, &ex));
  for (int it = 0; it < 6; it++) {
    for (int k = 0; k < 3; k++) {
      gt_fill(g.acc[k], NB, (uint32_t)(it * 3 + k));
      gt_fill(e.acc[k], NB, (uint32_t)(it * 3 + k));
    }
    side_reset(&g, it % 3, 5, 0, 0);
    side_reset(&e, it % 3, 5, 0, 0);
    side_bind(&g, it % 3, gb);
    side_bind(&e, it % 3, eb);
    gt_replay(ex, &bg, stream);
    gt_eager(c.t.p, &be, stream);
    gt_expect_same(g.state[it % 3], e.state[it % 3], 64, "state");
    gt_expect_same(g.acc[it % 3], e.acc[it % 3], NB, "acc");
    gt_expect_same(g.log, e.log, LOG * 4 + 4, "log");
  }
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.nodes, 0, "an eager exec has %llu graph nodes", (unsigned long long)st.nodes);
  cr_expect_eq(st.replays, 6);
  /* per replay: the while once, the switch in each of its 5 iterations */
  cr_expect_eq(st.eager_commands, 6 * 6, "%llu control-flow commands ran on the host", (unsigned long long)st.eager_commands);
  crec_exec_destroy(ex);
  side_free(&g);
  side_free(&e);
  crec_program_destroy(c.t.p);
}

/* A switch with a case table inside a while's cond region is recorded twice
 * (before the loop and in its body): each copy needs its own table words. */
Test(control, switch_with_cases_in_a_loop_condition) {
  static const int32_t cases[2] = {3, 1};
  for (int legacy = 0; legacy < 2; legacy++) {
    cf c;
    cf_init(&c);
    crec_command w, sw;
    crec_region cond, body, br[3];
    EXPECT_OK(crec_program_add_while(c.t.p, c.body, "loop", pred(&c, 0), &w, &cond, &body));
    EXPECT_OK(crec_program_add_switch(c.t.p, cond, "tag", counter(&c, 0), 3, cases, &sw, br));
    for (int b = 0; b < 3; b++) log_tag(&c, br[b], 20 + b);
    test_positive(&c, cond, 0, 0);
    countdown(&c, body, 0, 1);
    int32_t lg[LOG + 1];
    run_both(&c, legacy, 4, 4, 0, 0, lg);
    /* counter 4, 3, 2, 1, 0 in the condition: default, case 3, default, case 1, default */
    int32_t expect[] = {22, 20, 22, 21, 22};
    cr_expect_eq(lg[LOG], 5, "legacy %d: %d entries", legacy, lg[LOG]);
    for (int i = 0; i < 5; i++) cr_expect_eq(lg[i], expect[i], "legacy %d, entry %d: %d", legacy, i, lg[i]);
    crec_program_destroy(c.t.p);
  }
}

/* A switch of 40 branches in a while's condition: recorded twice, and in legacy
 * form with more branch handles than one set kernel takes (two of them). */
Test(control, switch_of_40_branches_in_a_loop_condition) {
  for (int legacy = 0; legacy < 2; legacy++) {
    cf c;
    cf_init(&c);
    crec_command w, sw;
    crec_region cond, body, br[40];
    EXPECT_OK(crec_program_add_while(c.t.p, c.body, "loop", pred(&c, 0), &w, &cond, &body));
    EXPECT_OK(crec_program_add_switch(c.t.p, cond, "tag", counter(&c, 0), 40, NULL, &sw, br));
    for (int b = 0; b < 40; b++) log_tag(&c, br[b], b);
    test_positive(&c, cond, 0, 0);
    countdown(&c, body, 0, 1);
    int32_t lg[LOG + 1];
    run_both(&c, legacy, 3, 39, 0, 0, lg);
    /* the condition sees 39, 38, ..., 0: branch 39 is also the default */
    cr_expect_eq(lg[LOG], 40, "legacy %d: %d entries", legacy, lg[LOG]);
    for (int i = 0; i < 40; i++) cr_expect_eq(lg[i], 39 - i, "legacy %d, entry %d: %d", legacy, i, lg[i]);
    crec_program_destroy(c.t.p);
  }
}

/* ---- iteration limits ---- */

/* while (counter > 0) acc += 1: with counter never changed, a loop that never ends */
static crec_command build_endless_loop(cf *c) {
  crec_command w;
  crec_region cond, body;
  EXPECT_OK(crec_program_add_while(c->t.p, c->body, "forever", pred(c, 0), &w, &cond, &body));
  test_positive(c, cond, 0, 0);
  inc_acc(c, body);
  return w;
}

Test(control, a_loop_that_never_ends_stops_at_its_limit) {
  cf c;
  cf_init(&c);
  crec_command w = build_endless_loop(&c);
  EXPECT_OK(crec_program_set_loop_limit(c.t.p, w, 100));
  side g;
  side_alloc(&g);
  uint32_t h[N] = {0};
  gt_upload(g.acc[0], h, NB);
  side_reset(&g, 0, 1, 0, 0);
  crec_binding gb[3];
  crec_bindings bg = CREC_BINDINGS_INIT;
  bg.buffers = gb;
  bg.num_buffers = 3;
  side_bind(&g, 0, gb);
  crec_exec *ex;
  EXPECT_OK(crec_record(c.t.p, &bg, NULL, &ex));
  /* the replay itself succeeds; the loop stops after 100 iterations and says so */
  gt_replay(ex, &bg, stream);
  gt_download(h, g.acc[0], NB);
  cr_expect_eq(h[0], 100, "the body ran %u times", h[0]);
  EXPECT_STATUS(crec_exec_check(ex), CREC_ERR_LOOP_LIMIT);
  EXPECT_ERROR_MENTIONS("'forever'");
  EXPECT_ERROR_MENTIONS("limit of 100 iterations");
  EXPECT_OK(crec_exec_check(ex)); /* reported once */
  /* unchecked, a trip is reported by the next replay, which launches nothing */
  gt_replay(ex, &bg, stream);
  EXPECT_STATUS(crec_exec_replay(ex, &bg, stream), CREC_ERR_LOOP_LIMIT);
  EXPECT_ERROR_MENTIONS("launched nothing");
  EXPECT_OK(crec_stream_synchronize(stream));
  gt_download(h, g.acc[0], NB);
  cr_expect_eq(h[0], 200, "after two replays that ran the body: %u", h[0]);
  gt_replay(ex, &bg, stream);
  gt_download(h, g.acc[0], NB);
  cr_expect_eq(h[0], 300);
  crec_exec_destroy(ex);

  /* eagerly, the run itself stops with the status, after as many iterations */
  gt_upload(g.acc[0], (uint32_t[N]){0}, NB);
  EXPECT_STATUS(crec_run_eager(c.t.p, &bg, stream), CREC_ERR_LOOP_LIMIT);
  EXPECT_ERROR_MENTIONS("'forever'");
  EXPECT_OK(crec_stream_synchronize(stream));
  gt_download(h, g.acc[0], NB);
  cr_expect_eq(h[0], 100, "eagerly the body ran %u times", h[0]);
  /* an exec without conditional nodes replays eagerly: the replay fails */
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.eager_control_flow = 1;
  EXPECT_OK(crec_record(c.t.p, &bg, &o, &ex));
  EXPECT_STATUS(crec_exec_replay(ex, &bg, stream), CREC_ERR_LOOP_LIMIT);
  EXPECT_OK(crec_stream_synchronize(stream));
  crec_exec_destroy(ex);
  side_free(&g);
  crec_program_destroy(c.t.p);
}

Test(control, loop_limit_counts_body_iterations) {
  cf c;
  cf_init(&c);
  build_count_loop(&c);
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.max_loop_iterations = 50;
  crec_status check;
  /* exactly the limit: no trip */
  cr_expect_eq(count_run(&c, &o, 50, &check), 50);
  cr_expect_eq(check, CREC_OK, "%s: %s", crec_status_name(check), crec_last_error());
  cr_expect_eq(count_run(&c, &o, 0, &check), 0);
  cr_expect_eq(check, CREC_OK);
  /* one more would be needed: stopped after 50 */
  cr_expect_eq(count_run(&c, &o, 51, &check), 50);
  cr_expect_eq(check, CREC_ERR_LOOP_LIMIT);
  /* each replay counts from zero again */
  cr_expect_eq(count_run(&c, &o, 1000, &check), 50);
  crec_program_destroy(c.t.p);

  /* a loop's own CREC_LOOP_UNLIMITED overrides the exec's default */
  cf_init(&c);
  build_count_loop(&c);
  crec_command w = crec_program_command(c.t.p, 0);
  EXPECT_OK(crec_program_set_loop_limit(c.t.p, w, CREC_LOOP_UNLIMITED));
  o.max_loop_iterations = 10;
  cr_expect_eq(count_run(&c, &o, 1000, &check), 1000);
  cr_expect_eq(check, CREC_OK);
  crec_program_destroy(c.t.p);
}

/* An inner loop's count starts again at each iteration of the outer one. */
Test(control, nested_loop_limits_count_per_entry) {
  for (uint64_t inner_limit = 3; inner_limit <= 4; inner_limit++) {
    cf c;
    cf_init(&c);
    crec_command inner = build_nested_loops(&c);
    EXPECT_OK(crec_program_set_loop_limit(c.t.p, inner, inner_limit));
    crec_status check;
    uint32_t n = count_run(&c, NULL, 3, &check);
    if (inner_limit == 4) {
      cr_expect_eq(n, 12, "3 x 4 iterations, each within the inner limit: %u", n);
      cr_expect_eq(check, CREC_OK, "%s", crec_last_error());
    } else {
      /* the first time the inner loop trips, the outer loop goes on */
      cr_expect_eq(n, 9, "3 x 3 iterations: %u", n);
      cr_expect_eq(check, CREC_ERR_LOOP_LIMIT);
      EXPECT_ERROR_MENTIONS("'inner'");
    }
    crec_program_destroy(c.t.p);
  }
}
