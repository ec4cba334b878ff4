/* Per-program runtime state: the default plan, loaded modules and uploaded
 * constants per CUDA context; primary contexts; small device helpers. */
#include <stdio.h>
#include <string.h>

#include "runtime_internal.h"

extern const unsigned char crec__conditions_fatbin[];
extern const size_t crec__conditions_fatbin_size;
extern const unsigned char crec__updater_fatbin[];
extern const size_t crec__updater_fatbin_size;

/* ---- primary contexts ---- */

crec_status crec__use_device(const crec__cu *cu, int ordinal, const char *fn, CUcontext *ctx_out) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  static CUcontext retained[64];
  *ctx_out = NULL;
  int count = 0;
  CREC__CU_TRY(fn, NULL, cu, cuDeviceGetCount, &count);
  if (ordinal < 0 || ordinal >= count || ordinal >= 64)
    return crec__error(CREC_ERR_OUT_OF_RANGE, fn, "device %d does not exist (%d devices)", ordinal, count);
  pthread_mutex_lock(&lock);
  if (!retained[ordinal]) {
    CUdevice dev;
    char what[48];
    snprintf(what, sizeof what, "device %d", ordinal);
    crec_status s = CREC_OK;
    CREC__CU_STEP(s, fn, what, cu, cuDeviceGet, &dev, ordinal);
    /* retained once for the life of the process, like the CUDA runtime does */
    CREC__CU_STEP(s, fn, what, cu, cuDevicePrimaryCtxRetain, &retained[ordinal], dev);
    if (s) {
      retained[ordinal] = NULL;
      pthread_mutex_unlock(&lock);
      return s;
    }
  }
  *ctx_out = retained[ordinal];
  pthread_mutex_unlock(&lock);
  return CREC_OK;
}

/* ---- per-context state ---- */

static void ctx_state_free(const crec__cu *cu, const crec_program *p, crec__ctx_state *st) {
  bool pushed;
  if (cu && crec__enter(cu, st->ctx, &pushed, NULL) == CREC_OK) {
    for (size_t i = 0; st->modules && i < p->num_modules; i++)
      if (st->modules[i]) {
        cu->cuModuleUnload(st->modules[i]);
        CREC__CUDA_LIVE(-1);
      }
    for (size_t i = 0; st->constants && i < p->num_buffers; i++)
      if (st->constants[i]) {
        cu->cuMemFree(st->constants[i]);
        CREC__CUDA_LIVE(-1);
      }
    if (st->cond_module) {
      cu->cuModuleUnload(st->cond_module);
      CREC__CUDA_LIVE(-1);
    }
    if (st->upd_module) {
      cu->cuModuleUnload(st->upd_module);
      CREC__CUDA_LIVE(-1);
    }
    crec__gemm_state_free(p, st);
    crec__fft_state_free(p, st);
    crec__cholesky_state_free(st);
    crec__conv_state_free(p, st);
    crec__leave(cu, pushed);
  }
  crec__free(st->modules);
  crec__free(st->functions);
  crec__free(st->constants);
  crec__gemm_state_free(p, st); /* a no-op unless the context could not be entered */
  crec__fft_state_free(p, st);
  crec__cholesky_state_free(st);
  crec__conv_state_free(p, st);
  crec__free(st);
}

/* Counts one load of `image` that took `ns` into `loads` (may be NULL). */
static void count_load(const crec__ctx_state *st, crec_image_format format, const void *image, size_t size,
                       uint64_t ns, crec__loads *loads) {
  if (!loads) return;
  loads->modules++;
  loads->jit += crec_image_needs_jit(format, image, size, st->major, st->minor) != 0;
  loads->ns += ns;
}

/* Loads one image, with the JIT's error log in the message when it fails, and
 * counts it into `loads`. */
