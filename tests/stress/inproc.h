/* The subset of Criterion's test API that crec's suites use, for the runner of
 * tests/stress/main.c:
 *  - crec_gpu_stress runs the control and replay suites' tests one after
 *    another in one process, with one CUDA context, instead of one process (and
 *    context) per test as Criterion does. Why: tools/gpu-check.sh --stress runs
 *    the suites in 8 processes at once, and there a CUDA context's start and end
 *    take 1.3 to 1.8 s (0.4 s alone), longer than most tests. With Criterion a
 *    round took 75 s, so 20 rounds did not fit in a 10-minute command. The tests
 *    are the same source files, compiled with CREC_TEST_INPROC; Criterion
 *    (crec_gpu_tests) still runs them in -j8 suites.
 *  - The ThreadSanitizer build's crec_tests (CMake's CREC_SANITIZE=thread) runs
 *    the CPU suites with it, each test in a process of its own (CREC_TEST_FORK),
 *    since Criterion cannot start under ThreadSanitizer: BoxFort maps its arena
 *    at random addresses, which ThreadSanitizer keeps for itself ("Could not
 *    initialize inheritable arena").
 *
 * Semantics, as Criterion's: cr_expect* records a failure and goes on, cr_assert*
 * and cr_assert_fail end the test (its suite's fini still runs), cr_skip_test
 * ends it as skipped; a test's .init runs after its suite's, its .fini before
 * the suite's. In one process a crash ends the whole process (the caller counts
 * it); forked, it fails that test. */
#ifndef CREC_TESTS_STRESS_INPROC_H
#define CREC_TESTS_STRESS_INPROC_H

/* what Criterion's header brings, and suites count on */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The options of a Test or a TestSuite. */
typedef struct crec_inproc_opts {
  int unused_;        /* so that no option at all is an initializer too: {0, } */
  void (*init)(void);
  void (*fini)(void);
  double timeout;     /* seconds; a test run in a process of its own is ended past it */
} crec_inproc_opts;

/* Registration, from the constructors that Test and TestSuite define. */
void crec_inproc_register_test(const char *suite, const char *name, void (*fn)(void), crec_inproc_opts opts);
void crec_inproc_register_suite(const char *suite, crec_inproc_opts opts);

/* A failed check at FILE:LINE of `expr`, with an optional printf-style message.
 * `fmt` starts with a marker byte (\x01) that the check macros put in front of
 * the caller's message, so that a check without one has a format too; `fatal`
 * ends the current test. */
void crec_inproc_fail(int fatal, const char *file, int line, const char *expr, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Ends the current test as skipped, printing why. */
void crec_inproc_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void crec_inproc_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Options: .init, .fini and .timeout (honoured only where each test runs in a
 * process of its own: in one process the caller bounds the whole process). */
#define Test(suite, name, ...)                                                                \
  static void crec_inproc_test_##suite##_##name(void);                                        \
  __attribute__((constructor)) static void crec_inproc_reg_##suite##_##name(void) {           \
    crec_inproc_register_test(#suite, #name, crec_inproc_test_##suite##_##name,               \
                              (crec_inproc_opts){0, __VA_ARGS__});                            \
  }                                                                                           \
  static void crec_inproc_test_##suite##_##name(void)

#define TestSuite(suite, ...)                                                                 \
  __attribute__((constructor)) static void crec_inproc_suite_##suite(void) {                  \
    crec_inproc_register_suite(#suite, (crec_inproc_opts){0, __VA_ARGS__});                  \
  }

#define CREC_INPROC_CHECK(fatal, cond, expr, ...)                                             \
  do {                                                                                        \
    if (!(cond)) crec_inproc_fail(fatal, __FILE__, __LINE__, expr, "\x01" __VA_ARGS__);           \
  } while (0)

