/// \file capture.h
/// Imported graphs: CUDA graphs made by other code (stream capture around
/// PyTorch, cuBLAS or any library, or a graph built by hand) become execs whose
/// argument buffers are rebound at each replay, like a recorded program's.
///
/// crec finds where the graph holds each argument's address: every aligned
/// 8-byte word of every kernel node's parameters (so pointers inside structs
/// count), and the addresses of memcpy and memset nodes, in the graph and in
/// its child graphs (nested up to 4 deep; a node inside one is named by its
/// place, "1.0.3": position 3 in the child graph of node 0 in the child graph
/// of node 1). A replay sets a changed node inside a child graph in the exec's
/// copy of that child graph, then updates the top-level child graph node once
/// (cuGraphExecChildGraphNodeSetParams, which costs the whole child graph). A word inside an
/// argument's range, or one past its end (an end pointer), is a relocation:
/// (argument, offset into it); interior pointers keep their offset. A replay
/// rewrites only the nodes whose relocations point into an argument whose
/// binding changed (node by node: an imported exec never takes whole-graph
/// updates), through the same update path as recorded programs
/// (crec_exec_replay(), bind as you go, crec_exec_get_stats()); after a failed
/// update the next replay rewrites every relocated node.
///
/// A number that merely looks like a pointer into an argument is told apart by a
/// second capture of the same work made with other argument buffers: words that
/// move by their argument's displacement are relocations; words equal in both
/// are constants; a word that points, in both captures, to device memory outside
/// every argument (memory the work allocated for itself, such as PyTorch's pool
/// or a library's workspace) stays as in the first capture, and that memory must
/// outlive the exec. Any other difference in what a replay would pass is
/// refused, naming the node and, for kernels, the parameter and the byte:
/// parameter bytes, launch dimensions, copy extents and offsets, fill values and
/// shapes. (Edges, events, semaphores and kernel attributes are taken from the
/// first graph unchecked.) Without a second capture every word inside an
/// argument's range is taken for a pointer.
///
/// What cannot be rebound is refused with CREC_ERR_UNSUPPORTED, naming the node:
/// host nodes (crec cannot see what they read), conditional nodes (CUDA 13.0
/// has no call that returns a conditional node's body graphs: record such work
/// with crec's own conditional commands), graph memory nodes (allocations made during
/// capture), batched memory operations, copies or fills of more than one
/// dimension (the driver updates 1-D copies only), kernels that take their
/// parameters as one `extra` buffer, kernels captured in another context than
/// the import's device's, copies to or from host memory whose address differs
/// between the captures, and a driver without cuFuncGetParamInfo (CUDA 12.4).
/// Pointers the work stores in device memory itself (a table of pointers a
/// kernel reads) are not seen: such work keeps reading the first capture's
/// buffers. A rebinding must stay the kind of memory the capture had (the
/// driver refuses to move a copy from device memory to managed memory).
#ifndef CREC_CAPTURE_H
#define CREC_CAPTURE_H

#include <stdio.h>

#include "crec/exec.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A CUDA graph (a CUgraph).
typedef struct CUgraph_st *crec_graph;

/// An argument of captured work: memory the work was captured with, rebound at
/// each replay (crec_bindings.buffers, in this order).
typedef struct crec_graph_argument {
  const char *name;  ///< for errors and dumps (copied); NULL: "arg<i>"
  void *base;        ///< its device address in the (first) capture
  uint64_t size;     ///< its bytes; later bindings give at least this many
} crec_graph_argument;

/// Starts capturing the work issued to `stream` (cuStreamBeginCapture, in the
/// thread-local mode: other threads may keep using CUDA meanwhile).
/// Errors: CREC_ERR_NULL_POINTER (a NULL stream: the legacy stream cannot be
/// captured), CREC_ERR_NO_DEVICE, CREC_ERR_CUDA (naming the call).
crec_status crec_capture_begin(crec_stream stream);

/// Ends the capture of `stream`: `*out` gets the graph, which the caller owns
/// (crec_graph_destroy()). Errors: CREC_ERR_NULL_POINTER, CREC_ERR_NO_DEVICE,
/// CREC_ERR_CUDA (the capture was invalidated, e.g. by a synchronizing call
/// inside it). On failure `*out` is NULL.
crec_status crec_capture_end(crec_stream stream, crec_graph *out);

/// Destroys a graph from crec_capture_end() (NULL is a no-op).
void crec_graph_destroy(crec_graph graph);

