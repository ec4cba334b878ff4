/// \file dump.h
/// Human- and machine-readable dumps of a program and its plan.
#ifndef CREC_DUMP_H
#define CREC_DUMP_H

#include "crec/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Dump formats.
typedef enum crec_dump_format {
  CREC_DUMP_TEXT = 0, ///< a summary: buffers, scalars, kernels, the command tree with dependencies
  CREC_DUMP_JSON = 1, ///< the JSON of DESIGN.md ("crec dump --format json"); a launch whose kernel has
                      ///< thread-block cluster dims also has "cluster":[x,y,z]
  CREC_DUMP_DOT = 2   ///< Graphviz DOT: control-flow bodies as nested clusters
} crec_dump_format;

/// Writes a dump of `program` into a NUL-terminated string `*out` (free with crec_free()).
/// Dependencies come from `plan`; NULL plans the program with default options.
/// `length` may be NULL. Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT
/// (format, or a plan of another program), CREC_ERR_INVALID_PROGRAM, CREC_ERR_OUT_OF_MEMORY.
crec_status crec_dump(const crec_program *program, const crec_plan *plan, crec_dump_format format,
                      char **out, size_t *length);

#ifdef __cplusplus
}
#endif
#endif
