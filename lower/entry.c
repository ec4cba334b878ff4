/* The entry function: its arguments become argument buffers and bound scalars,
 * then its body is walked op by op into the program's regions. */
#include <stdio.h>
#include <string.h>

#include <mlir-c/Dialect/GPU.h>

#include "lower_internal.h"

/* ---- arguments ---- */

crec_element crec__lw_element_of(MlirType et) {
  uint32_t bits = 0;
  bool is_float = false, is_index = false;
  if (mlirTypeIsAVector(et) || !crec__lw_element_bytes(et, &bits, &is_float, &is_index)) return CREC_ELEMENT_BYTES;
  if (is_float) {
    if (bits == 32) return CREC_ELEMENT_F32;
    if (bits == 64) return CREC_ELEMENT_F64;
    return mlirTypeIsABF16(et) ? CREC_ELEMENT_BF16 : CREC_ELEMENT_F16;
  }
  if (bits <= 8) return CREC_ELEMENT_I8;
  if (bits <= 16) return CREC_ELEMENT_I16;
  if (bits <= 32) return CREC_ELEMENT_I32;
  return CREC_ELEMENT_I64;
}

static MlirAttribute arg_attr(MlirOperation f, intptr_t i, const char *name) {
  MlirAttribute all = crec__lw_attr(f, "arg_attrs");
  if (mlirAttributeIsNull(all) || !mlirAttributeIsAArray(all) || i >= mlirArrayAttrGetNumElements(all))
    return mlirAttributeGetNull();
  MlirAttribute dict = mlirArrayAttrGetElement(all, i);
  if (!mlirAttributeIsADictionary(dict)) return mlirAttributeGetNull();
  return mlirDictionaryAttrGetElementByName(dict, mlirStringRefCreateFromCString(name));
}

static crec_status arg_string(lw *L, intptr_t i, const char *attr, char *buf, size_t size) {
  MlirAttribute a = arg_attr(L->entry, i, attr);
  buf[0] = '\0';
  if (mlirAttributeIsNull(a)) return CREC_OK;
  if (!mlirAttributeIsAString(a))
    return crec__lw_fail(L, L->entry, CREC_ERR_MLIR, "argument %d: %s must be a string", (int)i, attr);
  MlirStringRef s = mlirStringAttrGetValue(a);
  if (s.length == 0 || s.length >= size)
    return crec__lw_fail(L, L->entry, CREC_ERR_MLIR, "argument %d: %s must be a non-empty string of fewer than %zu bytes",
                   (int)i, attr, size);
  memcpy(buf, s.data, s.length);
  buf[s.length] = '\0';
  return CREC_OK;
}

