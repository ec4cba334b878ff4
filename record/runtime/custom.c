/* Custom commands: the process-wide handler registry, the context handlers add
 * and update kernel launches through, and the calls into handlers. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "runtime_internal.h"

/* ---- the registry ---- */

struct crec__handler {
  char *target;
  crec_custom_handler h;
  int refs;                   /* the registry's own, plus one per exec using it (under `lock`) */
  struct crec__handler *next; /* in the registry, while registered */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static crec__handler *registry;

static crec__handler *find(const char *target) {
  for (crec__handler *h = registry; h; h = h->next)
    if (strcmp(h->target, target) == 0) return h;
  return NULL;
}

/* Drops a reference (under `lock`); returns the handler to finish freeing outside it. */
static crec__handler *unref(crec__handler *h) { return --h->refs == 0 ? h : NULL; }

static void finish(crec__handler *h) {
  if (!h) return;
  if (h->h.user_free) h->h.user_free(h->h.user);
  crec__free(h->target);
  crec__free(h);
}

crec_status crec_custom_register(const char *target, const crec_custom_handler *handler) {
  static const char fn[] = "crec_custom_register";
  if (!target) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'target' is NULL");
  if (!handler) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'handler' is NULL");
  if (!target[0]) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'target' is empty");
  crec_custom_handler given = CREC_CUSTOM_HANDLER_INIT;
  crec_status s = crec__take_struct(&given, sizeof given, handler, sizeof(crec_custom_handler), fn,
                                    "argument 'handler'", "CREC_CUSTOM_HANDLER_INIT");
  if (s) return s;
  handler = &given;
  if (handler->kind == CREC_CUSTOM_NODES) {
    if (!handler->create || !handler->update)
      return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "handler '%s': a nodes handler needs create() and update()",
                         target);
  } else if (handler->kind == CREC_CUSTOM_TRACED) {
    if (!handler->trace)
      return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "handler '%s': a traced handler needs trace()", target);
  } else {
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "handler '%s': unknown kind %d", target, (int)handler->kind);
  }
  crec__handler *h = crec__calloc(1, sizeof *h);
  char *name = crec__strdup(target);
  if (!h || !name) {
    crec__free(h);
    crec__free(name);
    return crec__oom(fn);
  }
  h->target = name;
  h->h = *handler;
  h->h.struct_size = sizeof h->h;
  h->refs = 1;
  pthread_mutex_lock(&lock);
  if (find(target)) {
    pthread_mutex_unlock(&lock);
    crec__free(name);
    crec__free(h);
    return crec__error(CREC_ERR_DUPLICATE_NAME, fn, "a handler for target '%s' is already registered", target);
  }
  h->next = registry;
  registry = h;
  pthread_mutex_unlock(&lock);
  return CREC_OK;
}

crec_status crec_custom_unregister(const char *target) {
  static const char fn[] = "crec_custom_unregister";
  if (!target) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'target' is NULL");
  pthread_mutex_lock(&lock);
  crec__handler **at = &registry;
  while (*at && strcmp((*at)->target, target) != 0) at = &(*at)->next;
  crec__handler *h = *at, *done = NULL;
  if (h) {
    *at = h->next;
    h->next = NULL;
    done = unref(h);
  }
  pthread_mutex_unlock(&lock);
  if (!h) return crec__error(CREC_ERR_NOT_FOUND, fn, "no handler is registered for target '%s'", target);
  finish(done);
  return CREC_OK;
}

static pthread_once_t builtins = PTHREAD_ONCE_INIT;

crec_status crec__handler_acquire(const crec_program *p, uint32_t ci, const char *fn, crec__handler **out) {
  pthread_once(&builtins, crec__tensor_map_register);
  const char *target = p->commands[ci].custom->target;
  pthread_mutex_lock(&lock);
  crec__handler *h = find(target);
  if (h) h->refs++;
  pthread_mutex_unlock(&lock);
  *out = h;
  if (!h) {
    char label[200];
    return crec__error(CREC_ERR_NOT_FOUND, fn, "%s: custom target '%s' is not registered (crec_custom_register)",
                       crec__command_label(p, ci, label, sizeof label), target);
  }
  return CREC_OK;
}

