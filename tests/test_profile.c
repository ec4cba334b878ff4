/* Profiles (crec/profile.h) built from spans: per-command device time, start,
 * concurrency and loop iterations, the critical path, idle time, the timeline,
 * and their text and JSON, which the HTML page draws. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_tool.h"

TestSuite(profile, .fini = crec_test_leak_check);

/* A launch of `k` whose arguments are the whole of each of `bufs`, with `access`. */
static crec_command launch(crec_program *p, crec_region r, crec_kernel k, const char *name, const crec_buffer *bufs,
                           const crec_access *access, size_t n) {
  crec_arg a[5];
  for (size_t i = 0; i < n; i++) a[i] = crec_arg_buffer(crec_range_whole(bufs[i]), access[i]);
  return crec_test_launch(p, r, name, k, a, n);
}

/* examples/branches.mlir's shape: four chains of two launches (a, b, c, d), joined by #8. */
static crec_program *branches(crec_command cmd[9]) {
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  crec_buffer x = crec_test_argument(p, "x", 1024), y = crec_test_argument(p, "y", 1024);
  crec_buffer t[4] = {crec_test_argument(p, "a", 1024), crec_test_argument(p, "b", 1024),
                      crec_test_argument(p, "c", 1024), crec_test_argument(p, "d", 1024)};
  static const char *const names[8] = {"a = 2x", "a += 1", "b = x * x", "b += 1", "c = 3x", "c += 2", "d = -3x", "d += -3"};
  crec_region body = crec_program_body(p);
  for (int i = 0; i < 4; i++) {
    crec_buffer first[2] = {t[i], x};
    crec_access fa[2] = {CREC_ACCESS_WRITE, CREC_ACCESS_READ};
    cmd[2 * i] = launch(p, body, k, names[2 * i], first, fa, 2);
    crec_access ra = CREC_ACCESS_READ_WRITE;
    cmd[2 * i + 1] = launch(p, body, k, names[2 * i + 1], &t[i], &ra, 1);
  }
  crec_buffer all[5] = {y, t[0], t[1], t[2], t[3]};
  crec_access aa[5] = {CREC_ACCESS_WRITE, CREC_ACCESS_READ, CREC_ACCESS_READ, CREC_ACCESS_READ, CREC_ACCESS_READ};
  cmd[8] = launch(p, body, k, "y = a + b + c + d", all, aa, 5);
  return p;
}

/* One replay of branches, in microseconds, as in tests/profiles/branches.json:
 * chain b (#2, #3) is the slowest. */
static const double branch_us[9][2] = {{0.0, 2.0}, {2.0, 3.5}, {0.1, 3.1}, {3.1, 5.1}, {0.2, 1.8},
                                       {1.8, 3.0}, {0.3, 2.1}, {2.1, 3.4}, {5.1, 6.6}};

/* Three replays of those times: spans 6.6, 9.9 and 5.94 us, so replay 0 is the median. */
static const double three_replays[3] = {1.0, 1.5, 0.9};

/* Replay r takes the times above scaled by scale[r], from a start of its own. */
static size_t branch_spans(const crec_command cmd[9], crec_profile_span *out, const double *scale, uint32_t replays) {
  size_t n = 0;
  for (uint32_t r = 0; r < replays; r++)
    for (int c = 8; c >= 0; c--) /* any order */
      out[n++] = (crec_profile_span){cmd[c], r, -1, 1000000000ull * (r + 1) + (uint64_t)llround(branch_us[c][0] * 1e3 * scale[r]),
                                     1000000000ull * (r + 1) + (uint64_t)llround(branch_us[c][1] * 1e3 * scale[r])};
  return n;
}

static void expect_near(double got, double want, const char *what) {
  cr_assert(fabs(got - want) < 1e-6, "%s: %.6f, want %.6f", what, got, want);
}

