/* Dependencies: hand-checked DAGs from crec_plan_get_deps(), and a property
 * test against a brute-force hazard graph, transitively reduced. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define R(b, off, size) crec_arg_buffer(crec_range_of((b), (off), (size)), CREC_ACCESS_READ)
#define W(b, off, size) crec_arg_buffer(crec_range_of((b), (off), (size)), CREC_ACCESS_WRITE)
#define RW(b, off, size) crec_arg_buffer(crec_range_of((b), (off), (size)), CREC_ACCESS_READ_WRITE)
#define EXPECT_NO_DEPS(plan, command) crec_test_expect_deps((plan), (command), 0, NULL, #command)

static crec_program *prog;
static crec_kernel kern;

static void setup(void) { prog = crec_test_program(&kern); }
static void teardown(void) { crec_test_teardown_program(&prog); }

static crec_buffer arg(const char *name, uint64_t size) { return crec_test_argument(prog, name, size); }

static crec_buffer temp(const char *name, uint64_t size) { return crec_test_temporary(prog, name, size); }

static crec_command launch_n(crec_region region, const char *name, const crec_arg *args, size_t n) {
  return crec_test_launch(prog, region, name, kern, args, n);
}
/* LAUNCH(region, name, args...) */
#define LAUNCH(region, name, ...)                                                          \
  launch_n((region), (name), (const crec_arg[]){__VA_ARGS__},                            \
           sizeof((const crec_arg[]){__VA_ARGS__}) / sizeof(crec_arg))
#define LAUNCH0(region, name) launch_n((region), (name), NULL, 0)

static crec_command barrier(crec_region region, const char *name) {
  crec_command c;
  EXPECT_OK(crec_program_add_barrier(prog, region, name, &c));
  return c;
}

static crec_plan *plan_with(crec_schedule schedule) { return crec_test_plan(prog, schedule); }

TestSuite(deps, .init = setup, .fini = teardown);

/* ---- hazards ---- */

Test(deps, raw_war_waw_give_edges_and_read_read_does_not) {
  crec_region body = crec_program_body(prog);
  crec_buffer x = arg("x", 256);
  crec_command a = LAUNCH(body, "a", W(x, 0, 64));
  crec_command b = LAUNCH(body, "b", R(x, 0, 64));  /* RAW on a */
  crec_command c = LAUNCH(body, "c", R(x, 0, 64));  /* RAW on a; read-read with b */
  crec_command d = LAUNCH(body, "d", W(x, 0, 64));  /* WAR on b, c; WAW on a (implied) */
  crec_command e = LAUNCH(body, "e", W(x, 0, 64));  /* WAW on d */
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  EXPECT_NO_DEPS(plan, a);
  EXPECT_DEPS(plan, b, a);
  EXPECT_DEPS(plan, c, a);
  EXPECT_DEPS(plan, d, b, c);
  EXPECT_DEPS(plan, e, d);
  crec_plan_destroy(plan);
}

Test(deps, only_reads_give_no_edges) {
  crec_region body = crec_program_body(prog);
  crec_buffer x = arg("x", 256);
  static const unsigned char data[16] = {0};
  crec_buffer k;
  EXPECT_OK(crec_program_add_constant(prog, "k", data, sizeof data, &k));
  crec_command a = LAUNCH(body, "a", R(x, 0, 256), R(k, 0, 16));
  crec_command b = LAUNCH(body, "b", R(x, 0, 256), R(k, 0, 16));
  crec_command c = LAUNCH(body, "c", R(x, 10, 20));
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  EXPECT_NO_DEPS(plan, a);
  EXPECT_NO_DEPS(plan, b);
  EXPECT_NO_DEPS(plan, c);
  crec_plan_destroy(plan);
}

Test(deps, disjoint_ranges_and_buffers_give_no_edges) {
  crec_region body = crec_program_body(prog);
  crec_buffer x = arg("x", 256), y = arg("y", 256);
  crec_command a = LAUNCH(body, "a", W(x, 0, 64));
  crec_command b = LAUNCH(body, "b", W(x, 64, 64));    /* adjacent, not overlapping */
  crec_command c = LAUNCH(body, "c", R(x, 128, 128));
  crec_command d = LAUNCH(body, "d", W(y, 0, 64));     /* another argument: assumed disjoint */
  crec_command e = LAUNCH(body, "e", R(x, 0, CREC_WHOLE));
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  EXPECT_NO_DEPS(plan, a);
  EXPECT_NO_DEPS(plan, b);
  EXPECT_NO_DEPS(plan, c);
  EXPECT_NO_DEPS(plan, d);
  EXPECT_DEPS(plan, e, a, b);
  crec_plan_destroy(plan);
}

