/* tools/crec-launch, the multi-rank launcher, as a user sees it: what each rank
 * finds in its environment, and that one failing rank, the timeout or a signal
 * stop every rank promptly with the right exit status. No device is needed. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

TestSuite(rank_launcher);

#define LAUNCH CREC_SOURCE_DIR "/tools/crec-launch"

typedef struct ran {
  char out[16384]; /* stdout and stderr */
  int status;      /* exit status, or 128 + signal */
  double seconds;
} ran;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs `command` through sh, collecting its output and status. */
static ran run(const char *command) {
  ran r;
  memset(&r, 0, sizeof r);
  char full[4096];
  snprintf(full, sizeof full, "(%s) 2>&1", command);
  double t0 = now_s();
  FILE *f = popen(full, "r");
  cr_assert(f, "popen failed");
  size_t n = fread(r.out, 1, sizeof r.out - 1, f);
  r.out[n] = '\0';
  int st = pclose(f);
  r.seconds = now_s() - t0;
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

Test(rank_launcher, every_rank_gets_its_rank_device_and_the_shared_id_file) {
  ran r = run(LAUNCH " -n 3 --devices 2,0,1 -- sh -c "
                     "'echo \"r=$CREC_RANK n=$CREC_WORLD_SIZE local=$CREC_LOCAL_RANK dev=$CREC_DEVICE "
                     "nvls=$NCCL_NVLS_ENABLE id=$CREC_NCCL_ID_FILE run=$CREC_RUN_DIR comm=${NCCL_COMM_ID-unset}\"; "
                     "test -d \"$CREC_RUN_DIR\" || echo NO_RUN_DIR'");
  cr_assert_eq(r.status, 0, "%s", r.out);
  static const char *const want[] = {"[rank 0] r=0 n=3 local=0 dev=2 nvls=0 id=", "[rank 1] r=1 n=3 local=1 dev=0 nvls=0 id=",
                                     "[rank 2] r=2 n=3 local=2 dev=1 nvls=0 id="};
  for (int i = 0; i < 3; i++) cr_assert(strstr(r.out, want[i]), "no '%s' in:\n%s", want[i], r.out);
  cr_assert(strstr(r.out, "comm=unset"), "%s", r.out);
  cr_assert(!strstr(r.out, "NO_RUN_DIR"), "%s", r.out);
  /* one id file and one run directory for all ranks, inside the run directory */
  const char *id = strstr(r.out, "id=");
  const char *run_dir = strstr(r.out, "run=");
  cr_assert(id && run_dir);
  char idpath[512], dir[512];
  cr_assert_eq(sscanf(id, "id=%511s", idpath), 1);
  cr_assert_eq(sscanf(run_dir, "run=%511s", dir), 1);
  cr_assert(strncmp(idpath, dir, strlen(dir)) == 0, "the id file %s is outside the run directory %s", idpath, dir);
  for (const char *p = r.out; (p = strstr(p, "id=")) != NULL; p++) cr_assert(strncmp(p + 3, idpath, strlen(idpath)) == 0);
  cr_assert_neq(access(dir, F_OK), 0, "the run directory %s outlived the run", dir);
}

Test(rank_launcher, comm_id_hands_nccl_its_address_instead_of_a_file) {
  ran r = run(LAUNCH " -n 2 --comm-id 10.0.0.7:29500 -- sh -c 'echo \"comm=$NCCL_COMM_ID file=${CREC_NCCL_ID_FILE-none}\"'");
  cr_assert_eq(r.status, 0, "%s", r.out);
  cr_assert(strstr(r.out, "[rank 0] comm=10.0.0.7:29500 file=none"), "%s", r.out);
  cr_assert(strstr(r.out, "[rank 1] comm=10.0.0.7:29500 file=none"), "%s", r.out);
}

Test(rank_launcher, a_failing_rank_stops_the_others_and_gives_its_status) {
  ran r = run(LAUNCH " -n 4 -- sh -c 'if [ $CREC_RANK = 2 ]; then sleep 0.5; echo giving up; exit 7; fi; sleep 60'");
  cr_assert_eq(r.status, 7, "%s", r.out);
  cr_assert(r.seconds < 10, "the others ran on for %.1f s", r.seconds);
  cr_assert(strstr(r.out, "[rank 2] giving up"), "%s", r.out);
  cr_assert(strstr(r.out, "crec-launch: rank 2 ("), "%s", r.out);
  cr_assert(strstr(r.out, "exited with status 7; stopping the other ranks"), "%s", r.out);
}

Test(rank_launcher, a_crashing_rank_is_named_with_its_signal) {
  ran r = run(LAUNCH " -n 2 -- sh -c 'if [ $CREC_RANK = 1 ]; then kill -SEGV $$; fi; sleep 60'");
  cr_assert_eq(r.status, 128 + 11, "%s", r.out);
  cr_assert(strstr(r.out, "exited with status 139 (signal 11)"), "%s", r.out);
  cr_assert(r.seconds < 10, "%.1f s", r.seconds);
}

Test(rank_launcher, the_timeout_stops_every_rank) {
  ran r = run(LAUNCH " -n 2 --timeout 1 -- sh -c 'echo \"deadline=$CREC_DEADLINE\"; sleep 60'");
  cr_assert_eq(r.status, 124, "%s", r.out);
  cr_assert(r.seconds >= 0.9 && r.seconds < 8, "%.1f s", r.seconds);
  cr_assert(strstr(r.out, "timed out after 1s with rank(s) 0 1 still running"), "%s", r.out);
  long deadline = 0;
  const char *d = strstr(r.out, "deadline=");
  cr_assert(d && sscanf(d, "deadline=%ld", &deadline) == 1 && deadline > 1700000000, "%s", r.out);
}

Test(rank_launcher, a_rank_that_ignores_sigterm_is_killed) {
  ran r = run(LAUNCH " -n 2 -- sh -c 'trap \"\" TERM; if [ $CREC_RANK = 0 ]; then sleep 0.3; exit 1; fi; "
                     "while :; do sleep 0.1; done'");
  cr_assert_eq(r.status, 1, "%s", r.out);
  cr_assert(strstr(r.out, "rank 1 ("), "%s", r.out);
  cr_assert(strstr(r.out, "ignored SIGTERM for 5 s; killing it"), "%s", r.out);
  cr_assert(r.seconds < 15, "%.1f s", r.seconds);
}

Test(rank_launcher, sigterm_to_the_launcher_stops_the_ranks) {
  char pids[64];
  snprintf(pids, sizeof pids, "/tmp/crec-launch-test-%d", (int)getpid());
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           LAUNCH " -n 2 -- sh -c 'echo $$ >> %s; sleep 60' & l=$!; sleep 1; kill -TERM $l; wait $l; echo \"launcher=$?\"",
           pids);
  ran r = run(cmd);
  cr_assert(strstr(r.out, "launcher=143"), "%s", r.out);
  cr_assert(strstr(r.out, "got SIGTERM; stopping every rank"), "%s", r.out);
  FILE *f = fopen(pids, "r");
  cr_assert(f, "the ranks never started");
  int pid, n = 0;
  while (fscanf(f, "%d", &pid) == 1) {
    n++;
    cr_assert(kill(pid, 0) != 0, "rank process %d still runs", pid);
  }
  fclose(f);
  unlink(pids);
  cr_assert_eq(n, 2);
}

