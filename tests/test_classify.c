/* CPU suite for the classifier of captured parameter bytes (record/classify.c,
 * compiled into this suite): parameter blocks as three captures of the same
 * work would hold them, the arguments displaced by multiples of 2 MiB, and
 * what an import must make of each word. The byte patterns are the kinds real
 * captures of PyTorch models hold (capture.h): pointers at 8- and 4-byte
 * offsets, padding and empty functors that differ from capture to capture,
 * pointers into memory the work allocated, values derived from pointers. */
#include <stdlib.h>
#include <string.h>

#include "classify.h"
#include "common.h"

#define MIB2 ((uint64_t)2 << 20)

/* Two arguments, x (4 KiB) and y (64 KiB), in three captures. */
static const uint64_t x0 = 0x7f0000200000, y0 = 0x7f0000a00000;
static uint64_t bases[3][2] = {{0x7f0000200000, 0x7f0000a00000},
                               {0x7f0000200000 + 6 * MIB2, 0x7f0000a00000 + 20 * MIB2},
                               {0x7f0000200000 + 11 * MIB2, 0x7f0000a00000 + 3 * MIB2}};
static const uint64_t sizes[2] = {4096, 65536};

/* Device memory outside the arguments: the pool of a framework, in each capture. */
static bool pool(void *user, uint64_t addr) {
  (void)user;
  return addr >= 0x7f1000000000 && addr < 0x7f2000000000;
}

static crec__classify_in classifier(int captures) {
  crec__classify_in in = {.captures = captures, .num_args = 2, .size = sizes, .is_device = pool};
  for (int k = 0; k < 3; k++) in.base[k] = bases[k];
  in.granule = crec__classify_granule(&in);
  return in;
}

typedef struct found {
  crec__finding f[64];
  size_t n;
} found;

static void keep(void *user, const crec__finding *f) {
  found *fs = user;
  cr_assert_lt(fs->n, 64);
  fs->f[fs->n++] = *f;
}

/* The blocks of three captures, `size` bytes each, zeroed. */
typedef struct blocks {
  uint8_t b[3][256];
} blocks;

static void put(blocks *bl, int k, size_t at, const void *v, size_t n) { memcpy(bl->b[k] + at, v, n); }
static void put64(blocks *bl, int k, size_t at, uint64_t v) { put(bl, k, at, &v, 8); }
static void put32(blocks *bl, int k, size_t at, uint32_t v) { put(bl, k, at, &v, 4); }

static found classify(const crec__classify_in *in, blocks *bl, size_t lo, size_t hi) {
  found fs;
  memset(&fs, 0, sizeof fs);
  const uint8_t *const b[3] = {bl->b[0], bl->b[1], bl->b[2]};
  crec__classify_span(in, b, lo, hi, keep, &fs);
  return fs;
}

Test(classify, displacements_of_2_mib_give_a_granule_of_2_mib) {
  crec__classify_in in = classifier(3);
  cr_expect_eq(in.granule, MIB2, "granule 0x%llx", (unsigned long long)in.granule);
  in = classifier(1);
  cr_expect_eq(in.granule, 0, "one capture has no displacement");
}

Test(classify, a_pointer_that_moves_with_its_argument_is_a_relocation_interior_offset_kept) {
  crec__classify_in in = classifier(3);
  blocks bl;
  memset(&bl, 0, sizeof bl);
  for (int k = 0; k < 3; k++) {
    put64(&bl, k, 0, bases[k][1] + 256); /* y + 256 */
    put64(&bl, k, 8, bases[k][0] + 4096); /* one past x's end */
    put32(&bl, k, 16, 1024);             /* n */
  }
  found fs = classify(&in, &bl, 0, 24);
  cr_assert_eq(fs.n, 2, "%zu findings", fs.n);
  cr_expect(fs.f[0].kind == CREC__FOUND_RELOC && fs.f[0].offset == 0 && fs.f[0].arg == 1 && fs.f[0].delta == 256);
  cr_expect(fs.f[1].kind == CREC__FOUND_RELOC && fs.f[1].offset == 8 && fs.f[1].arg == 0 && fs.f[1].delta == 4096,
            "an end pointer is x's");
}

