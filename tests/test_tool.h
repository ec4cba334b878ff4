/* Helpers shared by the tool's suites (tests/test_tool_*.c on the CPU,
 * tests/gpu_tool.c on a GPU; defined in test_tool_util.c): running the tool in
 * process against programs built through the C API, running the real crec
 * executable, a small JSON parser for schema checks, and running a child
 * process (Chromium). */
#ifndef CREC_TEST_TOOL_H
#define CREC_TEST_TOOL_H

#include <stddef.h>

#include "common.h"
#include "tool.h"

/* ---- the tool in process ---------------------------------------------------- */

/* What one invocation printed and returned. */
typedef struct tool_result {
  int status;
  char *out;   /* standard output */
  char *err;   /* standard error */
} tool_result;

/* Runs `crec ARGS...` (NULL-terminated) in process with the test backend:
 * "lowering" a file builds the program its basename names (see
 * tool_test_program()); no device run or bench is linked. */
tool_result tool_run(const char *arg, ...) __attribute__((sentinel));
/* As tool_run(), with argv[0] the program name. */
tool_result tool_run_argv(int argc, char **argv);
void tool_result_free(tool_result *r);

/* The test front end tool_run() uses: the file's basename names a program of
 * tool_test_program(); "bad.mlir" fails as a parse error at line 3, column 7. */
crec_status tool_test_lower(const char *path, const crec_lower_options *options, crec_program **out);

/* Builds the test program called `name` (the basename of a .mlir path, without
 * the extension) for `entry` (NULL: "main"):
 *   chain     arguments x, y (f32[1024]), temporary t, scalar n (i32);
 *             launches t = f(x), y = g(t, n), memset of a flag, memcpy y -> x
 *   control   a while loop (cond + body) of at most 1000 iterations, an if, and a
 *             switch of 3 branches
 *   elements  one 16-element argument of each element type, named after it
 *   dynamic   dynamic-size argument v (f32, at least 64 bytes) with size scalar
 *             v_bytes, bound scalars count (i64) and scale (f64), static out
 * Returns NULL for other names. */
crec_program *tool_test_program(const char *name, const char *entry);

/* Writes the program file (crec_program_serialize()) of test program `name`
 * (tool_test_program(), entry main) to FILE in the per-test temporary directory
 * and returns its path (as tool_temp_file()). */
const char *tool_test_program_file(const char *name, const char *file);

/* Writes `text` to a new file DIR/NAME in a per-test temporary directory and
 * returns its path (valid until the test ends). */
const char *tool_temp_file(const char *name, const void *text, size_t size);
/* Returns the per-test temporary directory. */
const char *tool_temp_dir(void);
/* Reads a whole file (NULL when it cannot). Caller frees. */
char *tool_slurp(const char *path, size_t *size);
/* Counts the lines of `s`. */
size_t tool_count_lines(const char *s);

/* ---- JSON ---------------------------------------------------------------- */

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_kind;

typedef struct json {
  json_kind kind;
  int boolean;
  double number;
  char *string;
  size_t count;          /* array items or object members */
  struct json *items;    /* array items, or object values */
  char **keys;           /* object keys */
} json;

/* Parses all of `text` (one value, surrounding whitespace allowed). Returns 0 or -1. */
int json_parse(const char *text, json *out);
void json_free(json *v);
/* Returns the member `key` of an object, or NULL. */
const json *json_get(const json *object, const char *key);
/* Asserts that `object` is an object whose keys are exactly `keys` (NULL-terminated). */
void json_expect_keys(const json *object, const char *what, const char *const *keys);
/* Asserts that `object` is an object with every key of `keys`, none outside `keys` and
 * `optional` (the keys only some objects of its kind have), and no key twice. */
void json_expect_schema_keys(const json *object, const char *what, const char *const *keys,
                             const char *const *optional);
/* Asserts that `command`, one of a JSON dump's "commands", has the keys crec/dump.h
 * gives its kind: the common ones, its kind's, and only the optional ones of its kind. */
