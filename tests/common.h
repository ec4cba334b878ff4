/* Helpers shared by the Criterion suites. */
#ifndef CREC_TESTS_COMMON_H
#define CREC_TESTS_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#ifdef CREC_TEST_INPROC
#include "stress/inproc.h" /* crec_gpu_stress: these suites in one process */
#else
#include <criterion/criterion.h>
#endif

#include "crec/crec.h"
#include "crec/debug.h"

/* Asserts that `call` returns `status`; on mismatch prints the last error. */
#define EXPECT_STATUS(call, status)                                                        \
  do {                                                                                     \
    crec_status got_ = (call);                                                             \
    cr_assert_eq(got_, (status), "%s returned %s, expected %s: %s", #call,                 \
                 crec_status_name(got_), crec_status_name(status), crec_last_error());     \
  } while (0)
#define EXPECT_OK(call) EXPECT_STATUS(call, CREC_OK)

/* Asserts that the thread's last error contains `needle`. */
#define EXPECT_ERROR_MENTIONS(needle)                                                      \
  cr_assert(strstr(crec_last_error(), (needle)) != NULL, "last error '%s' does not mention '%s'", \
            crec_last_error(), (needle))

/* Skips the current test, printing why, when no CUDA device is usable. */
#define REQUIRE_DEVICE()                                                                   \
  do {                                                                                     \
    if (!crec_device_available()) cr_skip_test("no CUDA device: %s", crec_last_error());   \
  } while (0)

/* Skips the current test when a CUDA device is usable: it checks what a
 * machine without one does (a device would run what it says cannot run). */
#define REQUIRE_NO_DEVICE()                                                                \
  do {                                                                                     \
    if (crec_device_available()) cr_skip_test("a CUDA device is present: this checks the path without one"); \
  } while (0)

/* Under AddressSanitizer: aborts when LeakSanitizer finds memory leaked so far.
 * Each suite runs it as its teardown (.fini). Criterion ignores assertions
 * there, but a crash in teardown is reported and fails the run's exit status;
 * without this, LeakSanitizer's report at a worker's exit changes nothing. */
void crec_test_leak_check(void);

/* A tiny PTX image with one kernel entry, for programs that are never launched. */
extern const char crec_test_ptx[];

/* Builds a program with a module and one kernel "k" (for CPU suites). */
crec_program *crec_test_program(crec_kernel *kernel);

/* Adds kernel "k" of the first module of `p` (crec_test_program()) again, with
 * cluster dims 2x1x1, failing the test on error. */
crec_kernel crec_test_cluster_kernel(crec_program *p);

/* Adds argument or temporary buffer `name` of `size` bytes to `p`, failing the test on error. */
crec_buffer crec_test_argument(crec_program *p, const char *name, uint64_t size);
crec_buffer crec_test_temporary(crec_program *p, const char *name, uint64_t size);

/* Adds a launch of `kernel` with the `n` arguments `args` to `region` of `p`,
 * failing the test on error. */
crec_command crec_test_launch(crec_program *p, crec_region region, const char *name, crec_kernel kernel,
                              const crec_arg *args, size_t n);

/* Plans `p` with `schedule`, failing the test on error. */
crec_plan *crec_test_plan(const crec_program *p, crec_schedule schedule);

/* A suite's teardown (.fini) for its program: destroys `*p`, sets it to NULL
 * and runs crec_test_leak_check(). */
void crec_test_teardown_program(crec_program **p);

/* ---- "nothing is half-added" ---- */

/* Everything inspect.h counts about a program. */
typedef struct crec_test_counts {
  size_t buffers, arguments, scalars, bound_scalars, host_functions, modules, kernels, regions,
      commands;
  size_t region_commands; /* the sum of every region's num_commands */
} crec_test_counts;

/* Reads the counts of `p` through inspect.h. */
crec_test_counts crec_test_counts_of(const crec_program *p);

/* Asserts that the counts of `p` equal `before` (`what` names the call in the message). */
void crec_test_expect_counts(const crec_program *p, const crec_test_counts *before,
                             const char *what);

/* Asserts that `call` fails with `status`, leaves a message that mentions `needle`,
 * and leaves the counts of program `p` as they were. */
