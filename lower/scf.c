/* Device-side control flow: scf.if, scf.while and scf.index_switch whose
 * condition or index is a memref.load from device memory become if, while and
 * switch commands; their regions are lowered recursively.
 *
 * crec reads the predicate when the command runs (after what came before it,
 * and for a while after each run of the condition region), where MLIR reads it
 * at the memref.load. The two agree when nothing writes the loaded bytes
 * between the load and its use, which is checked here. */
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

static crec_status new_load(lw *L, const lw_load *proto, MlirValue result) {
  if (CREC__RESERVE(L->loads, L->cap_loads, L->num_loads + 1) != CREC_OK) return crec__oom(L->fn);
  uint32_t index = (uint32_t)L->num_loads++;
  L->loads[index] = *proto;
  if (proto->form == LW_LOAD_RAW) L->loads[index].root = index;
  return crec__lw_value_set(L, result, LW_V_PACK(LW_V_LOAD, index));
}

crec_status crec__lw_device_read_error(lw *L, MlirOperation user, uint32_t load) {
  char where[1100];
  crec__lw_op_location(L, L->loads[load].load_op, where, sizeof where);
  return crec__lw_fail(L, user, CREC_ERR_MLIR,
                 "reads a value loaded from device memory (the memref.load at %s): in the entry, device memory may "
                 "only be read as the condition of scf.if or scf.while or the index of scf.index_switch",
                 where);
}

crec_status crec__lw_load_op(lw *L, MlirOperation op) {
  MlirValue res = mlirOperationGetResult(op, 0);
  uint32_t done = crec__lw_value_get(L, res);
  if (done != LW_NONE) {
    /* evaluated ahead of the walk: the load happens here, in program order */
    L->loads[LW_V_INDEX(done)].seq = L->seq;
    return CREC_OK;
  }
  lw_memref *m;
  crec_status s = crec__lw_memref_get(L, op, mlirOperationGetOperand(op, 0), &m);
  if (s || (s = crec__lw_memref_live(L, op, m))) return s;
  int64_t elem = m->offset;
  for (intptr_t i = 1; i < mlirOperationGetNumOperands(op); i++) {
    uint32_t x = crec__lw_value_get(L, mlirOperationGetOperand(op, i));
    int64_t idx;
    if (x == LW_NONE || LW_V_KIND(x) != LW_V_NODE || !crec__lw_node_int(L, LW_V_INDEX(x), &idx))
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                     "index %d is not a constant: a predicate is read at a fixed byte of device memory", (int)i - 1);
    if (idx == 0) continue;
    if (!m->strides[i - 1].is_const)
      return crec__lw_fail(L, op, CREC_ERR_MLIR, "index %d moves along a dynamic stride: the byte offset is dynamic where a static one is needed",
                     (int)i - 1);
    elem += idx * m->strides[i - 1].value;
  }
  lw_load l;
  memset(&l, 0, sizeof l);
  l.load_op = op;
  l.buffer = m->buffer;
  l.offset = m->base + (uint64_t)(elem * (int64_t)m->esz);
  l.esz = crec__lw_element_bytes(mlirValueGetType(res), &l.bits, &l.is_float, &l.is_index);
  if (!l.esz || mlirTypeIsAVector(mlirValueGetType(res)))
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "only scalar loads can be conditions");
  l.form = LW_LOAD_RAW;
  l.seq = L->seq;
  return new_load(L, &l, res);
}

static bool operand_load(lw *L, MlirOperation op, intptr_t i, uint32_t *load) {
  if (i >= mlirOperationGetNumOperands(op)) return false;
  uint32_t x = crec__lw_value_get(L, mlirOperationGetOperand(op, i));
  if (x == LW_NONE || LW_V_KIND(x) != LW_V_LOAD) return false;
  *load = LW_V_INDEX(x);
  return true;
}

bool crec__lw_is_predicate_op(lw *L, MlirOperation op) {
  uint32_t l;
  if (!crec__lw_is(op, "arith.trunci") && !crec__lw_is(op, "arith.cmpi") && !crec__lw_is(op, "arith.index_cast") &&
      !crec__lw_is(op, "arith.index_castui"))
    return false;
  return operand_load(L, op, 0, &l) || operand_load(L, op, 1, &l);
}