#define cr_expect(c, ...) CREC_INPROC_CHECK(0, c, #c, __VA_ARGS__)
#define cr_assert(c, ...) CREC_INPROC_CHECK(1, c, #c, __VA_ARGS__)
#define cr_expect_not(c, ...) CREC_INPROC_CHECK(0, !(c), "!(" #c ")", __VA_ARGS__)
#define cr_assert_not(c, ...) CREC_INPROC_CHECK(1, !(c), "!(" #c ")", __VA_ARGS__)
#define cr_expect_eq(a, b, ...) CREC_INPROC_CHECK(0, (a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_assert_eq(a, b, ...) CREC_INPROC_CHECK(1, (a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_expect_neq(a, b, ...) CREC_INPROC_CHECK(0, (a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...) CREC_INPROC_CHECK(1, (a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_expect_gt(a, b, ...) CREC_INPROC_CHECK(0, (a) > (b), #a " > " #b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...) CREC_INPROC_CHECK(1, (a) > (b), #a " > " #b, __VA_ARGS__)
#define cr_expect_geq(a, b, ...) CREC_INPROC_CHECK(0, (a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...) CREC_INPROC_CHECK(1, (a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_expect_lt(a, b, ...) CREC_INPROC_CHECK(0, (a) < (b), #a " < " #b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...) CREC_INPROC_CHECK(1, (a) < (b), #a " < " #b, __VA_ARGS__)
#define cr_expect_leq(a, b, ...) CREC_INPROC_CHECK(0, (a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...) CREC_INPROC_CHECK(1, (a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_expect_null(p, ...) CREC_INPROC_CHECK(0, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_null(p, ...) CREC_INPROC_CHECK(1, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_expect_not_null(p, ...) CREC_INPROC_CHECK(0, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...) CREC_INPROC_CHECK(1, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_expect_str_eq(a, b, ...) CREC_INPROC_CHECK(0, strcmp((a), (b)) == 0, #a " equals " #b, __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) CREC_INPROC_CHECK(1, strcmp((a), (b)) == 0, #a " equals " #b, __VA_ARGS__)
#define cr_expect_str_neq(a, b, ...) CREC_INPROC_CHECK(0, strcmp((a), (b)) != 0, #a " differs from " #b, __VA_ARGS__)
#define cr_assert_str_neq(a, b, ...) CREC_INPROC_CHECK(1, strcmp((a), (b)) != 0, #a " differs from " #b, __VA_ARGS__)
#define cr_expect_str_empty(a, ...) CREC_INPROC_CHECK(0, (a)[0] == '\0', #a " is empty", __VA_ARGS__)
#define cr_assert_str_empty(a, ...) CREC_INPROC_CHECK(1, (a)[0] == '\0', #a " is empty", __VA_ARGS__)
#define cr_expect_str_not_empty(a, ...) CREC_INPROC_CHECK(0, (a)[0] != '\0', #a " is not empty", __VA_ARGS__)
#define cr_assert_str_not_empty(a, ...) CREC_INPROC_CHECK(1, (a)[0] != '\0', #a " is not empty", __VA_ARGS__)
#define cr_expect_arr_eq(a, b, size, ...) CREC_INPROC_CHECK(0, memcmp((a), (b), (size)) == 0, #a " equals " #b, __VA_ARGS__)
#define cr_assert_arr_eq(a, b, size, ...) CREC_INPROC_CHECK(1, memcmp((a), (b), (size)) == 0, #a " equals " #b, __VA_ARGS__)
/* |a - b| <= eps */
#define CREC_INPROC_NEAR(a, b, eps) ((a) - (b) <= (eps) && (b) - (a) <= (eps))
#define cr_expect_float_eq(a, b, eps, ...) CREC_INPROC_CHECK(0, CREC_INPROC_NEAR(a, b, eps), #a " == " #b, __VA_ARGS__)
#define cr_assert_float_eq(a, b, eps, ...) CREC_INPROC_CHECK(1, CREC_INPROC_NEAR(a, b, eps), #a " == " #b, __VA_ARGS__)
#define cr_assert_fail(...) crec_inproc_fail(1, __FILE__, __LINE__, "cr_assert_fail", "\x01" __VA_ARGS__)
#define cr_expect_fail(...) crec_inproc_fail(0, __FILE__, __LINE__, "cr_expect_fail", "\x01" __VA_ARGS__)
#define cr_skip_test(...) crec_inproc_skip(__VA_ARGS__)
#define cr_log_error(...) crec_inproc_log(__VA_ARGS__)
#define cr_log_warn(...) crec_inproc_log(__VA_ARGS__)
#define cr_log_info(...) crec_inproc_log(__VA_ARGS__)

#endif
