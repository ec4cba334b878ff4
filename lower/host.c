/* Host scalar arithmetic of the entry: arith/index ops over scalar arguments
 * become an expression DAG (constants folded, equal expressions shared). The
 * nodes commands use become derived scalars, all computed by one host function
 * that is generated as MLIR, lowered to the LLVM dialect and compiled to native
 * code with the MLIR execution engine (LLVM ORC). Divisions are guarded: a zero
 * divisor or a signed overflow makes the host function fail instead of trapping. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/ExecutionEngine.h>

#include "lower_internal.h"

/* ---- integer helpers ---- */

static int64_t sext(int64_t v, uint32_t bits) {
  if (bits >= 64) return v;
  uint64_t m = 1ull << (bits - 1);
  uint64_t x = (uint64_t)v & ((1ull << bits) - 1);
  return (int64_t)((x ^ m) - m);
}
static uint64_t zext(int64_t v, uint32_t bits) {
  return bits >= 64 ? (uint64_t)v : (uint64_t)v & ((1ull << bits) - 1);
}
static int64_t smin(uint32_t bits) { return bits >= 64 ? INT64_MIN : -(int64_t)(1ull << (bits - 1)); }

/* ---- interning ---- */

static crec_status new_node(lw *L, const char *key, size_t keylen, lw_node *proto, uint32_t *out) {
  uint32_t found = crec__lw_map_get(&L->node_keys, key, keylen);
  if (found != LW_NONE) {
    crec__free(proto->type);
    crec__free(proto->fbits);
    crec__free(proto->opname);
    crec__free(proto->attrs);
    crec__free(proto->label);
    *out = found;
    return CREC_OK;
  }
  if (CREC__RESERVE(L->nodes, L->cap_nodes, L->num_nodes + 1) != CREC_OK ||
      crec__lw_map_put(&L->node_keys, key, keylen, (uint32_t)L->num_nodes) != CREC_OK) {
    crec__free(proto->type);
    crec__free(proto->fbits);
    crec__free(proto->opname);
    crec__free(proto->attrs);
    crec__free(proto->label);
    return crec__oom(L->fn);
  }
  *out = (uint32_t)L->num_nodes;
  L->nodes[L->num_nodes++] = *proto;
  return CREC_OK;
}

static crec_status type_info(lw *L, MlirType type, lw_node *n) {
  uint32_t bits = 0;
  bool is_float = false, is_index = false;
  if (mlirTypeIsAVector(type) || !crec__lw_element_bytes(type, &bits, &is_float, &is_index)) {
    n->type = NULL;
    return CREC_ERR_UNSUPPORTED;
  }
  n->bits = bits;
  n->is_float = is_float;
  n->is_index = is_index;
  n->type = crec__lw_type_string(type);
  return n->type ? CREC_OK : crec__oom(L->fn);
}

static char *label_int(int64_t v) {
  char b[32];
  snprintf(b, sizeof b, "%" PRId64, v);
  return crec__strdup(b);
}

crec_status crec__lw_node_const_int(lw *L, MlirType type, int64_t value, uint32_t *out) {
  lw_node n = {0};
  n.kind = LW_NODE_CONST;
  crec_status s = type_info(L, type, &n);
  if (s) return s;
  n.ival = n.is_float ? 0 : sext(value, n.bits);
  n.label = label_int(n.ival);
  char key[128];
  int len = snprintf(key, sizeof key, "c|%s|%" PRId64, n.type, n.ival);
  return new_node(L, key, (size_t)len, &n, out);
}

crec_status crec__lw_node_const_float(lw *L, MlirType type, MlirAttribute attr, uint32_t *out) {
  lw_node n = {0};
  n.kind = LW_NODE_CONST;
  crec_status s = type_info(L, type, &n);
  if (s) return s;
  n.fval = mlirFloatAttrGetValueDouble(attr);
  /* MLIR prints floats so that they parse back to the same bits */
  n.fbits = crec__lw_attr_string(attr);
  char b[64];
  snprintf(b, sizeof b, "%g", n.fval);
  n.label = crec__strdup(b);
  if (!n.fbits || !n.label) {
    crec__free(n.type);
    crec__free(n.fbits);
    crec__free(n.label);
    return crec__oom(L->fn);
  }
  crec__text key = {0};
  crec__text_printf(&key, "f|%s", n.fbits);
  if (key.failed) {
    crec__free(key.data);
    crec__free(n.type);
    crec__free(n.fbits);
    crec__free(n.label);
    return crec__oom(L->fn);
  }
  s = new_node(L, key.data, key.len, &n, out);
  crec__free(key.data);
  return s;
}