Test(deps, partial_overlaps) {
  crec_region body = crec_program_body(prog);
  crec_buffer x = arg("x", 256);
  crec_command a = LAUNCH(body, "a", W(x, 0, 64));
  crec_command b = LAUNCH(body, "b", R(x, 63, 2));     /* one byte of a's */
  crec_command c = LAUNCH(body, "c", R(x, 64, 64));    /* none of a's */
  crec_command d = LAUNCH(body, "d", W(x, 60, 1));     /* WAW inside a; clear of b */
  crec_command e = LAUNCH(body, "e", W(x, 100, 1));    /* WAR inside c */
  crec_command f = LAUNCH(body, "f", W(x, 64, 1));     /* WAR on b's second byte and on c */
  crec_command g = LAUNCH(body, "g", R(x, 0, 61));     /* a wrote [0,64), d wrote [60,61) after it */
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  EXPECT_DEPS(plan, b, a);
  EXPECT_NO_DEPS(plan, c);
  EXPECT_DEPS(plan, d, a);
  EXPECT_DEPS(plan, e, c);
  EXPECT_DEPS(plan, f, b, c);
  EXPECT_DEPS(plan, g, d);
  crec_plan_destroy(plan);
}

Test(deps, memcpy_and_memset_access_their_ranges) {
  crec_region body = crec_program_body(prog);
  crec_buffer x = arg("x", 256), y = arg("y", 256);
  crec_buffer t = temp("t", 64);
  crec_command m1, m2, m3, m4, m5;
  EXPECT_OK(crec_program_add_memset(prog, body, "m1", crec_range_of(x, 0, 16), 0, 1, &m1));
  EXPECT_OK(crec_program_add_memcpy(prog, body, "m2", crec_range_of(t, 0, 16), crec_range_of(x, 0, 16), &m2));
  EXPECT_OK(crec_program_add_memcpy(prog, body, "m3", crec_range_of(x, 16, 16), crec_range_of(t, 0, 16), &m3));
  EXPECT_OK(crec_program_add_memset(prog, body, "m4", crec_range_of(y, 0, 16), 0, 1, &m4));
  /* reads x[0,16) again: a read after m2's read, so only m1's write matters */
  EXPECT_OK(crec_program_add_memcpy(prog, body, "m5", crec_range_of(y, 32, 16), crec_range_of(x, 0, 16), &m5));
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  EXPECT_NO_DEPS(plan, m1);
  EXPECT_DEPS(plan, m2, m1);
  EXPECT_DEPS(plan, m3, m2);
  EXPECT_NO_DEPS(plan, m4);
  EXPECT_DEPS(plan, m5, m1);
  crec_plan_destroy(plan);
}

Test(deps, read_write_arguments) {
  crec_region body = crec_program_body(prog);
  crec_buffer x = arg("x", 256);
  crec_command a = LAUNCH(body, "a", RW(x, 0, 8));
  crec_command b = LAUNCH(body, "b", RW(x, 4, 8));
  crec_command c = LAUNCH(body, "c", R(x, 0, 4));
  crec_command d = LAUNCH(body, "d", R(x, 8, 4));
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  EXPECT_DEPS(plan, b, a);
  EXPECT_DEPS(plan, c, a);
  EXPECT_DEPS(plan, d, b);
  crec_plan_destroy(plan);
}

Test(deps, scalars_and_immediates_are_not_accesses) {
  crec_region body = crec_program_body(prog);
  crec_scalar n;
  EXPECT_OK(crec_program_add_scalar(prog, "n", CREC_TYPE_I32, &n));
  crec_command a = LAUNCH(body, "a", crec_arg_scalar(n), crec_arg_i64(3));
  crec_command b = LAUNCH(body, "b", crec_arg_scalar(n), crec_arg_i64(3));
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  EXPECT_NO_DEPS(plan, a);
  EXPECT_NO_DEPS(plan, b);
  crec_plan_destroy(plan);
}

