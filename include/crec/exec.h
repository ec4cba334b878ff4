/// \file exec.h
/// Recording a program into a CUDA graph, replaying it, and running it eagerly.
///
/// Life cycle of an execution:
///  1. crec_record(program, bindings, options, &exec): loads the program's modules
///     once per CUDA context, and every kernel function in them at once (not at
///     its first launch, as CUDA's lazy loading would: a load during a replay can
///     deadlock against collective kernels waiting on other GPUs), allocates the
///     temporary arena, uploads constants, builds the graph from the plan's
///     dependency DAG and instantiates it;
///  2. crec_exec_replay(exec, bindings, stream) as often as needed: checks the
///     bindings, updates only the graph nodes whose arguments changed since the
///     last execution (nothing when nothing changed), and launches;
///  3. crec_exec_destroy(exec).
///
/// crec_run_eager() issues the same program command by command on a stream, with
/// control flow driven from the host; it is the reference and the baseline.
///
/// Threads: an exec belongs to one thread at a time; different execs (also of one
/// program) may record and replay on different threads at once, and eager runs of
/// one program may run on several threads. Execs that replay at the same time need
/// distinct communicators (NCCL forbids concurrent use of one). A program must not
/// be modified while an exec or eager run uses it; it may be destroyed while execs
/// of it live (they keep what they need).
#ifndef CREC_EXEC_H
#define CREC_EXEC_H

#include "crec/device.h"
#include "crec/library.h"
#include "crec/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/// One argument buffer binding: `size` bytes usable at `ptr`.
typedef struct crec_binding {
  void *ptr;
  uint64_t size;
} crec_binding;

/// Everything bound at one execution.
typedef struct crec_bindings {
  size_t struct_size;           ///< sizeof(crec_bindings)
  const crec_binding *buffers;  ///< one per argument buffer, in argument order
  size_t num_buffers;
  const crec_value *scalars;    ///< one per bound scalar, in binding order
  size_t num_scalars;
  crec_comm *const *communicators; ///< one per communicator slot (library.h), in slot order
  size_t num_communicators;
} crec_bindings;
#define CREC_BINDINGS_INIT {sizeof(crec_bindings), NULL, 0, NULL, 0, NULL, 0}

/// How replays apply the node parameters that changed (crec_record_options.update_strategy).
typedef enum crec_update_strategy {
  CREC_UPDATE_AUTO = 0,     ///< each replay takes what crec's cost model (crec_update_model) says is
                            ///< cheapest among what the exec can do: node by node on the host, the
                            ///< device-side updater (device_updates), or one whole-graph update
  CREC_UPDATE_PER_NODE,     ///< every changed node is set on the host, one driver call each
  CREC_UPDATE_DEVICE,       ///< the changed device-path nodes always go through the updater (the rest
                            ///< node by node); needs device_updates
  CREC_UPDATE_WHOLE_GRAPH   ///< every replay that changes a node updates the whole graph in one call
                            ///< (cuGraphExecUpdate), where the driver allows it (not with traced or
                            ///< custom commands: those replays go node by node); refused with
                            ///< device_updates
} crec_update_strategy;
/// A nonzero crec_record_options.whole_update_percent overrides any of these for the
/// whole-graph choice: at or above it a replay updates the whole graph, below it never.
/// Whatever the choice, while an updater run of a queued launch has not finished, the
/// device-path nodes of a replay stay with the updater (the driver leaves a host set of
/// a node the device may be updating undefined).