#define EXPECT_REFUSED(p, call, status, needle)                                            \
  do {                                                                                     \
    crec_test_counts before_ = crec_test_counts_of(p);                                     \
    EXPECT_STATUS(call, status);                                                           \
    EXPECT_ERROR_MENTIONS(needle);                                                         \
    crec_test_expect_counts((p), &before_, #call);                                         \
  } while (0)

/* A handle id no program ever made: the index is in range of nothing. */
#define CREC_TEST_GARBAGE_ID 0xdeadbeefu

/* ---- plans ---- */

/* Asserts that `command` waits for exactly the `n` commands in `expected`
 * (in increasing creation order, as crec_plan_get_deps() promises). */
void crec_test_expect_deps(const crec_plan *plan, crec_command command, size_t n,
                           const crec_command *expected, const char *what);
#define EXPECT_DEPS(plan, command, ...)                                                    \
  do {                                                                                     \
    const crec_command expected_[] = {{0}, __VA_ARGS__};                                   \
    crec_test_expect_deps((plan), (command), sizeof expected_ / sizeof *expected_ - 1,     \
                          expected_ + 1, #command);                                        \
  } while (0)

/* ---- random programs (property tests) ---- */

/* A small, reproducible PRNG (splitmix64). */
typedef struct crec_test_rng {
  uint64_t state;
} crec_test_rng;
uint64_t crec_test_rand(crec_test_rng *r);
/* Returns a value in [lo, hi] (inclusive). */
uint64_t crec_test_between(crec_test_rng *r, uint64_t lo, uint64_t hi);

/* Shapes of random programs. */
typedef struct crec_test_shape {
  size_t max_temporaries; /* 1 .. this many temporaries */
  uint64_t max_temp_size; /* each 1 .. this many bytes */
  size_t max_commands;    /* 1 .. this many commands, control flow included */
  bool barriers;          /* also add barriers */
  bool dynamic;           /* also add a dynamic-size argument */
} crec_test_shape;

/* Builds a random program from `seed`: argument, constant and temporary buffers,
 * launches, memcpys, memsets, barriers and while/if/switch commands nested at
 * random, added to random regions in a random order (so creation order and
 * program order differ). */
crec_program *crec_test_random_program(uint64_t seed, const crec_test_shape *shape);

/* The buffer ranges command `c` accesses itself (not those of its regions):
 * writes `*n` entries into `ranges`/`writes` (room for `cap`). */
void crec_test_command_ranges(const crec_program *p, crec_command c, crec_range *ranges,
                              bool *writes, size_t cap, size_t *n);

/* Position in the program body of the top-level command that holds `c`. */
size_t crec_test_top_position(const crec_program *p, crec_command c);

/* Writes every command in program order (depth first) into `out` (room for all). */
size_t crec_test_program_order(const crec_program *p, crec_command *out);

/* Whether libnvJitLink.so.13 opens (crec_lower_options.cubin needs it). */
bool crec_test_have_nvjitlink(void);

/* Skips the current test when crec was built without MLIR (CREC_WITH_MLIR=OFF). */
void crec_test_require_mlir(void);
/* Where the MLIR inputs are staged: the build tree (with the images nvcc built),
 * $CREC_TEST_MLIR_DIR, or mlir/ beside the runner in a copied build tree. */
const char *crec_test_mlir_dir(void);
/* Lowers staged input `name`, or inline text ("inline.mlir"), failing the test on error. */
crec_program *crec_test_lower_file(const char *name);
crec_program *crec_test_lower_text(const char *text);
/* Lowers every .mlir file of folder `dir` for sm_90, failing the test on error,
 * and calls fn(name, path, program, user) on each; destroys the program after.
 * Returns how many files it lowered. */
size_t crec_test_lower_each_file(const char *dir,
                                 void (*fn)(const char *name, const char *path, crec_program *p, void *user),
                                 void *user);

/* Asserts that the dump of `p` in `format` (planned with defaults) holds every
 * string of the NULL-terminated `needles`. */
void crec_test_expect_dump_has(const crec_program *p, crec_dump_format format, const char *const *needles);
#define EXPECT_DUMP_HAS(p, format, ...) \
  crec_test_expect_dump_has((p), (format), (const char *const[]){__VA_ARGS__, NULL})

/* Reading a program back in tests, failing the test on error: its JSON dump
 * (freed with crec_free), command `index` in creation order, argument `index`
 * of launch `cmd`, a buffer's name, and that a range covers bytes [offset,
 * offset + size) of buffer `name`. */
char *crec_test_json(const crec_program *p);

/* Captures what the process writes to standard output (file descriptor 1, C
 * stdio flushed at both ends) from crec_test_capture_begin() to
 * crec_test_capture_end(), which returns it (the caller's: free()). */
typedef struct crec_test_capture {
  int saved, fd;
  char path[32];
} crec_test_capture;
void crec_test_capture_begin(crec_test_capture *c);
char *crec_test_capture_end(crec_test_capture *c);
crec_command_info crec_test_command(const crec_program *p, size_t index);
crec_arg crec_test_arg(const crec_program *p, size_t cmd, size_t index);
const char *crec_test_buffer_name(const crec_program *p, crec_buffer b);
void crec_test_expect_range(const crec_program *p, crec_range r, const char *name, uint64_t offset, uint64_t size);

#endif
