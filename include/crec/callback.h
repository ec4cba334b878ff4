/// \file callback.h
/// Host callbacks: host functions that run in stream order as graph host nodes.
#ifndef CREC_CALLBACK_H
#define CREC_CALLBACK_H

#include "crec/operand.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A host callback: runs on a CUDA host thread and must not call CUDA.
typedef void (*crec_host_callback_fn)(void *user);

/// A host callback told where its operands are in this execution: `addresses[i]` is
/// the address of byte `operands[i].range.offset` of that operand's buffer, and `count`
/// is `num_operands`. It runs on a CUDA host thread and must not call CUDA. Only
/// operands in host memory (host temporaries, host arguments) may be dereferenced
/// there; a device address can only be passed on.
typedef void (*crec_host_buffers_fn)(void *user, void *const *addresses, size_t count);

/// A host callback command. Host callbacks run once per execution, in program
/// order among themselves; `operands` order them against the commands that
/// touch those ranges (the callback reaches its data through `user`).
typedef struct crec_host_callback {
  size_t struct_size;            ///< sizeof(crec_host_callback)
  crec_host_callback_fn fn;      ///< set this or fn_buffers, not both
  void *user;
  void (*user_free)(void *);     ///< called when the program is freed (may be NULL)
  const crec_operand *operands;  ///< ranges it reads or writes (copied; no holes)
  size_t num_operands;
  crec_host_buffers_fn fn_buffers; ///< set this or fn: called with the operands' addresses
} crec_host_callback;
#define CREC_HOST_CALLBACK_INIT {sizeof(crec_host_callback), NULL, NULL, NULL, NULL, 0, NULL}

/// Appends a host callback (a CUDA host node; cuLaunchHostFunc in eager runs).
/// On success the program owns `user` (see user_free); on failure the caller keeps
/// it. A host callback inside a while, if or switch region runs eagerly but cannot
/// be recorded (CUDA conditional bodies hold no host nodes): crec_record() then
/// fails with CREC_ERR_UNSUPPORTED, unless the exec replays eagerly anyway
/// (crec_record_options.eager_control_flow, or a driver without conditional nodes).
/// `name` may be NULL ("host").
///
/// A `fn_buffers` callback gets the addresses of its operands. A recorded exec gives
/// each such host node one table of addresses, fixed at record: crec_record() refuses
/// (CREC_ERR_UNSUPPORTED) one whose operands include an argument buffer, whose address
/// a replay may change while an earlier launch's host node is still to run. Eager runs
/// take argument operands; an eager run with such callbacks waits for its stream
/// before it returns, so that the tables outlive the callbacks.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT
/// (both fn and fn_buffers set),
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
