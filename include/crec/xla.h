/// \file xla.h
/// A crec exec run by XLA as a typed FFI custom call: inside `jax.jit` (the
/// Python package's `crec.jax.call`), or by any XLA client that registers the
/// handler. XLA hands the call its CUDA stream and its argument and result
/// buffers; the handler binds them, arguments then results, as the exec's
/// program arguments and replays the exec on that stream
/// (crec_exec_replay_buffers(): only the nodes whose buffers moved are updated).
///
/// Life cycle:
///  1. record the exec (crec_record(), crec_import_graph()), of a program
///     whose bindings are buffers alone: as many as the call has arguments
///     plus results, each at least as large as the exec was last bound with;
///  2. register crec_xla_ffi_handler with XLA for the CUDA platform under a
///     name of your choice (JAX: `jax.ffi.register_ffi_target(name,
///     jax.ffi.pycapsule(fn), platform="CUDA")`; crec.jax uses "crec_replay");
///  3. call that target with the exec's address as a 64-bit integer scalar
///     attribute named `exec` (`jax.ffi.ffi_call(name, outputs)(*arrays,
///     exec=np.uint64(address))`);
///  4. destroy the exec only once no compiled XLA program that names its
///     address can run again: XLA keeps the address in the compiled program.
///
/// The handler speaks XLA FFI API version 0.1 (and reports that version when
/// XLA asks at registration), which XLA accepts from 0.1 on; it refuses a
/// framework of another major version. crec_xla_ffi_handler declares no handler
/// traits: XLA does not trace the call into its own command buffers (CUDA graphs),
/// it calls the handler each time, and the replay launches crec's graph on XLA's
/// stream; crec_xla_ffi_handler_graphable lets XLA capture it instead.
///
/// What XLA assumes of a custom call holds for the program: it may write its
/// result buffers only (XLA's inputs are immutable: a program that writes an
/// argument XLA passed as an input corrupts that array), and the result
/// buffers hold no defined value before it writes them. One exec replays one
/// call at a time: do not run two XLA programs that name the same exec at once
/// on different streams.
#ifndef CREC_XLA_H
#define CREC_XLA_H

#ifdef __cplusplus
extern "C" {
#endif

/// Handles one XLA FFI call (XLA_FFI_Handler: `call_frame` is an
/// XLA_FFI_CallFrame *, the result an XLA_FFI_Error *, NULL on success, which
/// XLA owns). For the metadata query that XLA makes at registration, writes
/// API version 0.1 and no traits into the query's metadata. At the
/// instantiate, prepare and initialize stages it does nothing. At the execute
/// stage it reads the `exec` attribute (an int64 or uint64 scalar: the address
/// of a crec_exec, which the caller keeps alive), checks that the call's
/// arguments and results are buffers, that there are as many as the exec's
/// program has arguments, and that each holds at least the bytes the exec was
/// last bound with at that position; gets the stream from XLA
/// (XLA_FFI_Stream_Get); and replays the exec on it with the buffers' addresses.
/// Nothing is launched unless every check passed.
///
/// Errors are returned as XLA errors, each message starting with
/// "crec_xla_ffi_handler: ": INVALID_ARGUMENT for a call frame that does not
/// match the ABI (struct sizes), a missing, mistyped or zero `exec` attribute,
/// an argument or result that is not a buffer or has an unknown element type,
/// a count that differs from the program's, or a buffer smaller than needed
/// (naming its position, shape and the program argument it binds);
/// FAILED_PRECONDITION for an XLA FFI API of another major version (naming
/// both versions) or an XLA_FFI_Api too small to hold XLA_FFI_Stream_Get;
/// INTERNAL for a failed XLA_FFI_Stream_Get (with XLA's message); and, when the replay
/// fails, the code that matches crec's status, with a message naming
/// crec_exec_replay_buffers, the status and crec_last_error().
/// None of the checks before the stream calls CUDA.
void *crec_xla_ffi_handler(void *call_frame);

/// crec_xla_ffi_handler(), but declared command-buffer compatible in the metadata
/// query (XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE): with command buffers
/// on for custom calls (XLA's --xla_gpu_enable_command_buffer), XLA captures the call into
/// its own CUDA graph, and the replay, on a capturing stream, adds the exec's graph
/// to that capture as a child graph node (crec_exec_replay() says how); XLA then
/// replays its graph without calling the handler, and calls it again under a new
/// capture when the buffers change. Register it only for execs that
/// crec_exec_capturable() accepts: for another, the captured call fails with that
/// refusal (crec.jax chooses between the two handlers per exec).
void *crec_xla_ffi_handler_graphable(void *call_frame);

#ifdef __cplusplus
}
#endif

#endif
