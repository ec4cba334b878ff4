/* The classifier of captured parameter bytes (capture.h): pure C, no CUDA, no
 * allocation, so the CPU suite runs it over recorded word triples
 * (tests/test_classify.c compiles classify.c in).
 *
 * The same work is captured up to three times, its arguments at other
 * addresses in each capture (displaced by multiples of 2 MiB, which keeps
 * every address's alignment). Each 8-byte word at every 4-byte offset of a
 * span (one kernel parameter, or an `extra` buffer) is read in every capture:
 *   - a relocation points into an argument (or one past its end) in the first
 *     capture and moves by exactly that argument's displacement in the others;
 *   - a word that points to device memory outside every argument in every
 *     capture is memory the work allocated for itself: the first stays;
 * then each 4-byte value not covered by those (and each byte of a span's
 * unaligned ends) is compared across the captures:
 *   - equal: a constant;
 *   - changed, in every capture, by what an argument's displacement gives
 *     shifted right by up to 9 bits (or negated), or by the difference of two
 *     arguments' displacements: correlated with those arguments' addresses in
 *     a way no relocation rewrites (a pointer shifted or encoded, a difference
 *     of pointers), and their uses go through a copy;
 *   - changed otherwise: noise (padding, an empty functor, a host address),
 *     replayed as in the first capture, as torch.cuda.graph replays it. A
 *     change by round steps alone is noise too: padding above a constant field
 *     keeps its low bits and changes its high ones, as a moved address does. */
#ifndef CREC_CLASSIFY_H
#define CREC_CLASSIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CREC__CAPTURES 3

/* What the classifier knows of the captures. */
typedef struct crec__classify_in {
  int captures;                        /* 1 to CREC__CAPTURES */
  size_t num_args;
  const uint64_t *base[CREC__CAPTURES]; /* per capture (those given), per argument: its address */
  const uint64_t *size;                /* per argument: its bytes */
  uint64_t granule;                    /* crec__classify_granule() of the bases */
  /* whether `addr` is device memory the driver knows (NULL: none is) */
  bool (*is_device)(void *user, uint64_t addr);
  void *user;
} crec__classify_in;

typedef enum crec__found {
  CREC__FOUND_RELOC,      /* `arg`, `delta`: an 8-byte pointer at `offset` */
  CREC__FOUND_OWN,        /* 8 bytes of device memory the work allocated: the first capture's stays */
  CREC__FOUND_NOISE,      /* `size` bytes that change for no reason an argument explains */
  CREC__FOUND_CORRELATED, /* `size` bytes that move with argument `arg`; reported once per argument */
} crec__found;

typedef struct crec__finding {
  crec__found kind;
  uint32_t offset; /* in the block */
  uint32_t size;
  uint32_t arg;
  uint64_t delta;
  uint64_t value[CREC__CAPTURES]; /* as each capture had it (little-endian, `size` bytes) */
} crec__finding;

typedef void (*crec__finding_fn)(void *user, const crec__finding *f);

/* The alignment every displacement keeps: the largest power of two dividing
 * every argument's displacement in every later capture (up to 2^40), or 0
 * with one capture. */
uint64_t crec__classify_granule(const crec__classify_in *in);

/* The argument whose range holds `addr` in capture `k`, or -1; one past an
 * argument's end counts as that argument's when no argument holds it. */
long crec__classify_find_arg(const crec__classify_in *in, uint64_t addr, int k);

/* Classifies bytes [lo, hi) of the blocks (one per capture, the same layout),
 * calling `emit` for each finding but constants, in order of offset. */
void crec__classify_span(const crec__classify_in *in, const uint8_t *const blocks[CREC__CAPTURES], size_t lo,
                         size_t hi, crec__finding_fn emit, void *user);

/* One address (a copy's or fill's end), `v[k]` in capture k: a relocation,
 * memory the work owns, an address inside an argument that does not move with
 * it (CREC__FOUND_CORRELATED: that argument), or noise; false for a constant. */
bool crec__classify_address(const crec__classify_in *in, const uint64_t v[CREC__CAPTURES], crec__finding *out);

#endif
