/* `crec run`, `crec bench` and `crec profile` up to the device: input and
 * scalar resolution, each error path with its one-line message and exit status
 * 2, the no-device behaviour (summary, a notice, exit status 0), and how
 * profile writes what a stand-in device measured. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_tool.h"

static const char *program_path(const char *name) {
  char file[64];
  snprintf(file, sizeof file, "%s.mlir", name);
  return tool_temp_file(file, "// built by the test front end\n", 31);
}

Test(tool_run, missing_program_file) {
  tool_result r = tool_run("run", "/nonexistent/prog.mlir", NULL);
  tool_expect_error(&r, "crec: error: /nonexistent/prog.mlir: cannot open the program: No such file or directory");
  r = tool_run("bench", "/nonexistent/prog.mlir", "--json", NULL);
  tool_expect_error(&r, "crec: error: /nonexistent/prog.mlir: cannot open the program");
  r = tool_run("dump", "/nonexistent/prog.mlir", NULL);
  tool_expect_error(&r, "crec: error: /nonexistent/prog.mlir: cannot open the program");
  r = tool_run("dump", tool_temp_dir(), NULL);
  tool_expect_errorf(&r, "crec: error: %s: not a regular file", tool_temp_dir());
}

Test(tool_run, front_end_errors_carry_the_mlir_location) {
  const char *path = program_path("bad");
  tool_result r = tool_run("run", path, NULL);
  char want[700];
  snprintf(want, sizeof want, "crec: error: %s:3:7: custom op 'foo.bar' is unknown\n", path);
  cr_assert_str_eq(r.err, want);
  tool_expect_error(&r, want);
  r = tool_run("dump", program_path("chain"), "--entry", "nope", NULL);
  tool_expect_error(&r, "crec: error: ");
}

Test(tool_run, library_messages_become_one_located_line) {
  crec_tool_diag d;
  crec_tool_fail_message(&d, "p.mlir", NULL,
                         "crec_lower_mlir_file: crec__lower_op: p.mlir:12:5: 'linalg.foo' is not supported");
  cr_assert_str_eq(d.where, "p.mlir:12:5");
  cr_assert_str_eq(d.message, "'linalg.foo' is not supported");
  crec_tool_fail_message(&d, "p.mlir", "recording", "crec_record: command 3 ('y = g(t)'): cuLaunch failed:\nbad");
  cr_assert_str_eq(d.where, "p.mlir");
  cr_assert_str_eq(d.message, "recording: command 3 ('y = g(t)'): cuLaunch failed:\nbad");
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  crec_tool_diag_print(&d, f);
  fclose(f);
  cr_assert_str_eq(text, "crec: error: p.mlir: recording: command 3 ('y = g(t)'): cuLaunch failed: bad\n");
  free(text);
  /* a path with colons and no location */
  crec_tool_fail_message(&d, "x", NULL, "crec_lower_mlir_file: C:/dir/p.mlir: cannot read");
  cr_assert_str_eq(d.where, "x");
}

Test(tool_run, bad_spec) {
  tool_result r = tool_run("run", program_path("chain"), "--input", "x=fill:abc", "--scalar", "n=4", NULL);
  tool_expect_error(&r, "crec: error: --input x=fill:abc: fill value 'abc' is not a number");
  r = tool_run("run", program_path("chain"), "--input", "x=fill:1.5", "--input", "flag=fill:2.5", "--scalar", "n=4",
               NULL);
  tool_expect_error(&r, "crec: error: --input flag=fill:2.5: fill value 2.5 is not an integer, but the buffer holds i32 elements");
  r = tool_run("bench", program_path("elements"), "--input", "i8=fill:300", NULL);
  tool_expect_error(&r, "crec: error: --input i8=fill:300: fill value 300 does not fit in i8 elements");
  r = tool_run("run", program_path("chain"), "--input", "x=nosuchfile.bin", "--scalar", "n=4", NULL);
  tool_expect_error(&r, "crec: error: --input x=nosuchfile.bin: 'nosuchfile.bin' is neither fill:V, iota, random:SEED nor a readable file");
  float small[3] = {1, 2, 3};
  const char *file = tool_temp_file("small.bin", small, sizeof small);
  r = tool_run("run", program_path("chain"), "--input", "x=", NULL);
  tool_expect_error(&r, "crec: error: --input x=: nothing after '='");
  char arg[600];
  snprintf(arg, sizeof arg, "x=%s", file);
  r = tool_run("run", program_path("chain"), "--input", arg, "--scalar", "n=4", NULL);
  tool_expect_errorf(&r, "crec: error: --input %s: file '%s' has 12 bytes, but the buffer has 4096", arg, file);
}

