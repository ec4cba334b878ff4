/* GPU suite for imported graphs as commands of a program (crec_program_add_graph):
 * a captured step inside a while loop that runs it until the step clears its
 * flag, in both branches of an if, and between a program's own kernels, each
 * replayed on rotated buffers against the step run eagerly on twins. Skips
 * without a CUDA device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"

static crec_stream stream;

static void setup(void) {
  REQUIRE_DEVICE();
  EXPECT_OK(crec_stream_create(0, &stream));
}
static void teardown(void) { crec_stream_destroy(stream); }

TestSuite(embed, .init = setup, .fini = teardown);

enum { N = 1024, B = N * 4, TAIL = 64, ST = 64 };

static crec_arg arg(crec_buffer b, uint64_t off, uint64_t size, crec_access a) {
  return crec_arg_buffer(crec_range_of(b, off, size), a);
}

/* The step, as someone else's work to capture: y = x * 3 + 7; the tail of y
 * filled with 5; x = y (copy); counter -= 1, flag = counter > 0 (in `st`:
 * the counter at byte 0, the flag at byte 16). With `countdown` 0 the step
 * leaves the flag alone. Arguments x, y, st. */
static void step_program(gt *t, int countdown) {
  gt_init(t, 0);
  crec_buffer x, y, st;
  EXPECT_OK(crec_program_add_argument(t->p, "x", B, NULL, &x));
  EXPECT_OK(crec_program_add_argument(t->p, "y", B, NULL, &y));
  EXPECT_OK(crec_program_add_argument(t->p, "st", ST, NULL, &st));
  crec_region body = crec_program_body(t->p);
  crec_arg a1[] = {arg(y, 0, B, CREC_ACCESS_WRITE), arg(x, 0, B, CREC_ACCESS_READ), crec_arg_i32(7), crec_arg_i32(N)};
  gt_launch(t, body, t->scale, N, a1, 4);
  crec_command c;
  EXPECT_OK(crec_program_add_memset(t->p, body, "tail of y = 5", crec_range_of(y, B - TAIL, TAIL), 5, 4, &c));
  EXPECT_OK(crec_program_add_memcpy(t->p, body, "x = y", crec_range_of(x, 0, B), crec_range_of(y, 0, B), &c));
  if (countdown) {
    crec_arg d[] = {arg(st, 0, 4, CREC_ACCESS_READ_WRITE), arg(st, 16, 1, CREC_ACCESS_WRITE)};
    gt_launch1(t, body, t->countdown, d, 2);
  }
}

/* The capture callback: the step's eager run on the capturing stream. */
static crec_status run_step(void *user, crec_stream s, void *const *bases) {
  const crec_program *p = user;
  crec_binding bd[3] = {{bases[0], B}, {bases[1], B}, {bases[2], ST}};
  crec_bindings b = CREC_BINDINGS_INIT;
  b.buffers = bd;
  b.num_buffers = 3;
  return crec_run_eager(p, &b, s);
}

/* Captures the step twice (on `own`, buffers it allocates, which the caller
 * frees after the exec: a copied argument is copied into them; then on
 * displaced ones) and imports it. */
static crec_exec *import_step(const crec_program *step, void *own[3]) {
  void *second[3];
  const uint64_t sizes[3] = {B, B, ST};
  crec_binding warm[3];
  for (int a = 0; a < 3; a++) {
    own[a] = gt_alloc(sizes[a]);
    second[a] = gt_alloc(sizes[a]);
    warm[a] = (crec_binding){own[a], sizes[a]};
  }
  /* the step's module loads before the capture (a load is no stream work) */
  crec_bindings wb = CREC_BINDINGS_INIT;
  wb.buffers = warm;
  wb.num_buffers = 3;
  gt_eager(step, &wb, stream);
  crec_graph_argument ga[3] = {{"x", own[0], B}, {"y", own[1], B}, {"st", own[2], ST}};
  crec_exec *ex = NULL;
  EXPECT_OK(crec_capture_import(run_step, (void *)step, stream, ga, 3, second, NULL, &ex));
  for (int a = 0; a < 3; a++) crec_device_free(second[a]);
  return ex;
}

/* Three sets of a program's buffers (x, y, st) for the exec (g) and twins (e), filled alike. */
typedef struct sets {
  void *g[3][3], *e[3][3];
} sets;

