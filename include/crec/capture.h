/// \file capture.h
/// Imported graphs: CUDA graphs made by other code (stream capture around
/// PyTorch, cuBLAS or any library, or a graph built by hand) become execs whose
/// argument buffers are rebound at each replay, like a recorded program's.
///
/// crec finds where the graph holds each argument's address, by evidence: the
/// same work captured again (up to three captures in all) with its arguments at
/// other addresses. Best, each later capture displaces every argument by a
/// multiple of 2 MiB, so every address keeps its alignment (kernels pick vector
/// widths from it) and pointer-derived values move by large, round steps. In
/// every kernel node's parameters (or its `extra` buffer), read as 8-byte words
/// at every 4-byte offset, and in every memcpy and memset node's addresses, in
/// the graph and its child graphs (nested up to 4 deep; a node inside one is
/// named by its place, "1.0.3": position 3 in the child graph of node 0 in the
/// child graph of node 1), a value is:
///  - a **relocation**: it points into an argument (or one past its end) in the
///    first capture and moves by exactly that argument's displacement in every
///    other; a replay rewrites it (interior pointers keep their offset);
///  - **memory the work allocated** for itself (device memory outside every
///    argument in every capture, such as PyTorch's pool or a library's
///    workspace): the first capture's stays, and must outlive the exec;
///  - a **constant**: the same in every capture;
///  - **noise**: it changes, but not by steps the displacements explain
///    (padding, an empty struct, a host address): replayed as the first
///    capture had it, as torch.cuda.graph replays it;
///  - **correlated**: it changes, in every capture, by what an argument's
///    displacement gives shifted right by up to 9 bits or negated, or by the
///    difference of two arguments' displacements: derived from their addresses
///    in a way a replay cannot rewrite (a pointer shifted or encoded, a
///    difference of pointers). A change in round steps that no argument
///    explains is noise (padding above a constant field changes so).
///
/// An argument crec cannot follow goes through a **copy**, alone: a memcpy node
/// added at the head of the graph copies each replay's binding into the first
/// capture's buffer (`base`), which the work then reads as captured; and,
/// unless `access` says the work does not write it, one at the tail copies it
/// back. Every other argument stays zero-copy. An argument is copied when a
/// correlated value follows it; when a copy from page-locked host memory
/// carries its address (a table of pointers the work reads on the device);
/// when nothing in the graph points into it (a pointer kept in device memory
/// reaches the work by a route crec does not read, or the work does not use
/// it); when a 2-D copy or fill touches it (the driver updates 1-D ones only);
/// when a copy's or fill's address points into it in the first capture and
/// elsewhere in another.
/// Every argument is copied when the graph holds a node crec cannot look into
/// (a host node, a node nested deeper than 4 child graphs), and when the
/// captures are not the same work
/// (node counts, kinds, kernels, launch shapes, copy extents or fill values
/// differ). crec_exec_import_route() says, per argument, which way it went and
/// why; the dumps say so too.
///
/// Without a second capture there is no evidence: every word inside an
/// argument's range is taken for a pointer, and nothing changes. A replay
/// rewrites only the nodes whose relocations point into an argument whose
/// binding changed (node by node: an imported exec never takes whole-graph
/// updates), through the same update path as recorded programs
/// (crec_exec_replay(), bind as you go, crec_exec_get_stats()); a relocated
/// node inside a child graph is set in the exec's copy of that child graph,
/// then the top-level child graph node is updated once
/// (cuGraphExecChildGraphNodeSetParams, which costs the whole child graph).
/// After a failed update the next replay rewrites every relocated node.
///
/// Refused with CREC_ERR_UNSUPPORTED, naming the node: conditional nodes (CUDA
/// 13.0 cannot clone a graph that holds one, nor return its bodies), graph
/// memory nodes (allocations made during capture, which a clone cannot own), kernels
/// captured in another context than the import's device's, and a driver
/// without cuFuncGetParamInfo (CUDA 12.4). A rebinding must stay the kind of
/// memory the capture had (the driver refuses to move a copy from device memory
/// to managed memory), and be at least as aligned as the argument's base.
#ifndef CREC_CAPTURE_H
#define CREC_CAPTURE_H

#include <stdio.h>

#include "crec/exec.h"
#include "crec/operand.h"

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
  /* since 0.2 (a caller built against 0.1 passes the smaller struct_size and gets NULLs) */
  crec_graph third;                       ///< NULL, or the same work made with `third_bases` (needs `second`)
  void *const *third_bases;               ///< per argument, when `third` is given: each differs from the others
  const crec_access *access;              ///< NULL (each argument read and written), or per argument how the work
                                          ///< uses it: a copied argument is copied back only when written
} crec_graph_import;
#define CREC_GRAPH_IMPORT_INIT {sizeof(crec_graph_import), NULL, NULL, 0, NULL, NULL, NULL, NULL, NULL}

