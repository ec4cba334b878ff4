/* Collectives through NCCL, opened at run time: communicators, the binding
 * checks, issuing a collective on a stream (captured at record and replay, or
 * run directly by the eager executor), and what keeps ranks from waiting for
 * each other forever: waits with a deadline that abort the communicator, and
 * an agreement on every rank's status. */
#include <dlfcn.h>
#include <inttypes.h>
#include <nccl.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "runtime_internal.h"

/* The NCCL functions crec calls: (field, symbol, return type, parameters),
 * declared by hand (no typeof in C11). One table makes the struct and the
 * lookups, as driver.h's does for the driver. */
#define CREC__NCCL_FUNCS(X)                                                                                       \
  X(get_version, "ncclGetVersion", ncclResult_t, (int *))                                                         \
  X(get_unique_id, "ncclGetUniqueId", ncclResult_t, (ncclUniqueId *))                                             \
  X(comm_init_rank, "ncclCommInitRank", ncclResult_t, (ncclComm_t *, int, ncclUniqueId, int))                     \
  X(comm_destroy, "ncclCommDestroy", ncclResult_t, (ncclComm_t))                                                  \
  X(comm_abort, "ncclCommAbort", ncclResult_t, (ncclComm_t))                                                      \
  X(comm_get_async_error, "ncclCommGetAsyncError", ncclResult_t, (ncclComm_t, ncclResult_t *))                    \
  X(comm_count, "ncclCommCount", ncclResult_t, (const ncclComm_t, int *))                                         \
  X(comm_user_rank, "ncclCommUserRank", ncclResult_t, (const ncclComm_t, int *))                                  \
  X(comm_cu_device, "ncclCommCuDevice", ncclResult_t, (const ncclComm_t, int *))                                  \
  X(error_string, "ncclGetErrorString", const char *, (ncclResult_t))                                             \
  X(last_error, "ncclGetLastError", const char *, (ncclComm_t))                                                   \
  X(all_reduce, "ncclAllReduce", ncclResult_t,                                                                    \
    (const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))                        \
  X(all_gather, "ncclAllGather", ncclResult_t, (const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t)) \
  X(reduce_scatter, "ncclReduceScatter", ncclResult_t,                                                            \
    (const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))                        \
  X(send, "ncclSend", ncclResult_t, (const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))        \
  X(recv, "ncclRecv", ncclResult_t, (void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))              \
  X(group_start, "ncclGroupStart", ncclResult_t, (void))                                                          \
  X(group_end, "ncclGroupEnd", ncclResult_t, (void))

typedef struct crec__nccl {
#define CREC__NCCL_FIELD(field, symbol, ret, params) ret(*field) params;
  CREC__NCCL_FUNCS(CREC__NCCL_FIELD)
#undef CREC__NCCL_FIELD
  ncclResult_t (*comm_revoke)(ncclComm_t, int); /* NCCL 2.28 and newer; NULL before */
} crec__nccl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static crec__nccl nc;
static bool loaded;
static char why[700];

static void load(void) {
  char reason[600];
  void *lib = crec__open_library("libnccl.so.2", reason, sizeof reason);
  if (!lib) {
    snprintf(why, sizeof why, "NCCL is not available: %s", reason);
    return;
  }
  static const crec__symbol syms[] = {
#define CREC__NCCL_SYM(field, symbol, ret, params) {offsetof(crec__nccl, field), symbol},
      CREC__NCCL_FUNCS(CREC__NCCL_SYM)
#undef CREC__NCCL_SYM
  };
  const char *missing = crec__load_symbols(lib, syms, sizeof syms / sizeof *syms, &nc);
  if (missing) {
    snprintf(why, sizeof why, "NCCL is not available: libnccl.so.2 has no %s (NCCL 2.7 or newer needed)", missing);
    return;
  }
  void *revoke = dlsym(lib, "ncclCommRevoke");
  memcpy(&nc.comm_revoke, &revoke, sizeof revoke);
  loaded = true;
}

