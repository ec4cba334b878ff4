/// \file library.h
/// Library calls in programs: matrix products through cuBLASLt, collectives
/// through NCCL, custom commands run by registered handlers, and host callbacks.
///
/// GEMMs, collectives and traced custom commands are *traced* commands: at
/// record, crec issues their work on a private stream under stream capture and
/// puts the captured graph into the exec's graph as a child-graph node. When a
/// replay changes a buffer such a command uses, crec looks the command's new
/// buffer addresses up in a per-command cache of captured graphs (most recently
/// used first, crec_record_options.trace_cache_size entries); a hit swaps that
/// graph in (cuGraphExecChildGraphNodeSetParams), a miss captures the work again
/// first. Replays that cycle through a few address sets therefore capture
/// nothing once each set was seen; crec_exec_stats counts hits, misses and
/// re-captures. A captured graph must keep the topology of the first capture
/// (the libraries choose their kernels at record and keep them); when it does
/// not, the replay fails with CREC_ERR_UNSUPPORTED naming the command.
///
/// cuBLASLt (libcublasLt.so.13) and NCCL (libnccl.so.2) are opened at run time,
/// on first use: a program without GEMMs or collectives never needs them, and a
/// missing library gives CREC_ERR_UNSUPPORTED naming it.
///
/// Every builder here follows program.h's rules: everything is validated before
/// anything changes, failures set `*out` to the invalid handle and leave the
/// program as it was, and messages name the function, the command and the
/// offending argument.
#ifndef CREC_LIBRARY_H
#define CREC_LIBRARY_H

#include "crec/device.h"
#include "crec/program.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A buffer range and how a command uses it. For custom commands, a range whose
/// buffer has id 0 is a hole: an unused operand slot, passed as a NULL pointer.
typedef struct crec_operand {
  crec_range range;
  crec_access access;
} crec_operand;

/// Makes an operand.
static inline crec_operand crec_operand_of(crec_range range, crec_access access) {
  crec_operand o = {range, access};
  return o;
}
/// Makes a hole: an operand slot passed to a custom handler as NULL.
static inline crec_operand crec_operand_hole(void) {
  crec_operand o = {{{0}, 0, 0}, CREC_ACCESS_READ};
  return o;
}

/* ---------------------------------------------------------------- GEMM ---- */

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
/// Accumulation is in f32 for every element type.
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
} crec_gemm;
#define CREC_GEMM_INIT                                                                           \
  {sizeof(crec_gemm), CREC_ELEMENT_F32, 0, 0, 1.0, 0.0, 1, {{{0}, 0, 0}, 0, 0, 0, 0},             \
   {{{0}, 0, 0}, 0, 0, 0, 0}, {{{0}, 0, 0}, 0, 0, 0, 0}, {{{0}, 0, 0}, 0, 0, 0, 0},               \
   CREC_GEMM_EPILOGUE_NONE, {{0}, 0, 0}, 0}

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

/* --------------------------------------------------------- collectives ---- */

/// A communicator slot of a program: the NCCL communicator is bound at each
/// execution (crec_bindings.communicators, in the order slots were added).
typedef struct crec_communicator { uint32_t id; } crec_communicator;

/// Adds a communicator slot for communicators of `size` ranks.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_DUPLICATE_NAME (another communicator),
/// CREC_ERR_INVALID_ARGUMENT (size below 1 or above 65536), CREC_ERR_OUT_OF_MEMORY.
crec_status crec_program_add_communicator(crec_program *program, const char *name, int size,
                                          crec_communicator *out);

/// Returns the number of communicator slots (the number of communicator bindings).
size_t crec_program_communicator_count(const crec_program *program);
/// Describes communicator slot `index`: its name and size.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_OUT_OF_RANGE.
crec_status crec_program_get_communicator(const crec_program *program, size_t index, const char **name,
                                      int *size);

/// Kinds of collectives.
typedef enum crec_collective_kind {
  CREC_COLLECTIVE_ALL_REDUCE = 0,     ///< recv = reduction over the group of send
  CREC_COLLECTIVE_ALL_GATHER = 1,     ///< recv = the sends of the group, in group order
  CREC_COLLECTIVE_REDUCE_SCATTER = 2, ///< recv = this rank's block of the reduced sends
  CREC_COLLECTIVE_ALL_TO_ALL = 3,     ///< block j of send goes to group member j; recv block i comes from member i
  CREC_COLLECTIVE_PERMUTE = 4         ///< send goes to the targets of this rank's pairs; recv from its source, else zeros
} crec_collective_kind;

