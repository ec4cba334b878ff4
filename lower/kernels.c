/* Kernels from their three sources: gpu.module bodies (compiled here), gpu.binary
 * objects, and gpu.module {crec.image = "path"} declarations (an nvcc-built image).
 * For each kernel: its image, its entry symbol, its compiled signature (the byte
 * size of each parameter) and how it uses each memref argument. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/Dialect/GPU.h>

#include "lower_internal.h"

/* ---- which memref arguments a kernel body loads and stores ---- */

static bool name_in(MlirOperation op, const char *const *names) {
  for (; *names; names++)
    if (crec__lw_is(op, *names)) return true;
  return false;
}

/* How a kernel uses a memref argument (or a view of it). `*sure` gets the
 * accesses seen for certain (a load is a read), not assumed (a use this
 * analysis cannot follow may do anything). */
static crec_access value_access(MlirValue v, int depth, unsigned *sure) {
  static const char *const reads0[] = {"memref.load", "affine.load", "vector.load", "vector.transfer_read",
                                       "vector.maskedload", "vector.gather", "vector.expandload", "nvgpu.ldmatrix",
                                       NULL};
  static const char *const writes1[] = {"memref.store", "affine.store", "vector.store", "vector.transfer_write", NULL};
  static const char *const writes0[] = {"vector.maskedstore", "vector.scatter", "vector.compressstore", NULL};
  static const char *const views0[] = {"memref.subview", "memref.cast", "memref.reinterpret_cast", "memref.view",
                                       "memref.collapse_shape", "memref.expand_shape", "memref.transpose",
                                       "memref.memory_space_cast", "memref.reshape", "memref.assume_alignment",
                                       "memref.extract_strided_metadata", NULL};
  static const char *const metadata[] = {"memref.dim", "memref.rank", "memref.prefetch", NULL};
  if (depth > 64) return CREC_ACCESS_READ_WRITE;
  unsigned acc = 0;
  for (MlirOpOperand use = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(use); use = mlirOpOperandGetNextUse(use)) {
    MlirOperation owner = mlirOpOperandGetOwner(use);
    unsigned idx = mlirOpOperandGetOperandNumber(use);
    unsigned a;
    if (name_in(owner, reads0) && idx == 0) a = CREC_ACCESS_READ;
    else if (name_in(owner, writes1) && idx == 1) a = CREC_ACCESS_WRITE;
    else if (name_in(owner, writes0) && idx == 0) a = CREC_ACCESS_WRITE;
    else if (crec__lw_is(owner, "memref.atomic_rmw") && idx == 1) a = CREC_ACCESS_READ_WRITE;
    else if (crec__lw_is(owner, "memref.generic_atomic_rmw") && idx == 0) a = CREC_ACCESS_READ_WRITE;
    else if (crec__lw_is(owner, "memref.copy")) a = idx == 0 ? CREC_ACCESS_READ : CREC_ACCESS_WRITE;
    /* cp.async: its destination is operand 0, its source the other memref */
    else if (crec__lw_is(owner, "nvgpu.device_async_copy")) a = idx == 0 ? CREC_ACCESS_WRITE : CREC_ACCESS_READ;
    else if (name_in(owner, metadata)) continue;
    else if (name_in(owner, views0) && idx == 0 && mlirOperationGetNumResults(owner) >= 1) {
      acc |= value_access(mlirOperationGetResult(owner, 0), depth + 1, sure);
      continue;
    } else {
      acc |= CREC_ACCESS_READ_WRITE; /* passed somewhere this analysis cannot follow */
      continue;
    }
    acc |= a;
    *sure |= a;
  }
  return (crec_access)acc;
}

/* ---- helpers ---- */

static MlirType function_type(MlirOperation f) {
  MlirAttribute a = crec__lw_attr(f, "function_type");
  MlirType none = {NULL};
  return mlirAttributeIsNull(a) || !mlirAttributeIsAType(a) ? none : mlirTypeAttrGetValue(a);
}

