/* Create/destroy balance, and every allocation failure path: the N-th host
 * allocation fails (crec_debug_fail_after), for N = 1, 2, ... until a whole
 * build + plan + dump runs without reaching N. Each failure must report
 * CREC_ERR_OUT_OF_MEMORY, leave the program as it was, and let the same call
 * succeed when retried; the result must equal a build that never failed. The
 * suite also runs under AddressSanitizer, which checks for leaks here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

TestSuite(faults, .fini = crec_test_leak_check);

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define HAVE_LSAN 1
#endif

/* ---- balance ---- */

Test(faults, create_and_destroy_balance) {
  cr_assert_eq(crec_debug_live_objects(), 0);
  crec_program *p[3];
  crec_plan *plan[3];
  for (int i = 0; i < 3; i++) EXPECT_OK(crec_program_create(&p[i]));
  cr_assert_eq(crec_debug_live_objects(), 3);
  for (int i = 0; i < 3; i++) EXPECT_OK(crec_plan_create(p[i], NULL, &plan[i]));
  cr_assert_eq(crec_debug_live_objects(), 6);
  crec_plan_destroy(plan[1]);
  crec_program_destroy(p[1]);
  cr_assert_eq(crec_debug_live_objects(), 4);
  crec_plan_destroy(plan[0]);
  crec_plan_destroy(plan[2]);
  crec_program_destroy(p[2]);
  crec_program_destroy(p[0]);
  crec_program_destroy(NULL);
  crec_plan_destroy(NULL);
  cr_assert_eq(crec_debug_live_objects(), 0);
  /* failed creations create nothing */
  EXPECT_STATUS(crec_plan_create(NULL, NULL, &plan[0]), CREC_ERR_NULL_POINTER);
  cr_assert_null(plan[0]);
  cr_assert_eq(crec_debug_live_objects(), 0);
}

Test(faults, the_hook_counts_and_disarms) {
  crec_debug_fail_after(CREC_FAULT_ALLOC, 0);
  cr_assert_eq(crec_debug_count(CREC_FAULT_ALLOC), 0);
  crec_program *p = NULL;
  EXPECT_OK(crec_program_create(&p));
  uint64_t used = crec_debug_count(CREC_FAULT_ALLOC);
  cr_assert_gt(used, 0, "creating a program counted no allocation");
  crec_program_destroy(p);
  /* the first allocation fails, then the hook is spent */
  crec_debug_fail_after(CREC_FAULT_ALLOC, 1);
  p = (crec_program *)&used;
  EXPECT_STATUS(crec_program_create(&p), CREC_ERR_OUT_OF_MEMORY);
  EXPECT_ERROR_MENTIONS("crec_program_create");
  cr_assert_null(p);
  cr_assert_eq(crec_debug_live_objects(), 0);
  EXPECT_OK(crec_program_create(&p));
  crec_program_destroy(p);
  /* arming then disarming leaves nothing armed */
  crec_debug_fail_after(CREC_FAULT_ALLOC, 1);
  crec_debug_fail_after(CREC_FAULT_ALLOC, 0);
  EXPECT_OK(crec_program_create(&p));
  crec_program_destroy(p);
  cr_assert_eq(crec_debug_count((crec_fault_kind)7), 0);
}

/* ---- the fault loop ---- */

typedef struct run {
  crec_program *p;
  int failures; /* faults seen (and retried) in this run */
  uint64_t at;  /* the allocation that fails */
} run;

static void disarm(void) { crec_debug_fail_after(CREC_FAULT_ALLOC, 0); }

/* Runs a builder call; if it fails, it must be from the armed fault: out of
 * memory, nothing added, output handle 0. Then retries it without the fault. */
