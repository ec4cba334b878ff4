/// \file profile.h
/// Profiles: where the replays of a program spent their time, per command of
/// the program (docs/profile.md). A profile is built from spans, one per run
/// of a graph node, that a profiler measured; crec turns them into each
/// command's device time, start, concurrency and loop iterations, the critical
/// path through the dependency DAG, the idle time, and a timeline of one
/// replay, and writes that as text or as JSON (docs/profile.schema.json),
/// which `crec dump --format html --profile FILE` draws on the graph page.
/// crec_exec_profile() measures the spans of a recorded exec on its device,
/// through CUPTI's activity API, and builds the profile from them.
#ifndef CREC_PROFILE_H
#define CREC_PROFILE_H

#include "crec/exec.h"
#include "crec/program.h"

#ifdef __cplusplus
extern "C" {
#endif

/// One run of one graph node in a profiled replay.
typedef struct crec_profile_span {
  crec_command command;  ///< the command it ran for (a set-condition kernel: its while, if or switch)
  uint32_t replay;       ///< which replay, 0 to replays - 1
  int32_t iteration;     ///< inside the regions of a while loop: the iteration of the innermost loop (from 0); else -1
  uint64_t start_ns;     ///< start and end, on one clock with any origin
  uint64_t end_ns;
} crec_profile_span;

/// What a profile says besides its spans; every field may stay as the _INIT
/// macro sets it.
typedef struct crec_profile_options {
  size_t struct_size;          ///< sizeof(crec_profile_options)
  const char *program;         ///< the program's name in the report (copied; NULL: none)
  const char *entry;           ///< its entry function (copied; NULL: none)
  const char *device;          ///< the device (copied; NULL: none)
  const double *replay_us;     ///< wall time of each replay without the profiler (copied; may be NULL)
  size_t num_replay_us;
  const double *profiled_us;   ///< and under it (copied; may be NULL)
  size_t num_profiled_us;
  /// the host side of a replay, microseconds per replay by phase (negative: not measured)
  double host_binding_checks_us, host_per_node_updates_us, host_whole_graph_updates_us, host_device_updates_us,
      host_launch_us;
} crec_profile_options;
#define CREC_PROFILE_OPTIONS_INIT {sizeof(crec_profile_options), NULL, NULL, NULL, NULL, 0, NULL, 0, -1, -1, -1, -1, -1}

/// A profile (opaque): owns copies of everything it was given.
typedef struct crec_profile crec_profile;

/// Builds the profile of `replays` replays of `program` from `spans` (any
/// order). The profile refers to `program`, which must outlive it (its reads and
/// dumps name the program's commands); the spans are read during the call only. A command's time counts the spans of the commands in its regions
/// too (a while: its set kernels and its bodies). Per command and replay:
/// device time is the time any of those spans ran (overlaps counted once),
/// start is its first span's start after the replay's first span; `nodes` and
/// `concurrent` (the most spans of unrelated commands that ran beside one of
/// its spans) are read from the median replay (by device span), which is also
/// the timeline. The critical path is the heaviest path through the program
/// body's dependency DAG (crec_plan_get_deps), each command weighing its
/// median device time. Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE
/// (a span's command, naming the span), CREC_ERR_INVALID_ARGUMENT (no replays,
/// no spans, more replays than spans, an end before its start, an iteration for a command outside every
/// while loop, struct_size), CREC_ERR_OUT_OF_RANGE (a span's replay),
/// CREC_ERR_OUT_OF_MEMORY.
crec_status crec_profile_create(const crec_program *program, const crec_profile_span *spans, size_t num_spans,
                                uint32_t replays, const crec_profile_options *options, crec_profile **out);

/// Frees a profile (NULL is a no-op).
void crec_profile_destroy(crec_profile *profile);

/// A spread over the replays.
typedef struct crec_profile_spread {
  double min, p50, max;
} crec_profile_spread;

/// What a profile says of one command.
typedef struct crec_profile_command {
  size_t struct_size;          ///< sizeof(crec_profile_command); set by the caller
  int ran;                     ///< nonzero: some span counted for it
  crec_profile_spread device_us;
  double start_us;             ///< median over the replays where it ran
  uint64_t nodes;              ///< spans counted for it in the median replay
  uint64_t concurrent;
  int is_loop;                 ///< a while loop: the next two fields hold
  crec_profile_spread iterations; ///< one more than the largest iteration of its body's spans (its cond's do not count)
  double per_iteration_us;     ///< median device time over median iterations (0 without iterations)
  int critical;                ///< nonzero: on the critical path
} crec_profile_command;
#define CREC_PROFILE_COMMAND_INIT {sizeof(crec_profile_command), 0, {0, 0, 0}, 0, 0, 0, 0, {0, 0, 0}, 0, 0}

/// Reads what `profile` says of `command`. Errors: CREC_ERR_NULL_POINTER,
/// CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT (struct_size).
crec_status crec_profile_get_command(const crec_profile *profile, crec_command command, crec_profile_command *out);

/// What a profile says of the replays as a whole.
typedef struct crec_profile_summary {
  size_t struct_size;            ///< sizeof(crec_profile_summary); set by the caller
  uint32_t replays;
  uint32_t median_replay;        ///< the replay of the timeline
  double span_us;                ///< the median replay's device span: first span's start to last span's end
  double idle_us;                ///< time in that span when no span ran
  double critical_us;            ///< the critical path's weight
  const crec_command *critical_path; ///< its commands in dependency order (owned by the profile)
  size_t critical_length;
  size_t timeline_spans;         ///< spans of the median replay
} crec_profile_summary;
#define CREC_PROFILE_SUMMARY_INIT {sizeof(crec_profile_summary), 0, 0, 0, 0, 0, NULL, 0, 0}

/// Reads the summary. Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (struct_size).
crec_status crec_profile_get_summary(const crec_profile *profile, crec_profile_summary *out);

/// Profiles `exec` on its device: one warm-up replay with `bindings` on
/// `stream`, then `iters` plain replays and `iters` replays under CUPTI's
/// activity API (kernels, memcpys and memsets), each synchronized and timed on
/// the host, and builds the profile of the profiled ones into `*out`
/// (crec_profile_destroy() it; it refers to the exec's program, which must
/// outlive it). Each activity record is attributed to a graph node of the exec
/// by CUPTI's graph node id, and so to a command: nodes in the bodies of
/// conditional nodes, inside child graphs (library calls), an inlined library
/// call's kernels and a custom command's kernels count for their command; a record inside a WHILE body gets the
/// iteration of its node in that replay (in nested loops, counted over all the
/// outer loop's iterations). Every record of the exec's graph must be
/// attributed: one that is incomplete or fits no node fails the profile
/// (CREC_PROFILE_DEBUG=1 prints the nodes and the records to standard error).
/// `options` (may be NULL) gives the names the report shows; its replay_us and
/// profiled_us are the plain and the profiled replays' wall times, and its
/// host phases the profiled replays' host time (binding checks with staging and
/// node parameters; updates per node, whole-graph or device-side, averaged over
/// the replays that took each; the launch), all measured here (what the caller
/// puts there is ignored). Every replay binds `bindings`, so after the warm-up
/// none updates a node: the update phases read -1, not measured.
///
/// CUPTI is opened at run time (libcupti.so.13, then the CUDA toolkit's library
/// folders). Its activity API is process-wide: one profile runs at a time (a
/// second call waits), and records of other work in the process are skipped
/// (only the exec's graph's count), but a profiler already using CUPTI in the
/// process (Nsight Systems, PyTorch's profiler) and this one disturb each
/// other.
///
/// An exec with a while loop must have been recorded with
/// crec_record_options.profile, which turns CUPTI's activities on before its
/// graph is built: CUPTI reports each node of a loop's body once per launch in
/// a graph instantiated before they were on. compute-sanitizer and Nsight hold
/// CUPTI themselves: under them a profile is refused.
///
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (iters 0, a
/// struct_size below the first version's), CREC_ERR_UNSUPPORTED (no CUPTI,
/// naming the library and where it was looked for; CUPTI in use by another
/// tool; an exec with a while loop recorded without
/// crec_record_options.profile; an exec that replays
/// eagerly, with no graph; an imported graph's exec, which has no commands to
/// give time to), CREC_ERR_CUDA (a CUPTI or driver call failed, named),
/// CREC_ERR_INVALID_PROGRAM (CUPTI dropped records; a record that fits no node;
/// fewer spans than replays), what crec_exec_replay() and
/// crec_stream_synchronize() return, CREC_ERR_OUT_OF_MEMORY.
crec_status crec_exec_profile(crec_exec *exec, const crec_bindings *bindings, crec_stream stream, uint32_t iters,
                              const crec_profile_options *options, crec_profile **out);

/// Formats of crec_profile_dump().
typedef enum crec_profile_format {
  CREC_PROFILE_TEXT = 0, ///< a table of the commands that ran, slowest first, and the summary
  CREC_PROFILE_JSON = 1  ///< docs/profile.schema.json
} crec_profile_format;

/// Writes the profile into a new NUL-terminated string `*out` (crec_free() it);
/// `*length` (may be NULL) gets its length. Errors: CREC_ERR_NULL_POINTER,
/// CREC_ERR_INVALID_ARGUMENT (format), CREC_ERR_OUT_OF_MEMORY.
crec_status crec_profile_dump(const crec_profile *profile, crec_profile_format format, char **out, size_t *length);

#ifdef __cplusplus
}
#endif
#endif