static void sets_make(sets *s) {
  const uint64_t sizes[3] = {B, B, ST};
  for (int k = 0; k < 3; k++)
    for (int a = 0; a < 3; a++) {
      s->g[k][a] = gt_alloc(sizes[a]);
      s->e[k][a] = gt_alloc(sizes[a]);
      gt_fill(s->g[k][a], sizes[a], (uint32_t)(k * 3 + a + 1));
      gt_fill(s->e[k][a], sizes[a], (uint32_t)(k * 3 + a + 1));
    }
}

static void sets_free(sets *s) {
  for (int k = 0; k < 3; k++)
    for (int a = 0; a < 3; a++) {
      crec_device_free(s->g[k][a]);
      crec_device_free(s->e[k][a]);
    }
}

static void bind3(crec_binding *bd, crec_bindings *b, void *const *set) {
  bd[0] = (crec_binding){set[0], B};
  bd[1] = (crec_binding){set[1], B};
  bd[2] = (crec_binding){set[2], ST};
  *b = (crec_bindings)CREC_BINDINGS_INIT;
  b->buffers = bd;
  b->num_buffers = 3;
}

static void expect_set_same(sets *s, int k, const char *what) {
  char name[96];
  static const char *const names[3] = {"x", "y", "st"};
  const uint64_t sizes[3] = {B, B, ST};
  for (int a = 0; a < 3; a++) {
    snprintf(name, sizeof name, "%s: %s of set %d", what, names[a], k);
    gt_expect_same(s->g[k][a], s->e[k][a], sizes[a], name);
  }
}

/* The state a loop starts from: counter = `count`, flag (4 bytes at 16) = 1. */
static void start_state(void *st, int32_t count) {
  int32_t words[2] = {count, 1};
  gt_upload(st, &words[0], 4);
  gt_upload((uint8_t *)st + 16, &words[1], 4);
}

/* while (flag) step(), the counter and flag set first: in `r`, on arguments X, Y, ST. */
static crec_command loop_of_step(gt *t, crec_region r, crec_exec *ex, crec_buffer x, crec_buffer y, crec_buffer st,
                                 int32_t count) {
  crec_arg c0[] = {arg(st, 0, 4, CREC_ACCESS_WRITE), crec_arg_i32(count)};
  gt_launch1(t, r, t->store_i32, c0, 2);
  crec_command c, w;
  EXPECT_OK(crec_program_add_memset(t->p, r, "flag = 1", crec_range_of(st, 16, 4), 1, 4, &c));
  crec_region cond, body;
  EXPECT_OK(crec_program_add_while(t->p, r, "until the step clears its flag", crec_range_of(st, 16, 1), &w, &cond,
                                   &body));
  crec_operand ops[3] = {crec_operand_of(crec_range_of(x, 0, B), CREC_ACCESS_READ_WRITE),
                         crec_operand_of(crec_range_of(y, 0, B), CREC_ACCESS_READ_WRITE),
                         crec_operand_of(crec_range_of(st, 0, ST), CREC_ACCESS_READ_WRITE)};
  EXPECT_OK(crec_program_add_graph(t->p, body, "step", ex, ops, 3, &c));
  return w;
}

/* The outer program's three arguments. */
static void outer_args(gt *t, crec_buffer *x, crec_buffer *y, crec_buffer *st) {
  EXPECT_OK(crec_program_add_argument(t->p, "X", B, NULL, x));
  EXPECT_OK(crec_program_add_argument(t->p, "Y", B, NULL, y));
  EXPECT_OK(crec_program_add_argument(t->p, "ST", ST, NULL, st));
}

/* What every test here starts from: the step (counting down, or not) captured
 * and imported (returned; its first capture's buffers in `own`), and an outer
 * program with arguments X, Y and ST; and what each ends with. */
static crec_exec *embed_begin(gt *step, gt *t, int countdown, void *own[3], crec_buffer *x, crec_buffer *y,
                              crec_buffer *st) {
  step_program(step, countdown);
  crec_exec *ex = import_step(step->p, own);
  gt_init(t, 0);
  outer_args(t, x, y, st);
  return ex;
}

/* Makes the three sets and records `p` bound to set 0. */
static crec_exec *record_on_sets(const crec_program *p, sets *s) {
  sets_make(s);
  crec_binding bd[3];
  crec_bindings b;
  bind3(bd, &b, s->g[0]);
  crec_exec *e = NULL;
  EXPECT_OK(crec_record(p, &b, NULL, &e));
  return e;
}

static void embed_end(gt *step, gt *t, sets *s, void *own[3]) {
  sets_free(s);
  crec_program_destroy(t->p);
  crec_program_destroy(step->p);
  for (int a = 0; a < 3; a++) crec_device_free(own[a]);
}

