/* The public entry points of the MLIR front end: options, reading the file,
 * the MLIR context, parsing and verifying, then the entry function's lowering
 * (entry.c) and the host function (host.c). Also small shared helpers. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/Pass.h>
#include <mlir-c/RegisterEverything.h>

#include "lower_internal.h"

/* ---- maps ---- */

static uint64_t key_hash(const void *key, size_t len) { return crec__hash(key, len, 0) | 1u; }

uint32_t crec__lw_map_get(const lw_map *m, const void *key, size_t len) {
  if (!m->cap) return LW_NONE;
  uint64_t h = key_hash(key, len);
  for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    const lw_map_slot *s = &m->slots[i];
    if (!s->key) return LW_NONE;
    if (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0) return s->value;
  }
}

static void map_insert(lw_map_slot *slots, size_t cap, lw_map_slot e) {
  size_t i = e.hash & (cap - 1);
  while (slots[i].key) i = (i + 1) & (cap - 1);
  slots[i] = e;
}

crec_status crec__lw_map_put(lw_map *m, const void *key, size_t len, uint32_t value) {
  uint64_t h = key_hash(key, len);
  if (m->cap) {
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
      lw_map_slot *s = &m->slots[i];
      if (!s->key) break;
      if (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0) {
        s->value = value;
        return CREC_OK;
      }
    }
  }
  if ((m->count + 1) * 2 > m->cap) {
    size_t ncap = m->cap ? m->cap * 2 : 64;
    lw_map_slot *ns = crec__calloc(ncap, sizeof *ns);
    if (!ns) return CREC_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < m->cap; i++)
      if (m->slots[i].key) map_insert(ns, ncap, m->slots[i]);
    crec__free(m->slots);
    m->slots = ns;
    m->cap = ncap;
  }
  char *copy = crec__malloc(len + 1);
  if (!copy) return CREC_ERR_OUT_OF_MEMORY;
  memcpy(copy, key, len);
  copy[len] = '\0';
  lw_map_slot e = {copy, len, h, value};
  map_insert(m->slots, m->cap, e);
  m->count++;
  return CREC_OK;
}

void crec__lw_map_free(lw_map *m) {
  for (size_t i = 0; i < m->cap; i++) crec__free(m->slots[i].key);
  crec__free(m->slots);
  memset(m, 0, sizeof *m);
}

/* ---- values ---- */

uint32_t crec__lw_value_get(const lw *L, MlirValue v) { return crec__lw_map_get(&L->values, &v.ptr, sizeof v.ptr); }

crec_status crec__lw_value_set(lw *L, MlirValue v, uint32_t packed) {
  if (crec__lw_map_put(&L->values, &v.ptr, sizeof v.ptr, packed) != CREC_OK) return crec__oom(L->fn);
  return CREC_OK;
}

/* ---- MLIR helpers ---- */

bool crec__lw_is(MlirOperation op, const char *name) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  return s.length == strlen(name) && memcmp(s.data, name, s.length) == 0;
}

bool crec__lw_op_in(MlirOperation op, const char *prefix) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  size_t n = strlen(prefix);
  return s.length > n && memcmp(s.data, prefix, n) == 0;
}

const char *crec__lw_op_name(MlirOperation op, char *buf, size_t size) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  snprintf(buf, size, "%.*s", (int)s.length, s.data);
  return buf;
}

MlirAttribute crec__lw_attr(MlirOperation op, const char *name) {
  MlirStringRef n = mlirStringRefCreateFromCString(name);
  MlirAttribute a = mlirAttributeGetNull();
  if (mlirOperationHasInherentAttributeByName(op, n)) a = mlirOperationGetInherentAttributeByName(op, n);
  if (mlirAttributeIsNull(a)) a = mlirOperationGetDiscardableAttributeByName(op, n);
  return a;
}

bool crec__lw_prepend_asm(MlirContext ctx, MlirBlock block, MlirLocation loc, const char *text,
                          const char *constraints, intptr_t num_operands, const MlirValue *operands) {
  MlirOperationState st = mlirOperationStateGet(mlirStringRefCreateFromCString("llvm.inline_asm"), loc);
  MlirNamedAttribute attrs[3] = {
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, mlirStringRefCreateFromCString("asm_string")),
                            mlirStringAttrGet(ctx, mlirStringRefCreateFromCString(text))),
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, mlirStringRefCreateFromCString("constraints")),
                            mlirStringAttrGet(ctx, mlirStringRefCreateFromCString(constraints))),
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, mlirStringRefCreateFromCString("has_side_effects")),
                            mlirUnitAttrGet(ctx))};
  mlirOperationStateAddAttributes(&st, 3, attrs);
  if (num_operands) mlirOperationStateAddOperands(&st, num_operands, operands);
  MlirOperation op = mlirOperationCreate(&st);
  if (mlirOperationIsNull(op)) return false;
  MlirOperation first = mlirBlockGetFirstOperation(block);
  if (mlirOperationIsNull(first)) mlirBlockAppendOwnedOperation(block, op);
  else mlirBlockInsertOwnedOperationBefore(block, first, op);
  return true;
}

