/* Host allocation with fault injection, bump allocation, live-object accounting,
 * and growable text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static atomic_uint_fast64_t fault_at[2];   /* fire on this event number (0: disarmed) */
static atomic_uint_fast64_t fault_count[2];
static atomic_int_fast64_t live_objects;

/* Counting starts with the first crec_debug_fail_after() call, so a process that
 * never uses the test hooks pays one relaxed load per event, not an atomic add. */
static atomic_bool hooks_used;

void crec_debug_fail_after(crec_fault_kind kind, uint64_t n) {
  if ((unsigned)kind > CREC_FAULT_CUDA) return;
  atomic_store(&hooks_used, true);
  atomic_store(&fault_count[kind], 0);
  atomic_store(&fault_at[kind], n);
}

uint64_t crec_debug_count(crec_fault_kind kind) {
  if ((unsigned)kind > CREC_FAULT_CUDA) return 0;
  return atomic_load(&fault_count[kind]);
}

int64_t crec_debug_live_objects(void) { return atomic_load(&live_objects); }

void crec__live(int delta) { atomic_fetch_add(&live_objects, delta); }

bool crec__fault(crec_fault_kind kind) {
  if (!atomic_load_explicit(&hooks_used, memory_order_relaxed)) return false;
  uint64_t at = atomic_load_explicit(&fault_at[kind], memory_order_relaxed);
  uint64_t n = atomic_fetch_add(&fault_count[kind], 1) + 1;
  return at != 0 && n == at;
}

void *crec__malloc(size_t size) {
  if (crec__fault(CREC_FAULT_ALLOC)) return NULL;
  return malloc(size ? size : 1);
}

void *crec__calloc(size_t count, size_t size) {
  if (crec__fault(CREC_FAULT_ALLOC)) return NULL;
  if (count == 0 || size == 0) count = size = 1;
  return calloc(count, size);
}

void *crec__realloc(void *ptr, size_t size) {
  if (crec__fault(CREC_FAULT_ALLOC)) return NULL;
  return realloc(ptr, size ? size : 1);
}

void *crec__memdup(const void *data, size_t size) {
  void *p = crec__malloc(size);
  if (p && size) memcpy(p, data, size);
  return p;
}

char *crec__strdup(const char *s) { return crec__memdup(s, strlen(s) + 1); }

void *crec__slab(size_t n, const size_t *sizes, size_t *offsets) {
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    offsets[i] = total;
    size_t size = sizes[i] ? sizes[i] : 1;
    if (size > SIZE_MAX - total - 15) return NULL;
    total += (size + 15) & ~(size_t)15;
  }
  return crec__calloc(1, total);
}

void crec__free(void *ptr) { free(ptr); }

void crec_free(void *ptr) { free(ptr); }

crec_status crec__reserve(void **data, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return CREC_OK;
  size_t ncap = *cap ? *cap : 8;
  while (ncap < need) ncap *= 2;
  if (ncap > SIZE_MAX / elem) return CREC_ERR_OUT_OF_MEMORY;
  void *p = crec__realloc(*data, ncap * elem);
  if (!p) return CREC_ERR_OUT_OF_MEMORY;
  *data = p;
  *cap = ncap;
  return CREC_OK;
}

void crec__text_putn(crec__text *t, const char *s, size_t n) {
  if (t->failed) return;
  if (CREC__RESERVE(t->data, t->cap, t->len + n + 1) != CREC_OK) {
    t->failed = true;
    return;
  }
  memcpy(t->data + t->len, s, n);
  t->len += n;
  t->data[t->len] = '\0';
}

void crec__text_puts(crec__text *t, const char *s) { crec__text_putn(t, s, strlen(s)); }

void crec__text_printf(crec__text *t, const char *fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    t->failed = true;
    return;
  }
  if ((size_t)n < sizeof small) {
    crec__text_putn(t, small, (size_t)n);
    return;
  }
  char *big = crec__malloc((size_t)n + 1);
  if (!big) {
    t->failed = true;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  crec__text_putn(t, big, (size_t)n);
  crec__free(big);
}

void crec__text_json_string(crec__text *t, const char *s) {
  crec__text_putn(t, "\"", 1);
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    switch (*c) {
      case '"': crec__text_putn(t, "\\\"", 2); break;
      case '\\': crec__text_putn(t, "\\\\", 2); break;
      case '\n': crec__text_putn(t, "\\n", 2); break;
      case '\r': crec__text_putn(t, "\\r", 2); break;
      case '\t': crec__text_putn(t, "\\t", 2); break;
      default:
        if (*c < 0x20) {
          crec__text_printf(t, "\\u%04x", *c);
        } else if (*c < 0x80) {
          crec__text_putn(t, (const char *)c, 1);
        } else {
          /* copy a well-formed UTF-8 sequence; anything else becomes U+FFFD */
          size_t n = *c >= 0xF0 && *c <= 0xF4 ? 4 : *c >= 0xE0 && *c <= 0xEF ? 3 : *c >= 0xC2 && *c <= 0xDF ? 2 : 0;
          size_t k = 1;
          while (n && k < n && (c[k] & 0xC0) == 0x80) k++;
          if (n && k == n) {
            crec__text_putn(t, (const char *)c, n);
            c += n - 1;
          } else {
            crec__text_puts(t, "\\ufffd");
          }
        }
    }
  }
  crec__text_putn(t, "\"", 1);
}

void crec__text_dot_string(crec__text *t, const char *s) {
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    switch (*c) {
      case '"': crec__text_putn(t, "\\\"", 2); break;
      case '\\': crec__text_putn(t, "\\\\", 2); break;
      case '\n': crec__text_putn(t, "\\n", 2); break;
      default:
        if (*c >= 0x20) crec__text_putn(t, (const char *)c, 1);
    }
  }
}

uint64_t crec__hash(const void *data, size_t size, uint64_t seed) {
  uint64_t h = seed ? seed : 1469598103934665603ull;
  const unsigned char *p = data;
  for (size_t i = 0; i < size; i++) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

/* ---- bump allocation ---- */

struct crec__chunk {
  struct crec__chunk *next;
  _Alignas(16) unsigned char data[];
};

void *crec__bump_alloc(crec__bump *b, size_t size) {
  size = (size + 15) & ~(size_t)15;
  if (!b->chunks || b->used + size > b->cap) {
    size_t cap = size > 65536 ? size : 65536;
    struct crec__chunk *c = crec__malloc(sizeof *c + cap);
    if (!c) return NULL;
    c->next = b->chunks;
    b->chunks = c;
    b->used = 0;
    b->cap = cap;
  }
  void *p = b->chunks->data + b->used;
  b->used += size;
  return p;
}

void crec__bump_free(crec__bump *b) {
  while (b->chunks) {
    struct crec__chunk *n = b->chunks->next;
    crec__free(b->chunks);
    b->chunks = n;
  }
  b->used = b->cap = 0;
}
