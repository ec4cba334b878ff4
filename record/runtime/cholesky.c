/* Cholesky factorizations through cuSOLVER (its dense API, 64-bit interface),
 * opened at run time. Each CUDA context gets one cuSOLVER handle, made at record
 * (or at an eager run's start), and every Cholesky command's work area is
 * checked there against what cusolverDnXpotrf_bufferSize asks for. A call sets
 * the handle's stream and factors the batch's matrices one after another, under
 * the handle's lock (eager runs on several threads share it).
 *
 * crec's matrices are row-major; cuSOLVER's are column-major. A row-major A is
 * the column-major Aᵀ, which for a symmetric A is A itself; its row-major lower
 * triangle is the column-major upper one. So L·Lᵀ in the lower triangle is
 * cuSOLVER's Uᵀ·U in the upper (U = Lᵀ), and the reverse. */
#include <cusolverDn.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "runtime_internal.h"

/* The cuSOLVER functions crec calls: (field, symbol, return type, parameters). */
#define CREC__SOLVER_FUNCS(X)                                                                                 \
  X(create, "cusolverDnCreate", cusolverStatus_t, (cusolverDnHandle_t *))                                    \
  X(destroy, "cusolverDnDestroy", cusolverStatus_t, (cusolverDnHandle_t))                                    \
  X(set_stream, "cusolverDnSetStream", cusolverStatus_t, (cusolverDnHandle_t, cudaStream_t))                 \
  X(create_params, "cusolverDnCreateParams", cusolverStatus_t, (cusolverDnParams_t *))                       \
  X(destroy_params, "cusolverDnDestroyParams", cusolverStatus_t, (cusolverDnParams_t))                       \
  X(potrf_buffer_size, "cusolverDnXpotrf_bufferSize", cusolverStatus_t,                                      \
    (cusolverDnHandle_t, cusolverDnParams_t, cublasFillMode_t, int64_t, cudaDataType, const void *, int64_t,  \
     cudaDataType, size_t *, size_t *))                                                                       \
  X(potrf, "cusolverDnXpotrf", cusolverStatus_t,                                                              \
    (cusolverDnHandle_t, cusolverDnParams_t, cublasFillMode_t, int64_t, cudaDataType, void *, int64_t,        \
     cudaDataType, void *, size_t, void *, size_t, int *))

typedef struct crec__cusolver {
#define CREC__SOLVER_FIELD(field, symbol, ret, params) ret(*field) params;
  CREC__SOLVER_FUNCS(CREC__SOLVER_FIELD)
#undef CREC__SOLVER_FIELD
} crec__cusolver;

/* CUDA 13 ships cuSOLVER 12 */
CREC__LIBRARY_LOADER(crec__cusolver, cs, CREC__SOLVER_FUNCS, "cuSOLVER", "libcusolver.so.12")

crec_status crec__cholesky_library(const char *fn) { return crec__loader_check(&loader, load, NULL, fn); }

/* Calls cuSOLVER with the CUDA fault hook in front (test builds fail the n-th call). */
#define CS(call) (crec__cu_fault() ? CUSOLVER_STATUS_ALLOC_FAILED : (call))

static const char *status_name(cusolverStatus_t r) {
  switch (r) {
    case CUSOLVER_STATUS_NOT_INITIALIZED: return "CUSOLVER_STATUS_NOT_INITIALIZED";
    case CUSOLVER_STATUS_ALLOC_FAILED: return "CUSOLVER_STATUS_ALLOC_FAILED";
    case CUSOLVER_STATUS_INVALID_VALUE: return "CUSOLVER_STATUS_INVALID_VALUE";
    case CUSOLVER_STATUS_ARCH_MISMATCH: return "CUSOLVER_STATUS_ARCH_MISMATCH";
    case CUSOLVER_STATUS_EXECUTION_FAILED: return "CUSOLVER_STATUS_EXECUTION_FAILED";
    case CUSOLVER_STATUS_INTERNAL_ERROR: return "CUSOLVER_STATUS_INTERNAL_ERROR";
    case CUSOLVER_STATUS_NOT_SUPPORTED: return "CUSOLVER_STATUS_NOT_SUPPORTED";
    case CUSOLVER_STATUS_INVALID_WORKSPACE: return "CUSOLVER_STATUS_INVALID_WORKSPACE";
    default: return "a cusolverStatus_t crec does not name";
  }
}