/* cuDNN's nchwToNhwcKernel: a float next to a pointer, the pointer at byte 4
 * of an 8-byte word, so aligned 8-byte reads see halves of it. */
Test(classify, a_pointer_at_a_4_byte_offset_is_found) {
  crec__classify_in in = classifier(3);
  blocks bl;
  memset(&bl, 0, sizeof bl);
  float one = 1.0f;
  for (int k = 0; k < 3; k++) {
    put(&bl, k, 52, &one, 4);
    put64(&bl, k, 56 + 4, bases[k][0] + 64); /* at byte 60 */
    put(&bl, k, 68, &one, 4);
  }
  found fs = classify(&in, &bl, 48, 72);
  cr_assert_eq(fs.n, 1, "%zu findings", fs.n);
  cr_expect_eq(fs.f[0].kind, CREC__FOUND_RELOC);
  cr_expect_eq(fs.f[0].offset, 60);
  cr_expect_eq(fs.f[0].delta, 64);
}

/* What PyTorch's captures hold and torch.cuda.graph replays as they are: a
 * host heap address in an arange functor (parameter 1, byte 16: 0x31361640 and
 * 0x3136b8d0 in the report), padding, and the 1-byte empty functor of
 * direct_copy_kernel_cuda. */
Test(classify, padding_empty_functors_and_host_addresses_are_noise) {
  crec__classify_in in = classifier(3);
  blocks bl;
  memset(&bl, 0, sizeof bl);
  const uint32_t heap[3] = {0x31361640, 0x3136b8d0, 0x31370a10};
  const uint8_t functor[3] = {0x00, 0x7f, 0x3c};
  for (int k = 0; k < 3; k++) {
    put32(&bl, k, 16, heap[k]);
    put32(&bl, k, 20, 0x00005566u + (uint32_t)k); /* the address's high half: nearly constant */
    put(&bl, k, 33, &functor[k], 1);
  }
  found fs = classify(&in, &bl, 0, 32);
  cr_assert_eq(fs.n, 2, "%zu findings", fs.n);
  for (size_t i = 0; i < fs.n; i++) cr_expect_eq(fs.f[i].kind, CREC__FOUND_NOISE, "finding %zu", i);
  cr_expect(fs.f[0].offset == 16 && fs.f[0].size == 4);
  fs = classify(&in, &bl, 33, 34); /* a 1-byte parameter */
  cr_assert_eq(fs.n, 1, "%zu findings", fs.n);
  cr_expect(fs.f[0].kind == CREC__FOUND_NOISE && fs.f[0].offset == 33 && fs.f[0].size == 1,
            "the functor's byte: %u at %u", fs.f[0].size, fs.f[0].offset);
}

Test(classify, a_pointer_into_memory_the_work_allocated_stays_as_captured) {
  crec__classify_in in = classifier(3);
  blocks bl;
  memset(&bl, 0, sizeof bl);
  const uint64_t ws[3] = {0x7f1000000000, 0x7f1000400000, 0x7f1000a00000}; /* moves by 2 MiB steps, like arguments */
  for (int k = 0; k < 3; k++) put64(&bl, k, 8, ws[k]);
  found fs = classify(&in, &bl, 0, 16);
  cr_assert_eq(fs.n, 1, "%zu findings", fs.n);
  cr_expect_eq(fs.f[0].kind, CREC__FOUND_OWN, "a pool pointer is the work's own, not a correlated value");
  in.is_device = NULL;
  fs = classify(&in, &bl, 0, 16);
  cr_assert_geq(fs.n, 1);
  cr_expect_eq(fs.f[0].kind, CREC__FOUND_NOISE, "unknown to the driver, it moves, but with no argument");
}