crec_status crec__lw_predicate_op(lw *L, MlirOperation op) {
  MlirValue res = mlirOperationGetResult(op, 0);
  if (crec__lw_value_get(L, res) != LW_NONE) return CREC_OK;
  uint32_t li = 0;
  int which = operand_load(L, op, 0, &li) ? 0 : 1;
  if (which == 1 && !operand_load(L, op, 1, &li))
    return crec__lw_fail(L, op, CREC_ERR_INTERNAL, "no loaded operand"); /* crec__lw_is_predicate_op() said there is one */
  lw_load l = L->loads[li];
  if (l.form != LW_LOAD_RAW || l.is_float) return crec__lw_device_read_error(L, op, li);
  if (crec__lw_is(op, "arith.trunci")) {
    MlirType t = mlirValueGetType(res);
    if (!mlirTypeIsAInteger(t) || mlirIntegerTypeGetWidth(t) != 1) return crec__lw_device_read_error(L, op, li);
    l.form = LW_LOAD_TRUNC;
  } else if (crec__lw_is(op, "arith.cmpi")) {
    MlirAttribute pa = crec__lw_attr(op, "predicate");
    uint32_t other = crec__lw_value_get(L, mlirOperationGetOperand(op, 1 - which));
    int64_t c = 1;
    if (mlirAttributeIsNull(pa) || mlirIntegerAttrGetValueInt(pa) != 1 /* ne */ || other == LW_NONE ||
        LW_V_KIND(other) != LW_V_NODE || !crec__lw_node_int(L, LW_V_INDEX(other), &c) || c != 0)
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                     "a loaded condition may only be tested with 'arith.cmpi ne, %%x, 0' (or arith.trunci to i1)");
    l.form = LW_LOAD_NE0;
  } else {
    l.form = LW_LOAD_INDEX;
  }
  return new_load(L, &l, res);
}

/* Fails when a command made after the load wrote the loaded bytes before `user` reads them. */
static crec_status check_unchanged(lw *L, MlirOperation user, const lw_load *l) {
  const lw_load *root = &L->loads[l->root];
  for (size_t i = 0; i < L->num_writes; i++) {
    const lw_write *w = &L->writes[i];
    /* writes name the program's buffer index; loads the front end's (library workspaces shift one from the other) */
    if (w->seq < root->seq || w->buffer != (uint32_t)crec__index(L->bufs[root->buffer].handle.id)) continue;
    if (w->end <= root->offset || w->begin >= root->offset + root->esz) continue;
    char at_load[1100], at_write[1100], wname[128];
    crec__lw_op_location(L, root->load_op, at_load, sizeof at_load);
    crec__lw_op_location(L, w->op, at_write, sizeof at_write);
    crec__lw_op_name(w->op, wname, sizeof wname);
    return crec__lw_fail(L, user, CREC_ERR_UNSUPPORTED,
                   "the condition loaded at %s is overwritten by '%s' at %s before it is used here; crec reads "
                   "the condition when the command runs, so load it after the last write",
                   at_load, wname, at_write);
  }
  return CREC_OK;
}

