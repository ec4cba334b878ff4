/* The eager executor: the program issued command by command on a stream, with
 * control flow decided on the host (copy the predicate or index back,
 * synchronize, branch). The reference for tests and the baseline for benchmarks. */
#include <stdio.h>
#include <string.h>

#include "replay_internal.h"

typedef struct eager {
  const crec_program *p;
  const crec__cu *cu;
  const crec__ctx_state *st;
  crec__values *v;
  CUstream stream;
  const char *fn;
  uint64_t *control; /* counts control-flow commands run (may be NULL) */
  uint64_t loop_default; /* the iteration limit of loops without their own (0: none) */
} eager;

/* Reads `size` bytes of a condition once all work before it on the stream is done. */
static crec_status read_condition(const eager *x, size_t ci, crec_range r, void *out, size_t size) {
  CREC__CU_TRY_COMMAND(x, ci, cuMemcpyDtoHAsync, out, crec__range_addr(x->v, r), size, x->stream);
  CREC__CU_TRY_COMMAND(x, ci, cuStreamSynchronize, x->stream);
  return CREC_OK;
}

static crec_status run_region(const eager *x, uint32_t region);

static crec_status launch(const eager *x, size_t ci) {
  const crec__command *c = &x->p->commands[ci];
  uint32_t grid[3], block[3], shared;
  crec_status s = crec__launch_dims(x->p, x->v, c, grid, block, &shared, x->fn);
  if (s) return s;
  _Alignas(16) uint8_t params[CREC_MAX_PARAM_BYTES];
  void *ptrs_small[64];
  void **ptrs = c->num_args <= 64 ? ptrs_small : crec__malloc(c->num_args * sizeof *ptrs);
  if (!ptrs) return crec__oom(x->fn);
  crec__marshal_args(x->p, x->v, c, params, ptrs);
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = grid[0], cfg.gridDimY = grid[1], cfg.gridDimZ = grid[2];
  cfg.blockDimX = block[0], cfg.blockDimY = block[1], cfg.blockDimZ = block[2];
  cfg.sharedMemBytes = shared;
  cfg.hStream = x->stream;
  CUlaunchAttribute attr;
  const crec__kernel *k = &x->p->kernels[c->kernel];
  if (k->cluster[0]) {
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = k->cluster[0], attr.value.clusterDim.y = k->cluster[1];
    attr.value.clusterDim.z = k->cluster[2];
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
  }
  char label[160];
  CREC__CU_STEP(s, x->fn, crec__command_label(x->p, ci, label, sizeof label), x->cu, cuLaunchKernelEx, &cfg,
                x->st->functions[c->kernel], ptrs, NULL);
  if (ptrs != ptrs_small) crec__free(ptrs);
  return s;
}

/* A custom command: its handler's create() launching on the stream, or its trace(). */
static crec_status run_custom(const eager *x, size_t ci) {
  crec__handler *h;
  crec_status s = crec__handler_acquire(x->p, (uint32_t)ci, x->fn, &h);
  if (s) return s;
  const crec_custom_handler *hd = crec__handler_get(h);
  if (hd->kind == CREC_CUSTOM_TRACED) {
    s = crec__custom_trace(x->p, x->v, (uint32_t)ci, h, x->stream, x->fn);
  } else {
    crec__custom_args a;
    if (!(s = crec__custom_args_make(x->p, x->v, (uint32_t)ci, &a, x->fn))) {
      crec_custom_context ctx = crec__custom_context(CREC__CUSTOM_EAGER, x->p, x->cu, x->st, (uint32_t)ci, x->fn);
      ctx.stream = x->stream;
      s = crec__custom_run(&ctx, hd->create, hd->user, &a.call, "create");
    }
    crec__custom_args_free(&a);
  }
  crec__handler_release(h);
  return s;
}

/* A graph command: its imported exec replayed on the stream, bound to the
 * operands' addresses (one replay at a time: the exec's bindings are its state). */
static crec_status run_graph(const eager *x, size_t ci) {
  const crec__command *c = &x->p->commands[ci];
  crec_exec *ie = c->graph->ref;
  crec_binding *bound = crec__malloc((c->num_ops ? c->num_ops : 1) * sizeof *bound);
  if (!bound) return crec__oom(x->fn);
  for (size_t k = 0; k < c->num_ops; k++)
    bound[k] = (crec_binding){(void *)(uintptr_t)crec__range_addr(x->v, c->ops[k].range), c->ops[k].range.size};
  crec_bindings b = CREC_BINDINGS_INIT;
  b.buffers = bound;
  b.num_buffers = c->num_ops;
  pthread_mutex_lock(&ie->import->lock);
  crec_status s = crec_exec_replay(ie, &b, (crec_stream)x->stream);
  pthread_mutex_unlock(&ie->import->lock);
  crec__free(bound);
  if (s) {
    char label[160];
    return crec__annotate(s, x->fn, crec__command_label(x->p, ci, label, sizeof label));
  }
  return CREC_OK;
}