/// Reductions of all_reduce and reduce_scatter.
typedef enum crec_reduction {
  CREC_REDUCTION_SUM = 0,
  CREC_REDUCTION_PROD = 1,
  CREC_REDUCTION_MIN = 2,
  CREC_REDUCTION_MAX = 3
} crec_reduction;

/// A collective over a communicator slot. Sizes follow from the ranges: with G
/// ranks per group and n = send bytes / element size,
///  - all_reduce: recv is n elements;
///  - all_gather: recv is G·n elements;
///  - reduce_scatter: send is G·m elements, recv m;
///  - all_to_all: send and recv are equal, a multiple of G elements (G blocks);
///  - collective_permute: send and recv are equal.
/// Groups partition the ranks: `num_groups` groups of `group_size` ranks each in
/// `groups` (row after row). No groups (NULL) means one group of every rank.
/// When every group has one rank (or every permute pair is a rank to itself) the
/// collective moves nothing between ranks and records as a memcpy node (a memset
/// for a permute that sends this rank nothing), never calling NCCL.
typedef struct crec_collective {
  size_t struct_size;            ///< sizeof(crec_collective)
  crec_collective_kind kind;
  crec_communicator communicator;
  crec_element type;             ///< element type; CREC_ELEMENT_BYTES only without a reduction
  crec_reduction reduction;      ///< all_reduce and reduce_scatter
  crec_range send, recv;         ///< read, written; device memory, static sizes
  const int32_t *groups;         ///< num_groups x group_size ranks, or NULL (copied)
  size_t num_groups, group_size;
  const int32_t *pairs;          ///< collective_permute: num_pairs (source, target) rank pairs (copied)
  size_t num_pairs;
  int async;                     ///< nonzero: an async start, finished by crec_program_add_collective_done()
} crec_collective;
#define CREC_COLLECTIVE_INIT                                                                     \
  {sizeof(crec_collective), CREC_COLLECTIVE_ALL_REDUCE, {0}, CREC_ELEMENT_F32, CREC_REDUCTION_SUM, \
   {{0}, 0, 0}, {{0}, 0, 0}, NULL, 0, 0, NULL, 0, 0}

/// Appends a collective to `region`. `name` may be NULL (the kind's name, e.g.
/// "all_reduce"). With `async`, the command is a start: commands after it that
/// touch neither its send nor its recv range overlap the collective (also in
/// sequential schedules) until its done command, after which the results are
/// visible. The NCCL work over one communicator (collective starts and barriers
/// across ranks that move data between ranks) runs in program order, each after
/// the one before, also when their buffers are unrelated: every rank must run a
/// communicator's collectives in the same order, and two at once could deadlock.
///
/// All ranks must record the same program and re-capture their collectives at the
/// same replays: a rank re-captures a collective when that collective's buffers
/// (or communicator) change to a set of addresses not in its cache, and NCCL
/// needs every rank of a communicator to issue the same collectives in the same
/// order. So every rank must change the bindings its collectives use at the same
/// replays, cycling through the same number of address sets in the same pattern,
/// with the same trace_cache_size; and replays must launch in the same order.
///
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT
/// (unknown kind or reduction, a reduction of bytes, a "shape mismatch" between
/// send and recv, groups that do not partition the ranks, repeated pair targets or
/// sources, a rank outside the communicator, constant or host ranges),
/// CREC_ERR_MISALIGNED (offsets not multiples of the element size),
/// CREC_ERR_UNSUPPORTED (groups of several ranks that are not all the ranks: NCCL
/// sub-communicators are not supported; dynamic-size ranges), CREC_ERR_OUT_OF_MEMORY.
crec_status crec_program_add_collective(crec_program *program, crec_region region, const char *name,
                                        const crec_collective *collective, crec_command *out);

