/* Status table, last-error messages (per thread), version. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

TestSuite(status, .fini = crec_test_leak_check);

typedef struct status_row {
  crec_status status;
  const char *suffix; /* the enumerator without CREC_ */
  int value;
  const char *text;
} status_row;

static const status_row rows[] = {
#define ROW(name, value, text) {CREC_##name, #name, value, text},
    CREC_STATUS_TABLE(ROW)
#undef ROW
};
#define NUM_ROWS (sizeof rows / sizeof *rows)

Test(status, table_generates_enum_names_and_strings) {
  cr_assert_eq(CREC_OK, 0, "CREC_OK must be 0");
  for (size_t i = 0; i < NUM_ROWS; i++) {
    cr_assert_eq((int)rows[i].status, rows[i].value, "CREC_%s is %d in the enum, %d in the table",
                 rows[i].suffix, (int)rows[i].status, rows[i].value);
    cr_assert_str_eq(crec_status_name(rows[i].status), rows[i].suffix);
    cr_assert_str_eq(crec_status_string(rows[i].status), rows[i].text);
    cr_assert_neq(strlen(rows[i].text), 0, "CREC_%s has an empty description", rows[i].suffix);
  }
}

Test(status, every_status_has_a_distinct_value_name_and_string) {
  cr_assert_geq(NUM_ROWS, 20, "the table lost statuses: %zu", NUM_ROWS);
  for (size_t i = 0; i < NUM_ROWS; i++)
    for (size_t j = 0; j < i; j++) {
      cr_assert_neq(rows[i].value, rows[j].value, "CREC_%s and CREC_%s share value %d",
                    rows[i].suffix, rows[j].suffix, rows[i].value);
      cr_assert_str_neq(crec_status_name(rows[i].status), crec_status_name(rows[j].status));
      cr_assert_str_neq(crec_status_string(rows[i].status), crec_status_string(rows[j].status));
    }
}

Test(status, errors_are_named_err_and_ok_is_not) {
  for (size_t i = 0; i < NUM_ROWS; i++) {
    bool is_ok = rows[i].status == CREC_OK;
    cr_assert_eq(strncmp(rows[i].suffix, "ERR_", 4) == 0, !is_ok, "CREC_%s is misnamed", rows[i].suffix);
  }
}

Test(status, unknown_values_are_reported_as_unknown) {
  const int unknown[] = {-1, (int)NUM_ROWS + 100, 12345};
  for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++) {
    cr_assert_str_eq(crec_status_name((crec_status)unknown[i]), "UNKNOWN");
    cr_assert_str_eq(crec_status_string((crec_status)unknown[i]), "unknown status");
  }
}

Test(status, last_error_is_empty_before_any_failure) {
  cr_assert_str_eq(crec_last_error(), "");
  crec_program *p = NULL;
  EXPECT_OK(crec_program_create(&p));
  cr_assert_str_eq(crec_last_error(), "", "a successful call left '%s'", crec_last_error());
  crec_program_destroy(p);
}

Test(status, last_error_names_the_function_and_the_argument) {
  EXPECT_STATUS(crec_program_create(NULL), CREC_ERR_NULL_POINTER);
  cr_assert_str_eq(crec_last_error(), "crec_program_create: argument 'out' is NULL");
}

Test(status, last_error_stays_until_the_next_failure) {
  crec_program *p = NULL;
  EXPECT_OK(crec_program_create(&p));
  crec_buffer b;
  EXPECT_STATUS(crec_program_add_temporary(p, "t", 0, &b), CREC_ERR_INVALID_ARGUMENT);
  char first[512];
  snprintf(first, sizeof first, "%s", crec_last_error());
  EXPECT_ERROR_MENTIONS("crec_program_add_temporary");
  EXPECT_OK(crec_program_add_temporary(p, "t", 16, &b));
  cr_assert_str_eq(crec_last_error(), first, "a successful call changed the last error");
  EXPECT_STATUS(crec_program_add_temporary(p, "t", 16, &b), CREC_ERR_DUPLICATE_NAME);
  cr_assert_str_neq(crec_last_error(), first);
  EXPECT_ERROR_MENTIONS("'t'");
  crec_program_destroy(p);
}