/// Options of crec_record(). A caller built against an older header passes its
/// smaller struct_size: the fields it does not know take their defaults.
typedef struct crec_record_options {
  size_t struct_size;       ///< sizeof(crec_record_options)
  int device;               ///< CUDA device ordinal (default 0); its primary context is used
  crec_schedule schedule;   ///< concurrent (default) or sequential
  uint32_t whole_update_percent; ///< 1..100: a replay that changes at least this percentage of
                                 ///< the graph's nodes uses one whole-graph update instead of
                                 ///< per-node updates, whatever update_strategy says; 0 (default):
                                 ///< update_strategy decides (per node measured cheaper at every
                                 ///< fraction on an H200 with driver 580: crec_bench_replay prints
                                 ///< the crossover)
  int legacy_conditionals;  ///< nonzero: record if/else and switch as one IF node per branch, as
                            ///< on drivers older than CUDA 12.8 (which get this anyway)
  uint32_t trace_cache_size; ///< captured child graphs kept per traced command (GEMM, FFT, Cholesky,
                             ///< convolution, collective, traced custom), the installed one included: default 16; 0 counts
                             ///< as 1 (every change of addresses captures again)
  int eager_control_flow;   ///< nonzero: a program with control flow runs eagerly (host-driven) at
                            ///< each replay instead of as a graph, as on drivers older than CUDA
                            ///< 12.3, which have no conditional nodes and get this anyway;
                            ///< crec_exec_stats.eager_commands counts what ran that way
  uint64_t max_loop_iterations; ///< the iteration limit of every while loop that sets none of its
                                ///< own (crec_program_set_loop_limit()); 0 (default): unlimited
  int device_updates;       ///< nonzero: a replay's changed kernel parameters are applied on the device.
                            ///< Kernel nodes of the program's body are made device-updatable, and an
                            ///< updater node at the head of the graph (kernels/updater.cu) writes the
                            ///< new parameters of the nodes that changed, read from a page-locked table
                            ///< the host fills with those alone: the host cost of a replay becomes one
                            ///< small write per changed node plus the launch (the updater's parameters never
                            ///< change: it finds its table through a control block). Which replays use
                            ///< it is update_strategy's choice (by default the cost model's: a replay
                            ///< that changes a few nodes sets them on the host). Device-updatable nodes
                            ///< cost every replay some device time, changed or not: an unchanged replay
                            ///< of 1,000 / 10,000 tiny kernels took 1,119 / 11,044 us against 881 /
                            ///< 8,908 us without (H200, crec_bench_replay, two sections of one run), so
                            ///< this pays where updates are many and kernels are not tiny. Whole-graph updates
                            ///< are then off (the driver refuses them for such graphs). The host path
                            ///< keeps: kernels inside control flow, kernels with a cluster or with
                            ///< dimensions that follow scalars, memcpy, memset, set-condition, traced
                            ///< and custom nodes, and every node on a chip the updater has no image for
                            ///< (before sm_80). crec_exec_stats.device_nodes says how many took it.
  int profile;              ///< nonzero: for crec_exec_profile() (profile.h) of an exec with while loops.
                            ///< CUPTI's activity API (libcupti.so.13, opened at run time) is turned on
                            ///< before the graph is built and stays on until the exec is destroyed: in a
                            ///< graph instantiated before it was on, CUPTI reports each node of a loop's
                            ///< body once per launch, whatever the iterations (measured on CUDA 13.0).
                            ///< While on, CUPTI times every kernel of the process (records no profile
                            ///< collects are dropped). Without CUPTI, or with another tool using it
                            ///< (compute-sanitizer, Nsight), the record fails with CREC_ERR_UNSUPPORTED.
  crec_update_strategy update_strategy; ///< how replays apply what changed (default CREC_UPDATE_AUTO)
  int trace_child_graphs;   ///< nonzero: every traced command becomes a child graph node, as before
                            ///< inlining. By default a traced command whose capture at record is a
                            ///< chain of at most 8 kernel nodes (a cuBLASLt GEMM, most often one kernel)
                            ///< is *inlined*: those kernels become nodes of the exec's graph, with the
                            ///< launch attributes captured, and a replay with new addresses sets them
                            ///< from the capture for those addresses (cached as for child graphs) with
                            ///< one cuGraphExecKernelNodeSetParams each, instead of swapping a child
                            ///< graph. A capture under new addresses that is not the same chain of the
                            ///< same kernels then fails the replay with CREC_ERR_UNSUPPORTED.
                            ///< Collectives and barriers across ranks (NCCL) always stay child graphs.
  uint32_t variants;        ///< executable graphs instantiated from the one recorded graph, 1..16 (0
                            ///< counts as 1). Each keeps the values it was last launched with. A replay
                            ///< launches the one that already holds its bindings, updating nothing;
                            ///< when none does, it updates the least recently launched one (node by
                            ///< node, against that one's values) and launches it. Bindings that rotate
                            ///< through up to `variants` sets (double-buffered inputs, a pool of
                            ///< outputs) then cost no update at all. Costs: the record instantiates
                            ///< `variants` times; each keeps its own copy of the graph's parameters on
                            ///< the device; a replay whose bindings changed compares every slot against
                            ///< the other variants' (bind as you go included), and every launch records
                            ///< an event, which a launch on another stream than the last waits for
                            ///< (launches of different executable graphs are not ordered by CUDA, and
                            ///< they share the exec's temporaries). With more than 1: device_updates,
                            ///< whole-graph updates (whole_update_percent, CREC_UPDATE_WHOLE_GRAPH) are
                            ///< refused (CREC_ERR_INVALID_ARGUMENT), and so are, with CREC_ERR_UNSUPPORTED,
                            ///< programs with control flow (CUDA instantiates a graph with conditional
                            ///< nodes once) and imported graphs with relocations inside child graphs; an
                            ///< exec that replays eagerly keeps 1. crec_exec_stats.variant_* count what
                            ///< replays did.
} crec_record_options;
#define CREC_RECORD_OPTIONS_INIT                                                                     \
  {sizeof(crec_record_options), 0, CREC_SCHEDULE_CONCURRENT, 0, 0, 16, 0, 0, 0, 0, CREC_UPDATE_AUTO, 0, 1}