/* Returns the NCCL table, or NULL after setting CREC_ERR_UNSUPPORTED. */
static const crec__nccl *nccl(const char *fn, const char *label) {
  pthread_once(&once, load);
  if (!loaded) {
    crec__error(CREC_ERR_UNSUPPORTED, fn, "%s%s%s", label ? label : "", label ? ": " : "", why);
    return NULL;
  }
  return &nc;
}

/* Calls NCCL with the CUDA fault hook in front. */
#define NCCL(call) (crec__cu_fault() ? ncclSystemError : (call))

static crec_status nccl_fail(const char *fn, const char *label, ncclResult_t r, const char *call, ncclComm_t comm) {
  const char *last = comm && nc.last_error ? nc.last_error(comm) : NULL;
  return crec__error(CREC_ERR_CUDA, fn, "%s%s%s failed: %s%s%s", label ? label : "", label ? ": " : "", call,
                     nc.error_string ? nc.error_string(r) : "NCCL error", last && last[0] ? "; " : "",
                     last && last[0] ? last : "");
}

/* ---- communicators ---- */

crec_status crec_comm_get_unique_id(crec_comm_id *out) {
  static const char fn[] = "crec_comm_get_unique_id";
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  memset(out, 0, sizeof *out);
  const crec__nccl *n = nccl(fn, NULL);
  if (!n) return CREC_ERR_UNSUPPORTED;
  _Static_assert(sizeof(ncclUniqueId) == sizeof(crec_comm_id), "an NCCL unique id is 128 bytes");
  ncclUniqueId id;
  ncclResult_t r = NCCL(n->get_unique_id(&id));
  if (r != ncclSuccess) return nccl_fail(fn, NULL, r, "ncclGetUniqueId", NULL);
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
  const crec__nccl *n = nccl(fn, NULL);
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
  ncclResult_t r = NCCL(n->comm_init_rank(&comm, size, uid, rank));
  crec__leave(cu, pushed);
  if (r != ncclSuccess) {
    crec__free(c);
    char what[96];
    snprintf(what, sizeof what, "rank %d of %d on device %d", rank, size, device);
    return nccl_fail(fn, what, r, "ncclCommInitRank", NULL);
  }
  *out = comm_init(c, comm, true, rank, size, device);
  return CREC_OK;
}

crec_status crec_comm_wrap(void *nccl_comm, crec_comm **out) {
  static const char fn[] = "crec_comm_wrap";
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  *out = NULL;
  if (!nccl_comm) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'nccl_comm' is NULL");
  const crec__nccl *n = nccl(fn, NULL);
  if (!n) return CREC_ERR_UNSUPPORTED;
  ncclComm_t comm = nccl_comm;
  int rank = 0, size = 0, device = 0;
  ncclResult_t r = NCCL(n->comm_count(comm, &size));
  const char *call = "ncclCommCount";
  if (r == ncclSuccess) r = NCCL(n->comm_user_rank(comm, &rank)), call = "ncclCommUserRank";
  if (r == ncclSuccess) r = NCCL(n->comm_cu_device(comm, &device)), call = "ncclCommCuDevice";
  if (r != ncclSuccess) return nccl_fail(fn, NULL, r, call, comm);
  crec_comm *c = crec__calloc(1, sizeof *c);
  if (!c) return crec__oom(fn);
  *out = comm_init(c, comm, false, rank, size, device);
  return CREC_OK;
}

