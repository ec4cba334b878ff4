/// \file cholesky.h
/// Cholesky factorizations through cuSOLVER (opened at run time), as traced
/// commands (library.h says what that means).
#ifndef CREC_CHOLESKY_H
#define CREC_CHOLESKY_H

#include "crec/operand.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A batch of Cholesky factorizations (LAPACK's potrf) in place: each of
/// `batch` row-major n x n symmetric positive definite matrices A, packed one
/// after another, is overwritten in one triangle by L with A = L·Lᵀ (lower), or
/// by U with A = Uᵀ·U (upper). The other triangle keeps what it held. `info`
/// gets one i32 per matrix: 0, or k > 0 when the leading minor of order k is not
/// positive definite (the factorization then stopped there), as cuSOLVER says.
typedef struct crec_cholesky {
  size_t struct_size;       ///< sizeof(crec_cholesky)
  crec_element type;        ///< CREC_ELEMENT_F32 or CREC_ELEMENT_F64
  int upper;                ///< nonzero: the upper triangle gets U; 0: the lower gets L
  uint64_t n;               ///< the order of each matrix, at least 1
  uint64_t batch;           ///< matrices, at least 1
  crec_range a;             ///< read and written: batch·n·n elements
  crec_range info;          ///< written: batch i32
  uint64_t workspace_bytes; ///< cuSOLVER's device work area, a temporary placed in the arena;
                            ///< 0: the larger of 1 MiB and n·n elements
} crec_cholesky;
#define CREC_CHOLESKY_INIT {sizeof(crec_cholesky), CREC_ELEMENT_F32, 0, 0, 1, {{0}, 0, 0}, {{0}, 0, 0}, 0}

/// The most matrices one Cholesky command factors (one cuSOLVER call each, in
/// its child graph).
#define CREC_CHOLESKY_MAX_BATCH 1024u

/// Appends a Cholesky factorization to `region` and adds its workspace, a
/// temporary named "<name>.workspace" (with a number appended if that name is
/// taken). `name` may be NULL ("cholesky"). Ranges must have static sizes and
/// lie in device memory. cuSOLVER's handle is made per CUDA context at record,
/// where the work area cuSOLVER asks for (cusolverDnXpotrf_bufferSize) is
/// checked against the workspace; the matrices are factored one after another
/// (cusolverDnXpotrf each), captured into the command's child graph.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT
/// (n or batch 0; `a` not batch·n·n elements, `info` not batch i32; `a` and
/// `info` overlapping; constant or host memory), CREC_ERR_MISALIGNED (an offset or
/// buffer alignment below the element, or below 4 for `info`),
/// CREC_ERR_UNSUPPORTED (a type other than f32 or f64; a dynamic-size range),
/// CREC_ERR_TOO_LARGE (n above 2^31-1, a batch above CREC_CHOLESKY_MAX_BATCH,
/// more than 2^40 elements, a workspace above 2^40 bytes), CREC_ERR_OUT_OF_MEMORY.
crec_status crec_program_add_cholesky(crec_program *program, crec_region region, const char *name,
                                      const crec_cholesky *cholesky, crec_command *out);

/// Reads back a Cholesky factorization (with resolved ranges and the workspace
/// size it got). `out->struct_size` must be set. Errors: CREC_ERR_NULL_POINTER,
/// CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT (not a Cholesky command,
/// struct_size too small).
crec_status crec_command_get_cholesky(const crec_program *program, crec_command command, crec_cholesky *out);

#ifdef __cplusplus
}
#endif
#endif