/* ---- transitive reduction ---- */

Test(deps, transitive_reduction_drops_implied_edges) {
  crec_region body = crec_program_body(prog);
  crec_buffer x = arg("x", 64), y = arg("y", 64), z = arg("z", 64), w = arg("w", 64);
  crec_command a = LAUNCH(body, "a", W(x, 0, 64));
  crec_command b = LAUNCH(body, "b", R(x, 0, 64), W(y, 0, 64));
  crec_command c = LAUNCH(body, "c", R(x, 0, 64), R(y, 0, 64)); /* a->b->c and a->c: no a->c */
  crec_command d = LAUNCH(body, "d", R(x, 0, 64), W(z, 0, 64));
  crec_command e = LAUNCH(body, "e", R(y, 0, 64), R(z, 0, 64), W(w, 0, 64)); /* diamond */
  crec_command f = LAUNCH(body, "f", W(x, 0, 64), R(w, 0, 64)); /* after every reader of x, and e */
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  EXPECT_NO_DEPS(plan, a);
  EXPECT_DEPS(plan, b, a);
  EXPECT_DEPS(plan, c, b);
  EXPECT_DEPS(plan, d, a);
  EXPECT_DEPS(plan, e, b, d);
  EXPECT_DEPS(plan, f, c, e);
  crec_plan_destroy(plan);
}

Test(deps, long_chain_keeps_only_neighbours) {
  crec_region body = crec_program_body(prog);
  crec_buffer x = arg("x", 64);
  crec_command c[40];
  for (int i = 0; i < 40; i++) c[i] = LAUNCH(body, NULL, RW(x, 0, 64));
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  EXPECT_NO_DEPS(plan, c[0]);
  for (int i = 1; i < 40; i++) EXPECT_DEPS(plan, c[i], c[i - 1]);
  crec_plan_destroy(plan);
}

/* ---- barriers ---- */

Test(deps, barrier_orders_everything_before_against_everything_after) {
  crec_region body = crec_program_body(prog);
  crec_buffer x = arg("x", 64), y = arg("y", 64), z = arg("z", 64);
  crec_command b0 = barrier(body, "b0");             /* nothing before it */
  crec_command a = LAUNCH(body, "a", W(x, 0, 64));
  crec_command b = LAUNCH(body, "b", W(y, 0, 64));
  crec_command c = LAUNCH(body, "c", R(y, 0, 64));   /* waits for b; so the barrier needs only a, c */
  crec_command b1 = barrier(body, "b1");
  crec_command d = LAUNCH(body, "d", R(x, 0, 64));   /* hazard on a, implied by b1 */
  crec_command e = LAUNCH(body, "e", W(z, 0, 64));   /* no hazard at all */
  crec_command f = LAUNCH(body, "f", R(z, 0, 64));   /* waits for e, which waits for b1 */
  crec_command b2 = barrier(body, "b2");
  crec_command b3 = barrier(body, "b3");             /* right after another barrier */
  crec_command g = LAUNCH0(body, "g");               /* touches nothing */
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  EXPECT_NO_DEPS(plan, b0);
  EXPECT_DEPS(plan, a, b0);
  EXPECT_DEPS(plan, b, b0);
  EXPECT_DEPS(plan, c, b);
  EXPECT_DEPS(plan, b1, a, c);
  EXPECT_DEPS(plan, d, b1);
  EXPECT_DEPS(plan, e, b1);
  EXPECT_DEPS(plan, f, e);
  EXPECT_DEPS(plan, b2, d, f);
  EXPECT_DEPS(plan, b3, b2);
  EXPECT_DEPS(plan, g, b3);
  crec_plan_destroy(plan);
}

