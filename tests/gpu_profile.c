/* GPU suite for crec_exec_profile(): replays measured with CUPTI, attributed to
 * the program's commands. Spin kernels of known relative lengths must come out
 * in that order with the known critical path; a WHILE loop's iterations must be
 * counted. Skips without a CUDA device, and without CUPTI (saying so). */
#include <stdlib.h>

#include "gpu_util.h"

static crec_stream stream;

static void setup(void) {
  REQUIRE_DEVICE();
  EXPECT_OK(crec_stream_create(0, &stream));
}
static void teardown(void) { crec_stream_destroy(stream); }

TestSuite(gpu_profile, .init = setup, .fini = teardown);

enum { ITERS = 5 };

/* A launch of t_spin on word 0 of `b` for `cycles` cycles, after copies of word
 * 0 of each of `after` into that word (so that it waits for what wrote them). */
static crec_command spin(gt *t, crec_region r, const char *name, crec_buffer b, long long cycles, const crec_buffer *after,
                         size_t num_after) {
  for (size_t i = 0; i < num_after; i++) {
    crec_command cp;
    EXPECT_OK(crec_program_add_memcpy(t->p, r, NULL, crec_range_of(b, 0, 4), crec_range_of(after[i], 0, 4), &cp));
  }
  crec_arg a[] = {crec_arg_buffer(crec_range_of(b, 0, 4), CREC_ACCESS_READ_WRITE), crec_arg_i64(cycles)};
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = t->spin;
  l.args = a;
  l.num_args = 2;
  crec_command c;
  EXPECT_OK(crec_program_add_launch(t->p, r, name, &l, &c));
  return c;
}

/* Skips the test when `s` says CUPTI is missing or another tool holds it
 * (compute-sanitizer does). */
static void skip_without_cupti(crec_status s) {
  if (s == CREC_ERR_UNSUPPORTED && strstr(crec_last_error(), "CUPTI")) cr_skip_test("%s", crec_last_error());
}

/* Profiles `p` once recorded with `bindings` (and crec_record_options.profile,
 * which loops need); skips when CUPTI is missing. */
static crec_profile *profile_of(crec_program *p, const crec_bindings *b, crec_exec **ex) {
  crec_record_options ro = CREC_RECORD_OPTIONS_INIT;
  ro.profile = 1;
  crec_status rs = crec_record(p, b, &ro, ex);
  skip_without_cupti(rs);
  cr_assert_eq(rs, CREC_OK, "crec_record: %s: %s", crec_status_name(rs), crec_last_error());
  crec_profile_options o = CREC_PROFILE_OPTIONS_INIT;
  o.program = "gpu_profile";
  crec_profile *prof = NULL;
  crec_status s = crec_exec_profile(*ex, b, stream, ITERS, &o, &prof);
  if (s == CREC_ERR_UNSUPPORTED && strstr(crec_last_error(), "CUPTI")) crec_exec_destroy(*ex);
  skip_without_cupti(s);
  cr_assert_eq(s, CREC_OK, "crec_exec_profile: %s: %s", crec_status_name(s), crec_last_error());
  return prof;
}

static crec_profile_command command_of(const crec_profile *prof, crec_command c) {
  crec_profile_command pc = CREC_PROFILE_COMMAND_INIT;
  EXPECT_OK(crec_profile_get_command(prof, c, &pc));
  return pc;
}

