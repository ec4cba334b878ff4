/* The built-in custom handler "crec.tensor_map": a TMA descriptor (a CUtensorMap,
 * 128 bytes) for its source operand's address, encoded on the host with
 * cuTensorMapEncodeTiled and stored into its destination operand by one thread
 * of a kernel that takes the descriptor by value. Kernel parameters are copied
 * when a node is made or set, so a replay that moves the source encodes anew
 * and sets the node (update()), while a launch still in flight keeps the bytes
 * it was given: no staging memory, nothing to wait for. An eager run launches
 * the same kernel. The front end makes these commands from
 * nvgpu.tma.create.descriptor (lower/tma.c), whose kernels then read the
 * descriptor from device memory, as upstream MLIR's runtime gives it to them. */
#include <stdio.h>

#include "runtime_internal.h"

/* Encodes the descriptor of this execution's source into `map`, and the launch
 * that stores it at the destination (its parameters point into `dst` and `map`). */
static crec_status prepare(const crec_custom_call *call, CUtensorMap *map, CUdeviceptr *dst, void **params,
                           crec_custom_launch *l, const char *fn) {
  const crec__tensor_map_attrs *a = call->attributes;
  if (call->attributes_size != sizeof *a || a->version != CREC__TENSOR_MAP_VERSION || a->rank < 1 || a->rank > 5 ||
      call->num_operands != 2 || !call->operands[0] || !call->operands[1] || call->operand_sizes[1] < sizeof *map ||
      call->num_kernels != 1)
    return crec__error(CREC_ERR_INVALID_PROGRAM, fn,
                       "%s: not a command of the built-in '%s' handler (attributes of %zu bytes, %zu operands, %zu "
                       "kernels: it takes version %u of its attributes, a source and a destination of 128 bytes or "
                       "more, and its store kernel)",
                       call->name, CREC__TENSOR_MAP_TARGET, call->attributes_size, call->num_operands,
                       call->num_kernels, CREC__TENSOR_MAP_VERSION);
  const crec__cu *cu = crec__driver(fn);
  if (!cu) return CREC_ERR_NO_DEVICE;
  cuuint64_t strides[4] = {0};
  for (uint32_t i = 0; i + 1 < a->rank; i++) strides[i] = a->strides[i];
  CUresult r = CREC__CU(cu, cuTensorMapEncodeTiled, map, (CUtensorMapDataType)a->data_type, a->rank, call->operands[0],
                        a->dims, strides, a->box, a->element_strides, (CUtensorMapInterleave)a->interleave,
                        (CUtensorMapSwizzle)a->swizzle, (CUtensorMapL2promotion)a->l2_promotion,
                        (CUtensorMapFloatOOBfill)a->oob_fill);
  if (r != CUDA_SUCCESS) {
    char what[512], context[700];
    crec__tensor_map_describe(a, sizeof *a, what, sizeof what);
    snprintf(context, sizeof context, "%s: the TMA descriptor of %p (%s)", call->name, call->operands[0], what);
    return crec__cu_fail(fn, r, "cuTensorMapEncodeTiled", context);
  }
  *dst = (CUdeviceptr)(uintptr_t)call->operands[1];
  params[0] = dst;
  params[1] = map;
  crec_custom_launch launch = CREC_CUSTOM_LAUNCH_INIT;
  launch.kernel = 0;
  launch.params = params;
  *l = launch;
  return CREC_OK;
}

static crec_status create(void *user, crec_custom_context *ctx, const crec_custom_call *call) {
  (void)user;
  CUtensorMap map;
  CUdeviceptr dst;
  void *params[2];
  crec_custom_launch l;
  crec_status s = prepare(call, &map, &dst, params, &l, "crec.tensor_map create");
  return s ? s : crec_custom_context_launch(ctx, &l, NULL);
}

static crec_status update(void *user, crec_custom_context *ctx, const crec_custom_call *call) {
  (void)user;
  CUtensorMap map;
  CUdeviceptr dst;
  void *params[2];
  crec_custom_launch l;
  crec_status s = prepare(call, &map, &dst, params, &l, "crec.tensor_map update");
  return s ? s : crec_custom_context_update(ctx, 0, &l);
}

/* "crec.tensor_map_use": no work. Its operands (the tensor and the descriptor)
 * order a launch that reaches the tensor only through its descriptor against
 * the commands that touch the tensor, and keep the tensor's bytes its own until
 * the launch is done (lower/tma.c puts one before and one after such a launch). */
static crec_status no_work(void *user, crec_custom_context *ctx, const crec_custom_call *call) {
  (void)user, (void)ctx, (void)call;
  return CREC_OK;
}

void crec__tensor_map_register(void) {
  crec_custom_handler h = CREC_CUSTOM_HANDLER_INIT;
  h.kind = CREC_CUSTOM_NODES;
  h.create = create;
  h.update = update;
  /* the only failure is running out of memory: a record then finds no handler
   * and says that the target is not registered */
  (void)crec_custom_register(CREC__TENSOR_MAP_TARGET, &h);
  h.create = h.update = no_work;
  (void)crec_custom_register(CREC__TENSOR_MAP_USE_TARGET, &h);
}