/* Static shape and static strided layout: what MLIR's bare-pointer convention accepts. */
static bool bare_compatible(MlirType t) {
  if (!mlirTypeIsAMemRef(t)) return !mlirTypeIsAUnrankedMemRef(t);
  if (!mlirShapedTypeHasStaticShape(t)) return false;
  int64_t rank = mlirShapedTypeGetRank(t), strides[LW_MAX_RANK], offset = 0;
  if (rank > LW_MAX_RANK || mlirLogicalResultIsFailure(mlirMemRefTypeGetStridesAndOffset(t, strides, &offset)))
    return false;
  if (mlirShapedTypeIsDynamicStrideOrOffset(offset)) return false;
  for (int64_t i = 0; i < rank; i++)
    if (mlirShapedTypeIsDynamicStrideOrOffset(strides[i])) return false;
  return true;
}

static MlirOperation find_func(MlirOperation gpu_module, const char *name, size_t len) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(gpu_module, 0));
  return crec__lw_lookup_symbol(body, name, len);
}

static crec_status read_file(lw *L, MlirOperation at, const char *rel, char *resolved, size_t rsize, void **data,
                             size_t *size) {
  if (rel[0] == '/') snprintf(resolved, rsize, "%s", rel);
  else snprintf(resolved, rsize, "%s/%s", L->base_dir, rel);
  FILE *f = fopen(resolved, "rb");
  if (!f)
    return crec__lw_fail(L, at, CREC_ERR_IO, "crec.image '%s' (%s) cannot be opened: %s", rel, resolved, strerror(errno));
  crec__text t = {0};
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) crec__text_putn(&t, chunk, n);
  bool bad = ferror(f) != 0;
  fclose(f);
  if (bad) {
    crec__free(t.data);
    return crec__lw_fail(L, at, CREC_ERR_IO, "crec.image '%s' (%s) cannot be read", rel, resolved);
  }
  if (t.failed) {
    crec__free(t.data);
    return crec__oom(L->fn);
  }
  *data = t.data;
  *size = t.len;
  return CREC_OK;
}

static int chip_number(const char *s) { return strncmp(s, "sm_", 3) == 0 ? atoi(s + 3) : -1; }

/* The chip of an #nvvm.target attribute ("sm_50" when it names none); false for other targets. */
static bool nvvm_chip(MlirAttribute target, char *chip, size_t size) {
  char *text = crec__lw_attr_string(target);
  if (!text) return false;
  bool ok = strncmp(text, "#nvvm.target", 12) == 0;
  if (ok) {
    const char *c = strstr(text, "chip = \"");
    if (c) {
      c += 8;
      size_t n = strcspn(c, "\"");
      snprintf(chip, size, "%.*s", (int)n, c);
    } else {
      snprintf(chip, size, "sm_50");
    }
  }
  crec__free(text);
  return ok;
}

/* ---- modules ---- */

