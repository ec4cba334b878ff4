/* Collectives through NCCL, opened at run time: the NCCL loader, the binding
 * checks, and issuing a collective on a stream (captured at record and replay,
 * or run directly by the eager executor). Communicators, their deadlines,
 * aborts and agreement are comm.c's. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "nccl_internal.h"

static crec__loader loader = CREC__LOADER_INIT;
static crec__nccl nc;

static void load(void) {
  CREC__SYMBOLS(syms, crec__nccl, CREC__NCCL_FUNCS);
  void *handle = crec__loader_open(&loader, "NCCL", "libnccl.so.2", syms, sizeof syms / sizeof *syms, &nc,
                                   " (NCCL 2.7 or newer needed)");
  if (!handle) return;
  void *revoke = dlsym(handle, "ncclCommRevoke");
  memcpy(&nc.comm_revoke, &revoke, sizeof revoke);
  loader.loaded = true;
}

const crec__nccl *crec__nccl_get(const char *fn, const char *label) {
  return crec__loader_check(&loader, load, label, fn) ? NULL : &nc;
}

crec_status crec__nccl_library(const char *fn) { return crec__nccl_get(fn, NULL) ? CREC_OK : CREC_ERR_UNSUPPORTED; }

const crec__nccl *crec__nccl_loaded(void) { return loader.loaded ? &nc : NULL; }

crec_status crec__nccl_fail(const char *fn, const char *label, ncclResult_t r, const char *call, ncclComm_t comm) {
  const char *last = comm && nc.last_error ? nc.last_error(comm) : NULL;
  return crec__error(CREC_ERR_CUDA, fn, "%s%s%s failed: %s%s%s", label ? label : "", label ? ": " : "", call,
                     nc.error_string ? nc.error_string(r) : "NCCL error", last && last[0] ? "; " : "",
                     last && last[0] ? last : "");
}

/* ---- binding checks ---- */

/* The first command using communicator slot `slot`, for messages ("" when none). */
static const char *first_user(const crec_program *p, size_t slot, char *buf, size_t size) {
  buf[0] = '\0';
  for (size_t ci = 0; ci < p->num_commands; ci++) {
    const crec__command *c = &p->commands[ci];
    if (c->coll && c->coll->comm == slot) { /* a collective, or a barrier across ranks */
      crec__command_label(p, ci, buf, size);
      strncat(buf, ": ", size - strlen(buf) - 1);
      break;
    }
  }
  return buf;
}

crec_status crec__check_comm(const crec_program *p, size_t i, const crec_comm *c, int device, const char *fn) {
  const crec__comm_slot *slot = &p->comms[i];
  char who[240];
  if (!c)
    return crec__error(CREC_ERR_BINDING, fn, "%scommunicator binding %zu ('%s'): NULL", first_user(p, i, who, sizeof who),
                       i, slot->name);
  if (c->size != slot->size)
    return crec__error(CREC_ERR_BINDING, fn, "%scommunicator binding %zu ('%s') has %d ranks, but the program needs %d",
                       first_user(p, i, who, sizeof who), i, slot->name, c->size, slot->size);
  if (c->aborted)
    return crec__error(CREC_ERR_BINDING, fn, "%scommunicator binding %zu ('%s') was aborted",
                       first_user(p, i, who, sizeof who), i, slot->name);
  if (device >= 0 && c->device != device)
    return crec__error(CREC_ERR_BINDING, fn, "%scommunicator binding %zu ('%s') is on device %d, the execution on %d",
                       first_user(p, i, who, sizeof who), i, slot->name, c->device, device);
  return CREC_OK;
}

crec_status crec__check_comms(const crec_program *p, const crec_bindings *b, int device, const char *fn) {
  if (b->num_communicators != p->num_comms)
    return crec__error(CREC_ERR_BINDING, fn, "%zu communicator bindings given, but the program has %zu communicators",
                       b->num_communicators, p->num_comms);
  if (p->num_comms && !b->communicators)
    return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'bindings.communicators' is NULL");
  for (size_t i = 0; i < p->num_comms; i++) {
    crec_status s = crec__check_comm(p, i, b->communicators[i], device, fn);
    if (s) return s;
  }
  return CREC_OK;
}

/* ---- issuing ---- */

uint32_t crec__collective_id(const crec__command *c, const crec__values *v) {
  const crec__coll *k = c->coll;
  const crec_collective *d = &k->desc;
  int rank = v->comms[k->comm]->rank;
  size_t at = (size_t)rank; /* no groups: every rank its own replica */
  if (d->groups)
    for (size_t i = 0; i < d->num_groups * d->group_size; i++)
      if (d->groups[i] == rank) at = i;
  size_t columns = d->groups ? d->group_size : 1;
  return (uint32_t)(d->kind == CREC_COLLECTIVE_REPLICA_ID ? at / columns : at % columns);
}

crec__degenerate crec__degenerate_action(const crec_program *p, const crec__values *v, uint32_t ci) {
  const crec__coll *k = p->commands[ci].coll;
  const crec_collective *d = &k->desc;
  if (d->kind == CREC_COLLECTIVE_REPLICA_ID || d->kind == CREC_COLLECTIVE_PARTITION_ID) return CREC__DEGENERATE_ID;
  if (d->kind == CREC_COLLECTIVE_PERMUTE) {
    int rank = v->comms[k->comm]->rank;
    for (size_t i = 0; i < d->num_pairs; i++)
      if (d->pairs[2 * i + 1] == rank) return CREC__DEGENERATE_COPY; /* a pair rank -> rank */
    return CREC__DEGENERATE_ZERO;
  }
  bool in_place = d->send.buffer.id == d->recv.buffer.id && d->send.offset == d->recv.offset;
  return in_place ? CREC__DEGENERATE_NOTHING : CREC__DEGENERATE_COPY;
}