typedef struct collect_walk {
  const char *name;
  MlirOperation *ops;
  size_t n, cap;
  bool failed;
} collect_walk;

static MlirWalkResult collect_named(MlirOperation op, void *user) {
  collect_walk *w = user;
  if (!crec__lw_is(op, w->name)) return MlirWalkResultAdvance;
  if (CREC__RESERVE(w->ops, w->cap, w->n + 1) != CREC_OK) {
    w->failed = true;
    return MlirWalkResultInterrupt;
  }
  w->ops[w->n++] = op;
  return MlirWalkResultAdvance;
}

crec_status crec__lw_collect(lw *L, MlirOperation root, const char *name, MlirOperation **ops, size_t *n) {
  collect_walk w = {name, NULL, 0, 0, false};
  mlirOperationWalk(root, collect_named, &w, MlirWalkPreOrder);
  if (w.failed) {
    crec__free(w.ops);
    *ops = NULL, *n = 0;
    return crec__oom(L->fn);
  }
  *ops = w.ops, *n = w.n;
  return CREC_OK;
}

bool crec__lw_string_attr(MlirOperation op, const char *name, char *buf, size_t size, bool *present) {
  MlirAttribute a = crec__lw_attr(op, name);
  buf[0] = '\0';
  if (present) *present = !mlirAttributeIsNull(a);
  if (mlirAttributeIsNull(a)) return true;
  if (!mlirAttributeIsAString(a)) return false;
  MlirStringRef s = mlirStringAttrGetValue(a);
  snprintf(buf, size, "%.*s", (int)s.length, s.data);
  return true;
}

void crec__lw_print_text(MlirStringRef s, void *user) { crec__text_putn(user, s.data, s.length); }

/* The text an MLIR printer callback collected, or NULL when it ran out of memory. */
static char *printed(crec__text *text) {
  crec__text_puts(text, "");
  if (text->failed) {
    crec__free(text->data);
    return NULL;
  }
  return text->data;
}

char *crec__lw_type_string(MlirType t) {
  crec__text text = {0};
  mlirTypePrint(t, crec__lw_print_text, &text);
  return printed(&text);
}

char *crec__lw_attr_string(MlirAttribute a) {
  crec__text text = {0};
  mlirAttributePrint(a, crec__lw_print_text, &text);
  return printed(&text);
}

MlirOperation crec__lw_lookup_symbol(MlirBlock block, const char *name, size_t len) {
  for (MlirOperation op = mlirBlockGetFirstOperation(block); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    MlirAttribute a = crec__lw_attr(op, "sym_name");
    if (mlirAttributeIsNull(a) || !mlirAttributeIsAString(a)) continue;
    MlirStringRef s = mlirStringAttrGetValue(a);
    if (s.length == len && memcmp(s.data, name, len) == 0) return op;
  }
  MlirOperation none = {NULL};
  return none;
}

uint32_t crec__lw_element_bytes(MlirType t, uint32_t *bits, bool *is_float, bool *is_index) {
  uint32_t b = 0;
  bool f = false, idx = false;
  uint32_t lanes = 1;
  if (mlirTypeIsAVector(t)) {
    if (!mlirShapedTypeHasStaticShape(t)) return 0;
    /* more than 2^20 lanes is no element crec sizes (the product of the dims could wrap) */
    for (intptr_t i = 0; i < mlirShapedTypeGetRank(t); i++) {
      int64_t d = mlirShapedTypeGetDimSize(t, i);
      if (d < 0 || d > (1 << 20) || (uint64_t)lanes * (uint64_t)d > (1u << 20)) return 0;
      lanes *= (uint32_t)d;
    }
    t = mlirShapedTypeGetElementType(t);
  }
  if (mlirTypeIsAIndex(t)) {
    b = 64;
    idx = true;
  } else if (mlirTypeIsAInteger(t)) {
    b = mlirIntegerTypeGetWidth(t);
  } else if (mlirTypeIsAF16(t) || mlirTypeIsABF16(t) || mlirTypeIsAF32(t) || mlirTypeIsAF64(t)) {
    b = mlirFloatTypeGetWidth(t);
    f = true;
  } else {
    return 0;
  }
  if (bits) *bits = b;
  if (is_float) *is_float = f;
  if (is_index) *is_index = idx;
  uint32_t bytes = b <= 8 ? 1 : b <= 16 ? 2 : b <= 32 ? 4 : b <= 64 ? 8 : 0;
  return bytes * lanes;
}

uint32_t crec__lw_memref_element_bytes(MlirType t) {
  if (!mlirTypeIsAComplex(t)) return crec__lw_element_bytes(t, NULL, NULL, NULL);
  /* complex<f16|bf16|f32|f64>: the real part, then the imaginary part (C's and cuFFT's layout) */
  MlirType e = mlirComplexTypeGetElementType(t);
  if (!mlirTypeIsAF16(e) && !mlirTypeIsABF16(e) && !mlirTypeIsAF32(e) && !mlirTypeIsAF64(e)) return 0;
  return 2 * crec__lw_element_bytes(e, NULL, NULL, NULL);
}