Test(tool_run, unknown_buffer) {
  tool_result r = tool_run("run", program_path("chain"), "--input", "q=iota", "--scalar", "n=4", NULL);
  tool_expect_error(&r, "crec: error: --input q=iota: the program has no buffer 'q' (argument buffers: x, y, flag)");
  r = tool_run("run", program_path("chain"), "--input", "t=iota", "--scalar", "n=4", NULL);
  tool_expect_error(&r, "crec: error: --input t=iota: buffer 't' is a temporary, not an argument (argument buffers: x, y, flag)");
  r = tool_run("run", program_path("chain"), "--output", "z=z.bin", "--scalar", "n=4", NULL);
  tool_expect_error(&r, "crec: error: --output z=z.bin: the program has no buffer 'z'");
  r = tool_run("bench", program_path("chain"), "--size", "w=10", "--scalar", "n=4", NULL);
  tool_expect_error(&r, "crec: error: --size w=10: the program has no buffer 'w'");
}

Test(tool_run, bad_scalar) {
  tool_result r = tool_run("run", program_path("chain"), "--scalar", "n=1.5", NULL);
  tool_expect_error(&r, "crec: error: --scalar n=1.5: '1.5' is not an integer (the scalar is i32)\n");
  r = tool_run("run", program_path("chain"), "--scalar", "n=99999999999", NULL);
  tool_expect_error(&r, "crec: error: --scalar n=99999999999: 99999999999 is out of range for i32\n");
  r = tool_run("run", program_path("chain"), "--scalar", "m=3", NULL);
  tool_expect_error(&r, "crec: error: --scalar m=3: the program has no scalar 'm' (bound scalars: n)\n");
  r = tool_run("run", program_path("chain"), NULL);
  tool_expect_errorf(&r, "crec: error: %s: scalar 'n' (i32) needs a value: --scalar n=VALUE\n",
                     program_path("chain"));
  r = tool_run("bench", program_path("dynamic"), "--scalar", "count=3", "--scalar", "scale=x", NULL);
  tool_expect_error(&r, "crec: error: --scalar scale=x: 'x' is not a number (the scalar is f64)\n");
  r = tool_run("run", program_path("dynamic"), "--scalar", "v_bytes=64", NULL);
  tool_expect_error(&r, "crec: error: --scalar v_bytes=64: scalar 'v_bytes' is the size of argument 'v'; set it with --size v=ELEMENTS\n");
}

Test(tool_run, sizes_of_dynamic_arguments) {
  REQUIRE_NO_DEVICE();
  tool_result r = tool_run("run", program_path("dynamic"), "--size", "out=4", "--scalar", "count=1", "--scalar",
                           "scale=2", NULL);
  tool_expect_error(&r, "crec: error: --size out=4: argument 'out' has a static size (64 bytes); --size is for dynamic-size arguments");
  r = tool_run("run", program_path("dynamic"), "--size", "v=8", "--scalar", "count=1", "--scalar", "scale=2", NULL);
  tool_expect_error(&r, "crec: error: --size v=8: 32 bytes is less than the program's minimum of 64 bytes for 'v'");
  r = tool_run("run", program_path("dynamic"), "--size", "v=lots", "--scalar", "count=1", "--scalar", "scale=2", NULL);
  tool_expect_error(&r, "crec: error: --size v=lots: 'lots' is not an element count");
  /* --size, a file, or the program's minimum */
  r = tool_run("run", program_path("dynamic"), "--size", "v=1000", "--input", "v=iota", "--scalar", "count=1",
               "--scalar", "scale=2", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "  v                f32[1000] iota\n"), "%s", r.out);
  tool_result_free(&r);
  float data[40] = {0};
  char arg[600];
  snprintf(arg, sizeof arg, "v=%s", tool_temp_file("v.bin", data, sizeof data));
  r = tool_run("run", program_path("dynamic"), "--input", arg, "--scalar", "count=1", "--scalar", "scale=2", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "  v                f32[40] "), "%s", r.out);
  tool_result_free(&r);
  r = tool_run("run", program_path("dynamic"), "--scalar", "count=1", "--scalar", "scale=2", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "  v                f32[16] zeros\n"), "%s", r.out);
  tool_result_free(&r);
}

/* --quiet leaves standard output to the program; without a device its note
 * goes to standard error (where a checker like tools/mlir-check.sh finds it). */
Test(tool_run, quiet_leaves_standard_output_to_the_program) {
  REQUIRE_NO_DEVICE();
  tool_result r = tool_run("run", "--quiet", program_path("chain"), "--input", "x=iota", "--scalar", "n=1024", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_str_eq(r.out, "");
  cr_assert(strstr(r.err, "program: 4 commands in 1 region"), "%s", r.err);
  cr_assert(strstr(r.err, "\ncrec run: no CUDA device is available: "), "%s", r.err);
  tool_result_free(&r);
  r = tool_run("dump", "--quiet", program_path("chain"), NULL);
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "'--quiet' is not an option of 'crec dump'"), "%s", r.err);
  tool_result_free(&r);
}

