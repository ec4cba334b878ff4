/* The real `crec` executable on a GPU: `run --check` passes on every example
 * and prints the values the example computes; a --size list replays one
 * recording with several n; `bench --json` has the schema of 'crec bench --help' with sane
 * orderings (graph replay of a 1,000-node chain beats eager execution);
 * `profile` gives jacobi's commands their device time and its loop its sweeps;
 * the FFT, Cholesky and convolution programs replay as eager runs them; a
 * replay that differs from the eager executor exits 1 naming the buffer; the
 * progress bar appears only on a terminal; --cuda-dot writes the driver's DOT.
 *
 * The executable and the staged examples are found next to this runner
 * (../tools/crec, ../examples/) when the build tree was copied elsewhere; set
 * CREC_TOOL and CREC_EXAMPLES_DIR to point elsewhere still. */
#include <fcntl.h>
#include <math.h>
#include <pty.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_tool.h"

extern char **environ;

#define REQUIRE_DEVICE_AND_TOOL() \
  do {                            \
    REQUIRE_DEVICE();             \
    REQUIRE_TOOL_EXE();           \
  } while (0)

/* Under compute-sanitizer (tools/gpu-check.sh --sanitize sets CREC_TEST_SANITIZER=1)
 * the benchmark tests time a few executions of a smaller chain and assert no
 * timings: the sanitizer makes every launch many times slower, eager's most of
 * all, so a benchmark's full run would take minutes and its times say nothing. */
static bool under_sanitizer(void) {
  const char *s = getenv("CREC_TEST_SANITIZER");
  return s && *s && strcmp(s, "0") != 0;
}

static const char *example(const char *name) {
  char file[64];
  snprintf(file, sizeof file, "%s.mlir", name);
  return tool_example(file);
}

/* Asserts a passing `run --check`: status 0, the check line, no eager fallback. */
static void expect_check_passed(const tool_result *r, const char *what) {
  cr_assert_eq(r->status, 0, "%s: exit status %d\nstdout:\n%s\nstderr:\n%s", what, r->status, r->out, r->err);
  tool_expect_has(r->out, "check passed: ");
  tool_expect_has(r->out, " the eager executor in every byte of all ");
  cr_assert_null(strstr(r->out, "ran eagerly"), "%s: control flow fell back to eager execution:\n%s", what, r->out);
}

/* Reads a file of `count` floats written by --output. */
static float *read_floats(const char *path, size_t count) {
  size_t size = 0;
  char *data = tool_slurp(path, &size);
  cr_assert_not_null(data, "%s was not written", path);
  cr_assert_eq(size, count * sizeof(float), "%s has %zu bytes, expected %zu", path, size, count * sizeof(float));
  return (float *)data;
}

/* "--output NAME=PATH" value for `name`, written into the temporary directory. */
static const char *output_arg(const char *name, const char *file) {
  static char args[8][800];
  static int next;
  char *a = args[next++ % 8];
  snprintf(a, sizeof args[0], "%s=%s", name, tool_temp_path(file));
  return a;
}

/* ---- every example passes run --check and computes what it says ------------- */

Test(gpu_tool, chain_computes_odd_squares) {
  REQUIRE_DEVICE_AND_TOOL();
  tool_result r = tool_exec("run", example("chain"), "--input", "x=iota", "--check", "--iters", "20", "--output",
                            output_arg("y", "y.bin"), NULL);
  expect_check_passed(&r, "chain");
  tool_expect_has(r.out, " 3 nodes in ");
  tool_expect_has(r.out, "replayed 20 times");
  tool_expect_has(r.out, "y: f32[4096] checksum ");
  tool_expect_has(r.out, ": 1 9 25 49 81 121 169 225 ...\n");
  tool_result_free(&r);
  float *y = read_floats(tool_temp_path("y.bin"), 4096);
  for (int i = 0; i < 4096; i++) {
    float u = 2.0f * (float)i + 1.0f;
    cr_assert_eq(y[i], u * u, "y[%d] = %g, expected %g", i, (double)y[i], (double)(u * u));
  }
  free(y);
}

/* --require-device, or CREC_REQUIRE_DEVICE=1, changes nothing where there is a device. */
Test(gpu_tool, require_device_runs_as_without_it) {
  REQUIRE_DEVICE_AND_TOOL();
  setenv("CREC_REQUIRE_DEVICE", "1", 1);
  tool_result r = tool_exec("run", example("chain"), "--input", "x=iota", "--check", "--require-device", NULL);
  expect_check_passed(&r, "chain --require-device");
  tool_expect_has(r.out, ": 1 9 25 49 81 121 169 225 ...\n");
  tool_result_free(&r);
}

/* --variants: with --check's three buffer sets and three executable graphs,
 * every replay after the first three finds its set held by a graph; bench says
 * how many of its rotated replays did; a program with device control flow is
 * refused, naming why. */
