/* CUPTI, opened at run time: its activities on while anyone uses them (an exec
 * recorded with crec_record_options.profile, a profile in progress), and the
 * one collector of activity records (CUPTI's buffer callbacks take no user
 * pointer). replay/profile.c turns the records into a profile. */
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cupti_internal.h"

#define CREC__CUPTI_FUNCS(X)                                                                                 \
  X(enable, "cuptiActivityEnable", CUptiResult, (CUpti_ActivityKind))                                       \
  X(disable, "cuptiActivityDisable", CUptiResult, (CUpti_ActivityKind))                                     \
  X(register_callbacks, "cuptiActivityRegisterCallbacks", CUptiResult,                                      \
    (CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc))                                  \
  X(flush_all, "cuptiActivityFlushAll", CUptiResult, (uint32_t))                                            \
  X(next_record, "cuptiActivityGetNextRecord", CUptiResult, (uint8_t *, size_t, CUpti_Activity **))         \
  X(dropped, "cuptiActivityGetNumDroppedRecords", CUptiResult, (CUcontext, uint32_t, size_t *))             \
  X(result_string, "cuptiGetResultString", CUptiResult, (CUptiResult, const char **))                       \
  X(exec_id, "cuptiGetGraphExecId", CUptiResult, (CUgraphExec, uint32_t *))

typedef struct crec__cupti {
#define CREC__CUPTI_FIELD(field, symbol, ret, params) ret(*field) params;
  CREC__CUPTI_FUNCS(CREC__CUPTI_FIELD)
#undef CREC__CUPTI_FIELD
} crec__cupti;

/* by soname, then in the CUDA toolkit's library folder (CUDA 13 keeps it in lib64) */
CREC__LIBRARY_LOADER(crec__cupti, cupti, CREC__CUPTI_FUNCS, "CUPTI", "libcupti.so.13")

static crec_status cupti_fail(const char *fn, CUptiResult r, const char *call) {
  const char *text = NULL;
  if (cupti.result_string) cupti.result_string(r, &text);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    return crec__error(CREC_ERR_UNSUPPORTED, fn,
                       "%s failed: CUPTI is in use by another tool in this process (compute-sanitizer, Nsight "
                       "Systems or Nsight Compute), and a profile needs it alone (%s)",
                       call, text ? text : "CUPTI error 39");
  return crec__error(CREC_ERR_CUDA, fn, "%s failed: %s (CUPTI error %d)", call, text ? text : "no description", (int)r);
}

/* ---- what the activity buffers deliver ---- */

/* The records of the profile in progress. CUPTI's buffer callbacks take no user
 * pointer, so this is the process's one collector: a profile holds its own lock
 * throughout (replay/profile.c), and `col_lock` guards the collector against
 * CUPTI's own thread, which may deliver a buffer at any time while activities
 * are on. */
static pthread_mutex_t col_lock = PTHREAD_MUTEX_INITIALIZER;
static crec__activities col;

enum { BUFFER_BYTES = 1 << 20 };

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  /* 8-byte aligned, as CUPTI asks: malloc's are */
  *buffer = crec__malloc(BUFFER_BYTES);
  *size = *buffer ? BUFFER_BYTES : 0;
  *max_records = 0;
}

/* (under col_lock) Records of other graphs, or delivered while no profile
 * collects (the callbacks stay registered), are skipped. */
static void keep(uint32_t graph_id, uint64_t node_id, uint64_t start, uint64_t end, const char *name, crec__activity_kind kind) {
  if (!col.active || graph_id != col.graph_id || col.oom) return;
  if (CREC__RESERVE(col.v, col.cap, col.n + 1) != CREC_OK) {
    col.oom = true;
    return;
  }
  col.v[col.n++] = (crec__activity){
      .node_id = node_id, .start = start, .end = end, .name = name, .replay = col.replay, .kind = kind};
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
  (void)size;
  CUpti_Activity *r = NULL;
  pthread_mutex_lock(&col_lock);
  while (cupti.next_record(buffer, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || r->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
      keep(k->graphId, k->graphNodeId, k->start, k->end, k->name, CREC__ACTIVITY_KERNEL);
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)r;
      keep(m->graphId, m->graphNodeId, m->start, m->end, NULL, CREC__ACTIVITY_MEMCPY);
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)r;
      keep(m->graphId, m->graphNodeId, m->start, m->end, NULL, CREC__ACTIVITY_MEMSET);
    }
  }
  size_t dropped = 0;
  if (col.active && cupti.dropped(ctx, stream, &dropped) == CUPTI_SUCCESS) col.dropped += dropped;
  pthread_mutex_unlock(&col_lock);
  crec__free(buffer);
}

static const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                           CUPTI_ACTIVITY_KIND_MEMSET};

/* ---- who has the activities on ---- */

/* The activities are on while anyone uses them: each exec recorded with
 * crec_record_options.profile, from its record to its destruction, and each
 * profile in progress. The buffer callbacks are registered once, with the
 * first user, and stay (a record delivered while no profile collects is
 * skipped). */
static pthread_mutex_t users_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t users;
static bool registered;

crec_status crec__cupti_arm(const char *fn) {
  crec_status s = crec__loader_check(&loader, load, NULL, fn);
  if (s) return s;
  pthread_mutex_lock(&users_lock);
  CUptiResult r;
  if (!registered && (r = cupti.register_callbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS)
    s = cupti_fail(fn, r, "cuptiActivityRegisterCallbacks");
  registered = !s;
  size_t k = 0;
  for (; !s && users == 0 && k < sizeof kinds / sizeof *kinds; k++)
    if ((r = cupti.enable(kinds[k])) != CUPTI_SUCCESS) s = cupti_fail(fn, r, "cuptiActivityEnable");
  if (s)
    while (users == 0 && k-- > 0) cupti.disable(kinds[k]);
  else
    users++;
  pthread_mutex_unlock(&users_lock);
  return s;
}

void crec__cupti_disarm(void) {
  pthread_mutex_lock(&users_lock);
  if (users && --users == 0)
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) cupti.disable(kinds[k]);
  pthread_mutex_unlock(&users_lock);
}

crec_status crec__cupti_library(const char *fn) {
  return crec__loader_check(&loader, load, NULL, fn);
}

crec_status crec__cupti_flush(const char *fn) {
  CUptiResult r = cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  return r == CUPTI_SUCCESS ? CREC_OK : cupti_fail(fn, r, "cuptiActivityFlushAll");
}

crec_status crec__cupti_graph_id(CUgraphExec exec, uint32_t *out, const char *fn) {
  CUptiResult r = cupti.exec_id(exec, out);
  return r == CUPTI_SUCCESS ? CREC_OK : cupti_fail(fn, r, "cuptiGetGraphExecId");
}

/* ---- the collector ---- */

void crec__cupti_collect_begin(uint32_t graph_id, bool active) {
  pthread_mutex_lock(&col_lock);
  crec__free(col.v);
  memset(&col, 0, sizeof col);
  col.graph_id = graph_id;
  col.active = active;
  pthread_mutex_unlock(&col_lock);
}

void crec__cupti_collect_replay(uint32_t replay) {
  pthread_mutex_lock(&col_lock);
  col.replay = replay;
  pthread_mutex_unlock(&col_lock);
}

void crec__cupti_collect_end(void) {
  cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  pthread_mutex_lock(&col_lock);
  col.active = false;
  pthread_mutex_unlock(&col_lock);
}

const crec__activities *crec__cupti_collected(void) { return &col; }