Test(gpu_profile, spin_kernels_come_out_in_their_order_with_the_known_critical_path) {
  gt t;
  gt_init(&t, 1);
  crec_buffer a, b, c, d;
  EXPECT_OK(crec_program_add_argument(t.p, "a", 64, NULL, &a));
  EXPECT_OK(crec_program_add_argument(t.p, "b", 64, NULL, &b));
  EXPECT_OK(crec_program_add_argument(t.p, "c", 64, NULL, &c));
  EXPECT_OK(crec_program_add_argument(t.p, "d", 64, NULL, &d));
  crec_region body = crec_program_body(t.p);
  /* a (short) then b (long); c (middle) beside them; d after b and c */
  crec_command ca = spin(&t, body, "a", a, 20000, NULL, 0);
  crec_command cb = spin(&t, body, "b", b, 200000, &a, 1);
  crec_command cc = spin(&t, body, "c", c, 60000, NULL, 0);
  crec_buffer bc[2] = {b, c};
  crec_command cd = spin(&t, body, "d", d, 20000, bc, 2);
  void *mem[4];
  crec_binding bd[4];
  for (int i = 0; i < 4; i++) {
    mem[i] = gt_alloc(64);
    gt_fill(mem[i], 64, (uint32_t)i);
    bd[i] = (crec_binding){mem[i], 64};
  }
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 4;
  crec_exec *ex;
  crec_profile *prof = profile_of(t.p, &bs, &ex);
  crec_profile_command pa = command_of(prof, ca), pb = command_of(prof, cb), pcc = command_of(prof, cc),
                       pd = command_of(prof, cd);
  cr_expect(pa.ran && pb.ran && pcc.ran && pd.ran, "every spin kernel ran: %d %d %d %d", pa.ran, pb.ran, pcc.ran, pd.ran);
  /* each command is one node: a record given to the wrong command would show here */
  cr_expect(pa.nodes == 1 && pb.nodes == 1 && pcc.nodes == 1 && pd.nodes == 1, "nodes a %llu, b %llu, c %llu, d %llu",
            (unsigned long long)pa.nodes, (unsigned long long)pb.nodes, (unsigned long long)pcc.nodes,
            (unsigned long long)pd.nodes);
  cr_expect_gt(pb.device_us.p50, pcc.device_us.p50, "b (200k cycles) %.2f us, c (60k) %.2f us", pb.device_us.p50,
               pcc.device_us.p50);
  cr_expect_gt(pcc.device_us.p50, pa.device_us.p50, "c (60k cycles) %.2f us, a (20k) %.2f us", pcc.device_us.p50,
               pa.device_us.p50);
  cr_expect(pa.critical && pb.critical && pd.critical && !pcc.critical,
            "critical path a, b, d and not c: %d %d %d %d", pa.critical, pb.critical, pd.critical, pcc.critical);
  crec_profile_summary sum = CREC_PROFILE_SUMMARY_INIT;
  EXPECT_OK(crec_profile_get_summary(prof, &sum));
  cr_expect_eq(sum.replays, ITERS);
  cr_expect_geq(sum.critical_us, pa.device_us.p50 + pb.device_us.p50, "the path weighs %.2f us", sum.critical_us);
  char *text = NULL;
  EXPECT_OK(crec_profile_dump(prof, CREC_PROFILE_TEXT, &text, NULL));
  cr_log_info("%s", text);
  crec_free(text);
  /* the host phases were measured: the JSON has them (unmeasured ones are left out) */
  char *json = NULL;
  EXPECT_OK(crec_profile_dump(prof, CREC_PROFILE_JSON, &json, NULL));
  cr_expect(strstr(json, "\"host_us\": {\"binding_checks\": ") && strstr(json, "\"launch\": "), "%s", json);
  crec_free(json);
  crec_profile_destroy(prof);
  crec_exec_destroy(ex);
  for (int i = 0; i < 4; i++) crec_device_free(mem[i]);
  crec_program_destroy(t.p);
}

/* countdown(counter, pred) in `r`: counter -= 1; pred = counter > 0. */
static void countdown(gt *t, crec_region r, crec_buffer state, int i) {
  crec_arg a[] = {crec_arg_buffer(crec_range_of(state, 4 * (uint64_t)i, 4), CREC_ACCESS_READ_WRITE),
                  crec_arg_buffer(crec_range_of(state, 16 + (uint64_t)i, 1), CREC_ACCESS_WRITE)};
  gt_launch1(t, r, t->countdown, a, 2);
}

static void store(gt *t, crec_region r, crec_buffer state, int i, int v) {
  crec_arg a[] = {crec_arg_buffer(crec_range_of(state, 4 * (uint64_t)i, 4), CREC_ACCESS_WRITE), crec_arg_i32(v)};
  gt_launch1(t, r, t->store_i32, a, 2);
}

/* A program of `t` with arguments state (64 bytes: counters at 0, 4, ...;
 * predicates at 16, 17, ...) and acc (1024 bytes). */
static void state_program(gt *t, crec_buffer *state, crec_buffer *acc) {
  gt_init(t, 1);
  EXPECT_OK(crec_program_add_argument(t->p, "state", 64, NULL, state));
  EXPECT_OK(crec_program_add_argument(t->p, "acc", 1024, NULL, acc));
}

/* Frees what profile_state() and state_program() made. */
static void free_state(gt *t, crec_profile *prof, crec_exec *ex, void **mem) {
  crec_profile_destroy(prof);
  crec_exec_destroy(ex);
  crec_device_free(mem[0]);
  crec_device_free(mem[1]);
  crec_program_destroy(t->p);
}