Test(profile, branches_have_the_slowest_chain_as_their_critical_path) {
  crec_command cmd[9];
  crec_program *p = branches(cmd);
  crec_profile_span spans[27];
  size_t n = branch_spans(cmd, spans, three_replays, 3);
  crec_profile *pr = NULL;
  EXPECT_OK(crec_profile_create(p, spans, n, 3, NULL, &pr));
  crec_profile_summary s = CREC_PROFILE_SUMMARY_INIT;
  EXPECT_OK(crec_profile_get_summary(pr, &s));
  cr_assert_eq(s.replays, 3);
  cr_assert_eq(s.median_replay, 0);
  expect_near(s.span_us, 6.6, "span");
  expect_near(s.idle_us, 0.0, "idle");
  cr_assert_eq(s.critical_length, 3);
  cr_assert(s.critical_path[0].id == cmd[2].id && s.critical_path[1].id == cmd[3].id && s.critical_path[2].id == cmd[8].id,
            "the critical path is not #2 -> #3 -> #8");
  expect_near(s.critical_us, 3.0 + 2.0 + 1.5, "critical path");
  cr_assert_eq(s.timeline_spans, 9);
  crec_profile_command c = CREC_PROFILE_COMMAND_INIT;
  EXPECT_OK(crec_profile_get_command(pr, cmd[3], &c));
  cr_assert(c.ran && c.critical && !c.is_loop);
  expect_near(c.device_us.p50, 2.0, "#3 p50");
  expect_near(c.device_us.min, 1.8, "#3 min");
  expect_near(c.device_us.max, 3.0, "#3 max");
  expect_near(c.start_us, 3.1, "#3 start");
  cr_assert_eq(c.nodes, 1);
  cr_assert_eq(c.concurrent, 2, "#3 overlaps #1 and #7: %llu", (unsigned long long)c.concurrent);
  EXPECT_OK(crec_profile_get_command(pr, cmd[0], &c));
  cr_assert(c.ran && !c.critical);
  cr_assert_eq(c.concurrent, 4, "#0 overlaps #2, #4, #5 and #6: %llu", (unsigned long long)c.concurrent);
  crec_profile_destroy(pr);
  crec_program_destroy(p);
}

/* The JSON follows docs/profile.schema.json and says what the accessors say; the
 * text is a table, slowest first, under the summary. */