void crec__handler_release(crec__handler *h) {
  if (!h) return;
  pthread_mutex_lock(&lock);
  crec__handler *done = unref(h);
  pthread_mutex_unlock(&lock);
  finish(done);
}

const crec_custom_handler *crec__handler_get(const crec__handler *h) { return &h->h; }

/* ---- calls ---- */

crec_status crec__custom_args_make(const crec_program *p, const crec__values *v, uint32_t ci, crec__custom_args *a,
                                   const char *fn) {
  const crec__command *c = &p->commands[ci];
  const crec__custom *u = c->custom;
  bool small = u->num_operands <= 16;
  a->ops = small ? a->small_ops : crec__malloc(u->num_operands * sizeof *a->ops);
  a->sizes = small ? a->small_sizes : crec__malloc(u->num_operands * sizeof *a->sizes);
  if (!a->ops || !a->sizes) return crec__oom(fn);
  void **operands = a->ops;
  uint64_t *sizes = a->sizes;
  crec_custom_call *call = &a->call;
  for (size_t i = 0; i < u->num_operands; i++) {
    crec_range r = u->operands[i].range;
    if (!r.buffer.id) {
      operands[i] = NULL;
      sizes[i] = 0;
      continue;
    }
    operands[i] = (void *)(uintptr_t)crec__range_addr(v, r);
    if (r.size != CREC_WHOLE) {
      sizes[i] = r.size;
    } else {
      uint64_t total = v->size[crec__index(r.buffer.id)];
      sizes[i] = total > r.offset ? total - r.offset : 0;
    }
  }
  memset(call, 0, sizeof *call);
  call->struct_size = sizeof *call;
  call->target = u->target;
  call->name = c->name;
  call->operands = operands;
  call->operand_sizes = sizes;
  call->num_operands = u->num_operands;
  call->attributes = u->attributes;
  call->attributes_size = u->attributes_size;
  call->num_kernels = u->num_kernels;
  return CREC_OK;
}

void crec__custom_args_free(crec__custom_args *a) {
  if (a->ops != a->small_ops) crec__free(a->ops);
  if (a->sizes != a->small_sizes) crec__free(a->sizes);
  a->ops = NULL;
  a->sizes = NULL;
}

crec_custom_context crec__custom_context(int mode, const crec_program *p, const crec__cu *cu,
                                         const crec__ctx_state *st, uint32_t ci, const char *fn) {
  crec_custom_context ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.mode = mode;
  ctx.p = p;
  ctx.cu = cu;
  ctx.st = st;
  ctx.ci = ci;
  ctx.fn = fn;
  return ctx;
}

crec_status crec__custom_run(crec_custom_context *ctx, crec_custom_fn f, void *user, const crec_custom_call *call,
                             const char *what) {
  ctx->error = CREC_OK;
  crec_status s = f(user, ctx, call);
  char label[200];
  crec__command_label(ctx->p, ctx->ci, label, sizeof label);
  if (ctx->error) /* a context call failed: its message is more precise than the handler's status */
    return crec__rethrow(ctx->error, ctx->fn);
  if (s == CREC_OK) return CREC_OK;
  return crec__error(s, ctx->fn, "%s: the %s() of custom target '%s' returned %s", label, what, call->target,
                     crec_status_name(s));
}

crec_status crec__custom_trace(const crec_program *p, const crec__values *v, uint32_t ci, const crec__handler *h,
                               CUstream stream, const char *fn) {
  crec__custom_args a;
  crec_status s = crec__custom_args_make(p, v, ci, &a, fn);
  if (!s && (s = h->h.trace(h->h.user, stream, &a.call))) {
    char label[200];
    s = crec__error(s, fn, "%s: the trace() of custom target '%s' returned %s",
                    crec__command_label(p, ci, label, sizeof label), a.call.target, crec_status_name(s));
  }
  crec__custom_args_free(&a);
  return s;
}

void crec__custom_state_free(crec__custom_state *cs) {
  if (!cs) return;
  crec__handler_release(cs->handler);
  crec__free(cs->nodes);
  crec__free(cs);
}