crec_status crec__lw_node_input(lw *L, MlirType type, crec_scalar scalar, crec_type stype, const char *label,
                          uint32_t *out) {
  lw_node n = {0};
  n.kind = LW_NODE_INPUT;
  crec_status s = type_info(L, type, &n);
  if (s) return s;
  n.input = scalar;
  n.input_type = stype;
  n.label = crec__strdup(label);
  if (!n.label) {
    crec__free(n.type);
    return crec__oom(L->fn);
  }
  char key[64];
  int len = snprintf(key, sizeof key, "i|%u", scalar.id);
  return new_node(L, key, (size_t)len, &n, out);
}

static char *make_label(lw *L, const char *opname, const uint32_t *ops, uint32_t n) {
  const char *dot = strchr(opname, '.');
  const char *shortname = dot ? dot + 1 : opname;
  crec__text t = {0};
  crec__text_printf(&t, "%s(", shortname);
  for (uint32_t i = 0; i < n; i++) {
    const char *l = L->nodes[ops[i]].label;
    if (!l) {
      crec__free(t.data);
      return NULL;
    }
    crec__text_printf(&t, "%s%s", i ? ", " : "", l);
  }
  crec__text_puts(&t, ")");
  if (t.failed || t.len > 60) {
    crec__free(t.data);
    return NULL;
  }
  return t.data;
}

/* Interns an op node with an already printed result type. */
static crec_status op_node(lw *L, const char *opname, const char *attrs, char *type, uint32_t bits,
                           bool is_float, bool is_index, const uint32_t *operands, uint32_t n,
                           char *label, uint32_t *out) {
  lw_node node = {0};
  node.kind = LW_NODE_OP;
  node.type = type;
  node.bits = bits;
  node.is_float = is_float;
  node.is_index = is_index;
  node.opname = crec__strdup(opname);
  node.attrs = crec__strdup(attrs);
  node.label = label;
  node.num_operands = n;
  for (uint32_t i = 0; i < n; i++) node.operands[i] = operands[i];
  crec__text key = {0};
  crec__text_printf(&key, "o|%s|%s|%s", opname, attrs, type);
  for (uint32_t i = 0; i < n; i++) crec__text_printf(&key, "|%u", operands[i]);
  if (!node.opname || !node.attrs || key.failed) {
    crec__free(key.data);
    crec__free(node.type);
    crec__free(node.opname);
    crec__free(node.attrs);
    crec__free(node.label);
    return crec__oom(L->fn);
  }
  crec_status s = new_node(L, key.data, key.len, &node, out);
  crec__free(key.data);
  return s;
}

crec_status crec__lw_node_synth(lw *L, const char *opname, const char *attrs, const char *type,
                          const uint32_t *operands, uint32_t n, uint32_t *out) {
  char *t = crec__strdup(type);
  if (!t) return crec__oom(L->fn);
  bool is_index = strcmp(type, "index") == 0;
  uint32_t bits = is_index ? 64 : (uint32_t)strtoul(type + 1, NULL, 10);
  return op_node(L, opname, attrs, t, bits, type[0] == 'f', is_index, operands, n, make_label(L, opname, operands, n),
                 out);
}

bool crec__lw_node_int(const lw *L, uint32_t n, int64_t *value) {
  const lw_node *node = &L->nodes[n];
  if (node->kind != LW_NODE_CONST || node->is_float) return false;
  *value = node->ival;
  return true;
}

/* ---- host ops ---- */

typedef enum fold_kind {
  F_NONE, F_ADD, F_SUB, F_MUL, F_DIVS, F_DIVU, F_REMS, F_REMU, F_CEILS, F_CEILU, F_FLOORS,
  F_MAXS, F_MAXU, F_MINS, F_MINU, F_AND, F_OR, F_XOR, F_SHL, F_SHRS, F_SHRU,
  F_SEXT, F_ZEXT, F_TRUNC, F_CMPI, F_SELECT
} fold_kind;

typedef struct host_op {
  const char *name;
  fold_kind fold;
  uint8_t div;  /* 1: division (zero guard), 2: signed division (also MIN / -1) */
} host_op;

