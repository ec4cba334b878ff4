/* crec's device-side updater (exec.h, crec_record_options.device_updates): the
 * head node of an exec recorded with device updates. Thread i applies entry i,
 * the new parameter bytes of one kernel node, through CUDA's device graph-update
 * API; the host writes only the entries of the nodes that changed. It calls the
 * device runtime, so it is built with -rdc, linked against cudadevrt, and
 * embedded as a cubin per architecture (CMakeLists.txt). */
#include <cuda_runtime.h>

/* One update, as crec__update in record/exec_internal.h (24 bytes). */
struct crec_update {
  cudaGraphDeviceNode_t node;
  unsigned offset; /* in the node's parameter block */
  unsigned size;
  unsigned long long value; /* offset of the new bytes in `values` */
};

extern "C" __global__ void crec_apply_updates(const crec_update *u, const unsigned char *values, unsigned count) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) cudaGraphKernelNodeSetParam(u[i].node, u[i].offset, values + u[i].value, u[i].size);
}