static crec_status condition(lw *L, MlirOperation user, MlirValue v, bool index, crec_range *r, uint32_t *load) {
  uint32_t x = crec__lw_value_get(L, v);
  const char *what = index ? "the index of scf.index_switch" : "the condition";
  if (x == LW_NONE || LW_V_KIND(x) != LW_V_LOAD)
    return crec__lw_fail(L, user, CREC_ERR_UNSUPPORTED,
                   "%s must be a memref.load from device memory (through arith.trunci, 'arith.cmpi ne, 0' or "
                   "arith.index_cast): crec decides on the device",
                   what);
  const lw_load *l = &L->loads[LW_V_INDEX(x)];
  if (index) {
    bool ok = (l->form == LW_LOAD_INDEX || (l->form == LW_LOAD_RAW && l->is_index)) && (l->esz == 4 || l->esz == 8);
    if (!ok)
      return crec__lw_fail(L, user, CREC_ERR_UNSUPPORTED,
                     "the index must be a loaded i32, i64 or index (crec reads a 32-bit index)");
  } else if (!(l->form == LW_LOAD_NE0 || l->form == LW_LOAD_TRUNC || (l->form == LW_LOAD_RAW && l->bits == 1))) {
    return crec__lw_fail(L, user, CREC_ERR_UNSUPPORTED, "the condition must be a loaded i1, or a loaded integer tested "
                                                  "with 'arith.cmpi ne, 0' or arith.trunci");
  }
  crec_status s = check_unchanged(L, user, l);
  if (s) return s;
  if (!index && (l->esz > 1 || l->form == LW_LOAD_TRUNC) && l->bits > 1) {
    /* exact only for 0 and 1: say so where the user can see it */
    char loc[1100], msg[256];
    crec__lw_op_location(L, user, loc, sizeof loc);
    snprintf(msg, sizeof msg,
             "crec tests the first byte of this loaded i%u: the condition is exact when the value is 0 or 1",
             l->bits);
    crec__lw_emit(L, "warning", loc, msg);
  }
  /* little endian: the first byte (or 4 bytes) of the element */
  *r = crec_range_of(L->bufs[l->buffer].handle, l->offset, index ? 4 : 1);
  *load = LW_V_INDEX(x);
  return CREC_OK;
}

static MlirBlock region_block(MlirOperation op, intptr_t i) {
  return mlirRegionGetFirstBlock(mlirOperationGetRegion(op, i));
}

crec_status crec__lw_if(lw *L, MlirOperation op, crec_region region) {
  if (mlirOperationGetNumResults(op) > 0)
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "scf.if with results is not supported (its branches run on the device)");
  crec_range pred;
  uint32_t load;
  crec_status s = condition(L, op, mlirOperationGetOperand(op, 0), false, &pred, &load);
  if (s) return s;
  char name[256];
  crec_command cmd;
  crec_region then_r, else_r;
  if ((s = crec_program_add_if(L->p, region, crec__lw_command_name(op, name, sizeof name), pred, &cmd, &then_r, &else_r)))
    return crec__lw_fail_builder(L, op, s);
  crec__lw_note_command(L);
  if ((s = crec__lw_block(L, region_block(op, 0), then_r))) return s;
  MlirBlock eb = region_block(op, 1);
  if (!mlirBlockIsNull(eb) && (s = crec__lw_block(L, eb, else_r))) return s;
  return CREC_OK;
}

/* Reads a positive integer attribute of at most 64 bits, signed, unsigned or
 * signless, without asking MLIR for a value its type cannot give. */
static bool loop_limit_of(MlirAttribute a, uint64_t *out) {
  if (!mlirAttributeIsAInteger(a)) return false;
  MlirType t = mlirAttributeGetType(a);
  if (!mlirTypeIsAInteger(t) || mlirIntegerTypeGetWidth(t) > 64) return false;
  if (mlirIntegerTypeIsUnsigned(t)) {
    *out = mlirIntegerAttrGetValueUInt(a);
  } else {
    int64_t v = mlirIntegerTypeIsSigned(t) ? mlirIntegerAttrGetValueSInt(a) : mlirIntegerAttrGetValueInt(a);
    *out = v > 0 ? (uint64_t)v : 0;
  }
  return *out > 0;
}