Test(classify, a_pointer_shifted_or_a_difference_of_pointers_is_correlated_with_its_arguments) {
  crec__classify_in in = classifier(3);
  blocks bl;
  memset(&bl, 0, sizeof bl);
  for (int k = 0; k < 3; k++) {
    put64(&bl, k, 0, bases[k][0] >> 4);          /* x, in 16-byte units */
    put64(&bl, k, 8, bases[k][1] - bases[k][0]); /* y - x */
  }
  found fs = classify(&in, &bl, 0, 16);
  /* x >> 4: its low half moves; y - x: its low half moves, attributed to both
   * (its high half, 0 then 0xffffffff where y - x turns negative, is noise) */
  size_t x = 0, y = 0, unexplained = 0;
  for (size_t i = 0; i < fs.n; i++) {
    cr_expect(fs.f[i].kind == CREC__FOUND_CORRELATED || (fs.f[i].kind == CREC__FOUND_NOISE && fs.f[i].offset == 12),
              "finding %zu at %u", i, fs.f[i].offset);
    if (fs.f[i].kind != CREC__FOUND_CORRELATED) continue;
    if (fs.f[i].arg == 0) x++;
    else if (fs.f[i].arg == 1) y++;
    else unexplained++;
  }
  /* x >> 4 follows x; y - x follows both */
  cr_expect(x == 2 && y == 1 && !unexplained, "x %zu, y %zu, unexplained %zu", x, y, unexplained);
}

/* A value that moves in round steps but follows no argument's displacement is
 * noise: padding above a small field keeps its low bytes and changes its high
 * ones, as t_padded's `h` and the bytes after it do in the GPU suite. */
Test(classify, round_steps_no_argument_explains_are_noise) {
  crec__classify_in in = classifier(3);
  blocks bl;
  memset(&bl, 0, sizeof bl);
  const uint32_t v[3] = {0x10000000, 0x10003000, 0x1000f000};
  const uint32_t padded[3] = {0x5a5a0005, 0x7f7f0005, 0xa4a40005};
  for (int k = 0; k < 3; k++) put32(&bl, k, 4, v[k]), put32(&bl, k, 8, padded[k]);
  found fs = classify(&in, &bl, 0, 12);
  cr_assert_eq(fs.n, 2);
  cr_expect_eq(fs.f[0].kind, CREC__FOUND_NOISE);
  cr_expect(fs.f[1].kind == CREC__FOUND_NOISE && fs.f[1].offset == 8, "kind %d at %u", fs.f[1].kind, fs.f[1].offset);
}

/* A number that happens to fall inside an argument, the same in every capture,
 * is a constant; a stale copy of a pointer that does not move with it is noise. */
Test(classify, numbers_inside_an_argument_that_do_not_move_are_not_relocations) {
  crec__classify_in in = classifier(3);
  blocks bl;
  memset(&bl, 0, sizeof bl);
  for (int k = 0; k < 3; k++) put64(&bl, k, 0, x0 + 128);
  found fs = classify(&in, &bl, 0, 8);
  cr_expect_eq(fs.n, 0, "a constant: %zu findings", fs.n);
  put64(&bl, 1, 0, 0x5612345678);
  put64(&bl, 2, 0, 0x5612349998);
  fs = classify(&in, &bl, 0, 8);
  for (size_t i = 0; i < fs.n; i++) cr_expect_eq(fs.f[i].kind, CREC__FOUND_NOISE, "finding %zu", i);
  put64(&bl, 1, 0, x0 + 128 + 0x7000);
  put64(&bl, 2, 0, x0 + 128 + 0x1000);
  fs = classify(&in, &bl, 0, 8);
  cr_assert_geq(fs.n, 1);
  for (size_t i = 0; i < fs.n; i++) cr_expect_eq(fs.f[i].kind, CREC__FOUND_NOISE, "round steps, but not x's");
}

/* With two captures a relocation needs the one displacement; a word that
 * moves by it in the second capture and not in the third is no relocation. */
Test(classify, a_relocation_must_move_in_every_capture) {
  crec__classify_in in = classifier(3);
  blocks bl;
  memset(&bl, 0, sizeof bl);
  put64(&bl, 0, 0, y0 + 8);
  put64(&bl, 1, 0, bases[1][1] + 8);
  put64(&bl, 2, 0, bases[2][1] + 16);
  found fs = classify(&in, &bl, 0, 8);
  for (size_t i = 0; i < fs.n; i++) cr_expect_neq(fs.f[i].kind, CREC__FOUND_RELOC, "finding %zu", i);
  in.captures = 2;
  fs = classify(&in, &bl, 0, 8);
  cr_assert_eq(fs.n, 1);
  cr_expect_eq(fs.f[0].kind, CREC__FOUND_RELOC, "two captures agree");
}

