/* Communicators (crec_comm, collective.h): made over NCCL or wrapping a caller's
 * NCCL communicator, and what keeps ranks from waiting for each other forever:
 * waits with a deadline that abort the communicator, and an agreement on every
 * rank's status. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "nccl_internal.h"

/* ---- communicators ---- */

crec_status crec_comm_get_unique_id(crec_comm_id *out) {
  static const char fn[] = "crec_comm_get_unique_id";
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  memset(out, 0, sizeof *out);
  const crec__nccl *n = crec__nccl_get(fn, NULL);
  if (!n) return CREC_ERR_UNSUPPORTED;
  _Static_assert(sizeof(ncclUniqueId) == sizeof(crec_comm_id), "an NCCL unique id is 128 bytes");
  ncclUniqueId id;
  ncclResult_t r = CREC__NCCL(n->get_unique_id(&id));
  if (r != ncclSuccess) return crec__nccl_fail(fn, NULL, r, "ncclGetUniqueId", NULL);
  memcpy(out->bytes, &id, sizeof id);
  return CREC_OK;
}

uint64_t crec__comm_next_id(void) {
  static atomic_uint_fast64_t next = 1;
  return atomic_fetch_add(&next, 1);
}

/* Fills a new communicator `c` around `comm` and counts it as live. */
static crec_comm *comm_init(crec_comm *c, void *comm, bool owned, int rank, int size, int device) {
  c->id = crec__comm_next_id();
  c->nccl = comm;
  c->owned = owned;
  c->rank = rank;
  c->size = size;
  c->device = device;
  pthread_mutex_init(&c->lock, NULL);
  crec__live(1);
  return c;
}

crec_status crec_comm_create(int device, const crec_comm_id *id, int rank, int size, crec_comm **out) {
  static const char fn[] = "crec_comm_create";
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  *out = NULL;
  if (!id) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'id' is NULL");
  if (size < 1) return crec__error(CREC_ERR_OUT_OF_RANGE, fn, "argument 'size': %d ranks", size);
  if (rank < 0 || rank >= size)
    return crec__error(CREC_ERR_OUT_OF_RANGE, fn, "argument 'rank': %d, outside 0..%d", rank, size - 1);
  const crec__nccl *n = crec__nccl_get(fn, NULL);
  if (!n) return CREC_ERR_UNSUPPORTED;
  const crec__cu *cu = crec__driver(fn);
  if (!cu) return CREC_ERR_NO_DEVICE;
  CUcontext ctx;
  bool pushed = false;
  crec_status s = crec__use_device(cu, device, fn, &ctx);
  if (!s) s = crec__enter(cu, ctx, &pushed, fn);
  if (s) return s;
  crec_comm *c = crec__calloc(1, sizeof *c);
  if (!c) {
    crec__leave(cu, pushed);
    return crec__oom(fn);
  }
  ncclUniqueId uid;
  memcpy(&uid, id->bytes, sizeof uid);
  ncclComm_t comm = NULL;
  /* NCCL takes the device of the context current now: `device`'s primary context */
  ncclResult_t r = CREC__NCCL(n->comm_init_rank(&comm, size, uid, rank));
  crec__leave(cu, pushed);
  if (r != ncclSuccess) {
    crec__free(c);
    char what[96];
    snprintf(what, sizeof what, "rank %d of %d on device %d", rank, size, device);
    return crec__nccl_fail(fn, what, r, "ncclCommInitRank", NULL);
  }
  *out = comm_init(c, comm, true, rank, size, device);
  return CREC_OK;
}

crec_status crec_comm_wrap(void *nccl_comm, crec_comm **out) {
  static const char fn[] = "crec_comm_wrap";
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  *out = NULL;
  if (!nccl_comm) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'nccl_comm' is NULL");
  const crec__nccl *n = crec__nccl_get(fn, NULL);
  if (!n) return CREC_ERR_UNSUPPORTED;
  ncclComm_t comm = nccl_comm;
  int rank = 0, size = 0, device = 0;
  ncclResult_t r = CREC__NCCL(n->comm_count(comm, &size));
  const char *call = "ncclCommCount";
  if (r == ncclSuccess) r = CREC__NCCL(n->comm_user_rank(comm, &rank)), call = "ncclCommUserRank";
  if (r == ncclSuccess) r = CREC__NCCL(n->comm_cu_device(comm, &device)), call = "ncclCommCuDevice";
  if (r != ncclSuccess) return crec__nccl_fail(fn, NULL, r, call, comm);
  crec_comm *c = crec__calloc(1, sizeof *c);
  if (!c) return crec__oom(fn);
  *out = comm_init(c, comm, false, rank, size, device);
  return CREC_OK;
}

