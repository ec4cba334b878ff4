/* cf.assert in kernels. MLIR 19's cf-to-llvm lowers it to a call of abort()
 * with the message in the outer module, where a kernel cannot reach it (newer
 * MLIR lowers it for NVVM as below). crec rewrites each one in its copy of the
 * gpu.module before MLIR's pipeline runs, into what CUDA's assert() compiles
 * to: when the condition is false, a call of the PTX system call
 *
 *   __assertfail(message, file, line, function, 1)
 *
 * which the driver resolves like vprintf. The failing thread prints
 * "file:line: function: block: [x,y,z], thread: [x,y,z] Assertion `message`
 * failed." and stops the kernel; the host sees CUDA_ERROR_ASSERT
 * (CREC_ERR_DEVICE_ASSERT), and the context can no longer be used.
 *
 * The strings are globals of the gpu.module, read by a small function per
 * assert (parsed from text, so every op is made by MLIR's own parser); the
 * assert becomes `scf.if %cond {} else { llvm.call @that_function() }`, which
 * the pipeline's scf-to-cf lowers with the rest. */
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

/* Appends `s` NUL-terminated as an MLIR string literal's contents: letters,
 * digits and plain punctuation as they are, every other byte as \XX. */
static void put_literal(crec__text *t, const char *s) {
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c >= 0x20 && *c < 0x7f && *c != '"' && *c != '\\') crec__text_printf(t, "%c", *c);
    else crec__text_printf(t, "\\%02X", *c);
  }
  crec__text_puts(t, "\\00");
}

static void put_global(crec__text *t, size_t i, const char *what, const char *value) {
  crec__text_printf(t, "  llvm.mlir.global internal constant @__crec_assert%zu_%s(\"", i, what);
  put_literal(t, value);
  crec__text_printf(t, "\") {addr_space = 0 : i32} : !llvm.array<%zu x i8>\n", strlen(value) + 1);
}

/* The name of the gpu.func around `op` ("" when there is none). */
static void kernel_name(MlirOperation op, char *name, size_t size) {
  name[0] = '\0';
  for (MlirOperation o = op; !mlirOperationIsNull(o); o = mlirOperationGetParentOperation(o)) {
    if (!crec__lw_is(o, "gpu.func") && !crec__lw_is(o, "func.func") && !crec__lw_is(o, "llvm.func")) continue;
    crec__lw_string_attr(o, "sym_name", name, size, NULL);
    return;
  }
}

/* Replaces assert `op` by `scf.if %cond {} else { call }` (taking `call`). */
static crec_status replace_assert(lw *L, MlirOperation op, MlirOperation call) {
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirRegion regions[2];
  MlirOperation yields[2];
  for (int r = 0; r < 2; r++) {
    MlirOperationState ys = mlirOperationStateGet(mlirStringRefCreateFromCString("scf.yield"), loc);
    yields[r] = mlirOperationCreate(&ys);
    regions[r] = mlirRegionCreate();
    MlirBlock b = mlirBlockCreate(0, NULL, NULL);
    mlirRegionAppendOwnedBlock(regions[r], b);
    if (r == 1) mlirBlockAppendOwnedOperation(b, call);
    if (!mlirOperationIsNull(yields[r])) mlirBlockAppendOwnedOperation(b, yields[r]);
  }
  MlirValue cond = mlirOperationGetOperand(op, 0);
  MlirOperationState is = mlirOperationStateGet(mlirStringRefCreateFromCString("scf.if"), loc);
  mlirOperationStateAddOperands(&is, 1, &cond);
  mlirOperationStateAddOwnedRegions(&is, 2, regions);
  MlirOperation branch = mlirOperationCreate(&is); /* owns the regions, even when it fails */
  if (mlirOperationIsNull(branch) || mlirOperationIsNull(yields[0]) || mlirOperationIsNull(yields[1])) {
    if (!mlirOperationIsNull(branch)) mlirOperationDestroy(branch);
    return crec__lw_fail(L, op, CREC_ERR_INTERNAL, "cannot make the scf.if of an assert (is the SCF dialect loaded?)");
  }
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(op), op, branch);
  mlirOperationDestroy(op);
  return CREC_OK;
}

