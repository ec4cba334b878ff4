/* nvgpu.tma.create.descriptor in the entry function: a TMA descriptor (a
 * CUtensorMap) that the driver encodes on the host from its tensor's device
 * address, which crec knows at record and again at each replay that moves the
 * tensor. It becomes:
 *
 *   - a temporary of 128 bytes, which the kernels that use the descriptor get a
 *     pointer to (upstream MLIR lowers !nvgpu.tensormap.descriptor to a pointer
 *     to the descriptor in device memory);
 *   - a command of the built-in custom handler "crec.tensor_map" (operands: the
 *     tensor, read, and the temporary, written), which encodes the descriptor at
 *     record and whenever the tensor's address changes, and stores it there with
 *     a kernel that takes it by value (record/runtime/tensor_map.c).
 *
 * The tensor's shape and strides are those of the memref the descriptor is made
 * from (through casts to unranked memrefs), static, innermost stride 1; its box
 * is constants. CUDA counts dimensions innermost first, so both are reversed. */
#include <stdio.h>
#include <string.h>

#include <mlir-c/Dialect/LLVM.h>

#include "lower_internal.h"

/* The store kernel of every tensor-map command of a program (PTX for sm_90,
 * where TMA starts): one thread writes the 128 bytes it takes by value, then
 * releases them to the tensor-map proxy that TMA reads descriptors through. */
static const char store_ptx[] =
    ".version 8.3\n"
    ".target sm_90\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry crec_store_tensor_map(\n"
    "\t.param .u64 crec_store_tensor_map_param_0,\n"
    "\t.param .align 64 .b8 crec_store_tensor_map_param_1[128]\n"
    ")\n"
    "{\n"
    "\t.reg .b64 %rd<4>;\n"
    "\tld.param.u64 %rd1, [crec_store_tensor_map_param_0];\n"
    "\tcvta.to.global.u64 %rd2, %rd1;\n"
#define STORE(o)                                                      \
  "\tld.param.u64 %rd3, [crec_store_tensor_map_param_1+" #o "];\n" \
  "\tst.global.u64 [%rd2+" #o "], %rd3;\n"
    STORE(0) STORE(8) STORE(16) STORE(24) STORE(32) STORE(40) STORE(48) STORE(56)
    STORE(64) STORE(72) STORE(80) STORE(88) STORE(96) STORE(104) STORE(112) STORE(120)
#undef STORE
    "\tfence.proxy.tensormap::generic.release.gpu;\n"
    "\tret;\n"
    "}\n";

bool crec__lw_is_tensormap(MlirType t) {
  char *text = crec__lw_type_string(t);
  bool is = text && strncmp(text, "!nvgpu.tensormap.descriptor", 27) == 0;
  crec__free(text);
  return is;
}

