/* The async dialect in the entry, as upstream's async.mlir writes it: each
 * async.execute region is moved in place, in program order, and its awaits
 * dropped. Program order is an order its tokens allow (a region depends only on
 * tokens defined before it), and crec orders commands by the bytes they touch,
 * so the GPU work of regions that share no bytes may still overlap. */
#include <string.h>

#include "lower_internal.h"

typedef struct exec_walk {
  MlirOperation *ops;
  size_t n, cap;
  bool oom;
  MlirOperation refused; /* an async op crec does not flatten */
} exec_walk;

static MlirWalkResult find_async(MlirOperation op, void *user) {
  exec_walk *w = user;
  if (crec__lw_is(op, "async.execute")) {
    if (CREC__RESERVE(w->ops, w->cap, w->n + 1) != CREC_OK) {
      w->oom = true;
      return MlirWalkResultInterrupt;
    }
    w->ops[w->n++] = op;
    return MlirWalkResultAdvance;
  }
  if (crec__lw_op_in(op, "async.") && !crec__lw_is(op, "async.await") && !crec__lw_is(op, "async.yield")) {
    w->refused = op;
    return MlirWalkResultInterrupt;
  }
  return MlirWalkResultAdvance;
}

/* The number of dependencies (tokens) among an async.execute's operands; the
 * rest are its body operands (async values), one per block argument. */
static intptr_t num_dependencies(MlirOperation exec) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(exec, 0));
  return mlirOperationGetNumOperands(exec) - mlirBlockGetNumArguments(body);
}

static MlirOperation terminator(MlirOperation exec) {
  return mlirBlockGetTerminator(mlirRegionGetFirstBlock(mlirOperationGetRegion(exec, 0)));
}

/* Every use of an execute's results is an await, or an operand of another
 * execute (a dependency or a body operand); anything else is refused there. */
static MlirOperation other_use(MlirOperation exec) {
  for (intptr_t r = 0; r < mlirOperationGetNumResults(exec); r++)
    for (MlirOpOperand u = mlirValueGetFirstUse(mlirOperationGetResult(exec, r)); !mlirOpOperandIsNull(u);
         u = mlirOpOperandGetNextUse(u)) {
      MlirOperation owner = mlirOpOperandGetOwner(u);
      if (!crec__lw_is(owner, "async.await") && !crec__lw_is(owner, "async.execute")) return owner;
    }
  MlirOperation none = {NULL};
  return none;
}

crec_status crec__lw_async_flatten(lw *L) {
  exec_walk w = {0};
  mlirOperationWalk(L->entry, find_async, &w, MlirWalkPreOrder);
  crec_status s = CREC_OK;
  if (w.oom) {
    s = crec__oom(L->fn);
    goto done;
  }
  if (!mlirOperationIsNull(w.refused)) {
    s = crec__lw_fail(L, w.refused, CREC_ERR_UNSUPPORTED,
                      "crec runs async.execute regions in place and drops their awaits; other async ops (groups, "
                      "the async runtime) have no meaning for it");
    goto done;
  }
  for (size_t i = 0; i < w.n; i++) {
    MlirOperation e = w.ops[i];
    MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(e, 0));
    for (intptr_t a = 0; a < mlirBlockGetNumArguments(body); a++) {
      MlirValue v = mlirOperationGetOperand(e, num_dependencies(e) + a);
      if (!mlirValueIsAOpResult(v) || !crec__lw_is(mlirOpResultGetOwner(v), "async.execute")) {
        s = crec__lw_fail(L, e, CREC_ERR_UNSUPPORTED,
                          "body operand %d is not an async value an async.execute of the entry made: crec runs the "
                          "regions in place, and has no value for it",
                          (int)a);
        goto done;
      }
    }
    MlirOperation user = other_use(e);
    if (!mlirOperationIsNull(user)) {
      s = crec__lw_fail(L, user, CREC_ERR_UNSUPPORTED,
                        "a token or value of an async.execute is used by something other than async.await or "
                        "another async.execute: crec runs the regions in place, so there is nothing to hand it");
      goto done;
    }
  }
  /* in program order (outer regions first: a nested one moves out with its parent's body) */
  for (size_t i = 0; i < w.n; i++) {
    MlirOperation e = w.ops[i];
    MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(e, 0));
    intptr_t deps = num_dependencies(e);
    /* a body argument is what the execute that made its async value yielded (moved out already) */
    for (intptr_t a = 0; a < mlirBlockGetNumArguments(body); a++) {
      MlirValue v = mlirOperationGetOperand(e, deps + a);
      MlirOperation from = mlirOpResultGetOwner(v);
      intptr_t k = mlirOpResultGetResultNumber(v);
      mlirValueReplaceAllUsesOfWith(mlirBlockGetArgument(body, a), mlirOperationGetOperand(terminator(from), k - 1));
    }
    MlirBlock parent = mlirOperationGetBlock(e);
    MlirOperation end = terminator(e);
    for (MlirOperation op = mlirBlockGetFirstOperation(body), next; !mlirOperationEqual(op, end); op = next) {
      next = mlirOperationGetNextInBlock(op);
      mlirOperationRemoveFromParent(op);
      mlirBlockInsertOwnedOperationBefore(parent, e, op);
    }
  }
  /* awaits of values become the values; then the executes go, the last first
   * (a later one is what uses an earlier one's results) */
  for (size_t i = w.n; i-- > 0;) {
    MlirOperation e = w.ops[i];
    for (intptr_t r = 0; r < mlirOperationGetNumResults(e); r++) {
      MlirValue res = mlirOperationGetResult(e, r);
      for (MlirOpOperand u = mlirValueGetFirstUse(res); !mlirOpOperandIsNull(u); u = mlirValueGetFirstUse(res)) {
        MlirOperation owner = mlirOpOperandGetOwner(u);
        if (!crec__lw_is(owner, "async.await")) break; /* an operand of a later execute, erased already */
        if (r > 0)
          mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(owner, 0), mlirOperationGetOperand(terminator(e), r - 1));
        mlirOperationDestroy(owner);
      }
    }
    mlirOperationDestroy(e);
  }
done:
  crec__free(w.ops);
  return s;
}
