/* Open-addressing name table: linear probing, grown at half load. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static size_t slot_of(const char *name, size_t cap) {
  return (size_t)crec__hash(name, strlen(name), 0) & (cap - 1);
}

uint32_t crec__names_find(const crec__names *t, const char *name, const void *owner,
                          crec__name_at name_at) {
  if (t->cap == 0) return CREC__NONE;
  for (size_t i = slot_of(name, t->cap);; i = (i + 1) & (t->cap - 1)) {
    uint32_t s = t->slots[i];
    if (s == 0) return CREC__NONE;
    if (strcmp(name_at(owner, s - 1), name) == 0) return s - 1;
  }
}

void crec__names_insert(crec__names *t, const char *name, uint32_t index) {
  size_t i = slot_of(name, t->cap);
  while (t->slots[i] != 0) i = (i + 1) & (t->cap - 1);
  t->slots[i] = index + 1;
  t->count++;
}

crec_status crec__names_reserve(crec__names *t, const void *owner, crec__name_at name_at) {
  if ((t->count + 1) * 2 <= t->cap) return CREC_OK;
  size_t ncap = t->cap ? t->cap * 2 : 16;
  uint32_t *slots = crec__calloc(ncap, sizeof *slots);
  if (!slots) return CREC_ERR_OUT_OF_MEMORY;
  crec__names grown = {slots, ncap, 0};
  for (size_t i = 0; i < t->cap; i++) {
    uint32_t s = t->slots[i];
    if (s) crec__names_insert(&grown, name_at(owner, s - 1), s - 1);
  }
  crec__free(t->slots);
  *t = grown;
  return CREC_OK;
}

void crec__names_free(crec__names *t) {
  CREC__FREE(t->slots);
  t->cap = t->count = 0;
}

const char *crec__command_label(const crec_program *p, size_t ci, char *buf, size_t size) {
  snprintf(buf, size, "command %zu ('%s')", ci, p->commands[ci].name);
  return buf;
}

crec_status crec__check_handle(const crec_program *p, uint32_t id, size_t count, const char *fn, const char *what,
                               const char *arg, ...) {
  if (crec__valid(p, id, count)) return CREC_OK;
  if (!arg) return crec__error(CREC_ERR_INVALID_HANDLE, fn, "handle 0x%08x is not a %s of this program", id, what);
  char name[256];
  va_list ap;
  va_start(ap, arg);
  vsnprintf(name, sizeof name, arg, ap);
  va_end(ap);
  return crec__error(CREC_ERR_INVALID_HANDLE, fn, "%s: handle 0x%08x is not a %s of this program", name, id, what);
}