static crec_status memref_arg(lw *L, intptr_t i, MlirType t, const char *name, MlirValue v) {
  if (!crec__lw_memref_type_ok(t))
    return crec__lw_fail(L, L->entry, CREC_ERR_UNSUPPORTED,
                   "argument %d ('%s'): memrefs need int, index or float elements, rank at most %d, an identity "
                   "or strided layout, and sizes, strides and offset within 2^60 bytes",
                   (int)i, name, LW_MAX_RANK);
  uint32_t rank = (uint32_t)mlirShapedTypeGetRank(t), dynamic = 0;
  for (uint32_t d = 0; d < rank; d++) dynamic += mlirShapedTypeIsDynamicDim(t, d);
  if (dynamic > 1)
    return crec__lw_fail(L, L->entry, CREC_ERR_UNSUPPORTED,
                   "argument %d ('%s') has %u dynamic dims: crec sizes a dynamic argument from its bound bytes, which "
                   "determine one dynamic dim",
                   (int)i, name, dynamic);
  MlirType et = mlirShapedTypeGetElementType(t);
  uint32_t esz = crec__lw_memref_element_bytes(et);
  int64_t strides[LW_MAX_RANK], offset = 0;
  MlirAttribute layout = mlirMemRefTypeGetLayout(t);
  bool strided = !mlirAttributeIsNull(layout) && !mlirAttributeIsAAffineMap(layout);
  if (strided) {
    bool ok = mlirLogicalResultIsSuccess(mlirMemRefTypeGetStridesAndOffset(t, strides, &offset)) &&
              !mlirShapedTypeIsDynamicStrideOrOffset(offset) && !dynamic;
    for (uint32_t d = 0; ok && d < rank; d++) ok = !mlirShapedTypeIsDynamicStrideOrOffset(strides[d]);
    if (!ok)
      return crec__lw_fail(L, L->entry, CREC_ERR_UNSUPPORTED,
                     "argument %d ('%s'): a strided layout needs a static shape, strides and offset", (int)i, name);
  }
  uint64_t bytes = 0;
  if (!dynamic) {
    int64_t elems = 1, span = 1;
    for (uint32_t d = 0; d < rank; d++) {
      int64_t n = mlirShapedTypeGetDimSize(t, d);
      elems *= n;
      if (strided) span += (n - 1) * strides[d];
    }
    bytes = (uint64_t)(strided ? offset + span : elems) * esz;
    if (!bytes) return crec__lw_fail(L, L->entry, CREC_ERR_UNSUPPORTED, "argument %d ('%s') has no elements", (int)i, name);
  }
  crec_argument_options o = CREC_ARGUMENT_OPTIONS_INIT;
  o.dynamic_size = dynamic != 0;
  o.element = crec__lw_element_of(et);
  char memory[32];
  crec_status s = arg_string(L, i, "crec.memory", memory, sizeof memory);
  if (s) return s;
  if (strcmp(memory, "host") == 0) o.memory = CREC_MEMORY_HOST;
  else if (memory[0] && strcmp(memory, "device") != 0)
    return crec__lw_fail(L, L->entry, CREC_ERR_MLIR, "argument %d ('%s'): crec.memory is '%s'; expected \"device\" or \"host\"",
                   (int)i, name, memory);
  MlirAttribute align = arg_attr(L->entry, i, "crec.alignment");
  if (!mlirAttributeIsNull(align)) {
    int64_t a = mlirAttributeIsAInteger(align) ? mlirIntegerAttrGetValueInt(align) : 0;
    if (a <= 0 || a > (1 << 20) || (a & (a - 1)))
      return crec__lw_fail(L, L->entry, CREC_ERR_MLIR, "argument %d ('%s'): crec.alignment must be a power of two", (int)i,
                     name);
    o.alignment = (uint32_t)a;
  }
  crec_buffer h;
  if ((s = crec_program_add_argument(L->p, name, bytes, &o, &h))) return crec__lw_fail_builder(L, L->entry, s);
  uint32_t buf, m;
  if ((s = crec__lw_buf_add(L, h, CREC_BUFFER_ARGUMENT, dynamic != 0, bytes, o.memory == CREC_MEMORY_HOST, name, &buf)))
    return s;
  if ((s = crec__lw_memref_of_buffer(L, L->entry, buf, t, &m))) return s;
  return crec__lw_value_set(L, v, LW_V_PACK(LW_V_MEMREF, m));
}

static crec_status scalar_arg(lw *L, intptr_t i, MlirType t, const char *name, MlirValue v) {
  crec_type type;
  if (mlirTypeIsAIndex(t) || (mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) == 64)) type = CREC_TYPE_I64;
  else if (mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) == 32) type = CREC_TYPE_I32;
  else if (mlirTypeIsAF32(t)) type = CREC_TYPE_F32;
  else if (mlirTypeIsAF64(t)) type = CREC_TYPE_F64;
  else {
    char *ts = crec__lw_type_string(t);
    crec_status s = crec__lw_fail(L, L->entry, CREC_ERR_UNSUPPORTED,
                            "argument %d ('%s') has type %s; scalar arguments are index, i32, i64, f32 or f64",
                            (int)i, name, ts ? ts : "?");
    crec__free(ts);
    return s;
  }
  crec_scalar sc;
  crec_status s = crec_program_add_scalar(L->p, name, type, &sc);
  if (s) return crec__lw_fail_builder(L, L->entry, s);
  if (crec__lw_map_put(&L->scalar_names, name, strlen(name), 1) != CREC_OK) return crec__oom(L->fn);
  uint32_t node;
  if ((s = crec__lw_node_input(L, t, sc, type, name, &node))) return s;
  return crec__lw_value_set(L, v, LW_V_PACK(LW_V_NODE, node));
}

