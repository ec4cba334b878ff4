/// \file debug.h
/// Test hooks: fault injection for failure-path tests. Not for production use.
///
/// After crec_debug_fail_after(CREC_FAULT_ALLOC, n), the n-th host allocation
/// crec makes from then on (counting from 1) fails as if memory were exhausted;
/// likewise CREC_FAULT_CUDA makes the n-th CUDA driver call fail with
/// CUDA_ERROR_OUT_OF_MEMORY (and the n-th cuBLASLt or NCCL call with that library's
/// allocation failure). Counters are process-wide; 0 disarms a kind.
#ifndef CREC_DEBUG_H
#define CREC_DEBUG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Kinds of injectable faults.
typedef enum crec_fault_kind {
  CREC_FAULT_ALLOC = 0, ///< host allocations (malloc, calloc, realloc, strdup)
  CREC_FAULT_CUDA = 1   ///< CUDA driver, cuBLASLt and NCCL calls made through crec's layers
} crec_fault_kind;

/// Arms a fault: the `n`-th event of `kind` from now fails (n = 0 disarms).
void crec_debug_fail_after(crec_fault_kind kind, uint64_t n);

/// Returns how many events of `kind` happened since it was last armed or disarmed
/// (events are counted only once crec_debug_fail_after() has been called).
uint64_t crec_debug_count(crec_fault_kind kind);

/// Returns the number of live crec objects (programs, plans, execs, ...); tests use it
/// to check that create and destroy balance, also on failure paths.
int64_t crec_debug_live_objects(void);

#ifdef __cplusplus
}
#endif
#endif
