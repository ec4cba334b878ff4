/// \file status.h
/// Status codes, the calling thread's last error message, and the library version.
///
/// Every crec call that can fail returns a ::crec_status; `CREC_OK` is 0.
/// On failure the call also leaves a one-line message for the calling thread
/// that names the function, the offending argument or command, and the CUDA or
/// MLIR call that failed when there was one:
///
///     crec_program_add_memcpy: argument 'dst' (buffer 'x'): offset 16 + size 64 exceeds buffer size 32
///
/// The message stays until the thread's next failing crec call.
///
/// A failing CUDA driver call is `CREC_ERR_CUDA`, except three kinds sorted
/// out of it, which a function's list of errors includes under `CREC_ERR_CUDA`:
/// `CREC_ERR_DEVICE_OUT_OF_MEMORY` (`CUDA_ERROR_OUT_OF_MEMORY`),
/// `CREC_ERR_CONTEXT_LOST` (a kernel faulted: an illegal address, a launch
/// failure) and `CREC_ERR_DEVICE_ASSERT` (a kernel's assertion failed). After
/// the last two, the process's CUDA context can no longer be used.
#ifndef CREC_STATUS_H
#define CREC_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/// The one table of statuses: (enumerator suffix, value, description).
/// It generates ::crec_status, crec_status_name() and crec_status_string(),
/// so the three never drift apart.
#define CREC_STATUS_TABLE(X)                                                              \
  X(OK, 0, "success")                                                                     \
  X(ERR_INVALID_ARGUMENT, 1, "invalid argument")                                          \
  X(ERR_NULL_POINTER, 2, "a required pointer or name is NULL")                            \
  X(ERR_INVALID_HANDLE, 3, "handle is out of range or belongs to another program")        \
  X(ERR_OUT_OF_RANGE, 4, "byte range lies outside its buffer or value is out of range")   \
  X(ERR_MISALIGNED, 5, "address or offset is not suitably aligned")                       \
  X(ERR_TOO_LARGE, 6, "size exceeds a CUDA limit")                                        \
  X(ERR_DUPLICATE_NAME, 7, "name is already used")                                        \
  X(ERR_TYPE_MISMATCH, 8, "value has the wrong type")                                     \
  X(ERR_OUT_OF_MEMORY, 9, "host memory allocation failed")                                \
  X(ERR_NO_DEVICE, 10, "no CUDA driver or device is available")                           \
  X(ERR_CUDA, 11, "a CUDA driver call failed")                                            \
  X(ERR_BINDING, 12, "bindings do not match the program")                                 \
  X(ERR_UNSUPPORTED, 13, "feature is not supported")                                      \
  X(ERR_MLIR, 14, "MLIR input could not be parsed, verified or lowered")                  \
  X(ERR_IO, 15, "a file could not be read or written")                                    \
  X(ERR_NOT_FOUND, 16, "named entity was not found")                                      \
  X(ERR_INVALID_PROGRAM, 17, "program is incomplete or inconsistent")                     \
  X(ERR_HOST_FUNCTION, 18, "a host function reported failure")                            \
  X(ERR_INTERNAL, 19, "internal error")                                                   \
  X(ERR_TIMEOUT, 20, "a wait ran past its deadline")                                     \
  X(ERR_REMOTE, 21, "another rank of a communicator failed")                             \
  X(ERR_LOOP_LIMIT, 22, "a device loop reached its iteration limit and was stopped")                   \
  X(ERR_DEVICE_ASSERT, 23, "a kernel's assertion failed; the CUDA context can no longer be used")      \
  X(ERR_DEVICE_OUT_OF_MEMORY, 24, "device or page-locked memory allocation failed")                      \
  X(ERR_CONTEXT_LOST, 25, "a kernel faulted (illegal address, launch failure); the CUDA context can no longer be used")

/// The outcome of a crec call.
typedef enum crec_status {
#define CREC__STATUS_ENUM(name, value, text) CREC_##name = value,
  CREC_STATUS_TABLE(CREC__STATUS_ENUM)
#undef CREC__STATUS_ENUM
} crec_status;

/// Returns the enumerator's name without its prefix ("OK", "ERR_CUDA"), or "UNKNOWN".
const char *crec_status_name(crec_status status);

/// Returns a short English description of the status, or "unknown status".
const char *crec_status_string(crec_status status);

/// Returns the calling thread's last error message ("" when no crec call has failed on it).
/// The string is owned by crec and valid until the thread's next crec call.
const char *crec_last_error(void);

/// Returns the library version as "MAJOR.MINOR.PATCH".
const char *crec_version(void);

/// Frees memory that crec returned to the caller (dump strings); NULL is a no-op.
void crec_free(void *ptr);

#ifdef __cplusplus
}
#endif
#endif