Test(deps, barrier_inside_a_body_orders_only_that_body) {
  crec_region body = crec_program_body(prog);
  crec_buffer x = arg("x", 64), y = arg("y", 64), flag = arg("flag", 16);
  crec_command a = LAUNCH(body, "a", W(x, 0, 64));
  crec_command w;
  crec_region cond, loop;
  EXPECT_OK(crec_program_add_while(prog, body, "w", crec_range_of(flag, 0, 1), &w, &cond, &loop));
  crec_command l1 = LAUNCH(loop, "l1", W(y, 0, 8));
  crec_command lb = barrier(loop, "lb");
  crec_command l2 = LAUNCH(loop, "l2", W(y, 8, 8));
  crec_command after = LAUNCH(body, "after", W(x, 0, 64));
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  EXPECT_NO_DEPS(plan, a);
  EXPECT_NO_DEPS(plan, w); /* the body's barrier does not reach out of the body */
  EXPECT_NO_DEPS(plan, l1);
  EXPECT_DEPS(plan, lb, l1);
  EXPECT_DEPS(plan, l2, lb);
  EXPECT_DEPS(plan, after, a);
  crec_plan_destroy(plan);
}

/* ---- control flow ---- */

Test(deps, while_accesses_the_union_of_its_regions_and_predicate) {
  crec_region body = crec_program_body(prog);
  crec_buffer x = arg("x", 256), y = arg("y", 64), z = arg("z", 64), q = arg("q", 64);
  crec_buffer flag = arg("flag", 16);
  crec_command a = LAUNCH(body, "a", W(x, 0, 64));
  crec_command w;
  crec_region cond, loop;
  EXPECT_OK(crec_program_add_while(prog, body, "w", crec_range_of(flag, 0, 1), &w, &cond, &loop));
  crec_command c1 = LAUNCH(cond, "c1", R(y, 0, 8), W(flag, 0, 1));
  crec_command l1 = LAUNCH(loop, "l1", R(x, 0, 64), W(y, 0, 64));
  crec_command l2 = LAUNCH(loop, "l2", R(y, 0, 64), W(x, 64, 64));
  /* an if nested in the loop body: its regions count for the loop too */
  crec_command i;
  crec_region then_r, else_r;
  EXPECT_OK(crec_program_add_if(prog, loop, "i", crec_range_of(flag, 4, 1), &i, &then_r, &else_r));
  crec_command t1 = LAUNCH(then_r, "t1", W(q, 0, 8));
  crec_command e1 = LAUNCH(else_r, "e1", R(q, 0, 8));
  crec_command d = LAUNCH(body, "d", R(y, 0, 64));      /* y written in the body */
  crec_command e = LAUNCH(body, "e", W(z, 0, 64));      /* untouched by the loop */
  crec_command f = LAUNCH(body, "f", R(x, 200, 56));    /* nothing wrote there */
  crec_command g = LAUNCH(body, "g", R(flag, 0, 1));    /* the cond region wrote the predicate */
  crec_command h = LAUNCH(body, "h", R(q, 0, 8));       /* written deep inside */
  crec_command k = LAUNCH(body, "k", W(flag, 4, 1));    /* the if's predicate was read inside */
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  EXPECT_DEPS(plan, w, a);
  /* each region has its own DAG: nothing waits across a region boundary */
  EXPECT_NO_DEPS(plan, c1);
  EXPECT_NO_DEPS(plan, l1);
  EXPECT_DEPS(plan, l2, l1);
  EXPECT_NO_DEPS(plan, i);
  EXPECT_NO_DEPS(plan, t1);
  EXPECT_NO_DEPS(plan, e1);
  EXPECT_DEPS(plan, d, w);
  EXPECT_NO_DEPS(plan, e);
  EXPECT_NO_DEPS(plan, f);
  EXPECT_DEPS(plan, g, w);
  EXPECT_DEPS(plan, h, w);
  EXPECT_DEPS(plan, k, w);
  crec_plan_destroy(plan);
}

Test(deps, predicate_is_read_by_the_control_flow_command) {
  crec_region body = crec_program_body(prog);
  crec_buffer flag = arg("flag", 16), other = arg("other", 16);
  crec_command a = LAUNCH(body, "a", W(flag, 0, 1));
  crec_command w, i;
  crec_region r1, r2;
  EXPECT_OK(crec_program_add_while(prog, body, "w", crec_range_of(flag, 0, 1), &w, &r1, &r2));
  EXPECT_OK(crec_program_add_if(prog, body, "i", crec_range_of(flag, 0, CREC_WHOLE), &i, &r1, &r2));
  crec_command b = LAUNCH(body, "b", W(flag, 0, 1));   /* WAR on both predicates */
  crec_command c = LAUNCH(body, "c", W(flag, 1, 1));   /* the if reads only its first byte */
  crec_command d = LAUNCH(body, "d", W(other, 0, 1));
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  EXPECT_DEPS(plan, w, a);
  EXPECT_DEPS(plan, i, a); /* read-read with w */
  EXPECT_DEPS(plan, b, w, i);
  EXPECT_NO_DEPS(plan, c);
  EXPECT_NO_DEPS(plan, d);
  crec_plan_destroy(plan);
}

