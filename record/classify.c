/* The classifier of captured parameter bytes (classify.h). */
#include "classify.h"

#include <string.h>

/* A displacement of argument `i` in capture `k` (k >= 1), as a signed distance. */
static int64_t displacement(const crec__classify_in *in, int k, size_t i) {
  return (int64_t)(in->base[k][i] - in->base[0][i]);
}

uint64_t crec__classify_granule(const crec__classify_in *in) {
  uint64_t g = (uint64_t)1 << 40;
  for (int k = 1; k < in->captures; k++)
    for (size_t i = 0; i < in->num_args; i++) {
      uint64_t d = in->base[k][i] - in->base[0][i];
      if (d) {
        uint64_t low = d & (~d + 1); /* its lowest set bit */
        if (low < g) g = low;
      }
    }
  return in->captures > 1 ? g : 0;
}

long crec__classify_find_arg(const crec__classify_in *in, uint64_t addr, int k) {
  long end = -1;
  for (size_t i = 0; i < in->num_args; i++) {
    uint64_t base = in->base[k][i];
    if (addr >= base && addr - base < in->size[i]) return (long)i;
    if (addr >= base && addr - base == in->size[i]) end = (long)i;
  }
  return end;
}

static uint64_t load(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  memcpy(&v, p, n); /* little-endian, as the GPU and the host read it */
  return v;
}

/* Whether `v` (one per capture) moves with argument `i` as a pointer `delta`
 * bytes into it does. */
static bool moves_with(const crec__classify_in *in, const uint64_t *v, size_t i, uint64_t delta) {
  for (int k = 1; k < in->captures; k++)
    if (v[k] != in->base[k][i] + delta) return false;
  return true;
}

static bool all_equal(const crec__classify_in *in, const uint64_t *v) {
  for (int k = 1; k < in->captures; k++)
    if (v[k] != v[0]) return false;
  return true;
}

static bool all_device(const crec__classify_in *in, const uint64_t *v) {
  if (!in->is_device) return false;
  for (int k = 0; k < in->captures; k++)
    if (crec__classify_find_arg(in, v[k], k) >= 0 || !in->is_device(in->user, v[k])) return false;
  return true;
}

/* The step below which a change counts as noise: a pointer shifted right by up
 * to 9 bits still moves by a multiple of it (4 KiB for displacements of 2 MiB);
 * never below 16, where allocators' own alignment would make noise look moved. */
static uint64_t step_of(const crec__classify_in *in) {
  uint64_t t = in->granule >> 9;
  if (t > 4096) t = 4096;
  return t < 16 ? 16 : t;
}

/* Whether 4-byte values `v` change in every later capture by a multiple of the
 * step, and in some by more than nothing. */
static bool correlated(const crec__classify_in *in, const uint64_t *v) {
  uint32_t t = (uint32_t)step_of(in);
  bool moved = false;
  for (int k = 1; k < in->captures; k++) {
    uint32_t d = (uint32_t)v[k] - (uint32_t)v[0];
    if (d % t) return false;
    moved |= d != 0;
  }
  return moved;
}

/* Whether each later capture's change `d[k]` equals `f(k)` truncated to 32 bits. */
typedef struct fit {
  const crec__classify_in *in;
  const uint32_t *d;
} fit;

static bool fits_shift(const fit *x, size_t i, int shift, bool negate) {
  for (int k = 1; k < x->in->captures; k++) {
    int64_t m = displacement(x->in, k, i) / ((int64_t)1 << shift);
    if ((uint32_t)(negate ? -m : m) != x->d[k]) return false;
  }
  return true;
}

static bool fits_pair(const fit *x, size_t i, size_t j) {
  for (int k = 1; k < x->in->captures; k++)
    if ((uint32_t)(displacement(x->in, k, i) - displacement(x->in, k, j)) != x->d[k]) return false;
  return true;
}

/* Reports the arguments whose displacements, shifted, negated or subtracted
 * from one another, give the changes of value `f` in every later capture, as
 * CREC__FOUND_CORRELATED; when none does, `f` is noise after all. A change in
 * round steps alone proves nothing: padding bytes above a constant field change
 * their high bits and keep their low ones, as a moved address does. */
