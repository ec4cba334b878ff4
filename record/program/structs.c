/* Option and info structs that grow, NCCL's way: every one starts with its
 * struct_size. A caller compiled against an older header passes a smaller one:
 * the fields it knows are taken, the rest keep their defaults (inputs), or are
 * not written (outputs). Only a size below the struct's first version is
 * refused. */
#include <string.h>

#include "internal.h"

crec_status crec__take_struct(void *defaults, size_t size, const void *given, size_t oldest, const char *fn,
                              const char *arg, const char *init) {
  if (!given) return CREC_OK;
  size_t n;
  memcpy(&n, given, sizeof n);
  if (n < oldest)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: struct_size %zu is smaller than %zu (use %s)", arg, n,
                       oldest, init);
  size_t keep = size; /* the defaults' own struct_size stays: it says what the copy holds */
  memcpy(defaults, given, n < size ? n : size);
  memcpy(defaults, &keep, sizeof keep);
  return CREC_OK;
}

crec_status crec__give_struct(void *out, const void *value, size_t size, size_t oldest, const char *fn,
                              const char *arg, const char *init) {
  size_t n;
  memcpy(&n, out, sizeof n);
  if (n < oldest)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: struct_size %zu is smaller than %zu (use %s)", arg, n,
                       oldest, init);
  size_t written = n < size ? n : size;
  memcpy(out, value, written);
  memcpy(out, &written, sizeof written);
  return CREC_OK;
}