/// Appends the done command of the async collective `start` (in the same region,
/// not already done). `name` may be NULL ("<start's name>.done").
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT
/// (not an async collective, already done, another region), CREC_ERR_OUT_OF_MEMORY.
crec_status crec_program_add_collective_done(crec_program *program, crec_region region,
                                             const char *name, crec_command start,
                                             crec_command *out);

/// Appends a barrier across the ranks of `communicator`: on every rank, the commands
/// after it in `region` start only once every rank has finished its commands before
/// it. Within the rank it orders like crec_program_add_barrier(): everything before
/// it in `region` completes before anything after it starts. It records as one node
/// that the commands after it depend on: a one-element all_reduce through NCCL on a
/// 4-byte temporary it adds, "<name>.scratch" (with a number appended if that name
/// is taken), captured like any collective, which completes on a rank only after
/// every rank has started it. Over a one-rank communicator it is only the barrier
/// within the rank (no NCCL). It is a collective: every rank adds it at the same
/// place of the same program (see crec_program_add_collective()). Its kind is
/// CREC_COMMAND_BARRIER ("barrier" in dumps). `name` may be NULL ("barrier").
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE (region, communicator),
/// CREC_ERR_OUT_OF_MEMORY.
crec_status crec_program_add_comm_barrier(crec_program *program, crec_region region, const char *name,
                                          crec_communicator communicator, crec_command *out);

/// Reads back a barrier: its communicator and its scratch temporary (both id 0 for
/// a barrier within the rank, from crec_program_add_barrier()). Either output may be
/// NULL. Errors: CREC_ERR_NULL_POINTER (program), CREC_ERR_INVALID_HANDLE,
/// CREC_ERR_INVALID_ARGUMENT (not a barrier).
crec_status crec_command_get_barrier(const crec_program *program, crec_command command,
                                     crec_communicator *communicator, crec_buffer *scratch);

/// Reads back a collective (for a done command: its start's description) with
/// resolved ranges; arrays are owned by the program. `out->struct_size` must be set.
/// `start` (may be NULL) receives the start a done command finishes, id 0 otherwise.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT.
crec_status crec_command_get_collective(const crec_program *program, crec_command command,
                                        crec_collective *out, crec_command *start);

/// Returns "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
/// "collective_permute", or "unknown".
const char *crec_collective_kind_name(crec_collective_kind kind);
/// Returns "sum", "prod", "min", "max", or "unknown".
const char *crec_reduction_name(crec_reduction reduction);

/// An NCCL communicator for crec (opaque).
typedef struct crec_comm crec_comm;

/// An NCCL unique id: made by one rank, shared with the others out of band.
typedef struct crec_comm_id {
  char bytes[128];
} crec_comm_id;

/// Makes a new unique id (ncclGetUniqueId).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_UNSUPPORTED (no NCCL), CREC_ERR_CUDA (the NCCL call).
crec_status crec_comm_get_unique_id(crec_comm_id *out);

/// Creates rank `rank` of a communicator of `size` ranks on device `device` from
/// `id` (ncclCommInitRank; every rank calls it at once). `*out` owns the NCCL
/// communicator and is destroyed with crec_comm_destroy().
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_OUT_OF_RANGE (rank, size), CREC_ERR_NO_DEVICE,
/// CREC_ERR_UNSUPPORTED (no NCCL), CREC_ERR_CUDA (the NCCL call), CREC_ERR_OUT_OF_MEMORY.
crec_status crec_comm_create(int device, const crec_comm_id *id, int rank, int size,
                             crec_comm **out);

/// Wraps an existing `ncclComm_t` (passed as a pointer), which the caller keeps
/// owning and must keep alive while crec uses it. Reads its size, rank and device.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_UNSUPPORTED (no NCCL), CREC_ERR_CUDA,
/// CREC_ERR_OUT_OF_MEMORY.
crec_status crec_comm_wrap(void *nccl_comm, crec_comm **out);

/// Destroys a communicator from crec_comm_create() (ncclCommDestroy) or a wrapper
/// from crec_comm_wrap() (leaving the NCCL communicator alone). NULL is a no-op.
/// Eager runs that use it must be done, and execs recorded with it destroyed,
/// first: NCCL (2.26 and newer) waits in ncclCommDestroy until every CUDA graph
/// that captured one of its collectives is gone.
void crec_comm_destroy(crec_comm *comm);