/// An opaque recorded execution.
typedef struct crec_exec crec_exec;

/// Records `program` with `bindings` (which size dynamic arguments and give the
/// first execution's values) into a new exec `*out`, owned by the caller.
/// `options` may be NULL for defaults. Nothing is launched.
/// Library commands (library.h) are set up here: GEMM and convolution algorithms are
/// chosen, FFT plans made, traced commands captured, custom handlers looked up and
/// their create() called.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (options), CREC_ERR_BINDING and
/// CREC_ERR_MISALIGNED (see crec_exec_replay()), CREC_ERR_OUT_OF_RANGE (no such device; an
/// FFT, Cholesky or convolution whose library asks for more work area than its workspace),
/// CREC_ERR_INVALID_PROGRAM (also: a launch that does not match its kernel's parameters),
/// CREC_ERR_NOT_FOUND (a kernel missing from its module), CREC_ERR_NO_DEVICE, CREC_ERR_CUDA
/// (naming the command and the driver, cuBLASLt, cuFFT, cuSOLVER, cuDNN or NCCL call),
/// CREC_ERR_HOST_FUNCTION,
/// CREC_ERR_NOT_FOUND (a custom target nobody registered), CREC_ERR_UNSUPPORTED (a missing
/// library, a host callback inside control flow, variants of a graph with conditional nodes
/// or of an import with relocations inside child graphs), a custom handler's own status,
/// CREC_ERR_OUT_OF_MEMORY.
/// On failure nothing is leaked and `*out` is NULL.
crec_status crec_record(const crec_program *program, const crec_bindings *bindings,
                        const crec_record_options *options, crec_exec **out);

/// Replays `exec` on `stream` with `bindings`: checks them (count, NULL, size at
/// least what the program uses, alignment; communicators: count, size, device),
/// runs host functions when scalars changed, updates the nodes that use a changed
/// binding (swapping in or capturing child graphs of traced commands, calling
/// custom handlers' update()), and launches the graph.
/// Updates never disturb a launch still in flight. On a binding error nothing is
/// updated or launched and the exec stays usable.
/// Only bindings that differ from the last execution's are checked again (the others
/// were checked when they were bound).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (struct_size), CREC_ERR_BINDING
/// (names the binding), CREC_ERR_MISALIGNED, CREC_ERR_HOST_FUNCTION, CREC_ERR_CUDA,
/// CREC_ERR_UNSUPPORTED (a re-captured traced command whose graph changed shape),
/// CREC_ERR_OUT_OF_MEMORY, a custom handler's status, CREC_ERR_DEVICE_ASSERT (a kernel's
/// assertion failed in an earlier launch: the context is lost, so is the exec).
/// A replay first reports a while loop that an earlier replay stopped at its
/// iteration limit (crec_program_set_loop_limit()): it returns CREC_ERR_LOOP_LIMIT
/// naming the loop, launches nothing and forgets the report, so the next call
/// replays again.
///
/// On a stream being captured (cuStreamBeginCapture, torch.cuda.graph, any mode),
/// a replay, crec_exec_replay_buffers() or crec_exec_launch() launches nothing: the
/// exec's graph, with this replay's bindings, is added to the graph being captured
/// as one child graph node after the capture's current dependencies, and the
/// capture goes on from that node. An exec with conditional nodes (while, if,
/// switch), which a child graph cannot hold, has its program's nodes, bodies
/// included, built into the graph being captured instead, and the capture goes
/// on from its last nodes; its loops' iteration counts and limit reports stay
/// the exec's (crec_exec_check() reports a loop of the outer graph's launch that
/// stopped at its limit), and a host callback given its operands' addresses is
/// refused there. A failure while building leaves what was added in the graph
/// being captured, which then must not be launched: end that capture and
/// discard its graph. The outer graph owns what was added: the exec's
/// later replays and updates do not reach it, and the exec keeps the last execution's
/// values (stats.captured_replays counts these). The added node still uses the exec's
/// temporaries: destroy the exec only after the outer graph's last launch, and do
/// not run the outer graph and the exec's own replays at the same time. Refused with
/// CREC_ERR_UNSUPPORTED, naming why, before anything reaches the capture: an eager
/// exec, one recorded with device_updates, with library calls or custom commands, or an import rebound
/// inside child graphs; the legacy default stream while another stream captures in
/// global mode. A capture already invalidated returns CREC_ERR_CUDA.
crec_status crec_exec_replay(crec_exec *exec, const crec_bindings *bindings, crec_stream stream);