static const host_op host_ops[] = {
  {"arith.addi", F_ADD, 0}, {"arith.subi", F_SUB, 0}, {"arith.muli", F_MUL, 0},
  {"arith.divsi", F_DIVS, 2}, {"arith.divui", F_DIVU, 1}, {"arith.remsi", F_REMS, 2},
  {"arith.remui", F_REMU, 1}, {"arith.ceildivsi", F_CEILS, 2}, {"arith.ceildivui", F_CEILU, 1},
  {"arith.floordivsi", F_FLOORS, 2}, {"arith.maxsi", F_MAXS, 0}, {"arith.maxui", F_MAXU, 0},
  {"arith.minsi", F_MINS, 0}, {"arith.minui", F_MINU, 0}, {"arith.andi", F_AND, 0},
  {"arith.ori", F_OR, 0}, {"arith.xori", F_XOR, 0}, {"arith.shli", F_SHL, 0},
  {"arith.shrsi", F_SHRS, 0}, {"arith.shrui", F_SHRU, 0}, {"arith.extsi", F_SEXT, 0},
  {"arith.extui", F_ZEXT, 0}, {"arith.trunci", F_TRUNC, 0}, {"arith.index_cast", F_SEXT, 0},
  {"arith.index_castui", F_ZEXT, 0}, {"arith.cmpi", F_CMPI, 0}, {"arith.select", F_SELECT, 0},
  {"arith.addf", F_NONE, 0}, {"arith.subf", F_NONE, 0}, {"arith.mulf", F_NONE, 0},
  {"arith.divf", F_NONE, 0}, {"arith.remf", F_NONE, 0}, {"arith.negf", F_NONE, 0},
  {"arith.maximumf", F_NONE, 0}, {"arith.minimumf", F_NONE, 0}, {"arith.maxnumf", F_NONE, 0},
  {"arith.minnumf", F_NONE, 0}, {"arith.sitofp", F_NONE, 0}, {"arith.uitofp", F_NONE, 0},
  {"arith.fptosi", F_NONE, 0}, {"arith.fptoui", F_NONE, 0}, {"arith.extf", F_NONE, 0},
  {"arith.truncf", F_NONE, 0}, {"arith.cmpf", F_NONE, 0}, {"arith.bitcast", F_NONE, 0},
  {"index.add", F_ADD, 0}, {"index.sub", F_SUB, 0}, {"index.mul", F_MUL, 0},
  {"index.divs", F_DIVS, 2}, {"index.divu", F_DIVU, 1}, {"index.rems", F_REMS, 2},
  {"index.remu", F_REMU, 1}, {"index.ceildivs", F_CEILS, 2}, {"index.ceildivu", F_CEILU, 1},
  {"index.floordivs", F_FLOORS, 2}, {"index.maxs", F_MAXS, 0}, {"index.maxu", F_MAXU, 0},
  {"index.mins", F_MINS, 0}, {"index.minu", F_MINU, 0}, {"index.and", F_AND, 0},
  {"index.or", F_OR, 0}, {"index.xor", F_XOR, 0}, {"index.shl", F_SHL, 0},
  {"index.shrs", F_SHRS, 0}, {"index.shru", F_SHRU, 0}, {"index.casts", F_SEXT, 0},
  {"index.castu", F_ZEXT, 0}, {"index.cmp", F_NONE, 0},
};

static const host_op *find_host_op(MlirOperation op) {
  for (size_t i = 0; i < sizeof host_ops / sizeof host_ops[0]; i++)
    if (crec__lw_is(op, host_ops[i].name)) return &host_ops[i];
  return NULL;
}

bool crec__lw_is_host_op(MlirOperation op) {
  return find_host_op(op) || crec__lw_is(op, "arith.constant") || crec__lw_is(op, "index.constant") ||
         crec__lw_is(op, "index.bool.constant") || crec__lw_is(op, "index.sizeof");
}

