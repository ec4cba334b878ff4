/* Helpers shared by the Criterion suites. */
#ifndef CREC_TESTS_COMMON_H
#define CREC_TESTS_COMMON_H

#include <criterion/criterion.h>

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

/* A tiny PTX image with one kernel entry, for programs that are never launched. */
extern const char crec_test_ptx[];

/* Builds a program with a module and one kernel "k" (for CPU suites). */
crec_program *crec_test_program(crec_kernel *kernel);

#endif