Test(embed, a_captured_step_in_a_while_loop_follows_rotated_state_against_eager) {
  gt step, t;
  void *own[3];
  crec_buffer x, y, st;
  crec_exec *ex = embed_begin(&step, &t, 1, own, &x, &y, &st);
  size_t nodes, relocated, relocs;
  EXPECT_OK(crec_exec_import_counts(ex, &nodes, &relocated, &relocs));
  cr_assert_eq(relocated, 4, "%zu of the step's %zu nodes rewritten", relocated, nodes);
  loop_of_step(&t, crec_program_body(t.p), ex, x, y, st, 5);
  /* the program holds the import: its owner lets it go */
  crec_exec_destroy(ex);
  /* in the dumps, as a command of its own */
  char *text = NULL;
  EXPECT_OK(crec_dump(t.p, NULL, CREC_DUMP_TEXT, &text, NULL));
  cr_expect(strstr(text, "graph 'step'") && strstr(text, "imported,") && strstr(text, "rewritten at replays"), "%s",
            text);
  crec_free(text);
  /* a program file cannot hold it, and says why */
  void *bytes = NULL;
  size_t size = 0;
  EXPECT_STATUS(crec_program_serialize(t.p, &bytes, &size), CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("imported graph");

  sets s;
  crec_exec *e = record_on_sets(t.p, &s);
  crec_binding bd[3];
  crec_bindings b;
  int reps = gt_reps(30);
  for (int it = 0; it < reps; it++) {
    int k = it % 3;
    bind3(bd, &b, s.g[k]);
    gt_replay(e, &b, stream);
    /* the twin: the counter and flag as the program sets them, then the step five times */
    start_state(s.e[k][2], 5);
    bind3(bd, &b, s.e[k]);
    for (int i = 0; i < 5; i++) gt_eager(step.p, &b, stream);
    expect_set_same(&s, k, "a replay of the loop");
  }
  crec_exec_stats stats = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(e, &stats));
  /* the step's 4 relocated nodes are the exec's (with the store and the fill and the loop's set kernel) */
  cr_expect(stats.nodes >= 4 + 2, "%llu nodes", (unsigned long long)stats.nodes);
  cr_expect(stats.nodes_updated > 0, "a rotated replay rewrote no node");
  /* the program run eagerly: the import replayed per iteration, the loop decided on the host */
  start_state(s.e[0][2], 5);
  bind3(bd, &b, s.g[0]);
  gt_replay(e, &b, stream);
  bind3(bd, &b, s.e[0]);
  gt_eager(t.p, &b, stream);
  expect_set_same(&s, 0, "crec_run_eager of the program");
  crec_exec_destroy(e);
  embed_end(&step, &t, &s, own);
}

Test(embed, a_step_that_never_clears_its_flag_stops_at_the_loop_limit) {
  gt step, t;
  void *own[3];
  crec_buffer x, y, st;
  crec_exec *ex = embed_begin(&step, &t, 0, own, &x, &y, &st);
  crec_command w = loop_of_step(&t, crec_program_body(t.p), ex, x, y, st, 5);
  EXPECT_OK(crec_program_set_loop_limit(t.p, w, 10));
  crec_exec_destroy(ex);
  sets s;
  crec_exec *e = record_on_sets(t.p, &s);
  crec_binding bd[3];
  crec_bindings b;
  bind3(bd, &b, s.g[0]);
  gt_replay(e, &b, stream);
  EXPECT_STATUS(crec_exec_check(e), CREC_ERR_LOOP_LIMIT);
  EXPECT_ERROR_MENTIONS("until the step clears its flag");
  /* ten steps ran: the twin runs ten */
  start_state(s.e[0][2], 5);
  bind3(bd, &b, s.e[0]);
  for (int i = 0; i < 10; i++) gt_eager(step.p, &b, stream);
  expect_set_same(&s, 0, "a loop stopped at its limit");
  crec_exec_destroy(e);
  embed_end(&step, &t, &s, own);
}