void crec_comm_destroy(crec_comm *comm) {
  if (!comm) return;
  /* a revoked communicator still needs its destroy; an aborted one NCCL frees itself */
  const crec__nccl *nc = crec__nccl_loaded();
  if (comm->owned && (!comm->aborted || comm->revoked) && nc) nc->comm_destroy((ncclComm_t)comm->nccl);
  pthread_mutex_destroy(&comm->lock);
  crec__free(comm);
  crec__live(-1);
}

crec_status crec_comm_get_info(const crec_comm *comm, int *rank, int *size, int *device) {
  if (!comm) return crec__error(CREC_ERR_NULL_POINTER, "crec_comm_get_info", "argument 'comm' is NULL");
  if (rank) *rank = comm->rank;
  if (size) *size = comm->size;
  if (device) *device = comm->device;
  return CREC_OK;
}

void *crec_comm_native(const crec_comm *comm) { return comm && !comm->aborted ? comm->nccl : NULL; }

/* ---- deadlines, aborts and agreement ---- */

/* "rank R of N on device D", for messages. */
static const char *comm_label(const crec_comm *c, char *buf, size_t size) {
  snprintf(buf, size, "rank %d of %d on device %d", c->rank, c->size, c->device);
  return buf;
}

static double now_ms(void) { return (double)crec__now_ns() / 1e6; }

static void *abort_main(void *comm) {
  crec__nccl_loaded()->comm_abort((ncclComm_t)comm);
  return NULL;
}

/* Stops `c`'s work unless it already was; returns NCCL's result (under c->lock).
 * No fault hook: an abort that did not happen would leave kernels spinning. */
static ncclResult_t abort_locked(crec_comm *c) {
  const crec__nccl *nc = crec__nccl_loaded();
  if (c->aborted) return ncclSuccess;
  c->aborted = true;
  /* ncclCommRevoke (NCCL 2.28) stops the communicator's kernels and refuses
   * later collectives, leaving the communicator for ncclCommDestroy */
  if (nc->comm_revoke && nc->comm_revoke((ncclComm_t)c->nccl, 0) == ncclSuccess) {
    c->revoked = true;
    return ncclSuccess;
  }
  /* ncclCommAbort stops the kernels at once, but before freeing the communicator
   * it waits (NCCL 2.26 and newer) until every graph that captured one of its
   * collectives is destroyed, which the caller may still have to do: a thread
   * of its own waits for that (also when the revoke failed) */
  pthread_t t;
  if (pthread_create(&t, NULL, abort_main, c->nccl) == 0) {
    pthread_detach(t);
    return ncclSuccess;
  }
  return nc->comm_abort((ncclComm_t)c->nccl);
}

crec_status crec_comm_abort(crec_comm *comm) {
  static const char fn[] = "crec_comm_abort";
  if (!comm) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'comm' is NULL");
  pthread_mutex_lock(&comm->lock);
  ncclResult_t r = abort_locked(comm);
  pthread_mutex_unlock(&comm->lock);
  char what[96];
  if (r != ncclSuccess)
    return crec__nccl_fail(fn, comm_label(comm, what, sizeof what), r, "ncclCommAbort", NULL);
  return CREC_OK;
}

int crec_comm_aborted(const crec_comm *comm) { return comm && comm->aborted; }

/* After an abort NCCL's kernels return; waits (a bounded while) for the stream
 * to drain so that the caller may free what its work used. Returns whether it did. */
static bool drain(const crec__cu *cu, CUstream stream) {
  double end = now_ms() + 10000;
  unsigned polls = 400;
  while (now_ms() < end) {
    CUresult r = cu->cuStreamQuery(stream);
    if (r != CUDA_ERROR_NOT_READY) return true;
    crec__back_off(&polls);
  }
  return false;
}