Test(profile, json_and_text_say_what_the_accessors_say) {
  crec_command cmd[9];
  crec_program *p = branches(cmd);
  crec_profile_span spans[27];
  size_t n = branch_spans(cmd, spans, three_replays, 3);
  double plain[3] = {9.8, 10.4, 9.6}, profiled[3] = {11.2, 11.9, 11.0};
  crec_profile_options o = CREC_PROFILE_OPTIONS_INIT;
  o.program = "examples/branches.mlir";
  o.entry = "main";
  o.device = "NVIDIA H200";
  o.replay_us = plain, o.num_replay_us = 3;
  o.profiled_us = profiled, o.num_profiled_us = 3;
  o.host_binding_checks_us = 0.4, o.host_launch_us = 2.1;
  crec_profile *pr = NULL;
  EXPECT_OK(crec_profile_create(p, spans, n, 3, &o, &pr));
  char *text = NULL;
  size_t len = 0;
  EXPECT_OK(crec_profile_dump(pr, CREC_PROFILE_JSON, &text, &len));
  cr_assert_eq(strlen(text), len);
  json v;
  cr_assert_eq(json_parse(text, &v), 0, "not JSON: %s", text);
  static const char *const top[] = {"format", "version", "program", "entry", "device", "iters", "replay_us",
                                    "host_us", "commands", "critical_path", "idle_us", "timeline", NULL};
  json_expect_keys(&v, "the profile", top);
  cr_assert_str_eq(json_get(&v, "format")->string, "crec-profile");
  cr_assert_eq(json_get(&v, "version")->number, 1);
  cr_assert_eq(json_get(&v, "iters")->number, 3);
  const json *rp = json_get(json_get(&v, "replay_us"), "plain");
  expect_near(json_get(rp, "p50")->number, 9.8, "plain p50");
  const json *host = json_get(&v, "host_us");
  static const char *const host_keys[] = {"binding_checks", "launch", NULL};
  json_expect_keys(host, "host_us", host_keys);
  const json *cmds = json_get(&v, "commands");
  cr_assert_eq(cmds->count, 9);
  static const char *const cmd_keys[] = {"id", "device_us", "start_us", "nodes", "concurrent", NULL};
  for (size_t i = 0; i < cmds->count; i++) json_expect_keys(&cmds->items[i], "a command", cmd_keys);
  const json *c3 = &cmds->items[3];
  cr_assert_eq(json_get(c3, "id")->number, 3);
  expect_near(json_get(json_get(c3, "device_us"), "p50")->number, 2.0, "#3 in JSON");
  const json *cp = json_get(&v, "critical_path");
  const json *path = json_get(cp, "commands");
  cr_assert(path->count == 3 && path->items[0].number == 2 && path->items[1].number == 3 && path->items[2].number == 8);
  expect_near(json_get(cp, "share")->number, 0.9848, "share");
  const json *tl = json_get(&v, "timeline");
  cr_assert_eq(tl->count, 9);
  for (size_t i = 1; i < tl->count; i++)
    cr_assert(json_get(&tl->items[i], "start_us")->number >= json_get(&tl->items[i - 1], "start_us")->number,
              "the timeline is not by start");
  expect_near(json_get(&tl->items[0], "start_us")->number, 0, "the timeline starts at 0");
  json_free(&v);
  /* the page draws it: a bar of #3 selects #3, and the path is marked */
  char *html = NULL;
  size_t hl = 0;
  crec_tool_diag d;
  cr_assert_eq(crec_tool_dump_render(p, CREC_TOOL_FORMAT_HTML, "branches", text, &html, &hl, &d), 0, "%s", d.message);
  crec_free(text);
  const char *page = tool_temp_file("profile.html", html, hl);
  free(html);
  if (tool_chromium()) {
    const char *st;
    char *dom = tool_open_selftest(page, "bar:c3", &st);
    cr_assert(strstr(st, "selected c3 through its bar"), "%.2000s", st);
    cr_assert(strstr(st, "device time\t2.00 \u00b5s per replay (p50; min 1.80 \u00b5s, max 3.00 \u00b5s)"), "%.2000s", st);
    cr_assert(strstr(st, "\ncritical: c8 c2 c3\nlanes: 4\nbars: 9\nselected bars: 1\nshaded: 9"), "%.2000s", st);
    free(dom);
  }
  EXPECT_OK(crec_profile_dump(pr, CREC_PROFILE_TEXT, &text, NULL));
  static const char *const lines[] = {
      "profile of examples/branches.mlir (entry main): 3 replays\n",
      "device: NVIDIA H200\n",
      "a replay: 9.80 us p50 (min 9.60, max 10.40); under the profiler 11.20 us p50 (+14%)\n",
      "device span of the median replay (#0): 6.60 us, idle 0.00 us\n",
      "critical path: 6.50 us (98% of the span): #2 'b = x * x' -> #3 'b += 1' -> #8 'y = a + b + c + d'\n",
      "host side of a replay: binding checks 0.40 us, launch 2.10 us\n",
  };
  for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) cr_assert(strstr(text, lines[i]), "no '%s' in\n%s", lines[i], text);
  /* slowest first: #2 (3.0), #3 (2.0), #6 (1.8) ... */
  const char *r2 = strstr(text, "* #2 launch 'b = x * x'"), *r3 = strstr(text, "* #3 launch 'b += 1'"),
             *r6 = strstr(text, "  #6 launch 'd = -3x'");
  cr_assert(r2 && r3 && r6 && r2 < r3 && r3 < r6, "not slowest first:\n%s", text);
  crec_free(text);
  crec_profile_destroy(pr);
  crec_program_destroy(p);
}

/* while (n > 0) { step; copy } with its cond 'test': 3 iterations in two replays,
 * 5 in the third; the cond runs once more than the body and does not count. */