crec_status crec__lw_while(lw *L, MlirOperation op, crec_region region) {
  if (mlirOperationGetNumOperands(op) > 0 || mlirOperationGetNumResults(op) > 0)
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                   "scf.while with loop-carried values is not supported (the loop runs on the device; keep its "
                   "state in device memory)");
  MlirBlock before = region_block(op, 0), after = region_block(op, 1);
  MlirOperation term = mlirBlockGetTerminator(before);
  if (mlirOperationIsNull(term) || !crec__lw_is(term, "scf.condition"))
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "the 'before' region does not end with scf.condition");
  if (mlirOperationGetNumOperands(term) != 1)
    return crec__lw_fail(L, term, CREC_ERR_UNSUPPORTED, "scf.condition may not forward values (the loop has no loop-carried values)");
  MlirValue cond = mlirOperationGetOperand(term, 0);
  /* the predicate's location is needed before the condition region is lowered */
  crec_status s = crec__lw_eval_early(L, cond);
  if (s) return s;
  uint32_t x = crec__lw_value_get(L, cond);
  if (x == LW_NONE || LW_V_KIND(x) != LW_V_LOAD)
    return crec__lw_fail(L, term, CREC_ERR_UNSUPPORTED,
                   "the condition must be a memref.load from device memory (through arith.trunci or "
                   "'arith.cmpi ne, 0'), loaded in the 'before' region");
  const lw_load *root = &L->loads[L->loads[LW_V_INDEX(x)].root];
  if (!mlirBlockEqual(mlirOperationGetBlock(root->load_op), before))
    return crec__lw_fail(L, term, CREC_ERR_UNSUPPORTED,
                   "the condition must be loaded inside the 'before' region: crec reads it again after each run "
                   "of that region, where MLIR would reuse a value loaded once");
  lw_load l = L->loads[LW_V_INDEX(x)];
  crec_range pred = crec_range_of(L->bufs[l.buffer].handle, l.offset, 1);
  if (!(l.form == LW_LOAD_NE0 || l.form == LW_LOAD_TRUNC || (l.form == LW_LOAD_RAW && l.bits == 1)))
    return crec__lw_fail(L, term, CREC_ERR_UNSUPPORTED, "the condition must be a loaded i1, or a loaded integer tested "
                                                  "with 'arith.cmpi ne, 0' or arith.trunci");
  char name[256];
  crec_command cmd;
  crec_region cond_r, body_r;
  /* {crec.max_iterations = N} bounds the loop (crec_program_set_loop_limit) */
  MlirAttribute lim = crec__lw_attr(op, "crec.max_iterations");
  uint64_t limit = 0;
  if (!mlirAttributeIsNull(lim) && !loop_limit_of(lim, &limit))
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "crec.max_iterations must be a positive integer attribute of at most 64 "
                                               "bits (e.g. {crec.max_iterations = 1000 : i64})");
  if ((s = crec_program_add_while(L->p, region, crec__lw_command_name(op, name, sizeof name), pred, &cmd, &cond_r, &body_r)))
    return crec__lw_fail_builder(L, op, s);
  if (limit && (s = crec_program_set_loop_limit(L->p, cmd, limit)))
    return crec__lw_fail_builder(L, op, s);
  crec__lw_note_command(L);
  if ((s = crec__lw_block(L, before, cond_r))) return s;
  uint32_t load;
  if ((s = condition(L, term, cond, false, &pred, &load))) return s;
  return crec__lw_block(L, after, body_r);
}

crec_status crec__lw_switch(lw *L, MlirOperation op, crec_region region) {
  if (mlirOperationGetNumResults(op) > 0)
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                   "scf.index_switch with results is not supported (its branches run on the device)");
  crec_range index;
  uint32_t load;
  crec_status s = condition(L, op, mlirOperationGetOperand(op, 0), true, &index, &load);
  if (s) return s;
  MlirAttribute cases = crec__lw_attr(op, "cases");
  intptr_t nc = mlirAttributeIsNull(cases) ? 0 : mlirDenseArrayGetNumElements(cases);
  size_t n = (size_t)nc + 1;
  int32_t *values = crec__calloc(n, sizeof *values);
  crec_region *branches = crec__calloc(n, sizeof *branches);
  if (!values || !branches) {
    s = crec__oom(L->fn);
    goto done;
  }
  for (intptr_t i = 0; i < nc; i++) {
    int64_t v = mlirDenseI64ArrayGetElement(cases, i);
    if (v < INT32_MIN || v > INT32_MAX) {
      s = crec__lw_fail(L, op, CREC_ERR_OUT_OF_RANGE, "case value %lld does not fit the 32-bit index crec reads", (long long)v);
      goto done;
    }
    values[i] = (int32_t)v;
  }
  char name[256];
  crec_command cmd;
  if ((s = crec_program_add_switch(L->p, region, crec__lw_command_name(op, name, sizeof name), index, n, values, &cmd,
                                   branches))) {
    s = crec__lw_fail_builder(L, op, s);
    goto done;
  }
  crec__lw_note_command(L);
  /* case regions follow the default region; crec's default is the last branch */
  for (intptr_t i = 0; i < nc; i++)
    if ((s = crec__lw_block(L, region_block(op, 1 + i), branches[i]))) goto done;
  s = crec__lw_block(L, region_block(op, 0), branches[n - 1]);
