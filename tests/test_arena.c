/* The temporary arena: lifetimes over top-level program order, and placement
 * (a property test over thousands of random programs, plus hand-built cases). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define R(b, off, size) crec_arg_buffer(crec_range_of((b), (off), (size)), CREC_ACCESS_READ)
#define W(b, off, size) crec_arg_buffer(crec_range_of((b), (off), (size)), CREC_ACCESS_WRITE)

static crec_program *prog;
static crec_kernel kern;

static void setup(void) { prog = crec_test_program(&kern); }
static void teardown(void) { crec_test_teardown_program(&prog); }

TestSuite(arena, .init = setup, .fini = teardown);

static crec_buffer temp(const char *name, uint64_t size) { return crec_test_temporary(prog, name, size); }

static crec_command launch_n(crec_region region, const crec_arg *args, size_t n) {
  return crec_test_launch(prog, region, NULL, kern, args, n);
}
#define LAUNCH(region, ...)                                                                \
  launch_n((region), (const crec_arg[]){__VA_ARGS__},                                    \
           sizeof((const crec_arg[]){__VA_ARGS__}) / sizeof(crec_arg))

static crec_plan *plan_aligned(uint32_t alignment) {
  crec_plan_options o = CREC_PLAN_OPTIONS_INIT;
  if (alignment) o.arena_alignment = alignment;
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(prog, alignment ? &o : NULL, &plan));
  return plan;
}

static void expect_lifetime(const crec_plan *plan, crec_buffer b, size_t first, size_t last) {
  size_t f = 99, l = 99;
  EXPECT_OK(crec_plan_get_lifetime(plan, b, &f, &l));
  crec_buffer_info info;
  EXPECT_OK(crec_buffer_get_info(prog, b, &info));
  cr_assert(f == first && l == last, "'%s' lives over %zu..%zu, expected %zu..%zu", info.name, f, l,
            first, last);
}

static void expect_unused(const crec_plan *plan, crec_buffer b) {
  size_t f, l;
  EXPECT_OK(crec_plan_get_lifetime(plan, b, &f, &l));
  cr_assert_gt(f, l, "an unused temporary lives over %zu..%zu", f, l);
}

static uint64_t offset_of(const crec_plan *plan, crec_buffer b) {
  uint64_t o = 0;
  EXPECT_OK(crec_plan_get_temporary(plan, b, &o));
  return o;
}

/* ---- lifetimes ---- */

Test(arena, use_inside_a_loop_body_extends_over_the_whole_loop) {
  crec_region body = crec_program_body(prog);
  crec_buffer x = crec_test_argument(prog, "x", 64);
  crec_buffer t_loop = temp("t_loop", 64), t_before = temp("t_before", 64), t_cond = temp("t_cond", 64);
  crec_buffer t_deep = temp("t_deep", 64), t_pred = temp("t_pred", 64), t_unused = temp("t_unused", 64);
  crec_buffer t_late = temp("t_late", 64), t_after = temp("t_after", 64);
  LAUNCH(body, R(t_before, 0, 64), W(x, 0, 64));                                 /* 0 */
  crec_command w;
  crec_region cond, loop;
  EXPECT_OK(crec_program_add_while(prog, body, "w", crec_range_of(x, 0, 1), &w, &cond, &loop)); /* 1 */
  LAUNCH(body, W(t_cond, 0, 64));                                                /* 2 */
  LAUNCH(body, R(x, 0, 8));                                                      /* 3 */
  LAUNCH(body, R(t_after, 0, 8));                                                /* 4 */
  /* the loop's regions are filled after later top-level commands were added */
  LAUNCH(loop, W(t_loop, 0, 64), R(t_before, 0, 8));
  LAUNCH(cond, R(t_cond, 0, 8));
  crec_command i;
  crec_region then_r, else_r;
  EXPECT_OK(crec_program_add_if(prog, loop, "i", crec_range_of(t_pred, 3, 1), &i, &then_r, &else_r));
  LAUNCH(else_r, W(t_deep, 0, 64));
  LAUNCH(loop, R(t_late, 0, 64));
  crec_plan *plan = plan_aligned(0);
  expect_lifetime(plan, t_loop, 1, 1);
  expect_lifetime(plan, t_before, 0, 1);
  expect_lifetime(plan, t_cond, 1, 2);
  expect_lifetime(plan, t_deep, 1, 1);
  expect_lifetime(plan, t_pred, 1, 1);
  expect_lifetime(plan, t_late, 1, 1);
  expect_lifetime(plan, t_after, 4, 4);
  expect_unused(plan, t_unused);
  /* everything used in the loop is live during all of it: no two of them share */
  crec_buffer in_loop[] = {t_loop, t_before, t_cond, t_deep, t_pred, t_late};
  for (size_t a = 0; a < 6; a++)
    for (size_t b = 0; b < a; b++) {
      uint64_t oa = offset_of(plan, in_loop[a]), ob = offset_of(plan, in_loop[b]);
      cr_assert(oa + 64 <= ob || ob + 64 <= oa, "temporaries %zu and %zu of the loop share bytes (%llu, %llu)",
                a, b, (unsigned long long)oa, (unsigned long long)ob);
    }
  cr_assert_eq(crec_plan_arena_bytes(plan), 5 * 256 + 64);
  crec_plan_destroy(plan);
}