const char *crec__lw_command_name(MlirOperation op, char *buf, size_t size) {
  bool present = false;
  if (!crec__lw_string_attr(op, "crec.name", buf, size, &present) || !present || !buf[0]) return NULL;
  return buf;
}

/* ---- setup ---- */

static pthread_once_t passes_once = PTHREAD_ONCE_INIT;
static void register_passes(void) { mlirRegisterAllPasses(); }

static pthread_once_t chip_once = PTHREAD_ONCE_INIT;
static char device_chip[32] = "sm_90";
/* The first device's chip, capped at sm_90: LLVM 19's NVPTX backend knows no
 * newer one, and sm_90 PTX runs on newer GPUs through the driver's JIT. */
static void probe_chip(void) {
  char name[256];
  int major = 0, minor = 0;
  if (!crec_device_available()) return;
  if (crec_device_describe(0, name, sizeof name, &major, &minor) != CREC_OK) return;
  if (major * 10 + minor >= 90 || major <= 0) return;
  snprintf(device_chip, sizeof device_chip, "sm_%d%d", major, minor);
}

static bool valid_chip(const char *c) {
  if (strncmp(c, "sm_", 3) != 0) return false;
  const char *d = c + 3;
  size_t n = 0;
  while (d[n] >= '0' && d[n] <= '9') n++;
  if (n < 2 || n > 3) return false;
  return d[n] == '\0' || (d[n] == 'a' && d[n + 1] == '\0');
}

static crec_status setup(lw *L, const crec_lower_options *o, const char *fn, const char *path) {
  crec_lower_options opts = CREC_LOWER_OPTIONS_INIT;
  crec_status st = crec__take_struct(&opts, sizeof opts, o, offsetof(crec_lower_options, cubin), fn,
                                     "argument 'options'", "CREC_LOWER_OPTIONS_INIT");
  if (st) return st;
  o = &opts;
  if (o->entry && !o->entry[0])
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'options': entry is empty");
  if (o->chip && !valid_chip(o->chip))
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'options': chip '%s' is not of the form sm_NN or sm_NNa", o->chip);
  L->fn = fn;
  L->entry_name = o->entry ? o->entry : "main";
  L->diagnostic = o->diagnostic;
  L->diagnostic_user = o->diagnostic_user;
  L->cubin = o->cubin != 0;
  L->early_start = o->early_start != 0;
  if (o->chip) {
    snprintf(L->chip, sizeof L->chip, "%s", o->chip);
  } else {
    pthread_once(&chip_once, probe_chip);
    snprintf(L->chip, sizeof L->chip, "%s", device_chip);
  }
  if (path) {
    L->filename = crec__strdup(path);
    const char *slash = strrchr(path, '/');
    L->base_dir = slash ? crec__memdup(path, (size_t)(slash - path) + 1) : crec__strdup(".");
    if (L->base_dir && slash) L->base_dir[slash - path] = '\0';
    if (L->base_dir && !L->base_dir[0]) {
      crec__free(L->base_dir);
      L->base_dir = crec__strdup("/");
    }
  } else {
    L->filename = crec__strdup(o->filename ? o->filename : "<string>");
    L->base_dir = crec__strdup(o->base_dir ? o->base_dir : ".");
  }
  if (!L->filename || !L->base_dir) return crec__oom(fn);
  return CREC_OK;
}

static void teardown(lw *L) {
  crec__free(L->diag_log.data);
  crec__lw_map_free(&L->values);
  for (size_t i = 0; i < L->num_nodes; i++) {
    lw_node *n = &L->nodes[i];
    crec__free(n->type);
    crec__free(n->fbits);
    crec__free(n->opname);
    crec__free(n->attrs);
    crec__free(n->label);
  }
  crec__free(L->nodes);
  crec__lw_map_free(&L->node_keys);
  crec__lw_map_free(&L->scalar_names);
  crec__free(L->memrefs);
  crec__free(L->tmaps);
  for (size_t i = 0; i < L->num_bufs; i++) crec__free(L->bufs[i].name);
  crec__free(L->bufs);
  crec__lw_map_free(&L->globals);
  crec__lw_map_free(&L->host_allocs);
  crec__lw_map_free(&L->arg_staging);
  crec__free(L->loads);
  crec__free(L->writes);
  crec__free(L->cmd_ops);
  crec__free(L->unsure);
  for (size_t i = 0; i < L->num_modules; i++) {
    crec__free(L->modules[i].sym);
    crec__free(L->modules[i].image);
  }
  crec__free(L->modules);
  crec__lw_map_free(&L->module_keys);
  for (size_t i = 0; i < L->num_kernels; i++) {
    crec__free(L->kernels[i].key);
    crec__free(L->kernels[i].entry);
    crec__free(L->kernels[i].access);
    crec__free(L->kernels[i].read_known);
    crec__free(L->kernels[i].param_sizes);
  }
  crec__free(L->kernels);
  crec__lw_map_free(&L->kernel_keys);
  crec__lw_library_free(L);
  if (!mlirModuleIsNull(L->module)) mlirModuleDestroy(L->module);
  if (!mlirContextIsNull(L->ctx)) mlirContextDestroy(L->ctx);
  crec__free(L->first_error);
  crec__free(L->filename);
  crec__free(L->base_dir);
}

