/* libFuzzer target for the MLIR front end: each input is MLIR text, lowered by
 * crec_lower_mlir_string() as a user's would be. A returned program is
 * destroyed. Beyond what AddressSanitizer, UndefinedBehaviorSanitizer and
 * LeakSanitizer catch, it aborts (a finding) when the lowering breaks its own
 * contract: a program with an error status, none with CREC_OK, a message that
 * does not name the function, or crec objects left alive.
 * Lowering needs no GPU: the chip is given, so no device is probed, and kernels
 * compile to PTX only. Build: -DCMAKE_C_COMPILER=clang-19 -DCREC_FUZZ=ON
 * (README.md, "Fuzzing"). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <crec/crec.h>
#include <crec/debug.h>
#include <crec/lower.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Diagnostics go to the lowering's own error; printing each would only slow the run. */
static void quiet(void *user, const char *severity, const char *location, const char *message) {
  (void)user, (void)severity, (void)location, (void)message;
}

static void finding(const char *what, crec_status s) {
  fprintf(stderr, "fuzz_lower: %s (status %s: %s)\n", what, crec_status_name(s), crec_last_error());
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char fn[] = "crec_lower_mlir_string: ";
  /* millions of mutated programs: the persistent cache of lowered programs stays off */
  setenv("CREC_CACHE", "0", 1);
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  o.chip = "sm_90";
  o.filename = "fuzz.mlir";
  o.base_dir = CREC_FUZZ_BASE_DIR; /* where the seeds' crec.image files are staged */
  o.diagnostic = quiet;
  int64_t live = crec_debug_live_objects();
  crec_program *p = (crec_program *)&o; /* must be reset */
  crec_status s = crec_lower_mlir_string((const char *)data, size, &o, &p);
  if (s == CREC_OK && !p) finding("CREC_OK without a program", s);
  if (s != CREC_OK && p) finding("a program returned with an error", s);
  if (s != CREC_OK && strncmp(crec_last_error(), fn, sizeof fn - 1) != 0)
    finding("the error message does not name crec_lower_mlir_string", s);
  static int verbose = -1; /* CREC_FUZZ_VERBOSE=1: one line per input, for triage */
  if (verbose < 0) verbose = getenv("CREC_FUZZ_VERBOSE") != NULL;
  if (verbose) fprintf(stderr, "fuzz_lower: %s: %s\n", crec_status_name(s), s ? crec_last_error() : "lowered");
  crec_program_destroy(p);
  if (crec_debug_live_objects() != live) finding("crec objects left alive", s);
  /* the PTX cache would grow with every distinct gpu.module and make runs depend on history */
  crec_lower_cache_clear();
  return 0;
}