static crec_status run_collective(const eager *x, size_t ci) {
  const crec__command *c = &x->p->commands[ci];
  if (c->coll->start != CREC__NONE) return CREC_OK; /* a done: one stream already orders everything */
  if (!c->coll->degenerate) return crec__collective_issue(x->p, x->v, (uint32_t)ci, x->stream, x->fn);
  switch (crec__degenerate_action(x->p, x->v, (uint32_t)ci)) {
    case CREC__DEGENERATE_NOTHING: return CREC_OK;
    case CREC__DEGENERATE_COPY: /* a collective over single-rank groups */
      CREC__CU_TRY_COMMAND(x, ci, cuMemcpyAsync, crec__range_addr(x->v, c->dst), crec__range_addr(x->v, c->src),
                           (size_t)c->bytes, x->stream);
      return CREC_OK;
    case CREC__DEGENERATE_ZERO: /* a permute that sends this rank nothing */
      CREC__CU_TRY_COMMAND(x, ci, cuMemsetD8Async, crec__range_addr(x->v, c->dst), 0, (size_t)c->bytes, x->stream);
      return CREC_OK;
    case CREC__DEGENERATE_ID: /* replica_id, partition_id: one i32 from the bound communicator's rank */
      CREC__CU_TRY_COMMAND(x, ci, cuMemsetD32Async, crec__range_addr(x->v, c->dst), crec__collective_id(c, x->v), 1,
                           x->stream);
      return CREC_OK;
  }
  return CREC_OK;
}

static crec_status run_command(const eager *x, size_t ci) {
  const crec__command *c = &x->p->commands[ci];
  crec_status s;
  switch (c->kind) {
    case CREC_COMMAND_LAUNCH:
      return launch(x, ci);
    case CREC_COMMAND_MEMCPY:
      CREC__CU_TRY_COMMAND(x, ci, cuMemcpyAsync, crec__range_addr(x->v, c->dst), crec__range_addr(x->v, c->src),
                           (size_t)crec__command_bytes(x->v, c), x->stream);
      return CREC_OK;
    case CREC_COMMAND_MEMSET: {
      CUdeviceptr dst = crec__range_addr(x->v, c->dst);
      size_t n = (size_t)(crec__command_bytes(x->v, c) / c->memset_element_size);
      if (c->memset_element_size == 1)
        CREC__CU_TRY_COMMAND(x, ci, cuMemsetD8Async, dst, (unsigned char)c->memset_value, n, x->stream);
      else if (c->memset_element_size == 2)
        CREC__CU_TRY_COMMAND(x, ci, cuMemsetD16Async, dst, (unsigned short)c->memset_value, n, x->stream);
      else
        CREC__CU_TRY_COMMAND(x, ci, cuMemsetD32Async, dst, c->memset_value, n, x->stream);
      return CREC_OK;
    }
    case CREC_COMMAND_BARRIER:
      /* one stream already runs everything in program order; across ranks, the
       * one-element all_reduce waits for the others */
      if (c->coll && !c->coll->degenerate) return crec__collective_issue(x->p, x->v, (uint32_t)ci, x->stream, x->fn);
      return CREC_OK;
    case CREC_COMMAND_WHILE: {
      if (x->control) (*x->control)++;
      uint64_t limit = c->loop_limit == CREC_LOOP_UNLIMITED ? 0 : c->loop_limit ? c->loop_limit : x->loop_default;
      for (uint64_t n = 0;; n++) {
        if ((s = run_region(x, c->regions[0]))) return s;
        unsigned char pred;
        if ((s = read_condition(x, ci, c->predicate, &pred, 1))) return s;
        if (!pred) return CREC_OK;
        if (limit && n == limit) {
          char label[160];
          return crec__error(CREC_ERR_LOOP_LIMIT, x->fn,
                             "loop %s ran its limit of %llu iterations and was stopped (a loop whose predicate "
                             "never turns false, or raise the limit: crec_program_set_loop_limit, "
                             "crec_record_options.max_loop_iterations)",
                             crec__command_label(x->p, ci, label, sizeof label), (unsigned long long)limit);
        }
        if ((s = run_region(x, c->regions[1]))) return s;
      }
    }
    case CREC_COMMAND_IF: {
      if (x->control) (*x->control)++;
      unsigned char pred;
      if ((s = read_condition(x, ci, c->predicate, &pred, 1))) return s;
      return run_region(x, c->regions[pred ? 0 : 1]);
    }
    case CREC_COMMAND_SWITCH: {
      if (x->control) (*x->control)++;
      int32_t index;
      if ((s = read_condition(x, ci, c->predicate, &index, 4))) return s;
      size_t n = c->num_regions, branch = n - 1;
      if (!c->case_values) {
        if (index >= 0 && (size_t)index < n - 1) branch = (size_t)index;
      } else {
        for (size_t i = 0; i + 1 < n; i++)
          if (c->case_values[i] == index) {
            branch = i;
            break;
          }
      }
      return run_region(x, c->regions[branch]);
    }
    case CREC_COMMAND_GEMM:
      return crec__gemm_issue(x->p, x->st, x->v, (uint32_t)ci, x->stream, x->fn);
    case CREC_COMMAND_FFT:
      return crec__fft_issue(x->p, x->st, x->v, (uint32_t)ci, x->stream, x->fn);
    case CREC_COMMAND_CHOLESKY:
      return crec__cholesky_issue(x->p, x->st, x->v, (uint32_t)ci, x->stream, x->fn);
    case CREC_COMMAND_CONV:
      return crec__conv_issue(x->p, x->st, x->v, (uint32_t)ci, x->stream, x->fn);
    case CREC_COMMAND_COLLECTIVE:
      return run_collective(x, ci);
    case CREC_COMMAND_CUSTOM:
      return run_custom(x, ci);
    case CREC_COMMAND_GRAPH:
      return run_graph(x, ci);
    case CREC_COMMAND_HOST: {
      if (!c->hostcb->fn_buffers) {
        CREC__CU_TRY_COMMAND(x, ci, cuLaunchHostFunc, x->stream, c->hostcb->fn, c->hostcb->user);
        return CREC_OK;
      }
      /* this launch's addresses, freed by the call itself */
      crec__host_call *hc = crec__malloc(crec__host_call_bytes(c));
      if (!hc) return crec__oom(x->fn);
      crec__host_call_fill(hc, x->v, c, true);
      char label[160];
      s = CREC_OK;
      CREC__CU_STEP(s, x->fn, crec__command_label(x->p, ci, label, sizeof label), x->cu, cuLaunchHostFunc, x->stream,
                    crec__host_call_run, hc);
      if (s) crec__free(hc);
      return s;
    }
    default: {
      char label[160];
      return crec__error(CREC_ERR_UNSUPPORTED, x->fn, "%s: %s commands cannot run eagerly yet",
                         crec__command_label(x->p, ci, label, sizeof label), crec_command_kind_name(c->kind));
    }
  }
}