static crec_status load_module(const crec__cu *cu, const crec__ctx_state *st, crec_image_format format,
                               const void *image, size_t size, const char *what, const char *fn, crec__loads *loads,
                               CUmodule *out) {
  char log[2048] = "";
  CUjit_option opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
  uint64_t t0 = crec__now_ns();
  CUresult r = CREC__CU(cu, cuModuleLoadDataEx, out, image, 2, opts, vals);
  if (r == CUDA_SUCCESS) count_load(st, format, image, size, crec__now_ns() - t0, loads);
  if (r != CUDA_SUCCESS) {
    *out = NULL;
    const char *name = NULL, *text = NULL;
    cu->cuGetErrorName(r, &name);
    cu->cuGetErrorString(r, &text);
    for (char *c = log; *c; c++)
      if (*c == '\n') *c = ' ';
    return crec__error(crec__cu_status(r), fn, "%s: cuModuleLoadDataEx failed: %s (%s)%s%s", what,
                       name ? name : "CUDA_ERROR_UNKNOWN", text ? text : "no description",
                       log[0] ? "; JIT log: " : "", log);
  }
  CREC__CUDA_LIVE(1);
  return CREC_OK;
}

/* Loads function `f` into its context now. With CUDA's lazy loading (the default
 * since CUDA 12.2) a function is otherwise loaded at its first launch, which can
 * deadlock when that launch waits for a load while a collective kernel of the
 * same program spins on this device for a peer that waits for us. cuFuncLoad
 * (CUDA 12.4) loads explicitly; older drivers load on an attribute query. */