#define STEP(r, call, out_id)                                                                     \
  do {                                                                                            \
    crec_test_counts before_ = crec_test_counts_of((r)->p);                                       \
    crec_status s_ = (call);                                                                      \
    if (s_ != CREC_OK) {                                                                          \
      cr_assert_eq(s_, CREC_ERR_OUT_OF_MEMORY, "allocation %llu: %s gave %s: %s",                 \
                   (unsigned long long)(r)->at, #call, crec_status_name(s_), crec_last_error());  \
      EXPECT_ERROR_MENTIONS("out of host memory");                                                \
      crec_test_expect_counts((r)->p, &before_, #call);                                           \
      cr_assert_eq((out_id), 0, "allocation %llu: %s left a handle", (unsigned long long)(r)->at, \
                   #call);                                                                        \
      (r)->failures++;                                                                            \
      disarm();                                                                                   \
      s_ = (call);                                                                                \
      cr_assert_eq(s_, CREC_OK, "allocation %llu: %s failed again after the fault: %s",           \
                   (unsigned long long)(r)->at, #call, crec_last_error());                        \
    }                                                                                             \
  } while (0)

static int host_noop(void *user, const crec_value *in, crec_value *out) {
  (void)user;
  (void)in;
  (void)out;
  return 0;
}

static int users_freed;
static void free_user(void *user) {
  users_freed++;
  free(user);
}

/* Builds a program with every builder call, growing every table. */
static void build(run *r) {
  crec_program *p = NULL;
  crec_status s = crec_program_create(&p);
  if (s) {
    cr_assert_eq(s, CREC_ERR_OUT_OF_MEMORY, "%s", crec_last_error());
    cr_assert_null(p);
    cr_assert_eq(crec_debug_live_objects(), 0);
    r->failures++;
    disarm();
    EXPECT_OK(crec_program_create(&p));
  }
  r->p = p;
  crec_region body = crec_program_body(p);
  crec_buffer x = {0}, y = {0}, flag = {0}, t[12], c = {0}, b = {0};
  crec_scalar n = {0}, m = {0}, d = {0}, sz = {0};
  crec_module mod = {0};
  crec_kernel k = {0};
  crec_command cmd = {0};
  crec_argument_options ao = CREC_ARGUMENT_OPTIONS_INIT;
  ao.dynamic_size = 1;
  ao.element = CREC_ELEMENT_F32;
  STEP(r, crec_program_add_argument(p, "x", 4096, NULL, &x), x.id);
  STEP(r, crec_program_add_argument(p, "y", 64, &ao, &y), y.id);
  STEP(r, crec_program_add_argument(p, "flag", 64, NULL, &flag), flag.id);
  char name[400];
  for (int i = 0; i < 12; i++) { /* enough to grow the buffer and name tables */
    snprintf(name, sizeof name, "t%d", i);
    t[i].id = 0;
    STEP(r, crec_program_add_temporary(p, name, 256 + 64 * (uint64_t)i, &t[i]), t[i].id);
  }
  /* a name longer than the dumps' small printf buffer */
  memset(name, 'L', 300);
  name[300] = '\0';
  static const float table[16] = {1, 2, 3};
  STEP(r, crec_program_add_constant(p, name, table, sizeof table, &c), c.id);
  STEP(r, crec_program_add_temporary(p, "b", 64, &b), b.id);
  STEP(r, crec_program_add_scalar(p, "n", CREC_TYPE_I32, &n), n.id);
  STEP(r, crec_program_add_scalar(p, "m", CREC_TYPE_F64, &m), m.id);
  STEP(r, crec_program_add_derived_scalar(p, "d", CREC_TYPE_I64, &d), d.id);
  STEP(r, crec_program_add_size_scalar(p, "y_bytes", y, &sz), sz.id);
  crec_scalar in[2] = {n, sz}, outs[1] = {d};
  /* on failure the caller keeps `user`: free it ourselves before the retry allocates anew */
  {
    crec_test_counts before = crec_test_counts_of(p);
    int *user = malloc(sizeof *user);
    cr_assert_not_null(user);
    int freed_before = users_freed;
    s = crec_program_add_host_function(p, "h", host_noop, user, free_user, in, 2, outs, 1);
    if (s) {
      cr_assert_eq(s, CREC_ERR_OUT_OF_MEMORY, "%s", crec_last_error());
      crec_test_expect_counts(p, &before, "crec_program_add_host_function");
      cr_assert_eq(users_freed, freed_before, "a refused host function freed the caller's user data");
      r->failures++;
      disarm();
      EXPECT_OK(crec_program_add_host_function(p, "h", host_noop, user, free_user, in, 2, outs, 1));
    }
  }
  STEP(r, crec_program_add_module(p, "mod", CREC_IMAGE_PTX, crec_test_ptx, strlen(crec_test_ptx), &mod), mod.id);
  crec_kernel_options ko = CREC_KERNEL_OPTIONS_INIT;
  ko.shared_bytes = 64 * 1024;
  STEP(r, crec_program_add_kernel(p, mod, "k", &ko, &k), k.id);

  unsigned char blob1[64], blob2[100];
  memset(blob1, 1, sizeof blob1);
  memset(blob2, 2, sizeof blob2);
  crec_arg args[] = {crec_arg_buffer(crec_range_of(x, 0, 1024), CREC_ACCESS_READ),
                     crec_arg_buffer(crec_range_whole(t[0]), CREC_ACCESS_WRITE),
                     crec_arg_scalar(n),
                     crec_arg_bytes(blob1, sizeof blob1), /* copied into owned memory */
                     crec_arg_f64(2.5),
                     crec_arg_bytes(blob2, sizeof blob2), /* a second copy: the first must be undone */
                     crec_arg_bytes(blob1, 8)};           /* small: kept inline */
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = k;
  l.args = args;
  l.num_args = sizeof args / sizeof *args;
  l.grid[0] = crec_dim_from(d);
  l.shared_bytes = crec_dim_of(50000);
  STEP(r, crec_program_add_launch(p, body, "first", &l, &cmd), cmd.id);
  for (int i = 1; i < 12; i++) { /* grow the body's command list */
    crec_arg chain[] = {crec_arg_buffer(crec_range_whole(t[i - 1]), CREC_ACCESS_READ),
                        crec_arg_buffer(crec_range_whole(t[i]), CREC_ACCESS_WRITE)};
    crec_launch lc = CREC_LAUNCH_INIT;
    lc.kernel = k;
    lc.args = chain;
    lc.num_args = 2;
    cmd.id = 0;
    STEP(r, crec_program_add_launch(p, body, NULL, &lc, &cmd), cmd.id);
  }
  cmd.id = 0;
  STEP(r, crec_program_add_memcpy(p, body, "cp", crec_range_of(x, 0, 256), crec_range_whole(t[0]), &cmd), cmd.id);
  cmd.id = 0;
  STEP(r, crec_program_add_memset(p, body, NULL, crec_range_of(flag, 0, 16), 1, 4, &cmd), cmd.id);
  cmd.id = 0;
  STEP(r, crec_program_add_barrier(p, body, "sync", &cmd), cmd.id);

  crec_command w = {0}, i = {0}, sw = {0};
  crec_region cond = {0}, loop = {0}, then_r = {0}, else_r = {0}, br[3] = {{0}, {0}, {0}};
  STEP(r, crec_program_add_while(p, body, "loop", crec_range_of(flag, 0, 1), &w, &cond, &loop),
       w.id | cond.id | loop.id);
  cmd.id = 0;
  STEP(r, crec_program_add_memset(p, cond, NULL, crec_range_of(flag, 0, 1), 0, 1, &cmd), cmd.id);
  cmd.id = 0;
  STEP(r, crec_program_add_memcpy(p, loop, NULL, crec_range_whole(b), crec_range_of(y, 0, 64), &cmd), cmd.id);
  STEP(r, crec_program_add_if(p, loop, "maybe", crec_range_of(flag, 1, 1), &i, &then_r, &else_r),
       i.id | then_r.id | else_r.id);
  cmd.id = 0;
  STEP(r, crec_program_add_memcpy(p, then_r, NULL, crec_range_of(x, 0, 64), crec_range_whole(b), &cmd), cmd.id);
  cmd.id = 0;
  STEP(r, crec_program_add_barrier(p, else_r, NULL, &cmd), cmd.id);
  const int32_t cases[2] = {7, -7};
  STEP(r, crec_program_add_switch(p, body, "sw", crec_range_of(flag, 4, 4), 3, cases, &sw, br),
       sw.id | br[0].id | br[1].id | br[2].id);
  cmd.id = 0;
  STEP(r, crec_program_add_memset(p, br[2], NULL, crec_range_of(y, 0, 8), 0xffff, 2, &cmd), cmd.id);
}

/* Plans and dumps the program in every format; returns the JSON and text dumps. */
static void plan_and_dump(run *r, char **json, char **text) {
  crec_plan *plan = (crec_plan *)r;
  int64_t live = crec_debug_live_objects();
  crec_status s = crec_plan_create(r->p, NULL, &plan);
  if (s) {
    cr_assert_eq(s, CREC_ERR_OUT_OF_MEMORY, "allocation %llu: crec_plan_create: %s", (unsigned long long)r->at,
                 crec_last_error());
    cr_assert_null(plan);
    cr_assert_eq(crec_debug_live_objects(), live, "a failed plan is still counted");
    r->failures++;
    disarm();
    EXPECT_OK(crec_plan_create(r->p, NULL, &plan));
  }
  char *out[4] = {NULL, NULL, NULL, NULL};
  const crec_dump_format formats[4] = {CREC_DUMP_JSON, CREC_DUMP_TEXT, CREC_DUMP_DOT, CREC_DUMP_JSON};
  for (int f = 0; f < 4; f++) {
    const crec_plan *use = f == 3 ? NULL : plan; /* the last plans inside crec_dump */
    size_t len = 99;
    s = crec_dump(r->p, use, formats[f], &out[f], &len);
    if (s) {
      cr_assert_eq(s, CREC_ERR_OUT_OF_MEMORY, "allocation %llu: crec_dump: %s", (unsigned long long)r->at,
                   crec_last_error());
      EXPECT_ERROR_MENTIONS("crec_dump");
      cr_assert(out[f] == NULL && len == 0);
      cr_assert_eq(crec_debug_live_objects(), live + 1, "a failed dump left a plan alive");
      r->failures++;
      disarm();
      EXPECT_OK(crec_dump(r->p, use, formats[f], &out[f], &len));
    }
  }
  cr_assert_str_eq(out[0], out[3], "the dump with its own plan differs");
  *json = out[0];
  *text = out[1];
  crec_free(out[2]);
  crec_free(out[3]);
  crec_plan_destroy(plan);
}

Test(faults, every_allocation_failure_in_build_plan_and_dump, .timeout = 300) {
  /* the reference: no fault at all */
  disarm();
  run ref = {NULL, 0, 0};
  build(&ref);
  char *ref_json, *ref_text;
  plan_and_dump(&ref, &ref_json, &ref_text);
  cr_assert_eq(ref.failures, 0);
  uint64_t total = crec_debug_count(CREC_FAULT_ALLOC);
  crec_program_destroy(ref.p);
  cr_assert_eq(crec_debug_live_objects(), 0);
  cr_assert_eq(users_freed, 1);
  cr_assert_gt(total, 100, "only %llu allocations: the program is too small to test much",
               (unsigned long long)total);

  uint64_t n;
  for (n = 1;; n++) {
    run r = {NULL, 0, n};
    crec_debug_fail_after(CREC_FAULT_ALLOC, n);
    build(&r);
    char *json, *text;
    plan_and_dump(&r, &json, &text);
    bool fired = r.failures > 0;
    cr_assert_leq(r.failures, 1, "allocation %llu failed %d times", (unsigned long long)n, r.failures);
    /* a failed call, retried, leaves the same program as one that never failed */
    cr_assert_str_eq(json, ref_json, "allocation %llu: the JSON dump differs", (unsigned long long)n);
    cr_assert_str_eq(text, ref_text, "allocation %llu: the text dump differs", (unsigned long long)n);
    crec_free(json);
    crec_free(text);
    crec_program_destroy(r.p);
    cr_assert_eq(crec_debug_live_objects(), 0, "allocation %llu: %lld objects alive", (unsigned long long)n,
                 (long long)crec_debug_live_objects());
    cr_assert_eq(users_freed, 1 + (int)n, "allocation %llu: user data freed %d times", (unsigned long long)n,
                 users_freed);
    if (!fired) break; /* the whole run made fewer than n allocations */
  }
  disarm();
  cr_assert_geq(n, total, "the loop stopped at %llu of %llu allocations", (unsigned long long)n,
                (unsigned long long)total);
  crec_free(ref_json);
  crec_free(ref_text);
#ifdef HAVE_LSAN
  cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "LeakSanitizer found leaks (see above)");
#endif
}

/* Failure of a single command builder, in a program that already has many commands. */
Test(faults, control_flow_builders_fail_cleanly) {
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  crec_buffer flag;
  EXPECT_OK(crec_program_add_argument(p, "flag", 64, NULL, &flag));
  for (uint64_t n = 1; n < 64; n++) {
    run r = {p, 0, n};
    crec_command sw = {0};
    crec_region br[5] = {{0}, {0}, {0}, {0}, {0}};
    const int32_t cases[4] = {1, 2, 3, 4};
    crec_debug_fail_after(CREC_FAULT_ALLOC, n);
    STEP(&r, crec_program_add_switch(p, crec_program_body(p), NULL, crec_range_of(flag, 0, 4), 5, cases, &sw, br),
         sw.id | br[0].id | br[4].id);
    disarm();
    crec_region_info info;
    EXPECT_OK(crec_region_get_info(p, br[4], &info));
    cr_assert_eq(info.role, CREC_REGION_BRANCH);
    cr_assert_eq(info.parent.id, sw.id);
  }
  crec_program_destroy(p);
  cr_assert_eq(crec_debug_live_objects(), 0);
}