Test(deps, switch_index_and_branches) {
  crec_region body = crec_program_body(prog);
  crec_buffer idx = arg("idx", 16), x = arg("x", 64), y = arg("y", 64);
  crec_command s1 = LAUNCH(body, "s1", W(idx, 0, 4));
  crec_command sw;
  crec_region br[3];
  EXPECT_OK(crec_program_add_switch(prog, body, "sw", crec_range_of(idx, 0, 4), 3, NULL, &sw, br));
  crec_command b0 = LAUNCH(br[0], "b0", W(x, 0, 64));
  crec_command b0b = LAUNCH(br[0], "b0b", R(x, 0, 8));
  crec_command b1 = LAUNCH(br[1], "b1", R(x, 0, 64));
  crec_command r = LAUNCH(body, "r", R(idx, 0, 4));     /* read-read with the switch */
  crec_command r2 = LAUNCH(body, "r2", R(x, 0, 8));     /* branch 0 wrote x */
  crec_command r3 = LAUNCH(body, "r3", W(idx, 4, 4));   /* the index is 4 bytes: clear */
  crec_command r4 = LAUNCH(body, "r4", W(y, 0, 64));    /* no branch touches y */
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  EXPECT_DEPS(plan, sw, s1);
  EXPECT_NO_DEPS(plan, b0);
  EXPECT_DEPS(plan, b0b, b0);
  EXPECT_NO_DEPS(plan, b1); /* another branch, another DAG */
  EXPECT_DEPS(plan, r, s1);
  EXPECT_DEPS(plan, r2, sw);
  EXPECT_NO_DEPS(plan, r3);
  EXPECT_NO_DEPS(plan, r4);
  crec_plan_destroy(plan);
}

/* ---- sequential mode ---- */

Test(deps, sequential_mode_chains_every_region) {
  crec_region body = crec_program_body(prog);
  crec_buffer x = arg("x", 64), y = arg("y", 64), flag = arg("flag", 16);
  crec_command a = LAUNCH(body, "a", W(x, 0, 64));
  crec_command b = LAUNCH(body, "b", W(y, 0, 64));      /* no hazard with a */
  crec_command w;
  crec_region cond, loop;
  EXPECT_OK(crec_program_add_while(prog, body, "w", crec_range_of(flag, 0, 1), &w, &cond, &loop));
  crec_command l1 = LAUNCH(loop, "l1", R(x, 0, 8));
  crec_command l2 = LAUNCH(loop, "l2", R(x, 0, 8));     /* read-read */
  crec_command lb = barrier(loop, "lb");
  crec_command l3 = LAUNCH0(loop, "l3");
  crec_command c1 = LAUNCH(cond, "c1", R(y, 0, 8));
  crec_command c = LAUNCH0(body, "c");
  crec_plan *plan = plan_with(CREC_SCHEDULE_SEQUENTIAL);
  EXPECT_NO_DEPS(plan, a);
  EXPECT_DEPS(plan, b, a);
  EXPECT_DEPS(plan, w, b);
  EXPECT_DEPS(plan, c, w);
  EXPECT_NO_DEPS(plan, l1);
  EXPECT_DEPS(plan, l2, l1);
  EXPECT_DEPS(plan, lb, l2);
  EXPECT_DEPS(plan, l3, lb);
  EXPECT_NO_DEPS(plan, c1);
  crec_plan_destroy(plan);
  /* the same program planned concurrently has fewer edges */
  plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  EXPECT_NO_DEPS(plan, b);
  EXPECT_NO_DEPS(plan, l2);
  crec_plan_destroy(plan);
}

/* ---- temporaries sharing arena bytes ---- */