Test(arena, memcpy_memset_and_switch_index_are_uses) {
  crec_region body = crec_program_body(prog);
  crec_buffer x = crec_test_argument(prog, "x", 64);
  crec_buffer a = temp("a", 64), b = temp("b", 64), c = temp("c", 64), d = temp("d", 64);
  crec_command cmd;
  EXPECT_OK(crec_program_add_memset(prog, body, NULL, crec_range_of(a, 0, 64), 0, 1, &cmd));      /* 0 */
  EXPECT_OK(crec_program_add_memcpy(prog, body, NULL, crec_range_whole(b), crec_range_whole(a), &cmd)); /* 1 */
  crec_region br[2];
  EXPECT_OK(crec_program_add_switch(prog, body, NULL, crec_range_of(c, 4, 4), 2, NULL, &cmd, br)); /* 2 */
  EXPECT_OK(crec_program_add_memcpy(prog, br[1], NULL, crec_range_whole(x), crec_range_whole(d), &cmd));
  EXPECT_OK(crec_program_add_barrier(prog, body, NULL, &cmd));                                    /* 3 */
  EXPECT_OK(crec_program_add_memcpy(prog, body, NULL, crec_range_whole(x), crec_range_whole(b), &cmd)); /* 4 */
  crec_plan *plan = plan_aligned(0);
  expect_lifetime(plan, a, 0, 1);
  expect_lifetime(plan, b, 1, 4);
  expect_lifetime(plan, c, 2, 2);
  expect_lifetime(plan, d, 2, 2);
  crec_plan_destroy(plan);
}

/* ---- placement ---- */

Test(arena, temporaries_never_live_together_share_bytes) {
  crec_region body = crec_program_body(prog);
  crec_buffer t1 = temp("t1", 1000), t2 = temp("t2", 500), t3 = temp("t3", 1000);
  LAUNCH(body, W(t1, 0, 1000));
  LAUNCH(body, W(t2, 0, 500));
  LAUNCH(body, W(t3, 0, 1000));
  crec_plan *plan = plan_aligned(0);
  cr_assert_eq(offset_of(plan, t1), 0);
  cr_assert_eq(offset_of(plan, t2), 0);
  cr_assert_eq(offset_of(plan, t3), 0);
  cr_assert_eq(crec_plan_arena_bytes(plan), 1000);
  crec_plan_destroy(plan);
}

