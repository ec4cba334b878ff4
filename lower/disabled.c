/* The MLIR front end when crec is configured with CREC_WITH_MLIR=OFF: every
 * entry point says so. */
#include "internal.h"

static crec_status disabled(const char *fn) {
  return crec__error(CREC_ERR_UNSUPPORTED, fn, "crec was built without MLIR (CREC_WITH_MLIR=OFF)");
}

crec_status crec_lower_mlir_file(const char *path, const crec_lower_options *options, crec_program **out) {
  (void)path;
  (void)options;
  if (out) *out = NULL;
  return disabled("crec_lower_mlir_file");
}

crec_status crec_lower_mlir_string(const char *text, size_t length, const crec_lower_options *options,
                                   crec_program **out) {
  (void)text;
  (void)length;
  (void)options;
  if (out) *out = NULL;
  return disabled("crec_lower_mlir_string");
}

crec_status crec_lower_cache_get_stats(crec_lower_cache_stats *out) {
  (void)out;
  return disabled("crec_lower_cache_get_stats");
}

void crec_lower_cache_clear(void) {}

crec_status crec_lower_disk_cache_get_info(crec_lower_disk_cache_info *out) {
  (void)out;
  return disabled("crec_lower_disk_cache_get_info");
}

crec_status crec_lower_disk_cache_clear(uint64_t *removed) {
  if (removed) *removed = 0;
  return disabled("crec_lower_disk_cache_clear");
}