/* Waits until the work on `stream` is done while watching `c`: NCCL's
 * asynchronous error, an abort from another thread, and (timeout_ms > 0) the
 * deadline. The first two and the third abort `c` and fail. `doing` says what
 * was waited for; `c`'s context is current. */
static crec_status watch(crec_comm *c, const crec__cu *cu, CUstream stream, int timeout_ms, const char *doing,
                         const char *fn) {
  const crec__nccl *nc = crec__nccl_loaded();
  char who[96];
  comm_label(c, who, sizeof who);
  double start = now_ms();
  unsigned polls = 0;
  for (;;) {
    CUresult r = CREC__CU(cu, cuStreamQuery, stream);
    if (r == CUDA_SUCCESS) return CREC_OK;
    if (r != CUDA_ERROR_NOT_READY) {
      char what[200];
      snprintf(what, sizeof what, "%s: %s", who, doing);
      return crec__cu_fail(fn, r, "cuStreamQuery", what);
    }
    ncclResult_t async = ncclSuccess, polled = ncclSuccess;
    pthread_mutex_lock(&c->lock);
    bool was_aborted = c->aborted;
    if (!was_aborted) polled = nc->comm_get_async_error((ncclComm_t)c->nccl, &async);
    if (polled != ncclSuccess) async = polled;
    bool failed = async != ncclSuccess && async != ncclInProgress;
    bool late = timeout_ms > 0 && now_ms() - start > (double)timeout_ms;
    const char *last = failed && nc->last_error ? nc->last_error((ncclComm_t)c->nccl) : NULL;
    char detail[300] = "";
    if (last && last[0]) snprintf(detail, sizeof detail, "; %s", last);
    if (!was_aborted && (failed || late)) abort_locked(c);
    pthread_mutex_unlock(&c->lock);
    if (was_aborted || failed || late) {
      const char *left = drain(cu, stream) ? "" : "; the stream still held work 10 s after the abort";
      if (was_aborted)
        return crec__error(CREC_ERR_TIMEOUT, fn, "%s: the communicator was aborted (crec_comm_abort) while %s%s", who,
                           doing, left);
      if (failed)
        return crec__error(async == ncclRemoteError ? CREC_ERR_REMOTE : CREC_ERR_CUDA, fn,
                           "%s: NCCL reported an asynchronous error while %s: %s%s; the communicator was aborted%s",
                           who, doing, nc->error_string(async), detail, left);
      return crec__error(CREC_ERR_TIMEOUT, fn,
                         "%s: %s did not finish within %d ms (a rank may have failed, stopped, or issued other "
                         "collectives); the communicator was aborted%s",
                         who, doing, timeout_ms, left);
    }
    crec__back_off(&polls);
  }
}

/* Checks a communicator argument and makes its device's context current. */
static crec_status enter_comm(crec_comm *c, const char *fn, const crec__cu **cu_out, bool *pushed) {
  *pushed = false;
  if (!c) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'comm' is NULL");
  char who[96];
  if (c->aborted)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'comm': %s was aborted", comm_label(c, who, sizeof who));
  const crec__cu *cu = crec__driver(fn);
  if (!cu) return CREC_ERR_NO_DEVICE;
  CUcontext ctx;
  crec_status s = crec__use_device(cu, c->device, fn, &ctx);
  if (!s) s = crec__enter(cu, ctx, pushed, fn);
  *cu_out = cu;
  return s;
}

crec_status crec_comm_synchronize(crec_comm *comm, crec_stream stream, int timeout_ms) {
  static const char fn[] = "crec_comm_synchronize";
  const crec__cu *cu = NULL;
  bool pushed;
  crec_status s = enter_comm(comm, fn, &cu, &pushed);
  if (!s) s = watch(comm, cu, stream, timeout_ms, "waiting for the stream's work", fn);
  if (cu) crec__leave(cu, pushed);
  return s;
}

/* What each rank contributes to an agreement. */
typedef struct agree_record {
  int32_t status;
  int32_t rank;
  char message[504];
} agree_record;
_Static_assert(sizeof(agree_record) == 512, "an agreement record is 512 bytes");

/* Gathers every rank's record into `all` (size records) through NCCL on a
 * private stream, watched with the deadline. */
