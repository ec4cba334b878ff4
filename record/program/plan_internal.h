/* The plan's layout, shared by plan.c, arena.c, dumps and recording. */
#ifndef CREC_RECORD_PLAN_INTERNAL_H
#define CREC_RECORD_PLAN_INTERNAL_H

#include "internal.h"

typedef struct crec__plan_temp {
  uint64_t size;
  uint64_t offset;     /* in the arena of its memory (device, or page-locked host) */
  size_t first, last;  /* top-level positions; first > last when unused */
} crec__plan_temp;

struct crec_plan {
  const crec_program *program;
  size_t num_commands;       /* the program's counts when planned: later items are unknown to the plan */
  size_t num_buffers;
  crec_plan_options options;
  uint32_t *dep_start;       /* CSR over commands in creation order: deps[dep_start[c] .. dep_start[c+1]) */
  crec_command *deps;
  crec__plan_temp *temps;    /* per buffer; meaningful for temporaries */
  uint64_t arena_bytes;      /* device temporaries */
  uint64_t host_arena_bytes; /* host temporaries (crec_program_add_host_temporary()) */
};

/* Places the program's temporaries; fills temps[] (one per buffer) and the peak
 * of each arena: device temporaries in one, host temporaries in the other. */
crec_status crec__plan_arena(const crec_program *p, uint32_t alignment, crec__plan_temp *temps,
                             uint64_t *peak_out, uint64_t *host_peak_out);

#endif