Test(rank_launcher, usage_errors_exit_2) {
  static const char *const bad[] = {" -n 0 true", " -n x true", " --timeout -3 true", " --devices 0 -n 2 true",
                                     " --devices 0,a -n 2 true", " --comm-id nowhere true", " -n 2", " --what true"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, LAUNCH "%s", bad[i]);
    ran r = run(cmd);
    cr_assert_eq(r.status, 2, "'%s' gave %d:\n%s", bad[i], r.status, r.out);
    cr_assert(strstr(r.out, "crec-launch"), "'%s' explains nothing:\n%s", bad[i], r.out);
  }
  ran h = run(LAUNCH " --help");
  cr_assert_eq(h.status, 0);
  cr_assert(strstr(h.out, "--timeout SECONDS"), "%s", h.out);
}

Test(rank_launcher, the_multi_gpu_tests_share_the_nccl_id_and_skip_without_a_device) {
  if (crec_device_available()) cr_skip_test("a CUDA device is present: tools/multi-gpu-check.sh runs these for real");
  ran r = run(LAUNCH " -n 3 --timeout 120 -- " CREC_MULTI_TESTS);
  cr_assert_eq(r.status, 0, "%s", r.out);
  if (strstr(r.out, "NCCL is missing")) cr_skip_test("NCCL is missing here:\n%s", r.out);
  /* the three ranks found one id through the launcher's file */
  char hashes[3][32];
  for (int i = 0; i < 3; i++) {
    char tag[64];
    snprintf(tag, sizeof tag, "[rank %d] NCCL unique id shared, hash ", i);
    const char *h = strstr(r.out, tag);
    cr_assert(h, "rank %d shared no id:\n%s", i, r.out);
    cr_assert_eq(sscanf(h + strlen(tag), "%31s", hashes[i]), 1);
  }
  cr_assert_str_eq(hashes[0], hashes[1], "%s", r.out);
  cr_assert_str_eq(hashes[0], hashes[2], "%s", r.out);
  cr_assert(strstr(r.out, "[rank 2] skip collectives_match_eager_over_rotated_replays: no CUDA device"), "%s", r.out);
  cr_assert(!strstr(r.out, "FAIL"), "%s", r.out);
}