Test(deps, temporaries_sharing_bytes_are_ordered) {
  crec_region body = crec_program_body(prog);
  crec_buffer out1 = arg("out1", 1024), out2 = arg("out2", 1024);
  crec_buffer t1 = temp("t1", 1024), t2 = temp("t2", 1024);
  crec_command c0 = LAUNCH(body, "c0", W(t1, 0, 1024));
  crec_command c1 = LAUNCH(body, "c1", R(t1, 0, 1024), W(out1, 0, 1024));
  crec_command c2 = LAUNCH(body, "c2", W(t2, 0, 1024));  /* t1 is dead: t2 may take its bytes */
  crec_command c3 = LAUNCH(body, "c3", R(t2, 0, 1024), W(out2, 0, 1024));
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  uint64_t o1, o2;
  EXPECT_OK(crec_plan_get_temporary(plan, t1, &o1));
  EXPECT_OK(crec_plan_get_temporary(plan, t2, &o2));
  cr_assert_eq(o1, o2, "t1 and t2 are never live together but got offsets %llu and %llu",
               (unsigned long long)o1, (unsigned long long)o2);
  cr_assert_eq(crec_plan_arena_bytes(plan), 1024);
  EXPECT_NO_DEPS(plan, c0);
  EXPECT_DEPS(plan, c1, c0);
  /* reusing t1's bytes must wait for t1's last reader, or c2 races with c1 */
  EXPECT_DEPS(plan, c2, c1);
  EXPECT_DEPS(plan, c3, c2);
  crec_plan_destroy(plan);
}

Test(deps, temporaries_live_together_do_not_share_or_wait) {
  crec_region body = crec_program_body(prog);
  crec_buffer t1 = temp("t1", 100), t2 = temp("t2", 100);
  crec_command c0 = LAUNCH(body, "c0", W(t1, 0, 100));
  crec_command c1 = LAUNCH(body, "c1", W(t2, 0, 100));
  crec_command c2 = LAUNCH(body, "c2", R(t1, 0, 100), R(t2, 0, 100));
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  EXPECT_NO_DEPS(plan, c0);
  EXPECT_NO_DEPS(plan, c1);
  EXPECT_DEPS(plan, c2, c0, c1);
  crec_plan_destroy(plan);
}

/* ---- dynamic sizes ---- */

Test(deps, dynamic_size_arguments) {
  crec_region body = crec_program_body(prog);
  crec_argument_options o = CREC_ARGUMENT_OPTIONS_INIT;
  o.dynamic_size = 1;
  crec_buffer d, e;
  EXPECT_OK(crec_program_add_argument(prog, "d", 64, &o, &d));
  EXPECT_OK(crec_program_add_argument(prog, "e", 64, &o, &e));
  crec_command a, b, c;
  EXPECT_OK(crec_program_add_memset(prog, body, "a", crec_range_whole(d), 0, 1, &a));
  b = LAUNCH(body, "b", R(d, 4096, 64));   /* beyond the minimum, still inside the whole */
  c = LAUNCH(body, "c", W(d, 0, 64));
  crec_command e1 = LAUNCH(body, "e1", W(e, 0, 64));
  crec_command e2 = LAUNCH(body, "e2", W(e, 64, 64));
  crec_command e3 = LAUNCH(body, "e3", R(e, 100, CREC_WHOLE));
  crec_command e4 = LAUNCH(body, "e4", W(e, 1 << 20, 8));
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  EXPECT_NO_DEPS(plan, a);
  EXPECT_DEPS(plan, b, a);
  EXPECT_DEPS(plan, c, a);
  EXPECT_NO_DEPS(plan, e1);
  EXPECT_NO_DEPS(plan, e2);
  EXPECT_DEPS(plan, e3, e2);
  EXPECT_DEPS(plan, e4, e3);
  crec_plan_destroy(plan);
}

/* ---- errors ---- */