static crec_status make_context(lw *L) {
  pthread_once(&passes_once, register_passes);
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  L->ctx = mlirContextCreateWithRegistry(registry, false);
  mlirDialectRegistryDestroy(registry);
  /* crec.* ops are written in generic form without a registered dialect; the
   * parser cannot allow one dialect only, so unregistered ops of any other
   * dialect are refused after parsing (only_crec_unregistered) */
  mlirContextSetAllowUnregisteredDialects(L->ctx, true);
  mlirRegisterAllLLVMTranslations(L->ctx);
  /* gpu.global_id lowers through the index dialect, which must be loaded up front */
  mlirContextGetOrLoadDialect(L->ctx, mlirStringRefCreateFromCString("index"));
  mlirContextAttachDiagnosticHandler(L->ctx, crec__lw_diagnostic, L, NULL);
  return CREC_OK;
}

typedef struct unregistered_walk {
  MlirContext ctx;
  MlirOperation found;
} unregistered_walk;

static MlirWalkResult find_unregistered(MlirOperation op, void *user) {
  unregistered_walk *w = user;
  if (crec__lw_op_in(op, "crec.") || mlirContextIsRegisteredOperation(w->ctx, mlirIdentifierStr(mlirOperationGetName(op))))
    return MlirWalkResultAdvance;
  w->found = op;
  return MlirWalkResultInterrupt;
}

/* Refuses an op of an unregistered dialect other than crec (what MLIR itself
 * would refuse without --allow-unregistered-dialect). */
static crec_status only_crec_unregistered(lw *L) {
  unregistered_walk w = {L->ctx, {NULL}};
  mlirOperationWalk(mlirModuleGetOperation(L->module), find_unregistered, &w, MlirWalkPreOrder);
  if (mlirOperationIsNull(w.found)) return CREC_OK;
  char name[160];
  crec__lw_op_name(w.found, name, sizeof name);
  const char *dot = strchr(name, '.');
  return crec__lw_fail(L, w.found, CREC_ERR_MLIR,
                 "unregistered operation: the dialect '%.*s' is not known to MLIR (only crec.* ops may be written "
                 "without a registered dialect)",
                 dot ? (int)(dot - name) : (int)strlen(name), name);
}

/* ---- crec.* attributes on MLIR's own ops ---- */

/* The crec.* attributes the front end reads on ops of MLIR's dialects
 * (docs/mlir.md), each on the ops it applies to. Any other crec.* attribute
 * there would be ignored, and one misspelt (crec.max_iteration) would leave a
 * loop without its limit: check_attributes() refuses both. crec.* ops check
 * their own attributes where they are lowered. */
static const struct known_attribute {
  const char *name;
  const char *ops[3]; /* none: any op */
  bool kernel;        /* only on a function of a gpu.module (a kernel declared for crec.image) */
} known_attributes[] = {
    {"crec.name", {NULL}, false}, /* names the command, temporary or loop an op makes */
    {"crec.max_iterations", {"scf.while"}, false},
    {"crec.shared_bytes", {"gpu.launch_func"}, false},
    {"crec.early_start", {"gpu.launch_func", "gpu.module"}, false}, /* CREC_LAUNCH_EARLY_START (gpu.c, kernels.c) */
    {"crec.image", {"gpu.module"}, false},
    {"crec.abi", {"gpu.binary"}, false},
    {"crec.access", {"gpu.binary", "gpu.func", "func.func"}, false},
    {"crec.entry", {"gpu.func", "func.func"}, true},
};
/* and on the entry function's arguments */
static const char *const argument_attributes[] = {"crec.name", "crec.memory", "crec.alignment"};

static bool named_ref(MlirStringRef s, const char *name) {
  return s.length == strlen(name) && memcmp(s.data, name, s.length) == 0;
}

/* Whether known attribute `a` applies to `op` (`in_module`: op's parent is a gpu.module). */
static bool applies(const struct known_attribute *a, MlirOperation op, bool in_module) {
  if (!a->ops[0]) return true;
  bool is_func = crec__lw_is(op, "gpu.func") || crec__lw_is(op, "func.func");
  if ((a->kernel || !strcmp(a->name, "crec.access")) && is_func && !in_module) return false;
  for (size_t i = 0; i < 3 && a->ops[i]; i++)
    if (crec__lw_is(op, a->ops[i])) return true;
  return false;
}

/* "crec.name and crec.max_iterations": the known attributes that apply to `op`. */
static void applicable(MlirOperation op, bool in_module, char *out, size_t size) {
  const char *names[sizeof known_attributes / sizeof *known_attributes];
  size_t n = 0, off = 0;
  for (size_t i = 0; i < sizeof known_attributes / sizeof *known_attributes; i++)
    if (applies(&known_attributes[i], op, in_module)) names[n++] = known_attributes[i].name;
  out[0] = '\0';
  for (size_t i = 0; i < n && off < size; i++)
    off += (size_t)snprintf(out + off, size - off, "%s%s", !i ? "" : i + 1 == n ? " and " : ", ", names[i]);
}