/* ---- the context API (library.h) ---- */

/* Fails a context call: remembers the first failure for crec__custom_run(). */
static crec_status ctx_fail(crec_custom_context *ctx, crec_status s) {
  if (!ctx->error) ctx->error = s;
  return s;
}

/* Resolves a launch's function and checks its shape. */
static crec_status launch_function(crec_custom_context *ctx, const char *fn, const crec_custom_launch *l,
                                   CUfunction *out) {
  char label[200];
  crec__command_label(ctx->p, ctx->ci, label, sizeof label);
  char arg[260];
  snprintf(arg, sizeof arg, "%s: argument 'launch'", label);
  crec_custom_launch given = CREC_CUSTOM_LAUNCH_INIT;
  crec_status s = crec__take_struct(&given, sizeof given, l, sizeof(crec_custom_launch), fn, arg,
                                    "CREC_CUSTOM_LAUNCH_INIT");
  if (s) return ctx_fail(ctx, s);
  l = &given;
  for (int i = 0; i < 3; i++)
    if (!l->grid[i] || !l->block[i])
      return ctx_fail(ctx, crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: a launch with a zero grid or block dimension",
                                       label));
  if (l->function) {
    *out = (CUfunction)l->function;
    return CREC_OK;
  }
  const crec__custom *u = ctx->p->commands[ctx->ci].custom;
  if (l->kernel >= u->num_kernels)
    return ctx_fail(ctx, crec__error(CREC_ERR_OUT_OF_RANGE, fn, "%s: kernel %zu, but the command lists %zu kernels",
                                     label, l->kernel, u->num_kernels));
  *out = ctx->st->functions[crec__index(u->kernels[l->kernel].id)];
  return CREC_OK;
}

static void kernel_params(const crec_custom_launch *l, CUfunction f, CUDA_KERNEL_NODE_PARAMS *kp) {
  memset(kp, 0, sizeof *kp);
  kp->func = f;
  kp->gridDimX = l->grid[0], kp->gridDimY = l->grid[1], kp->gridDimZ = l->grid[2];
  kp->blockDimX = l->block[0], kp->blockDimY = l->block[1], kp->blockDimZ = l->block[2];
  kp->sharedMemBytes = l->shared_bytes;
  kp->kernelParams = l->params;
}

/* The cluster dims of a program kernel a launch uses (all 0 for none or a handler's own function). */
static const uint32_t *cluster_of(const crec_custom_context *ctx, const crec_custom_launch *l) {
  static const uint32_t none[3] = {0, 0, 0};
  if (l->function) return none;
  const crec__custom *u = ctx->p->commands[ctx->ci].custom;
  return ctx->p->kernels[crec__index(u->kernels[l->kernel].id)].cluster;
}