/// Reads a communicator's rank, size and CUDA device (any may be NULL).
/// Errors: CREC_ERR_NULL_POINTER (comm).
crec_status crec_comm_get_info(const crec_comm *comm, int *rank, int *size, int *device);

/// Returns the wrapped `ncclComm_t` (borrowed), or NULL for NULL or an aborted communicator.
void *crec_comm_native(const crec_comm *comm);

/* ------------------------------------------------ ranks that fail or hang ---- */
/*
 * NCCL's collectives wait on the device until every rank of the communicator
 * joins: a rank that fails or stops leaves the others spinning forever, and a
 * plain stream synchronization with them. These calls bound every such wait.
 *
 * A multi-rank program:
 *  1. creates its communicator on every rank (crec_comm_create());
 *  2. records on every rank, then calls crec_comm_agree() with crec_record()'s
 *     status: when any rank failed, every rank learns which and why, and none
 *     replays;
 *  3. replays, and waits with crec_comm_synchronize() instead of
 *     crec_stream_synchronize(): a rank that never joins turns into
 *     CREC_ERR_TIMEOUT after the deadline instead of a hang.
 * A wait that fails aborts the communicator (crec_comm_abort()): its kernels
 * return, execs and eager runs bound to it are refused from then on
 * (CREC_ERR_BINDING); what is left is to destroy the execs, then the communicator.
 */

/// Aborts the communicator: its kernels still waiting on other ranks return, and
/// it takes no collective any more. With NCCL 2.28 or newer this is ncclCommRevoke,
/// which leaves the NCCL communicator to crec_comm_destroy() (or, wrapped, to its
/// owner's ncclCommDestroy). With an older NCCL it is ncclCommAbort, run on a
/// thread of its own because NCCL frees the communicator only once every graph
/// that captured its collectives is destroyed; a wrapped communicator's owner must
/// then neither use nor destroy it. Idempotent. May be called from another thread
/// (a watchdog) while this one waits in crec_comm_synchronize() or crec_comm_agree(),
/// but not while another thread is inside crec_record(), crec_exec_replay() or
/// crec_run_eager() with it.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_CUDA (the NCCL call failed; the
/// communicator counts as aborted anyway).
crec_status crec_comm_abort(crec_comm *comm);

/// Returns 1 when `comm` was aborted (by crec_comm_abort() or a failed wait), else 0.
int crec_comm_aborted(const crec_comm *comm);

/// Waits until the work enqueued on `stream` so far is done, like
/// crec_stream_synchronize(), while watching `comm`: when NCCL reports an
/// asynchronous error (a peer process that died, a network error), or when
/// `timeout_ms` milliseconds pass first (`timeout_ms` <= 0: no deadline), it aborts
/// the communicator, waits up to 10 s more for the stream to drain, and fails. The
/// message names this rank, its device and the cause.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (an aborted communicator),
/// CREC_ERR_NO_DEVICE, CREC_ERR_TIMEOUT (the deadline passed, or another thread
/// aborted the communicator), CREC_ERR_REMOTE (NCCL's remote error), CREC_ERR_CUDA
/// (another NCCL error, or the stream failed).
crec_status crec_comm_synchronize(crec_comm *comm, crec_stream stream, int timeout_ms);

/// Tells every rank of `comm` this rank's `status` (with the calling thread's last
/// error message when `status` is not CREC_OK: call it right after the call that
/// failed) and learns theirs: every rank calls it at the same point of its sequence
/// of collectives, after the work it issued on `comm` is done. It gathers 512 bytes
/// per rank through NCCL on a private stream, bounded by `timeout_ms` as in
/// crec_comm_synchronize(); a one-rank communicator asks no one.
/// Returns CREC_OK when every rank reported CREC_OK; CREC_ERR_REMOTE when one did
/// not, on every rank (also the failing ones), with a message naming each failing
/// rank and its status, and the first one's message:
///     crec_comm_agree: rank 1 of 2 failed with ERR_BINDING: crec_record: binding 0 ('x'): ...
/// The communicator stays usable after CREC_ERR_REMOTE.
/// Errors: CREC_ERR_REMOTE, and those of crec_comm_synchronize() (the agreement
/// itself timed out or failed: the communicator is aborted), CREC_ERR_OUT_OF_MEMORY.
crec_status crec_comm_agree(crec_comm *comm, crec_status status, int timeout_ms);