static crec_status cs_fail(const char *fn, const char *label, cusolverStatus_t r, const char *call) {
  return crec__error(CREC_ERR_CUDA, fn, "%s: %s failed: %s (%d)", label, call, status_name(r), (int)r);
}

/* A context's cuSOLVER handle and parameters, and the lock its calls take. */
typedef struct crec__solver {
  cusolverDnHandle_t handle;
  cusolverDnParams_t params;
  pthread_mutex_t lock;
  size_t *work; /* per command: the device work area cusolverDnXpotrf_bufferSize asked for */
} crec__solver;

void crec__cholesky_state_free(crec__ctx_state *st) {
  crec__solver *sv = st->solver;
  if (!sv) return;
  crec__free(sv->work);
  if (sv->params) cs.destroy_params(sv->params);
  if (sv->handle) {
    cs.destroy(sv->handle);
    CREC__CUDA_LIVE(-1);
  }
  pthread_mutex_destroy(&sv->lock);
  crec__free(sv);
  st->solver = NULL;
}

/* cuSOLVER's triangle for crec's (row-major: the other one, see the top) */
static cublasFillMode_t fill_of(const crec_cholesky *d) { return d->upper ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER; }
static cudaDataType data_type(const crec_cholesky *d) { return d->type == CREC_ELEMENT_F64 ? CUDA_R_64F : CUDA_R_32F; }

/* Checks command `ci`'s workspace against what cuSOLVER asks for (under the handle's lock). */
static crec_status check_work(const crec_program *p, crec__solver *sv, uint32_t ci, const char *fn) {
  const crec_cholesky *d = &p->commands[ci].chol->desc;
  char label[200];
  crec__command_label(p, ci, label, sizeof label);
  size_t dev = 0, host = 0;
  pthread_mutex_lock(&sv->lock);
  cusolverStatus_t r = CS(cs.potrf_buffer_size(sv->handle, sv->params, fill_of(d), (int64_t)d->n, data_type(d), NULL,
                                               (int64_t)d->n, data_type(d), &dev, &host));
  pthread_mutex_unlock(&sv->lock);
  if (r != CUSOLVER_STATUS_SUCCESS) return cs_fail(fn, label, r, "cusolverDnXpotrf_bufferSize");
  if (host)
    return crec__error(CREC_ERR_UNSUPPORTED, fn,
                       "%s: cuSOLVER asks for %zu bytes of host work area, which a captured graph cannot give it",
                       label, host);
  sv->work[ci] = dev;
  if (dev > d->workspace_bytes)
    return crec__error(CREC_ERR_OUT_OF_RANGE, fn,
                       "%s: cuSOLVER needs %zu bytes of work area, the command's workspace has %" PRIu64
                       " (set crec_cholesky.workspace_bytes to at least %zu)",
                       label, dev, d->workspace_bytes, dev);
  return CREC_OK;
}