Test(gpu_tool, variants_keep_a_graph_per_buffer_set) {
  REQUIRE_DEVICE_AND_TOOL();
  tool_result r = tool_exec("run", example("chain"), "--input", "x=iota", "--check", "--iters", "20", "--variants",
                            "3", NULL);
  expect_check_passed(&r, "chain with 3 variants");
  const char *line = strstr(r.out, "3 executable graphs (--variants): ");
  cr_assert_not_null(line, "%s", r.out);
  unsigned long long hits = 0;
  cr_assert_eq(sscanf(line, "3 executable graphs (--variants): %llu replays found", &hits), 1, "%s", line);
  cr_assert_geq(hits, 10, "of 20 replays through 3 sets, %llu found their set held:\n%s", hits, r.out);
  tool_result_free(&r);
  r = tool_exec("bench", example("chain"), "--input", "x=iota", "--iters", "20", "--variants", "2", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  tool_expect_has(r.out, "2 executable graphs (--variants): ");
  tool_expect_has(r.out, " replays found their buffer set held by another graph and updated nothing\n");
  tool_result_free(&r);
  r = tool_exec("run", example("jacobi"), "--input", "b=fill:1", "--scalar", "tol=1e-4", "--variants", "2", NULL);
  cr_assert_eq(r.status, 2, "%s", r.err);
  /* refused before record, naming the control flow (a graph with conditional nodes is instantiated once) */
  tool_expect_has(r.err, "crec run --variants 2: the program has device control flow (command #2 'while more'");
  tool_expect_has(r.err, "leave --variants out");
  tool_result_free(&r);
}

/* The solver loops on the device until the residual is under tol: a smaller
 * tolerance takes more sweeps, and the solution is that of the system. */
Test(gpu_tool, jacobi_runs_until_the_device_says_it_converged) {
  REQUIRE_DEVICE_AND_TOOL();
  int previous_sweeps = 0;
  static const char *const tols[] = {"tol=1e-4", "tol=1e-6"};
  static const float tol_values[] = {1e-4f, 1e-6f};
  for (int t = 0; t < 2; t++) {
    tool_result r = tool_exec("run", example("jacobi"), "--input", "b=fill:1", "--scalar", tols[t], "--check",
                              "--iters", "5", "--output", output_arg("x", "x.bin"), "--output",
                              output_arg("sweeps", "sweeps.bin"), "--output", output_arg("residual", "res.bin"), NULL);
    expect_check_passed(&r, tols[t]);
    tool_result_free(&r);
    size_t size = 0;
    char *sweeps = tool_slurp(tool_temp_path("sweeps.bin"), &size);
    cr_assert_eq(size, 4);
    int32_t n;
    memcpy(&n, sweeps, 4);
    free(sweeps);
    /* the CPU takes 14 and 20 sweeps */
    cr_assert(n >= 10 && n <= 30, "%s: %d sweeps", tols[t], n);
    cr_assert_gt(n, previous_sweeps, "%s took %d sweeps, not more than the looser tolerance's %d", tols[t], n,
                 previous_sweeps);
    previous_sweeps = n;
    float *res = read_floats(tool_temp_path("res.bin"), 1);
    cr_assert(res[0] < tol_values[t], "%s: residual %g", tols[t], (double)res[0]);
    free(res);
    float *x = read_floats(tool_temp_path("x.bin"), 256);
    cr_assert(fabsf(x[0] - 0.3660254f) < 1e-3f && fabsf(x[128] - 0.5f) < 1e-3f, "x[0] = %g, x[128] = %g",
              (double)x[0], (double)x[128]);
    /* A x = b within the tolerance, everywhere */
    for (int i = 0; i < 256; i++) {
      float ax = 4 * x[i] - (i ? x[i - 1] : 0) - (i < 255 ? x[i + 1] : 0);
      cr_assert(fabsf(1 - ax) < 2 * tol_values[t], "%s: row %d: residual %g", tols[t], i, (double)(1 - ax));
    }
    free(x);
  }
}

Test(gpu_tool, switch_dispatches_on_the_mode_in_device_memory) {
  REQUIRE_DEVICE_AND_TOOL();
  static const char *const modes[] = {"mode=fill:0", "mode=fill:1", "mode=fill:2", "mode=fill:7", "mode=fill:-1"};
  for (int m = 0; m < 5; m++) {
    tool_result r = tool_exec("run", example("switch"), "--input", "x=random:1", "--input", modes[m], "--check",
                              "--iters", "4", "--output", output_arg("x", "x.bin"), "--output", output_arg("y", "y.bin"),
                              NULL);
    expect_check_passed(&r, modes[m]);
    tool_result_free(&r);
    float *x = read_floats(tool_temp_path("x.bin"), 1024), *y = read_floats(tool_temp_path("y.bin"), 1024);
    int negatives = 0;
    for (int i = 0; i < 1024; i++) {
      float want = m == 0 ? (x[i] > 0 ? x[i] : 0) : m == 1 ? x[i] * x[i] : m == 2 ? -x[i] : x[i];
      cr_assert_eq(y[i], want, "%s: y[%d] = %g for x = %g, expected %g", modes[m], i, (double)y[i], (double)x[i],
                   (double)want);
      negatives += x[i] < 0;
    }
    cr_assert(negatives > 100, "random:1 gave too few negative inputs to tell the cases apart");
    free(x);
    free(y);
  }
}

Test(gpu_tool, branches_join_to_squares) {
  REQUIRE_DEVICE_AND_TOOL();
  tool_result r = tool_exec("run", example("branches"), "--input", "x=iota", "--check", "--iters", "20", "--output",
                            output_arg("y", "y.bin"), NULL);
  expect_check_passed(&r, "branches");
  tool_expect_has(r.out, " 9 nodes in ");
  tool_expect_has(r.out, "y: f32[1024] checksum ");
  tool_expect_has(r.out, ": 1 4 9 16 25 36 49 64 ...\n");
  tool_result_free(&r);
  float *y = read_floats(tool_temp_path("y.bin"), 1024);
  for (int i = 0; i < 1024; i++) cr_assert_eq(y[i], (float)((i + 1) * (i + 1)), "y[%d] = %g", i, (double)y[i]);
  free(y);
}

Test(gpu_tool, image_kernel_normalizes_rows) {
  REQUIRE_DEVICE_AND_TOOL();
  tool_result r = tool_exec("run", example("image"), "--input", "x=random:1", "--input", "w=random:2", "--check",
                            "--iters", "5", "--output", output_arg("x", "x.bin"), "--output", output_arg("w", "w.bin"),
                            "--output", output_arg("y", "y.bin"), NULL);
  expect_check_passed(&r, "image");
  tool_result_free(&r);
  float *x = read_floats(tool_temp_path("x.bin"), 64 * 1024), *w = read_floats(tool_temp_path("w.bin"), 1024);
  float *y = read_floats(tool_temp_path("y.bin"), 64 * 1024);
  for (int row = 0; row < 64; row++) {
    double sum = 0;
    for (int c = 0; c < 1024; c++) sum += (double)x[row * 1024 + c] * x[row * 1024 + c];
    double scale = 1.0 / sqrt(sum / 1024 + 1e-6);
    for (int c = 0; c < 1024; c++) {
      double want = x[row * 1024 + c] * scale * w[c];
      double got = y[row * 1024 + c];
      cr_assert(fabs(got - want) <= 1e-5 * (fabs(want) + 1e-3), "y[%d][%d] = %g, expected %g", row, c, got, want);
    }
  }
  free(x);
  free(w);
  free(y);
}

/* Several n, one recording each: every element is computed, none beyond n. */
Test(gpu_tool, dynamic_computes_every_element_for_each_n) {
  REQUIRE_DEVICE_AND_TOOL();
  static const int sizes[] = {1, 255, 256, 257, 1000, 100003};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    char size[64];
    snprintf(size, sizeof size, "x=%d", sizes[k]);
    tool_result r = tool_exec("run", example("dynamic"), "--size", size, "--input", "x=iota", "--check", "--output",
                              output_arg("x", "x.bin"), NULL);
    expect_check_passed(&r, size);
    tool_result_free(&r);
    float *x = read_floats(tool_temp_path("x.bin"), (size_t)sizes[k]);
    for (int i = 0; i < sizes[k]; i++)
      cr_assert_eq(x[i], 2.0f * (float)i + 1.0f, "n = %d: x[%d] = %g", sizes[k], i, (double)x[i]);
    free(x);
  }
}