static crec_status load_binary(lw *L, lw_module *m) {
  MlirAttribute objects = crec__lw_attr(m->op, "objects");
  intptr_t n = mlirAttributeIsNull(objects) ? 0 : mlirArrayAttrGetNumElements(objects);
  int want = chip_number(L->chip), best = -1, best_rank = 0;
  crec__text seen = {0};
  for (intptr_t i = 0; i < n; i++) {
    MlirAttribute o = mlirArrayAttrGetElement(objects, i);
    char chip[32];
    if (!mlirAttributeIsAGPUObjectAttr(o) || !nvvm_chip(mlirGPUObjectAttrGetTarget(o), chip, sizeof chip)) continue;
    uint32_t format = mlirGPUObjectAttrGetFormat(o);
    static const char *const fnames[] = {"?", "offload", "assembly", "bin", "fatbin"};
    crec__text_printf(&seen, "%s%s %s", seen.len ? ", " : "", chip, format <= 4 ? fnames[format] : "?");
    if (format < 2 || format > 4) continue; /* LLVM bitcode objects need a further compilation */
    /* exact chip first; then PTX for an older chip (the driver JITs it); then a fatbin */
    int rank = strcmp(chip, L->chip) == 0 ? 3 : format == 2 && chip_number(chip) <= want ? 2 : format == 4 ? 1 : 0;
    if (rank > best_rank) {
      best = (int)i;
      best_rank = rank;
    }
  }
  crec__text_puts(&seen, "");
  if (best < 0) {
    crec_status s = crec__lw_fail(L, m->op, CREC_ERR_NOT_FOUND, "gpu.binary @%s has no object usable on %s (objects: %s)",
                            m->sym, L->chip, seen.data && !seen.failed && seen.data[0] ? seen.data : "none");
    crec__free(seen.data);
    return s;
  }
  crec__free(seen.data);
  MlirAttribute o = mlirArrayAttrGetElement(objects, best);
  uint32_t format = mlirGPUObjectAttrGetFormat(o);
  m->format = format == 2 ? CREC_IMAGE_PTX : format == 3 ? CREC_IMAGE_CUBIN : CREC_IMAGE_FATBIN;
  MlirStringRef bytes = mlirGPUObjectAttrGetObject(o);
  size_t len = bytes.length;
  if (m->format == CREC_IMAGE_PTX)
    while (len && bytes.data[len - 1] == '\0') len--;
  m->image = crec__memdup(bytes.data, len ? len : 1);
  if (!m->image) return crec__oom(L->fn);
  m->size = len;
  crec_image_format detected;
  if (!crec__lw_image_format(m->image, m->size, &detected) || detected != m->format)
    return crec__lw_fail(L, m->op, CREC_ERR_MLIR, "gpu.binary @%s: the %s object for %s is not a valid %s image", m->sym,
                   crec_image_format_name(m->format), L->chip, crec_image_format_name(m->format));
  char abi[32];
  bool present = false;
  if (!crec__lw_string_attr(m->op, "crec.abi", abi, sizeof abi, &present))
    return crec__lw_fail(L, m->op, CREC_ERR_MLIR, "crec.abi must be a string (\"bare\", \"descriptor\" or \"c\")");
  if (present) {
    if (strcmp(abi, "bare") == 0) m->abi = LW_ABI_BARE;
    else if (strcmp(abi, "descriptor") == 0) m->abi = LW_ABI_DESCRIPTOR;
    else if (strcmp(abi, "c") == 0) m->abi = LW_ABI_C;
    else return crec__lw_fail(L, m->op, CREC_ERR_MLIR, "crec.abi is '%s'; expected \"bare\", \"descriptor\" or \"c\"", abi);
  }
  return CREC_OK;
}

static crec_status load_image(lw *L, lw_module *m, const char *path) {
  char resolved[4096];
  crec_status s = read_file(L, m->op, path, resolved, sizeof resolved, &m->image, &m->size);
  if (s) return s;
  if (!crec__lw_image_format(m->image, m->size, &m->format))
    return crec__lw_fail(L, m->op, CREC_ERR_MLIR, "crec.image '%s' (%s) is not a PTX, cubin or fatbin image", path,
                   resolved);
  m->abi = LW_ABI_C;
  /* the image provides the code: the module may only declare kernels */
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(m->op, 0));
  for (MlirOperation f = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(f); f = mlirOperationGetNextInBlock(f)) {
    if (crec__lw_is(f, "gpu.module_end")) continue;
    if (crec__lw_is(f, "func.func")) {
      if (!mlirBlockIsNull(mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0))))
        return crec__lw_fail(L, f, CREC_ERR_MLIR, "a module with crec.image holds only declarations, but this function has a body");
      continue;
    }
    if (crec__lw_is(f, "gpu.func")) {
      MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0));
      MlirOperation first = mlirBlockGetFirstOperation(b);
      if (mlirOperationIsNull(first) || !crec__lw_is(first, "gpu.return") || !mlirOperationIsNull(mlirOperationGetNextInBlock(first)))
        return crec__lw_fail(L, f, CREC_ERR_MLIR,
                       "a module with crec.image holds only declarations: write the kernel as "
                       "'gpu.func @k(...) kernel { gpu.return }' (the image provides the code)");
      continue;
    }
    return crec__lw_fail(L, f, CREC_ERR_MLIR, "a module with crec.image holds only kernel declarations");
  }
  return CREC_OK;
}

