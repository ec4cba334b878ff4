/* --require-device and CREC_REQUIRE_DEVICE=1: without a CUDA device, run, bench
 * and profile fail with exit status 5 in one error line, where they would
 * otherwise print the program's summary and exit 0, so a CI job that must run
 * the program cannot pass for work nobody did. */
#include <stdlib.h>
#include <string.h>

#include "test_tool.h"

static const char *program_path(const char *name) {
  char file[64];
  snprintf(file, sizeof file, "%s.mlir", name);
  return tool_temp_file(file, "// built by the test front end\n", 31);
}

/* Asserts exit status 5, nothing on stdout, and exactly one line on stderr starting with `want`. */
static void expect_no_device(tool_result *r, const char *what, const char *want) {
  cr_assert_eq(r->status, CREC_TOOL_EXIT_NO_DEVICE, "%s: exit status %d, stdout: %s, stderr: %s", what, r->status,
               r->out, r->err);
  cr_expect_str_eq(r->out, "", "%s printed on stdout", what);
  cr_expect_eq(tool_count_lines(r->err), 1, "%s: not one line on stderr: %s", what, r->err);
  cr_expect(strncmp(r->err, want, strlen(want)) == 0, "%s: stderr '%s' does not start with '%s'", what, r->err, want);
  tool_result_free(r);
}

Test(tool_device, require_device_without_one_exits_5_for_run_bench_and_profile) {
  REQUIRE_NO_DEVICE();
  const char *chain = program_path("chain");
  tool_result r = tool_run("run", chain, "--scalar", "n=4", "--check", "--require-device", NULL);
  expect_no_device(&r, "run", "crec: error: crec run --require-device: no CUDA device is available: ");
  r = tool_run("bench", chain, "--scalar", "n=4", "--json", "--require-device", NULL);
  expect_no_device(&r, "bench --json", "crec: error: crec bench --require-device: no CUDA device is available: ");
  r = tool_run("profile", chain, "--scalar", "n=4", "--require-device", "--format", "json", NULL);
  expect_no_device(&r, "profile", "crec: error: crec profile --require-device: no CUDA device is available: ");
  r = tool_run("run", chain, "--scalar", "n=4", "--quiet", "--require-device", NULL);
  expect_no_device(&r, "run --quiet", "crec: error: crec run --require-device: no CUDA device is available: ");
}

Test(tool_device, require_device_writes_no_output_file) {
  REQUIRE_NO_DEVICE();
  const char *y = tool_temp_path("y.bin");
  char output[700];
  snprintf(output, sizeof output, "y=%s", y);
  tool_result r = tool_run("run", program_path("chain"), "--scalar", "n=4", "--output", output, "--require-device", NULL);
  expect_no_device(&r, "run --output", "crec: error: crec run --require-device: ");
  cr_assert_null(tool_slurp(y, NULL), "%s was written", y);
}

Test(tool_device, the_environment_variable_does_the_same_and_0_leaves_it_off) {
  REQUIRE_NO_DEVICE();
  const char *chain = program_path("chain");
  setenv("CREC_REQUIRE_DEVICE", "1", 1);
  tool_result r = tool_run("run", chain, "--scalar", "n=4", NULL);
  expect_no_device(&r, "run", "crec: error: crec run (CREC_REQUIRE_DEVICE=1): no CUDA device is available: ");
  /* dump needs no device: the variable changes nothing for it */
  r = tool_run("dump", chain, NULL);
  cr_expect_eq(r.status, 0, "dump: exit status %d: %s", r.status, r.err);
  tool_result_free(&r);
  setenv("CREC_REQUIRE_DEVICE", "0", 1);
  r = tool_run("run", chain, "--scalar", "n=4", NULL);
  cr_expect_eq(r.status, 0, "CREC_REQUIRE_DEVICE=0: exit status %d: %s", r.status, r.err);
  cr_expect(strstr(r.out, "crec run: no CUDA device is available: "), "%s", r.out);
  tool_result_free(&r);
}

Test(tool_device, only_the_commands_that_run_take_it) {
  const char *chain = program_path("chain");
  tool_result r = tool_run("dump", chain, "--require-device", NULL);
  cr_expect_eq(r.status, CREC_TOOL_EXIT_ERROR, "dump --require-device: exit status %d", r.status);
  cr_expect(strstr(r.err, "--require-device"), "%s", r.err);
  tool_result_free(&r);
  r = tool_run("run", "--help", NULL);
  cr_expect(strstr(r.out, "  --require-device      without a CUDA device, fail with exit status 5"), "%s", r.out);
  tool_result_free(&r);
  r = tool_run("--help", NULL);
  cr_expect(strstr(r.out, "exit status 5"), "%s", r.out);
  tool_result_free(&r);
}

/* The real executable, as a CI job runs it: `crec run ... --check && echo passed`
 * no longer passes on a machine without a device. */
Test(tool_device, the_executable_fails_a_check_it_cannot_run) {
  REQUIRE_NO_DEVICE();
  REQUIRE_TOOL_EXE();
  crec_test_require_mlir();
  tool_result r = tool_exec("run", tool_example("chain.mlir"), "--input", "x=iota", "--check", "--require-device", NULL);
  expect_no_device(&r, "crec run --check --require-device",
                   "crec: error: crec run --require-device: no CUDA device is available: ");
}
