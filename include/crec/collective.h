/// \file collective.h
/// Collectives through NCCL (opened at run time), as traced commands; the
/// communicator slots of a program and the communicators bound to them; ranks
/// that fail or hang.
#ifndef CREC_COLLECTIVE_H
#define CREC_COLLECTIVE_H

#include "crec/device.h"
#include "crec/operand.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A communicator slot of a program: the NCCL communicator is bound at each
/// execution (crec_bindings.communicators, in the order slots were added).
typedef struct crec_comm_slot { uint32_t id; } crec_comm_slot;

/// Adds a communicator slot for communicators of `size` ranks.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_DUPLICATE_NAME (another communicator),
/// CREC_ERR_INVALID_ARGUMENT (size below 1 or above 65536), CREC_ERR_OUT_OF_MEMORY.
crec_status crec_program_add_communicator(crec_program *program, const char *name, int size,
                                          crec_comm_slot *out);

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
  CREC_COLLECTIVE_PERMUTE = 4,        ///< send goes to the targets of this rank's pairs; recv from its source, else zeros
  CREC_COLLECTIVE_REPLICA_ID = 5,     ///< recv = this rank's replica: its group's index (XLA's ReplicaId)
  CREC_COLLECTIVE_PARTITION_ID = 6    ///< recv = this rank's partition: its place in its group (XLA's PartitionId)
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
///
/// replica_id and partition_id write one CREC_ELEMENT_I32 into recv (4 bytes,
/// device memory) and take no send (leave it zero) and no pairs. The groups are
/// the device assignment: `num_groups` replicas of `group_size` partitions each,
/// row r holding the ranks of replica r in partition order, so that a rank's
/// replica is its row and its partition its column. No groups means every rank
/// its own replica: replica_id = rank, partition_id = 0. The value comes from the
/// rank of the communicator bound at each execution and is written at each
/// replay (a memset node, never NCCL), so the same program runs on every rank.
typedef struct crec_collective {
  size_t struct_size;            ///< sizeof(crec_collective)
  crec_collective_kind kind;
  crec_comm_slot communicator;
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
                                          crec_comm_slot communicator, crec_command *out);

/// Reads back a barrier: its communicator and its scratch temporary (both id 0 for
/// a barrier within the rank, from crec_program_add_barrier()). Either output may be
/// NULL. Errors: CREC_ERR_NULL_POINTER (program), CREC_ERR_INVALID_HANDLE,
/// CREC_ERR_INVALID_ARGUMENT (not a barrier).
crec_status crec_command_get_barrier(const crec_program *program, crec_command command,
                                     crec_comm_slot *communicator, crec_buffer *scratch);

/// Reads back a collective (for a done command: its start's description) with
/// resolved ranges; arrays are owned by the program. `out->struct_size` must be set.
/// `start` (may be NULL) receives the start a done command finishes, id 0 otherwise.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT.
crec_status crec_command_get_collective(const crec_program *program, crec_command command,
                                        crec_collective *out, crec_command *start);

/// Returns "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
/// "collective_permute", "replica_id", "partition_id", or "unknown".
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

#ifdef __cplusplus
}
#endif
#endif