static crec_status load_function(const crec__cu *cu, CUfunction f, const char *what, const char *fn) {
  crec_status s = CREC_OK;
  int regs = 0;
  if (cu->cuFuncLoad) CREC__CU_STEP(s, fn, what, cu, cuFuncLoad, f);
  else CREC__CU_STEP(s, fn, what, cu, cuFuncGetAttribute, &regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
  return s;
}

/* The number of parameters of `entry` in a PTX image (NUL-terminated), or -1
 * when its signature is not found. */
static long ptx_param_count(const char *ptx, const char *entry) {
  size_t len = strlen(entry);
  for (const char *at = strstr(ptx, ".entry"); at; at = strstr(at + 6, ".entry")) {
    const char *name = at + 6;
    while (*name == ' ' || *name == '\t') name++;
    if (strncmp(name, entry, len) != 0) continue;
    const char *q = name + len;
    while (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n') q++;
    if (*q != '(') continue;
    long n = 0;
    for (q++; *q && *q != ')'; q++)
      if (strncmp(q, ".param", 6) == 0) n++;
    return *q == ')' ? n : -1;
  }
  return -1;
}

/* Checks every launch of the program against its kernel's compiled signature
 * (cuFuncGetParamInfo, CUDA 12.4+; skipped on older drivers). No call may fail
 * on a correct program (compute-sanitizer reports every failed call), so the
 * parameter count comes from the PTX; for cubin and fatbin images only the
 * parameters the launch passes are asked for, and a kernel that takes more goes
 * unnoticed. */
static crec_status check_signatures(const crec_program *p, const crec__cu *cu,
                                    const crec__ctx_state *st, const char *fn) {
  if (!cu->cuFuncGetParamInfo) return CREC_OK;
  for (size_t ci = 0; ci < p->num_commands; ci++) {
    const crec__command *c = &p->commands[ci];
    if (c->kind != CREC_COMMAND_LAUNCH) continue;
    CUfunction f = st->functions[c->kernel];
    const crec__kernel *k = &p->kernels[c->kernel];
    const crec__module *m = &p->modules[k->module];
    const char *entry = k->entry;
    char label[160];
    long declared = m->format == CREC_IMAGE_PTX ? ptx_param_count(m->image, entry) : -1;
    size_t n = 0, off, size;
    size_t ask = declared >= 0 && (size_t)declared < c->num_args ? (size_t)declared : c->num_args;
    while (n < ask && cu->cuFuncGetParamInfo(f, n, &off, &size) == CUDA_SUCCESS) {
      uint32_t given = crec__arg_size(p, &c->args[n].arg);
      if (given != size)
        return crec__error(CREC_ERR_INVALID_PROGRAM, fn,
                           "%s: argument %zu is %u bytes, but kernel '%s' takes %zu bytes there",
                           crec__command_label(p, ci, label, sizeof label), n, given, entry, size);
      n++;
    }
    size_t takes = declared >= 0 ? (size_t)declared : n; /* n: the first parameter the driver did not know */
    if (takes != c->num_args)
      return crec__error(CREC_ERR_INVALID_PROGRAM, fn, "%s: passes %zu arguments, but kernel '%s' takes %zu",
                         crec__command_label(p, ci, label, sizeof label), c->num_args, entry, takes);
  }
  return CREC_OK;
}

bool crec__ctx_state_ready(crec__runtime *rt, CUcontext ctx) {
  pthread_mutex_lock(&rt->lock);
  const crec__ctx_state *st = rt->states;
  while (st && st->ctx != ctx) st = st->next;
  pthread_mutex_unlock(&rt->lock);
  return st != NULL;
}

crec_status crec__ctx_state_get(const crec_program *p, const crec__cu *cu, crec__runtime *rt,
                                CUcontext ctx, const char *fn, crec__loads *loads, crec__ctx_state **out) {
  pthread_mutex_lock(&rt->lock);
  for (crec__ctx_state *st = rt->states; st; st = st->next)
    if (st->ctx == ctx) {
      pthread_mutex_unlock(&rt->lock);
      *out = st;
      return CREC_OK;
    }
  crec_status s = CREC_OK;
  crec__ctx_state *st = crec__calloc(1, sizeof *st);
  if (st) {
    st->ctx = ctx;
    st->modules = crec__calloc(p->num_modules ? p->num_modules : 1, sizeof *st->modules);
    st->functions = crec__calloc(p->num_kernels ? p->num_kernels : 1, sizeof *st->functions);
    st->constants = crec__calloc(p->num_buffers ? p->num_buffers : 1, sizeof *st->constants);
  }
  if (!st || !st->modules || !st->functions || !st->constants) {
    s = crec__oom(fn);
    goto fail;
  }
  CUdevice dev;
  CREC__CU_STEP(s, fn, "the current context's device", cu, cuCtxGetDevice, &dev);
  CREC__CU_STEP(s, fn, "the device's compute capability", cu, cuDeviceGetAttribute, &st->major,
                CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  CREC__CU_STEP(s, fn, "the device's compute capability", cu, cuDeviceGetAttribute, &st->minor,
                CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  if (s) goto fail;
  char what[300];
  for (size_t i = 0; i < p->num_modules; i++) {
    const crec__module *m = &p->modules[i];
    snprintf(what, sizeof what, "module '%s' (%s)", m->name, crec_image_format_name(m->format));
    if ((s = load_module(cu, st, m->format, m->image, m->size, what, fn, loads, &st->modules[i]))) goto fail;
  }
  for (size_t i = 0; i < p->num_kernels; i++) {
    const crec__kernel *k = &p->kernels[i];
    const crec__module *m = &p->modules[k->module];
    CUresult r = CREC__CU(cu, cuModuleGetFunction, &st->functions[i], st->modules[k->module], k->entry);
    if (r == CUDA_ERROR_NOT_FOUND) {
      s = crec__error(CREC_ERR_NOT_FOUND, fn, "kernel '%s' is not in module '%s'", k->entry, m->name);
      goto fail;
    }
    snprintf(what, sizeof what, "kernel '%s' of module '%s'", k->entry, m->name);
    if (r != CUDA_SUCCESS) {
      s = crec__cu_fail(fn, r, "cuModuleGetFunction", what);
      goto fail;
    }
    if ((s = load_function(cu, st->functions[i], what, fn))) goto fail;
    if (k->shared_bytes > 48u * 1024u) {
      snprintf(what, sizeof what, "kernel '%s': %u bytes of dynamic shared memory (MAX_DYNAMIC_SHARED_SIZE_BYTES)",
               k->entry, k->shared_bytes);
      CREC__CU_STEP(s, fn, what, cu, cuFuncSetAttribute, st->functions[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    (int)k->shared_bytes);
      if (s) goto fail;
    }
    /* clusters of more than 8 blocks are "non-portable": a kernel launches so only when it allows them */
    if ((uint64_t)k->cluster[0] * (k->cluster[1] ? k->cluster[1] : 1) * (k->cluster[2] ? k->cluster[2] : 1) > 8) {
      snprintf(what, sizeof what, "kernel '%s': clusters of %ux%ux%u blocks (NON_PORTABLE_CLUSTER_SIZE_ALLOWED)",
               k->entry, k->cluster[0], k->cluster[1], k->cluster[2]);
      CREC__CU_STEP(s, fn, what, cu, cuFuncSetAttribute, st->functions[i],
                    CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
      if (s) goto fail;
    }
  }
  if ((s = check_signatures(p, cu, st, fn))) goto fail;
  for (size_t i = 0; i < p->num_buffers; i++) {
    const crec__buffer *b = &p->buffers[i];
    if (b->kind != CREC_BUFFER_CONSTANT) continue;
    snprintf(what, sizeof what, "constant '%s' (%llu bytes)", b->name, (unsigned long long)b->size);
    CREC__CU_STEP(s, fn, what, cu, cuMemAlloc, &st->constants[i], b->size);
    if (s) {
      st->constants[i] = 0;
      goto fail;
    }
    CREC__CUDA_LIVE(1);
    CREC__CU_STEP(s, fn, what, cu, cuMemcpyHtoD, st->constants[i], b->data, b->size);
    if (s) goto fail;
  }
  /* a copy from pageable memory returns once staged: finish it before work on
   * a non-blocking stream (which does not wait for the legacy one) reads it */
  bool any_constant = false;
  for (size_t i = 0; i < p->num_buffers; i++) any_constant |= p->buffers[i].kind == CREC_BUFFER_CONSTANT;
  if (any_constant) {
    CREC__CU_STEP(s, fn, "uploading constants", cu, cuStreamSynchronize, NULL);
    if (s) goto fail;
  }
  st->next = rt->states;
  rt->states = st;
  pthread_mutex_unlock(&rt->lock);
  *out = st;
  return CREC_OK;
fail:
  if (st) ctx_state_free(cu, p, st);
  pthread_mutex_unlock(&rt->lock);
  *out = NULL;
  return s;
}

crec_status crec__load_conditions(const crec__cu *cu, crec__runtime *rt, crec__ctx_state *st,
                                  const char *fn, crec__loads *loads) {
  pthread_mutex_lock(&rt->lock);
  crec_status s = CREC_OK;
  if (!st->cond_module) {
    CUmodule m;
    s = load_module(cu, st, CREC_IMAGE_FATBIN, crec__conditions_fatbin, crec__conditions_fatbin_size,
                    "crec's set-condition kernels (kernels/conditions.cu)", fn, loads, &m);
    if (!s) {
      struct {
        CUfunction *f;
        const char *name;
      } k[] = {{&st->set_while, "crec_set_while"}, {&st->set_while_limited, "crec_set_while_limited"},
               {&st->set_if, "crec_set_if"},
               {&st->set_switch, "crec_set_switch"}, {&st->set_switch_ifs, "crec_set_switch_ifs"},
               {&st->noop, "crec_noop"}, {&st->scale_f32, "crec_scale_f32"}, {&st->scale_f64, "crec_scale_f64"},
               {&st->filter_layout, "crec_filter_layout"}, {&st->copy_bytes, "crec_copy_bytes"},
               {&st->fill_elements, "crec_fill_elements"}};
      for (size_t i = 0; i < sizeof k / sizeof *k && !s; i++) {
        CREC__CU_STEP(s, fn, k[i].name, cu, cuModuleGetFunction, k[i].f, m, k[i].name);
        if (!s) s = load_function(cu, *k[i].f, k[i].name, fn);
      }
      /* the legacy switch's set kernel takes its handles by value: sizes must agree */
      size_t off = 0, size = 8 * CREC__SET_IFS_MAX;
      if (!s && cu->cuFuncGetParamInfo && cu->cuFuncGetParamInfo(st->set_switch_ifs, 0, &off, &size) == CUDA_SUCCESS &&
          size != 8 * CREC__SET_IFS_MAX)
        s = crec__error(CREC_ERR_INTERNAL, fn, "crec_set_switch_ifs takes %zu bytes of handles, crec passes %d", size,
                        8 * CREC__SET_IFS_MAX);
      if (s) {
        cu->cuModuleUnload(m);
        CREC__CUDA_LIVE(-1);
      } else {
        st->cond_module = m;
      }
    }
  }
  pthread_mutex_unlock(&rt->lock);
  return s;
}

crec_status crec__load_updater(const crec__cu *cu, crec__runtime *rt, crec__ctx_state *st, const char *fn,
                               crec__loads *loads) {
  pthread_mutex_lock(&rt->lock);
  crec_status s = CREC_OK;
  if (!st->upd_tried) {
    CUmodule m;
    /* the one load whose failure is not an error: no cubin for this chip */
    uint64_t t0 = crec__now_ns();
    CUresult r = CREC__CU(cu, cuModuleLoadData, &m, crec__updater_fatbin);
    if (r == CUDA_SUCCESS)
      count_load(st, CREC_IMAGE_FATBIN, crec__updater_fatbin, crec__updater_fatbin_size, crec__now_ns() - t0, loads);
    if (r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_NOT_SUPPORTED) {
      st->upd_tried = true;
    } else if (r != CUDA_SUCCESS) {
      s = crec__cu_fail(fn, r, "cuModuleLoadData", "crec's device-side updater (kernels/updater.cu)");
    } else {
      CREC__CUDA_LIVE(1);
      CUfunction f = NULL;
      CREC__CU_STEP(s, fn, "crec_apply_updates", cu, cuModuleGetFunction, &f, m, "crec_apply_updates");
      if (!s) s = load_function(cu, f, "crec_apply_updates", fn);
      if (s) {
        cu->cuModuleUnload(m);
        CREC__CUDA_LIVE(-1);
      } else {
        st->upd_module = m;
        st->apply_updates = f;
        st->upd_tried = true;
      }
    }
  }
  pthread_mutex_unlock(&rt->lock);
  return s;
}

/* ---- the runtime ---- */

static void runtime_free(crec__runtime *rt) {
  const crec__cu *cu = crec__driver("crec_program_destroy");
  const crec_program *p = rt->program;
  while (rt->states) {
    crec__ctx_state *next = rt->states->next;
    ctx_state_free(cu, p, rt->states);
    rt->states = next;
  }
  crec_plan_destroy(rt->plan);
  crec_plan_destroy(rt->sequential);
  crec__free(rt->required);
  crec__free(rt->launches);
  crec__free(rt->marshal);
  crec__free(rt->built[0]);
  crec__free(rt->built[1]);
  pthread_mutex_destroy(&rt->lock);
  crec__free(rt);
}

/* Whether every command adds one node of its own or none, whatever the options:
 * launches, copies, sets, and barriers that are not collectives. */
static bool is_plain(const crec_program *p) {
  for (size_t i = 0; i < p->num_commands; i++) {
    const crec__command *c = &p->commands[i];
    bool plain = c->kind == CREC_COMMAND_LAUNCH || c->kind == CREC_COMMAND_MEMCPY || c->kind == CREC_COMMAND_MEMSET ||
                 (c->kind == CREC_COMMAND_BARRIER && !c->coll);
    if (!plain) return false;
  }
  return true;
}

/* Whether some command may be captured at record: GEMMs, FFTs, Cholesky
 * factorizations, convolutions, collective starts, custom commands, barriers
 * across ranks. */
static bool may_trace(const crec_program *p) {
  for (size_t i = 0; i < p->num_commands; i++) {
    const crec__command *c = &p->commands[i];
    if (c->kind == CREC_COMMAND_GEMM || c->kind == CREC_COMMAND_FFT || c->kind == CREC_COMMAND_CHOLESKY ||
        c->kind == CREC_COMMAND_CONV || c->kind == CREC_COMMAND_CUSTOM ||
        (c->coll && c->coll->start == CREC__NONE && !c->coll->degenerate))
      return true;
  }
  return false;
}

/* Packs every launch command of `p` into rt->launches and rt->marshal. */
static crec_status pack_launches(const crec_program *p, crec__runtime *rt) {
  size_t num_args = 0;
  for (size_t ci = 0; ci < p->num_commands; ci++)
    if (p->commands[ci].kind == CREC_COMMAND_LAUNCH) num_args += p->commands[ci].num_args;
  rt->launches = crec__calloc(p->num_commands ? p->num_commands : 1, sizeof *rt->launches);
  rt->marshal = crec__malloc((num_args ? num_args : 1) * sizeof *rt->marshal);
  if (!rt->launches || !rt->marshal) return CREC_ERR_OUT_OF_MEMORY;
  uint32_t at = 0;
  for (size_t ci = 0; ci < p->num_commands; ci++) {
    const crec__command *c = &p->commands[ci];
    if (c->kind != CREC_COMMAND_LAUNCH) continue;
    crec__launch_info *li = &rt->launches[ci];
    for (int i = 0; i < 3; i++) {
      li->grid[i] = c->grid[i].value;
      li->block[i] = c->block[i].value;
      li->dims_from_scalars |= c->grid[i].scalar.id || c->block[i].scalar.id;
    }
    li->shared = c->shared_bytes.value;
    li->dims_from_scalars |= c->shared_bytes.scalar.id != 0;
    li->kernel = c->kernel;
    li->region = c->region;
    li->param_bytes = c->param_bytes;
    li->first_arg = at;
    li->num_args = (uint32_t)c->num_args;
    for (size_t a = 0; a < c->num_args; a++) {
      const crec_arg *arg = &c->args[a].arg;
      crec__marshal_arg *m = &rt->marshal[at++];
      m->offset = c->args[a].param_offset;
      m->value = 0;
      if (arg->kind == CREC_ARG_BUFFER) {
        m->what = CREC__MARSHAL_BUFFER | (uint32_t)crec__index(arg->range.buffer.id);
        m->value = arg->range.offset;
      } else if (arg->kind == CREC_ARG_SCALAR) {
        size_t i = crec__index(arg->scalar.id);
        m->what = CREC__MARSHAL_SCALAR | (uint32_t)i;
        m->value = crec_type_size(p->scalars[i].type);
      } else if (arg->size <= sizeof m->value) {
        m->what = CREC__MARSHAL_IMMEDIATE | arg->size;
        memcpy(&m->value, arg->data ? arg->data : (const void *)arg->value.bytes, arg->size);
      } else {
        m->what = CREC__MARSHAL_LONG | (uint32_t)a;
      }
    }
  }
  return CREC_OK;
}

crec_status crec__runtime_get(const crec_program *cp, const char *fn, crec__runtime **out) {
  static pthread_mutex_t create_lock = PTHREAD_MUTEX_INITIALIZER;
  crec_program *p = (crec_program *)cp; /* the cache is not part of the program's value */
  pthread_mutex_lock(&create_lock);
  if (p->runtime) {
    *out = p->runtime;
    pthread_mutex_unlock(&create_lock);
    return CREC_OK;
  }
  crec_status s = CREC_OK;
  crec__runtime *rt = crec__calloc(1, sizeof *rt);
  if (!rt) {
    pthread_mutex_unlock(&create_lock);
    return crec__oom(fn);
  }
  pthread_mutex_init(&rt->lock, NULL);
  rt->program = p;
  if ((s = crec_plan_create(p, NULL, &rt->plan)) || (s = crec__required_bytes(p, &rt->required)) ||
      (s = pack_launches(p, rt))) {
    crec_plan_destroy(rt->plan);
    crec__free(rt->required);
    crec__free(rt->launches);
    crec__free(rt->marshal);
    pthread_mutex_destroy(&rt->lock);
    crec__free(rt);
    pthread_mutex_unlock(&create_lock);
    return s == CREC_ERR_OUT_OF_MEMORY ? crec__oom(fn) : crec__rethrow(s, fn);
  }
  /* what every record asks of the program, found once (it is frozen from here on) */
  for (size_t i = 0; i < p->num_commands && !rt->control; i++) rt->control = p->commands[i].num_regions != 0;
  rt->traced = may_trace(p);
  rt->plain = !rt->control && is_plain(p);
  p->runtime = rt;
  p->runtime_free = runtime_free;
  p->frozen = true;
  pthread_mutex_unlock(&create_lock);
  *out = rt;
  return CREC_OK;
}

crec_status crec__runtime_plan(crec__runtime *rt, crec_schedule schedule, const char *fn, const crec_plan **out) {
  if (schedule == CREC_SCHEDULE_CONCURRENT) {
    *out = rt->plan;
    return CREC_OK;
  }
  crec_status s = CREC_OK;
  pthread_mutex_lock(&rt->lock);
  if (!rt->sequential) {
    crec_plan_options po = CREC_PLAN_OPTIONS_INIT;
    po.schedule = schedule;
    if ((s = crec_plan_create(rt->program, &po, &rt->sequential))) {
      rt->sequential = NULL;
      s = s == CREC_ERR_OUT_OF_MEMORY ? crec__oom(fn) : crec__rethrow(s, fn);
    }
  }
  *out = rt->sequential;
  pthread_mutex_unlock(&rt->lock);
  return s;
}
