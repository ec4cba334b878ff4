/* Multi-GPU pieces without a device: the barrier across ranks (builder
 * validation, what it keeps, the order it imposes, dumps) and the calls that
 * bound waits for other ranks (argument checks, statuses). The multi-rank GPU
 * tests are tests/multi_tests.c, started by tools/crec-launch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

TestSuite(multi, .fini = crec_test_leak_check);

Test(multi, wait_and_agreement_calls_check_their_arguments) {
  EXPECT_STATUS(crec_comm_abort(NULL), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("crec_comm_abort: argument 'comm' is NULL");
  cr_assert_eq(crec_comm_aborted(NULL), 0);
  EXPECT_STATUS(crec_comm_synchronize(NULL, NULL, 1000), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("crec_comm_synchronize: argument 'comm' is NULL");
  EXPECT_STATUS(crec_comm_agree(NULL, CREC_OK, 1000), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("crec_comm_agree: argument 'comm' is NULL");
}

Test(multi, the_statuses_of_failed_ranks_have_names) {
  cr_assert_str_eq(crec_status_name(CREC_ERR_TIMEOUT), "ERR_TIMEOUT");
  cr_assert_str_eq(crec_status_name(CREC_ERR_REMOTE), "ERR_REMOTE");
  cr_assert(strstr(crec_status_string(CREC_ERR_TIMEOUT), "deadline"));
  cr_assert(strstr(crec_status_string(CREC_ERR_REMOTE), "another rank"));
}