/* The value of `key = value` in a printed type ("" when absent). */
static void type_param(const char *text, const char *key, char *value, size_t size) {
  value[0] = '\0';
  size_t klen = strlen(key);
  for (const char *p = strstr(text, key); p; p = strstr(p + 1, key)) {
    if (p > text && (p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z'))) continue; /* part of a longer name */
    const char *c = p + klen;
    while (*c == ' ') c++;
    if (*c != '=') continue;
    c++;
    while (*c == ' ') c++;
    size_t n = 0;
    while (c[n] && c[n] != ',' && c[n] != '>' && c[n] != ' ' && n + 1 < size) n++;
    memcpy(value, c, n);
    value[n] = '\0';
    return;
  }
}

/* One of the descriptor type's enums: its value (the order of MLIR's nvgpu enums,
 * which is CUDA's), or -1 when `value` is none of `names`. */
static int enum_of(const char *value, const char *const *names) {
  for (int i = 0; names[i]; i++)
    if (strcmp(value, names[i]) == 0) return i;
  return -1;
}

/* CUtensorMapDataType of an element type, or -1. */
static int data_type_of(MlirType t) {
  char *text = crec__lw_type_string(t);
  static const struct {
    const char *name;
    int value;
  } types[] = {{"ui8", 0},  {"i8", 0},  {"ui16", 1}, {"i16", 1}, {"ui32", 2}, {"i32", 3}, {"ui64", 4},
               {"i64", 5},  {"f16", 6}, {"f32", 7},  {"f64", 8}, {"bf16", 9}};
  int v = -1;
  for (size_t i = 0; text && i < sizeof types / sizeof *types && v < 0; i++)
    if (strcmp(text, types[i].name) == 0) v = types[i].value;
  crec__free(text);
  return v;
}

/* The store kernel, added to the program with the first descriptor. */
static crec_status store_kernel(lw *L, MlirOperation op, crec_kernel *out) {
  if (!L->has_tma_store) {
    crec_module m;
    crec_status s;
    if ((s = crec_program_add_module(L->p, "crec_tensor_map", CREC_IMAGE_PTX, store_ptx, sizeof store_ptx - 1, &m)) ||
        (s = crec_program_add_kernel(L->p, m, "crec_store_tensor_map", NULL, &L->tma_store)))
      return crec__lw_fail_builder(L, op, s);
    L->has_tma_store = true;
  }
  *out = L->tma_store;
  return CREC_OK;
}

crec_status crec__lw_tma_descriptor(lw *L, MlirOperation op, crec_region region) {
  intptr_t nops = mlirOperationGetNumOperands(op);
  if (nops < 2 || mlirOperationGetNumResults(op) != 1)
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "takes a tensor and its box, and makes one descriptor");
  MlirValue tensor = mlirOperationGetOperand(op, 0);
  lw_memref *mr;
  crec_status s;
  if ((s = crec__lw_memref_get(L, op, tensor, &mr)) || (s = crec__lw_memref_live(L, op, mr))) return s;
  crec__tensor_map_attrs a;
  memset(&a, 0, sizeof a);
  a.version = CREC__TENSOR_MAP_VERSION;
  a.rank = mr->rank;
  if (a.rank < 1 || a.rank > 5)
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "a tensor of rank %u: TMA takes ranks 1 to 5", a.rank);
  if ((uint32_t)(nops - 1) != a.rank)
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "a box of %d dimensions for a tensor of rank %u", (int)(nops - 1), a.rank);
  int dt = data_type_of(mlirShapedTypeGetElementType(mlirValueGetType(tensor)));
  if (dt < 0)
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                         "the tensor's element type has no TMA data type (crec encodes i8, i16, i32, i64, their "
                         "unsigned forms, f16, bf16, f32 and f64)");
  a.data_type = (uint32_t)dt;
  for (uint32_t i = 0; i < a.rank; i++) {
    uint32_t d = a.rank - 1 - i; /* CUDA's dimension i is the memref's d */
    if (!mr->sizes[d].is_const || !mr->strides[d].is_const)
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                           "the tensor's size and stride of dimension %u are not constants: crec encodes "
                           "descriptors of static shapes",
                           d);
    if (i == 0 && mr->strides[d].value != 1)
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                           "the tensor's innermost stride is %lld elements: TMA reads rows of consecutive elements",
                           (long long)mr->strides[d].value);
    a.dims[i] = (uint64_t)mr->sizes[d].value;
    if (i) a.strides[i - 1] = (uint64_t)mr->strides[d].value * mr->esz;
    uint32_t x = crec__lw_value_get(L, mlirOperationGetOperand(op, 1 + d));
    int64_t box = 0;
    if (x == LW_NONE || LW_V_KIND(x) != LW_V_NODE || !crec__lw_node_int(L, LW_V_INDEX(x), &box) || box < 1 || box > 256)
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                           "box dimension %u is not a constant from 1 to 256 (TMA's largest box side)", d);
    a.box[i] = (uint32_t)box;
    a.element_strides[i] = 1;
  }
  /* !nvgpu.tensormap.descriptor<tensor = ..., swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> */
  char *type = crec__lw_type_string(mlirValueGetType(mlirOperationGetResult(op, 0)));
  if (!type) return crec__oom(L->fn);
  static const char *const swizzles[] = {"none", "swizzle_32b", "swizzle_64b", "swizzle_128b", NULL};
  static const char *const promos[] = {"none", "l2promo_64b", "l2promo_128b", "l2promo_256b", NULL};
  static const char *const oobs[] = {"zero", "nan", NULL};
  static const char *const interleaves[] = {"none", "interleave_16b", "interleave_32b", NULL};
  struct {
    const char *key;
    const char *const *names;
    uint32_t *out;
  } params[] = {{"swizzle", swizzles, &a.swizzle},
                {"l2promo", promos, &a.l2_promotion},
                {"oob", oobs, &a.oob_fill},
                {"interleave", interleaves, &a.interleave}};
  for (size_t i = 0; i < sizeof params / sizeof *params && !s; i++) {
    char value[64];
    type_param(type, params[i].key, value, sizeof value);
    int v = value[0] ? enum_of(value, params[i].names) : 0;
    if (v < 0) s = crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "the descriptor's %s is '%s', which crec does not know",
                                 params[i].key, value);
    else *params[i].out = (uint32_t)v;
  }
  crec__free(type);
  if (s) return s;

  /* the descriptor's temporary, named after the op */
  char cname[256], temp[300];
  const char *name = crec__lw_command_name(op, cname, sizeof cname);
  snprintf(temp, sizeof temp, "%s", name ? name : "tensor_map");
  crec_buffer h;
  for (unsigned i = 2; crec_program_find_buffer(L->p, temp, &h) == CREC_OK; i++)
    snprintf(temp, sizeof temp, "%s%u", name ? name : "tensor_map", i);
  if ((s = crec_program_add_temporary(L->p, temp, 128, &h))) return crec__lw_fail_builder(L, op, s);
  uint32_t buf;
  if ((s = crec__lw_buf_add(L, h, CREC_BUFFER_TEMPORARY, false, 128, false, temp, &buf))) return s;
  crec_range src;
  bool contiguous;
  if ((s = crec__lw_memref_range(L, op, mr, &src, &contiguous))) return s;
  crec_kernel k;
  if ((s = store_kernel(L, op, &k))) return s;
  crec_range dst = crec_range_of(h, 0, 128);
  crec_operand operands[2] = {crec_operand_of(src, CREC_ACCESS_READ), crec_operand_of(dst, CREC_ACCESS_WRITE)};
  crec_custom cu = CREC_CUSTOM_INIT;
  cu.target = CREC__TENSOR_MAP_TARGET;
  cu.operands = operands;
  cu.num_operands = 2;
  cu.kernels = &k;
  cu.num_kernels = 1;
  cu.attributes = &a;
  cu.attributes_size = sizeof a;
  crec_command cmd;
  if ((s = crec_program_add_custom(L->p, region, temp, &cu, &cmd))) return crec__lw_fail_builder(L, op, s);
  if ((s = crec__lw_note_write(L, op, dst))) return s;
  /* it reads the tensor's address, not its bytes: the read orders it after the tensor's writers */
  if ((s = crec__lw_note_unsure(L, cmd, 0))) return s;
  crec__lw_note_command(L);
  if (CREC__RESERVE(L->tmaps, L->cap_tmaps, L->num_tmaps + 1) != CREC_OK) return crec__oom(L->fn);
  L->tmaps[L->num_tmaps++] = (lw_tensor_map){buf, src};
  /* the result is the temporary's bytes, which a launch passes as one pointer */
  lw_memref m;
  memset(&m, 0, sizeof m);
  m.buffer = buf;
  m.rank = 1;
  m.sizes[0].is_const = true, m.sizes[0].value = 128;
  m.strides[0].is_const = true, m.strides[0].value = 1;
  m.esz = 1;
  m.dense = true;
  uint32_t index;
  if ((s = crec__lw_memref_new(L, &m, &index))) return s;
  return crec__lw_value_set(L, mlirOperationGetResult(op, 0), LW_V_PACK(LW_V_MEMREF, index));
}