/* Folds an integer op over constants. Returns 1 folded, 0 not foldable, -1 error (reported). */
static int fold(lw *L, MlirOperation op, fold_kind k, const int64_t *v, const lw_node *a,
                uint32_t rbits, int64_t *r) {
  uint32_t b = a->bits;
  uint64_t ua = zext(v[0], b), ub = k == F_SEXT || k == F_ZEXT || k == F_TRUNC ? 0 : zext(v[1], b);
  int64_t sa = v[0], sb = v[1];
  switch (k) {
    case F_ADD: *r = (int64_t)(ua + ub); break;
    case F_SUB: *r = (int64_t)(ua - ub); break;
    case F_MUL: *r = (int64_t)(ua * ub); break;
    case F_DIVS: case F_REMS: case F_CEILS: case F_FLOORS:
      if (sb == 0) return crec__lw_fail(L, op, CREC_ERR_MLIR, "division by zero"), -1;
      if (sa == smin(b) && sb == -1) return crec__lw_fail(L, op, CREC_ERR_MLIR, "signed division overflows"), -1;
      if (k == F_DIVS) *r = sa / sb;
      else if (k == F_REMS) *r = sa % sb;
      else {
        int64_t q = sa / sb, rem = sa % sb;
        if (k == F_CEILS && rem != 0 && ((rem > 0) == (sb > 0))) q++;
        if (k == F_FLOORS && rem != 0 && ((rem < 0) != (sb < 0))) q--;
        *r = q;
      }
      break;
    case F_DIVU: case F_REMU: case F_CEILU:
      if (ub == 0) return crec__lw_fail(L, op, CREC_ERR_MLIR, "division by zero"), -1;
      *r = (int64_t)(k == F_DIVU ? ua / ub : k == F_REMU ? ua % ub : ua / ub + (ua % ub != 0));
      break;
    case F_MAXS: *r = sa > sb ? sa : sb; break;
    case F_MINS: *r = sa < sb ? sa : sb; break;
    case F_MAXU: *r = (int64_t)(ua > ub ? ua : ub); break;
    case F_MINU: *r = (int64_t)(ua < ub ? ua : ub); break;
    case F_AND: *r = (int64_t)(ua & ub); break;
    case F_OR: *r = (int64_t)(ua | ub); break;
    case F_XOR: *r = (int64_t)(ua ^ ub); break;
    case F_SHL: case F_SHRS: case F_SHRU:
      if (ub >= b) return 0; /* poison in MLIR: left to the host function */
      *r = k == F_SHL ? (int64_t)(ua << ub) : k == F_SHRU ? (int64_t)(ua >> ub) : sa >> ub;
      break;
    case F_SEXT: *r = sa; break;
    case F_ZEXT: *r = (int64_t)ua; break;
    case F_TRUNC: *r = sa; break;
    default: return 0;
  }
  *r = sext(*r, rbits);
  return 1;
}

static int fold_cmpi(MlirOperation op, const int64_t *v, uint32_t bits, int64_t *r) {
  MlirAttribute pa = crec__lw_attr(op, "predicate");
  if (mlirAttributeIsNull(pa) || !mlirAttributeIsAInteger(pa)) return 0;
  int64_t pred = mlirIntegerAttrGetValueInt(pa);
  uint64_t ua = zext(v[0], bits), ub = zext(v[1], bits);
  int64_t sa = v[0], sb = v[1];
  bool res;
  switch (pred) {
    case 0: res = ua == ub; break;
    case 1: res = ua != ub; break;
    case 2: res = sa < sb; break;
    case 3: res = sa <= sb; break;
    case 4: res = sa > sb; break;
    case 5: res = sa >= sb; break;
    case 6: res = ua < ub; break;
    case 7: res = ua <= ub; break;
    case 8: res = ua > ub; break;
    case 9: res = ua >= ub; break;
    default: return 0;
  }
  *r = res ? -1 : 0; /* i1 true, sign-extended */
  return 1;
}

/* Prints the op's inherent attributes as a properties dictionary "<{...}>" ("" when none). */
static char *inherent_attrs(MlirOperation op) {
  crec__text t = {0};
  size_t n = 0;
  for (intptr_t i = 0; i < mlirOperationGetNumAttributes(op); i++) {
    MlirNamedAttribute na = mlirOperationGetAttribute(op, i);
    MlirStringRef name = mlirIdentifierStr(na.name);
    if (!mlirOperationHasInherentAttributeByName(op, name)) continue;
    crec__text_puts(&t, n++ ? ", " : "<{");
    crec__text_putn(&t, name.data, name.length);
    crec__text_puts(&t, " = ");
    mlirAttributePrint(na.attribute, crec__lw_print_text, &t);
  }
  crec__text_puts(&t, n ? "}>" : "");
  if (t.failed) {
    crec__free(t.data);
    return NULL;
  }
  return t.data;
}