done:
  crec__free(values);
  crec__free(branches);
  return s;
}

/* ---- scf.for ---- */

/* The counter of an scf.for made into a while command: the while's condition
 * region runs this kernel, which counts the iterations in device memory (an i64
 * that a memset zeroes before the loop) and writes the predicate byte. */
static const char for_module[] =
    "module attributes {gpu.container_module} {\n"
    "  gpu.module @crec_for {\n"
    "    gpu.func @crec_for_step(%counter: memref<i64>, %more: memref<i8>, %trips: i64) kernel {\n"
    "      %c = memref.load %counter[] : memref<i64>\n"
    "      %go = arith.cmpi slt, %c, %trips : i64\n"
    "      %one = arith.constant 1 : i64\n"
    "      %inc = arith.addi %c, %one : i64\n"
    "      %next = arith.select %go, %inc, %c : i64\n"
    "      memref.store %next, %counter[] : memref<i64>\n"
    "      %flag = arith.extui %go : i1 to i8\n"
    "      memref.store %flag, %more[] : memref<i8>\n"
    "      gpu.return\n"
    "    }\n"
    "  }\n"
    "}\n";

/* Compiles the counter kernel into the program once per lowering. */
static crec_status for_kernel(lw *L, MlirOperation at) {
  if (L->for_step.id) return CREC_OK;
  L->internal = true;
  crec__free(L->first_error);
  L->first_error = NULL;
  MlirModule m = mlirModuleCreateParse(L->ctx, mlirStringRefCreateFromCString(for_module));
  char *ptx = NULL;
  size_t size = 0;
  crec_status s = mlirModuleIsNull(m) ? CREC_ERR_INTERNAL
                                      : crec__lw_compile_module(L, mlirBlockGetFirstOperation(mlirModuleGetBody(m)), true,
                                                                false, &ptx, &size);
  L->internal = false;
  if (!mlirModuleIsNull(m)) mlirModuleDestroy(m);
  if (s) {
    char inner[1500];
    snprintf(inner, sizeof inner, "%s", mlirModuleIsNull(m) ? "it does not parse" : crec_last_error());
    crec__free(ptx);
    return crec__lw_fail(L, at, s, "the loop counter kernel crec makes for scf.for did not compile: %s", inner);
  }
  crec_module mod;
  s = crec_program_add_module(L->p, "crec_for", CREC_IMAGE_PTX, ptx, size, &mod);
  crec__free(ptx);
  if (!s) s = crec_program_add_kernel(L->p, mod, "crec_for_step", NULL, &L->for_step);
  return s ? crec__lw_fail_builder(L, at, s) : CREC_OK;
}

/* A constant bound of an scf.for (operand i), or an error naming what it is instead. */
static crec_status for_bound(lw *L, MlirOperation op, intptr_t i, int64_t *out) {
  static const char *const names[3] = {"lower bound", "upper bound", "step"};
  uint32_t x = crec__lw_value_get(L, mlirOperationGetOperand(op, i));
  if (x != LW_NONE && LW_V_KIND(x) == LW_V_NODE && crec__lw_node_int(L, LW_V_INDEX(x), out)) return CREC_OK;
  const char *what = x == LW_NONE                 ? "not a value crec knows on the host"
                     : LW_V_KIND(x) == LW_V_LOAD ? "a value loaded from device memory"
                     : LW_V_KIND(x) == LW_V_NODE ? "computed when the program runs (from a bound scalar or a size)"
                                                 : "not a scalar";
  /* (bounds from host scalars take for_bound_node's path: only a step reaches here with one) */
  return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                       "scf.for in the entry function is not lowered yet with a trip count unknown at lowering: its "
                       "%s is %s; crec lowers an scf.for whose step is a constant and whose bounds are constants "
                       "or host scalars (bound scalars, sizes, arithmetic on them); a loop whose end a kernel decides "
                       "is an scf.while with a device condition",
                       names[i], what);
}