/// Whether a replay of `exec` on a stream being captured can be added to that
/// capture as one child graph node, which is what a capture traced into a child
/// graph needs (XLA's command buffers trace a command-buffer compatible custom
/// call so; crec.jax asks this): CREC_OK, or CREC_ERR_UNSUPPORTED with the reason,
/// as the last error: those of crec_exec_replay(), and conditional nodes (which
/// crec_exec_replay() adds to the captured graph itself, but a child graph cannot
/// hold). Calls no CUDA.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_UNSUPPORTED.
crec_status crec_exec_capturable(const crec_exec *exec);

/// Replays `exec` on `stream` with argument `i` bound to `ptrs[i]`, at the size it was
/// last bound with: crec_exec_replay() for a program whose bindings are all buffers of
/// fixed sizes (an imported graph's arguments, say), for callers that hold addresses
/// alone (crec.torch calls it per call). Only the addresses that differ from the last
/// execution's are checked (NULL, alignment) and updated.
/// Errors: those of crec_exec_replay(); CREC_ERR_INVALID_ARGUMENT (`count` is not the
/// program's argument count; the program has bound scalars or communicators: use
/// crec_exec_replay()).
crec_status crec_exec_replay_buffers(crec_exec *exec, void *const *ptrs, size_t count, crec_stream stream);

/// Binding slot by slot ("bind as you go", as SQLite binds and then steps): each
/// crec_exec_bind_*() call checks one slot and stages it; crec_exec_launch() applies
/// what was bound since the last execution and launches. A launch costs what was
/// bound (its checks, the nodes that use a changed slot), never a pass over every
/// argument, so a caller that knows what changed pays for that alone.
///
/// How the two forms mix: the exec holds one set of slots, the last execution's.
/// Slots bound one by one stay pending until crec_exec_launch(); a slot rebound
/// before then takes its last value; a slot bound to the value it already has
/// updates nothing. crec_exec_replay() binds every slot anew: what was pending is
/// dropped, whether the replay succeeds or not. crec_exec_launch() with nothing
/// pending launches the last execution's bindings again.
///
/// A bad value is refused by the bind call (the slot keeps what it had, and the exec
/// stays usable). Checks that span slots (a whole-range copy or fill of a
/// dynamic-size argument, which depends on the sizes of others) run at launch; a
/// launch that fails leaves the graph with the last execution's values and the
/// pending slots pending: bind again and launch, or crec_exec_clear_bindings().

/// Binds argument `index` (in argument order) to `size` bytes at `ptr` for the next
/// crec_exec_launch(): checked as crec_exec_replay() checks a binding (NULL, size at
/// least what the program uses, alignment), then staged. The caller keeps owning the memory.
/// Errors: CREC_ERR_NULL_POINTER (exec), CREC_ERR_OUT_OF_RANGE (index), CREC_ERR_BINDING
/// (names the argument), CREC_ERR_MISALIGNED.
crec_status crec_exec_bind_buffer(crec_exec *exec, size_t index, void *ptr, uint64_t size);

/// Binds bound scalar `index` (in binding order, as crec_bindings.scalars) to `value` for the
/// next crec_exec_launch(). Launch dimensions that follow it are checked at launch.
/// Errors: CREC_ERR_NULL_POINTER (exec), CREC_ERR_OUT_OF_RANGE (index).
crec_status crec_exec_bind_scalar(crec_exec *exec, size_t index, crec_value value);