Test(profile, a_loop_counts_its_body_iterations) {
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  crec_buffer n = crec_test_argument(p, "n", 4), x = crec_test_argument(p, "x", 1024);
  crec_command w, test, step, copy;
  crec_region cond, body;
  EXPECT_OK(crec_program_add_while(p, crec_program_body(p), "loop", crec_range_of(n, 0, 1), &w, &cond, &body));
  crec_access rw = CREC_ACCESS_READ_WRITE;
  test = launch(p, cond, k, "test", &n, &rw, 1);
  step = launch(p, body, k, "step", &x, &rw, 1);
  copy = launch(p, body, k, "copy", &x, &rw, 1);
  crec_profile_span spans[64];
  size_t m = 0;
  const int iters[3] = {3, 5, 3};
  for (uint32_t r = 0; r < 3; r++) {
    uint64_t t = 1000000ull * (r + 1);
    spans[m++] = (crec_profile_span){w, r, -1, t, t + 100}; /* the set kernel before the loop */
    t += 100;
    for (int i = 0; i <= iters[r]; i++) {
      spans[m++] = (crec_profile_span){test, r, i, t, t + 200};
      t += 200;
      if (i == iters[r]) break;
      spans[m++] = (crec_profile_span){step, r, i, t, t + 1000};
      t += 1000;
      spans[m++] = (crec_profile_span){copy, r, i, t, t + 500};
      t += 500;
      spans[m++] = (crec_profile_span){w, r, i, t, t + 100}; /* the set kernel at the body's end */
      t += 100;
    }
  }
  crec_profile *pr = NULL;
  EXPECT_OK(crec_profile_create(p, spans, m, 3, NULL, &pr));
  crec_profile_command c = CREC_PROFILE_COMMAND_INIT;
  EXPECT_OK(crec_profile_get_command(pr, w, &c));
  cr_assert(c.is_loop && c.ran);
  expect_near(c.iterations.p50, 3, "iterations p50");
  expect_near(c.iterations.max, 5, "iterations max");
  /* 3 iterations: 0.1 + 4 x 0.2 + 3 x (1.0 + 0.5 + 0.1) us */
  expect_near(c.device_us.p50, 0.1 + 0.8 + 4.8, "loop device time");
  expect_near(c.per_iteration_us, (0.1 + 0.8 + 4.8) / 3, "per iteration");
  cr_assert_eq(c.nodes, 1 + 4 + 3 * 3, "spans of the median replay: %llu", (unsigned long long)c.nodes);
  cr_assert(c.critical, "the loop is the whole program");
  EXPECT_OK(crec_profile_get_command(pr, step, &c));
  cr_assert(!c.is_loop && c.nodes == 3);
  expect_near(c.device_us.p50, 3.0, "step");
  char *text = NULL;
  EXPECT_OK(crec_profile_dump(pr, CREC_PROFILE_JSON, &text, NULL));
  cr_assert(strstr(text, "\"iterations\": {\"min\": 3.000, \"p50\": 3.000, \"max\": 5.000}, \"per_iteration_us\": 1.900"),
            "%s", text);
  cr_assert(strstr(text, "{\"command\": 1, \"start_us\": 0.100, \"end_us\": 0.300, \"iteration\": 0}"), "%s", text);
  crec_free(text);
  crec_profile_destroy(pr);
  crec_program_destroy(p);
}

Test(profile, bad_spans_are_refused_naming_the_span) {
  crec_command cmd[9];
  crec_program *p = branches(cmd);
  crec_profile_span spans[27];
  size_t n = branch_spans(cmd, spans, three_replays, 1);
  crec_profile *pr = (crec_profile *)&pr;
  cr_assert_eq(crec_profile_create(p, spans, n, 0, NULL, &pr), CREC_ERR_INVALID_ARGUMENT);
  cr_assert_null(pr);
  cr_assert_eq(crec_profile_create(p, spans, 0, 1, NULL, &pr), CREC_ERR_INVALID_ARGUMENT);
  cr_assert_eq(crec_profile_create(p, spans, 3, 4, NULL, &pr), CREC_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(crec_last_error(), "argument 'replays': 4 replays, but only 3 spans"), "%s", crec_last_error());
  cr_assert_eq(crec_profile_create(NULL, spans, n, 1, NULL, &pr), CREC_ERR_NULL_POINTER);
  spans[4].replay = 1;
  cr_assert_eq(crec_profile_create(p, spans, n, 1, NULL, &pr), CREC_ERR_OUT_OF_RANGE);
  cr_assert(strstr(crec_last_error(), "argument 'spans[4]': replay 1 of 1 replays"), "%s", crec_last_error());
  spans[4].replay = 0;
  uint64_t t = spans[5].start_ns;
  spans[5].start_ns = spans[5].end_ns + 1;
  cr_assert_eq(crec_profile_create(p, spans, n, 1, NULL, &pr), CREC_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(crec_last_error(), "argument 'spans[5]': it ends before it starts"), "%s", crec_last_error());
  spans[5].start_ns = t;
  spans[6].iteration = 2;
  cr_assert_eq(crec_profile_create(p, spans, n, 1, NULL, &pr), CREC_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(crec_last_error(), "argument 'spans[6]': iteration 2 of command #"), "%s", crec_last_error());
  spans[6].iteration = -1;
  spans[7].command.id = 0;
  cr_assert_eq(crec_profile_create(p, spans, n, 1, NULL, &pr), CREC_ERR_INVALID_HANDLE);
  cr_assert(strstr(crec_last_error(), "spans[7]"), "%s", crec_last_error());
  spans[7].command = cmd[1];
  EXPECT_OK(crec_profile_create(p, spans, n, 1, NULL, &pr));
  char *text = NULL;
  cr_assert_eq(crec_profile_dump(pr, (crec_profile_format)2, &text, NULL), CREC_ERR_INVALID_ARGUMENT);
  cr_assert_null(text);
  crec_profile_command c = CREC_PROFILE_COMMAND_INIT;
  c.struct_size = 4;
  cr_assert_eq(crec_profile_get_command(pr, cmd[0], &c), CREC_ERR_INVALID_ARGUMENT);
  crec_profile_destroy(pr);
  crec_profile_destroy(NULL);
  crec_program_destroy(p);
}

