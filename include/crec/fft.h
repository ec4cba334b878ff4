/// \file fft.h
/// Fast Fourier transforms through cuFFT (opened at run time), as traced
/// commands (library.h says what that means).
#ifndef CREC_FFT_H
#define CREC_FFT_H

#include "crec/operand.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Which transform, as XLA's fft_type names them.
typedef enum crec_fft_type {
  CREC_FFT_FORWARD = 0,      ///< FFT: complex to complex, forward (exponent sign -1)
  CREC_FFT_INVERSE = 1,      ///< IFFT: complex to complex, inverse (sign +1)
  CREC_FFT_REAL_FORWARD = 2, ///< RFFT: real to complex, forward: the last dimension keeps length/2 + 1 elements
  CREC_FFT_REAL_INVERSE = 3  ///< IRFFT: complex to real, inverse: the input's last dimension has length/2 + 1
} crec_fft_type;

/// A batch of FFTs over packed row-major data: `batch` transforms one after
/// another, each over `rank` dimensions of `length` (the last varies fastest).
/// A complex element is two reals of `precision` (real part first), as
/// cufftComplex and C's complex types lay them out. The real side of
/// REAL_FORWARD (its input) and REAL_INVERSE (its output) holds
/// batch·length[0]·…·length[rank-1] reals; the complex side holds
/// batch·length[0]·…·(length[rank-1]/2 + 1) complex elements; both sides of a
/// complex transform hold batch·length[0]·…·length[rank-1] complex elements.
/// The output is multiplied by `scale`: cuFFT computes unnormalized transforms,
/// so an inverse with XLA's or NumPy's meaning takes 1/(length[0]·…·length[rank-1]).
typedef struct crec_fft {
  size_t struct_size;      ///< sizeof(crec_fft)
  crec_fft_type type;
  crec_element precision;  ///< CREC_ELEMENT_F32 (cufftComplex) or CREC_ELEMENT_F64 (cufftDoubleComplex)
  uint32_t rank;           ///< 1 to 3 dimensions per transform
  uint64_t length[3];      ///< the transform's lengths (XLA's fft_length): of the real side for the real types
  uint64_t batch;          ///< transforms, at least 1
  crec_range input;        ///< read (never written: a REAL_INVERSE reads a copy, as cuFFT overwrites its input)
  crec_range output;       ///< written; may be the input itself (in place) for FORWARD and INVERSE only
  double scale;            ///< multiplies the output (1: none, no extra kernel)
  uint64_t workspace_bytes;///< cuFFT's work area, a temporary placed in the arena; 0: the larger of
                           ///< CREC_FFT_DEFAULT_WORKSPACE_MIN and twice the larger operand's bytes
} crec_fft;
#define CREC_FFT_INIT                                                                                   \
  {sizeof(crec_fft), CREC_FFT_FORWARD, CREC_ELEMENT_F32, 1, {0, 0, 0}, 1, {{0}, 0, 0}, {{0}, 0, 0}, 1.0, 0}

/// cuFFT's work area when crec_fft.workspace_bytes is 0: the larger of 1 MiB and
/// twice the bytes of the larger operand. Record fails, naming the size cuFFT
/// asks for, when its plan needs more.
#define CREC_FFT_DEFAULT_WORKSPACE_MIN (1u << 20)

/// Appends an FFT to `region` and adds its workspace, a temporary named
/// "<name>.workspace" (with a number appended if that name is taken); a
/// REAL_INVERSE's workspace also holds the copy of its input that cuFFT
/// overwrites. `name` may be NULL ("fft"). Ranges must have static sizes and
/// lie in device memory. The plan is made at record (per CUDA context), with
/// cuFFT's automatic work-area allocation off, and its work runs on the
/// record's capture stream into a child graph; eager runs issue it directly.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT
/// (unknown type, rank not 1 to 3, a zero length or batch, a range that is not
/// the size the shape needs, an in-place real transform, input and output that
/// overlap without being the same range, a constant or host output, host input,
/// a scale that is not finite), CREC_ERR_MISALIGNED (an offset or buffer alignment
/// of either side, the real one too, below the complex element, as cuFFT asks), CREC_ERR_UNSUPPORTED (a precision other than f32
/// or f64; a dynamic-size range), CREC_ERR_TOO_LARGE (a transform of more than
/// 2^40 elements, a workspace above 2^40 bytes), CREC_ERR_OUT_OF_MEMORY.
crec_status crec_program_add_fft(crec_program *program, crec_region region, const char *name, const crec_fft *fft,
                                 crec_command *out);

/// Reads back an FFT (with resolved ranges and the workspace size it got).
/// `out->struct_size` must be set. Errors: CREC_ERR_NULL_POINTER,
/// CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT (not an FFT, struct_size too
/// small).
crec_status crec_command_get_fft(const crec_program *program, crec_command command, crec_fft *out);

/// The name of an FFT type ("fft", "ifft", "rfft", "irfft": XLA's, in lower
/// case), or "?" for an unknown one.
const char *crec_fft_type_name(crec_fft_type type);

#ifdef __cplusplus
}
#endif
#endif