/// Binds communicator slot `index` (library.h; in slot order) to `comm` for the next
/// crec_exec_launch(). `comm` must have the slot's size and the rank and device the exec
/// was recorded for, and must not be aborted; the caller keeps owning it and keeps it
/// alive while the exec may launch with it.
/// Errors: CREC_ERR_NULL_POINTER (exec), CREC_ERR_OUT_OF_RANGE (index), CREC_ERR_BINDING.
crec_status crec_exec_bind_comm(crec_exec *exec, size_t index, crec_comm *comm);

/// Drops what was bound since the last execution: every slot goes back to the last
/// execution's value. Errors: CREC_ERR_NULL_POINTER.
crec_status crec_exec_clear_bindings(crec_exec *exec);

/// Launches `exec` on `stream` with the slots as bound: runs the host functions whose
/// scalars changed, updates the nodes that use a changed slot (as crec_exec_replay()
/// does), and launches. Counted in crec_exec_stats.replays and .launches.
/// Errors: as crec_exec_replay(), but for a slot's own checks, which the bind calls made;
/// CREC_ERR_BINDING also for a check that spans slots (see above); CREC_ERR_LOOP_LIMIT
/// as crec_exec_replay() (the pending slots stay pending).
crec_status crec_exec_launch(crec_exec *exec, crec_stream stream);

/// Reports whether a finished replay stopped a while loop at its iteration limit:
/// CREC_ERR_LOOP_LIMIT naming the loop and the limit (the report is then
/// forgotten), CREC_OK otherwise. Synchronize the replay's stream first: a replay
/// still running may trip later. Costs one read of host memory.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_LOOP_LIMIT.
crec_status crec_exec_check(crec_exec *exec);

/// Destroys an exec (waiting for nothing: the caller synchronizes first). NULL is a no-op.
void crec_exec_destroy(crec_exec *exec);

/// What replays did so far.
typedef struct crec_exec_stats {
  size_t struct_size;           ///< sizeof(crec_exec_stats)
  uint64_t nodes;               ///< graph nodes updatable by bindings (kernel, memcpy, memset, the
                                ///< set-condition kernels of control flow; one per
                                ///< traced or custom command)
  uint64_t replays;             ///< successful crec_exec_replay() and crec_exec_launch() calls
  uint64_t nodes_updated;       ///< node parameter updates, summed over replays
  uint64_t updates_skipped;     ///< replays that needed no update at all
  uint64_t per_node_updates;    ///< replays that updated node by node
  uint64_t whole_graph_updates; ///< replays that used one whole-graph update
  uint64_t host_function_calls; ///< host functions run (record included)
  uint64_t last_nodes_updated;  ///< nodes updated by the last replay
  uint64_t eager_commands;      ///< control-flow commands run on the host because the exec replays
                                ///< eagerly (no conditional nodes; see eager_control_flow)
  uint64_t traced_nodes;        ///< traced commands in the graph (GEMM, FFT, NCCL, traced custom ...): a
                                ///< child graph node each, or their kernels (traced_inline)
  uint64_t trace_captures;      ///< stream captures of traced commands, record included
  uint64_t trace_hits;          ///< replay updates of a traced command found in its cache (nothing captured)
  uint64_t trace_misses;        ///< replay updates not found there (each captured the work anew)
  uint64_t trace_recaptures;    ///< misses for an address set that had been captured before and was
                                ///< evicted (the cache is too small for the rotation)
  uint64_t custom_updates;      ///< calls of custom handlers' update()
  uint64_t launches;            ///< successful crec_exec_launch() calls (bind as you go; also in replays)
  uint64_t device_nodes;        ///< kernel nodes on the device update path (device_updates)
  uint64_t device_node_updates; ///< node updates the updater applied on the device, summed over
                                ///< replays (also in nodes_updated; the rest went through the host)
  uint64_t device_update_launches; ///< replays whose launch ran the updater (it is off for the others)
  uint64_t modules_loaded;      ///< module images the record loaded into its context: the program's,
                                ///< crec's set-condition kernels, the updater (0 for those an earlier
                                ///< record or eager run of the program loaded into that context)
  uint64_t modules_jit;         ///< of those, the images the driver compiled from PTX to load them
                                ///< (crec_image_needs_jit); 0 when every kernel was a cubin for the chip
  uint64_t module_load_us;      ///< microseconds the record spent in those loads (JIT included)
  uint64_t device_path_host_updates; ///< updates of device-path nodes set on the host instead, because
                                     ///< the update strategy chose so for their replay (also in nodes_updated)
  uint64_t traced_inline;       ///< of traced_nodes, those inlined: their capture's kernels are nodes of
                                ///< the graph, set by a replay (crec_record_options.trace_child_graphs)
  uint64_t variants;            ///< executable graphs the exec keeps (crec_record_options.variants)
  uint64_t variant_switches;    ///< launches of another executable graph than the launch before
  uint64_t variant_hits;        ///< of those, launches whose bindings that graph held already (nothing updated)
  uint64_t copied_arguments;    ///< an imported graph's arguments copied at each launch, not rebound
                                ///< (crec_exec_import_route() says why); 0 for a recorded program
  uint64_t captured_replays;    ///< replays and launches on a stream being captured, added to that capture's
                                ///< graph instead of launched (crec_exec_replay() says how)
  uint64_t programmatic_edges;  ///< graph edges the record made programmatic: into a launch with
                                ///< CREC_LAUNCH_EARLY_START from another launch, on sm_90 and later
} crec_exec_stats;
#define CREC_EXEC_STATS_INIT {sizeof(crec_exec_stats), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}