Test(deps, get_deps_refuses_foreign_and_later_commands) {
  crec_region body = crec_program_body(prog);
  crec_command a = LAUNCH0(body, "a");
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  crec_command later = LAUNCH0(body, "later");
  const crec_command *deps = (const crec_command *)&deps;
  size_t n = 99;
  EXPECT_STATUS(crec_plan_get_deps(plan, later, &deps, &n), CREC_ERR_INVALID_HANDLE);
  EXPECT_ERROR_MENTIONS("'command'");
  cr_assert(deps == NULL && n == 0);
  crec_kernel k2;
  crec_program *other = crec_test_program(&k2);
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = k2;
  crec_command foreign;
  EXPECT_OK(crec_program_add_launch(other, crec_program_body(other), NULL, &l, &foreign));
  EXPECT_STATUS(crec_plan_get_deps(plan, foreign, &deps, &n), CREC_ERR_INVALID_HANDLE);
  crec_command zero = {0};
  EXPECT_STATUS(crec_plan_get_deps(plan, zero, &deps, &n), CREC_ERR_INVALID_HANDLE);
  EXPECT_STATUS(crec_plan_get_deps(NULL, a, &deps, &n), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_plan_get_deps(plan, a, NULL, &n), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_plan_get_deps(plan, a, &deps, NULL), CREC_ERR_NULL_POINTER);
  EXPECT_OK(crec_plan_get_deps(plan, a, &deps, &n));
  cr_assert_eq(n, 0);
  crec_plan_destroy(plan);
  crec_program_destroy(other);
}