/* ----------------------------------------------------- custom commands ---- */

/// A custom command: operands (holes allowed), program kernels its handler may
/// launch, and opaque attribute bytes, run by the handler registered under
/// `target` (looked up at record and at each eager run).
typedef struct crec_custom {
  size_t struct_size;            ///< sizeof(crec_custom)
  const char *target;            ///< the handler's name (copied)
  const crec_operand *operands;  ///< copied; a hole has buffer id 0
  size_t num_operands;
  const crec_kernel *kernels;    ///< kernels of this program the handler launches by index (copied)
  size_t num_kernels;
  const void *attributes;        ///< opaque bytes for the handler (copied), e.g. an MLIR attribute dictionary
  size_t attributes_size;
} crec_custom;
#define CREC_CUSTOM_INIT {sizeof(crec_custom), NULL, NULL, 0, NULL, 0, NULL, 0}

/// Appends a custom command. `name` may be NULL (the target).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT
/// (empty target, bad access, a written constant), CREC_ERR_OUT_OF_RANGE,
/// CREC_ERR_OUT_OF_MEMORY.
crec_status crec_program_add_custom(crec_program *program, crec_region region, const char *name,
                                    const crec_custom *custom, crec_command *out);

/// Reads back a custom command (arrays owned by the program). `out->struct_size`
/// must be set. Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE,
/// CREC_ERR_INVALID_ARGUMENT.
crec_status crec_command_get_custom(const crec_program *program, crec_command command,
                                    crec_custom *out);

/// What a handler sees of one execution of its command. Valid during the call.
typedef struct crec_custom_call {
  const char *target;
  const char *name;               ///< the command's name
  void *const *operands;          ///< per operand: its address this execution; NULL for holes
  const uint64_t *operand_sizes;  ///< per operand: bytes (0 for holes)
  size_t num_operands;
  const void *attributes;
  size_t attributes_size;
  size_t num_kernels;             ///< kernels launchable by index (crec_custom_launch.kernel)
} crec_custom_call;

/// How a handler makes its work.
typedef enum crec_custom_kind {
  /// create() adds kernel launches to a context (graph nodes at record, launches
  /// on the stream in eager runs); update() later gets the same launches back
  /// and sets their arguments for new operand addresses.
  CREC_CUSTOM_NODES = 0,
  /// trace() issues work on a stream, captured into a child graph like a GEMM
  /// (and run directly in eager runs).
  CREC_CUSTOM_TRACED = 1
} crec_custom_kind;

/// The context handed to create() and update().
typedef struct crec_custom_context crec_custom_context;

/// A handler function: returns CREC_OK, or a status that fails the record,
/// replay or eager run (the message then names the command and the handler).
typedef crec_status (*crec_custom_fn)(void *user, crec_custom_context *ctx,
                                      const crec_custom_call *call);
/// A traced handler function: issues the command's work on `stream` only
/// (no synchronization, no allocation of stream-ordered memory).
typedef crec_status (*crec_custom_trace_fn)(void *user, crec_stream stream,
                                            const crec_custom_call *call);

/// A handler.
typedef struct crec_custom_handler {
  size_t struct_size;         ///< sizeof(crec_custom_handler)
  crec_custom_kind kind;
  crec_custom_fn create;      ///< CREC_CUSTOM_NODES: required
  crec_custom_fn update;      ///< CREC_CUSTOM_NODES: required (called when operands changed)
  crec_custom_trace_fn trace; ///< CREC_CUSTOM_TRACED: required
  void *user;                 ///< passed to every call
  void (*user_free)(void *);  ///< called once the handler is unregistered and no exec uses it (may be NULL)
} crec_custom_handler;
#define CREC_CUSTOM_HANDLER_INIT {sizeof(crec_custom_handler), CREC_CUSTOM_NODES, NULL, NULL, NULL, NULL, NULL}