Test(tool_run, without_a_device_run_prints_the_summary_and_exits_0) {
  REQUIRE_NO_DEVICE();
  char out_path[600];
  snprintf(out_path, sizeof out_path, "y=%s/y.bin", tool_temp_dir());
  tool_result r = tool_run("run", program_path("chain"), "--input", "x=iota", "--input", "flag=fill:-1", "--scalar",
                           "n=1024", "--iters", "10", "--check", "--output", out_path, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_str_eq(r.err, "");
  cr_assert(strstr(r.out, "program: 4 commands in 1 region"), "%s", r.out);
  cr_assert(strstr(r.out, "inputs:\n  x                f32[1024] iota, output\n"), "%s", r.out);
  cr_assert(strstr(r.out, "  y                f32[1024] zeros, output -> "), "%s", r.out);
  cr_assert(strstr(r.out, "  flag             i32[4] fill:-1, output\n"), "%s", r.out);
  cr_assert(strstr(r.out, "scalar values:\n  n = 1024\n"), "%s", r.out);
  cr_assert(strstr(r.out, "\ncrec run: no CUDA device is available: "), "%s", r.out);
  cr_assert(strstr(r.out, "\ncrec run: the program was lowered and its inputs prepared; nothing was run\n"), "%s",
            r.out);
  /* nothing ran, so nothing was written */
  cr_assert_null(tool_slurp(out_path + 2, NULL));
  tool_result_free(&r);
}

/* --timings without a device: the phases reached, main and the program, in
 * order, and none of the device's; only run takes it. */
Test(tool_run, timings_without_a_device_stop_at_the_program) {
  REQUIRE_NO_DEVICE();
  tool_result r = tool_run("run", program_path("chain"), "--scalar", "n=4", "--timings", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  const char *head = strstr(r.out, "timings, in ms since the process started (--timings):\n  main ");
  cr_assert(head, "%s", r.out);
  double main_ms = -1, program_ms = -1;
  const char *prog = strstr(head, "\n  program ");
  cr_assert(prog && sscanf(head + strlen("timings, in ms since the process started (--timings):\n  main "), "%lf",
                           &main_ms) == 1 && sscanf(prog + strlen("\n  program "), "%lf", &program_ms) == 1, "%s", r.out);
  cr_assert(main_ms > 0 && program_ms >= main_ms, "main %.1f ms, program %.1f ms", main_ms, program_ms);
  cr_assert(strstr(prog, "  lowered from MLIR\n"), "%s", r.out);
  cr_assert_null(strstr(r.out, "first replay"), "%s", r.out);
  tool_result_free(&r);
  r = tool_run("dump", program_path("chain"), "--timings", NULL);
  tool_expect_error(&r, "crec: error: ");
  r = tool_run("bench", program_path("chain"), "--timings", NULL);
  tool_expect_error(&r, "crec: error: ");
}

Test(tool_run, without_a_device_bench_json_prints_the_object_with_nulls) {
  REQUIRE_NO_DEVICE();
  tool_result r = tool_run("bench", program_path("chain"), "--scalar", "n=7", "--json", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  /* standard output stays one bench object a script can parse; the rest goes to stderr */
  json v;
  cr_assert_eq(json_parse(r.out, &v), 0, "not JSON: '%s'", r.out);
  static const char *const keys[] = {"nodes", "record_us", "eager_us", "replay_us", "replay_update_us", NULL};
  json_expect_keys(&v, "the bench object", keys);
  for (size_t i = 0; keys[i]; i++) cr_assert_eq(json_get(&v, keys[i])->kind, JSON_NULL, "%s is not null", keys[i]);
  json_free(&v);
  cr_assert(strstr(r.err, "program: 4 commands"), "%s", r.err);
  cr_assert(strstr(r.err, "crec bench: no CUDA device is available: "), "%s", r.err);
  tool_result_free(&r);
  r = tool_run("bench", program_path("chain"), "--scalar", "n=7", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "crec bench: no CUDA device is available: "), "%s", r.out);
  cr_assert_null(strstr(r.out, "{"), "the table form printed JSON: %s", r.out);
  tool_result_free(&r);
}

Test(tool_run, without_a_device_every_element_type_is_prepared) {
  REQUIRE_NO_DEVICE();
  tool_result r = tool_run("run", program_path("elements"), "--input", "bytes=random:1", "--input", "i8=fill:-3",
                           "--input", "i16=iota", "--input", "i32=fill:0x7fffffff", "--input", "i64=fill:-1",
                           "--input", "f16=fill:0.25", "--input", "bf16=random:2", "--input", "f32=iota", "--input",
                           "f64=fill:1e-300", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  static const char *const lines[] = {"  bytes            bytes[16] random:1\n", "  i8               i8[16] fill:-3\n",
                                      "  f16              f16[16] fill:0.25\n", "  f32              f32[16] iota, output\n",
                                      "  f64              f64[16] fill:1e-300\n"};
  for (size_t i = 0; i < 5; i++) cr_assert(strstr(r.out, lines[i]), "no '%s' in %s", lines[i], r.out);
  tool_result_free(&r);
}

Test(tool_run, dump_cuda_dot_without_a_device_warns) {
  REQUIRE_NO_DEVICE();
  char dot[600];
  snprintf(dot, sizeof dot, "%s/graph.dot", tool_temp_dir());
  tool_result r = tool_run("dump", program_path("chain"), "--cuda-dot", dot, "--scalar", "n=3", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "program: 4 commands"), "the dump itself is missing");
  cr_assert(strstr(r.err, "crec: warning: --cuda-dot "), "%s", r.err);
  cr_assert(strstr(r.err, "not written: no CUDA device is available"), "%s", r.err);
  cr_assert_null(tool_slurp(dot, NULL));
  tool_result_free(&r);
  /* the inputs are still checked */
  r = tool_run("dump", program_path("chain"), "--cuda-dot", dot, "--scalar", "n=x", NULL);
  tool_expect_error(&r, "crec: error: --scalar n=x: 'x' is not an integer");
}

Test(tool_run, no_leaks_and_balanced_objects_on_every_path) {
  int64_t live = crec_debug_live_objects();
  const char *chain = program_path("chain");
  tool_result r = tool_run("run", chain, "--input", "x=iota", "--scalar", "n=1", NULL);
  tool_result_free(&r);
  r = tool_run("run", chain, "--input", "x=fill:z", "--scalar", "n=1", NULL);
  tool_result_free(&r);
  r = tool_run("dump", program_path("control"), "--format", "html", NULL);
  tool_result_free(&r);
  r = tool_run("dump", program_path("bad"), NULL);
  tool_result_free(&r);
  cr_assert_eq(crec_debug_live_objects(), live, "crec objects leaked");
}

/* ---- the device half, through a stand-in backend ------------------------------ */

/* What the stand-in saw, and what it answers. */
static struct {
  size_t jobs;
  uint64_t sizes[8];
  uint64_t iters;
  int bench_calls;
  int profile_calls;
  int answer; /* exit status the stand-in returns */
} seen;

static int fake_available(void) { return 1; }

static int fake_run(const crec_tool_job *jobs, size_t count, FILE *out, FILE *err, crec_tool_diag *d) {
  seen.jobs = count;
  seen.iters = jobs[0].args->iters;
  for (size_t v = 0; v < count && v < 8; v++) seen.sizes[v] = jobs[v].buffers[0].size;
  if (seen.answer == CREC_TOOL_EXIT_MISMATCH) fputs("crec: check failed: (stand-in)\n", err);
  if (seen.answer == CREC_TOOL_EXIT_ERROR) crec_tool_fail(d, jobs[0].args->program, "recording: (stand-in)");
  if (!seen.answer) fputs("ran\n", out);
  return seen.answer;
}

static int fake_bench(const crec_tool_job *job, FILE *out, FILE *err, crec_tool_diag *d) {
  seen.bench_calls++;
  seen.sizes[0] = job->buffers[0].size;
  fputs("benched\n", out);
  return 0;
}

/* The command of `p` called `name`. */
static crec_command command_named(const crec_program *p, const char *name) {
  for (size_t i = 0; i < crec_program_command_count(p); i++) {
    crec_command c = crec_program_command(p, i);
    crec_command_info ci = CREC_COMMAND_INFO_INIT;
    if (crec_command_get_info(p, c, &ci) == CREC_OK && ci.name && !strcmp(ci.name, name)) return c;
  }
  cr_assert_fail("the program has no command '%s'", name);
  return crec_program_command(p, 0);
}

/* Stands in for crec_exec_profile on the test program "control": in each of
 * --iters replays the while loop 'loop' runs its body 'step' 3 times (4 us
 * each) and its cond 'check' 4 times (1 us each), then the if's 'zero data'
 * runs (0.5 us). */
static int fake_profile(const crec_tool_job *job, crec_profile **out, crec_tool_diag *d) {
  seen.profile_calls++;
  seen.iters = job->args->iters;
  if (seen.answer == CREC_TOOL_EXIT_ERROR) {
    crec_tool_fail(d, job->args->program, "crec profile: crec_exec_profile: (stand-in)");
    return CREC_TOOL_EXIT_ERROR;
  }
  const crec_program *p = job->program;
  crec_command check = command_named(p, "check"), step = command_named(p, "step"), zero = command_named(p, "zero data");
  uint32_t replays = (uint32_t)job->args->iters;
  crec_profile_span *spans = malloc(replays * 8 * sizeof *spans);
  cr_assert_not_null(spans);
  size_t n = 0;
  for (uint32_t r = 0; r < replays; r++) {
    uint64_t t = 1000000000ull * (r + 1);
    for (int i = 0; i < 4; i++) {
      spans[n++] = (crec_profile_span){check, r, i, t, t + 1000};
      t += 1000;
      if (i == 3) break; /* the cond's last run ends the loop */
      spans[n++] = (crec_profile_span){step, r, i, t, t + 4000};
      t += 4000;
    }
    spans[n++] = (crec_profile_span){zero, r, -1, t, t + 500};
  }
  crec_profile_options po = CREC_PROFILE_OPTIONS_INIT;
  po.program = job->args->program;
  po.entry = "main";
  po.device = "Stand-in GPU";
  crec_status st = crec_profile_create(p, spans, n, replays, &po, out);
  free(spans);
  if (st != CREC_OK) {
    crec_tool_fail_library(d, job->args->program, "crec_profile_create");
    return CREC_TOOL_EXIT_ERROR;
  }
  return CREC_TOOL_EXIT_OK;
}

/* Runs the tool with the test front end and the stand-in device backend, and
 * asserts that it exits with `status`. */
static tool_result run_on_fake_device(int status, const char *arg, ...) __attribute__((sentinel));
static tool_result run_on_fake_device(int status, const char *arg, ...) {
  char *argv[32];
  int argc = 0;
  argv[argc++] = "crec";
  va_list ap;
  va_start(ap, arg);
  for (const char *a = arg; a; a = va_arg(ap, const char *)) argv[argc++] = (char *)a;
  va_end(ap);
  argv[argc] = NULL;
  tool_result r = {0, NULL, NULL};
  size_t olen = 0, elen = 0;
  FILE *out = open_memstream(&r.out, &olen), *err = open_memstream(&r.err, &elen);
  const crec_tool_backend backend = {tool_test_lower, fake_available, fake_run, fake_bench, NULL, fake_profile};
  r.status = crec_tool_main(argc, argv, out, err, &backend);
  fclose(out);
  fclose(err);
  cr_assert_eq(r.status, status, "exit status %d, not %d: %s", r.status, status, r.err);
  return r;
}

Test(tool_run, a_size_list_gives_the_device_one_job_per_size) {
  memset(&seen, 0, sizeof seen);
  tool_result r = run_on_fake_device(0, "run", program_path("dynamic"), "--size", "v=16,1000,32", "--scalar",
                                     "count=1", "--scalar", "scale=2", "--check", NULL);
  cr_assert_str_eq(r.out, "ran\n");
  cr_assert_eq(seen.jobs, 3);
  cr_assert_eq(seen.sizes[0], 64);
  cr_assert_eq(seen.sizes[1], 4000);
  cr_assert_eq(seen.sizes[2], 128);
  cr_assert_eq(seen.iters, 3, "one replay per size by default, not %llu", (unsigned long long)seen.iters);
  tool_result_free(&r);
  r = run_on_fake_device(0, "run", program_path("dynamic"), "--size", "v=16,1000", "--scalar", "count=1", "--scalar",
                         "scale=2", "--iters", "7", NULL);
  cr_assert_eq(seen.jobs, 2);
  cr_assert_eq(seen.iters, 7);
  tool_result_free(&r);
  /* one size: one job, --iters as given */
  r = run_on_fake_device(0, "run", program_path("dynamic"), "--size", "v=100", "--scalar", "count=1", "--scalar",
                         "scale=2", NULL);
  cr_assert_eq(seen.jobs, 1);
  cr_assert_eq(seen.sizes[0], 400);
  cr_assert_eq(seen.iters, 1);
  tool_result_free(&r);
}

Test(tool_run, bench_reaches_the_device_with_one_job) {
  memset(&seen, 0, sizeof seen);
  tool_result r = run_on_fake_device(0, "bench", program_path("dynamic"), "--size", "v=50", "--scalar", "count=1",
                                     "--scalar", "scale=2", "--json", NULL);
  cr_assert_str_eq(r.out, "benched\n");
  cr_assert_eq(seen.bench_calls, 1);
  cr_assert_eq(seen.sizes[0], 200);
  tool_result_free(&r);
}

/* The device half's exit statuses reach the user unchanged: 0, 1 for a
 * mismatch (which prints its own report), 2 with one error line. */
Test(tool_run, exit_statuses_of_the_device_half) {
  memset(&seen, 0, sizeof seen);
  seen.answer = CREC_TOOL_EXIT_MISMATCH;
  tool_result r = run_on_fake_device(1, "run", program_path("chain"), "--scalar", "n=1", "--check", NULL);
  cr_assert_str_eq(r.err, "crec: check failed: (stand-in)\n");
  tool_result_free(&r);
  seen.answer = CREC_TOOL_EXIT_ERROR;
  r = run_on_fake_device(2, "run", program_path("chain"), "--scalar", "n=1", NULL);
  tool_expect_errorf(&r, "crec: error: %s: recording: (stand-in)\n", program_path("chain"));
}

/* ---- crec profile, with a stand-in device ------------------------------------- */

/* The text profile is all of standard output: the header, and the loop's row
 * with its iterations. */
Test(tool_run, profile_prints_the_text_profile_alone) {
  memset(&seen, 0, sizeof seen);
  const char *path = program_path("control");
  tool_result r = run_on_fake_device(0, "profile", path, NULL);
  cr_assert_eq(seen.profile_calls, 1);
  cr_assert_eq(seen.iters, 20, "profiled %llu replays, not the default 20", (unsigned long long)seen.iters);
  char head[700];
  snprintf(head, sizeof head, "profile of %s (entry main): 20 replays\ndevice: Stand-in GPU\n", path);
  cr_assert_eq(strncmp(r.out, head, strlen(head)), 0, "%s", r.out);
  /* the loop: 4 us of cond and 12 us of body over 3 iterations */
  const char *loop = strstr(r.out, "#0 while 'loop'");
  cr_assert_not_null(loop, "%s", r.out);
  const char *eol = strchr(loop, '\n');
  cr_assert(strstr(loop, "  3 (min 3, max 3), 5.33 us each") < eol && strstr(loop, "16.00"), "%s", r.out);
  cr_assert_null(strstr(r.out, "program: "), "the summary is on stdout too:\n%s", r.out);
  cr_assert_str_eq(r.err, "");
  tool_result_free(&r);
  r = run_on_fake_device(0, "profile", path, "--iters", "3", "--format", "text", NULL);
  cr_assert_eq(seen.iters, 3);
  snprintf(head, sizeof head, "profile of %s (entry main): 3 replays\n", path);
  cr_assert_eq(strncmp(r.out, head, strlen(head)), 0, "%s", r.out);
  tool_result_free(&r);
}

/* --format json: standard output is one profile object, and nothing else. */
Test(tool_run, profile_json_is_the_only_thing_on_stdout) {
  memset(&seen, 0, sizeof seen);
  const char *path = program_path("control");
  tool_result r = run_on_fake_device(0, "profile", path, "--format", "json", "--iters", "5", NULL);
  json v;
  cr_assert_eq(json_parse(r.out, &v), 0, "stdout is not one JSON value: '%s'", r.out);
  cr_assert_eq(v.kind, JSON_OBJECT);
  cr_assert_str_eq(json_get(&v, "format")->string, "crec-profile");
  cr_assert_str_eq(json_get(&v, "program")->string, path);
  cr_assert_str_eq(json_get(&v, "device")->string, "Stand-in GPU");
  cr_assert_eq(json_get(&v, "iters")->number, 5.0);
  const json *commands = json_get(&v, "commands");
  cr_assert(commands && commands->kind == JSON_ARRAY && commands->count > 0, "no commands in the profile");
  const json *loop = &commands->items[0];
  cr_assert_eq(json_get(loop, "id")->number, 0.0);
  cr_assert_eq(json_get(json_get(loop, "iterations"), "p50")->number, 3.0);
  json_free(&v);
  cr_assert_str_eq(r.err, "");
  tool_result_free(&r);
}

/* --format html: dump's page of the program, with the profile on it. */
Test(tool_run, profile_html_is_the_graph_page_with_the_profile) {
  if (access("/usr/bin/dot", X_OK) != 0) cr_skip_test("Graphviz is not installed: the page needs it");
  memset(&seen, 0, sizeof seen);
  const char *path = program_path("control");
  tool_result r = run_on_fake_device(0, "profile", path, "--format", "html", NULL);
  cr_assert_eq(strncmp(r.out, "<!DOCTYPE html>\n", 16), 0, "%.200s", r.out);
  size_t len = strlen(r.out);
  cr_assert(len > 8 && !strcmp(r.out + len - 8, "</html>\n"), "stdout holds more than the page");
  tool_expect_has(r.out, "<svg");
  tool_expect_has(r.out, "<div id=\"profile\"></div>");
  const char *data = strstr(r.out, "<script type=\"application/json\" id=\"crec-profile\">");
  cr_assert_not_null(data, "the page has no profile");
  cr_assert(strstr(data, "\"format\": \"crec-profile\"") || strstr(data, "\"format\":\"crec-profile\""),
            "the page's profile is not the JSON profile: %.300s", data);
  char title[700];
  snprintf(title, sizeof title, "<title>crec: %s</title>", path);
  tool_expect_has(r.out, title);
  cr_assert_str_eq(r.err, "");
  tool_result_free(&r);
}

/* -o FILE: the profile goes to the file, and one line says so. */
Test(tool_run, profile_writes_the_file_that_o_names) {
  memset(&seen, 0, sizeof seen);
  const char *file = tool_temp_path("p.json");
  tool_result r = run_on_fake_device(0, "profile", program_path("control"), "--format", "json", "-o", file, NULL);
  size_t size = 0;
  char *text = tool_slurp(file, &size);
  cr_assert_not_null(text, "%s was not written", file);
  char want[800];
  snprintf(want, sizeof want, "wrote %s (json, %zu bytes)\n", file, size);
  cr_assert_str_eq(r.out, want);
  cr_assert_str_eq(r.err, "");
  json v;
  cr_assert_eq(json_parse(text, &v), 0, "%s is not JSON", file);
  cr_assert_gt(json_get(&v, "commands")->count, 0);
  json_free(&v);
  free(text);
  tool_result_free(&r);
  /* text into a file that exists: replaced */
  r = run_on_fake_device(0, "profile", program_path("control"), "-o", file, NULL);
  text = tool_slurp(file, NULL);
  cr_assert_eq(strncmp(text, "profile of ", 11), 0, "%s", text);
  free(text);
  tool_result_free(&r);
}

/* A profile that fails leaves the file -o names as it was, and says which call failed. */
Test(tool_run, a_failed_profile_leaves_the_output_file_alone) {
  memset(&seen, 0, sizeof seen);
  const char *path = program_path("control");
  const char *file = tool_temp_file("old.json", "old", 3);
  seen.answer = CREC_TOOL_EXIT_ERROR;
  tool_result r = run_on_fake_device(2, "profile", path, "--format", "json", "-o", file, NULL);
  tool_expect_errorf(&r, "crec: error: %s: crec profile: crec_exec_profile: (stand-in)\n", path);
  char *text = tool_slurp(file, NULL);
  cr_assert_str_eq(text, "old");
  free(text);
  seen.answer = 0;
  r = run_on_fake_device(2, "profile", path, "-o", "/nonexistent/dir/p.txt", NULL);
  tool_expect_error(&r, "crec: error: /nonexistent/dir/p.txt: crec profile -o: cannot create a temporary file in "
                        "'/nonexistent/dir/': No such file or directory\n");
}

/* Run's and bench's input errors reach profile the same way. */
Test(tool_run, profile_prepares_inputs_as_run_does) {
  memset(&seen, 0, sizeof seen);
  tool_result r = tool_run("profile", program_path("chain"), "--input", "x=fill:abc", "--scalar", "n=4", NULL);
  tool_expect_error(&r, "crec: error: --input x=fill:abc: fill value 'abc' is not a number");
  r = tool_run("profile", program_path("dynamic"), "--size", "v=16,32", "--scalar", "count=1", "--scalar", "scale=2",
               NULL);
  tool_expect_error(&r, "crec: error: --size v=16,32: several sizes are for 'crec run', which replays with each in "
                        "turn; 'crec profile' takes one\n");
  cr_assert_eq(seen.profile_calls, 0);
}

/* Without a device: the summary and the notice, and no profile; in json or
 * html without -o those lines go to stderr, so a pipe reads no text as a profile. */
Test(tool_run, profile_without_a_device_says_so_and_writes_nothing) {
  REQUIRE_NO_DEVICE();
  const char *path = program_path("control");
  tool_result r = tool_run("profile", path, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  tool_expect_has(r.out, "program: ");
  tool_expect_has(r.out, "\ncrec profile: no CUDA device is available: ");
  tool_expect_has(r.out, "\ncrec profile: the program was lowered and its inputs prepared; nothing was run\n");
  cr_assert_str_eq(r.err, "");
  tool_result_free(&r);
  static const char *const formats[] = {"json", "html"};
  for (int f = 0; f < 2; f++) {
    r = tool_run("profile", path, "--format", formats[f], NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "", "--format %s wrote to stdout without a profile", formats[f]);
    tool_expect_has(r.err, "\ncrec profile: no CUDA device is available: ");
    tool_result_free(&r);
  }
  const char *file = tool_temp_path("none.json");
  r = tool_run("profile", path, "--format", "json", "-o", file, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  tool_expect_has(r.out, "\ncrec profile: no CUDA device is available: ");
  cr_assert_str_eq(r.err, "");
  cr_assert_neq(access(file, F_OK), 0, "%s written without a device", file);
  tool_result_free(&r);
}

/* A build whose backend cannot profile says so. */
Test(tool_run, profile_in_a_build_without_the_profiler) {
  const char *path = program_path("control");
  char *argv[] = {"crec", "profile", (char *)path, NULL};
  tool_result r = {0, NULL, NULL};
  size_t olen = 0, elen = 0;
  FILE *out = open_memstream(&r.out, &olen), *err = open_memstream(&r.err, &elen);
  const crec_tool_backend backend = {tool_test_lower, fake_available, fake_run, fake_bench, NULL, NULL};
  r.status = crec_tool_main(3, argv, out, err, &backend);
  fclose(out);
  fclose(err);
  tool_expect_errorf(&r, "crec: error: %s: this build of crec cannot profile (crec_exec_profile from replay/ is not "
                         "linked)\n", path);
}

/* ---- tools/mlir-check.sh ---- */

/* The checker's lines and summary without a device: a file without CHECK lines
 * is skipped, and one that checks a compiler's output; one with them fails
 * saying that nothing ran, and it exits 1. */
Test(tool_run, mlir_check_says_what_it_could_not_check, .init = crec_test_require_mlir) {
  REQUIRE_NO_DEVICE();
  REQUIRE_TOOL_EXE();
  if (system("command -v FileCheck-19 >/dev/null 2>&1") != 0) cr_skip_test("no FileCheck-19 (llvm-19-tools)");
  char dir[700], path[800], cmd[3000];
  snprintf(dir, sizeof dir, "%s/check", tool_temp_dir());
  cr_assert_eq(mkdir(dir, 0700), 0);
  snprintf(path, sizeof path, "%s/a_plain.mlir", dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs("func.func @main() {\n  return\n}\n", f);
  fclose(f);
  snprintf(path, sizeof path, "%s/b_checked.mlir", dir);
  f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs("// RUN: crec run --quiet %s | FileCheck %s\n// CHECK: 7\nfunc.func @other() {\n  return\n}\n", f);
  fclose(f);
  /* a test of what a compiler prints, not of a program run */
  snprintf(path, sizeof path, "%s/c_compiled.mlir", dir);
  f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs("// RUN: mlir-opt %s -gpu-lower-to-nvvm-pipeline | FileCheck %s\n// CHECK: ptxas\n", f);
  fclose(f);
  /* two RUN commands: the prefix of the first, which checks a compiler's output,
   * is not the program's (its CHECK lines are what the run is checked against) */
  snprintf(path, sizeof path, "%s/d_two_runs.mlir", dir);
  f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs("// RUN: mlir-opt %s | FileCheck %s --check-prefix=CHECK-IR\n"
        "// RUN: crec run --quiet %s \\\n"
        "// RUN: | FileCheck %s\n"
        "// CHECK: 7\n"
        "func.func @main() {\n  return\n}\n",
        f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "CREC='%s' '%s/tools/mlir-check.sh' '%s' 2>&1", tool_exe(), CREC_SOURCE_DIR, dir);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  char out[4096] = "";
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  int status = pclose(p);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "exit status %d: %s", status, out);
  cr_assert(strstr(out, "SKIP ") && strstr(out, "a_plain.mlir: no CHECK lines\n"), "%s", out);
  /* the entry is main unless a RUN line names another: here main is missing */
  cr_assert(strstr(out, "FAIL ") && strstr(out, "b_checked.mlir: crec run exited 2: crec: error: "), "%s", out);
  cr_assert(strstr(out, "entry function 'main' not found"), "%s", out);
  cr_assert(strstr(out, "c_compiled.mlir: its RUN lines run no program"), "%s", out);
  cr_assert(strstr(out, "d_two_runs.mlir: nothing ran: "), "%s", out);
  cr_assert(strstr(out, "\n0 passed, 2 failed, 2 skipped\n"), "%s", out);
  /* --check (replays against eager) is taken; without a device it changes nothing */
  snprintf(cmd, sizeof cmd, "CREC='%s' '%s/tools/mlir-check.sh' --check '%s' 2>&1", tool_exe(), CREC_SOURCE_DIR, dir);
  p = popen(cmd, "r");
  cr_assert_not_null(p);
  n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  status = pclose(p);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "exit status %d: %s", status, out);
  cr_assert(strstr(out, "d_two_runs.mlir: nothing ran: "), "%s", out);
  cr_assert(strstr(out, "\n0 passed, 2 failed, 2 skipped\n"), "%s", out);
}

/* ---- what a newcomer tripped on (issue 39) ---- */

/* --variants above 1 of a program with device control flow is refused before
 * anything is recorded, with or without a device; a plain program takes it. */
Test(tool_run, variants_of_a_program_with_control_flow_are_refused_before_record) {
  memset(&seen, 0, sizeof seen);
  const char *control = program_path("control");
  static const char *const commands[] = {"run", "bench"};
  for (size_t i = 0; i < 2; i++) {
    tool_result r = run_on_fake_device(2, commands[i], control, "--variants", "3", NULL);
    tool_expect_errorf(&r, "crec: error: %s: crec %s --variants 3: the program has device control flow (command #0 "
                           "'loop', a while), and CUDA instantiates a graph with conditional nodes once: leave "
                           "--variants out\n",
                       control, commands[i]);
    /* and without a device */
    r = tool_run(commands[i], control, "--variants", "2", NULL);
    tool_expect_errorf(&r, "crec: error: %s: crec %s --variants 2: the program has device control flow", control,
                       commands[i]);
  }
  cr_assert_eq(seen.jobs + (size_t)seen.bench_calls, 0, "the device half ran");
  tool_result r = run_on_fake_device(0, "run", control, "--variants", "1", NULL);
  tool_result_free(&r);
  r = run_on_fake_device(0, "run", program_path("chain"), "--scalar", "n=1", "--variants", "4", NULL);
  cr_assert_str_eq(r.out, "ran\n");
  tool_result_free(&r);
}

/* profile -o - writes to standard output, no file called '-'; and what it writes
 * is a profile that dump --profile draws for the same program and refuses for
 * another. */
Test(tool_run, a_profile_to_standard_output_is_drawn_for_its_program_only) {
  memset(&seen, 0, sizeof seen);
  cr_assert_eq(chdir(tool_temp_dir()), 0);
  const char *control = program_path("control");
  tool_result r = run_on_fake_device(0, "profile", control, "--format", "json", "-o", "-", NULL);
  static const char head[] = "{\"format\": \"crec-profile\"";
  cr_assert_eq(strncmp(r.out, head, sizeof head - 1), 0, "%.200s", r.out);
  cr_assert_str_eq(r.err, "");
  cr_assert_neq(access("-", F_OK), 0, "crec profile -o - wrote a file called '-'");
  const char *file = tool_temp_file("control-profile.json", r.out, strlen(r.out));
  tool_result_free(&r);
  r = tool_run("dump", control, "--format", "html", "--profile", file, NULL);
  cr_assert_eq(r.status, 0, "a profile of the program is refused: %s", r.err);
  tool_result_free(&r);
  const char *chain = program_path("chain");
  r = tool_run("dump", chain, "--format", "html", "--profile", file, NULL);
  tool_expect_errorf(&r, "crec: error: %s: crec dump --profile: not a profile of %s: ", file, chain);
}