static crec_status constant_op(lw *L, MlirOperation op) {
  MlirValue res = mlirOperationGetResult(op, 0);
  MlirType type = mlirValueGetType(res);
  uint32_t node;
  crec_status s;
  if (crec__lw_is(op, "index.sizeof")) {
    s = crec__lw_node_const_int(L, type, 8, &node);
  } else {
    MlirAttribute a = crec__lw_attr(op, "value");
    if (!mlirAttributeIsNull(a) && mlirAttributeIsAInteger(a) && !mlirTypeIsAVector(type))
      s = crec__lw_node_const_int(L, type, mlirIntegerAttrGetValueInt(a), &node);
    else if (!mlirAttributeIsNull(a) && mlirAttributeIsABool(a))
      s = crec__lw_node_const_int(L, type, mlirBoolAttrGetValue(a) ? -1 : 0, &node);
    else if (!mlirAttributeIsNull(a) && mlirAttributeIsAFloat(a))
      s = crec__lw_node_const_float(L, type, a, &node);
    else
      s = CREC_ERR_UNSUPPORTED;
  }
  if (s == CREC_ERR_UNSUPPORTED)
    return crec__lw_fail(L, op, s, "only scalar integer, index and float constants are supported in the entry");
  if (s) return s;
  return crec__lw_value_set(L, res, LW_V_PACK(LW_V_NODE, node));
}

crec_status crec__lw_host_op(lw *L, MlirOperation op) {
  if (mlirOperationGetNumResults(op) == 1 && crec__lw_value_get(L, mlirOperationGetResult(op, 0)) != LW_NONE)
    return CREC_OK; /* evaluated ahead of the walk */
  if (!find_host_op(op)) return constant_op(L, op);
  const host_op *h = find_host_op(op);
  intptr_t n = mlirOperationGetNumOperands(op);
  if (mlirOperationGetNumResults(op) != 1 || n < 1 || n > 3)
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "expected one result and one to three operands");
  uint32_t ops[3];
  int64_t vals[3] = {0, 0, 0};
  bool all_const = true;
  for (intptr_t i = 0; i < n; i++) {
    uint32_t v = crec__lw_value_get(L, mlirOperationGetOperand(op, i));
    if (v != LW_NONE && LW_V_KIND(v) == LW_V_LOAD) return crec__lw_device_read_error(L, op, LW_V_INDEX(v));
    if (v == LW_NONE || LW_V_KIND(v) != LW_V_NODE)
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                     "operand %d is not a host scalar (an entry argument, a constant, or arithmetic on them)",
                     (int)i);
    ops[i] = LW_V_INDEX(v);
    if (!crec__lw_node_int(L, ops[i], &vals[i])) all_const = false;
  }
  MlirValue res = mlirOperationGetResult(op, 0);
  MlirType rtype = mlirValueGetType(res);
  lw_node probe = {0};
  crec_status s = type_info(L, rtype, &probe);
  if (s == CREC_ERR_UNSUPPORTED)
    return crec__lw_fail(L, op, s, "host arithmetic on this type is not supported (scalars are integers, index or floats)");
  if (s) return s;
  /* arith.select with a constant condition is its chosen operand */
  if (h->fold == F_SELECT && crec__lw_node_int(L, ops[0], &vals[0])) {
    crec__free(probe.type);
    return crec__lw_value_set(L, res, LW_V_PACK(LW_V_NODE, vals[0] ? ops[1] : ops[2]));
  }
  if (all_const && h->fold != F_NONE && h->fold != F_SELECT && !L->nodes[ops[0]].is_float) {
    int64_t r = 0;
    int ok = h->fold == F_CMPI ? fold_cmpi(op, vals, L->nodes[ops[0]].bits, &r)
                               : fold(L, op, h->fold, vals, &L->nodes[ops[0]], probe.bits, &r);
    if (ok < 0) {
      crec__free(probe.type);
      return CREC_ERR_MLIR;
    }
    if (ok > 0) {
      crec__free(probe.type);
      uint32_t node;
      if ((s = crec__lw_node_const_int(L, rtype, r, &node))) return s;
      return crec__lw_value_set(L, res, LW_V_PACK(LW_V_NODE, node));
    }
  }
  char name[64];
  crec__lw_op_name(op, name, sizeof name);
  char *attrs = inherent_attrs(op);
  if (!attrs) {
    crec__free(probe.type);
    return crec__oom(L->fn);
  }
  /* casts keep the label of what they cast */
  bool is_cast = h->fold == F_SEXT || h->fold == F_ZEXT || h->fold == F_TRUNC ||
                 strstr(name, "tofp") || strstr(name, "fpto") || strstr(name, "extf") || strstr(name, "truncf");
  char *label = is_cast ? (L->nodes[ops[0]].label ? crec__strdup(L->nodes[ops[0]].label) : NULL)
                        : make_label(L, name, ops, (uint32_t)n);
  uint32_t node;
  s = op_node(L, name, attrs, probe.type, probe.bits, probe.is_float, probe.is_index, ops, (uint32_t)n, label,
              &node);
  crec__free(attrs);
  if (s) return s;
  return crec__lw_value_set(L, res, LW_V_PACK(LW_V_NODE, node));
}