static crec_status run_region(const eager *x, uint32_t region) {
  const crec__region *r = &x->p->regions[region];
  for (size_t k = 0; k < r->num_commands; k++) {
    crec_status s = run_command(x, r->commands[k]);
    if (s) return s;
  }
  return CREC_OK;
}

crec_status crec__eager_region(const crec_program *p, const crec__cu *cu, const crec__ctx_state *st,
                               crec__values *v, CUstream stream, uint32_t region, uint64_t *control,
                               uint64_t loop_default, const char *fn) {
  eager x = {.p = p, .cu = cu, .st = st, .v = v, .stream = stream, .fn = fn, .control = control,
             .loop_default = loop_default};
  return run_region(&x, region);
}

/* A run on a stream that someone else captures (PyTorch's graph, XLA's command
 * buffer): its stream work is captured like any other (kernels, copies, fills,
 * host callbacks, the temporaries' stream-ordered allocation and free). What
 * would synchronize, or call outside the stream, would end that capture
 * (CUDA invalidates it), so it is refused by name before any call on the
 * stream: control flow (decided on the host), library calls (their handles and
 * work areas are made on first use), host temporaries (freed after a
 * synchronization), and a first run in this context (modules loaded, constants
 * uploaded). An exec replays into a capture without these limits, control
 * flow included (crec_exec_replay). */