static ncclDataType_t nccl_type(crec_element e) {
  switch (e) {
    case CREC_ELEMENT_I8: return ncclInt8;
    case CREC_ELEMENT_I32: return ncclInt32;
    case CREC_ELEMENT_I64: return ncclInt64;
    case CREC_ELEMENT_F16: return ncclFloat16;
    case CREC_ELEMENT_BF16: return ncclBfloat16;
    case CREC_ELEMENT_F32: return ncclFloat32;
    case CREC_ELEMENT_F64: return ncclFloat64;
    default: return ncclUint8; /* bytes; 16-bit integers never reduce (refused when added) */
  }
}

static ncclRedOp_t nccl_op(crec_reduction r) {
  return r == CREC_REDUCTION_PROD ? ncclProd : r == CREC_REDUCTION_MIN ? ncclMin : r == CREC_REDUCTION_MAX ? ncclMax
                                                                                                              : ncclSum;
}

crec_status crec__collective_issue(const crec_program *p, const crec__values *v, uint32_t ci, CUstream stream,
                                   const char *fn) {
  const crec__command *c = &p->commands[ci];
  const crec__coll *k = c->coll;
  const crec_collective *d = &k->desc;
  char label[200];
  crec__command_label(p, ci, label, sizeof label);
  const crec__nccl *n = crec__nccl_get(fn, label);
  if (!n) return CREC_ERR_UNSUPPORTED;
  const crec_comm *cc = v->comms[k->comm];
  ncclComm_t comm = (ncclComm_t)cc->nccl;
  cudaStream_t s = (cudaStream_t)stream;
  const char *send = (const char *)(uintptr_t)crec__range_addr(v, d->send);
  char *recv = (char *)(uintptr_t)crec__range_addr(v, d->recv);
  size_t es = crec_element_size(d->type);
  /* moving collectives move bytes: NCCL's types only matter to reductions */
  size_t bytes = (size_t)d->send.size;
  ncclResult_t r = ncclSuccess;
  const char *call = "";
  switch (d->kind) {
    case CREC_COLLECTIVE_ALL_REDUCE:
      call = "ncclAllReduce";
      r = CREC__NCCL(n->all_reduce(send, recv, bytes / es, nccl_type(d->type), nccl_op(d->reduction), comm, s));
      break;
    case CREC_COLLECTIVE_ALL_GATHER:
      call = "ncclAllGather";
      r = CREC__NCCL(n->all_gather(send, recv, bytes, ncclUint8, comm, s));
      break;
    case CREC_COLLECTIVE_REDUCE_SCATTER:
      call = "ncclReduceScatter";
      r = CREC__NCCL(n->reduce_scatter(send, recv, (size_t)d->recv.size / es, nccl_type(d->type), nccl_op(d->reduction),
                                 comm, s));
      break;
    case CREC_COLLECTIVE_ALL_TO_ALL: {
      size_t block = bytes / k->group_size;
      call = "ncclGroupStart";
      r = CREC__NCCL(n->group_start());
      if (r != ncclSuccess) break;
      for (uint32_t j = 0; j < k->group_size && r == ncclSuccess; j++) {
        call = "ncclSend";
        r = CREC__NCCL(n->send(send + j * block, block, ncclUint8, (int)j, comm, s));
        if (r == ncclSuccess) call = "ncclRecv", r = CREC__NCCL(n->recv(recv + j * block, block, ncclUint8, (int)j, comm, s));
      }
      /* an open group is always closed, also after a failed call inside it */
      ncclResult_t e = n->group_end();
      if (r == ncclSuccess && e != ncclSuccess) r = e, call = "ncclGroupEnd";
      break;
    }
    case CREC_COLLECTIVE_PERMUTE: {
      bool receives = false;
      call = "ncclGroupStart";
      r = CREC__NCCL(n->group_start());
      if (r != ncclSuccess) break;
      for (size_t i = 0; i < d->num_pairs && r == ncclSuccess; i++) {
        int src = d->pairs[2 * i], dst = d->pairs[2 * i + 1];
        if (src == cc->rank) call = "ncclSend", r = CREC__NCCL(n->send(send, bytes, ncclUint8, dst, comm, s));
        if (r == ncclSuccess && dst == cc->rank) {
          receives = true;
          call = "ncclRecv";
          r = CREC__NCCL(n->recv(recv, bytes, ncclUint8, src, comm, s));
        }
      }
      ncclResult_t e = n->group_end();
      if (r == ncclSuccess && e != ncclSuccess) r = e, call = "ncclGroupEnd";
      if (r == ncclSuccess && !receives) {
        /* no source sends to this rank: its recv is zeros */
        const crec__cu *cu = crec__driver(fn);
        if (!cu) return CREC_ERR_NO_DEVICE;
        CREC__CU_TRY(fn, label, cu, cuMemsetD8Async, (CUdeviceptr)(uintptr_t)recv, 0, bytes, stream);
      }
      break;
    }
    case CREC_COLLECTIVE_REPLICA_ID:
    case CREC_COLLECTIVE_PARTITION_ID:
      return crec__error(CREC_ERR_INTERNAL, fn, "%s: a %s is a fill, not NCCL work", label,
                         crec_collective_kind_name(d->kind));
  }
  if (r != ncclSuccess) return crec__nccl_fail(fn, label, r, call, comm);
  return CREC_OK;
}