Test(classify, with_one_capture_every_word_inside_an_argument_is_a_pointer) {
  crec__classify_in in = classifier(1);
  blocks bl;
  memset(&bl, 0, sizeof bl);
  put64(&bl, 0, 0, y0 + 100);
  put64(&bl, 0, 8, 12345);
  found fs = classify(&in, &bl, 0, 16);
  cr_assert_eq(fs.n, 1);
  cr_expect(fs.f[0].kind == CREC__FOUND_RELOC && fs.f[0].arg == 1 && fs.f[0].delta == 100);
}

Test(classify, a_span_that_does_not_start_aligned_reads_its_ends_bytewise) {
  crec__classify_in in = classifier(3);
  blocks bl;
  memset(&bl, 0, sizeof bl);
  for (int k = 0; k < 3; k++) {
    bl.b[k][1] = (uint8_t)(k * 17); /* inside the unaligned head */
    put64(&bl, k, 4, bases[k][0]);
    bl.b[k][13] = (uint8_t)(k + 1); /* inside the tail */
  }
  found fs = classify(&in, &bl, 1, 14);
  cr_assert_eq(fs.n, 3, "%zu findings", fs.n);
  cr_expect(fs.f[0].kind == CREC__FOUND_RELOC && fs.f[0].offset == 4);
  cr_expect(fs.f[1].kind == CREC__FOUND_NOISE && fs.f[1].offset == 1 && fs.f[1].size == 3, "head at %u, %u bytes",
            fs.f[1].offset, fs.f[1].size);
  cr_expect(fs.f[2].kind == CREC__FOUND_NOISE && fs.f[2].offset == 12 && fs.f[2].size == 2, "tail at %u, %u bytes",
            fs.f[2].offset, fs.f[2].size);
}

Test(classify, a_copys_address_is_classified_like_a_word) {
  crec__classify_in in = classifier(3);
  crec__finding f;
  uint64_t v[3] = {y0 + 512, bases[1][1] + 512, bases[2][1] + 512};
  cr_assert(crec__classify_address(&in, v, &f));
  cr_expect(f.kind == CREC__FOUND_RELOC && f.arg == 1 && f.delta == 512);
  uint64_t same[3] = {0x7f1000000000, 0x7f1000000000, 0x7f1000000000};
  cr_expect_not(crec__classify_address(&in, same, &f), "a constant address");
  uint64_t own[3] = {0x7f1000000000, 0x7f1000800000, 0x7f1000200000};
  cr_assert(crec__classify_address(&in, own, &f));
  cr_expect_eq(f.kind, CREC__FOUND_OWN);
  uint64_t stray[3] = {x0, 0x7e0000000010, 0x7e0000000020};
  cr_assert(crec__classify_address(&in, stray, &f));
  cr_expect(f.kind == CREC__FOUND_CORRELATED && f.arg == 0, "into x in the first capture only: x is copied");
}

/* Random blocks: every relocation planted is found where it was put, and
 * nothing else is called one. */
Test(classify, planted_pointers_among_random_noise_are_found_exactly) {
  crec__classify_in in = classifier(3);
  srand(7);
  for (int round = 0; round < 200; round++) {
    blocks bl;
    for (int k = 0; k < 3; k++)
      for (size_t i = 0; i < sizeof bl.b[k]; i++) bl.b[k][i] = (uint8_t)rand();
    /* some bytes equal in every capture, as most parameters are */
    for (size_t i = 0; i < sizeof bl.b[0]; i += 3) bl.b[1][i] = bl.b[2][i] = bl.b[0][i];
    size_t at[4];
    for (int p = 0; p < 4; p++) {
      at[p] = (size_t)(p * 64 + 4 * (rand() % 14));
      for (int k = 0; k < 3; k++) put64(&bl, k, at[p], bases[k][p % 2] + (uint64_t)(p * 8));
    }
    found fs = classify(&in, &bl, 0, 256);
    size_t relocs = 0;
    for (size_t i = 0; i < fs.n; i++) {
      if (fs.f[i].kind != CREC__FOUND_RELOC) continue;
      cr_assert_eq(fs.f[i].offset, at[relocs], "round %d: relocation %zu at %u, planted at %zu", round, relocs,
                   fs.f[i].offset, at[relocs]);
      relocs++;
    }
    cr_assert_eq(relocs, 4, "round %d: %zu relocations", round, relocs);
  }
}