crec_status crec__lw_lower_asserts(lw *L, MlirOperation gpu_module, MlirOperation at) {
  MlirOperation *ops;
  size_t n;
  crec_status s = crec__lw_collect(L, gpu_module, "cf.assert", &ops, &n);
  if (s || !n) {
    crec__free(ops);
    return s;
  }
  /* made below by name: unloaded, scf.if would be an unregistered op */
  if (mlirDialectIsNull(mlirContextGetOrLoadDialect(L->ctx, mlirStringRefCreateFromCString("scf")))) {
    crec__free(ops);
    return crec__lw_fail(L, at, CREC_ERR_INTERNAL, "the SCF dialect is not registered");
  }
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(gpu_module, 0));
  bool declared = !mlirOperationIsNull(crec__lw_lookup_symbol(body, "__assertfail", strlen("__assertfail")));
  /* one module of the strings, the functions and the declaration, parsed whole
   * (so its symbols resolve), then moved into the gpu.module */
  crec__text t = {0};
  crec__text_puts(&t, "module {\n");
  crec__text_puts(&t, "  llvm.func @__assertfail(!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i64)\n");
  for (size_t i = 0; i < n; i++) {
    MlirOperation op = ops[i];
    char message[1024], file[1024], function[256];
    unsigned long line = 0;
    if (!crec__lw_string_attr(op, "msg", message, sizeof message, NULL)) message[0] = '\0';
    crec__lw_loc_place(L, mlirOperationGetLocation(op), file, sizeof file, &line, function, sizeof function);
    if (!function[0]) kernel_name(op, function, sizeof function);
    put_global(&t, i, "message", message);
    put_global(&t, i, "file", file);
    put_global(&t, i, "function", function[0] ? function : "(unknown)");
    crec__text_printf(&t,
                      "  llvm.func internal @__crec_assert%zu() {\n"
                      "    %%m = llvm.mlir.addressof @__crec_assert%zu_message : !llvm.ptr\n"
                      "    %%f = llvm.mlir.addressof @__crec_assert%zu_file : !llvm.ptr\n"
                      "    %%l = llvm.mlir.constant(%lu : i32) : i32\n"
                      "    %%n = llvm.mlir.addressof @__crec_assert%zu_function : !llvm.ptr\n"
                      "    %%c = llvm.mlir.constant(1 : i64) : i64\n"
                      "    llvm.call @__assertfail(%%m, %%f, %%l, %%n, %%c) : (!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, "
                      "i64) -> ()\n"
                      "    llvm.return\n"
                      "  }\n"
                      /* where the assert's call is made, to be taken out: a call
                       * parsed alone would name a function its scope lacks */
                      "  llvm.func internal @__crec_assert%zu_site() {\n"
                      "    llvm.call @__crec_assert%zu() : () -> ()\n"
                      "    llvm.return\n"
                      "  }\n",
                      i, i, i, line > 0x7fffffffUL ? 0UL : line, i, i, i);
  }
  crec__text_puts(&t, "}\n");
  if (t.failed) {
    s = crec__oom(L->fn);
    goto done;
  }
  MlirOperation parsed = mlirOperationCreateParse(L->ctx, mlirStringRefCreate(t.data, t.len),
                                                  mlirStringRefCreateFromCString("crec assert"));
  if (mlirOperationIsNull(parsed)) {
    s = crec__lw_fail_mlir(L, at, "cannot make the functions of the module's asserts");
    goto done;
  }
  /* the sites give up their calls, in the asserts' order; the rest moves (but
   * for the declaration, when the module has one of its own) */
  MlirBlock from = mlirRegionGetFirstBlock(mlirOperationGetRegion(parsed, 0));
  MlirOperation first = mlirBlockGetFirstOperation(body);
  size_t taken = 0;
  for (MlirOperation o = mlirBlockGetFirstOperation(from); !mlirOperationIsNull(o);) {
    MlirOperation next = mlirOperationGetNextInBlock(o);
    char name[64];
    crec__lw_string_attr(o, "sym_name", name, sizeof name, NULL);
    size_t len = strlen(name);
    if (len > 5 && strcmp(name + len - 5, "_site") == 0) {
      MlirBlock site = mlirRegionGetFirstBlock(mlirOperationGetRegion(o, 0));
      MlirOperation call = mlirBlockGetFirstOperation(site);
      if (!s && taken < n) {
        mlirOperationRemoveFromParent(call);
        s = replace_assert(L, ops[taken++], call);
      }
    } else if (!declared || strcmp(name, "__assertfail") != 0) {
      mlirOperationRemoveFromParent(o);
      if (mlirOperationIsNull(first)) mlirBlockAppendOwnedOperation(body, o);
      else mlirBlockInsertOwnedOperationBefore(body, first, o);
    }
    o = next;
  }
  mlirOperationDestroy(parsed);
  if (!s && taken != n) s = crec__lw_fail(L, at, CREC_ERR_INTERNAL, "%zu of %zu asserts rewritten", taken, n);
done:
  crec__free(t.data);
  crec__free(ops);
  return s;
}