/// Imports `in->graph` as an exec (in the CUDA context of `options->device`, as
/// crec_record()): the graph is cloned, its relocations found (with `in->second`
/// when given, see above), and the clone instantiated. The exec replays with
/// crec_exec_replay() and bindings of the arguments in order (no scalars), or
/// crec_exec_bind_buffer() and crec_exec_launch(); arguments take any alignment.
/// What the captured work uses besides its arguments (memory it allocated, its
/// modules, events) must outlive the exec. Of `options`, `device` and
/// `trace_cache_size` matter; `device_updates` and `whole_update_percent` are not
/// used.
/// An import is never refused for what it finds in the captures: what crec
/// cannot follow goes through a copy (see above).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (struct_size, no
/// arguments, a size of 0, overlapping arguments, a later base equal to an
/// earlier one, `third` without `second`), CREC_ERR_DUPLICATE_NAME,
/// CREC_ERR_OUT_OF_RANGE (the device), CREC_ERR_UNSUPPORTED (see above),
/// CREC_ERR_NO_DEVICE, CREC_ERR_CUDA, CREC_ERR_OUT_OF_MEMORY. On failure `*out`
/// is NULL.
crec_status crec_import_graph(const crec_graph_import *in, const crec_record_options *options, crec_exec **out);

/// Issues work on `stream` using the arguments at `bases` (one address per
/// argument); called inside a stream capture, so it must not synchronize.
typedef crec_status (*crec_capture_fn)(void *user, crec_stream stream, void *const *bases);

/// Captures `fn` twice on `stream`, with the arguments' own bases and then with
/// `second_bases` (memory of the same sizes, which the work must accept as
/// well: displaced by multiples of 2 MiB is best), and imports the first
/// capture with the second as evidence (crec_import_graph(); every argument
/// read and written). `second_bases` may be NULL: one capture, every word
/// inside an argument taken for a pointer. The arguments are checked
/// before `fn` is called; the captured graphs are destroyed before it returns;
/// the work is not run.
/// Errors: fn's own status, and those of crec_capture_begin(), crec_capture_end()
/// and crec_import_graph().
crec_status crec_capture_import(crec_capture_fn fn, void *user, crec_stream stream,
                                const crec_graph_argument *arguments, size_t num_arguments,
                                void *const *second_bases, const crec_record_options *options, crec_exec **out);

/// Appends imported graph `imported` (an exec from crec_import_graph() or
/// crec_capture_import()) to `region` of `program` as a command named `name`
/// (NULL: "graph"), so that captured work (a PyTorch step, a library call) sits
/// among the program's other commands: in its body, in a while loop's body or
/// cond region, in a branch of an if or switch.
///
/// `operands` gives, per argument of the import (in its order), the program
/// range the work reads and writes there, and how (CREC_ACCESS_READ_WRITE
/// unless the caller knows better: hazard-based dependencies with the
/// program's other commands follow these accesses). Each range is device
/// memory of a static size, at least the bytes the argument was captured with;
/// it may be an argument of the program (rebound at each replay), a
/// temporary or a constant. An argument the import copies back after the work
/// must be written (CREC_ACCESS_WRITE). Keep each range at least as aligned as
/// the argument's first capture was (kernels chose vector widths from it):
/// crec does not check that. Graph commands run in program order among
/// themselves (captured work uses memory besides its operands, a capture pool
/// or a library's workspace, which imports may share).
///
/// At each record the imported graph's nodes are added to the program's graph
/// (child graphs opened, programmatic edges between kernels kept): a relocated
/// node points into the operands, and a replay that moves an operand's buffer
/// rewrites only the nodes that point into it, per node (an exec with graph
/// commands takes no whole-graph updates). Inside a conditional body, a copy
/// or fill that follows an operand is crec's copy or fill kernel (the driver
/// does not move a memcpy node's addresses there); a host node, a 2-D copy or
/// fill that follows an operand, or a node of another kind is refused at record
/// with CREC_ERR_UNSUPPORTED, naming the node ("node 1.3 of the imported
/// graph"). Outside conditional bodies host nodes are kept as captured. An
/// argument the import copies (crec_exec_import_route()) is copied in and
/// back around the work, as in the imported exec. crec_run_eager() replays
/// the imported exec on its stream, bound to the operands.
///
/// The program holds `imported` from here on: the caller still destroys it
/// once (crec_exec_destroy()), which then leaves it to the program; the
/// program destroys it when it is destroyed itself (execs recorded from the
/// program hold the program). While the program holds it, replay it only
/// through the program: records and eager runs of graph commands of one import
/// take turns, its own replays do not. A program with a graph command cannot
/// be written to a program file.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE,
/// CREC_ERR_INVALID_ARGUMENT (`imported` not an imported exec, the count of
/// operands, a host range, an unknown access, a written constant, a read-only
/// operand for an argument copied back),
/// CREC_ERR_OUT_OF_RANGE (a range past its buffer, or smaller than the
/// argument's capture), CREC_ERR_INVALID_PROGRAM (the program was recorded or
/// run), CREC_ERR_OUT_OF_MEMORY. On failure the caller keeps `imported`.
crec_status crec_program_add_graph(crec_program *program, crec_region region, const char *name,
                                   crec_exec *imported, const crec_operand *operands, size_t num_operands,
                                   crec_command *out);