static crec_status compile_body(lw *L, lw_module *m) {
  /* bare pointers when every memref parameter in the module is static; the expanded descriptor otherwise */
  bool bare = true;
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(m->op, 0));
  for (MlirOperation f = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(f); f = mlirOperationGetNextInBlock(f)) {
    MlirType ft = function_type(f);
    if (mlirTypeIsNull(ft) || !mlirTypeIsAFunction(ft)) continue;
    for (intptr_t i = 0; i < mlirFunctionTypeGetNumInputs(ft); i++)
      if (!bare_compatible(mlirFunctionTypeGetInput(ft, i))) bare = false;
    for (intptr_t i = 0; i < mlirFunctionTypeGetNumResults(ft); i++)
      if (!bare_compatible(mlirFunctionTypeGetResult(ft, i))) bare = false;
  }
  m->abi = bare ? LW_ABI_BARE : LW_ABI_DESCRIPTOR;
  m->format = CREC_IMAGE_PTX;
  /* early start: the option, or {crec.early_start} on the module; a chip below
   * sm_90 has no programmatic dependent launch, and its launches keep plain edges */
  m->waits = (L->early_start || !mlirAttributeIsNull(crec__lw_attr(m->op, "crec.early_start"))) &&
             crec__lw_chip_has_pdl(L);
  char *ptx = NULL;
  crec_status s = crec__lw_compile_module(L, m->op, bare, m->waits, &ptx, &m->size);
  m->image = ptx;
  if (s || !L->cubin) return s;
  /* ahead of time: SASS for the chip, so that a record does no PTX JIT */
  char *cubin = NULL;
  size_t size = 0;
  char chip[32];
  if ((s = crec__lw_module_chip(L, m->op, chip)) || (s = crec__lw_ptx_to_cubin(L, m->op, chip, ptx, m->size, &cubin, &size)))
    return s;
  crec__free(ptx);
  m->image = cubin;
  m->size = size;
  m->format = CREC_IMAGE_CUBIN;
  return CREC_OK;
}

static crec_status module_for(lw *L, MlirOperation at, MlirStringRef sym, uint32_t *out) {
  uint32_t found = crec__lw_map_get(&L->module_keys, sym.data, sym.length);
  if (found != LW_NONE) {
    *out = found;
    return CREC_OK;
  }
  MlirOperation op = crec__lw_lookup_symbol(mlirModuleGetBody(L->module), sym.data, sym.length);
  if (mlirOperationIsNull(op) || (!crec__lw_is(op, "gpu.module") && !crec__lw_is(op, "gpu.binary")))
    return crec__lw_fail(L, at, CREC_ERR_NOT_FOUND, "kernel module @%.*s is not a gpu.module or gpu.binary of the module",
                   (int)sym.length, sym.data);
  if (CREC__RESERVE(L->modules, L->cap_modules, L->num_modules + 1) != CREC_OK) return crec__oom(L->fn);
  lw_module *m = &L->modules[L->num_modules];
  memset(m, 0, sizeof *m);
  m->op = op;
  m->sym = crec__memdup(sym.data, sym.length + 1);
  if (!m->sym) return crec__oom(L->fn);
  m->sym[sym.length] = '\0';
  L->num_modules++; /* from here teardown frees it */
  char path[4096];
  bool has_image = false;
  crec_status s;
  if (crec__lw_is(op, "gpu.binary")) {
    m->source = LW_SRC_BINARY;
    s = load_binary(L, m);
  } else if (!crec__lw_string_attr(op, "crec.image", path, sizeof path, &has_image)) {
    s = crec__lw_fail(L, op, CREC_ERR_MLIR, "crec.image must be a string (a path relative to the MLIR file)");
  } else if (has_image && !mlirAttributeIsNull(crec__lw_attr(op, "crec.early_start"))) {
    s = crec__lw_fail(L, op, CREC_ERR_MLIR,
                      "crec.early_start on a module with crec.image: crec compiles none of its kernels, so it cannot "
                      "make them wait (put {crec.early_start} on the launches of kernels whose code waits with "
                      "griddepcontrol.wait)");
  } else if (has_image) {
    m->source = LW_SRC_IMAGE;
    s = load_image(L, m, path);
  } else {
    m->source = LW_SRC_BODY;
    s = compile_body(L, m);
  }
  if (s) return s;
  if (crec__lw_map_put(&L->module_keys, sym.data, sym.length, (uint32_t)(L->num_modules - 1)) != CREC_OK)
    return crec__oom(L->fn);
  *out = (uint32_t)(L->num_modules - 1);
  return CREC_OK;
}