/* if (sel) step(X, Y, ST) else step(Y, X, ST): one import in both branches. */
Test(embed, an_imported_graph_in_both_branches_of_an_if) {
  gt step, t;
  void *own[3];
  crec_buffer x, y, st, sel;
  crec_exec *ex = embed_begin(&step, &t, 1, own, &x, &y, &st);
  EXPECT_OK(crec_program_add_argument(t.p, "sel", 4, NULL, &sel));
  crec_command c;
  crec_region then_r, else_r;
  EXPECT_OK(crec_program_add_if(t.p, crec_program_body(t.p), "which way", crec_range_of(sel, 0, 1), &c, &then_r,
                                &else_r));
  crec_operand fwd[3] = {crec_operand_of(crec_range_of(x, 0, B), CREC_ACCESS_READ_WRITE),
                         crec_operand_of(crec_range_of(y, 0, B), CREC_ACCESS_READ_WRITE),
                         crec_operand_of(crec_range_of(st, 0, ST), CREC_ACCESS_READ_WRITE)};
  crec_operand back[3] = {fwd[1], fwd[0], fwd[2]};
  EXPECT_OK(crec_program_add_graph(t.p, then_r, "forward", ex, fwd, 3, &c));
  EXPECT_OK(crec_program_add_graph(t.p, else_r, "backward", ex, back, 3, &c));
  crec_exec_destroy(ex);
  sets s;
  sets_make(&s);
  void *sel_g[3], *sel_e[3];
  for (int k = 0; k < 3; k++) sel_g[k] = gt_alloc(4), sel_e[k] = gt_alloc(4);
  crec_binding bd[4];
  crec_bindings b;
  bind3(bd, &b, s.g[0]);
  bd[3] = (crec_binding){sel_g[0], 4};
  b.num_buffers = 4;
  int32_t one = 1;
  gt_upload(sel_g[0], &one, 4);
  crec_exec *e = NULL;
  EXPECT_OK(crec_record(t.p, &b, NULL, &e));
  int reps = gt_reps(24);
  for (int it = 0; it < reps; it++) {
    int k = it % 3;
    int32_t way = (it / 3) % 2;
    gt_upload(sel_g[k], &way, 4);
    bind3(bd, &b, s.g[k]);
    bd[3] = (crec_binding){sel_g[k], 4};
    b.num_buffers = 4;
    gt_replay(e, &b, stream);
    /* the twin: the step on (x, y) or (y, x) */
    crec_binding tw[3];
    crec_bindings tb;
    void *set[3] = {way ? s.e[k][0] : s.e[k][1], way ? s.e[k][1] : s.e[k][0], s.e[k][2]};
    bind3(tw, &tb, set);
    gt_eager(step.p, &tb, stream);
    expect_set_same(&s, k, way ? "the then branch" : "the else branch");
  }
  crec_exec_destroy(e);
  for (int k = 0; k < 3; k++) crec_device_free(sel_g[k]), crec_device_free(sel_e[k]);
  embed_end(&step, &t, &s, own);
}

/* X = X * 5 + 3 (the program's kernel); step(X, Y, ST) (captured); Y += 1 (the
 * program's kernel): dependencies from hazards both ways. */
Test(embed, captured_work_between_a_programs_own_kernels_orders_by_hazards) {
  gt step, t;
  void *own[3];
  crec_buffer x, y, st;
  crec_exec *ex = embed_begin(&step, &t, 1, own, &x, &y, &st);
  crec_region body = crec_program_body(t.p);
  crec_arg a1[] = {arg(x, 0, B, CREC_ACCESS_READ_WRITE), crec_arg_i32(3), crec_arg_i32(N)};
  gt_launch(&t, body, t.affine, N, a1, 3);
  crec_operand ops[3] = {crec_operand_of(crec_range_of(x, 0, B), CREC_ACCESS_READ_WRITE),
                         crec_operand_of(crec_range_of(y, 0, B), CREC_ACCESS_WRITE),
                         crec_operand_of(crec_range_of(st, 0, ST), CREC_ACCESS_READ_WRITE)};
  crec_command g;
  EXPECT_OK(crec_program_add_graph(t.p, body, "step", ex, ops, 3, &g));
  crec_arg a2[] = {arg(y, 0, B, CREC_ACCESS_READ_WRITE), crec_arg_i32(N)};
  crec_command inc = gt_launch(&t, body, t.inc, N, a2, 2);
  /* the same import again, on a temporary set of its own: no operand shared, but the
   * captured work's own memory is (graph commands run in program order) */
  crec_buffer tx, ty, ts;
  EXPECT_OK(crec_program_add_temporary(t.p, "tx", B, &tx));
  EXPECT_OK(crec_program_add_temporary(t.p, "ty", B, &ty));
  EXPECT_OK(crec_program_add_temporary(t.p, "ts", ST, &ts));
  crec_operand tops[3] = {crec_operand_of(crec_range_of(tx, 0, B), CREC_ACCESS_READ_WRITE),
                          crec_operand_of(crec_range_of(ty, 0, B), CREC_ACCESS_READ_WRITE),
                          crec_operand_of(crec_range_of(ts, 0, ST), CREC_ACCESS_READ_WRITE)};
  crec_command g2;
  EXPECT_OK(crec_program_add_graph(t.p, body, "step on temporaries", ex, tops, 3, &g2));
  crec_exec_destroy(ex);
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(t.p, NULL, &plan));
  size_t nd = 0;
  const crec_command *deps = NULL;
  EXPECT_OK(crec_plan_get_deps(plan, g, &deps, &nd));
  cr_expect_eq(nd, 1, "the step waits for the kernel that writes X (%zu dependencies)", nd);
  EXPECT_OK(crec_plan_get_deps(plan, inc, &deps, &nd));
  cr_expect(nd == 1 && deps[0].id == g.id, "Y += 1 waits for the step that writes Y");
  EXPECT_OK(crec_plan_get_deps(plan, g2, &deps, &nd));
  cr_expect(nd == 1 && deps[0].id == g.id, "the second graph command waits for the first (%zu dependencies)", nd);
  crec_plan_destroy(plan);
  sets s;
  crec_exec *e = record_on_sets(t.p, &s);
  crec_binding bd[3];
  crec_bindings b;
  int reps = gt_reps(30);
  for (int it = 0; it < reps; it++) {
    int k = it % 3;
    bind3(bd, &b, s.g[k]);
    gt_replay(e, &b, stream);
    bind3(bd, &b, s.e[k]);
    gt_eager(t.p, &b, stream);
    expect_set_same(&s, k, "a replay");
  }
  crec_exec_destroy(e);
  embed_end(&step, &t, &s, own);
}