/* ---- derived scalars ---- */

static crec_status reserve_name(lw *L, const char *base, char *out, size_t size) {
  snprintf(out, size, "%s", base);
  for (unsigned k = 2; crec__lw_map_get(&L->scalar_names, out, strlen(out)) != LW_NONE; k++)
    snprintf(out, size, "%s#%u", base, k);
  if (crec__lw_map_put(&L->scalar_names, out, strlen(out), 1) != CREC_OK) return crec__oom(L->fn);
  return CREC_OK;
}

crec_status crec__lw_node_scalar(lw *L, MlirOperation user, uint32_t n, crec_scalar *out) {
  lw_node *node = &L->nodes[n];
  if (node->kind == LW_NODE_INPUT) {
    *out = node->input;
    return CREC_OK;
  }
  if (node->derived.id) {
    *out = node->derived;
    return CREC_OK;
  }
  crec_type type;
  if (node->is_float) {
    if (node->bits != 32 && node->bits != 64)
      return crec__lw_fail(L, user, CREC_ERR_UNSUPPORTED,
                     "a computed %s scalar is not supported (crec scalars are i32, i64, f32, f64)", node->type);
    type = node->bits == 32 ? CREC_TYPE_F32 : CREC_TYPE_F64;
  } else {
    type = node->bits > 32 ? CREC_TYPE_I64 : CREC_TYPE_I32;
  }
  char base[96], name[112];
  if (node->label && strlen(node->label) <= 60) snprintf(base, sizeof base, "%s", node->label);
  else {
    const char *dot = node->opname ? strchr(node->opname, '.') : NULL;
    snprintf(base, sizeof base, "%s.%u", dot ? dot + 1 : "s", n);
  }
  crec_status s = reserve_name(L, base, name, sizeof name);
  if (s) return s;
  if ((s = crec_program_add_derived_scalar(L->p, name, type, &node->derived))) return crec__lw_fail_builder(L, user, s);
  *out = node->derived;
  return CREC_OK;
}

/* ---- the host function ---- */

typedef int32_t (*host_entry)(const crec_value *in, crec_value *out);
typedef struct host_jit {
  MlirExecutionEngine engine;
  host_entry entry;
} host_jit;

static int host_call(void *user, const crec_value *inputs, crec_value *outputs) {
  const host_jit *j = user;
  return j->entry(inputs, outputs);
}

static void host_free(void *user) {
  host_jit *j = user;
  if (!j) return;
  mlirExecutionEngineDestroy(j->engine);
  crec__free(j);
}

static const char *storage_type(crec_type t) {
  return t == CREC_TYPE_I32 ? "i32" : t == CREC_TYPE_I64 ? "i64" : t == CREC_TYPE_F32 ? "f32" : "f64";
}

/* The name of the running "a division failed" flag after node `bad` (none yet: UINT32_MAX). */
static void bad_name(char *buf, size_t size, uint32_t bad) {
  if (bad == UINT32_MAX) snprintf(buf, size, "%%bad_none");
  else snprintf(buf, size, "%%bad%u", bad);
}