/* ---- access attributes of declarations ---- */

static crec_status parse_access(lw *L, MlirOperation at, MlirAttribute arr, MlirType ft, crec_access *acc) {
  intptr_t nargs = mlirFunctionTypeGetNumInputs(ft), nmem = 0;
  for (intptr_t i = 0; i < nargs; i++) nmem += mlirTypeIsAMemRef(mlirFunctionTypeGetInput(ft, i));
  if (!mlirAttributeIsAArray(arr))
    return crec__lw_fail(L, at, CREC_ERR_MLIR, "crec.access must be an array of \"r\", \"w\" or \"rw\"");
  intptr_t n = mlirArrayAttrGetNumElements(arr);
  if (n != nargs && n != nmem)
    return crec__lw_fail(L, at, CREC_ERR_MLIR,
                   "crec.access has %d entries; expected one per memref argument (%d) or per argument (%d)", (int)n,
                   (int)nmem, (int)nargs);
  intptr_t k = 0;
  for (intptr_t i = 0; i < nargs; i++) {
    bool mem = mlirTypeIsAMemRef(mlirFunctionTypeGetInput(ft, i));
    if (n == nmem && !mem) continue;
    MlirAttribute e = mlirArrayAttrGetElement(arr, k++);
    if (!mlirAttributeIsAString(e))
      return crec__lw_fail(L, at, CREC_ERR_MLIR, "crec.access entry %d is not a string", (int)(k - 1));
    MlirStringRef v = mlirStringAttrGetValue(e);
    crec_access a = v.length == 1 && v.data[0] == 'r'   ? CREC_ACCESS_READ
                    : v.length == 1 && v.data[0] == 'w' ? CREC_ACCESS_WRITE
                    : v.length == 2 && memcmp(v.data, "rw", 2) == 0 ? CREC_ACCESS_READ_WRITE
                                                                    : (crec_access)0;
    if (!a && mem)
      return crec__lw_fail(L, at, CREC_ERR_MLIR, "crec.access entry %d is '%.*s'; expected \"r\", \"w\" or \"rw\"",
                     (int)(k - 1), (int)v.length, v.data);
    if (mem) acc[i] = a;
  }
  return CREC_OK;
}

/* ---- kernels ---- */

/* Reads constant launch values (shared memory, cluster dims) from arith.constant ops. */
static bool constant_operand(MlirOperation op, intptr_t index, int64_t *value) {
  MlirValue v = mlirOperationGetOperand(op, index);
  if (!mlirValueIsAOpResult(v)) return false;
  MlirOperation def = mlirOpResultGetOwner(v);
  if (!crec__lw_is(def, "arith.constant") && !crec__lw_is(def, "index.constant")) return false;
  MlirAttribute a = crec__lw_attr(def, "value");
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAInteger(a)) return false;
  *value = mlirIntegerAttrGetValueInt(a);
  return true;
}