crec_status crec_custom_context_launch(crec_custom_context *ctx, const crec_custom_launch *launch, size_t *index) {
  static const char fn[] = "crec_custom_context_launch";
  if (index) *index = 0;
  if (!ctx) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'ctx' is NULL");
  if (!launch) return ctx_fail(ctx, crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'launch' is NULL"));
  char label[200];
  crec__command_label(ctx->p, ctx->ci, label, sizeof label);
  if (ctx->mode == CREC__CUSTOM_UPDATE)
    return ctx_fail(ctx, crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                                     "%s: update() may only change the launches create() made "
                                     "(crec_custom_context_update)", label));
  CUfunction f;
  crec_status s = launch_function(ctx, fn, launch, &f);
  if (s) return s;
  const uint32_t *cluster = cluster_of(ctx, launch);
  CUresult r;
  if (ctx->mode == CREC__CUSTOM_EAGER) {
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = launch->grid[0], cfg.gridDimY = launch->grid[1], cfg.gridDimZ = launch->grid[2];
    cfg.blockDimX = launch->block[0], cfg.blockDimY = launch->block[1], cfg.blockDimZ = launch->block[2];
    cfg.sharedMemBytes = launch->shared_bytes;
    cfg.hStream = ctx->stream;
    CUlaunchAttribute attr;
    if (cluster[0]) {
      memset(&attr, 0, sizeof attr);
      attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      attr.value.clusterDim.x = cluster[0], attr.value.clusterDim.y = cluster[1], attr.value.clusterDim.z = cluster[2];
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
    }
    r = CREC__CU(ctx->cu, cuLaunchKernelEx, &cfg, f, launch->params, NULL);
    if (r != CUDA_SUCCESS) return ctx_fail(ctx, crec__cu_fail(fn, r, "cuLaunchKernelEx", label));
    if (index) *index = ctx->launched;
    ctx->launched++;
    return CREC_OK;
  }
  /* record: a kernel node after the previous one (or the command's dependencies) */
  crec__custom_state *cs = ctx->state;
  if (CREC__RESERVE(cs->nodes, cs->cap_nodes, cs->num_nodes + 1) != CREC_OK) return ctx_fail(ctx, crec__oom(fn));
  CUDA_KERNEL_NODE_PARAMS kp;
  kernel_params(launch, f, &kp);
  const CUgraphNode *deps = cs->num_nodes ? &cs->nodes[cs->num_nodes - 1] : ctx->deps;
  size_t nd = cs->num_nodes ? 1 : ctx->num_deps;
  CUgraphNode node;
  r = CREC__CU(ctx->cu, cuGraphAddKernelNode, &node, ctx->graph, deps, nd, &kp);
  if (r != CUDA_SUCCESS) return ctx_fail(ctx, crec__cu_fail(fn, r, "cuGraphAddKernelNode", label));
  cs->nodes[cs->num_nodes] = node;
  if (cluster[0]) {
    CUlaunchAttributeValue v;
    memset(&v, 0, sizeof v);
    v.clusterDim.x = cluster[0], v.clusterDim.y = cluster[1], v.clusterDim.z = cluster[2];
    r = CREC__CU(ctx->cu, cuGraphKernelNodeSetAttribute, node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v);
    if (r != CUDA_SUCCESS)
      return ctx_fail(ctx, crec__cu_fail(fn, r, "cuGraphKernelNodeSetAttribute(CLUSTER_DIMENSION)", label));
  }
  if (index) *index = cs->num_nodes;
  cs->num_nodes++;
  return CREC_OK;
}

crec_status crec_custom_context_update(crec_custom_context *ctx, size_t index, const crec_custom_launch *launch) {
  static const char fn[] = "crec_custom_context_update";
  if (!ctx) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'ctx' is NULL");
  if (!launch) return ctx_fail(ctx, crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'launch' is NULL"));
  char label[200];
  crec__command_label(ctx->p, ctx->ci, label, sizeof label);
  if (ctx->mode != CREC__CUSTOM_UPDATE)
    return ctx_fail(ctx, crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                                     "%s: launches are updated from update() only; create() adds them "
                                     "(crec_custom_context_launch)", label));
  if (index >= ctx->state->num_nodes)
    return ctx_fail(ctx, crec__error(CREC_ERR_OUT_OF_RANGE, fn, "%s: launch %zu, but create() made %zu", label, index,
                                     ctx->state->num_nodes));
  CUfunction f;
  crec_status s = launch_function(ctx, fn, launch, &f);
  if (s) return s;
  CUDA_KERNEL_NODE_PARAMS kp;
  kernel_params(launch, f, &kp);
  CUresult r = CREC__CU(ctx->cu, cuGraphExecKernelNodeSetParams, ctx->exec, ctx->state->nodes[index], &kp);
  if (r != CUDA_SUCCESS) return ctx_fail(ctx, crec__cu_fail(fn, r, "cuGraphExecKernelNodeSetParams", label));
  return CREC_OK;
}

size_t crec_custom_context_launch_count(const crec_custom_context *ctx) {
  if (!ctx) return 0;
  return ctx->mode == CREC__CUSTOM_EAGER ? ctx->launched : ctx->state ? ctx->state->num_nodes : 0;
}

crec_stream crec_custom_context_stream(const crec_custom_context *ctx) {
  return ctx && ctx->mode == CREC__CUSTOM_EAGER ? ctx->stream : NULL;
}