crec_status crec__cholesky_prepare(const crec_program *p, crec__runtime *rt, crec__ctx_state *st, const char *fn) {
  size_t first = p->num_commands;
  for (size_t i = 0; i < p->num_commands && first == p->num_commands; i++)
    if (p->commands[i].kind == CREC_COMMAND_CHOLESKY) first = i;
  if (first == p->num_commands) return CREC_OK;
  char label[200];
  crec_status s = crec__loader_check(&loader, load, crec__command_label(p, first, label, sizeof label), fn);
  if (s) return s;
  pthread_mutex_lock(&rt->lock);
  if (!st->solver) {
    crec__solver *sv = crec__calloc(1, sizeof *sv);
    if (!sv) {
      s = crec__oom(fn);
    } else {
      pthread_mutex_init(&sv->lock, NULL);
      st->solver = sv;
      if (!(sv->work = crec__calloc(p->num_commands, sizeof *sv->work))) {
        crec__cholesky_state_free(st);
        pthread_mutex_unlock(&rt->lock);
        return crec__oom(fn);
      }
      const char *call = "cusolverDnCreate";
      cusolverStatus_t r = CS(cs.create(&sv->handle));
      if (r == CUSOLVER_STATUS_SUCCESS) {
        CREC__CUDA_LIVE(1);
        call = "cusolverDnCreateParams";
        r = CS(cs.create_params(&sv->params));
        if (r != CUSOLVER_STATUS_SUCCESS) sv->params = NULL;
      } else {
        sv->handle = NULL;
      }
      if (r != CUSOLVER_STATUS_SUCCESS) {
        s = cs_fail(fn, crec__command_label(p, first, label, sizeof label), r, call);
        crec__cholesky_state_free(st); /* the next record tries again */
      }
    }
  }
  for (size_t i = first; i < p->num_commands && !s; i++)
    if (p->commands[i].kind == CREC_COMMAND_CHOLESKY) s = check_work(p, st->solver, (uint32_t)i, fn);
  pthread_mutex_unlock(&rt->lock);
  return s;
}

crec_status crec__cholesky_issue(const crec_program *p, const crec__ctx_state *st, const crec__values *v, uint32_t ci,
                                 CUstream stream, const char *fn) {
  const crec__chol *k = p->commands[ci].chol;
  const crec_cholesky *d = &k->desc;
  crec__solver *sv = st->solver;
  CUdeviceptr a = crec__range_addr(v, d->a), info = crec__range_addr(v, d->info);
  void *ws = (void *)(uintptr_t)v->base[k->workspace];
  uint64_t bytes = d->n * d->n * crec_element_size(d->type);
  pthread_mutex_lock(&sv->lock);
  const char *call = "cusolverDnSetStream";
  cusolverStatus_t r = CS(cs.set_stream(sv->handle, (cudaStream_t)stream));
  for (uint64_t i = 0; i < d->batch && r == CUSOLVER_STATUS_SUCCESS; i++) {
    call = "cusolverDnXpotrf";
    r = CS(cs.potrf(sv->handle, sv->params, fill_of(d), (int64_t)d->n, data_type(d), (void *)(uintptr_t)(a + i * bytes),
                    (int64_t)d->n, data_type(d), ws, (size_t)d->workspace_bytes, NULL, 0,
                    (int *)(uintptr_t)(info + 4 * i)));
  }
  /* the handle keeps no stream a later destroy could outlive (the capture stream
   * dies with its exec), after a failure too; the first error is the one said */
  cusolverStatus_t reset = CS(cs.set_stream(sv->handle, NULL));
  if (r == CUSOLVER_STATUS_SUCCESS && reset != CUSOLVER_STATUS_SUCCESS) {
    call = "cusolverDnSetStream";
    r = reset;
  }
  pthread_mutex_unlock(&sv->lock);
  if (r != CUSOLVER_STATUS_SUCCESS) {
    char label[200];
    return cs_fail(fn, crec__command_label(p, ci, label, sizeof label), r, call);
  }
  return CREC_OK;
}

void crec__cholesky_choice(const crec_program *p, const crec__ctx_state *st, uint32_t ci, crec__text *t) {
  const crec__solver *sv = st->solver;
  if (!sv || !sv->work) return;
  const crec_cholesky *d = &p->commands[ci].chol->desc;
  crec__text_printf(t, "cusolverDnXpotrf for each of %" PRIu64 " matrices, %zu of the %" PRIu64
                    " workspace bytes as its work area", d->batch, sv->work[ci], d->workspace_bytes);
}
