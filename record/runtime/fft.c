/* FFT through cuFFT, opened at run time. Each CUDA context gets a plan per FFT
 * command, made once with automatic work-area allocation off: every call (eager,
 * or captured for a new address set) sets the command's workspace, its stream and
 * runs the same plan. cuFFT computes unnormalized transforms; a scale other than
 * 1 is one more kernel over the output (crec_scale_f32/f64, with the set-condition
 * kernels). A complex-to-real transform overwrites its input in cuFFT, so crec
 * copies the input into the workspace first and transforms the copy. */
#include <cufft.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "runtime_internal.h"

/* The cuFFT functions crec calls: (field, symbol, return type, parameters). */
#define CREC__CUFFT_FUNCS(X)                                                                                  \
  X(create, "cufftCreate", cufftResult, (cufftHandle *))                                                      \
  X(destroy, "cufftDestroy", cufftResult, (cufftHandle))                                                      \
  X(set_auto_allocation, "cufftSetAutoAllocation", cufftResult, (cufftHandle, int))                          \
  X(make_plan_many64, "cufftMakePlanMany64", cufftResult,                                                     \
    (cufftHandle, int, long long *, long long *, long long, long long, long long *, long long, long long,     \
     cufftType, long long, size_t *))                                                                         \
  X(set_work_area, "cufftSetWorkArea", cufftResult, (cufftHandle, void *))                                    \
  X(set_stream, "cufftSetStream", cufftResult, (cufftHandle, cudaStream_t))                                   \
  X(exec_c2c, "cufftExecC2C", cufftResult, (cufftHandle, cufftComplex *, cufftComplex *, int))                \
  X(exec_r2c, "cufftExecR2C", cufftResult, (cufftHandle, cufftReal *, cufftComplex *))                        \
  X(exec_c2r, "cufftExecC2R", cufftResult, (cufftHandle, cufftComplex *, cufftReal *))                        \
  X(exec_z2z, "cufftExecZ2Z", cufftResult, (cufftHandle, cufftDoubleComplex *, cufftDoubleComplex *, int))    \
  X(exec_d2z, "cufftExecD2Z", cufftResult, (cufftHandle, cufftDoubleReal *, cufftDoubleComplex *))            \
  X(exec_z2d, "cufftExecZ2D", cufftResult, (cufftHandle, cufftDoubleComplex *, cufftDoubleReal *))

typedef struct crec__cufft {
#define CREC__CUFFT_FIELD(field, symbol, ret, params) ret(*field) params;
  CREC__CUFFT_FUNCS(CREC__CUFFT_FIELD)
#undef CREC__CUFFT_FIELD
} crec__cufft;

/* CUDA 13 ships cuFFT 12 */
CREC__LIBRARY_LOADER(crec__cufft, cf, CREC__CUFFT_FUNCS, "cuFFT", "libcufft.so.12")

/* Calls cuFFT with the CUDA fault hook in front (test builds fail the n-th call). */
#define CF(call) (crec__cu_fault() ? CUFFT_ALLOC_FAILED : (call))

static const char *result_name(cufftResult r) {
  switch (r) {
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
    case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    case CUFFT_UNALIGNED_DATA: return "CUFFT_UNALIGNED_DATA";
    case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
    default: return "a cufftResult crec does not name";
  }
}

static crec_status cf_fail(const char *fn, const char *label, cufftResult r, const char *call) {
  return crec__error(CREC_ERR_CUDA, fn, "%s: %s failed: %s (%d)", label, call, result_name(r), (int)r);
}

/* An FFT's plan in one context. The plan's stream and work area are set at each
 * call, under `lock` (eager runs on several threads share the plan). */
typedef struct crec__fft_plan {
  cufftHandle handle;
  bool made;
  size_t work;          /* bytes of work area the plan asked for */
  pthread_mutex_t lock;
} crec__fft_plan;

static void plan_free(crec__fft_plan *pl) {
  if (!pl) return;
  if (pl->made) {
    cf.destroy(pl->handle);
    CREC__CUDA_LIVE(-1);
  }
  pthread_mutex_destroy(&pl->lock);
  crec__free(pl);
}

void crec__fft_state_free(const crec_program *p, crec__ctx_state *st) {
  if (!st->fft) return; /* nothing made (`loaded` may be written by another thread's first FFT now) */
  for (size_t i = 0; st->fft && i < p->num_commands; i++) plan_free(st->fft[i]);
  crec__free(st->fft);
  st->fft = NULL;
}

