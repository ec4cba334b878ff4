/* Percentiles, the bench report (the JSON schema 'crec bench --help' gives, and the table),
 * and the progress bar that appears only on a terminal. */
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pty.h>
#include <string.h>
#include <unistd.h>

#include "test_tool.h"

Test(tool_stats, percentiles_by_nearest_rank) {
  double s[100];
  for (int i = 0; i < 100; i++) s[i] = (double)(100 - i); /* 100 .. 1, unsorted */
  crec_tool_stats st;
  crec_tool_diag d;
  cr_assert_eq(crec_tool_stats_compute(s, 100, &st, &d), 0);
  cr_assert_eq(st.count, 100);
  cr_assert_eq(st.min, 1);
  cr_assert_eq(st.p50, 50);
  cr_assert_eq(st.p90, 90);
  cr_assert_eq(st.p99, 99);
  cr_assert_eq(s[0], 100, "the samples were reordered");
  double ten[10] = {5, 1, 9, 3, 7, 2, 8, 4, 6, 10};
  cr_assert_eq(crec_tool_stats_compute(ten, 10, &st, &d), 0);
  cr_assert_eq(st.min, 1);
  cr_assert_eq(st.p50, 5);
  cr_assert_eq(st.p90, 9);
  cr_assert_eq(st.p99, 10);
  double one = 3.25;
  cr_assert_eq(crec_tool_stats_compute(&one, 1, &st, &d), 0);
  cr_assert(st.min == 3.25 && st.p50 == 3.25 && st.p90 == 3.25 && st.p99 == 3.25);
  /* one slow outlier among 1000 shows in p99 only when it is above the 99th rank */
  double many[1000];
  for (int i = 0; i < 1000; i++) many[i] = i < 985 ? 1.0 : 50.0;
  cr_assert_eq(crec_tool_stats_compute(many, 1000, &st, &d), 0);
  cr_assert_eq(st.p90, 1.0);
  cr_assert_eq(st.p99, 50.0);
}

Test(tool_stats, rejects_what_is_not_a_duration) {
  crec_tool_stats st;
  crec_tool_diag d;
  cr_assert_eq(crec_tool_stats_compute(NULL, 0, &st, &d), -1);
  cr_assert(strstr(d.message, "no samples"));
  double bad[3] = {1, NAN, 2};
  cr_assert_eq(crec_tool_stats_compute(bad, 3, &st, &d), -1);
  cr_assert(strstr(d.message, "sample 1"), "%s", d.message);
  double negative[2] = {1, -1};
  cr_assert_eq(crec_tool_stats_compute(negative, 2, &st, &d), -1);
}

static crec_tool_bench_result sample_result(void) {
  crec_tool_bench_result r;
  memset(&r, 0, sizeof r);
  r.program = "examples/chain.mlir";
  r.entry = "main";
  r.device = "NVIDIA H200";
  r.nodes = 1000;
  r.iters = 100;
  r.warmup = 10;
  r.rotated_sets = 2;
  r.record_us = 4012.25;
  r.eager = (crec_tool_stats){100, 3500.5, 3512.0, 3600.0, 3900.125};
  r.replay = (crec_tool_stats){100, 1010.0, 1012.5, 1020.0, 1100.0};
  r.replay_update = (crec_tool_stats){100, 1300.0, 1320.0, 1350.0, 1400.0};
  return r;
}

Test(tool_stats, bench_json_is_the_object_of_the_design) {
  crec_tool_bench_result r = sample_result();
  crec_tool_buf b = {0};
  crec_tool_bench_json(&b, &r);
  cr_assert(!b.failed);
  /* one line: one object */
  cr_assert_eq(tool_count_lines(b.data), 1);
  cr_assert_eq(b.data[b.len - 1], '\n');
  json v;
  cr_assert_eq(json_parse(b.data, &v), 0, "not JSON: %s", b.data);
  static const char *const top[] = {"nodes", "record_us", "eager_us", "replay_us", "replay_update_us", NULL};
  static const char *const pct[] = {"min", "p50", "p90", "p99", NULL};
  json_expect_keys(&v, "the bench object", top);
  cr_assert_eq(json_get(&v, "nodes")->kind, JSON_NUMBER);
  cr_assert_eq(json_get(&v, "nodes")->number, 1000);
  cr_assert_float_eq(json_get(&v, "record_us")->number, 4012.25, 1e-9);
  const char *kinds[] = {"eager_us", "replay_us", "replay_update_us"};
  const crec_tool_stats *want[] = {&r.eager, &r.replay, &r.replay_update};
  for (int k = 0; k < 3; k++) {
    const json *p = json_get(&v, kinds[k]);
    json_expect_keys(p, kinds[k], pct);
    for (int i = 0; i < 4; i++) cr_assert_eq(p->items[i].kind, JSON_NUMBER);
    cr_assert_float_eq(json_get(p, "min")->number, want[k]->min, 1e-3);
    cr_assert_float_eq(json_get(p, "p50")->number, want[k]->p50, 1e-3);
    cr_assert_float_eq(json_get(p, "p90")->number, want[k]->p90, 1e-3);
    cr_assert_float_eq(json_get(p, "p99")->number, want[k]->p99, 1e-3);
  }
  json_free(&v);
  crec_tool_buf_free(&b);
}