/* The node update count of `run`'s report ("..., 6 node updates"). */
static int node_updates(const char *out) {
  const char *updates = strstr(out, " node updates\n");
  cr_assert_not_null(updates, "%s", out);
  const char *p = updates;
  while (p > out && p[-1] >= '0' && p[-1] <= '9') p--;
  return atoi(p);
}

/* A --size list: one recording replayed with each n in turn; the launches are
 * updated in place when n changes, and each n gets its own right answer. */
Test(gpu_tool, dynamic_replays_one_recording_with_several_n) {
  REQUIRE_DEVICE_AND_TOOL();
  tool_result r = tool_exec("run", example("dynamic"), "--size", "x=1000,100000,7,1", "--input", "x=iota", "--check",
                            NULL);
  expect_check_passed(&r, "a size list");
  tool_expect_has(r.out, "replayed 4 times");
  tool_expect_has(r.out, "each replay took the next of 4 sizes in turn; one recording served them all\n");
  tool_expect_has(r.out, "x: f32[1000] checksum ");
  tool_expect_has(r.out, "x: f32[100000] checksum ");
  tool_expect_has(r.out, "x: f32[7] checksum ");
  tool_expect_has(r.out, ": 1 3 5 7 9 11 13\n");
  tool_expect_has(r.out, "x: f32[1] checksum ");
  tool_expect_has(r.out, ": 1\n");
  tool_result_free(&r);
  /* without --check the buffers stay put, so only n changes: the first replay
   * uses the recorded n, each later one updates both launches (grid and n) */
  r = tool_exec("run", example("dynamic"), "--size", "x=1000,100000,7,1", "--input", "x=iota", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  tool_expect_has(r.out, ": 1 3 5 7 9 11 13\n");
  cr_assert_eq(node_updates(r.out), 6, "expected 6 node updates for 3 changes of n in 2 launches:\n%s", r.out);
  tool_result_free(&r);
}

/* ---- bench ------------------------------------------------------------------ */

static void expect_percentiles(const json *v, const char *key) {
  static const char *const keys[] = {"min", "p50", "p90", "p99", NULL};
  const json *p = json_get(v, key);
  json_expect_keys(p, key, keys);
  double min = json_get(p, "min")->number, p50 = json_get(p, "p50")->number;
  double p90 = json_get(p, "p90")->number, p99 = json_get(p, "p99")->number;
  for (size_t i = 0; keys[i]; i++) cr_assert_eq(json_get(p, keys[i])->kind, JSON_NUMBER, "%s.%s", key, keys[i]);
  cr_assert(min > 0 && min <= p50 && p50 <= p90 && p90 <= p99, "%s: min %g p50 %g p90 %g p99 %g", key, min, p50, p90,
            p99);
}

/* Parses `bench --json` output, checking the schema 'crec bench --help' gives. */
static void parse_bench(const char *out, json *v) {
  cr_assert_eq(json_parse(out, v), 0, "not one JSON object: '%s'", out);
  static const char *const keys[] = {"nodes", "record_us", "eager_us", "replay_us", "replay_update_us", NULL};
  json_expect_keys(v, "the bench object", keys);
  cr_assert_eq(json_get(v, "nodes")->kind, JSON_NUMBER);
  cr_assert(json_get(v, "record_us")->kind == JSON_NUMBER && json_get(v, "record_us")->number > 0);
  expect_percentiles(v, "eager_us");
  expect_percentiles(v, "replay_us");
  expect_percentiles(v, "replay_update_us");
}

/* The numbers themselves are the benchmark's to report (tools/bench, crec bench):
 * a test asserts what the JSON holds, never which column is faster, which a busy
 * GPU (8 suites at once, a sanitizer beside them) can turn around. */
Test(gpu_tool, bench_json_of_a_1000_node_chain_reports_every_column) {
  REQUIRE_DEVICE_AND_TOOL();
  bool sanitized = under_sanitizer();
  size_t nodes = sanitized ? 100 : 1000;
  const char *chain = tool_long_chain(nodes);
  tool_result r = tool_exec("bench", chain, "--iters", sanitized ? "3" : "50", "--json", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  json v;
  parse_bench(r.out, &v);
  cr_assert_eq(json_get(&v, "nodes")->number, (double)nodes);
  double eager = json_get(json_get(&v, "eager_us"), "p50")->number;
  double replay = json_get(json_get(&v, "replay_us"), "p50")->number;
  double update = json_get(json_get(&v, "replay_update_us"), "p50")->number;
  double record = json_get(&v, "record_us")->number;
  cr_assert(eager > 0 && replay > 0 && update > 0 && record > 0, "eager %g, replay %g, update %g, record %g us", eager,
            replay, update, record);
  cr_log_info("%zu-node chain: eager p50 %.1f us, replay p50 %.1f us, replay (update) p50 %.1f us, record %.0f us%s",
              nodes, eager, replay, update, record, sanitized ? " (under compute-sanitizer)" : "");
  json_free(&v);
  tool_result_free(&r);
  if (sanitized)
    return;
  /* the table says the same */
  r = tool_exec("bench", chain, "--iters", "20", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  tool_expect_has(r.out, "graph: 1000 nodes, recorded in ");
  tool_expect_has(r.out, "20 timed executions of each kind after 10 warm-up");
  tool_expect_has(r.out, "  eager ");
  tool_expect_has(r.out, "  replay (update) ");
  tool_expect_has(r.out, "replay is ");
  cr_assert_str_eq(r.err, "", "stderr (a file) got: %s", r.err);
  tool_result_free(&r);
}

Test(gpu_tool, bench_json_of_every_example) {
  REQUIRE_DEVICE_AND_TOOL();
  struct {
    const char *name;
    const char *args[6];
  } benches[] = {
      {"chain", {"--input", "x=iota"}},
      {"jacobi", {"--input", "b=fill:1", "--scalar", "tol=1e-4"}},
      {"switch", {"--input", "x=random:1", "--input", "mode=fill:1"}},
      {"branches", {"--input", "x=iota"}},
      {"image", {"--input", "x=random:1", "--input", "w=fill:1"}},
      {"dynamic", {"--size", "x=100000", "--input", "x=iota"}},
  };
  for (size_t i = 0; i < sizeof benches / sizeof benches[0]; i++) {
    const char *args[16];
    size_t n = 0;
    args[n++] = "bench";
    args[n++] = example(benches[i].name);
    for (size_t k = 0; benches[i].args[k]; k++) args[n++] = benches[i].args[k];
    args[n++] = "--iters";
    args[n++] = under_sanitizer() ? "3" : "30";
    args[n++] = "--json";
    args[n] = NULL;
    tool_result r = tool_exec_argv(NULL, args);
    cr_assert_eq(r.status, 0, "%s: %s", benches[i].name, r.err);
    json v;
    parse_bench(r.out, &v);
    cr_assert_geq(json_get(&v, "nodes")->number, 1.0, "%s", benches[i].name);
    cr_log_info("%s: %s", benches[i].name, r.out);
    json_free(&v);
    tool_result_free(&r);
  }
}

/* ---- profile ---------------------------------------------------------------- */

/* A spread of docs/profile.schema.json: numbers with min <= p50 <= max, none negative. */
static void expect_spread(const json *object, const char *key, const char *what) {
  static const char *const keys[] = {"min", "p50", "max", NULL};
  const json *s = json_get(object, key);
  cr_assert_not_null(s, "%s has no %s", what, key);
  json_expect_keys(s, key, keys);
  double min = json_get(s, "min")->number, p50 = json_get(s, "p50")->number, max = json_get(s, "max")->number;
  cr_assert(min >= 0 && min <= p50 && p50 <= max, "%s.%s: min %g p50 %g max %g", what, key, min, p50, max);
}

/* jacobi profiled: the JSON that -o writes (and that standard output holds
 * alone without -o) has a row per command that ran, with device time; the
 * while loop's row has the sweeps that run takes (14 on the CPU); the text
 * says the same of the loop. */
Test(gpu_tool, profile_of_jacobi_times_each_command_and_counts_the_loops_sweeps) {
  REQUIRE_DEVICE_AND_TOOL();
  const char *file = tool_temp_path("jacobi-profile.json");
  tool_result r = tool_exec("profile", example("jacobi"), "--input", "b=fill:1", "--scalar", "tol=1e-4", "--iters",
                            "10", "--format", "json", "-o", file, NULL);
  cr_assert_eq(r.status, 0, "exit status %d\nstdout:\n%s\nstderr:\n%s", r.status, r.out, r.err);
  char want[800];
  snprintf(want, sizeof want, "wrote %s (json, ", file);
  cr_assert_eq(strncmp(r.out, want, strlen(want)), 0, "%s", r.out);
  tool_result_free(&r);
  char *text = tool_slurp(file, NULL);
  cr_assert_not_null(text, "%s was not written", file);
  json v;
  cr_assert_eq(json_parse(text, &v), 0, "%s is not JSON: %.300s", file, text);
  free(text);
  cr_assert_str_eq(json_get(&v, "format")->string, "crec-profile");
  cr_assert_str_eq(json_get(&v, "program")->string, example("jacobi"));
  cr_assert_str_eq(json_get(&v, "entry")->string, "main");
  cr_assert(json_get(&v, "device")->kind == JSON_STRING && json_get(&v, "device")->string[0], "no device name");
  cr_assert_eq(json_get(&v, "iters")->number, 10.0);
  const json *commands = json_get(&v, "commands");
  cr_assert(commands && commands->kind == JSON_ARRAY && commands->count > 0, "no command ran in the profile");
  const json *loop = NULL;
  for (size_t i = 0; i < commands->count; i++) {
    const json *c = &commands->items[i];
    static const char *const keys[] = {"id", "device_us", "start_us", "nodes", "concurrent", NULL};
    static const char *const loop_keys[] = {"iterations", "per_iteration_us", NULL};
    json_expect_schema_keys(c, "a profile's command", keys, loop_keys);
    expect_spread(c, "device_us", "a command");
    cr_assert_gt(json_get(c, "nodes")->number, 0.0, "command %g ran no node", json_get(c, "id")->number);
    if (json_get(c, "id")->number == 2.0) loop = c;
  }
  cr_assert_not_null(loop, "the while loop (#2) has no row");
  expect_spread(loop, "iterations", "the while loop");
  double sweeps = json_get(json_get(loop, "iterations"), "p50")->number;
  cr_assert(sweeps >= 10 && sweeps <= 30, "the loop took %g sweeps", sweeps);
  cr_assert_gt(json_get(json_get(loop, "device_us"), "p50")->number, 0.0);
  cr_assert_gt(json_get(&v, "timeline")->count, 0, "an empty timeline");
  json_free(&v);
  /* without -o, standard output is the JSON alone */
  r = tool_exec("profile", example("jacobi"), "--input", "b=fill:1", "--scalar", "tol=1e-4", "--iters", "3", "--format",
                "json", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_eq(json_parse(r.out, &v), 0, "stdout is not one JSON value: %.300s", r.out);
  json_free(&v);
  tool_result_free(&r);
  /* the text: the loop's row gives its sweeps */
  r = tool_exec("profile", example("jacobi"), "--input", "b=fill:1", "--scalar", "tol=1e-4", "--iters", "10", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  snprintf(want, sizeof want, "profile of %s (entry main): 10 replays\n", example("jacobi"));
  cr_assert_eq(strncmp(r.out, want, strlen(want)), 0, "%s", r.out);
  const char *row = strstr(r.out, "#2 while 'while more'");
  cr_assert_not_null(row, "no row for the loop:\n%s", r.out);
  const char *eol = strchr(row, '\n');
  snprintf(want, sizeof want, "  %.0f (min ", sweeps);
  const char *iterations = strstr(row, want);
  cr_assert(iterations && iterations < eol && strstr(row, " us each") < eol, "the loop's row lacks its %g sweeps:\n%s",
            sweeps, r.out);
  tool_result_free(&r);
}

/* ---- a mismatch exits 1 ----------------------------------------------------- */

/* A kernel that stores the GPU's global timer: no two executions agree. */
static const char stamp_mlir[] =
    "module attributes {gpu.container_module} {\n"
    "  gpu.binary @timer {crec.access = {stamp = [\"w\"]}} [\n"
    "    #gpu.object<#nvvm.target<chip = \"sm_70\">, assembly = \".version 7.0\\0A.target sm_70\\0A.address_size 64"
    "\\0A.visible .entry stamp(.param .u64 p)\\0A{\\0A.reg .b64 %rd<3>;\\0Ald.param.u64 %rd1, [p];\\0A"
    "cvta.to.global.u64 %rd1, %rd1;\\0Amov.u64 %rd2, %globaltimer;\\0Ast.global.u64 [%rd1], %rd2;\\0Aret;\\0A}\\0A\">\n"
    "  ]\n"
    "  func.func @main(%t: memref<i64> {crec.name = \"t\"}) {\n"
    "    %c1 = arith.constant 1 : index\n"
    "    gpu.launch_func @timer::@stamp blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%t : memref<i64>)\n"
    "    return\n"
    "  }\n"
    "}\n";

Test(gpu_tool, a_replay_that_differs_from_eager_exits_1_naming_the_buffer) {
  REQUIRE_DEVICE_AND_TOOL();
  const char *path = tool_temp_file("stamp.mlir", stamp_mlir, sizeof stamp_mlir - 1);
  tool_result r = tool_exec("run", path, "--check", NULL);
  cr_assert_eq(r.status, 1, "exit status %d\nstdout:\n%s\nstderr:\n%s", r.status, r.out, r.err);
  tool_expect_has(r.err, "crec: check failed: execution 1 of 1 (replay on buffer set 2 of 3): argument 't' first differs "
                    "from the eager executor at byte ");
  tool_expect_has(r.err, "(i64 element 0): replay 0x");
  cr_assert_eq(tool_count_lines(r.err), 1, "%s", r.err);
  cr_assert_null(strstr(r.out, "check passed"), "%s", r.out);
  tool_result_free(&r);
  /* without --check the same program runs fine */
  r = tool_exec("run", path, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  tool_expect_has(r.out, "t: i64[1] checksum ");
  tool_result_free(&r);
}

/* Device printf from four blocks (in no fixed order), and a kernel that prints
 * where its argument is: the eager run's buffer set is not the replay's. */
static const char printing_mlir[] =
    "module attributes {gpu.container_module} {\n"
    "  gpu.module @k {\n"
    "    gpu.func @say(%x: memref<4xi32>) kernel {\n"
    "      %b = gpu.block_id x\n"
    "      %v = memref.load %x[%b] : memref<4xi32>\n"
    "      gpu.printf \"block %lld reads %d\\n\" %b, %v : index, i32\n"
    "      gpu.return\n"
    "    }\n"
    "    gpu.func @where(%x: memref<4xi32>) kernel {\n"
    "      %p = memref.extract_aligned_pointer_as_index %x : memref<4xi32> -> index\n"
    "      gpu.printf \"x is at 0x%llx\\n\" %p : index\n"
    "      gpu.return\n"
    "    }\n"
    "  }\n"
    "  func.func @main(%x: memref<4xi32> {crec.name = \"x\"}) {\n"
    "    %c1 = arith.constant 1 : index\n"
    "    %c4 = arith.constant 4 : index\n"
    "    gpu.launch_func @k::@say blocks in (%c4, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xi32>)\n"
    "    return\n"
    "  }\n"
    "  func.func @where(%x: memref<4xi32> {crec.name = \"x\"}) {\n"
    "    %c1 = arith.constant 1 : index\n"
    "    gpu.launch_func @k::@where blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xi32>)\n"
    "    return\n"
    "  }\n"
    "}\n";

static size_t count_of(const char *text, const char *what) {
  size_t n = 0;
  for (const char *c = strstr(text, what); c; c = strstr(c + 1, what)) n++;
  return n;
}

Test(gpu_tool, check_compares_what_each_replay_prints_with_the_eager_run) {
  REQUIRE_DEVICE_AND_TOOL();
  const char *path = tool_temp_file("printing.mlir", printing_mlir, sizeof printing_mlir - 1);
  tool_result r = tool_exec("run", path, "--input", "x=iota", "--check", "--iters", "3", NULL);
  expect_check_passed(&r, "four blocks printing");
  tool_expect_has(r.out, ", and printed what the eager run printed (");
  /* each replay's lines once; the eager runs' output is compared, not shown */
  for (int b = 0; b < 4; b++) {
    char line[64];
    snprintf(line, sizeof line, "block %d reads %d\n", b, b);
    cr_assert_eq(count_of(r.out, line), 3, "'%s' is not there 3 times:\n%s", line, r.out);
  }
  tool_result_free(&r);
  /* what a replay prints depends on its buffers' addresses: the check says which line differs */
  r = tool_exec("run", path, "--entry", "where", "--check", NULL);
  cr_assert_eq(r.status, 1, "exit status %d\nstdout:\n%s\nstderr:\n%s", r.status, r.out, r.err);
  tool_expect_has(r.err, "crec: check failed: execution 1 of 1 (replay on buffer set 2 of 3): what the replay printed "
                         "differs from what the eager executor printed: line 1: 'x is at 0x");
  cr_assert_eq(tool_count_lines(r.err), 1, "%s", r.err);
  cr_assert_eq(count_of(r.out, "x is at 0x"), 1, "the replay's line is shown, the eager run's is not:\n%s", r.out);
  cr_assert_null(strstr(r.out, "check passed"), "%s", r.out);
  tool_result_free(&r);
}

/* A kernel that never ends (one thread branching to itself). */
static const char spin_mlir[] =
    "module attributes {gpu.container_module} {\n"
    "  gpu.binary @forever [\n"
    "    #gpu.object<#nvvm.target<chip = \"sm_70\">, assembly = \".version 7.0\\0A.target sm_70\\0A.address_size 64"
    "\\0A.visible .entry spin()\\0A{\\0A$L: bra.uni $L;\\0A}\\0A\">\n"
    "  ]\n"
    "  func.func @main() {\n"
    "    %c1 = arith.constant 1 : index\n"
    "    gpu.launch_func @forever::@spin blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)\n"
    "    return\n"
    "  }\n"
    "}\n";

Test(gpu_tool, timeout_ends_a_run_whose_kernel_never_finishes_with_exit_4) {
  REQUIRE_DEVICE_AND_TOOL();
  if (under_sanitizer()) cr_skip_test("a kernel left running at exit on purpose, which the sanitizer would wait for");
  const char *path = tool_temp_file("spin.mlir", spin_mlir, sizeof spin_mlir - 1);
  tool_result r = tool_exec("run", path, "--timeout", "1", NULL);
  cr_assert_eq(r.status, 4, "exit status %d\nstdout:\n%s\nstderr:\n%s", r.status, r.out, r.err);
  tool_expect_has(r.err, ": replaying (execution 1 of 1): the stream's work did not finish within 1000 ms and is "
                         "still running");
  cr_assert_eq(tool_count_lines(r.err), 1, "%s", r.err);
  tool_result_free(&r);
  /* --check's eager run is timed too: it comes first */
  r = tool_exec("run", path, "--check", "--timeout", "1", NULL);
  cr_assert_eq(r.status, 4, "exit status %d\nstdout:\n%s\nstderr:\n%s", r.status, r.out, r.err);
  tool_expect_has(r.err, ": running eagerly (execution 1 of 1): the stream's work did not finish within 1000 ms");
  tool_result_free(&r);
}

/* A kernel's failing cf.assert: each failing thread's message on standard error,
 * where the driver writes it as CUDA's assert() prints it, the kernel's prints
 * before it on standard output, nothing the kernel does after it, exit status 3
 * and one error line naming the driver's CUDA_ERROR_ASSERT. */
Test(gpu_tool, a_failing_device_assertion_prints_its_message_and_exits_3) {
  REQUIRE_DEVICE_AND_TOOL();
  /* the sanitizer reports the failed assertion, rightly: it is an error on purpose */
  if (under_sanitizer()) cr_skip_test("a deliberate device assertion, which compute-sanitizer reports as the error it is");
  char path[1200];
  snprintf(path, sizeof path, "%sassert.mlir", crec_test_mlir_dir());
  tool_result r = tool_exec("run", "--quiet", path, NULL);
  cr_assert_eq(r.status, 3, "exit status %d\nstdout:\n%s\nstderr:\n%s", r.status, r.out, r.err);
  tool_expect_has(r.out, "thread 0: v = 5\n");
  tool_expect_has(r.out, "thread 1: v = 6\n");
  for (int t = 0; t < 2; t++) {
    char line[160];
    snprintf(line, sizeof line,
             "bounds.cu:42: check_bounds: block: [0,0,0], thread: [%d,0,0] Assertion `v is over the limit` failed.", t);
    cr_assert_not_null(strstr(r.err, line), "no '%s' on standard error\nstdout:\n%s\nstderr:\n%s", line, r.out, r.err);
  }
  cr_assert_null(strstr(r.out, "after the failed assertion"), "%s", r.out);
  cr_assert_null(strstr(r.err, "v is below the limit"), "the passing assert failed:\n%s", r.err);
  tool_expect_has(r.err, "CUDA_ERROR_ASSERT");
  tool_expect_has(r.err, "a kernel's assertion failed");
  cr_assert_eq(count_of(r.err, "crec: error: "), 1, "not one error line:\n%s", r.err);
  tool_result_free(&r);
}

/* ---- the rest of run and dump on a device ------------------------------------ */

Test(gpu_tool, cuda_dot_writes_the_drivers_graph) {
  REQUIRE_DEVICE_AND_TOOL();
  const char *dot = tool_temp_path("run.dot");
  tool_result r = tool_exec("run", example("jacobi"), "--input", "b=fill:1", "--scalar", "tol=1e-4", "--cuda-dot", dot,
                            NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  char want[800];
  snprintf(want, sizeof want, "wrote %s (the CUDA driver's DOT of the instantiated graph)\n", dot);
  tool_expect_has(r.out, want);
  char *text = tool_slurp(dot, NULL);
  cr_assert_not_null(text);
  tool_expect_has(text, "digraph");
  free(text);
  tool_result_free(&r);
  dot = tool_temp_path("dump.dot");
  r = tool_exec("dump", example("chain"), "--cuda-dot", dot, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  snprintf(want, sizeof want, "wrote %s (the CUDA driver's DOT of the instantiated graph)\n", dot);
  tool_expect_has(r.out, "program: 3 commands");
  tool_expect_has(r.out, want);
  text = tool_slurp(dot, NULL);
  cr_assert_not_null(text);
  tool_expect_has(text, "digraph");
  free(text);
  tool_result_free(&r);
}

Test(gpu_tool, run_without_check_prints_the_outputs_after_the_last_replay) {
  REQUIRE_DEVICE_AND_TOOL();
  /* dynamic works in place: 3 replays give x = 2(2(2x + 1) + 1) + 1 = 8x + 7 */
  tool_result r = tool_exec("run", example("dynamic"), "--size", "x=10", "--input", "x=iota", "--iters", "3", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  tool_expect_has(r.out, "replayed 3 times");
  tool_expect_has(r.out, "x: f32[10] checksum ");
  tool_expect_has(r.out, ": 7 15 23 31 39 47 55 63 ...\n");
  cr_assert_null(strstr(r.out, "check passed"));
  tool_result_free(&r);
}

/* Runs crec with stderr on a pseudo-terminal; returns what the terminal got. */
static char *run_on_a_terminal(const char *const *args, int *status) {
  int master, slave;
  cr_assert_eq(openpty(&master, &slave, NULL, NULL, NULL), 0);
  char *argv[32];
  size_t n = 0;
  argv[n++] = (char *)tool_exe();
  for (; *args; args++) argv[n++] = (char *)*args;
  argv[n] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, slave, 2);
  posix_spawn_file_actions_addclose(&fa, master);
  pid_t pid;
  cr_assert_eq(posix_spawn(&pid, argv[0], &fa, NULL, argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  close(slave);
  size_t cap = 1 << 16, len = 0;
  char *text = malloc(cap);
  for (;;) {
    ssize_t got = read(master, text + len, cap - 1 - len);
    if (got <= 0) break; /* EIO once the child has closed the terminal */
    len += (size_t)got;
    if (len + 1 >= cap) text = realloc(text, cap *= 2);
  }
  text[len] = '\0';
  close(master);
  waitpid(pid, status, 0);
  return text;
}

Test(gpu_tool, the_progress_bar_only_goes_to_a_terminal) {
  REQUIRE_DEVICE_AND_TOOL();
  const char *const args[] = {"bench", example("chain"), "--input", "x=iota", "--iters", "300", NULL};
  int status = 0;
  char *tty = run_on_a_terminal(args, &status);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s", status, tty);
  tool_expect_has(tty, "\rbench: eager");
  tool_expect_has(tty, "bench: replay");
  tool_expect_has(tty, "bench: update");
  tool_expect_has(tty, "100%");
  free(tty);
  /* to a file: nothing */
  tool_result r = tool_exec_argv(NULL, args);
  cr_assert_eq(r.status, 0);
  cr_assert_str_eq(r.err, "");
  tool_result_free(&r);
}

/* ---- library calls from MLIR -------------------------------------------------- */

/* y = x·w through linalg.matmul (cuBLASLt), after zeroing y (linalg accumulates). */
static const char gemm_mlir[] =
    "module {\n"
    "  func.func @main(%x: memref<20x37xf32> {crec.name = \"x\"}, %w: memref<37x45xf32> {crec.name = \"w\"},\n"
    "                  %y: memref<20x45xf32> {crec.name = \"y\"}) {\n"
    "    %zero = arith.constant 0.0 : f32\n"
    "    gpu.memset %y, %zero : memref<20x45xf32>, f32\n"
    "    linalg.matmul ins(%x, %w : memref<20x37xf32>, memref<37x45xf32>) outs(%y : memref<20x45xf32>)\n"
    "    return\n"
    "  }\n"
    "}\n";

Test(gpu_tool, a_gemm_runs_and_checks) {
  REQUIRE_DEVICE_AND_TOOL();
  const char *path = tool_temp_file("gemm.mlir", gemm_mlir, sizeof gemm_mlir - 1);
  tool_result r = tool_exec("run", path, "--input", "x=random:1", "--input", "w=random:2", "--check", "--iters", "4",
                            "--output", output_arg("x", "x.bin"), "--output", output_arg("w", "w.bin"), "--output",
                            output_arg("y", "y.bin"), NULL);
  expect_check_passed(&r, "gemm");
  tool_result_free(&r);
  float *x = read_floats(tool_temp_path("x.bin"), 20 * 37), *w = read_floats(tool_temp_path("w.bin"), 37 * 45);
  float *y = read_floats(tool_temp_path("y.bin"), 20 * 45);
  for (int i = 0; i < 20; i++)
    for (int j = 0; j < 45; j++) {
      double want = 0;
      for (int k = 0; k < 37; k++) want += (double)x[i * 37 + k] * w[k * 45 + j];
      cr_assert(fabs(y[i * 45 + j] - want) < 1e-3, "y[%d][%d] = %g, expected %g", i, j, (double)y[i * 45 + j], want);
    }
  free(x);
  free(w);
  free(y);
}

/* The project's programs of XLA's library calls (tests/mlir): each replay equals
 * the eager executor's run over rotated buffers; the FFT program's inverse
 * gives its real signal back (RFFT, then IRFFT scaled by 1/64). */
Test(gpu_tool, fft_cholesky_and_conv_programs_replay_as_eager_runs_them) {
  REQUIRE_DEVICE_AND_TOOL();
  static const char *const programs[] = {"fft.mlir", "cholesky.mlir", "conv.mlir"};
  for (size_t i = 0; i < sizeof programs / sizeof *programs; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s%s", crec_test_mlir_dir(), programs[i]);
    tool_result r = i == 0 ? tool_exec("run", path, "--check", "--iters", "3", "--input", "signal=random:7", "--output",
                                       output_arg("signal", "signal.bin"), "--output", output_arg("back", "back.bin"),
                                       NULL)
                           : tool_exec("run", path, "--check", "--iters", "3", NULL);
    if (r.status != 0 && strstr(r.err, "is not available")) {
      /* its library is missing here (the programs before it ran): skipped, saying which */
      char why[600];
      snprintf(why, sizeof why, "%s: %.500s", programs[i], r.err);
      tool_result_free(&r);
      cr_skip_test("%s", why);
    }
    expect_check_passed(&r, programs[i]);
    tool_result_free(&r);
    if (i == 0) {
      float *sig = read_floats(tool_temp_path("signal.bin"), 4 * 64), *back = read_floats(tool_temp_path("back.bin"), 4 * 64);
      for (int k = 0; k < 4 * 64; k++)
        cr_assert(fabsf(back[k] - sig[k]) <= 1e-4f * (1 + fabsf(sig[k])), "back[%d] = %g, the signal %g", k,
                  (double)back[k], (double)sig[k]);
      free(sig);
      free(back);
    }
  }
}

/* Collectives over a communicator of one rank: the tool binds one it makes. */
static const char collectives_mlir[] =
    "module {\n"
    "  func.func @main(%x: memref<256xf32> {crec.name = \"x\"}, %sum: memref<256xf32> {crec.name = \"sum\"},\n"
    "                  %gathered: memref<256xf32> {crec.name = \"gathered\"}) {\n"
    "    \"crec.all_reduce\"(%x, %sum) {reduction = \"sum\", num_ranks = 1 : i64}\n"
    "        : (memref<256xf32>, memref<256xf32>) -> ()\n"
    "    \"crec.all_gather\"(%x, %gathered) {replica_groups = dense<[[0]]> : tensor<1x1xi64>}\n"
    "        : (memref<256xf32>, memref<256xf32>) -> ()\n"
    "    return\n"
    "  }\n"
    "}\n";

/* The same all_reduce, written for two ranks. */
static const char two_ranks_mlir[] =
    "module {\n"
    "  func.func @main(%x: memref<256xf32> {crec.name = \"x\"}, %sum: memref<256xf32> {crec.name = \"sum\"}) {\n"
    "    \"crec.all_reduce\"(%x, %sum) {reduction = \"sum\", num_ranks = 2 : i64}\n"
    "        : (memref<256xf32>, memref<256xf32>) -> ()\n"
    "    return\n"
    "  }\n"
    "}\n";

Test(gpu_tool, collectives_on_one_rank_run_and_more_ranks_are_refused) {
  REQUIRE_DEVICE_AND_TOOL();
  /* On the H200 (NCCL 2.x, driver 580) a `crec run` of this program under
   * memcheck finishes in 17 s when started alone, but as a child of this
   * sanitized runner it printed nothing in 400 s. gpu_lower_library's
   * collectives tests run NCCL in this process under memcheck instead. */
  if (under_sanitizer())
    cr_skip_test("NCCL in a crec process started by a runner under compute-sanitizer does not finish; "
                 "gpu_lower_library covers collectives under the sanitizer");
  const char *path = tool_temp_file("collectives.mlir", collectives_mlir, sizeof collectives_mlir - 1);
  tool_result r = tool_exec("run", path, "--input", "x=iota", "--check", "--iters", "3", NULL);
  expect_check_passed(&r, "collectives");
  tool_expect_has(r.out, "sum: f32[256] checksum ");
  tool_expect_has(r.out, ": 0 1 2 3 4 5 6 7 ...\n");
  tool_expect_has(r.out, "gathered: f32[256] checksum ");
  tool_result_free(&r);
  path = tool_temp_file("two_ranks.mlir", two_ranks_mlir, sizeof two_ranks_mlir - 1);
  r = tool_exec("run", path, "--input", "x=iota", NULL);
  cr_assert_eq(r.status, 2, "%s", r.err);
  tool_expect_has(r.err, "communicator 'world' has 2 ranks, but crec runs one process on one GPU: it can bind only "
                    "communicators of 1 rank\n");
  cr_assert_eq(tool_count_lines(r.err), 1, "%s", r.err);
  tool_result_free(&r);
}
