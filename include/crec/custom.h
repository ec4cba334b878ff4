/// \file custom.h
/// Custom commands: work that handlers registered by name add to the graph
/// (kernel launches they later update, or stream work that is captured).
#ifndef CREC_CUSTOM_H
#define CREC_CUSTOM_H

#include "crec/device.h"
#include "crec/operand.h"

#ifdef __cplusplus
extern "C" {
#endif

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
/// crec fills it (there is no _INIT macro) and sets `struct_size` first: a handler
/// built against a newer header than the library it runs with reads a field only
/// when `struct_size > offsetof(crec_custom_call, field)`.
typedef struct crec_custom_call {
  size_t struct_size;             ///< sizeof(crec_custom_call) in the library that made the call
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
  /// and sets their arguments for new operand addresses. With
  /// crec_record_options.variants, update() sets them in the executable graph
  /// about to launch, called when the operands differ from what that graph holds
  /// (not from the last launch's): it must set what the call gives, not skip by
  /// state of its own.
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

#ifdef __cplusplus
}
#endif
#endif