static cufftType plan_type(const crec_fft *d) {
  bool f64 = d->precision == CREC_ELEMENT_F64;
  switch (d->type) {
    case CREC_FFT_REAL_FORWARD: return f64 ? CUFFT_D2Z : CUFFT_R2C;
    case CREC_FFT_REAL_INVERSE: return f64 ? CUFFT_Z2D : CUFFT_C2R;
    default: return f64 ? CUFFT_Z2Z : CUFFT_C2C;
  }
}

static crec_status make_plan(const crec_program *p, uint32_t ci, crec__fft_plan **out, const char *fn) {
  const crec__fft *f = p->commands[ci].fft;
  const crec_fft *d = &f->desc;
  char label[200];
  crec__command_label(p, ci, label, sizeof label);
  crec__fft_plan *pl = crec__calloc(1, sizeof *pl);
  if (!pl) return crec__oom(fn);
  pthread_mutex_init(&pl->lock, NULL);
  long long n[3];
  for (uint32_t i = 0; i < d->rank; i++) n[i] = (long long)d->length[i];
  cufftResult r = CF(cf.create(&pl->handle));
  const char *call = "cufftCreate";
  if (r == CUFFT_SUCCESS) {
    pl->made = true;
    CREC__CUDA_LIVE(1);
    call = "cufftSetAutoAllocation";
    r = CF(cf.set_auto_allocation(pl->handle, 0));
  }
  if (r == CUFFT_SUCCESS) {
    /* packed data: NULL embeds take the basic layout, one transform after another */
    call = "cufftMakePlanMany64";
    r = CF(cf.make_plan_many64(pl->handle, (int)d->rank, n, NULL, 1, 0, NULL, 1, 0, plan_type(d), (long long)d->batch,
                               &pl->work));
  }
  crec_status s = CREC_OK;
  if (r != CUFFT_SUCCESS) s = cf_fail(fn, label, r, call);
  else if (pl->work > d->workspace_bytes)
    s = crec__error(CREC_ERR_OUT_OF_RANGE, fn,
                    "%s: cuFFT's plan needs %zu bytes of work area, the command's workspace has %" PRIu64
                    " (set crec_fft.workspace_bytes to at least %zu)",
                    label, pl->work, d->workspace_bytes, pl->work);
  if (s) {
    /* nothing kept: the next record makes and checks the plan again */
    plan_free(pl);
    return s;
  }
  *out = pl;
  return CREC_OK;
}

crec_status crec__fft_library(const char *fn) { return crec__loader_check(&loader, load, NULL, fn); }

static bool scales(const crec_program *p) {
  for (size_t i = 0; i < p->num_commands; i++)
    if (p->commands[i].kind == CREC_COMMAND_FFT && p->commands[i].fft->desc.scale != 1) return true;
  return false;
}

crec_status crec__fft_prepare(const crec_program *p, const crec__cu *cu, crec__runtime *rt, crec__ctx_state *st,
                              crec__loads *loads, const char *fn) {
  size_t first = p->num_commands;
  for (size_t i = 0; i < p->num_commands && first == p->num_commands; i++)
    if (p->commands[i].kind == CREC_COMMAND_FFT) first = i;
  if (first == p->num_commands) return CREC_OK;
  char label[200];
  crec_status s = crec__loader_check(&loader, load, crec__command_label(p, first, label, sizeof label), fn);
  if (s) return s;
  s = scales(p) ? crec__load_conditions(cu, rt, st, fn, loads) : CREC_OK;
  if (s) return s;
  pthread_mutex_lock(&rt->lock);
  if (!st->fft) {
    st->fft = crec__calloc(p->num_commands, sizeof *st->fft);
    if (!st->fft) s = crec__oom(fn);
  }
  for (size_t i = first; i < p->num_commands && !s; i++)
    if (p->commands[i].kind == CREC_COMMAND_FFT && !st->fft[i]) s = make_plan(p, (uint32_t)i, &st->fft[i], fn);
  pthread_mutex_unlock(&rt->lock);
  return s;
}

/* The plan's transform of `in` into `out`. */
static cufftResult exec_plan(const crec_fft *d, cufftHandle h, void *in, void *out) {
  int dir = d->type == CREC_FFT_INVERSE ? CUFFT_INVERSE : CUFFT_FORWARD;
  bool f64 = d->precision == CREC_ELEMENT_F64;
  switch (d->type) {
    case CREC_FFT_REAL_FORWARD:
      return f64 ? cf.exec_d2z(h, in, out) : cf.exec_r2c(h, in, out);
    case CREC_FFT_REAL_INVERSE:
      return f64 ? cf.exec_z2d(h, in, out) : cf.exec_c2r(h, in, out);
    default:
      return f64 ? cf.exec_z2z(h, in, out, dir) : cf.exec_c2c(h, in, out, dir);
  }
}