void crec_comm_destroy(crec_comm *comm) {
  if (!comm) return;
  /* a revoked communicator still needs its destroy; an aborted one NCCL frees itself */
  if (comm->owned && (!comm->aborted || comm->revoked) && loaded) nc.comm_destroy((ncclComm_t)comm->nccl);
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

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void *abort_main(void *comm) {
  nc.comm_abort((ncclComm_t)comm);
  return NULL;
}

/* Stops `c`'s work unless it already was; returns NCCL's result (under c->lock).
 * No fault hook: an abort that did not happen would leave kernels spinning. */
static ncclResult_t abort_locked(crec_comm *c) {
  if (c->aborted) return ncclSuccess;
  c->aborted = true;
  /* ncclCommRevoke (NCCL 2.28) stops the communicator's kernels and refuses
   * later collectives, leaving the communicator for ncclCommDestroy */
  if (nc.comm_revoke && nc.comm_revoke((ncclComm_t)c->nccl, 0) == ncclSuccess) {
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
  return nc.comm_abort((ncclComm_t)c->nccl);
}

crec_status crec_comm_abort(crec_comm *comm) {
  static const char fn[] = "crec_comm_abort";
  if (!comm) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'comm' is NULL");
  pthread_mutex_lock(&comm->lock);
  ncclResult_t r = abort_locked(comm);
  pthread_mutex_unlock(&comm->lock);
  char what[96];
  if (r != ncclSuccess)
    return nccl_fail(fn, comm_label(comm, what, sizeof what), r, "ncclCommAbort", NULL);
  return CREC_OK;
}

int crec_comm_aborted(const crec_comm *comm) { return comm && comm->aborted; }

/* Sleeps a little longer each time: the first polls spin (a collective often
 * finishes within microseconds), later ones sleep up to 160 us, which keeps a
 * wait's overshoot small next to the work it waits for. */
static void back_off(unsigned *polls) {
  unsigned n = (*polls)++;
  if (n < 200) return;
  if (n < 400) {
    sched_yield();
    return;
  }
  unsigned shift = n - 400 < 4 ? n - 400 : 4;
  struct timespec ts = {0, (long)(10000u << shift)}; /* 10 us .. 160 us */
  nanosleep(&ts, NULL);
}

/* After an abort NCCL's kernels return; waits (a bounded while) for the stream
 * to drain so that the caller may free what its work used. Returns whether it did. */
static bool drain(const crec__cu *cu, CUstream stream) {
  double end = now_ms() + 10000;
  unsigned polls = 400;
  while (now_ms() < end) {
    CUresult r = cu->cuStreamQuery(stream);
    if (r != CUDA_ERROR_NOT_READY) return true;
    back_off(&polls);
  }
  return false;
}

/* Waits until the work on `stream` is done while watching `c`: NCCL's
 * asynchronous error, an abort from another thread, and (timeout_ms > 0) the
 * deadline. The first two and the third abort `c` and fail. `doing` says what
 * was waited for; `c`'s context is current. */
static crec_status watch(crec_comm *c, const crec__cu *cu, CUstream stream, int timeout_ms, const char *doing,
                         const char *fn) {
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
    if (!was_aborted) polled = nc.comm_get_async_error((ncclComm_t)c->nccl, &async);
    if (polled != ncclSuccess) async = polled;
    bool failed = async != ncclSuccess && async != ncclInProgress;
    bool late = timeout_ms > 0 && now_ms() - start > (double)timeout_ms;
    const char *last = failed && nc.last_error ? nc.last_error((ncclComm_t)c->nccl) : NULL;
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
                           who, doing, nc.error_string(async), detail, left);
      return crec__error(CREC_ERR_TIMEOUT, fn,
                         "%s: %s did not finish within %d ms (a rank may have failed, stopped, or issued other "
                         "collectives); the communicator was aborted%s",
                         who, doing, timeout_ms, left);
    }
    back_off(&polls);
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
  ncclResult_t nr = NCCL(nc.all_gather((const void *)(uintptr_t)send, (void *)(uintptr_t)recv, sizeof *mine,
                                       ncclUint8, (ncclComm_t)c->nccl, (cudaStream_t)stream));
  if (nr != ncclSuccess) {
    s = nccl_fail(fn, who, nr, "ncclAllGather (the agreement)", (ncclComm_t)c->nccl);
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

/* ---- binding checks ---- */

/* The first command using communicator slot `slot`, for messages ("" when none). */
static const char *first_user(const crec_program *p, size_t slot, char *buf, size_t size) {
  buf[0] = '\0';
  for (size_t ci = 0; ci < p->num_commands; ci++) {
    const crec__command *c = &p->commands[ci];
    if (c->coll && c->coll->comm == slot) { /* a collective, or a barrier across ranks */
      crec__command_label(p, ci, buf, size);
      strncat(buf, ": ", size - strlen(buf) - 1);
      break;
    }
  }
  return buf;
}

crec_status crec__check_comms(const crec_program *p, const crec_bindings *b, int device, const char *fn) {
  if (b->num_communicators != p->num_comms)
    return crec__error(CREC_ERR_BINDING, fn, "%zu communicator bindings given, but the program has %zu communicators",
                       b->num_communicators, p->num_comms);
  if (p->num_comms && !b->communicators)
    return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'bindings.communicators' is NULL");
  char who[240];
  for (size_t i = 0; i < p->num_comms; i++) {
    const crec_comm *c = b->communicators[i];
    const crec__comm_slot *slot = &p->comms[i];
    if (!c)
      return crec__error(CREC_ERR_BINDING, fn, "%scommunicator binding %zu ('%s'): NULL", first_user(p, i, who, sizeof who),
                         i, slot->name);
    if (c->size != slot->size)
      return crec__error(CREC_ERR_BINDING, fn, "%scommunicator binding %zu ('%s') has %d ranks, but the program needs %d",
                         first_user(p, i, who, sizeof who), i, slot->name, c->size, slot->size);
    if (c->aborted)
      return crec__error(CREC_ERR_BINDING, fn, "%scommunicator binding %zu ('%s') was aborted",
                         first_user(p, i, who, sizeof who), i, slot->name);
    if (device >= 0 && c->device != device)
      return crec__error(CREC_ERR_BINDING, fn, "%scommunicator binding %zu ('%s') is on device %d, the execution on %d",
                         first_user(p, i, who, sizeof who), i, slot->name, c->device, device);
  }
  return CREC_OK;
}

/* ---- issuing ---- */

crec__degenerate crec__degenerate_action(const crec_program *p, const crec__values *v, uint32_t ci) {
  const crec__coll *k = p->commands[ci].coll;
  const crec_collective *d = &k->desc;
  if (d->kind == CREC_COLLECTIVE_PERMUTE) {
    int rank = v->comms[k->comm]->rank;
    for (size_t i = 0; i < d->num_pairs; i++)
      if (d->pairs[2 * i + 1] == rank) return CREC__DEGENERATE_COPY; /* a pair rank -> rank */
    return CREC__DEGENERATE_ZERO;
  }
  bool in_place = d->send.buffer.id == d->recv.buffer.id && d->send.offset == d->recv.offset;
  return in_place ? CREC__DEGENERATE_NOTHING : CREC__DEGENERATE_COPY;
}

static ncclDataType_t nccl_type(crec_element e) {
  switch (e) {
    case CREC_ELEMENT_I8: return ncclInt8;
    case CREC_ELEMENT_I32: return ncclInt32;
    case CREC_ELEMENT_I64: return ncclInt64;
    case CREC_ELEMENT_F16: return ncclFloat16;
    case CREC_ELEMENT_BF16: return ncclBfloat16;
    case CREC_ELEMENT_F32: return ncclFloat32;
    case CREC_ELEMENT_F64: return ncclFloat64;
    default: return ncclUint8; /* bytes; 16-bit integers never reduce (refused when added) */
  }
}

static ncclRedOp_t nccl_op(crec_reduction r) {
  return r == CREC_REDUCTION_PROD ? ncclProd : r == CREC_REDUCTION_MIN ? ncclMin : r == CREC_REDUCTION_MAX ? ncclMax
                                                                                                              : ncclSum;
}

crec_status crec__collective_issue(const crec_program *p, const crec__values *v, uint32_t ci, CUstream stream,
                                   const char *fn) {
  const crec__command *c = &p->commands[ci];
  const crec__coll *k = c->coll;
  const crec_collective *d = &k->desc;
  char label[200];
  crec__command_label(p, ci, label, sizeof label);
  const crec__nccl *n = nccl(fn, label);
  if (!n) return CREC_ERR_UNSUPPORTED;
  const crec_comm *cc = v->comms[k->comm];
  ncclComm_t comm = (ncclComm_t)cc->nccl;
  cudaStream_t s = (cudaStream_t)stream;
  const char *send = (const char *)(uintptr_t)crec__range_addr(v, d->send);
  char *recv = (char *)(uintptr_t)crec__range_addr(v, d->recv);
  size_t es = crec_element_size(d->type);
  /* moving collectives move bytes: NCCL's types only matter to reductions */
  size_t bytes = (size_t)d->send.size;
  ncclResult_t r = ncclSuccess;
  const char *call = "";
  switch (d->kind) {
    case CREC_COLLECTIVE_ALL_REDUCE:
      call = "ncclAllReduce";
      r = NCCL(n->all_reduce(send, recv, bytes / es, nccl_type(d->type), nccl_op(d->reduction), comm, s));
      break;
    case CREC_COLLECTIVE_ALL_GATHER:
      call = "ncclAllGather";
      r = NCCL(n->all_gather(send, recv, bytes, ncclUint8, comm, s));
      break;
    case CREC_COLLECTIVE_REDUCE_SCATTER:
      call = "ncclReduceScatter";
      r = NCCL(n->reduce_scatter(send, recv, (size_t)d->recv.size / es, nccl_type(d->type), nccl_op(d->reduction),
                                 comm, s));
      break;
    case CREC_COLLECTIVE_ALL_TO_ALL: {
      size_t block = bytes / k->group_size;
      call = "ncclGroupStart";
      r = NCCL(n->group_start());
      if (r != ncclSuccess) break;
      for (uint32_t j = 0; j < k->group_size && r == ncclSuccess; j++) {
        call = "ncclSend";
        r = NCCL(n->send(send + j * block, block, ncclUint8, (int)j, comm, s));
        if (r == ncclSuccess) call = "ncclRecv", r = NCCL(n->recv(recv + j * block, block, ncclUint8, (int)j, comm, s));
      }
      /* an open group is always closed, also after a failed call inside it */
      ncclResult_t e = n->group_end();
      if (r == ncclSuccess && e != ncclSuccess) r = e, call = "ncclGroupEnd";
      break;
    }
    case CREC_COLLECTIVE_PERMUTE: {
      bool receives = false;
      call = "ncclGroupStart";
      r = NCCL(n->group_start());
      if (r != ncclSuccess) break;
      for (size_t i = 0; i < d->num_pairs && r == ncclSuccess; i++) {
        int src = d->pairs[2 * i], dst = d->pairs[2 * i + 1];
        if (src == cc->rank) call = "ncclSend", r = NCCL(n->send(send, bytes, ncclUint8, dst, comm, s));
        if (r == ncclSuccess && dst == cc->rank) {
          receives = true;
          call = "ncclRecv";
          r = NCCL(n->recv(recv, bytes, ncclUint8, src, comm, s));
        }
      }
      ncclResult_t e = n->group_end();
      if (r == ncclSuccess && e != ncclSuccess) r = e, call = "ncclGroupEnd";
      if (r == ncclSuccess && !receives) {
        /* no source sends to this rank: its recv is zeros */
        const crec__cu *cu = crec__driver(fn);
        if (!cu) return CREC_ERR_NO_DEVICE;
        CREC__CU_TRY(fn, label, cu, cuMemsetD8Async, (CUdeviceptr)(uintptr_t)recv, 0, bytes, stream);
      }
      break;
    }
  }
  if (r != ncclSuccess) return nccl_fail(fn, label, r, call, comm);
  return CREC_OK;
}