/* The edit distance of `a` (`na` bytes) and `b`, at most 63 bytes each (else a large number). */
static size_t distance(const char *a, size_t na, const char *b) {
  size_t nb = strlen(b), row[64];
  if (na > 63 || nb > 63) return 64;
  for (size_t j = 0; j <= nb; j++) row[j] = j;
  for (size_t i = 1; i <= na; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= nb; j++) {
      size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      diag = up;
      row[j] = best;
    }
  }
  return row[nb];
}

typedef struct attribute_walk {
  lw *L;
  crec_status status;
} attribute_walk;

static crec_status check_op_attributes(lw *L, MlirOperation op) {
  MlirOperation parent = mlirOperationGetParentOperation(op);
  bool in_module = !mlirOperationIsNull(parent) && crec__lw_is(parent, "gpu.module");
  char op_name[160], list[512];
  intptr_t n = mlirOperationGetNumDiscardableAttributes(op);
  for (intptr_t i = 0; i < n; i++) {
    MlirStringRef name = mlirIdentifierStr(mlirOperationGetDiscardableAttribute(op, i).name);
    if (name.length < 5 || memcmp(name.data, "crec.", 5) != 0) continue;
    const struct known_attribute *a = NULL;
    for (size_t k = 0; k < sizeof known_attributes / sizeof *known_attributes && !a; k++)
      if (named_ref(name, known_attributes[k].name)) a = &known_attributes[k];
    if (a && applies(a, op, in_module)) continue;
    crec__lw_op_name(op, op_name, sizeof op_name);
    applicable(op, in_module, list, sizeof list);
    if (!a) {
      /* a misspelling of a known one (two edits at most) is named */
      const char *near = NULL;
      size_t best = 3;
      for (size_t k = 0; k < sizeof known_attributes / sizeof *known_attributes; k++) {
        size_t dist = distance(name.data, name.length, known_attributes[k].name);
        if (dist < best) best = dist, near = known_attributes[k].name;
      }
      return crec__lw_fail(L, op, CREC_ERR_MLIR, "unknown attribute '%.*s'%s%s%s (on %s crec reads %s)",
                           (int)name.length, name.data, near ? ": did you mean '" : "", near ? near : "",
                           near ? "'?" : "", op_name, list);
    }
    char where[160];
    size_t off = 0, m = 0;
    while (m < 3 && a->ops[m]) m++;
    for (size_t k = 0; k < m && off < sizeof where; k++)
      off += (size_t)snprintf(where + off, sizeof where - off, "%s%s", !k ? "" : k + 1 == m ? " or " : ", ", a->ops[k]);
    return crec__lw_fail(L, op, CREC_ERR_MLIR,
                         "attribute '%s' has no effect here: crec reads it on %s%s (on %s%s crec reads %s)", a->name,
                         where, a->kernel ? " in a gpu.module" : "", op_name, in_module ? " in a gpu.module" : "", list);
  }
  /* a host function's arguments: the entry's become buffers and scalars */
  if (crec__lw_is(op, "func.func") && !in_module) {
    MlirAttribute all = crec__lw_attr(op, "arg_attrs");
    intptr_t na = !mlirAttributeIsNull(all) && mlirAttributeIsAArray(all) ? mlirArrayAttrGetNumElements(all) : 0;
    for (intptr_t i = 0; i < na; i++) {
      MlirAttribute dict = mlirArrayAttrGetElement(all, i);
      if (!mlirAttributeIsADictionary(dict)) continue;
      for (intptr_t k = 0; k < mlirDictionaryAttrGetNumElements(dict); k++) {
        MlirStringRef name = mlirIdentifierStr(mlirDictionaryAttrGetElement(dict, k).name);
        if (name.length < 5 || memcmp(name.data, "crec.", 5) != 0) continue;
        bool ok = false;
        for (size_t j = 0; j < sizeof argument_attributes / sizeof *argument_attributes; j++)
          ok = ok || named_ref(name, argument_attributes[j]);
        if (ok) continue;
        const char *near = NULL;
        size_t best = 3;
        for (size_t j = 0; j < sizeof argument_attributes / sizeof *argument_attributes; j++) {
          size_t dist = distance(name.data, name.length, argument_attributes[j]);
          if (dist < best) best = dist, near = argument_attributes[j];
        }
        return crec__lw_fail(L, op, CREC_ERR_MLIR,
                             "argument %d: unknown attribute '%.*s'%s%s%s (on a function's arguments crec reads "
                             "crec.name, crec.memory and crec.alignment)",
                             (int)i, (int)name.length, name.data, near ? ": did you mean '" : "", near ? near : "",
                             near ? "'?" : "");
      }
    }
  }
  return CREC_OK;
}