Test(tool_stats, bench_table_reads_as_a_table) {
  crec_tool_bench_result r = sample_result();
  crec_tool_buf b = {0};
  crec_tool_bench_table(&b, &r);
  cr_assert(strstr(b.data, "examples/chain.mlir (entry main) on NVIDIA H200\n"), "%s", b.data);
  cr_assert(strstr(b.data, "graph: 1000 nodes, recorded in 4012.2 us\n") ||
                strstr(b.data, "graph: 1000 nodes, recorded in 4012.3 us\n"),
            "%s", b.data);
  cr_assert(strstr(b.data, "100 timed executions of each kind after 10 warm-up"), "%s", b.data);
  cr_assert(strstr(b.data, "min         p50         p90         p99\n"), "%s", b.data);
  cr_assert(strstr(b.data, "  eager                 3500.50     3512.00     3600.00     3900.12\n"), "%s", b.data);
  cr_assert(strstr(b.data, "  replay                1010.00     1012.50     1020.00     1100.00\n"), "%s", b.data);
  cr_assert(strstr(b.data, "  replay (update)       1300.00     1320.00     1350.00     1400.00\n"), "%s", b.data);
  cr_assert(strstr(b.data, "replay is 3.47x eager at p50"), "%s", b.data);
  crec_tool_buf_free(&b);
}

Test(tool_stats, no_progress_bar_when_stderr_is_not_a_terminal) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  crec_tool_progress p;
  crec_tool_progress_start(&p, f, "bench", 50);
  for (int i = 0; i < 50; i++) crec_tool_progress_step(&p);
  crec_tool_progress_finish(&p);
  fclose(f);
  cr_assert_eq(len, 0, "drew '%s' on a stream that is not a terminal", text);
  free(text);
  FILE *file = tmpfile();
  crec_tool_progress_start(&p, file, "bench", 50);
  for (int i = 0; i < 50; i++) crec_tool_progress_step(&p);
  crec_tool_progress_finish(&p);
  cr_assert_eq(ftell(file), 0, "drew on a regular file");
  fclose(file);
}

Test(tool_stats, progress_bar_on_a_terminal_advances_and_is_erased) {
  int master, slave;
  cr_assert_eq(openpty(&master, &slave, NULL, NULL, NULL), 0, "no pseudo-terminal");
  FILE *tty = fdopen(slave, "w");
  crec_tool_progress p;
  crec_tool_progress_start(&p, tty, "bench: eager", 200);
  cr_assert(p.enabled);
  for (int i = 0; i < 200; i++) crec_tool_progress_step(&p);
  crec_tool_progress_finish(&p);
  fflush(tty);
  char buf[16384];
  size_t len = 0;
  struct pollfd pfd = {master, POLLIN, 0};
  while (len < sizeof buf - 1 && poll(&pfd, 1, 200) > 0) {
    ssize_t n = read(master, buf + len, sizeof buf - 1 - len);
    if (n <= 0) break;
    len += (size_t)n;
  }
  buf[len] = '\0';
  fclose(tty);
  close(master);
  cr_assert(strstr(buf, "bench: eager"), "no label in '%s'", buf);
  cr_assert(strstr(buf, "[##############################] 100%"), "never full: '%s'", buf);
  cr_assert(strstr(buf, "  3%") || strstr(buf, "  4%"), "no early step drawn: '%s'", buf);
  /* redrawn only when the bar changes: about 30 draws, not 200 */
  size_t draws = 0;
  for (const char *s = buf; (s = strstr(s, "%")); s++) draws++;
  cr_assert(draws >= 30 && draws <= 32, "%zu draws", draws);
  cr_assert_eq(buf[len - 1], '\r', "the bar is not erased at the end");
  cr_assert_eq(strchr(buf, '\n'), NULL, "the bar wrote a newline");
}