crec_status crec__lw_entry_args(lw *L) {
  MlirAttribute fa = crec__lw_attr(L->entry, "function_type");
  MlirType ft = mlirTypeAttrGetValue(fa);
  if (mlirFunctionTypeGetNumResults(ft) > 0)
    return crec__lw_fail(L, L->entry, CREC_ERR_UNSUPPORTED,
                   "the entry function returns values; write results into argument buffers instead");
  MlirBlock block = mlirRegionGetFirstBlock(mlirOperationGetRegion(L->entry, 0));
  if (mlirBlockIsNull(block)) return CREC_OK; /* a declaration: reported by the caller */
  for (intptr_t i = 0; i < mlirFunctionTypeGetNumInputs(ft); i++) {
    MlirType t = mlirFunctionTypeGetInput(ft, i);
    char name[256];
    crec_status s = arg_string(L, i, "crec.name", name, sizeof name);
    if (s) return s;
    if (!name[0]) snprintf(name, sizeof name, "arg%d", (int)i);
    MlirValue v = mlirBlockGetArgument(block, i);
    if (mlirTypeIsAMemRef(t) || mlirTypeIsAUnrankedMemRef(t)) {
      if (mlirTypeIsAUnrankedMemRef(t))
        return crec__lw_fail(L, L->entry, CREC_ERR_UNSUPPORTED, "argument %d ('%s'): unranked memrefs are not supported",
                       (int)i, name);
      s = memref_arg(L, i, t, name, v);
    } else {
      s = scalar_arg(L, i, t, name, v);
    }
    if (s) return s;
  }
  return CREC_OK;
}

/* ---- kernels, ahead of the walk ---- */

crec_status crec__lw_collect_kernels(lw *L, MlirBlock block) {
  for (MlirOperation op = mlirBlockGetFirstOperation(block); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    crec_status s;
    uint32_t k;
    if (crec__lw_is(op, "gpu.launch_func") && (s = crec__lw_kernel_for_launch(L, op, &k))) return s;
    if (crec__lw_is(op, "crec.custom_call") && (s = crec__lw_custom_call_kernels(L, op))) return s;
    for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); r++)
      for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r)); !mlirBlockIsNull(b);
           b = mlirBlockGetNextInRegion(b))
        if ((s = crec__lw_collect_kernels(L, b))) return s;
  }
  return CREC_OK;
}

/* ---- the walk ---- */

static crec_status tokens(lw *L, MlirOperation op) {
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); i++) {
    MlirValue r = mlirOperationGetResult(op, i);
    if (mlirTypeIsAGPUAsyncTokenType(mlirValueGetType(r)) && crec__lw_value_get(L, r) == LW_NONE) {
      crec_status s = crec__lw_value_set(L, r, LW_V_PACK(LW_V_TOKEN, 0));
      if (s) return s;
    }
  }
  return CREC_OK;
}

static crec_status barrier(lw *L, MlirOperation op, crec_region region) {
  if (mlirOperationGetNumOperands(op) || mlirOperationGetNumResults(op) || mlirOperationGetNumRegions(op))
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "crec.barrier takes no operands, results or regions: \"crec.barrier\"() : () -> ()");
  char name[256];
  crec_command cmd;
  crec_status s = crec_program_add_barrier(L->p, region, crec__lw_command_name(op, name, sizeof name), &cmd);
  if (s) return crec__lw_fail_builder(L, op, s);
  crec__lw_note_command(L);
  return CREC_OK;
}

static MlirWalkResult find_crec_op(MlirOperation op, void *user) {
  if (!crec__lw_op_in(op, "crec.")) return MlirWalkResultAdvance;
  *(MlirOperation *)user = op;
  return MlirWalkResultInterrupt;
}

/* A func.call left after inlining (lower.c): a call to a declaration, or one
 * MLIR's inliner kept. */