/* Profiles `t`'s program over a new 64-byte state and 1024-byte acc (mem[0], mem[1]). */
static crec_profile *profile_state(gt *t, crec_exec **ex, void **mem) {
  mem[0] = gt_alloc(64);
  mem[1] = gt_alloc(1024);
  gt_fill(mem[1], 1024, 1);
  crec_binding bd[2] = {{mem[0], 64}, {mem[1], 1024}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 2;
  return profile_of(t->p, &bs, ex);
}

Test(gpu_profile, a_while_loops_iterations_are_counted) {
  gt t;
  crec_buffer state, acc;
  state_program(&t, &state, &acc);
  crec_region top = crec_program_body(t.p);
  crec_range counter = crec_range_of(state, 0, 4), pred = crec_range_of(state, 16, 1);
  /* counter = 7; while (counter > 0) { acc += 1; counter -= 1 }: 7 iterations */
  store(&t, top, state, 0, 7);
  crec_command w;
  crec_region cond, body;
  EXPECT_OK(crec_program_add_while(t.p, top, "loop", pred, &w, &cond, &body));
  crec_arg test[] = {crec_arg_buffer(counter, CREC_ACCESS_READ), crec_arg_buffer(pred, CREC_ACCESS_WRITE)};
  gt_launch1(&t, cond, t.test_positive, test, 2);
  crec_arg inc[] = {crec_arg_buffer(crec_range_whole(acc), CREC_ACCESS_READ_WRITE), crec_arg_i32(256)};
  crec_command ci = gt_launch(&t, body, t.inc, 256, inc, 2);
  crec_arg down[] = {crec_arg_buffer(counter, CREC_ACCESS_READ_WRITE), crec_arg_buffer(crec_range_of(state, 17, 1), CREC_ACCESS_WRITE)};
  gt_launch1(&t, body, t.countdown, down, 2);
  crec_exec *ex;
  void *mem[2];
  crec_profile *prof = profile_state(&t, &ex, mem);
  crec_profile_command pw = command_of(prof, w), pi = command_of(prof, ci);
  cr_expect(pw.is_loop, "the while is a loop in the profile");
  cr_expect_eq(pw.iterations.p50, 7.0, "%.1f iterations (min %.1f, max %.1f), expected 7", pw.iterations.p50,
               pw.iterations.min, pw.iterations.max);
  cr_expect_eq(pi.nodes, 7, "the body's kernel ran %llu times in the median replay", (unsigned long long)pi.nodes);
  cr_expect_gt(pw.per_iteration_us, 0.0);
  char *json = NULL;
  EXPECT_OK(crec_profile_dump(prof, CREC_PROFILE_JSON, &json, NULL));
  cr_expect(strstr(json, "\"iterations\""), "the JSON has the iterations");
  crec_free(json);
  free_state(&t, prof, ex, mem);
}

Test(gpu_profile, an_exec_without_a_graph_of_commands_is_refused_and_bad_arguments_are_named) {
  gt t;
  gt_init(&t, 1);
  crec_buffer x;
  EXPECT_OK(crec_program_add_argument(t.p, "x", 64, NULL, &x));
  spin(&t, crec_program_body(t.p), "x", x, 1000, NULL, 0);
  void *m = gt_alloc(64);
  crec_binding bd = {m, 64};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = &bd;
  bs.num_buffers = 1;
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &bs, NULL, &ex));
  crec_profile *prof = NULL;
  EXPECT_STATUS(crec_exec_profile(ex, &bs, stream, 0, NULL, &prof), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("iters is 0");
  EXPECT_STATUS(crec_exec_profile(ex, NULL, stream, 1, NULL, &prof), CREC_ERR_NULL_POINTER);
  crec_profile_options o = CREC_PROFILE_OPTIONS_INIT;
  o.struct_size = 8;
  EXPECT_STATUS(crec_exec_profile(ex, &bs, stream, 1, &o, &prof), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("struct_size");
  /* a bad binding fails in the replay, named as crec_exec_replay names it */
  crec_binding small = {m, 8};
  bs.buffers = &small;
  crec_status s = crec_exec_profile(ex, &bs, stream, 1, NULL, &prof);
  if (s == CREC_ERR_UNSUPPORTED && strstr(crec_last_error(), "CUPTI")) crec_exec_destroy(ex);
  skip_without_cupti(s);
  cr_expect_eq(s, CREC_ERR_BINDING, "%s: %s", crec_status_name(s), crec_last_error());
  cr_expect_null(prof);
  crec_exec_destroy(ex);
  crec_device_free(m);
  crec_program_destroy(t.p);
}

Test(gpu_profile, a_loop_with_an_empty_body_counts_its_iterations) {
  gt t;
  crec_buffer state, acc;
  state_program(&t, &state, &acc);
  crec_region top = crec_program_body(t.p);
  /* counter = 7; while (--counter > 0) {}: the cond alone, 6 runs of the (empty) body */
  store(&t, top, state, 0, 7);
  crec_command w;
  crec_region cond, body;
  EXPECT_OK(crec_program_add_while(t.p, top, "spin down", crec_range_of(state, 16, 1), &w, &cond, &body));
  countdown(&t, cond, state, 0);
  crec_exec *ex;
  void *mem[2];
  crec_profile *prof = profile_state(&t, &ex, mem);
  crec_profile_command pw = command_of(prof, w);
  cr_expect(pw.is_loop);
  cr_expect_eq(pw.iterations.p50, 6.0, "%.1f iterations, expected 6", pw.iterations.p50);
  free_state(&t, prof, ex, mem);
}

Test(gpu_profile, nested_loops_count_their_own_iterations) {
  gt t;
  crec_buffer state, acc;
  state_program(&t, &state, &acc);
  crec_region top = crec_program_body(t.p);
  /* c0 = 4; while (--c0 > 0) { c1 = 3; while (--c1 > 0) acc += 1 }: 3 outer, 3 x 2 inner */
  store(&t, top, state, 0, 4);
  crec_command outer, inner;
  crec_region cond, body, cond1, body1;
  EXPECT_OK(crec_program_add_while(t.p, top, "outer", crec_range_of(state, 16, 1), &outer, &cond, &body));
  countdown(&t, cond, state, 0);
  store(&t, body, state, 1, 3);
  EXPECT_OK(crec_program_add_while(t.p, body, "inner", crec_range_of(state, 17, 1), &inner, &cond1, &body1));
  countdown(&t, cond1, state, 1);
  crec_arg inc[] = {crec_arg_buffer(crec_range_whole(acc), CREC_ACCESS_READ_WRITE), crec_arg_i32(256)};
  crec_command ci = gt_launch(&t, body1, t.inc, 256, inc, 2);
  crec_exec *ex;
  void *mem[2];
  crec_profile *prof = profile_state(&t, &ex, mem);
  crec_profile_command po = command_of(prof, outer), pi = command_of(prof, inner), pc = command_of(prof, ci);
  cr_expect_eq(po.iterations.p50, 3.0, "outer: %.1f iterations, expected 3", po.iterations.p50);
  /* an inner loop's iterations count over all of the outer loop's (crec/profile.h) */
  cr_expect_eq(pi.iterations.p50, 6.0, "inner: %.1f iterations, expected 3 x 2", pi.iterations.p50);
  cr_expect_eq(pc.nodes, 6, "the inner body's kernel ran %llu times", (unsigned long long)pc.nodes);
  free_state(&t, prof, ex, mem);
}

Test(gpu_profile, a_loop_recorded_without_the_profile_option_is_refused_naming_it) {
  gt t;
  crec_buffer state, acc;
  state_program(&t, &state, &acc);
  crec_region top = crec_program_body(t.p);
  store(&t, top, state, 0, 3);
  crec_command w;
  crec_region cond, body;
  EXPECT_OK(crec_program_add_while(t.p, top, "loop", crec_range_of(state, 16, 1), &w, &cond, &body));
  countdown(&t, cond, state, 0);
  void *mem[2] = {gt_alloc(64), gt_alloc(1024)};
  crec_binding bd[2] = {{mem[0], 64}, {mem[1], 1024}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 2;
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &bs, NULL, &ex));
  crec_profile *prof = NULL;
  crec_status s = crec_exec_profile(ex, &bs, stream, 2, NULL, &prof);
  /* without CUPTI the refusal names the library instead */
  if (s == CREC_ERR_UNSUPPORTED && !strstr(crec_last_error(), "crec_record_options.profile")) {
    crec_exec_destroy(ex);
    skip_without_cupti(s);
  }
  cr_expect_eq(s, CREC_ERR_UNSUPPORTED, "%s: %s", crec_status_name(s), crec_last_error());
  EXPECT_ERROR_MENTIONS("crec_record_options.profile");
  cr_expect_null(prof);
  free_state(&t, NULL, ex, mem);
}
