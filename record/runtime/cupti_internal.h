/* CUPTI in the runtime: the library opened at run time, its activities on
 * while anyone uses them, and the collector of the activity records of one
 * graph (record/runtime/cupti.c). An exec recorded with
 * crec_record_options.profile arms it from its record to its destruction;
 * crec_exec_profile() (replay/profile.c) arms it and collects. */
#ifndef CREC_CUPTI_INTERNAL_H
#define CREC_CUPTI_INTERNAL_H

#include "runtime_internal.h"

/* What an activity record measured. */
typedef enum crec__activity_kind { CREC__ACTIVITY_KERNEL, CREC__ACTIVITY_MEMCPY, CREC__ACTIVITY_MEMSET } crec__activity_kind;

/* One activity record of the collected graph. */
typedef struct crec__activity {
  uint64_t node_id, start, end;
  const char *name; /* a kernel's (CUPTI keeps it), else NULL */
  uint32_t replay;
  crec__activity_kind kind;
} crec__activity;

/* The records collected so far, and what went wrong collecting them. */
typedef struct crec__activities {
  bool active;       /* a profile is collecting: records are kept only then */
  crec__activity *v;
  size_t n, cap;
  uint32_t graph_id; /* the collected graph's: records of other graphs are skipped */
  uint32_t replay;   /* the replay whose records the next flush delivers */
  size_t dropped;
  bool oom;
} crec__activities;

/* Whether CUPTI can be used in this process (opened once): CREC_ERR_UNSUPPORTED
 * says why not. */
crec_status crec__cupti_library(const char *fn);

/* Turns CUPTI's activities on for one more user (the first registers the buffer
 * callbacks): CREC_ERR_UNSUPPORTED without CUPTI or with another tool using it,
 * CREC_ERR_CUDA. Each successful arm is ended by one disarm. */
crec_status crec__cupti_arm(const char *fn);
void crec__cupti_disarm(void);

/* Delivers every activity record buffered so far (CUPTI error: CREC_ERR_CUDA). */
crec_status crec__cupti_flush(const char *fn);
/* The id CUPTI gives executable graph `exec`'s records. */
crec_status crec__cupti_graph_id(CUgraphExec exec, uint32_t *out, const char *fn);

/* Starts collecting the records of graph `graph_id` afresh (what was collected
 * is freed), or only clears the collector when `active` is false. */
void crec__cupti_collect_begin(uint32_t graph_id, bool active);
/* The replay whose records the next flush delivers. */
void crec__cupti_collect_replay(uint32_t replay);
/* Stops collecting: every record delivered, CUPTI's thread adds none after this. */
void crec__cupti_collect_end(void);
/* The records collected (read after crec__cupti_collect_end()). */
const crec__activities *crec__cupti_collected(void);

#endif
