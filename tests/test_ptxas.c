/* Every kernel that the project's MLIR programs (tests/mlir) lower to is PTX
 * that the CUDA toolkit's assembler takes for the chip it names, so a PTX
 * version too old for an instruction (TMA copies need PTX 8.0) or malformed
 * inline PTX fails here, on a machine without a GPU, rather than in the
 * driver's JIT at the first record. Skips, saying why, without ptxas. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

TestSuite(ptxas, .init = crec_test_require_mlir);

/* The chip of a PTX module's `.target` line ("sm_90a"), or "" when it has none. */
static void target_of(const char *ptx, char *chip, size_t size) {
  chip[0] = '\0';
  const char *t = strstr(ptx, "\n.target ");
  if (!t) return;
  t += 9;
  size_t n = 0;
  while (t[n] && t[n] != '\n' && t[n] != ',' && t[n] != ' ' && n + 1 < size) n++;
  memcpy(chip, t, n);
  chip[n] = '\0';
}

/* Assembles `ptx` for its target with ptxas; returns its exit status, and what
 * it printed in `log`. */
static int assemble(const char *ptx, size_t size, char *log, size_t log_size) {
  char chip[32], path[] = "/tmp/crec_ptxas_XXXXXX";
  target_of(ptx, chip, sizeof chip);
  cr_assert(chip[0], "the PTX names no target:\n%.300s", ptx);
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, ptx, size), (ssize_t)size);
  close(fd);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "'%s' -arch=%s -o /dev/null '%s' 2>&1", CREC_TEST_PTXAS, chip, path);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  size_t n = fread(log, 1, log_size - 1, p);
  log[n] = '\0';
  int status = pclose(p);
  unlink(path);
  return status;
}

/* Assembles each PTX module of one lowered program; counts them in *user. */
static void assemble_modules(const char *name, const char *path, crec_program *p, void *user) {
  (void)path;
  for (size_t i = 0; i < crec_program_module_count(p); i++) {
    crec_module_info m;
    EXPECT_OK(crec_module_get_info(p, crec_program_module(p, i), &m));
    if (m.format != CREC_IMAGE_PTX) continue;
    char log[2048];
    int status = assemble(m.image, m.size, log, sizeof log);
    cr_assert_eq(status, 0, "%s: module '%s' does not assemble:\n%s", name, m.name, log);
    (*(size_t *)user)++;
  }
}

Test(ptxas, every_kernel_of_the_projects_programs_assembles_for_sm_90) {
  if (access(CREC_TEST_PTXAS, X_OK) != 0) cr_skip_test("no CUDA toolkit assembler at %s", CREC_TEST_PTXAS);
  size_t modules = 0;
  size_t programs = crec_test_lower_each_file(crec_test_mlir_dir(), assemble_modules, &modules);
  cr_assert_geq(programs, 20, "only %zu programs in %s", programs, crec_test_mlir_dir());
  cr_assert_geq(modules, 20, "only %zu PTX modules", modules);
}
