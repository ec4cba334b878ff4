/// \file lower.h
/// The MLIR front end: turns an MLIR module (upstream func, gpu, scf, memref,
/// arith, index and linalg ops, plus a few crec.* ops in generic form) into a
/// crec_program. docs/mlir.md lists every accepted construct with an example.
///
/// Every error message carries the MLIR location as "file:line:col", the op
/// name and the reason. Lowering the same module twice gives identical programs;
/// kernels compiled from gpu.module bodies are cached in memory by module hash.
#ifndef CREC_LOWER_H
#define CREC_LOWER_H

#include "crec/program.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Receives each MLIR diagnostic: severity ("error", "warning", "note", "remark"),
/// location ("file:line:col", or "" when unknown) and message.
typedef void (*crec_diagnostic_fn)(void *user, const char *severity, const char *location,
                                   const char *message);

/// Options of the lowering.
typedef struct crec_lower_options {
  size_t struct_size;              ///< sizeof(crec_lower_options)
  const char *entry;               ///< entry function; NULL means "main"
  const char *chip;                ///< target chip ("sm_90"); NULL: the device's, else "sm_90"
  crec_diagnostic_fn diagnostic;   ///< optional diagnostics callback
  void *diagnostic_user;
  const char *filename;            ///< crec_lower_mlir_string(): name used in locations (NULL: "<string>")
  const char *base_dir;            ///< crec_lower_mlir_string(): where relative crec.image paths
                                   ///< are found (NULL: the current directory)
} crec_lower_options;
#define CREC_LOWER_OPTIONS_INIT {sizeof(crec_lower_options), NULL, NULL, NULL, NULL, NULL, NULL}

/// Lowers the MLIR file at `path` into a new program `*out` (owned by the caller).
/// `options` may be NULL for defaults.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_IO (unreadable file), CREC_ERR_MLIR (parse,
/// verify, unsupported op, bad operands), CREC_ERR_NOT_FOUND (entry or kernel),
/// CREC_ERR_UNSUPPORTED, CREC_ERR_OUT_OF_MEMORY, and any builder error (program.h).
crec_status crec_lower_mlir_file(const char *path, const crec_lower_options *options,
                                 crec_program **out);

/// Lowers `length` bytes of MLIR text into a new program `*out`. Errors: as crec_lower_mlir_file().
crec_status crec_lower_mlir_string(const char *text, size_t length,
                                   const crec_lower_options *options, crec_program **out);

/// Counters of the process-wide cache of PTX compiled from gpu.module bodies
/// (keyed by a hash of the module's text, the chip and the calling convention).
typedef struct crec_lower_cache_stats {
  size_t struct_size;     ///< sizeof(crec_lower_cache_stats)
  uint64_t compilations;  ///< gpu.module compilations run (cache misses) since the process started
  uint64_t hits;          ///< gpu.module compilations answered from the cache
  uint64_t entries;       ///< modules cached now
  uint64_t bytes;         ///< PTX bytes cached now
} crec_lower_cache_stats;
#define CREC_LOWER_CACHE_STATS_INIT {sizeof(crec_lower_cache_stats), 0, 0, 0, 0}

/// Reads the cache counters into `*out` (whose struct_size must be set).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (struct_size),
/// CREC_ERR_UNSUPPORTED (crec built without MLIR).
crec_status crec_lower_cache_get_stats(crec_lower_cache_stats *out);

/// Empties the cache (the counters of compilations and hits keep counting).
void crec_lower_cache_clear(void);

#ifdef __cplusplus
}
#endif
#endif