void json_expect_command_keys(const json *command, const char *what);

/* ---- child processes ----------------------------------------------------- */

/* Runs argv[0] (looked up on PATH) with stdout and stderr captured, killing it
 * after `timeout_s`. Returns its exit status, or -1 when it could not start. */
int tool_spawn(char *const argv[], int timeout_s, char **out, char **err);
/* As tool_spawn(), in directory `dir` (NULL: this one). */
int tool_spawn_in(const char *dir, char *const argv[], int timeout_s, char **out, char **err);

/* ---- the real crec executable --------------------------------------------- */

/* The repository: CMake's source directory, else two levels above this test
 * runner (SOURCE/BUILD/tests/) when the tree was copied elsewhere. */
const char *tool_source_dir(void);
/* The crec executable: $CREC_TOOL, else the path CMake compiled in, else
 * ../tools/crec next to this test runner (a build tree copied elsewhere); NULL
 * when none exists. */
const char *tool_exe(void);
/* The staged examples (build/examples/, with image.ptx): $CREC_EXAMPLES_DIR,
 * else CMake's path, else ../examples next to the runner. Ends with '/'. */
const char *tool_examples_dir(void);
/* Returns the staged example `name` ("chain.mlir") as a path. */
const char *tool_example(const char *name);
/* Asserts exit status 2, nothing on stdout, and exactly one line on stderr that
 * starts with `want` (all of it when `want` ends with '\n'); frees `r`. */
void tool_expect_error(tool_result *r, const char *want);
/* As tool_expect_error(), with the start of the error given as a printf format. */
void tool_expect_errorf(tool_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Asserts that `text` contains `needle`. */
void tool_expect_has(const char *text, const char *needle);
/* A path in the test's temporary directory (one of 64 rotating buffers). */
const char *tool_temp_path(const char *name);

/* Skips the test when the executable is not built. */
#define REQUIRE_TOOL_EXE()                                                                      \
  do {                                                                                          \
    if (!tool_exe()) cr_skip_test("the crec executable is not built (lower/ or replay/ missing)"); \
  } while (0)

/* Seconds a tool run may take before it is killed: CREC_TEST_TOOL_TIMEOUT, or
 * 60 (compute-sanitizer needs more; tools/gpu-check.sh --sanitize sets it). */
int tool_timeout(void);

/* Runs the real `crec ARGS...` (NULL-terminated) in `dir` (NULL: here), with
 * stdout and stderr captured; status is its exit status (-1: it did not start
 * or ran over tool_timeout() seconds; 128+N: killed by signal N). */
tool_result tool_exec_in(const char *dir, const char *arg, ...) __attribute__((sentinel));
#define tool_exec(...) tool_exec_in(NULL, __VA_ARGS__)
/* As tool_exec_in(), with the arguments in a NULL-terminated array. */
tool_result tool_exec_argv(const char *dir, const char *const *args);

/* Writes an MLIR program of `n` launches of one kernel that adds 1 to all of
 * x (256 floats), one after the other, to a temporary file; returns its path. */
const char *tool_long_chain(size_t n);
/* Returns the path of a Chromium binary, or NULL when none is installed. */
const char *tool_chromium(void);
/* Opens the page at `page` (an absolute path) in headless Chromium with
 * "#selftest=NODE", which clicks NODE and records the details panel in
 * <pre id="crec-selftest">; returns the dumped DOM, and Chromium's log in
 * `*console`. Skips the test when Chromium is not installed. */
char *tool_open_in_chromium(const char *page, const char *node, char **console);
/* Asserts that the page logged nothing to the console (errors, blocked loads
 * and uncaught exceptions all show up as CONSOLE lines in Chromium's log). */
void tool_expect_clean_console(const char *console);
/* Opens `page` with `node` clicked as tool_open_in_chromium() does and asserts
 * that the console is clean and the self-test passed without errors; returns
 * the DOM (free it), and its <pre id="crec-selftest"> in `*selftest`. */
char *tool_open_selftest(const char *page, const char *node, const char **selftest);

#endif
