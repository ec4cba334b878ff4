/* crec's device-side updater (exec.h, crec_record_options.device_updates): the
 * head node of an exec recorded with device updates. Its threads apply the
 * entries of this launch's table, each the new parameter bytes of one kernel
 * node, through CUDA's device graph-update API; the host writes only the
 * entries of the nodes that changed. It calls the
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

/* The control block, as crec__upd_ctl (page-locked host memory): per slot, its
 * table and the count of entries the host wrote there for the launch that uses
 * it; and the runs that finished, which the device writes for the host. */
#define CREC_UPD_SLOTS 4
struct crec_upd_slot {
  const crec_update *entries;
  const unsigned char *values;
  unsigned count, pad;
};
struct crec_upd_ctl {
  crec_upd_slot slots[CREC_UPD_SLOTS];
  unsigned done, pad;
};

/* The parameters never change, so a replay modifies nothing in the executable
 * graph on the host (a host-side change makes the driver's next launch of the
 * graph cost more, in proportion to the graph). The slot of this run is the
 * number of earlier runs (seq[0]) modulo CREC_UPD_SLOTS, the same count the host
 * keeps; the last block to finish (seq[1] counts them) advances seq[0], after
 * every block has read it, and tells the host how many runs finished: until
 * then the host must not set a node this run may write. */
extern "C" __global__ void crec_apply_updates(crec_upd_ctl *ctl, unsigned *seq) {
  __shared__ unsigned slot;
  if (threadIdx.x == 0) slot = *(volatile unsigned *)&seq[0] % CREC_UPD_SLOTS;
  __syncthreads();
  const crec_upd_slot *s = &ctl->slots[slot];
  unsigned n = *(volatile const unsigned *)&s->count;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const crec_update *u = &s->entries[i];
    cudaGraphKernelNodeSetParam(u->node, u->offset, s->values + u->value, u->size);
  }
  __syncthreads();
  if (threadIdx.x == 0 && atomicAdd(&seq[1], 1u) == gridDim.x - 1) {
    seq[1] = 0;
    __threadfence();
    unsigned runs = atomicAdd(&seq[0], 1u) + 1;
    __threadfence_system(); /* the nodes' updates before the count the host reads */
    *(volatile unsigned *)&ctl->done = runs;
  }
}