static void emit_node(const lw *L, crec__text *t, uint32_t k, uint32_t input_pos, uint32_t *bad) {
  const lw_node *n = &L->nodes[k];
  switch (n->kind) {
    case LW_NODE_CONST:
      if (n->is_float) crec__text_printf(t, "    %%v%u = arith.constant %s\n", k, n->fbits);
      else if (n->bits == 1) crec__text_printf(t, "    %%v%u = arith.constant %s\n", k, n->ival ? "true" : "false");
      else crec__text_printf(t, "    %%v%u = arith.constant %" PRId64 " : %s\n", k, n->ival, n->type);
      break;
    case LW_NODE_INPUT: {
      const char *st = storage_type(n->input_type);
      crec__text_printf(t, "    %%p%u = llvm.getelementptr %%in[%u] : (!llvm.ptr) -> !llvm.ptr, i64\n", k, input_pos);
      if (n->is_index) {
        crec__text_printf(t, "    %%l%u = llvm.load %%p%u : !llvm.ptr -> %s\n", k, k, st);
        crec__text_printf(t, "    %%v%u = arith.index_cast %%l%u : %s to index\n", k, k, st);
      } else {
        crec__text_printf(t, "    %%v%u = llvm.load %%p%u : !llvm.ptr -> %s\n", k, k, st);
      }
      break;
    }
    case LW_NODE_OP: {
      const host_op *h = NULL;
      for (size_t i = 0; i < sizeof host_ops / sizeof host_ops[0]; i++)
        if (strcmp(host_ops[i].name, n->opname) == 0) h = &host_ops[i];
      uint32_t a = n->operands[0];
      char divisor[32];
      snprintf(divisor, sizeof divisor, "%%v%u", n->num_operands > 1 ? n->operands[1] : a);
      if (h && h->div) {
        const char *T = L->nodes[a].type;
        uint32_t bits = L->nodes[a].bits;
        crec__text_printf(t, "    %%zero%u = arith.constant 0 : %s\n", k, T);
        crec__text_printf(t, "    %%one%u = arith.constant 1 : %s\n", k, T);
        crec__text_printf(t, "    %%z%u = arith.cmpi eq, %s, %%zero%u : %s\n", k, divisor, k, T);
        if (h->div == 2) {
          crec__text_printf(t, "    %%min%u = arith.constant %" PRId64 " : %s\n", k, smin(bits), T);
          crec__text_printf(t, "    %%m1%u = arith.constant -1 : %s\n", k, T);
          crec__text_printf(t, "    %%ia%u = arith.cmpi eq, %%v%u, %%min%u : %s\n", k, a, k, T);
          crec__text_printf(t, "    %%ib%u = arith.cmpi eq, %s, %%m1%u : %s\n", k, divisor, k, T);
          crec__text_printf(t, "    %%ov%u = arith.andi %%ia%u, %%ib%u : i1\n", k, k, k);
          crec__text_printf(t, "    %%zz%u = arith.ori %%z%u, %%ov%u : i1\n", k, k, k);
        } else {
          crec__text_printf(t, "    %%zz%u = arith.ori %%z%u, %%z%u : i1\n", k, k, k);
        }
        crec__text_printf(t, "    %%d%u = arith.select %%zz%u, %%one%u, %s : %s\n", k, k, k, divisor, T);
        char prev[32];
        bad_name(prev, sizeof prev, *bad);
        crec__text_printf(t, "    %%bad%u = arith.ori %s, %%zz%u : i1\n", k, prev, k);
        *bad = k;
        snprintf(divisor, sizeof divisor, "%%d%u", k);
      }
      crec__text_printf(t, "    %%v%u = \"%s\"(", k, n->opname);
      for (uint32_t i = 0; i < n->num_operands; i++) {
        if (i == 1 && h && h->div) crec__text_printf(t, ", %s", divisor);
        else crec__text_printf(t, "%s%%v%u", i ? ", " : "", n->operands[i]);
      }
      crec__text_printf(t, ") %s : (", n->attrs);
      for (uint32_t i = 0; i < n->num_operands; i++)
        crec__text_printf(t, "%s%s", i ? ", " : "", L->nodes[n->operands[i]].type);
      crec__text_printf(t, ") -> %s\n", n->type);
      break;
    }
  }
}

static crec_status jit(lw *L, const char *text, host_jit **out) {
  static const char fn_pipeline[] =
      "builtin.module(arith-expand,convert-index-to-llvm,convert-arith-to-llvm,convert-func-to-llvm,"
      "reconcile-unrealized-casts)";
  *out = NULL;
  L->internal = true;
  crec__free(L->first_error);
  L->first_error = NULL;
  MlirModule m = mlirModuleCreateParse(L->ctx, mlirStringRefCreateFromCString(text));
  crec_status s = CREC_OK;
  if (mlirModuleIsNull(m)) {
    s = crec__error(CREC_ERR_INTERNAL, L->fn, "the generated host function does not parse: %s",
                    L->first_error ? L->first_error : "no diagnostic");
    goto done;
  }
  if ((s = crec__lw_run_pipeline(L, mlirModuleGetOperation(m), fn_pipeline, mlirModuleGetOperation(m)))) {
    s = crec__error(CREC_ERR_INTERNAL, L->fn, "the generated host function does not lower to LLVM: %s",
                    L->first_error ? L->first_error : "no diagnostic");
    goto done;
  }
  host_jit *j = crec__calloc(1, sizeof *j);
  if (!j) {
    s = crec__oom(L->fn);
    goto done;
  }
  j->engine = mlirExecutionEngineCreate(m, 2, 0, NULL, false);
  if (mlirExecutionEngineIsNull(j->engine)) {
    crec__free(j);
    s = crec__error(CREC_ERR_INTERNAL, L->fn, "the LLVM ORC JIT could not compile the host function%s%s",
                    L->first_error ? ": " : "", L->first_error ? L->first_error : "");
    goto done;
  }
  j->entry = (host_entry)mlirExecutionEngineLookup(j->engine, mlirStringRefCreateFromCString("crec_host"));
  if (!j->entry) {
    host_free(j);
    s = crec__error(CREC_ERR_INTERNAL, L->fn, "the JIT-compiled host function has no symbol 'crec_host'");
    goto done;
  }
  *out = j;
done:
  if (!mlirModuleIsNull(m)) mlirModuleDestroy(m);
  L->internal = false;
  return s;
}