/* Each thread fails in its own way and must see only its own message. */
typedef struct thread_job {
  pthread_barrier_t *barrier;
  const char *name; /* a buffer name that gets refused as a duplicate */
  crec_program *program;
  char seen_before[512], seen_after[512];
  crec_status status;
} thread_job;

static void *fail_in_thread(void *arg) {
  thread_job *job = arg;
  snprintf(job->seen_before, sizeof job->seen_before, "%s", crec_last_error());
  crec_buffer b;
  job->status = crec_program_add_temporary(job->program, job->name, 8, &b);
  /* both threads have failed before either reads its message again */
  pthread_barrier_wait(job->barrier);
  snprintf(job->seen_after, sizeof job->seen_after, "%s", crec_last_error());
  pthread_barrier_wait(job->barrier);
  return NULL;
}

Test(status, last_error_is_per_thread) {
  crec_program *p = NULL;
  EXPECT_OK(crec_program_create(&p));
  crec_buffer a, b;
  EXPECT_OK(crec_program_add_temporary(p, "alpha", 8, &a));
  EXPECT_OK(crec_program_add_temporary(p, "beta", 8, &b));
  EXPECT_STATUS(crec_program_add_scalar(p, NULL, CREC_TYPE_I32, NULL), CREC_ERR_NULL_POINTER);
  char main_error[512];
  snprintf(main_error, sizeof main_error, "%s", crec_last_error());

  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, 2);
  thread_job jobs[2] = {{&barrier, "alpha", p, "", "", CREC_OK}, {&barrier, "beta", p, "", "", CREC_OK}};
  pthread_t threads[2];
  for (int i = 0; i < 2; i++) cr_assert_eq(pthread_create(&threads[i], NULL, fail_in_thread, &jobs[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(threads[i], NULL);
  pthread_barrier_destroy(&barrier);

  for (int i = 0; i < 2; i++) {
    cr_assert_str_eq(jobs[i].seen_before, "", "a new thread saw '%s'", jobs[i].seen_before);
    cr_assert_eq(jobs[i].status, CREC_ERR_DUPLICATE_NAME);
    char want[64];
    snprintf(want, sizeof want, "'%s'", jobs[i].name);
    cr_assert(strstr(jobs[i].seen_after, want) != NULL, "thread %d saw '%s', not its own error", i,
              jobs[i].seen_after);
    snprintf(want, sizeof want, "'%s'", jobs[1 - i].name);
    cr_assert(strstr(jobs[i].seen_after, want) == NULL, "thread %d saw the other thread's error '%s'",
              i, jobs[i].seen_after);
  }
  cr_assert_str_eq(crec_last_error(), main_error, "the threads' failures changed the main thread's error");
  crec_program_destroy(p);
}

Test(status, version_is_major_minor_patch) {
  const char *v = crec_version();
  cr_assert_not_null(v);
  unsigned major, minor, patch;
  char rest;
  cr_assert_eq(sscanf(v, "%u.%u.%u%c", &major, &minor, &patch, &rest), 3, "version '%s'", v);
}

Test(status, free_and_destroy_accept_null) {
  crec_free(NULL);
  crec_program_destroy(NULL);
  crec_plan_destroy(NULL);
  cr_assert_eq(crec_debug_live_objects(), 0);
}

/* A CUDA error of either kind is sorted out of CREC_ERR_CUDA by the one driver-call
 * check (record/runtime/driver.c): host memory and CUDA's other failures keep theirs. */
Test(status, device_out_of_memory_and_a_lost_context_have_statuses_of_their_own) {
  cr_assert_str_eq(crec_status_name(CREC_ERR_DEVICE_OUT_OF_MEMORY), "ERR_DEVICE_OUT_OF_MEMORY");
  cr_assert_str_eq(crec_status_name(CREC_ERR_CONTEXT_LOST), "ERR_CONTEXT_LOST");
  const crec_status others[] = {CREC_ERR_CUDA, CREC_ERR_OUT_OF_MEMORY, CREC_ERR_DEVICE_ASSERT};
  for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
    cr_assert_neq(CREC_ERR_DEVICE_OUT_OF_MEMORY, others[i]);
    cr_assert_neq(CREC_ERR_CONTEXT_LOST, others[i]);
  }
  cr_assert(strstr(crec_status_string(CREC_ERR_CONTEXT_LOST), "no longer be used"));
}
