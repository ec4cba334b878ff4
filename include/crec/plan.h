/// \file plan.h
/// Planning a program: the dependency DAG of each region and the placement of
/// temporaries in one arena. Recording uses a plan; tools and tests read it.
///
/// Dependencies: within each region, command B waits for an earlier command A
/// when they touch overlapping bytes and at least one writes (read after write,
/// write after read, write after write), on physical addresses after arena
/// placement. A barrier orders everything before it against everything after
/// it. A control-flow command accesses the union of what its regions access,
/// plus its predicate or index. The result is transitively reduced. In
/// sequential mode each command waits for the one before it instead.
///
/// The arena: each temporary lives from the first to the last top-level command
/// that uses it; temporaries that are never live together may share bytes.
/// Offsets are multiples of the alignment (256 by default). Hazards on shared
/// bytes then order the later user after the earlier one, so reuse never races.
///
/// Argument buffers are assumed not to overlap one another; crec does not track
/// hazards between two different argument bindings.
#ifndef CREC_PLAN_H
#define CREC_PLAN_H

#include "crec/inspect.h"

#ifdef __cplusplus
extern "C" {
#endif

/// How commands of a region are ordered.
typedef enum crec_schedule {
  CREC_SCHEDULE_CONCURRENT = 0, ///< order only by hazards and barriers
  CREC_SCHEDULE_SEQUENTIAL = 1  ///< chain every command after the one before it
} crec_schedule;

/// Options of a plan.
typedef struct crec_plan_options {
  size_t struct_size;         ///< sizeof(crec_plan_options)
  crec_schedule schedule;
  uint32_t arena_alignment;   ///< power of two, at least and by default 256
} crec_plan_options;
#define CREC_PLAN_OPTIONS_INIT {sizeof(crec_plan_options), CREC_SCHEDULE_CONCURRENT, 256}

/// An opaque plan of one program.
typedef struct crec_plan crec_plan;

/// Plans `program` (which must outlive the plan and not change while it is used).
/// `options` may be NULL for defaults. `*out` is owned by the caller.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (options),
/// CREC_ERR_INVALID_PROGRAM (crec_program_validate()), CREC_ERR_OUT_OF_MEMORY.
crec_status crec_plan_create(const crec_program *program, const crec_plan_options *options,
                             crec_plan **out);

/// Destroys a plan. NULL is a no-op.
void crec_plan_destroy(crec_plan *plan);

/// Returns the commands `command` waits for, after transitive reduction, in
/// increasing creation order; `*deps` is owned by the plan.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE.
crec_status crec_plan_get_deps(const crec_plan *plan, crec_command command,
                               const crec_command **deps, size_t *num_deps);

/// Returns the bytes the device temporary arena needs (its peak). 0 for NULL.
uint64_t crec_plan_arena_bytes(const crec_plan *plan);

/// Returns the bytes the host temporary arena needs (its peak): the page-locked
/// memory that holds the temporaries of crec_program_add_host_temporary(). 0 for NULL.
uint64_t crec_plan_host_arena_bytes(const crec_plan *plan);

/// Returns the offset of temporary `buffer` in the arena of its memory (device,
/// or host for a host temporary).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT (not a temporary).
crec_status crec_plan_get_temporary(const crec_plan *plan, crec_buffer buffer, uint64_t *offset);

/// Returns the live interval of temporary `buffer` as positions of top-level
/// commands of the program body (first and last use); an unused temporary gets
/// first > last. Errors: as crec_plan_get_temporary().
crec_status crec_plan_get_lifetime(const crec_plan *plan, crec_buffer buffer, size_t *first,
                                   size_t *last);

#ifdef __cplusplus
}
#endif
#endif