crec_status crec__fft_issue(const crec_program *p, const crec__ctx_state *st, const crec__values *v, uint32_t ci,
                            CUstream stream, const char *fn) {
  const crec__fft *f = p->commands[ci].fft;
  const crec_fft *d = &f->desc;
  crec__fft_plan *pl = st->fft ? st->fft[ci] : NULL;
  char label[200];
  crec__command_label(p, ci, label, sizeof label);
  if (!pl) return crec__error(CREC_ERR_INTERNAL, fn, "%s: no cuFFT plan was made in this context", label);
  const crec__cu *cu = crec__driver(fn);
  if (!cu) return CREC_ERR_NO_DEVICE;
  CUdeviceptr in = crec__range_addr(v, d->input), out = crec__range_addr(v, d->output);
  CUdeviceptr ws = v->base[f->workspace];
  crec_status s = CREC_OK;
  if (d->type == CREC_FFT_REAL_INVERSE) {
    /* cuFFT overwrites a complex-to-real input: transform a copy */
    CUdeviceptr copy = ws + f->copy_offset;
    CREC__CU_STEP(s, fn, label, cu, cuMemcpyAsync, copy, in, f->input_bytes, stream);
    if (s) return s;
    in = copy;
  }
  pthread_mutex_lock(&pl->lock);
  const char *call = "cufftSetStream";
  cufftResult r = CF(cf.set_stream(pl->handle, (cudaStream_t)stream));
  if (r == CUFFT_SUCCESS) {
    call = "cufftSetWorkArea";
    r = CF(cf.set_work_area(pl->handle, (void *)(uintptr_t)ws));
  }
  if (r == CUFFT_SUCCESS) {
    bool f64 = d->precision == CREC_ELEMENT_F64;
    call = d->type == CREC_FFT_REAL_FORWARD   ? (f64 ? "cufftExecD2Z" : "cufftExecR2C")
           : d->type == CREC_FFT_REAL_INVERSE ? (f64 ? "cufftExecZ2D" : "cufftExecC2R")
                                              : (f64 ? "cufftExecZ2Z" : "cufftExecC2C");
    r = CF(exec_plan(d, pl->handle, (void *)(uintptr_t)in, (void *)(uintptr_t)out));
  }
  /* the plan keeps no stream a later destroy could outlive (the capture stream
   * dies with its exec), after a failure too; the first error is the one said */
  cufftResult reset = CF(cf.set_stream(pl->handle, NULL));
  if (r == CUFFT_SUCCESS && reset != CUFFT_SUCCESS) {
    call = "cufftSetStream";
    r = reset;
  }
  pthread_mutex_unlock(&pl->lock);
  if (r != CUFFT_SUCCESS) return cf_fail(fn, label, r, call);
  if (d->scale == 1) return CREC_OK;
  /* the output times scale, as reals (a complex element is two) */
  bool f64 = d->precision == CREC_ELEMENT_F64;
  unsigned long long n = f->output_bytes / (f64 ? 8 : 4);
  float s32 = (float)d->scale;
  double s64 = d->scale;
  void *params[] = {&out, &n, f64 ? (void *)&s64 : (void *)&s32};
  unsigned long long blocks = (n + 255) / 256;
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = (unsigned)(blocks < 4096 ? blocks : 4096), cfg.gridDimY = 1, cfg.gridDimZ = 1;
  cfg.blockDimX = 256, cfg.blockDimY = 1, cfg.blockDimZ = 1;
  cfg.hStream = stream;
  CREC__CU_STEP(s, fn, label, cu, cuLaunchKernelEx, &cfg, f64 ? st->scale_f64 : st->scale_f32, params, NULL);
  return s;
}

void crec__fft_choice(const crec_program *p, const crec__ctx_state *st, uint32_t ci, crec__text *t) {
  const crec__fft_plan *pl = st->fft ? st->fft[ci] : NULL;
  if (!pl) return;
  crec__text_printf(t, "a cuFFT plan with %zu of the %" PRIu64 " workspace bytes as its work area", pl->work,
                    p->commands[ci].fft->desc.workspace_bytes);
}