/// What an imported exec found: `*nodes` the graph's nodes, those of its child
/// graphs included (child graph nodes count too), `*relocated` those it rewrites
/// at replays, `*relocations` the words it rewrites. Errors:
/// CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (not an imported exec).
crec_status crec_exec_import_counts(const crec_exec *exec, size_t *nodes, size_t *relocated, size_t *relocations);

/// The edges of an imported exec's graph, those of the child graphs it reads included, in
/// `*edges`, and in `*programmatic` how many of them are programmatic: kernels that
/// use programmatic dependent launch (PDL) leave such edges when captured, letting
/// the next kernel start before the previous one ends. The exec's graph keeps them
/// as captured, through every rebinding. Errors: CREC_ERR_NULL_POINTER,
/// CREC_ERR_INVALID_ARGUMENT (not an imported exec).
crec_status crec_exec_import_edges(const crec_exec *exec, size_t *edges, size_t *programmatic);

/// How an imported exec passes one argument to the captured work.
typedef struct crec_import_route {
  size_t struct_size;  ///< sizeof(crec_import_route)
  int copied;          ///< nonzero: copied into the first capture's buffer before each launch
  int copied_back;     ///< nonzero: and copied back to the binding after it (the work may write it)
  size_t relocations;  ///< words rewritten for it at replays (0 when copied)
  const char *why;     ///< copied: why, naming the node; "" when rebound (the exec's, valid while it lives)
} crec_import_route;
#define CREC_IMPORT_ROUTE_INIT {sizeof(crec_import_route), 0, 0, 0, NULL}

/// How imported exec `exec` passes argument `index` (in the import's order) to
/// the work: `*out` (its struct_size set; a smaller, older one gets its fields).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (not an imported
/// exec, struct_size), CREC_ERR_OUT_OF_RANGE (`index`).
crec_status crec_exec_import_route(const crec_exec *exec, size_t index, crec_import_route *out);

/// Writes what an imported exec rewrites to `f`: a line `imported graph: N nodes,
/// R rewritten at replays, A arguments`, then one line per rewritten node, e.g.
/// `  node 3 kernel 'scale' (4 parameters, 24 bytes): +8 -> x+0, +16 -> y+256`
/// (byte offsets in the parameters), or `  node 5 memcpy: src -> x+0, dst -> y+0`;
/// then one line per argument, `  argument 'x': rebound (3 words)` or
/// `  argument 'x': copied in and back at each launch: WHY`; then, when the
/// captures had noise, `  replayed as captured: B bytes in N places`, and a line
/// per place (the first 64), `    node 7 parameter 1, byte 16 (4 bytes)`.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (not an imported exec),
/// CREC_ERR_IO, CREC_ERR_OUT_OF_MEMORY.
crec_status crec_exec_dump_import(const crec_exec *exec, FILE *f);

/// The same as a NUL-terminated string `*out` (freed with crec_free()), of `*size`
/// bytes (may be NULL); with `json` nonzero, as JSON:
/// `{"nodes":N,"relocated":R,"arguments":["x",...],"relocated_nodes":[{"node":3,
/// "path":"3","type":"kernel","kernel":"scale","parameters":4,"parameter_bytes":24,
/// "relocations":[{"byte":8,"argument":"x","offset":0}]}, {"node":5,"path":"5",
/// "type":"memcpy","relocations":[{"end":"src","argument":"x","offset":0}]}],
/// "routes":[{"argument":"x","route":"rebound","relocations":3},{"argument":"y",
/// "route":"copied","back":true,"why":"..."}],"as_captured":{"bytes":B,
/// "places":[{"node":"7","parameter":1,"byte":16,"size":4}]}}` (a copy node crec
/// added is a relocated node of `"node":null`, its path "copy in y";
/// `"parameter"` is null for an `extra` buffer).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (not an imported exec),
/// CREC_ERR_OUT_OF_MEMORY.
crec_status crec_exec_dump_import_string(const crec_exec *exec, int json, char **out, size_t *size);

#ifdef __cplusplus
}
#endif
#endif