Test(arena, temporaries_live_together_get_aligned_disjoint_bytes) {
  crec_region body = crec_program_body(prog);
  crec_buffer t1 = temp("t1", 300), t2 = temp("t2", 100), t3 = temp("t3", 1);
  LAUNCH(body, W(t1, 0, 300), W(t2, 0, 100), W(t3, 0, 1));
  crec_plan *plan = plan_aligned(0);
  uint64_t o1 = offset_of(plan, t1), o2 = offset_of(plan, t2), o3 = offset_of(plan, t3);
  cr_assert(o1 % 256 == 0 && o2 % 256 == 0 && o3 % 256 == 0, "offsets %llu %llu %llu",
            (unsigned long long)o1, (unsigned long long)o2, (unsigned long long)o3);
  cr_assert(o1 != o2 && o2 != o3 && o1 != o3);
  cr_assert(o1 + 300 <= o2 || o2 + 100 <= o1);
  uint64_t peak = crec_plan_arena_bytes(plan);
  cr_assert_leq(peak, 512 + 256 + 256);
  cr_assert_geq(peak, 401);
  crec_plan_destroy(plan);
  /* a coarser alignment packs looser */
  plan = plan_aligned(4096);
  o1 = offset_of(plan, t1);
  o2 = offset_of(plan, t2);
  o3 = offset_of(plan, t3);
  cr_assert(o1 % 4096 == 0 && o2 % 4096 == 0 && o3 % 4096 == 0);
  cr_assert_eq(crec_plan_arena_bytes(plan), 2 * 4096 + 1);
  crec_plan_destroy(plan);
}

Test(arena, no_used_temporaries_need_no_arena) {
  crec_region body = crec_program_body(prog);
  crec_buffer x = crec_test_argument(prog, "x", 64);
  crec_plan *plan = plan_aligned(0);
  cr_assert_eq(crec_plan_arena_bytes(plan), 0);
  crec_plan_destroy(plan);
  temp("unused", 4096);
  LAUNCH(body, W(x, 0, 64));
  plan = plan_aligned(0);
  cr_assert_eq(crec_plan_arena_bytes(plan), 0);
  crec_plan_destroy(plan);
  cr_assert_eq(crec_plan_arena_bytes(NULL), 0);
}