/// Reads the exec's counters into `*out` (whose struct_size must be set; a caller built
/// against an older header, without `launches`, passes its smaller size and gets its fields).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (struct_size).
crec_status crec_exec_get_stats(const crec_exec *exec, crec_exec_stats *out);

/// The cost model behind CREC_UPDATE_AUTO, in microseconds of host and device
/// time together. A replay that changes k nodes of a graph of N, k_dev of them
/// on the device path (device_updates), is estimated to cost:
///  - node by node on the host: per_node_us * k + G (k > 0);
///  - through the updater: device_launch_us + device_node_us * k_dev + per_node_us * (k - k_dev),
///    plus G when k > k_dev (some nodes are set on the host) or the updater is disabled now
///    (the last replay did not run it: enabling it is a host-side change too);
///  - whole graph: whole_graph_node_us * N + whole_changed_us * k + G;
/// where G = host_graph_node_us * N is an empirical term: the driver's host-side
/// changes of an executable graph cost more per node in a larger graph when they
/// are few and scattered (on an H200 a hand-built graph's set-params took 0.48 us
/// each for 10 nodes of 1,000, 1.4 us each for 100 of 10,000, 0.23 us each for all
/// 1,000), while the launch itself costs no more after a change than before
/// (crec_bench_replay's launch table). G is fitted to crec's host path with 1%
/// changed: right at 10,000 nodes, up to 2x high at 1,000, and it picks the faster
/// way in every case measured. Each replay takes the cheapest of those the exec can do. Record
/// sets numbers measured on an H200 with driver 580 (crec_bench_replay, December
/// 2026): per node 0.37, updater 4.0 + 0.12 per node, whole graph 0.11 per node of
/// the graph + 0.30 per changed node, G 0.016 per node of the graph. So with the
/// updater running, a replay of a 1,000-node graph sends even one changed
/// device-path node through it, and a whole-graph update never wins. On other
/// GPUs and drivers, measure with crec_bench_replay and set your own.
typedef struct crec_update_model {
  size_t struct_size;        ///< sizeof(crec_update_model)
  double per_node_us;        ///< one node's parameters set on the host (and their upload at launch)
  double device_launch_us;   ///< a replay's fixed cost of the updater: arming it, its kernel
  double device_node_us;     ///< one node's entry in the updater's table, and its write on the device
  double whole_graph_node_us; ///< a whole-graph update, per node of the graph
  double whole_changed_us;   ///< a whole-graph update, per changed node (its template's parameters)
  double host_graph_node_us; ///< a replay that changes the executable graph on the host, per node
                             ///< of the graph (G above); added after the others: a caller built
                             ///< before it passes a smaller struct_size, and G stays as it was
} crec_update_model;
#define CREC_UPDATE_MODEL_INIT {sizeof(crec_update_model), 0, 0, 0, 0, 0, 0}

/// Reads the exec's cost model into `*out` (struct_size set by the caller).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (struct_size).
crec_status crec_exec_get_update_model(const crec_exec *exec, crec_update_model *out);