/* A bound of scf.for that is computed when the program runs (from a bound
 * scalar or a size): its node in `*node`, else LW_NONE (then `*value` holds the
 * constant, or the error is set as for_bound's). */
static crec_status for_bound_node(lw *L, MlirOperation op, intptr_t i, int64_t *value, uint32_t *node) {
  *node = LW_NONE;
  uint32_t x = crec__lw_value_get(L, mlirOperationGetOperand(op, i));
  if (x != LW_NONE && LW_V_KIND(x) == LW_V_NODE && !crec__lw_node_int(L, LW_V_INDEX(x), value)) {
    *node = LW_V_INDEX(x);
    return CREC_OK;
  }
  return for_bound(L, op, i, value);
}

/* The trip count of scf.for when a bound is known only when the program runs:
 * max(ceildiv(ub - lb, step), 0) as an i64 derived scalar, computed on the host
 * before each execution. */
static crec_status runtime_trips(lw *L, MlirOperation op, int64_t lb, uint32_t nlb, int64_t ub, uint32_t nub,
                                 int64_t step, crec_scalar *out) {
  MlirType t = mlirValueGetType(mlirOperationGetOperand(op, 0));
  char type[16];
  bool index = mlirTypeIsAIndex(t);
  unsigned bits = index ? 64 : mlirIntegerTypeGetWidth(t);
  if (!index && (!mlirTypeIsAInteger(t) || bits > 64))
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "scf.for over a %u-bit integer", bits);
  snprintf(type, sizeof type, index ? "index" : "i%u", bits);
  crec_status s = CREC_OK;
  uint32_t a[2], d, q, z, m, k;
  if (nlb == LW_NONE && (s = crec__lw_node_const_int(L, t, lb, &nlb))) return s;
  if (nub == LW_NONE && (s = crec__lw_node_const_int(L, t, ub, &nub))) return s;
  a[0] = nub, a[1] = nlb;
  if ((s = crec__lw_node_synth(L, "arith.subi", "", type, a, 2, &d))) return s;
  if ((s = crec__lw_node_const_int(L, t, step, &k))) return s;
  a[0] = d, a[1] = k;
  if ((s = crec__lw_node_synth(L, "arith.ceildivsi", "", type, a, 2, &q))) return s;
  if ((s = crec__lw_node_const_int(L, t, 0, &z))) return s;
  a[0] = q, a[1] = z;
  if ((s = crec__lw_node_synth(L, "arith.maxsi", "", type, a, 2, &m))) return s;
  if (index || bits < 64) {
    uint32_t w;
    if ((s = crec__lw_node_synth(L, index ? "arith.index_cast" : "arith.extsi", "", "i64", &m, 1, &w))) return s;
    m = w;
  }
  return crec__lw_node_scalar(L, op, m, out);
}

/* Whether the block holds an op that makes commands (anything else in a loop
 * body is host arithmetic or views, which need no loop at run time). */
static MlirWalkResult find_command(MlirOperation op, void *user) {
  static const char *const names[] = {"gpu.launch_func", "gpu.memcpy", "gpu.memset", "memref.copy", "scf.while",
                                      "scf.if", "scf.index_switch", NULL};
  bool hit = crec__lw_op_in(op, "crec.") || crec__lw_op_in(op, "linalg.");
  for (const char *const *n = names; *n && !hit; n++) hit = crec__lw_is(op, *n);
  if (!hit) return MlirWalkResultAdvance;
  *(bool *)user = true;
  return MlirWalkResultInterrupt;
}