static crec_status gather_records(crec_comm *c, const crec__cu *cu, const agree_record *mine, agree_record *all,
                                  int timeout_ms, const char *fn) {
  const crec__nccl *nc = crec__nccl_loaded();
  char who[96];
  comm_label(c, who, sizeof who);
  size_t bytes = (size_t)c->size * sizeof *all;
  CUdeviceptr send = 0, recv = 0;
  CUstream stream = NULL;
  crec_status s = CREC_OK;
  char what[200];
  snprintf(what, sizeof what, "%s: the agreement's buffers", who);
  CREC__CU_STEP(s, fn, what, cu, cuMemAlloc, &send, sizeof *mine);
  CREC__CU_STEP(s, fn, what, cu, cuMemAlloc, &recv, bytes);
  CREC__CU_STEP(s, fn, what, cu, cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING);
  CREC__CU_STEP(s, fn, what, cu, cuMemcpyHtoD, send, mine, sizeof *mine);
  if (s) goto done;
  ncclResult_t nr = CREC__NCCL(nc->all_gather((const void *)(uintptr_t)send, (void *)(uintptr_t)recv, sizeof *mine,
                                       ncclUint8, (ncclComm_t)c->nccl, (cudaStream_t)stream));
  if (nr != ncclSuccess) {
    s = crec__nccl_fail(fn, who, nr, "ncclAllGather (the agreement)", (ncclComm_t)c->nccl);
    goto done;
  }
  if ((s = watch(c, cu, stream, timeout_ms, "agreeing with the other ranks", fn))) goto done;
  snprintf(what, sizeof what, "%s: the agreement's result", who);
  CREC__CU_STEP(s, fn, what, cu, cuMemcpyDtoH, all, recv, bytes);
done:
  /* after a failed watch the aborted collective normally drained; if it did not,
   * the buffers are left behind rather than freed under a running kernel */
  if (!stream || cu->cuStreamQuery(stream) != CUDA_ERROR_NOT_READY) {
    if (send) cu->cuMemFree(send);
    if (recv) cu->cuMemFree(recv);
    if (stream) cu->cuStreamDestroy(stream);
  }
  return s;
}

crec_status crec_comm_agree(crec_comm *comm, crec_status status, int timeout_ms) {
  static const char fn[] = "crec_comm_agree";
  /* the caller's failure message, before anything here overwrites it */
  agree_record mine;
  memset(&mine, 0, sizeof mine);
  mine.status = (int32_t)status;
  if (status != CREC_OK) snprintf(mine.message, sizeof mine.message, "%s", crec_last_error());
  const crec__cu *cu = NULL;
  bool pushed;
  crec_status s = enter_comm(comm, fn, &cu, &pushed);
  if (s) {
    if (cu) crec__leave(cu, pushed);
    return s;
  }
  mine.rank = comm->rank;
  agree_record *all = crec__calloc((size_t)comm->size, sizeof *all);
  if (!all) {
    crec__leave(cu, pushed);
    return crec__oom(fn);
  }
  if (comm->size == 1) all[0] = mine; /* nobody to ask */
  else s = gather_records(comm, cu, &mine, all, timeout_ms, fn);
  crec__leave(cu, pushed);
  if (s) {
    crec__free(all);
    return s;
  }
  /* every failing rank, in rank order; the first one's message in full */
  char text[1600];
  size_t len = 0;
  int failures = 0;
  for (int i = 0; i < comm->size; i++) {
    const agree_record *a = &all[i];
    if (a->status == CREC_OK) continue;
    char msg[sizeof a->message + 1];
    memcpy(msg, a->message, sizeof a->message);
    msg[sizeof a->message] = '\0'; /* a record from elsewhere need not be terminated */
    int n = snprintf(text + len, sizeof text - len, "%srank %d of %d%s failed with %s%s%s", failures ? "; " : "", i,
                     comm->size, i == comm->rank ? " (this rank)" : "", crec_status_name((crec_status)a->status),
                     failures == 0 && msg[0] ? ": " : "", failures == 0 ? msg : "");
    if (n > 0) len = len + (size_t)n < sizeof text ? len + (size_t)n : sizeof text - 1;
    failures++;
  }
  crec__free(all);
  if (!failures) return CREC_OK;
  return crec__error(CREC_ERR_REMOTE, fn, "%s", text);
}

