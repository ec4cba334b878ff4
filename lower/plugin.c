/* The plugin's side of lower/plugin.h: the one function libcrec-mlir exports.
 * It checks that libcrec is of the same build, keeps libcrec's table for every
 * call the front end makes into crec (lower/host_calls.h), and gives back the
 * front end's entry points. */
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

const crec__mlir_host *crec__lw_host;

static const crec__mlir_plugin entry_points = {
    .struct_size = sizeof(crec__mlir_plugin),
    .lower_mlir_file = crec__lw_lower_mlir_file,
    .lower_mlir_string = crec__lw_lower_mlir_string,
    .cache_get_stats = crec__lw_lower_cache_get_stats,
    .cache_clear = crec__lw_lower_cache_clear,
    .disk_cache_get_info = crec__lw_lower_disk_cache_get_info,
    .disk_cache_clear = crec__lw_lower_disk_cache_clear,
};

const crec__mlir_plugin *crec__mlir_plugin_open(const crec__mlir_host *host, char *reason, size_t reason_size) {
  /* the front end calls libcrec's internal functions and shares its internal
   * types: only a libcrec of the same version and interface will do */
  if (!host || host->struct_size != sizeof *host || host->abi != CREC__MLIR_PLUGIN_ABI ||
      !host->version || strcmp(host->version, CREC_VERSION_STRING) != 0) {
    snprintf(reason, reason_size, "it belongs to crec %s (plugin interface %d), and libcrec is crec %s (interface %d)",
             CREC_VERSION_STRING, CREC__MLIR_PLUGIN_ABI, host && host->version ? host->version : "?",
             host ? host->abi : 0);
    return NULL;
  }
  crec__lw_host = host;
  return &entry_points;
}