static bool makes_commands(MlirBlock b) {
  bool found = false;
  for (MlirOperation op = mlirBlockGetFirstOperation(b); !found && !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    mlirOperationWalk(op, find_command, &found, MlirWalkPreOrder);
  return found;
}

/* Forgets what the previous copy of an unrolled body made of its values, so the
 * next copy lowers them again (the handlers skip values they already know).
 * Known values are replaced in place, which allocates nothing. */
static MlirWalkResult forget(MlirOperation op, void *user) {
  lw *L = user;
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); i++) {
    MlirValue v = mlirOperationGetResult(op, i);
    if (crec__lw_value_get(L, v) != LW_NONE) (void)crec__lw_value_set(L, v, LW_NONE);
  }
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); r++)
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r)); !mlirBlockIsNull(b);
         b = mlirBlockGetNextInRegion(b))
      for (intptr_t i = 0; i < mlirBlockGetNumArguments(b); i++) {
        MlirValue v = mlirBlockGetArgument(b, i);
        if (crec__lw_value_get(L, v) != LW_NONE) (void)crec__lw_value_set(L, v, LW_NONE);
      }
  return MlirWalkResultAdvance;
}

/* Lowers the body once with the induction variable the constant `value`. */
static crec_status for_copy(lw *L, MlirBlock body, crec_region region, int64_t value) {
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    mlirOperationWalk(op, forget, L, MlirWalkPreOrder);
  MlirValue iv = mlirBlockGetArgument(body, 0);
  uint32_t n;
  crec_status s = crec__lw_node_const_int(L, mlirValueGetType(iv), value, &n);
  if (s || (s = crec__lw_value_set(L, iv, LW_V_PACK(LW_V_NODE, n)))) return s;
  return crec__lw_block(L, body, region);
}

static crec_status for_runtime(lw *L, MlirOperation op, crec_region region, int64_t lb, uint32_t nlb, int64_t ub,
                               uint32_t nub, int64_t step);
static crec_status device_for(lw *L, MlirOperation op, crec_region region, crec_arg trips);

crec_status crec__lw_for(lw *L, MlirOperation op, crec_region region) {
  if (mlirOperationGetNumResults(op) > 0)
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                         "scf.for with loop-carried values (iter_args) is not supported (the loop runs on the device; "
                         "keep its state in device memory)");
  int64_t lb = 0, ub = 0, step;
  uint32_t nlb, nub;
  crec_status s;
  if ((s = for_bound_node(L, op, 0, &lb, &nlb)) || (s = for_bound_node(L, op, 1, &ub, &nub)) ||
      (s = for_bound(L, op, 2, &step)))
    return s;
  if (step <= 0)
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "the step is %lld: scf.for needs a positive step", (long long)step);
  if (nlb != LW_NONE || nub != LW_NONE) return for_runtime(L, op, region, lb, nlb, ub, nub, step);
  uint64_t trips = 0;
  if (ub > lb) {
    uint64_t span = (uint64_t)ub - (uint64_t)lb; /* exact: ub > lb, both within int64 */
    trips = span / (uint64_t)step + (span % (uint64_t)step != 0);
  }
  if (trips > (uint64_t)INT64_MAX)
    return crec__lw_fail(L, op, CREC_ERR_OUT_OF_RANGE, "%llu iterations are more than the counter's 2^63 - 1",
                         (unsigned long long)trips);
  MlirBlock body = region_block(op, 0);
  MlirValue iv = mlirBlockGetArgument(body, 0);
  if (trips == 0) return CREC_OK;
  bool uses_iv = !mlirOpOperandIsNull(mlirValueGetFirstUse(iv));
  if (trips == 1 || !makes_commands(body)) return for_copy(L, body, region, lb);
  if (uses_iv) {
    /* the body needs the index as a host constant: one copy per iteration */
    uint64_t outer = L->unroll ? L->unroll : 1;
    if (trips > LW_MAX_UNROLL || outer * trips > LW_MAX_UNROLL)
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                           "the body uses the induction variable, so crec unrolls the loop, and its %llu iterations%s "
                           "make more than the %d copies of a body crec unrolls; keep the index in device memory "
                           "instead (a body that does not use the induction variable becomes a device loop of any "
                           "length)",
                           (unsigned long long)trips, outer > 1 ? " (inside unrolled loops)" : "", LW_MAX_UNROLL);
    L->unroll = outer * trips;
    for (uint64_t k = 0; k < trips && !s; k++) s = for_copy(L, body, region, lb + (int64_t)(k * (uint64_t)step));
    L->unroll = outer == 1 ? 0 : outer;
    return s;
  }
  return device_for(L, op, region, crec_arg_i64((int64_t)trips));
}