static crec_status capture_check(const crec_program *p, const crec__cu *cu, crec__runtime *rt, CUcontext ctx,
                                 CUstream stream, const char *fn) {
  static const char why[] = "cannot run eagerly on a stream being captured";
  bool capturing = false;
  crec_status s = crec__stream_capturing(cu, stream, "run", fn, &capturing);
  if (s || !capturing) return s;
  for (size_t ci = 0; ci < p->num_commands; ci++) {
    crec_command_kind k = p->commands[ci].kind;
    const char *what = NULL;
    if (k == CREC_COMMAND_WHILE || k == CREC_COMMAND_IF || k == CREC_COMMAND_SWITCH)
      what = "control flow, which an eager run decides on the host (a copy back and a synchronization)";
    else if (k != CREC_COMMAND_LAUNCH && k != CREC_COMMAND_MEMCPY && k != CREC_COMMAND_MEMSET &&
             k != CREC_COMMAND_BARRIER && k != CREC_COMMAND_HOST && k != CREC_COMMAND_GRAPH)
      what = "a library call, whose handles and work areas an eager run makes outside the stream";
    if (what) {
      char label[160];
      return crec__error(CREC_ERR_UNSUPPORTED, fn, "%s: %s is %s; record the program and replay the exec on that "
                         "stream instead", why, crec__command_label(p, ci, label, sizeof label), what);
    }
  }
  if (rt->plan->host_arena_bytes)
    return crec__error(CREC_ERR_UNSUPPORTED, fn,
                       "%s: the program has %llu bytes of host temporaries, freed after a synchronization; record "
                       "the program and replay the exec on that stream instead", why,
                       (unsigned long long)rt->plan->host_arena_bytes);
  if (!crec__ctx_state_ready(rt, ctx))
    return crec__error(CREC_ERR_UNSUPPORTED, fn,
                       "%s: the program has not run in this context yet, and its first run loads modules and "
                       "uploads constants with calls a capture forbids; run or record it once before the capture",
                       why);
  return CREC_OK;
}

crec_status crec_run_eager(const crec_program *program, const crec_bindings *bindings,
                           crec_stream stream) {
  static const char fn[] = "crec_run_eager";
  if (!program) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  crec_status s = crec_program_validate(program);
  if (s) return crec__rethrow(s, fn);
  crec__runtime *rt;
  if ((s = crec__runtime_get(program, fn, &rt))) return s;
  if ((s = crec__check_bindings(program, rt->required, bindings, fn))) return s;
  const crec__cu *cu = crec__driver(fn);
  if (!cu) return CREC_ERR_NO_DEVICE;

  CUcontext ctx = NULL;
  bool pushed = false;
  if (cu->cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) {
    if ((s = crec__use_device(cu, 0, fn, &ctx))) return s;
    if ((s = crec__enter(cu, ctx, &pushed, fn))) return s;
  }
  crec__ctx_state *st;
  crec__values v = {0};
  CUdeviceptr arena = 0, host_arena = 0;
  if ((s = capture_check(program, cu, rt, ctx, (CUstream)stream, fn))) goto done;
  if ((s = crec__ctx_state_get(program, cu, rt, ctx, fn, NULL, &st))) goto done;
  if ((s = crec__gemm_prepare(program, rt, st, fn))) goto done;
  if ((s = crec__fft_prepare(program, cu, rt, st, NULL, fn))) goto done;
  if ((s = crec__cholesky_prepare(program, rt, st, fn))) goto done;
  if ((s = crec__conv_prepare(program, cu, rt, st, NULL, fn))) goto done;
  if (crec__values_alloc(program, &v)) {
    s = crec__oom(fn);
    goto done;
  }
  if ((s = crec__eval_bindings(program, bindings, &v, NULL, fn))) goto done;
  if (rt->plan->arena_bytes) {
    /* stream-ordered, so repeated eager runs reuse the pool's memory */
    CREC__CU_STEP(s, fn, "temporary arena", cu, cuMemAllocAsync, &arena, rt->plan->arena_bytes, stream);
    if (s) {
      arena = 0;
      goto done;
    }
    CREC__CUDA_LIVE(1);
  }
  if ((s = crec__host_arena_alloc(cu, rt->plan->host_arena_bytes, fn, &host_arena))) goto done;
  crec__place_buffers(program, rt->plan, arena, host_arena, st, &v);
  s = crec__eager_region(program, cu, st, &v, stream, 0, NULL, 0, fn);
done:
  if (host_arena) {
    /* page-locked memory is freed at once: the run's work must be done first */
    crec_status w = CREC_OK;
    CREC__CU_STEP(w, fn, "waiting for the run before freeing its host temporaries", cu, cuStreamSynchronize, stream);
    if (!s) s = w;
    if (!w) { /* on a failed wait the work may still use it: leak rather than free memory in use */
      cu->cuMemFreeHost((void *)(uintptr_t)host_arena);
      CREC__CUDA_LIVE(-1);
    }
  }
  if (arena) {
    cu->cuMemFreeAsync(arena, stream);
    CREC__CUDA_LIVE(-1);
  }
  crec__values_free(&v);
  crec__leave(cu, pushed);
  return s;
}