/* A profile gives a graph command the time of its nodes, those no replay
 * updates included, inside a loop's body too (recorded with profile on, as
 * loops need). Skips without CUPTI, or under a tool that holds it. */
Test(embed, a_profile_gives_a_graph_command_its_own_time) {
  gt step, t;
  void *own[3];
  crec_buffer x, y, st;
  crec_exec *ex = embed_begin(&step, &t, 1, own, &x, &y, &st);
  loop_of_step(&t, crec_program_body(t.p), ex, x, y, st, 5);
  crec_exec_destroy(ex);
  sets s;
  sets_make(&s);
  crec_binding bd[3];
  crec_bindings b;
  bind3(bd, &b, s.g[0]);
  crec_record_options ro = CREC_RECORD_OPTIONS_INIT;
  ro.profile = 1;
  crec_exec *e = NULL;
  crec_status rs = crec_record(t.p, &b, &ro, &e);
  if (rs == CREC_ERR_UNSUPPORTED && strstr(crec_last_error(), "CUPTI")) cr_skip_test("%s", crec_last_error());
  cr_assert_eq(rs, CREC_OK, "crec_record: %s", crec_last_error());
  crec_profile_options o = CREC_PROFILE_OPTIONS_INIT;
  o.program = "gpu_embed";
  crec_profile *prof = NULL;
  crec_status ps = crec_exec_profile(e, &b, stream, 5, &o, &prof);
  if (ps == CREC_ERR_UNSUPPORTED && strstr(crec_last_error(), "CUPTI")) {
    crec_exec_destroy(e);
    cr_skip_test("%s", crec_last_error());
  }
  cr_assert_eq(ps, CREC_OK, "crec_exec_profile: %s", crec_last_error());
  crec_command step_cmd = {0};
  for (size_t i = 0; i < crec_program_command_count(t.p); i++) {
    crec_command_info info = CREC_COMMAND_INFO_INIT;
    crec_command c = crec_program_command(t.p, i);
    EXPECT_OK(crec_command_get_info(t.p, c, &info));
    if (info.kind == CREC_COMMAND_GRAPH) step_cmd = c;
  }
  cr_assert_neq(step_cmd.id, 0, "no graph command in the program");
  crec_profile_command pc = {.struct_size = sizeof pc};
  EXPECT_OK(crec_profile_get_command(prof, step_cmd, &pc));
  cr_expect(pc.ran && pc.device_us.p50 > 0, "the step ran %d, %g us", pc.ran, pc.device_us.p50);
  /* 5 iterations of the step's 4 nodes in the median replay */
  cr_expect_geq(pc.nodes, 20, "%llu spans counted for the step", (unsigned long long)pc.nodes);
  crec_profile_destroy(prof);
  crec_exec_destroy(e);
  embed_end(&step, &t, &s, own);
}