static crec_status init_kernel(lw *L, MlirOperation at, lw_kernel *k, const lw_module *m, MlirStringRef name) {
  k->num_args = LW_NONE;
  char entry[512];
  snprintf(entry, sizeof entry, "%.*s", (int)name.length, name.data);
  if (m->source != LW_SRC_BINARY) {
    MlirOperation f = find_func(m->op, name.data, name.length);
    if (mlirOperationIsNull(f) || (!crec__lw_is(f, "gpu.func") && !crec__lw_is(f, "func.func")))
      return crec__lw_fail(L, at, CREC_ERR_NOT_FOUND, "kernel @%s::@%s is not found", m->sym, entry);
    if (mlirAttributeIsNull(crec__lw_attr(f, "gpu.kernel")))
      return crec__lw_fail(L, f, CREC_ERR_MLIR, "@%s::@%s is not a kernel (declare it 'gpu.func ... kernel')", m->sym, entry);
    k->func = f;
    bool present = false;
    char alias[512];
    if (!crec__lw_string_attr(f, "crec.entry", alias, sizeof alias, &present))
      return crec__lw_fail(L, f, CREC_ERR_MLIR, "crec.entry must be a string (the kernel's symbol in the image)");
    if (present && alias[0]) snprintf(entry, sizeof entry, "%s", alias);
    MlirType ft = function_type(f);
    k->num_args = (uint32_t)mlirFunctionTypeGetNumInputs(ft);
    k->access = crec__calloc(k->num_args ? k->num_args : 1, sizeof *k->access);
    if (!k->access) return crec__oom(L->fn);
    k->read_known = crec__calloc(k->num_args ? k->num_args : 1, sizeof *k->read_known);
    if (!k->read_known) return crec__oom(L->fn);
    for (uint32_t i = 0; i < k->num_args; i++) k->access[i] = CREC_ACCESS_READ_WRITE;
    if (m->source == LW_SRC_BODY) {
      MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0));
      for (uint32_t i = 0; i < k->num_args && !mlirBlockIsNull(b); i++) {
        unsigned sure = 0;
        crec_access a = value_access(mlirBlockGetArgument(b, i), 0, &sure);
        k->access[i] = a ? a : CREC_ACCESS_READ; /* an unused argument: nothing to order against writers */
        k->read_known[i] = (sure & CREC_ACCESS_READ) != 0;
      }
    } else {
      MlirAttribute acc = crec__lw_attr(f, "crec.access");
      crec_status s;
      if (!mlirAttributeIsNull(acc) && (s = parse_access(L, f, acc, ft, k->access))) return s;
      /* declared: the declaration is the user's word */
      for (uint32_t i = 0; i < k->num_args; i++) k->read_known[i] = !mlirAttributeIsNull(acc);
    }
  } else {
    MlirAttribute dict = crec__lw_attr(m->op, "crec.access");
    if (!mlirAttributeIsNull(dict) && !mlirAttributeIsADictionary(dict))
      return crec__lw_fail(L, m->op, CREC_ERR_MLIR, "crec.access of a gpu.binary maps kernel names to access arrays");
  }
  k->entry = crec__strdup(entry);
  if (!k->entry) return crec__oom(L->fn);
  uint32_t sizes[LW_MAX_PARAMS], count = 0;
  bool known = false;
  int r = crec__lw_image_kernel(m->image, m->size, m->format, entry, sizes, LW_MAX_PARAMS, &count, &known);
  if (r == 0) {
    if (m->source == LW_SRC_BODY)
      return crec__lw_fail(L, k->func, CREC_ERR_INTERNAL, "the compiled PTX of @%s has no entry '%s'", m->sym, entry);
    return crec__lw_fail(L, m->source == LW_SRC_IMAGE ? k->func : at, CREC_ERR_NOT_FOUND,
                   "kernel '%s' is not in the %s image of @%s", entry, crec_image_format_name(m->format), m->sym);
  }
  if (r > 0 && known) {
    k->params_known = true;
    k->num_params = count;
    k->param_sizes = crec__memdup(sizes, (count ? count : 1) * sizeof *sizes);
    if (!k->param_sizes) return crec__oom(L->fn);
  }
  return CREC_OK;
}

