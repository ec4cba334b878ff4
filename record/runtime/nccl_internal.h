/* The NCCL library crec opens at run time (collective.c), for the collectives
 * and the communicators (comm.c). Internal to the runtime. */
#ifndef CREC_RECORD_RUNTIME_NCCL_INTERNAL_H
#define CREC_RECORD_RUNTIME_NCCL_INTERNAL_H

#include <nccl.h>

#include "runtime_internal.h"

/* The NCCL functions crec calls: (field, symbol, return type, parameters),
 * declared by hand (no typeof in C11). One table makes the struct and the
 * lookups, as driver.h's does for the driver. */
#define CREC__NCCL_FUNCS(X)                                                                                       \
  X(get_version, "ncclGetVersion", ncclResult_t, (int *))                                                         \
  X(get_unique_id, "ncclGetUniqueId", ncclResult_t, (ncclUniqueId *))                                             \
  X(comm_init_rank, "ncclCommInitRank", ncclResult_t, (ncclComm_t *, int, ncclUniqueId, int))                     \
  X(comm_destroy, "ncclCommDestroy", ncclResult_t, (ncclComm_t))                                                  \
  X(comm_abort, "ncclCommAbort", ncclResult_t, (ncclComm_t))                                                      \
  X(comm_get_async_error, "ncclCommGetAsyncError", ncclResult_t, (ncclComm_t, ncclResult_t *))                    \
  X(comm_count, "ncclCommCount", ncclResult_t, (const ncclComm_t, int *))                                         \
  X(comm_user_rank, "ncclCommUserRank", ncclResult_t, (const ncclComm_t, int *))                                  \
  X(comm_cu_device, "ncclCommCuDevice", ncclResult_t, (const ncclComm_t, int *))                                  \
  X(error_string, "ncclGetErrorString", const char *, (ncclResult_t))                                             \
  X(last_error, "ncclGetLastError", const char *, (ncclComm_t))                                                   \
  X(all_reduce, "ncclAllReduce", ncclResult_t,                                                                    \
    (const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))                        \
  X(all_gather, "ncclAllGather", ncclResult_t, (const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t)) \
  X(reduce_scatter, "ncclReduceScatter", ncclResult_t,                                                            \
    (const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))                        \
  X(send, "ncclSend", ncclResult_t, (const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))        \
  X(recv, "ncclRecv", ncclResult_t, (void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))              \
  X(group_start, "ncclGroupStart", ncclResult_t, (void))                                                          \
  X(group_end, "ncclGroupEnd", ncclResult_t, (void))

typedef struct crec__nccl {
#define CREC__NCCL_FIELD(field, symbol, ret, params) ret(*field) params;
  CREC__NCCL_FUNCS(CREC__NCCL_FIELD)
#undef CREC__NCCL_FIELD
  ncclResult_t (*comm_revoke)(ncclComm_t, int); /* NCCL 2.28 and newer; NULL before */
} crec__nccl;

/* Opens NCCL once; returns its table, or NULL after setting CREC_ERR_UNSUPPORTED
 * as `fn`'s error, the reason prefixed with `label` when not NULL. */
const crec__nccl *crec__nccl_get(const char *fn, const char *label);

/* The table if NCCL was opened already, else NULL; sets no error (for clean-ups,
 * and for communicators, which exist only once NCCL was opened). */
const crec__nccl *crec__nccl_loaded(void);

/* Formats "fn: <label>: <call> failed: <NCCL's error>; <NCCL's last error on
 * comm>" as the last error; returns CREC_ERR_CUDA. */
crec_status crec__nccl_fail(const char *fn, const char *label, ncclResult_t r, const char *call, ncclComm_t comm);

/* Calls NCCL with the CUDA fault hook in front. */
#define CREC__NCCL(call) (crec__cu_fault() ? ncclSystemError : (call))

#endif