Test(arena, temporary_queries_refuse_other_buffers) {
  crec_buffer t = temp("t", 64), x = crec_test_argument(prog, "x", 64);
  crec_plan *plan = plan_aligned(0);
  uint64_t offset = 7;
  size_t first, last;
  EXPECT_STATUS(crec_plan_get_temporary(plan, x, &offset), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("'x'");
  EXPECT_STATUS(crec_plan_get_lifetime(plan, x, &first, &last), CREC_ERR_INVALID_ARGUMENT);
  crec_kernel k2;
  crec_program *other = crec_test_program(&k2);
  crec_buffer foreign;
  EXPECT_OK(crec_program_add_temporary(other, "t", 64, &foreign));
  EXPECT_STATUS(crec_plan_get_temporary(plan, foreign, &offset), CREC_ERR_INVALID_HANDLE);
  EXPECT_ERROR_MENTIONS("'buffer'");
  EXPECT_STATUS(crec_plan_get_lifetime(plan, foreign, &first, &last), CREC_ERR_INVALID_HANDLE);
  EXPECT_STATUS(crec_plan_get_temporary(NULL, t, &offset), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_plan_get_temporary(plan, t, NULL), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_plan_get_lifetime(plan, t, NULL, &last), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_plan_get_lifetime(plan, t, &first, NULL), CREC_ERR_NULL_POINTER);
  EXPECT_OK(crec_plan_get_temporary(plan, t, &offset));
  crec_program_destroy(other);
  crec_plan_destroy(plan);
}

Test(arena, a_plan_made_before_a_buffer_was_added_does_not_know_it) {
  crec_region body = crec_program_body(prog);
  crec_buffer t1 = temp("t1", 64);
  LAUNCH(body, W(t1, 0, 64));
  crec_plan *plan = plan_aligned(0);
  crec_buffer t2 = temp("t2", 64); /* the program changed: the plan is stale */
  uint64_t offset = 1;
  size_t first, last;
  EXPECT_STATUS(crec_plan_get_temporary(plan, t2, &offset), CREC_ERR_INVALID_HANDLE);
  EXPECT_ERROR_MENTIONS("'buffer'");
  EXPECT_STATUS(crec_plan_get_lifetime(plan, t2, &first, &last), CREC_ERR_INVALID_HANDLE);
  char *out = NULL;
  EXPECT_STATUS(crec_dump(prog, plan, CREC_DUMP_TEXT, &out, NULL), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("'plan'");
  cr_assert_null(out);
  EXPECT_OK(crec_plan_get_temporary(plan, t1, &offset));
  cr_assert_eq(offset, 0);
  crec_plan_destroy(plan);
}

/* ---- property test ---- */

typedef struct temp_seen {
  crec_buffer b;
  uint64_t size, offset;
  size_t first, last; /* expected, from the program; first > last when unused */
  const char *name;
} temp_seen;

static void check_arena(const crec_program *p, uint64_t seed, uint32_t alignment) {
  crec_plan_options o = CREC_PLAN_OPTIONS_INIT;
  o.arena_alignment = alignment;
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(p, &o, &plan));

  size_t nb = crec_program_buffer_count(p), n = 0;
  temp_seen *t = calloc(nb, sizeof *t);
  cr_assert_not_null(t);
  for (size_t i = 0; i < nb; i++) {
    crec_buffer_info info;
    crec_buffer b = crec_program_buffer(p, i);
    EXPECT_OK(crec_buffer_get_info(p, b, &info));
    if (info.kind != CREC_BUFFER_TEMPORARY) continue;
    temp_seen s = {b, info.size, 0, SIZE_MAX, 0, info.name};
    EXPECT_OK(crec_plan_get_temporary(plan, b, &s.offset));
    t[n++] = s;
  }
  /* expected lifetimes, from every range of every command */
  for (size_t c = 0; c < crec_program_command_count(p); c++) {
    crec_command cmd = crec_program_command(p, c);
    crec_range ranges[16];
    bool writes[16];
    size_t nr;
    crec_test_command_ranges(p, cmd, ranges, writes, 16, &nr);
    if (nr == 0) continue;
    size_t pos = crec_test_top_position(p, cmd);
    for (size_t k = 0; k < nr; k++)
      for (size_t i = 0; i < n; i++)
        if (t[i].b.id == ranges[k].buffer.id) {
          if (pos < t[i].first) t[i].first = pos;
          if (pos > t[i].last) t[i].last = pos;
        }
  }
  uint64_t peak = crec_plan_arena_bytes(plan), bound = 0, top = 0;
  for (size_t i = 0; i < n; i++) {
    size_t f, l;
    EXPECT_OK(crec_plan_get_lifetime(plan, t[i].b, &f, &l));
    bool used = t[i].first != SIZE_MAX;
    if (used)
      cr_assert(f == t[i].first && l == t[i].last, "seed %llu: '%s' lives over %zu..%zu, expected %zu..%zu",
                (unsigned long long)seed, t[i].name, f, l, t[i].first, t[i].last);
    else
      cr_assert_gt(f, l, "seed %llu: unused '%s' lives over %zu..%zu", (unsigned long long)seed, t[i].name, f, l);
    if (!used) continue;
    cr_assert_eq(t[i].offset % alignment, 0, "seed %llu: '%s' at offset %llu, alignment %u",
                 (unsigned long long)seed, t[i].name, (unsigned long long)t[i].offset, alignment);
    bound += (t[i].size + alignment - 1) / alignment * alignment;
    if (t[i].offset + t[i].size > top) top = t[i].offset + t[i].size;
    for (size_t j = 0; j < i; j++) {
      if (t[j].first == SIZE_MAX) continue;
      bool together = t[i].first <= t[j].last && t[j].first <= t[i].last;
      bool overlap = t[i].offset < t[j].offset + t[j].size && t[j].offset < t[i].offset + t[i].size;
      cr_assert(!(together && overlap),
                "seed %llu: '%s' [%llu,+%llu) live %zu..%zu and '%s' [%llu,+%llu) live %zu..%zu overlap",
                (unsigned long long)seed, t[i].name, (unsigned long long)t[i].offset,
                (unsigned long long)t[i].size, t[i].first, t[i].last, t[j].name,
                (unsigned long long)t[j].offset, (unsigned long long)t[j].size, t[j].first, t[j].last);
    }
  }
  cr_assert_leq(peak, bound, "seed %llu: peak %llu above the sum of aligned sizes %llu",
                (unsigned long long)seed, (unsigned long long)peak, (unsigned long long)bound);
  cr_assert_eq(peak, top, "seed %llu: peak %llu, but the highest temporary ends at %llu",
               (unsigned long long)seed, (unsigned long long)peak, (unsigned long long)top);
  free(t);
  crec_plan_destroy(plan);
}

static void arena_property(uint64_t first_seed, int count, bool vary_alignment) {
  static const uint32_t alignments[] = {256, 512, 1024, 2048, 4096, 8192};
  crec_test_shape shape = {16, 5000, 40, true, false};
  for (int i = 0; i < count; i++) {
    uint64_t seed = first_seed + (uint64_t)i;
    crec_program *p = crec_test_random_program(seed, &shape);
    uint32_t alignment = vary_alignment ? alignments[seed % 6] : 256;
    check_arena(p, seed, alignment);
    crec_program_destroy(p);
  }
}

Test(arena, random_programs_default_alignment, .timeout = 120) { arena_property(1, 3000, false); }

Test(arena, random_programs_other_alignments, .timeout = 120) { arena_property(100000, 1500, true); }

/* Many small temporaries, many positions: packing gets crowded. */
Test(arena, random_programs_crowded, .timeout = 120) {
  crec_test_shape shape = {40, 300, 80, false, false};
  for (uint64_t seed = 7000; seed < 7500; seed++) {
    crec_program *p = crec_test_random_program(seed, &shape);
    check_arena(p, seed, seed % 2 ? 256 : 1024);
    crec_program_destroy(p);
  }
}

/* ---- host temporaries: a second arena ---- */

Test(arena, host_temporaries_get_their_own_arena_and_share_no_bytes_with_device_ones) {
  crec_region body = crec_program_body(prog);
  crec_buffer d1 = temp("d1", 1000), d2 = temp("d2", 300);
  crec_buffer h1, h2, h3;
  EXPECT_OK(crec_program_add_host_temporary(prog, "h1", 700, &h1));
  EXPECT_OK(crec_program_add_host_temporary(prog, "h2", 100, &h2));
  EXPECT_OK(crec_program_add_host_temporary(prog, "h3", 64, &h3));
  LAUNCH(body, W(d1, 0, 1000), W(h1, 0, 700));
  LAUNCH(body, W(d2, 0, 300), W(h2, 0, 100));
  LAUNCH(body, R(h2, 0, 100));
  crec_plan *plan = plan_aligned(0);
  /* each arena packs by lifetime on its own: d1 and d2 share offset 0, as do h1 and h2 */
  cr_assert_eq(crec_plan_arena_bytes(plan), 1000);
  cr_assert_eq(crec_plan_host_arena_bytes(plan), 700);
  cr_assert_eq(offset_of(plan, h1), 0);
  cr_assert_eq(offset_of(plan, h2), 0);
  expect_unused(plan, h3);
  crec_buffer_info info;
  EXPECT_OK(crec_buffer_get_info(prog, h1, &info));
  cr_assert_eq(info.kind, CREC_BUFFER_TEMPORARY);
  cr_assert_eq(info.memory, CREC_MEMORY_HOST);
  EXPECT_OK(crec_buffer_get_info(prog, d1, &info));
  cr_assert_eq(info.memory, CREC_MEMORY_DEVICE);
  char *text = NULL;
  EXPECT_OK(crec_dump(prog, plan, CREC_DUMP_TEXT, &text, NULL));
  cr_assert(strstr(text, "; arena 1000 bytes; host arena 700 bytes\n"), "%s", text);
  cr_assert(strstr(text, "h1               temporary 700 bytes, host memory, host arena offset 0, live 0..0\n"),
            "%s", text);
  crec_free(text);
  crec_plan_destroy(plan);
  cr_assert_eq(crec_plan_host_arena_bytes(NULL), 0);
}

Test(arena, a_memset_or_a_condition_refuses_a_host_temporary) {
  crec_region body = crec_program_body(prog);
  crec_buffer h;
  EXPECT_OK(crec_program_add_host_temporary(prog, "h", 64, &h));
  crec_command c;
  EXPECT_STATUS(crec_program_add_memset(prog, body, NULL, crec_range_of(h, 0, 64), 0, 4, &c), CREC_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(crec_last_error(), "buffer 'h' is host memory"), "%s", crec_last_error());
  EXPECT_STATUS(crec_program_add_temporary(prog, "h", 64, &h), CREC_ERR_DUPLICATE_NAME);
  EXPECT_STATUS(crec_program_add_host_temporary(prog, "z", 0, &h), CREC_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(crec_last_error(), "crec_program_add_host_temporary"), "%s", crec_last_error());
}