bool crec__lw_launch_segments(MlirOperation launch, int32_t *sizes, intptr_t *start) {
  MlirAttribute seg = crec__lw_attr(launch, "operandSegmentSizes");
  if (mlirAttributeIsNull(seg) || !mlirAttributeIsADenseI32Array(seg) || mlirDenseArrayGetNumElements(seg) != 13)
    return false;
  intptr_t pos = 0;
  for (int i = 0; i < 13; i++) {
    sizes[i] = mlirDenseI32ArrayGetElement(seg, i);
    start[i] = pos;
    pos += sizes[i];
  }
  return pos == mlirOperationGetNumOperands(launch);
}

crec_status crec__lw_kernel_access(lw *L, MlirOperation launch, const lw_kernel *k, const MlirType *types, uint32_t n,
                             crec_access *acc, bool *read_known) {
  const lw_module *m = &L->modules[k->module];
  for (uint32_t i = 0; i < n; i++) {
    acc[i] = k->access && i < k->num_args ? k->access[i] : CREC_ACCESS_READ_WRITE;
    read_known[i] = k->read_known && i < k->num_args && k->read_known[i];
  }
  if (m->source != LW_SRC_BINARY) return CREC_OK;
  MlirAttribute dict = crec__lw_attr(m->op, "crec.access");
  if (mlirAttributeIsNull(dict)) return CREC_OK;
  MlirAttribute arr = mlirDictionaryAttrGetElementByName(dict, mlirStringRefCreateFromCString(k->entry));
  if (mlirAttributeIsNull(arr)) return CREC_OK;
  MlirType ft = mlirFunctionTypeGet(L->ctx, (intptr_t)n, types, 0, NULL);
  for (uint32_t i = 0; i < n; i++) read_known[i] = true;
  return parse_access(L, m->op, arr, ft, acc);
}

/* Finds or makes the kernel `ref` (@module::@kernel) names, with cluster dims
 * `cluster`; errors are reported at `at`. */
static crec_status resolve_kernel(lw *L, MlirOperation at, MlirAttribute ref, const uint32_t cluster[3],
                                  uint32_t *out) {
  MlirStringRef msym = mlirSymbolRefAttrGetRootReference(ref);
  MlirStringRef ksym = mlirSymbolRefAttrGetLeafReference(ref);
  crec__text key = {0};
  crec__text_printf(&key, "%.*s::%.*s|%u,%u,%u", (int)msym.length, msym.data, (int)ksym.length, ksym.data, cluster[0],
                    cluster[1], cluster[2]);
  if (key.failed) {
    crec__free(key.data);
    return crec__oom(L->fn);
  }
  uint32_t index = crec__lw_map_get(&L->kernel_keys, key.data, key.len);
  crec_status s = CREC_OK;
  if (index == LW_NONE) {
    uint32_t mod;
    if ((s = module_for(L, at, msym, &mod))) goto done;
    if (CREC__RESERVE(L->kernels, L->cap_kernels, L->num_kernels + 1) != CREC_OK) {
      s = crec__oom(L->fn);
      goto done;
    }
    lw_kernel *k = &L->kernels[L->num_kernels++];
    memset(k, 0, sizeof *k);
    k->module = mod;
    memcpy(k->cluster, cluster, sizeof k->cluster);
    k->key = crec__strdup(key.data);
    if (!k->key) {
      s = crec__oom(L->fn);
      goto done;
    }
    if ((s = init_kernel(L, at, k, &L->modules[mod], ksym))) goto done;
    index = (uint32_t)(L->num_kernels - 1);
    if (crec__lw_map_put(&L->kernel_keys, key.data, key.len, index) != CREC_OK) {
      s = crec__oom(L->fn);
      goto done;
    }
  }
  *out = index;
done:
  crec__free(key.data);
  return s;
}

