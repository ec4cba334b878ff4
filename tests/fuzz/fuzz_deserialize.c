/* libFuzzer target for program files: each input is handed to
 * crec_program_deserialize() twice, as it is and with its header's body size
 * and checksum made to match (as a forger would), so that mutations reach the
 * section parser and the builders instead of stopping at the checksum. Beyond
 * what AddressSanitizer, UndefinedBehaviorSanitizer and LeakSanitizer catch,
 * it aborts (a finding) when deserialization breaks its contract: a program
 * with an error status, none with CREC_OK, a message that does not start with
 * "crec_program_deserialize: " (and, but for a lack of memory, name the byte),
 * crec objects left alive; or when a program it accepted does not dump, does
 * not serialize, or does not read back to the same bytes.
 *
 * Seeds: run with CREC_FUZZ_WRITE_SEEDS=DIR and MLIR files as arguments, it
 * lowers each (chip sm_90, images from CREC_FUZZ_BASE_DIR), writes the program
 * files of those that serialize into DIR, and exits; tests/fuzz/CMakeLists.txt
 * does that at build time. Build: -DCMAKE_C_COMPILER=clang-19 -DCREC_FUZZ=ON. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <crec/crec.h>
#include <crec/debug.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static void finding(const char *what, crec_status s) {
  fprintf(stderr, "fuzz_deserialize: %s (status %s: %s)\n", what, crec_status_name(s), crec_last_error());
  abort();
}

/* FNV-1a (64 bit), the format's checksum. */
static uint64_t fnv1a(const uint8_t *d, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ d[i]) * 1099511628211ull;
  return h;
}

static void put_le64(uint8_t *at, uint64_t v) {
  for (int i = 0; i < 8; i++) at[i] = (uint8_t)(v >> (8 * i));
}

/* A program that was read back: it dumps, and writes the same bytes each time it is read back. */
static void check_accepted(crec_program *p) {
  char *text = NULL;
  crec_status s = crec_dump(p, NULL, CREC_DUMP_TEXT, &text, NULL);
  /* a derived scalar without its host function is incomplete, and validation says so */
  if (s != CREC_OK && s != CREC_ERR_INVALID_PROGRAM) finding("an accepted program does not dump", s);
  crec_free(text);
  void *a = NULL, *b = NULL;
  size_t na = 0, nb = 0;
  if ((s = crec_program_serialize(p, &a, &na)) != CREC_OK) finding("an accepted program does not serialize", s);
  crec_program *q = NULL;
  if ((s = crec_program_deserialize(a, na, &q)) != CREC_OK) finding("a serialized program does not read back", s);
  if ((s = crec_program_serialize(q, &b, &nb)) != CREC_OK) finding("a program read back does not serialize", s);
  if (na != nb || memcmp(a, b, na) != 0) finding("written, read back and written again, the bytes differ", s);
  crec_free(a);
  crec_free(b);
  crec_program_destroy(q);
}

static void one(const uint8_t *data, size_t size) {
  static const char fn[] = "crec_program_deserialize: ";
  int64_t live = crec_debug_live_objects();
  crec_program *p = (crec_program *)&live; /* must be reset */
  crec_status s = crec_program_deserialize(data, size, &p);
  if (s == CREC_OK && !p) finding("CREC_OK without a program", s);
  if (s != CREC_OK && p) finding("a program returned with an error", s);
  if (s != CREC_OK && strncmp(crec_last_error(), fn, sizeof fn - 1) != 0)
    finding("the error message does not name crec_program_deserialize", s);
  if (s != CREC_OK && s != CREC_ERR_OUT_OF_MEMORY && strncmp(crec_last_error() + sizeof fn - 1, "at byte ", 8) != 0)
    finding("the error message does not say the byte", s);
  static int verbose = -1; /* CREC_FUZZ_VERBOSE=1: one line per input, for triage */
  if (verbose < 0) verbose = getenv("CREC_FUZZ_VERBOSE") != NULL;
  if (verbose) fprintf(stderr, "fuzz_deserialize: %s: %s\n", crec_status_name(s), s ? crec_last_error() : "read");
  if (s == CREC_OK) check_accepted(p);
  crec_program_destroy(p);
  if (crec_debug_live_objects() != live) finding("crec objects left alive", s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  one(data, size);
  if (size < 32) return 0;
  /* exactly `size` bytes, so that AddressSanitizer sees a read past them */
  uint8_t *forged = malloc(size);
  if (!forged) return 0;
  memcpy(forged, data, size);
  put_le64(forged + 16, size - 32);
  put_le64(forged + 24, fnv1a(forged + 32, size - 32));
  one(forged, size);
  free(forged);
  return 0;
}

/* CREC_FUZZ_WRITE_SEEDS=DIR: writes DIR/NAME.crecb for each MLIR file argument that serializes, then exits. */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  const char *dir = getenv("CREC_FUZZ_WRITE_SEEDS");
  if (!dir) return 0;
  int written = 0;
  for (int i = 1; i < *argc; i++) {
    const char *path = (*argv)[i];
    FILE *in = fopen(path, "rb");
    if (!in) {
      fprintf(stderr, "fuzz_deserialize: cannot read %s\n", path);
      exit(2);
    }
    char *text = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[4096];
    while ((n = fread(chunk, 1, sizeof chunk, in)) > 0) {
      if (len + n > cap && !(text = realloc(text, cap = 2 * (len + n)))) exit(2);
      memcpy(text + len, chunk, n);
      len += n;
    }
    fclose(in);
    crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
    o.chip = "sm_90";
    o.filename = path;
    o.base_dir = CREC_FUZZ_BASE_DIR;
    crec_program *p = NULL;
    crec_status s = crec_lower_mlir_string(text ? text : "", len, &o, &p);
    free(text);
    void *bytes = NULL;
    size_t size = 0;
    if (s == CREC_OK) s = crec_program_serialize(p, &bytes, &size);
    crec_program_destroy(p);
    if (s != CREC_OK) {
      /* host code is not written (serialize.h); anything else is worth knowing */
      if (s != CREC_ERR_UNSUPPORTED) fprintf(stderr, "fuzz_deserialize: %s: %s\n", path, crec_last_error());
      continue;
    }
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    char out[4096];
    snprintf(out, sizeof out, "%s/%s.crecb", dir, base);
    FILE *f = fopen(out, "wb");
    if (!f || fwrite(bytes, 1, size, f) != size || fclose(f) != 0) {
      fprintf(stderr, "fuzz_deserialize: cannot write %s\n", out);
      exit(2);
    }
    crec_free(bytes);
    written++;
  }
  fprintf(stderr, "fuzz_deserialize: %d seeds written to %s\n", written, dir);
  exit(0);
}