/// Registers `handler` (copied) under `target` for the whole process.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (empty target, struct_size,
/// unknown kind, a required function missing), CREC_ERR_DUPLICATE_NAME,
/// CREC_ERR_OUT_OF_MEMORY. On failure the caller keeps `user`.
crec_status crec_custom_register(const char *target, const crec_custom_handler *handler);

/// Unregisters `target`. Execs recorded with it keep using it; its `user_free`
/// runs when the last of them is destroyed (or now, when none uses it).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_NOT_FOUND.
crec_status crec_custom_unregister(const char *target);

/// A kernel launch made by a handler.
typedef struct crec_custom_launch {
  size_t struct_size;          ///< sizeof(crec_custom_launch)
  size_t kernel;               ///< index into the command's kernels (when `function` is NULL)
  void *function;              ///< or a CUfunction the handler loaded in the recording context
  uint32_t grid[3], block[3];
  uint32_t shared_bytes;       ///< dynamic shared memory
  void **params;               ///< one pointer per kernel parameter, as for cuLaunchKernel (values are copied)
} crec_custom_launch;
#define CREC_CUSTOM_LAUNCH_INIT {sizeof(crec_custom_launch), 0, NULL, {1, 1, 1}, {1, 1, 1}, 0, NULL}

/// In create(): adds a launch after those added before it (which it waits for);
/// `*index` (may be NULL) receives its index for update(). At record it becomes a
/// kernel node; in an eager run it is launched at once.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (called from update(),
/// struct_size, zero dims), CREC_ERR_OUT_OF_RANGE (kernel index), CREC_ERR_CUDA.
crec_status crec_custom_context_launch(crec_custom_context *ctx, const crec_custom_launch *launch,
                                       size_t *index);

/// In update(): sets launch `index` (made by create()) to `launch` in the executable graph.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (called from create()),
/// CREC_ERR_OUT_OF_RANGE (index, kernel index), CREC_ERR_CUDA.
crec_status crec_custom_context_update(crec_custom_context *ctx, size_t index,
                                       const crec_custom_launch *launch);

/// Returns the number of launches create() added (so far, during create()).
size_t crec_custom_context_launch_count(const crec_custom_context *ctx);

/// Returns the stream of an eager run, or NULL at record and update.
crec_stream crec_custom_context_stream(const crec_custom_context *ctx);

/* ------------------------------------------------------ host callbacks ---- */

/// A host callback: runs on a CUDA host thread and must not call CUDA.
typedef void (*crec_host_callback_fn)(void *user);

/// A host callback command. Host callbacks run once per execution, in program
/// order among themselves; `operands` order them against the commands that
/// touch those ranges (the callback reaches its data through `user`).
typedef struct crec_host_callback {
  size_t struct_size;            ///< sizeof(crec_host_callback)
  crec_host_callback_fn fn;
  void *user;
  void (*user_free)(void *);     ///< called when the program is freed (may be NULL)
  const crec_operand *operands;  ///< ranges it reads or writes (copied; no holes)
  size_t num_operands;
} crec_host_callback;
#define CREC_HOST_CALLBACK_INIT {sizeof(crec_host_callback), NULL, NULL, NULL, NULL, 0}

/// Appends a host callback (a CUDA host node; cuLaunchHostFunc in eager runs).
/// On success the program owns `user` (see user_free); on failure the caller keeps
/// it. A host callback inside a while, if or switch region runs eagerly but cannot
/// be recorded (CUDA conditional bodies hold no host nodes): crec_record() then
/// fails with CREC_ERR_UNSUPPORTED, unless the exec replays eagerly anyway
/// (crec_record_options.eager_control_flow, or a driver without conditional nodes).
/// `name` may be NULL ("host").
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT,
/// CREC_ERR_OUT_OF_RANGE, CREC_ERR_OUT_OF_MEMORY.
crec_status crec_program_add_host_callback(crec_program *program, crec_region region,
                                           const char *name, const crec_host_callback *callback,
                                           crec_command *out);

/// Reads back a host callback (operands owned by the program). `out->struct_size`
/// must be set. Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE,
/// CREC_ERR_INVALID_ARGUMENT.
crec_status crec_command_get_host_callback(const crec_program *program, crec_command command,
                                           crec_host_callback *out);

#ifdef __cplusplus
}
#endif
#endif