static crec_status call_error(lw *L, MlirOperation op) {
  MlirAttribute callee = crec__lw_attr(op, "callee");
  MlirStringRef name = mlirAttributeIsNull(callee) ? mlirStringRefCreateFromCString("?")
                                                    : mlirSymbolRefAttrGetRootReference(callee);
  int len = (int)name.length;
  if (name.length >= 11 && memcmp(name.data, "printMemref", 11) == 0)
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                         "a call to @%.*s here, inside a device loop or branch: host code (the runner utilities' "
                         "prints among it) runs at the top of the entry function only, since CUDA conditional "
                         "bodies hold no host nodes",
                         len, name.data);
  MlirOperation f = crec__lw_lookup_symbol(mlirModuleGetBody(L->module), name.data, name.length);
  MlirBlock body = mlirOperationIsNull(f) ? (MlirBlock){NULL} : mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0));
  if (mlirBlockIsNull(body))
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                         "a call to @%.*s, which the module only declares: crec inlines calls to functions of "
                         "the module with a body, and cannot call code outside it (kernels are gpu.func, library "
                         "calls crec.* ops)",
                         len, name.data);
  MlirOperation crec_op = {NULL};
  mlirOperationWalk(f, find_crec_op, &crec_op, MlirWalkPreOrder);
  if (!mlirOperationIsNull(crec_op)) {
    char where[1100], what[160];
    crec__lw_op_location(L, crec_op, where, sizeof where);
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                         "a call to @%.*s, which MLIR's inliner did not inline: its body holds '%s' (at %s), an "
                         "op without a registered dialect, which MLIR does not move; write it in the entry "
                         "function instead",
                         len, name.data, crec__lw_op_name(crec_op, what, sizeof what), where);
  }
  return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                       "a call to @%.*s, which MLIR's inliner did not inline (a recursive call, or a body with an "
                       "op MLIR cannot inline): the entry function must be one body",
                       len, name.data);
}

static crec_status one_op(lw *L, MlirOperation op, crec_region region) {
  crec_status s;
  if (crec__lw_is(op, "gpu.launch_func")) s = crec__lw_launch(L, op, region);
  else if (crec__lw_is(op, "gpu.memcpy") || crec__lw_is(op, "memref.copy")) s = crec__lw_memcpy(L, op, region);
  else if (crec__lw_is(op, "gpu.memset")) s = crec__lw_memset(L, op, region);
  else if (crec__lw_is(op, "linalg.fill")) s = crec__lw_fill(L, op, region);
  else if (crec__lw_is(op, "linalg.copy")) s = crec__lw_memcpy(L, op, region);
  else if (crec__lw_is(op, "nvgpu.tma.create.descriptor")) s = crec__lw_tma_descriptor(L, op, region);
  else if (crec__lw_is(op, "gpu.wait")) s = CREC_OK; /* ordering comes from buffer hazards */
  /* crec's buffers are device memory kernels reach already: nothing to register */
  else if (crec__lw_is(op, "gpu.host_register") || crec__lw_is(op, "gpu.host_unregister")) s = CREC_OK;
  else if (crec__lw_is(op, "scf.if")) return crec__lw_if(L, op, region);
  else if (crec__lw_is(op, "scf.while")) return crec__lw_while(L, op, region);
  else if (crec__lw_is(op, "scf.index_switch")) return crec__lw_switch(L, op, region);
  else if (crec__lw_is(op, "scf.for")) return crec__lw_for(L, op, region);
  else if (crec__lw_is(op, "crec.barrier")) return barrier(L, op, region);
  else if (crec__lw_is_library_op(op)) return crec__lw_library_op(L, op, region);
  else if (crec__lw_is(op, "memref.load")) return crec__lw_load_op(L, op);
  else if (crec__lw_is_predicate_op(L, op)) return crec__lw_predicate_op(L, op);
  else if (crec__lw_is_host_op(op)) return crec__lw_host_op(L, op);
  else if (crec__lw_is_memref_op(op)) s = crec__lw_memref_op(L, op);
  else if (crec__lw_is(op, "scf.yield")) {
    if (mlirOperationGetNumOperands(op))
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "regions may not yield values (they run on the device)");
    return CREC_OK;
  } else if (crec__lw_is(op, "scf.condition")) {
    return CREC_OK; /* lowered with its scf.while */
  } else if (crec__lw_is(op, "func.return")) {
    if (mlirOperationGetNumOperands(op))
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "the entry returns values; write results into argument buffers");
    return CREC_OK;
  } else if (crec__lw_is_segment_call(op)) {
    return crec__lw_segment_call(L, op, region);
  } else if (crec__lw_is(op, "func.call")) {
    return call_error(L, op);
  } else if (crec__lw_op_in(op, "crec.")) {
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                   "unknown crec op (crec lowers crec.barrier, crec.gemm, crec.fft, crec.cholesky, crec.conv, crec.all_reduce, "
                   "crec.all_gather, crec.reduce_scatter, crec.all_to_all, crec.collective_permute, crec.collective_done, "
                   "crec.replica_id, crec.partition_id, crec.custom_call, crec.infeed and crec.outfeed)");
  } else if (crec__lw_op_in(op, "linalg.")) {
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                   "crec lowers linalg.matmul, linalg.batch_matmul, linalg.fill, linalg.copy and the convolutions "
                   "linalg.conv_{1,2,3}d, conv_1d_nwc_wcf, conv_1d_ncw_fcw, conv_2d_nhwc_hwcf, conv_2d_nhwc_fhwc, "
                   "conv_2d_nchw_fchw, conv_2d_ngchw_gfchw, conv_2d_ngchw_fgchw, conv_3d_ndhwc_dhwcf, "
                   "conv_3d_ncdhw_fcdhw and depthwise_conv_{1,2,3}d_* (not the quantized _q ones) only (a "
                   "transposed or fused product is a \"crec.gemm\" with transpose_a, transpose_b or an epilogue, "
                   "another convolution a \"crec.conv\")");
  } else {
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                   "unsupported op in the entry function (docs/mlir.md lists what crec lowers: gpu.launch_func, "
                   "gpu.memcpy, gpu.memset, memref allocations and views, scf.for/if/while/index_switch, arith and "
                   "index scalar arithmetic, linalg.matmul, linalg.batch_matmul, linalg convolutions and the crec.* "
                   "ops)");
  }
  if (s) return s;
  return tokens(L, op);
}