/// What crec_import_graph() imports.
typedef struct crec_graph_import {
  size_t struct_size;                     ///< sizeof(crec_graph_import)
  crec_graph graph;                       ///< the work, made with `arguments[i].base`; the caller keeps it
  const crec_graph_argument *arguments;   ///< copied
  size_t num_arguments;
  crec_graph second;                      ///< NULL, or the same work made with `second_bases`
  void *const *second_bases;              ///< per argument, when `second` is given: each differs from `base`
} crec_graph_import;
#define CREC_GRAPH_IMPORT_INIT {sizeof(crec_graph_import), NULL, NULL, 0, NULL, NULL}

/// Imports `in->graph` as an exec (in the CUDA context of `options->device`, as
/// crec_record()): the graph is cloned, its relocations found (with `in->second`
/// when given, see above), and the clone instantiated. The exec replays with
/// crec_exec_replay() and bindings of the arguments in order (no scalars), or
/// crec_exec_bind_buffer() and crec_exec_launch(); arguments take any alignment.
/// What the captured work uses besides its arguments (memory it allocated, its
/// modules, events) must outlive the exec. Of `options`, `device` and
/// `trace_cache_size` matter; `device_updates` and `whole_update_percent` are not
/// used.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (struct_size, no
/// arguments, a size of 0, overlapping arguments, a second base equal to the
/// first), CREC_ERR_DUPLICATE_NAME, CREC_ERR_OUT_OF_RANGE (the device),
/// CREC_ERR_INVALID_PROGRAM (the two graphs are not the same work: node count,
/// type, kernel, dimensions or extents differ; a value that changes between them
/// for a reason other than an argument, naming the node, the parameter and the
/// byte; nothing in the graph points into any argument), CREC_ERR_UNSUPPORTED (see
/// above), CREC_ERR_NO_DEVICE, CREC_ERR_CUDA, CREC_ERR_OUT_OF_MEMORY. On failure
/// `*out` is NULL.
crec_status crec_import_graph(const crec_graph_import *in, const crec_record_options *options, crec_exec **out);

/// Issues work on `stream` using the arguments at `bases` (one address per
/// argument); called inside a stream capture, so it must not synchronize.
typedef crec_status (*crec_capture_fn)(void *user, crec_stream stream, void *const *bases);

/// Captures `fn` twice on `stream`, with the arguments' own bases and then with
/// `second_bases` (memory of the same sizes, which the work must accept as
/// well), and imports the first capture with the second to tell pointers from
/// numbers (crec_import_graph()). `second_bases` may be NULL: one capture, every
/// word inside an argument taken for a pointer. The arguments are checked
/// before `fn` is called; the captured graphs are destroyed before it returns;
/// the work is not run.
/// Errors: fn's own status, and those of crec_capture_begin(), crec_capture_end()
/// and crec_import_graph().
crec_status crec_capture_import(crec_capture_fn fn, void *user, crec_stream stream,
                                const crec_graph_argument *arguments, size_t num_arguments,
                                void *const *second_bases, const crec_record_options *options, crec_exec **out);

/// What an imported exec found: `*nodes` the graph's nodes, those of its child
/// graphs included (child graph nodes count too), `*relocated` those it rewrites
/// at replays, `*relocations` the words it rewrites. Errors:
/// CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (not an imported exec).
crec_status crec_exec_import_counts(const crec_exec *exec, size_t *nodes, size_t *relocated, size_t *relocations);

/// Writes what an imported exec rewrites to `f`: a line `imported graph: N nodes,
/// R rewritten at replays, A arguments`, then one line per rewritten node, e.g.
/// `  node 3 kernel 'scale' (4 parameters, 24 bytes): +8 -> x+0, +16 -> y+256`
/// (byte offsets in the parameters), or `  node 5 memcpy: src -> x+0, dst -> y+0`.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (not an imported exec),
/// CREC_ERR_IO, CREC_ERR_OUT_OF_MEMORY.
crec_status crec_exec_dump_import(const crec_exec *exec, FILE *f);

/// The same as a NUL-terminated string `*out` (freed with crec_free()), of `*size`
/// bytes (may be NULL); with `json` nonzero, as JSON:
/// `{"nodes":N,"relocated":R,"arguments":["x",...],"relocated_nodes":[{"node":3,
/// "type":"kernel","kernel":"scale","parameters":4,"parameter_bytes":24,
/// "relocations":[{"byte":8,"argument":"x","offset":0}]}, {"node":5,"type":"memcpy",
/// "relocations":[{"end":"src","argument":"x","offset":0}]}]}`.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (not an imported exec),
/// CREC_ERR_OUT_OF_MEMORY.
crec_status crec_exec_dump_import_string(const crec_exec *exec, int json, char **out, size_t *size);

#ifdef __cplusplus
}
#endif
#endif