/* Every allocation failure of crec_profile_create and crec_profile_dump is an
 * out-of-memory error that leaks nothing (the suite runs under ASan in CI),
 * and the retry gives the profile that never failed. */
Test(profile, every_allocation_failure_is_reported_and_leaks_nothing) {
  crec_command cmd[9];
  crec_program *p = branches(cmd);
  crec_profile_span spans[27];
  size_t n = branch_spans(cmd, spans, three_replays, 3);
  crec_profile *pr = NULL;
  EXPECT_OK(crec_profile_create(p, spans, n, 3, NULL, &pr));
  char *want = NULL, *want_text = NULL;
  EXPECT_OK(crec_profile_dump(pr, CREC_PROFILE_JSON, &want, NULL));
  EXPECT_OK(crec_profile_dump(pr, CREC_PROFILE_TEXT, &want_text, NULL));
  crec_profile_destroy(pr);
  int failures = 0;
  for (uint64_t k = 1;; k++) {
    crec_debug_fail_after(CREC_FAULT_ALLOC, k);
    crec_status st = crec_profile_create(p, spans, n, 3, NULL, &pr);
    char *js = NULL, *text = NULL;
    if (st == CREC_OK) {
      st = crec_profile_dump(pr, CREC_PROFILE_JSON, &js, NULL);
      if (st == CREC_OK) st = crec_profile_dump(pr, CREC_PROFILE_TEXT, &text, NULL);
    }
    crec_debug_fail_after(CREC_FAULT_ALLOC, 0);
    if (st == CREC_OK) {
      cr_assert_str_eq(js, want);
      cr_assert_str_eq(text, want_text);
      crec_free(js);
      crec_free(text);
      crec_profile_destroy(pr);
      break;
    }
    cr_assert_eq(st, CREC_ERR_OUT_OF_MEMORY, "allocation %llu: %s", (unsigned long long)k, crec_last_error());
    crec_free(js); /* a failed dump leaves it NULL; a failed create leaves pr NULL */
    crec_profile_destroy(pr);
    pr = NULL;
    failures++;
  }
  cr_assert(failures > 10, "only %d allocations were tried", failures);
  crec_free(want);
  crec_free(want_text);
  crec_program_destroy(p);
  cr_assert_eq(crec_debug_live_objects(), 0);
}

Test(profile, measuring_without_an_exec_or_bindings_names_what_is_missing) {
  crec_profile *prof = (crec_profile *)&prof; /* set to NULL on every refusal that has `out` */
  crec_bindings b = CREC_BINDINGS_INIT;
  cr_assert_eq(crec_exec_profile(NULL, &b, NULL, 5, NULL, &prof), CREC_ERR_NULL_POINTER);
  cr_assert(strstr(crec_last_error(), "crec_exec_profile: 'exec' is NULL"), "%s", crec_last_error());
  cr_assert_null(prof, "a refused call left *out as it was");
  cr_assert_eq(crec_exec_profile(NULL, &b, NULL, 5, NULL, NULL), CREC_ERR_NULL_POINTER);
}