static MlirWalkResult walk_attributes(MlirOperation op, void *user) {
  attribute_walk *w = user;
  if (crec__lw_op_in(op, "crec.")) return MlirWalkResultAdvance; /* checked where they are lowered */
  w->status = check_op_attributes(w->L, op);
  return w->status ? MlirWalkResultInterrupt : MlirWalkResultAdvance;
}

/* Refuses a crec.* attribute that crec does not read where it is written. */
static crec_status check_attributes(lw *L) {
  attribute_walk w = {L, CREC_OK};
  mlirOperationWalk(mlirModuleGetOperation(L->module), walk_attributes, &w, MlirWalkPreOrder);
  return w.status;
}

/* The first named func.func from `op` on (op itself included), its name in
 * `*name`; a null operation past the last. */
static MlirOperation func_from(MlirOperation op, MlirStringRef *name) {
  for (; !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (!crec__lw_is(op, "func.func")) continue;
    MlirAttribute a = crec__lw_attr(op, "sym_name");
    if (mlirAttributeIsNull(a)) continue;
    *name = mlirStringAttrGetValue(a);
    return op;
  }
  return op;
}

static MlirWalkResult find_launch(MlirOperation op, void *user) {
  if (!crec__lw_is(op, "gpu.launch")) return MlirWalkResultAdvance;
  *(bool *)user = true;
  return MlirWalkResultInterrupt;
}

/* Outlines inline gpu.launch bodies (how MLIR's own GPU tests write kernels)
 * into gpu.module kernels with MLIR's gpu-kernel-outlining, as its
 * gpu-lower-to-nvvm-pipeline does: each launch becomes a gpu.launch_func of a
 * kernel named after its function ("main_kernel"), the values it uses from the
 * host function its arguments, and the module a gpu.container_module. */
static crec_status outline_launches(lw *L) {
  bool any = false;
  MlirOperation mop = mlirModuleGetOperation(L->module);
  mlirOperationWalk(mop, find_launch, &any, MlirWalkPreOrder);
  return any ? crec__lw_run_pipeline(L, mop, "builtin.module(gpu-kernel-outlining)", mop) : CREC_OK;
}

/* A transform schedule in the module: the entry point MLIR's transform
 * interpreter runs (transform.named_sequence @__transform_main, at the top or
 * in a nested module), or an old top-level transform.sequence that only MLIR's
 * test interpreter runs. */
typedef struct schedule_walk {
  MlirOperation main;     /* the named sequence @__transform_main */
  MlirOperation sequence; /* a top-level transform.sequence */
} schedule_walk;

static MlirWalkResult find_schedule(MlirOperation op, void *user) {
  schedule_walk *w = user;
  if (crec__lw_is(op, "transform.named_sequence")) {
    MlirAttribute name = crec__lw_attr(op, "sym_name");
    MlirStringRef n = mlirAttributeIsNull(name) ? mlirStringRefCreate(NULL, 0) : mlirStringAttrGetValue(name);
    if (n.length == strlen("__transform_main") && memcmp(n.data, "__transform_main", n.length) == 0) w->main = op;
    return MlirWalkResultSkip;
  }
  if (crec__lw_is(op, "transform.sequence")) {
    if (mlirOperationIsNull(w->sequence)) w->sequence = op;
    return MlirWalkResultSkip;
  }
  /* schedules sit in modules, not in functions */
  return crec__lw_is(op, "builtin.module") ? MlirWalkResultAdvance : MlirWalkResultSkip;
}

static bool is_transform_op(MlirOperation op) { return crec__lw_op_in(op, "transform."); }

/* A nested module that holds transform ops and nothing else (where upstream
 * tests keep their schedule, marked transform.with_named_sequence). */
static bool is_schedule_module(MlirOperation op) {
  if (!crec__lw_is(op, "builtin.module")) return false;
  MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
  for (MlirOperation o = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o))
    if (!is_transform_op(o)) return false;
  return true;
}

/* Applies the module's transform schedule as mlir-opt's
 * "-transform-interpreter -test-transform-dialect-erase-schedule" does
 * (upstream's transform-mma-sync tests rewrite a linalg.matmul in a kernel
 * into nvgpu.mma.sync that way): MLIR's interpreter runs @__transform_main on
 * the module, then the schedule is erased, so that what is lowered is the
 * payload alone. */
static crec_status apply_schedule(lw *L) {
  MlirOperation mop = mlirModuleGetOperation(L->module);
  schedule_walk w = {{NULL}, {NULL}};
  mlirOperationWalk(mop, find_schedule, &w, MlirWalkPreOrder);
  if (mlirOperationIsNull(w.main) && !mlirOperationIsNull(w.sequence))
    return crec__lw_fail(L, w.sequence, CREC_ERR_UNSUPPORTED,
                         "a top-level transform.sequence is a schedule only MLIR's test interpreter runs "
                         "(-test-transform-dialect-interpreter); crec runs MLIR's transform interpreter, whose entry "
                         "is 'transform.named_sequence @__transform_main' in a module marked "
                         "transform.with_named_sequence");
  if (mlirOperationIsNull(w.main)) return CREC_OK;
  crec_status s = crec__lw_run_pipeline(L, mop, "builtin.module(transform-interpreter)", w.main);
  if (s) return s;
  MlirBlock top = mlirModuleGetBody(L->module);
  for (MlirOperation op = mlirBlockGetFirstOperation(top), next; !mlirOperationIsNull(op); op = next) {
    next = mlirOperationGetNextInBlock(op);
    if (is_transform_op(op) || is_schedule_module(op)) mlirOperationDestroy(op);
  }
  return CREC_OK;
}

