/// \file device.h
/// Finding the CUDA driver and devices at run time. crec never links libcuda:
/// it opens libcuda.so.1 on first use, so every crec binary starts on a machine
/// without a driver and reports CREC_ERR_NO_DEVICE there.
#ifndef CREC_DEVICE_H
#define CREC_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "crec/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A CUDA stream: the same type as `cudaStream_t` and `CUstream`. NULL is the legacy default stream.
typedef struct CUstream_st *crec_stream;

/// Returns 1 when a CUDA driver loads and at least one device is present, else 0.
/// When 0, crec_last_error() says why (no libcuda.so.1, cuInit failed, no device).
int crec_device_available(void);

/// Returns the number of CUDA devices in `*count` (0 without a driver).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_NO_DEVICE (no driver, with the reason).
crec_status crec_device_count(int *count);

/// Returns the CUDA driver version (e.g. 13000) in `*version`.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_NO_DEVICE.
crec_status crec_driver_version(int *version);

/// Writes the name and compute capability of device `ordinal` ("NVIDIA H200", 9, 0).
/// `name` receives at most `name_size` bytes, NUL-terminated.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_NO_DEVICE, CREC_ERR_OUT_OF_RANGE (ordinal), CREC_ERR_CUDA.
crec_status crec_device_describe(int ordinal, char *name, size_t name_size, int *major, int *minor);

/// The libraries crec opens at run time, each when a program first needs it.
typedef enum crec_library {
  CREC_LIBRARY_CUBLASLT = 0, ///< libcublasLt.so.13: GEMM commands (gemm.h)
  CREC_LIBRARY_NCCL = 1,     ///< libnccl.so.2: communicators and collectives (collective.h)
  CREC_LIBRARY_CUFFT = 2,    ///< libcufft.so.12: FFT commands (fft.h)
  CREC_LIBRARY_CUSOLVER = 3, ///< libcusolver.so.12: Cholesky commands (cholesky.h)
  CREC_LIBRARY_CUDNN = 4,    ///< libcudnn.so.9: convolution commands (conv.h says where it is looked for)
  CREC_LIBRARY_CUPTI = 5     ///< libcupti.so.13: crec_exec_profile() (profile.h)
} crec_library;

/// Says whether crec can use `library` here, opening it if this process has not
/// tried yet: the one attempt per process and library that its first command
/// would make (later calls, and those commands, get the same answer). Needs no
/// device; thread-safe. Returns CREC_OK when the library opened with every
/// function crec calls.
/// Errors: CREC_ERR_UNSUPPORTED (it cannot be used: crec_last_error() says where
/// it was looked for, or which function it lacks), CREC_ERR_INVALID_ARGUMENT (no
/// such crec_library).
crec_status crec_library_check(crec_library library);

/* Small conveniences over the driver for tools and tests that do not link a CUDA
 * runtime. Each uses device `ordinal`'s primary context (made current on the
 * calling thread). */

/// Allocates `size` bytes of device memory on device `ordinal` into `*ptr`.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_NO_DEVICE, CREC_ERR_CUDA.
crec_status crec_device_alloc(int ordinal, uint64_t size, void **ptr);
/// Frees memory from crec_device_alloc() (NULL is a no-op).
void crec_device_free(void *ptr);
/// Allocates `size` bytes of page-locked host memory (usable by memcpy commands) into `*ptr`.
/// Errors: as crec_device_alloc().
crec_status crec_host_alloc(int ordinal, uint64_t size, void **ptr);
/// Frees memory from crec_host_alloc() (NULL is a no-op).
void crec_host_free(void *ptr);
/// Copies `size` bytes between host and device memory (any direction) and returns once
/// the copy is complete, so work on any stream issued afterwards sees the data.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_NO_DEVICE, CREC_ERR_CUDA.
crec_status crec_copy(void *dst, const void *src, uint64_t size);
/// Creates a non-blocking stream on device `ordinal` into `*stream` (a CUstream / cudaStream_t).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_NO_DEVICE, CREC_ERR_CUDA.
crec_status crec_stream_create(int ordinal, crec_stream *stream);
/// Destroys a stream from crec_stream_create() (NULL is a no-op).
void crec_stream_destroy(crec_stream stream);
/// Waits until all work on `stream` is done (NULL: the legacy stream of the current
/// context, or of device 0's primary context when none is current).
/// Errors: CREC_ERR_NO_DEVICE, CREC_ERR_CUDA (an earlier asynchronous failure shows here),
/// CREC_ERR_DEVICE_ASSERT (a kernel's assertion failed: its message is on standard output,
/// and the process's CUDA context can no longer be used).
crec_status crec_stream_synchronize(crec_stream stream);
/// crec_stream_synchronize() with a deadline: waits until all work on `stream` is done, or
/// until `timeout_ms` milliseconds have passed (`timeout_ms` <= 0: no deadline, as
/// crec_stream_synchronize()). It polls the stream, a little less often the longer it
/// waits (about every 160 us at most). On the deadline the work is still running and
/// nothing was cancelled: a kernel that never finishes holds the device until the process
/// exits, and a caller that would free what it uses must not.
/// Errors: as crec_stream_synchronize(), and CREC_ERR_TIMEOUT (the deadline passed).
crec_status crec_stream_wait(crec_stream stream, int timeout_ms);

#ifdef __cplusplus
}
#endif
#endif