Test(deps, plan_options_are_checked) {
  crec_plan_options o = CREC_PLAN_OPTIONS_INIT;
  crec_plan *plan = NULL;
  o.schedule = (crec_schedule)2;
  EXPECT_STATUS(crec_plan_create(prog, &o, &plan), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("'options'");
  o = (crec_plan_options)CREC_PLAN_OPTIONS_INIT;
  o.arena_alignment = 0;
  EXPECT_STATUS(crec_plan_create(prog, &o, &plan), CREC_ERR_INVALID_ARGUMENT);
  o.arena_alignment = 96;
  EXPECT_STATUS(crec_plan_create(prog, &o, &plan), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("arena_alignment");
  o.arena_alignment = 128; /* a power of two, but below what temporaries promise */
  EXPECT_STATUS(crec_plan_create(prog, &o, &plan), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("below the 256 bytes");
  cr_assert_null(plan);
  EXPECT_STATUS(crec_plan_create(NULL, NULL, &plan), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_plan_create(prog, NULL, NULL), CREC_ERR_NULL_POINTER);
  cr_assert_eq(crec_debug_live_objects(), 1, "only the program is alive");
}

/* ---- property: the plan's DAG is the transitive reduction of the hazard graph ---- */

typedef struct phys {
  uint32_t space; /* buffer index; UINT32_MAX for the arena */
  bool write;
  uint64_t lo, hi;
} phys;

typedef struct phys_list {
  phys *v;
  size_t n, cap;
} phys_list;

static void phys_push(phys_list *l, phys a) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 16;
    l->v = realloc(l->v, l->cap * sizeof *l->v);
    cr_assert_not_null(l->v);
  }
  l->v[l->n++] = a;
}

/* Everything `c` touches on physical addresses: its own ranges, then its regions' commands. */
static void physical_accesses(const crec_program *p, const crec_plan *plan, crec_command c, phys_list *out) {
  crec_range ranges[16];
  bool writes[16];
  size_t n;
  crec_test_command_ranges(p, c, ranges, writes, 16, &n);
  for (size_t i = 0; i < n; i++) {
    crec_buffer_info b;
    EXPECT_OK(crec_buffer_get_info(p, ranges[i].buffer, &b));
    phys a = {(uint32_t)crec_handle_index(ranges[i].buffer.id), writes[i], ranges[i].offset, 0};
    if (ranges[i].size == CREC_WHOLE) a.hi = b.dynamic_size ? UINT64_MAX : b.size;
    else a.hi = ranges[i].offset + ranges[i].size;
    if (b.kind == CREC_BUFFER_TEMPORARY) {
      uint64_t offset;
      EXPECT_OK(crec_plan_get_temporary(plan, ranges[i].buffer, &offset));
      a.space = UINT32_MAX;
      a.lo += offset;
      a.hi += offset;
    }
    phys_push(out, a);
  }
  for (size_t r = 0;; r++) {
    crec_region sub = crec_command_region(p, c, r);
    if (!sub.id) break;
    for (size_t i = 0;; i++) {
      crec_command child = crec_region_command(p, sub, i);
      if (!child.id) break;
      physical_accesses(p, plan, child, out);
    }
  }
}

static bool conflict(const phys_list *a, const phys_list *b) {
  for (size_t i = 0; i < a->n; i++)
    for (size_t j = 0; j < b->n; j++) {
      const phys *x = &a->v[i], *y = &b->v[j];
      if (x->space == y->space && (x->write || y->write) && x->lo < y->hi && y->lo < x->hi) return true;
    }
  return false;
}

/* Checks every region of `p` against the brute-force DAG; returns the edges seen. */
static size_t check_against_brute_force(const crec_program *p, const crec_plan *plan,
                                        crec_schedule schedule, uint64_t seed) {
  size_t edges = 0;
  for (size_t ri = 0; ri < crec_program_region_count(p); ri++) {
    crec_region region = crec_program_region(p, ri);
    crec_region_info info;
    EXPECT_OK(crec_region_get_info(p, region, &info));
    size_t n = info.num_commands;
    if (n == 0) continue;
    crec_command *cmds = calloc(n, sizeof *cmds);
    phys_list *acc = calloc(n, sizeof *acc);
    bool *barrier = calloc(n, sizeof *barrier);
    bool *edge = calloc(n * n, sizeof *edge), *reach = calloc(n * n, sizeof *reach);
    cr_assert(cmds && acc && barrier && edge && reach);
    for (size_t i = 0; i < n; i++) {
      cmds[i] = crec_region_command(p, region, i);
      crec_command_info ci = CREC_COMMAND_INFO_INIT;
      EXPECT_OK(crec_command_get_info(p, cmds[i], &ci));
      barrier[i] = ci.kind == CREC_COMMAND_BARRIER;
      physical_accesses(p, plan, cmds[i], &acc[i]);
    }
    for (size_t j = 0; j < n; j++)
      for (size_t i = 0; i < j; i++) {
        if (schedule == CREC_SCHEDULE_SEQUENTIAL) edge[i * n + j] = i + 1 == j;
        else edge[i * n + j] = barrier[i] || barrier[j] || conflict(&acc[i], &acc[j]);
      }
    /* reach[i][j]: a path from i to j (positions increase along every edge) */
    for (size_t j = 0; j < n; j++)
      for (size_t i = 0; i < j; i++) {
        bool r = edge[i * n + j];
        for (size_t k = i + 1; k < j && !r; k++) r = reach[i * n + k] && edge[k * n + j];
        reach[i * n + j] = r;
      }
    for (size_t j = 0; j < n; j++) {
      crec_command expected[256];
      size_t m = 0;
      for (size_t i = 0; i < j; i++) {
        if (!reach[i * n + j]) continue;
        bool implied = false;
        for (size_t k = i + 1; k < j && !implied; k++) implied = reach[i * n + k] && reach[k * n + j];
        if (!implied) {
          cr_assert_lt(m, 256);
          expected[m++] = cmds[i];
        }
      }
      char what[96];
      snprintf(what, sizeof what, "seed %llu, region %zu, position %zu", (unsigned long long)seed, ri, j);
      crec_test_expect_deps(plan, cmds[j], m, expected, what);
      edges += m;
    }
    for (size_t i = 0; i < n; i++) free(acc[i].v);
    free(cmds);
    free(acc);
    free(barrier);
    free(edge);
    free(reach);
  }
  return edges;
}

static void brute_force_property(crec_schedule schedule, uint64_t first_seed, int count) {
  crec_test_shape shape = {6, 700, 30, true, true};
  size_t edges = 0;
  for (int i = 0; i < count; i++) {
    uint64_t seed = first_seed + (uint64_t)i;
    crec_program *p = crec_test_random_program(seed, &shape);
    crec_plan_options o = CREC_PLAN_OPTIONS_INIT;
    o.schedule = schedule;
    crec_plan *plan = NULL;
    EXPECT_OK(crec_plan_create(p, &o, &plan));
    edges += check_against_brute_force(p, plan, schedule, seed);
    crec_plan_destroy(plan);
    crec_program_destroy(p);
  }
  /* the generator must make programs with real hazards, or this proves little */
  cr_assert_gt(edges, (size_t)count, "only %zu edges in %d programs", edges, count);
}

Test(deps, random_programs_match_brute_force, .timeout = 120) {
  brute_force_property(CREC_SCHEDULE_CONCURRENT, 1000, 1500);
}

Test(deps, random_programs_sequential_match_brute_force, .timeout = 120) {
  brute_force_property(CREC_SCHEDULE_SEQUENTIAL, 5000, 300);
}