/* Before the first op of `entry`: every thread acquires the descriptor at
 * `desc` (a pointer) through the tensor-map proxy. crec's descriptor command
 * rewrites the same 128 bytes when its tensor moves (its store kernel releases
 * them); without the acquire an SM may use the descriptor it cached on an
 * earlier launch, for memory the tensor no longer has. */
static crec_status acquire_descriptor(lw *L, MlirBlock entry, MlirValue desc, MlirLocation loc, MlirOperation at) {
  if (!crec__lw_prepend_asm(L->ctx, entry, loc, "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;", "l", 1, &desc))
    return crec__lw_fail(L, at, CREC_ERR_INTERNAL, "cannot make the acquire of a TMA descriptor parameter");
  return CREC_OK;
}

/* A kernel parameter that is a descriptor, under `op`. */
static MlirWalkResult find_tensormap_param(MlirOperation op, void *user) {
  if (!crec__lw_is(op, "gpu.func") || mlirAttributeIsNull(crec__lw_attr(op, "gpu.kernel")))
    return MlirWalkResultAdvance;
  MlirBlock entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
  for (intptr_t i = 0; !mlirBlockIsNull(entry) && i < mlirBlockGetNumArguments(entry); i++)
    if (crec__lw_is_tensormap(mlirValueGetType(mlirBlockGetArgument(entry, i)))) {
      *(bool *)user = true;
      return MlirWalkResultInterrupt;
    }
  return MlirWalkResultSkip;
}

bool crec__lw_takes_tensormap(MlirOperation gpu_module) {
  bool takes = false;
  mlirOperationWalk(gpu_module, find_tensormap_param, &takes, MlirWalkPreOrder);
  return takes;
}

/* In crec's copy of a gpu.module before MLIR's pipeline: a kernel parameter of
 * type !nvgpu.tensormap.descriptor becomes the pointer it is lowered to (crec
 * outlines launches before converting nvgpu ops, where upstream converts them
 * first, and convert-gpu-to-nvvm knows no nvgpu type in a signature). Its uses
 * read it through a cast back, which the conversions remove; a kernel begins by
 * acquiring each descriptor it takes (acquire_descriptor). */
