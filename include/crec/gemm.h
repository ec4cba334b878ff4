/// \file gemm.h
/// Matrix products through cuBLASLt (opened at run time), as traced commands
/// (library.h says what that means).
#ifndef CREC_GEMM_H
#define CREC_GEMM_H

#include "crec/operand.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A matrix operand of a GEMM: row-major, `rows` x `cols` elements per matrix,
/// `ld` elements from the start of one row to the next, and for a batch,
/// `batch_stride` elements from one matrix to the next.
typedef struct crec_matrix {
  crec_range range;       ///< the elements of every matrix of the batch
  uint64_t rows, cols;    ///< shape of one matrix as stored
  uint64_t ld;            ///< leading dimension in elements, at least `cols`; 0 means `cols`
  uint64_t batch_stride;  ///< elements between batch matrices; 0 means packed (`rows` x `ld`)
} crec_matrix;

/// Makes a packed row-major matrix operand of `rows` x `cols` elements.
static inline crec_matrix crec_matrix_of(crec_range range, uint64_t rows, uint64_t cols) {
  crec_matrix m = {range, rows, cols, 0, 0};
  return m;
}

/// Epilogues fused into a GEMM (applied to alpha·op(A)·op(B) + beta·C).
typedef enum crec_gemm_epilogue {
  CREC_GEMM_EPILOGUE_NONE = 0,
  CREC_GEMM_EPILOGUE_BIAS = 1,      ///< D += bias, one bias element per column of D
  CREC_GEMM_EPILOGUE_RELU = 2,      ///< D = max(D, 0)
  CREC_GEMM_EPILOGUE_BIAS_RELU = 3  ///< D = max(D + bias, 0)
} crec_gemm_epilogue;

/// A matrix product D = alpha·op(A)·op(B) + beta·C (then the epilogue), for each
/// of `batch` matrices. op(X) is X, or X transposed when `transpose_x` is
/// nonzero. With op(A) of M x K and op(B) of K x N, C and D are M x N.
/// Accumulation is in f32 for every element type. A and B have `type`; C, D and
/// the bias have `output_type`, which may be f32 where A and B are f16 or bf16
/// (products of half-precision inputs kept in single precision).
typedef struct crec_gemm {
  size_t struct_size;           ///< sizeof(crec_gemm)
  crec_element type;            ///< CREC_ELEMENT_F32, _F16 or _BF16: of A, B, C, D and bias
  int transpose_a, transpose_b; ///< nonzero: use the operand transposed
  double alpha, beta;           ///< scales (converted to f32)
  uint64_t batch;               ///< matrices per operand, at least 1
  crec_matrix a, b;             ///< read
  crec_matrix c;                ///< read when beta != 0; range.buffer id 0: C is D itself (accumulate in place)
  crec_matrix d;                ///< written (also read when C is D and beta != 0)
  crec_gemm_epilogue epilogue;
  crec_range bias;              ///< the BIAS epilogues: N elements, shared by the whole batch
  uint64_t workspace_bytes;     ///< cuBLASLt workspace, a temporary placed in the arena; 0: 4 MiB
  crec_element output_type;     ///< C, D and bias: CREC_ELEMENT_BYTES (the default) for `type`, or
                                ///< CREC_ELEMENT_F32 with f16 or bf16 A and B (mixed precision)
} crec_gemm;
#define CREC_GEMM_INIT                                                                           \
  {sizeof(crec_gemm), CREC_ELEMENT_F32, 0, 0, 1.0, 0.0, 1, {{{0}, 0, 0}, 0, 0, 0, 0},             \
   {{{0}, 0, 0}, 0, 0, 0, 0}, {{{0}, 0, 0}, 0, 0, 0, 0}, {{{0}, 0, 0}, 0, 0, 0, 0},               \
   CREC_GEMM_EPILOGUE_NONE, {{0}, 0, 0}, 0, CREC_ELEMENT_BYTES}

/// The cuBLASLt workspace a GEMM gets when crec_gemm.workspace_bytes is 0.
#define CREC_GEMM_DEFAULT_WORKSPACE (4u << 20)

/// Appends a GEMM to `region` and adds its workspace, a temporary named
/// "<name>.workspace" (with a number appended if that name is taken). `name` may
/// be NULL ("gemm"). Ranges must have static sizes. The GEMM runs through
/// cuBLASLt: the algorithm is chosen once per CUDA context, for the alignment
/// every binding guarantees (the buffer's alignment and the range's offset).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT
/// ("shape mismatch": inner dimensions, C or D not M x N, bias not N elements; zero
/// dimensions, ld below cols, a bias without a BIAS epilogue or the reverse, a
/// constant or host D), CREC_ERR_OUT_OF_RANGE (a range too small for its matrices),
/// CREC_ERR_MISALIGNED (an offset that is not a multiple of the element size),
/// CREC_ERR_UNSUPPORTED (an element type other than f32, f16, bf16; a dynamic-size
/// range), CREC_ERR_TOO_LARGE (a dimension above 2^31-1), CREC_ERR_OUT_OF_MEMORY.
crec_status crec_program_add_gemm(crec_program *program, crec_region region, const char *name,
                                  const crec_gemm *gemm, crec_command *out);

/// Reads back a GEMM (with resolved ranges and lds; the workspace size it got).
/// `out->struct_size` must be set. Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE,
/// CREC_ERR_INVALID_ARGUMENT (not a GEMM, struct_size too small).
crec_status crec_command_get_gemm(const crec_program *program, crec_command command, crec_gemm *out);

#ifdef __cplusplus
}
#endif
#endif