/// Replaces the exec's cost model with `*model` (copied): every cost must be finite
/// and at least 0. The next replay decides by it.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (struct_size, a negative
/// or non-finite cost, named).
crec_status crec_exec_set_update_model(crec_exec *exec, const crec_update_model *model);

/// What the cost model says of a replay that changes `changed` nodes, `changed_device`
/// of them on the device path.
typedef struct crec_update_estimate {
  size_t struct_size;          ///< sizeof(crec_update_estimate)
  double per_node_us;          ///< node by node on the host
  double device_us;            ///< through the updater; -1: this exec has no device path
  double whole_graph_us;       ///< one whole-graph update; -1: the driver or the exec rules it out
  crec_update_strategy choice; ///< what such a replay takes, given update_strategy and
                               ///< whole_update_percent (CREC_UPDATE_PER_NODE, _DEVICE or _WHOLE_GRAPH)
} crec_update_estimate;
#define CREC_UPDATE_ESTIMATE_INIT {sizeof(crec_update_estimate), 0, 0, 0, CREC_UPDATE_PER_NODE}

/// Estimates the next replay of `exec` if it changes `changed` of its nodes,
/// `changed_device` of them on the device path (at most crec_exec_stats.device_nodes),
/// into `*out`; the estimate depends on whether the last replay ran the updater.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (struct_size),
/// CREC_ERR_OUT_OF_RANGE (more nodes than the graph has, or changed_device above
/// changed or the device-path nodes).
crec_status crec_exec_estimate_update(const crec_exec *exec, uint64_t changed, uint64_t changed_device,
                                      crec_update_estimate *out);

/// Describes what record chose for each library call of the exec's program, one
/// line per command ("#3 conv 'stem': cuDNN forward algorithm
/// IMPLICIT_PRECOMP_GEMM (1), 4096 bytes of work area, bias and ReLU fused"):
/// a convolution's algorithm, an FFT plan's work area, what cuSOLVER asked for
/// a Cholesky factorization, a GEMM's cuBLASLt workspace; then how the call sits
/// in the graph ("; inlined as 1 kernel (name)", or "; a child graph node": see
/// crec_record_options.trace_child_graphs). `*out` is a new
/// NUL-terminated string (crec_free() it; empty when the program has none).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_UNSUPPORTED (an exec that replays
/// eagerly or imports a graph: nothing was chosen at record),
/// CREC_ERR_OUT_OF_MEMORY.
crec_status crec_exec_library_choices(const crec_exec *exec, char **out);

/// Writes the CUDA driver's own DOT dump of the graph to `path` (cuGraphDebugDotPrint).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_CUDA, CREC_ERR_UNSUPPORTED.
crec_status crec_exec_dump_cuda_dot(const crec_exec *exec, const char *path);

/// Runs `program` eagerly on `stream`: each command issued in program order, control
/// flow decided on the host (the predicate or index is copied back and the stream
/// synchronized); GEMMs call cuBLASLt, collectives NCCL (degenerate ones copy), custom
/// handlers create() or trace() on the stream, host callbacks go through cuLaunchHostFunc.
/// Uses the CUDA context current on the calling thread, or device 0's primary context
/// when none is. Returns once all work is issued (it may still run).
/// Loops stop at their own limits (crec_program_set_loop_limit()) with CREC_ERR_LOOP_LIMIT.
/// On a stream being captured (someone else's graph), the run's stream work is
/// captured as it is issued: kernels, copies, fills, host callbacks, and the
/// temporaries' stream-ordered allocation and free. What would synchronize or call
/// outside the stream, and so invalidate the capture, is refused with
/// CREC_ERR_UNSUPPORTED, naming it, before any call on the stream: control flow
/// (decided on the host), library calls and custom commands, host temporaries, and
/// a program's first run in the context (which loads its modules); the legacy
/// default stream while another stream captures in global mode. Record the program
/// and replay the exec there instead (crec_exec_replay() adds it to the capture, control flow included).
/// Errors: as crec_exec_replay(), plus CREC_ERR_NO_DEVICE, CREC_ERR_INVALID_PROGRAM,
/// CREC_ERR_NOT_FOUND (a kernel missing from its module), CREC_ERR_UNSUPPORTED and
/// CREC_ERR_LOOP_LIMIT.
crec_status crec_run_eager(const crec_program *program, const crec_bindings *bindings,
                           crec_stream stream);

#ifdef __cplusplus
}
#endif
#endif