crec_status crec__lw_host_finish(lw *L) {
  size_t n = L->num_nodes, num_out = 0, num_in = 0;
  for (size_t i = 0; i < n; i++) num_out += L->nodes[i].derived.id != 0;
  if (!num_out) return CREC_OK;
  crec_status s = CREC_OK;
  bool *need = crec__calloc(n, sizeof *need);
  uint32_t *pos = crec__calloc(n, sizeof *pos);
  crec_scalar *inputs = crec__calloc(n, sizeof *inputs);
  crec_scalar *outputs = crec__calloc(num_out, sizeof *outputs);
  crec__text t = {0};
  host_jit *j = NULL;
  if (!need || !pos || !inputs || !outputs) {
    s = crec__oom(L->fn);
    goto done;
  }
  /* operands are made before their users: mark backwards */
  for (size_t i = n; i-- > 0;) {
    if (L->nodes[i].derived.id) need[i] = true;
    if (!need[i] || L->nodes[i].kind != LW_NODE_OP) continue;
    for (uint32_t k = 0; k < L->nodes[i].num_operands; k++) need[L->nodes[i].operands[k]] = true;
  }
  crec__text_puts(&t, "module {\n  func.func @crec_host(%in: !llvm.ptr, %out: !llvm.ptr) -> i32 {\n");
  crec__text_puts(&t, "    %bad_none = arith.constant false\n");
  uint32_t bad = UINT32_MAX;
  for (size_t i = 0; i < n; i++) {
    if (!need[i]) continue;
    if (L->nodes[i].kind == LW_NODE_INPUT) {
      pos[i] = (uint32_t)num_in;
      inputs[num_in++] = L->nodes[i].input;
    }
    emit_node(L, &t, (uint32_t)i, pos[i], &bad);
  }
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    const lw_node *node = &L->nodes[i];
    if (!node->derived.id) continue;
    crec_scalar_info info;
    crec_scalar_get_info(L->p, node->derived, &info);
    const char *st = storage_type(info.type);
    char val[32];
    snprintf(val, sizeof val, "%%o%zu", o);
    if (node->is_index) {
      crec__text_printf(&t, "    %s = arith.index_cast %%v%zu : index to i64\n", val, i);
    } else if (!node->is_float && node->bits != (info.type == CREC_TYPE_I32 ? 32u : 64u)) {
      /* narrow integers widen: i1 as 0 or 1, others with their sign */
      crec__text_printf(&t, "    %s = arith.%s %%v%zu : %s to %s\n", val, node->bits == 1 ? "extui" : "extsi", i,
                        node->type, st);
    } else {
      snprintf(val, sizeof val, "%%v%zu", i);
    }
    crec__text_printf(&t, "    %%q%zu = llvm.getelementptr %%out[%zu] : (!llvm.ptr) -> !llvm.ptr, i64\n", o, o);
    crec__text_printf(&t, "    llvm.store %s, %%q%zu : %s, !llvm.ptr\n", val, o, st);
    outputs[o++] = node->derived;
  }
  char last[32];
  bad_name(last, sizeof last, bad);
  crec__text_printf(&t, "    %%rc = arith.extui %s : i1 to i32\n    return %%rc : i32\n  }\n}\n", last);
  if (t.failed) {
    s = crec__oom(L->fn);
    goto done;
  }
  if ((s = jit(L, t.data, &j))) goto done;
  s = crec_program_add_host_function(L->p, "scalars", host_call, j, host_free, inputs, num_in, outputs, num_out);
  if (s) {
    host_free(j);
    s = crec__rethrow(s, L->fn);
  }
done:
  crec__free(need);
  crec__free(pos);
  crec__free(inputs);
  crec__free(outputs);
  crec__free(t.data);
  return s;
}