crec_status crec__lw_tensormap_params(lw *L, MlirOperation gpu_module, MlirOperation at) {
  MlirOperation *funcs;
  size_t n;
  crec_status s = crec__lw_collect(L, gpu_module, "gpu.func", &funcs, &n);
  /* the pointer type and the inline PTX are the LLVM dialect's */
  if (!s && mlirDialectIsNull(mlirContextGetOrLoadDialect(L->ctx, mlirStringRefCreateFromCString("llvm"))))
    s = crec__lw_fail(L, at, CREC_ERR_INTERNAL, "the LLVM dialect is not registered");
  MlirType ptr = {NULL};
  if (!s) ptr = mlirLLVMPointerTypeGet(L->ctx, 0);
  for (size_t f = 0; f < n && !s; f++) {
    MlirBlock entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(funcs[f], 0));
    if (mlirBlockIsNull(entry)) continue;
    intptr_t nargs = mlirBlockGetNumArguments(entry);
    bool changed = false;
    for (intptr_t i = 0; i < nargs && !s; i++) {
      MlirValue arg = mlirBlockGetArgument(entry, i);
      MlirType t = mlirValueGetType(arg);
      if (!crec__lw_is_tensormap(t)) continue;
      MlirOperationState cs =
          mlirOperationStateGet(mlirStringRefCreateFromCString("builtin.unrealized_conversion_cast"),
                                mlirOperationGetLocation(funcs[f]));
      mlirOperationStateAddOperands(&cs, 1, &arg);
      mlirOperationStateAddResults(&cs, 1, &t);
      MlirOperation cast = mlirOperationCreate(&cs);
      if (mlirOperationIsNull(cast)) {
        s = crec__lw_fail(L, at, CREC_ERR_INTERNAL, "cannot make the cast of a TMA descriptor parameter");
        break;
      }
      MlirOperation first = mlirBlockGetFirstOperation(entry);
      if (mlirOperationIsNull(first)) mlirBlockAppendOwnedOperation(entry, cast);
      else mlirBlockInsertOwnedOperationBefore(entry, first, cast);
      mlirValueReplaceAllUsesOfWith(arg, mlirOperationGetResult(cast, 0));
      mlirOperationSetOperand(cast, 0, arg); /* the replacement took the cast's own operand too */
      mlirValueSetType(arg, ptr);
      changed = true;
      if (mlirAttributeIsNull(crec__lw_attr(funcs[f], "gpu.kernel"))) continue; /* its kernel acquired it */
      s = acquire_descriptor(L, entry, arg, mlirOperationGetLocation(funcs[f]), at);
    }
    if (!changed || s) continue;
    /* the signature follows its block's arguments */
    MlirType *inputs = crec__malloc(sizeof(MlirType) * (size_t)(nargs ? nargs : 1));
    if (!inputs) {
      s = crec__oom(L->fn);
      break;
    }
    for (intptr_t i = 0; i < nargs; i++) inputs[i] = mlirValueGetType(mlirBlockGetArgument(entry, i));
    MlirType ft = mlirFunctionTypeGet(L->ctx, nargs, inputs, 0, NULL);
    crec__free(inputs);
    mlirOperationSetInherentAttributeByName(funcs[f], mlirStringRefCreateFromCString("function_type"),
                                            mlirTypeAttrGet(ft));
  }
  crec__free(funcs);
  return s;
}

crec_status crec__lw_tensormap_use(lw *L, MlirOperation op, crec_region region, crec_range desc) {
  const lw_tensor_map *t = NULL;
  for (size_t i = 0; i < L->num_tmaps && !t; i++)
    if (L->bufs[L->tmaps[i].buffer].handle.id == desc.buffer.id) t = &L->tmaps[i];
  if (!t) return crec__lw_fail(L, op, CREC_ERR_INTERNAL, "a TMA descriptor that no nvgpu.tma.create.descriptor made");
  crec_operand operands[2] = {crec_operand_of(t->tensor, CREC_ACCESS_READ_WRITE),
                              crec_operand_of(desc, CREC_ACCESS_READ_WRITE)};
  crec_custom cu = CREC_CUSTOM_INIT;
  cu.target = CREC__TENSOR_MAP_USE_TARGET;
  cu.operands = operands;
  cu.num_operands = 2;
  crec_command cmd;
  crec_status s = crec_program_add_custom(L->p, region, "tensor_map_use", &cu, &cmd);
  if (s) return crec__lw_fail_builder(L, op, s);
  if ((s = crec__lw_note_write(L, op, t->tensor)) || (s = crec__lw_note_write(L, op, desc))) return s;
  /* what it reads is the launch's, which the front end cannot see: not a read to warn of */
  if ((s = crec__lw_note_unsure(L, cmd, 0)) || (s = crec__lw_note_unsure(L, cmd, 1))) return s;
  crec__lw_note_command(L);
  return CREC_OK;
}