static void attribute(const crec__classify_in *in, crec__finding *f, crec__finding_fn emit, void *user) {
  uint32_t d[CREC__CAPTURES] = {0};
  for (int k = 1; k < in->captures; k++) d[k] = (uint32_t)f->value[k] - (uint32_t)f->value[0];
  fit x = {in, d};
  bool any = false;
  for (size_t i = 0; i < in->num_args; i++) {
    bool hit = false;
    for (int s = 0; s <= 9 && !hit; s++) hit = fits_shift(&x, i, s, false) || fits_shift(&x, i, s, true);
    /* a difference of pointers follows both of them */
    for (size_t j = 0; j < in->num_args && !hit; j++) hit = j != i && (fits_pair(&x, i, j) || fits_pair(&x, j, i));
    if (hit) {
      f->kind = CREC__FOUND_CORRELATED;
      f->arg = (uint32_t)i;
      emit(user, f);
      any = true;
    }
  }
  if (!any) {
    f->kind = CREC__FOUND_NOISE;
    f->arg = 0;
    emit(user, f);
  }
}

/* Spans longer than this (CUDA's parameter limit is 32,764 bytes) are read up to it. */
#define SPAN_MAX 32768

static bool is_taken(const uint8_t *taken, size_t b) { return taken[b / 8] >> (b % 8) & 1; }

void crec__classify_span(const crec__classify_in *in, const uint8_t *const blocks[CREC__CAPTURES], size_t lo,
                         size_t hi, crec__finding_fn emit, void *user) {
  if (hi - lo > SPAN_MAX) hi = lo + SPAN_MAX;
  /* pass 1: pointers, at every 4-byte offset; the bytes they take are marked */
  uint8_t taken[SPAN_MAX / 8];
  memset(taken, 0, (hi - lo + 7) / 8);
  size_t first = (lo + 3) & ~(size_t)3;
  for (size_t o = first; o + 8 <= hi; o += 4) {
    if (is_taken(taken, o - lo)) continue; /* the second half of a word just taken */
    uint64_t v[CREC__CAPTURES] = {0};
    for (int k = 0; k < in->captures; k++) v[k] = load(blocks[k] + o, 8);
    crec__finding f = {.offset = (uint32_t)o, .size = 8};
    memcpy(f.value, v, sizeof v);
    long i = crec__classify_find_arg(in, v[0], 0);
    if (i >= 0 && moves_with(in, v, (size_t)i, v[0] - in->base[0][i])) {
      f.kind = CREC__FOUND_RELOC, f.arg = (uint32_t)i, f.delta = v[0] - in->base[0][i];
    } else if (in->captures > 1 && !all_equal(in, v) && all_device(in, v)) {
      f.kind = CREC__FOUND_OWN;
    } else {
      continue;
    }
    emit(user, &f);
    for (size_t b = o - lo; b < o - lo + 8; b++) taken[b / 8] |= (uint8_t)(1u << (b % 8));
  }
  if (in->captures < 2) return;
  /* pass 2: what is left, as 4-byte values (from `first`) and the span's unaligned ends */
  for (size_t o = lo; o < hi;) {
    size_t n = o < first ? first - o : 4;
    if (o + n > hi) n = hi - o;
    if (!is_taken(taken, o - lo)) {
      uint64_t v[CREC__CAPTURES] = {0};
      for (int k = 0; k < in->captures; k++) v[k] = load(blocks[k] + o, n);
      if (!all_equal(in, v)) {
        crec__finding f = {.kind = CREC__FOUND_NOISE, .offset = (uint32_t)o, .size = (uint32_t)n};
        memcpy(f.value, v, sizeof v);
        if (n == 4 && correlated(in, v)) attribute(in, &f, emit, user);
        else emit(user, &f);
      }
    }
    o += n;
  }
}

bool crec__classify_address(const crec__classify_in *in, const uint64_t v[CREC__CAPTURES], crec__finding *out) {
  memset(out, 0, sizeof *out);
  out->size = 8;
  memcpy(out->value, v, sizeof out->value);
  long i = crec__classify_find_arg(in, v[0], 0);
  if (i >= 0 && moves_with(in, v, (size_t)i, v[0] - in->base[0][i])) {
    out->kind = CREC__FOUND_RELOC, out->arg = (uint32_t)i, out->delta = v[0] - in->base[0][i];
    return true;
  }
  if (in->captures < 2 || all_equal(in, v)) return false;
  if (all_device(in, v)) {
    out->kind = CREC__FOUND_OWN;
    return true;
  }
  if (i >= 0) {
    /* a copy's end inside an argument that does not move with it: the copy
     * reaches the argument, and only a copy of the argument keeps that true */
    out->kind = CREC__FOUND_CORRELATED, out->arg = (uint32_t)i;
    return true;
  }
  out->kind = CREC__FOUND_NOISE;
  return true;
}