crec_status crec__lw_block(lw *L, MlirBlock block, crec_region region) {
  for (MlirOperation op = mlirBlockGetFirstOperation(block); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    size_t first = L->p->num_commands;
    crec_status s = one_op(L, op, region);
    if (!s) s = crec__lw_note_ops(L, first, op);
    if (s) return s;
  }
  return CREC_OK;
}

/* ---- ahead of the walk: a while condition ---- */

static bool pure_op(lw *L, MlirOperation op) {
  return crec__lw_is(op, "memref.load") || crec__lw_is_host_op(op) || crec__lw_is_predicate_op(L, op) || crec__lw_is(op, "memref.subview") ||
         crec__lw_is(op, "memref.view") || crec__lw_is(op, "memref.reinterpret_cast") || crec__lw_is(op, "memref.cast") ||
         crec__lw_is(op, "memref.dim") || crec__lw_is(op, "memref.get_global");
}

crec_status crec__lw_eval_early(lw *L, MlirValue v) {
  if (crec__lw_value_get(L, v) != LW_NONE) return CREC_OK;
  if (!mlirValueIsAOpResult(v)) return CREC_OK; /* reported by the caller */
  MlirOperation def = mlirOpResultGetOwner(v);
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(def); i++) {
    crec_status s = crec__lw_eval_early(L, mlirOperationGetOperand(def, i));
    if (s) return s;
  }
  /* operands first: a predicate op is recognized by its loaded operand */
  if (!pure_op(L, def)) return CREC_OK; /* not a condition crec can read; reported by the caller */
  if (crec__lw_is(def, "memref.load")) return crec__lw_load_op(L, def);
  if (crec__lw_is_predicate_op(L, def)) return crec__lw_predicate_op(L, def);
  if (crec__lw_is_host_op(def)) return crec__lw_host_op(L, def);
  return crec__lw_memref_op(L, def);
}