crec_status crec__lw_kernel_for_ref(lw *L, MlirOperation at, MlirAttribute ref, uint32_t *out) {
  static const uint32_t none[3] = {0, 0, 0};
  if (mlirAttributeIsNull(ref) || !mlirAttributeIsASymbolRef(ref) || mlirSymbolRefAttrGetNumNestedReferences(ref) != 1)
    return crec__lw_fail(L, at, CREC_ERR_MLIR, "expected a kernel reference @module::@kernel");
  return resolve_kernel(L, at, ref, none, out);
}

crec_status crec__lw_kernel_for_launch(lw *L, MlirOperation launch, uint32_t *out) {
  MlirAttribute ref = crec__lw_attr(launch, "kernel");
  if (mlirAttributeIsNull(ref) || !mlirAttributeIsASymbolRef(ref) || mlirSymbolRefAttrGetNumNestedReferences(ref) != 1)
    return crec__lw_fail(L, launch, CREC_ERR_MLIR, "expected a kernel reference @module::@kernel");
  int32_t sizes[13];
  intptr_t start[13];
  if (!crec__lw_launch_segments(launch, sizes, start))
    return crec__lw_fail(L, launch, CREC_ERR_INTERNAL, "unexpected operand segments of gpu.launch_func");
  uint32_t cluster[3] = {0, 0, 0};
  if (sizes[7]) {
    for (int i = 0; i < 3; i++) {
      int64_t v = 0;
      if (!constant_operand(launch, start[7 + i], &v) || v <= 0 || v > 64)
        return crec__lw_fail(L, launch, CREC_ERR_UNSUPPORTED, "cluster dims must be constants from 1 to 64");
      cluster[i] = (uint32_t)v;
    }
  }
  uint32_t index;
  crec_status s = resolve_kernel(L, launch, ref, cluster, &index);
  if (s) return s;
  lw_kernel *k = &L->kernels[index];
  int64_t smem = 0;
  if (sizes[10] && constant_operand(launch, start[10], &smem) && smem > 0 && smem <= UINT32_MAX &&
      (uint32_t)smem > k->shared_bytes)
    k->shared_bytes = (uint32_t)smem;
  MlirAttribute most = crec__lw_attr(launch, "crec.shared_bytes");
  if (!mlirAttributeIsNull(most)) {
    int64_t v = mlirAttributeIsAInteger(most) ? mlirIntegerAttrGetValueInt(most) : -1;
    if (v < 0 || v > UINT32_MAX)
      return crec__lw_fail(L, launch, CREC_ERR_MLIR, "crec.shared_bytes must be an integer from 0 to 2^32-1");
    if ((uint32_t)v > k->shared_bytes) k->shared_bytes = (uint32_t)v;
  }
  *out = index;
  return CREC_OK;
}

crec_status crec__lw_kernels_commit(lw *L) {
  crec_status s;
  for (size_t i = 0; i < L->num_modules; i++) {
    lw_module *m = &L->modules[i];
    if ((s = crec_program_add_module(L->p, m->sym, m->format, m->image, m->size, &m->handle)))
      return crec__lw_fail_builder(L, m->op, s);
  }
  for (size_t i = 0; i < L->num_kernels; i++) {
    lw_kernel *k = &L->kernels[i];
    crec_kernel_options o = CREC_KERNEL_OPTIONS_INIT;
    o.shared_bytes = k->shared_bytes;
    memcpy(o.cluster, k->cluster, sizeof o.cluster);
    if ((s = crec_program_add_kernel(L->p, L->modules[k->module].handle, k->entry, &o, &k->handle)))
      return crec__lw_fail_builder(L, L->modules[k->module].op, s);
  }
  return CREC_OK;
}