/* Whether `op` is a func.call of a function of the module that has a body
 * (one MLIR's inliner may inline), rather than of a declaration. */
static bool calls_a_body(MlirModule module, MlirOperation op) {
  if (!crec__lw_is(op, "func.call")) return false;
  MlirAttribute callee = crec__lw_attr(op, "callee");
  if (mlirAttributeIsNull(callee) || !mlirAttributeIsAFlatSymbolRef(callee)) return false;
  MlirStringRef name = mlirFlatSymbolRefAttrGetValue(callee);
  MlirOperation f = crec__lw_lookup_symbol(mlirModuleGetBody(module), name.data, name.length);
  return !mlirOperationIsNull(f) && crec__lw_is(f, "func.func") &&
         !mlirBlockIsNull(mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0)));
}

typedef struct call_walk {
  MlirModule module;
  bool found;
} call_walk;

static MlirWalkResult find_call(MlirOperation op, void *user) {
  call_walk *w = user;
  if (crec__lw_is(op, "gpu.module")) return MlirWalkResultSkip; /* device code: compiled as it is */
  if (!calls_a_body(w->module, op)) return MlirWalkResultAdvance;
  w->found = true;
  return MlirWalkResultInterrupt;
}

static MlirOperation find_entry(lw *L);

/* Inlines the calls of host functions to functions of the module (MLIR's own
 * inliner, as mlir-opt's "inline"), so that the entry is one body. Its default
 * canonicalization is left out: crec lowers the ops as written. Calls to
 * declarations (@printMemrefF32) stay and are reported where they are lowered;
 * so are calls the inliner keeps (recursion, or a body with ops it cannot move,
 * like crec.* ops). */
static crec_status inline_calls(lw *L) {
  call_walk w = {L->module, false};
  MlirOperation mop = mlirModuleGetOperation(L->module);
  mlirOperationWalk(mop, find_call, &w, MlirWalkPreOrder);
  if (!w.found) return CREC_OK;
  /* the inliner erases private functions nobody calls once it is done: keep the entry */
  MlirOperation entry = find_entry(L);
  if (!mlirOperationIsNull(entry))
    mlirOperationRemoveAttributeByName(entry, mlirSymbolTableGetVisibilityAttributeName());
  return crec__lw_run_pipeline(L, mop, "builtin.module(inline{default-pipeline=})", mop);
}

static MlirOperation find_entry(lw *L) {
  MlirStringRef s;
  for (MlirOperation op = func_from(mlirBlockGetFirstOperation(mlirModuleGetBody(L->module)), &s);
       !mlirOperationIsNull(op); op = func_from(mlirOperationGetNextInBlock(op), &s))
    if (s.length == strlen(L->entry_name) && memcmp(s.data, L->entry_name, s.length) == 0) return op;
  MlirOperation none = {NULL};
  return none;
}

static crec_status entry_not_found(lw *L) {
  crec__text names = {0};
  size_t n = 0;
  MlirStringRef name;
  for (MlirOperation op = func_from(mlirBlockGetFirstOperation(mlirModuleGetBody(L->module)), &name);
       !mlirOperationIsNull(op); op = func_from(mlirOperationGetNextInBlock(op), &name))
    crec__text_printf(&names, "%s'%.*s'", n++ ? ", " : "", (int)name.length, name.data);
  crec__text_puts(&names, "");
  crec_status s = crec__lw_fail(L, mlirModuleGetOperation(L->module), CREC_ERR_NOT_FOUND,
                          "entry function '%s' not found (functions in the module: %s)", L->entry_name,
                          names.failed || !names.data || !names.data[0] ? "none" : names.data);
  crec__free(names.data);
  return s;
}

