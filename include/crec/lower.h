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

#ifdef __cplusplus
}
#endif
#endif