/* An scf.for whose trip count is known when the program runs: a device loop
 * whose count is a derived scalar. Its body may not use the induction variable
 * (crec would have to unroll it, and cannot for a count it does not know). */
static crec_status for_runtime(lw *L, MlirOperation op, crec_region region, int64_t lb, uint32_t nlb, int64_t ub,
                               uint32_t nub, int64_t step) {
  MlirBlock body = region_block(op, 0);
  if (!mlirOpOperandIsNull(mlirValueGetFirstUse(mlirBlockGetArgument(body, 0))))
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                         "scf.for whose trip count is known only when the program runs (from a bound scalar or a "
                         "size), and whose body uses the induction variable: crec unrolls such bodies, which needs "
                         "a constant trip count; keep the index in device memory instead");
  if (!makes_commands(body)) return crec__lw_block(L, body, region);
  crec_scalar trips;
  crec_status s = runtime_trips(L, op, lb, nlb, ub, nub, step, &trips);
  return s ? s : device_for(L, op, region, crec_arg_scalar(trips));
}

/* A device loop: zero the counter, then while (counter++ < trips) body. */
static crec_status device_for(lw *L, MlirOperation op, crec_region region, crec_arg trips) {
  MlirBlock body = region_block(op, 0);
  crec_status s;
  if ((s = for_kernel(L, op))) return s;
  char name[256], temp[300], start[300], stepname[300];
  if (!crec__lw_command_name(op, name, sizeof name)) snprintf(name, sizeof name, "for%u", L->num_fors);
  L->num_fors++;
  snprintf(temp, sizeof temp, "%s.counter", name);
  snprintf(start, sizeof start, "%s.start", name);
  snprintf(stepname, sizeof stepname, "%s.step", name);
  crec_buffer h;
  uint32_t buf;
  if ((s = crec_program_add_temporary(L->p, temp, 16, &h))) return crec__lw_fail_builder(L, op, s);
  if ((s = crec__lw_buf_add(L, h, CREC_BUFFER_TEMPORARY, false, 16, false, temp, &buf))) return s;
  crec_range counter = crec_range_of(h, 0, 8), more = crec_range_of(h, 8, 1);
  crec_command cmd;
  if ((s = crec_program_add_memset(L->p, region, start, counter, 0, 4, &cmd))) return crec__lw_fail_builder(L, op, s);
  if ((s = crec__lw_note_write(L, op, counter))) return s;
  crec__lw_note_command(L);
  crec_region cond_r, body_r;
  if ((s = crec_program_add_while(L->p, region, name, more, &cmd, &cond_r, &body_r)) ||
      (s = crec_program_set_loop_limit(L->p, cmd, CREC_LOOP_UNLIMITED))) /* the counter ends it */
    return crec__lw_fail_builder(L, op, s);
  crec__lw_note_command(L);
  crec_arg args[3] = {crec_arg_buffer(counter, CREC_ACCESS_READ_WRITE), crec_arg_buffer(more, CREC_ACCESS_WRITE),
                      trips};
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = L->for_step;
  l.grid[0] = l.grid[1] = l.grid[2] = crec_dim_of(1);
  l.block[0] = l.block[1] = l.block[2] = crec_dim_of(1);
  l.args = args;
  l.num_args = 3;
  if ((s = crec_program_add_launch(L->p, cond_r, stepname, &l, &cmd))) return crec__lw_fail_builder(L, op, s);
  if ((s = crec__lw_note_write(L, op, counter)) || (s = crec__lw_note_write(L, op, more))) return s;
  crec__lw_note_command(L);
  return crec__lw_block(L, body, body_r);
}