static crec_status lower(lw *L, const char *text, size_t length, crec_program **out) {
  crec_status s = make_context(L);
  if (s) return s;
  L->module = mlirModuleCreateParse(L->ctx, mlirStringRefCreate(text, length));
  if (mlirModuleIsNull(L->module)) {
    /* parsing also verifies; a launch of a kernel that does not exist fails there */
    MlirOperation none = {NULL};
    s = crec__lw_fail_mlir(L, none, "the MLIR text could not be parsed");
    if (L->first_error && strstr(L->first_error, "'gpu.launch_func' op kernel ") && strstr(L->first_error, " is undefined"))
      s = CREC_ERR_NOT_FOUND;
    return s;
  }
  MlirOperation mop = mlirModuleGetOperation(L->module);
  if (!mlirOperationVerify(mop)) return crec__lw_fail_mlir(L, mop, "the module failed verification");
  if ((s = only_crec_unregistered(L)) || (s = check_attributes(L)) || (s = apply_schedule(L)) || (s = inline_calls(L)) ||
      (s = outline_launches(L)))
    return s;
  L->entry = find_entry(L);
  if (mlirOperationIsNull(L->entry)) return entry_not_found(L);
  if ((s = crec__lw_async_flatten(L)) || (s = crec__lw_static_allocs(L)) ||
      (s = crec__lw_segments_extract(L)))
    return s;
  if ((s = crec_program_create(&L->p))) return crec__rethrow(s, L->fn);
  if ((s = crec__lw_entry_args(L))) return s;
  MlirRegion body = mlirOperationGetRegion(L->entry, 0);
  MlirBlock block = mlirRegionGetFirstBlock(body);
  if (mlirBlockIsNull(block))
    return crec__lw_fail(L, L->entry, CREC_ERR_MLIR, "the entry function '%s' is a declaration without a body",
                   L->entry_name);
  if (!mlirBlockIsNull(mlirBlockGetNextInRegion(block)))
    return crec__lw_fail(L, L->entry, CREC_ERR_UNSUPPORTED,
                   "the entry function has several blocks; express control flow with scf.if, scf.while "
                   "and scf.index_switch");
  if ((s = crec__lw_collect_kernels(L, block)) || (s = crec__lw_kernels_commit(L))) return s;
  if ((s = crec__lw_block(L, block, crec_program_body(L->p)))) return s;
  if ((s = crec__lw_library_finish(L))) return s;
  if ((s = crec__lw_host_finish(L))) return s;
  if ((s = crec_program_validate(L->p))) return crec__rethrow(s, L->fn);
  if ((s = crec__lw_warn_undefined(L))) return s;
  *out = L->p;
  L->p = NULL;
  return CREC_OK;
}

static crec_status run(const char *fn, const char *path, const char *text, size_t length,
                       const crec_lower_options *options, crec_program **out) {
  lw L;
  memset(&L, 0, sizeof L);
  crec_status s = setup(&L, options, fn, path);
  /* the persistent cache: a program lowered before, by any process, is read back */
  char key[33];
  bool cache = !s && crec__lw_disk_cacheable(text, length);
  if (cache) {
    crec__lw_disk_key(&L, text, length, key);
    L.recording = !crec__lw_disk_get(&L, key, out);
    cache = L.recording;
  }
  if (!s && !*out) s = lower(&L, text, length, out);
  if (!s && cache) crec__lw_disk_put(key, *out, &L.diag_log);
  crec_program_destroy(L.p);
  teardown(&L);
  return s;
}

crec_status crec__lw_lower_mlir_string(const char *text, size_t length, const crec_lower_options *options,
                                   crec_program **out) {
  static const char fn[] = "crec_lower_mlir_string";
  if (out) *out = NULL;
  if (!text) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'text' is NULL");
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  /* MLIR's lexer reads up to a NUL: give it a terminated copy of exactly `length` bytes */
  char *copy = crec__malloc(length + 1);
  if (!copy) return crec__oom(fn);
  memcpy(copy, text, length);
  copy[length] = '\0';
  crec_status s = run(fn, NULL, copy, length, options, out);
  crec__free(copy);
  return s;
}

crec_status crec__lw_lower_mlir_file(const char *path, const crec_lower_options *options, crec_program **out) {
  static const char fn[] = "crec_lower_mlir_file";
  if (out) *out = NULL;
  if (!path) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'path' is NULL");
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  FILE *f = fopen(path, "rb");
  if (!f) return crec__error(CREC_ERR_IO, fn, "%s: cannot open: %s", path, strerror(errno));
  crec__text text = {0};
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) crec__text_putn(&text, chunk, n);
  bool bad = ferror(f) != 0;
  int err = errno;
  fclose(f);
  if (bad) {
    crec__free(text.data);
    return crec__error(CREC_ERR_IO, fn, "%s: cannot read: %s", path, strerror(err));
  }
  if (text.failed) {
    crec__free(text.data);
    return crec__oom(fn);
  }
  crec_status s = run(fn, path, text.data ? text.data : "", text.len, options, out);
  crec__free(text.data);
  return s;
}

crec_status crec__lw_lower_cache_get_stats(crec_lower_cache_stats *out) {
  static const char fn[] = "crec_lower_cache_get_stats";
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  crec_lower_cache_stats st = CREC_LOWER_CACHE_STATS_INIT;
  crec__lw_cache_stats(&st.compilations, &st.hits, &st.entries, &st.bytes);
  uint64_t d[6];
  crec__lw_disk_stats(d);
  st.disk_hits = d[0], st.disk_misses = d[1], st.disk_writes = d[2];
  st.disk_evictions = d[3], st.disk_rejected = d[4], st.disk_uncacheable = d[5];
  return crec__give_struct(out, &st, sizeof st, offsetof(crec_lower_cache_stats, disk_hits), fn, "argument 'out'",
                           "CREC_LOWER_CACHE_STATS_INIT");
}
