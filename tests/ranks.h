/* The ranks of a multi-process run, from the environment tools/crec-launch (or
 * mpirun) gives each process, and the NCCL unique id they share. Used by the
 * multi-rank tests (tests/multi_tests.c) and benchmark (tools/bench/bench_multi.c).
 *
 * Where the values come from, first match wins:
 *  - crec-launch: CREC_RANK, CREC_WORLD_SIZE, CREC_DEVICE, and the id through
 *    CREC_NCCL_ID_FILE (rank 0 writes it) or NCCL_COMM_ID;
 *  - mpirun (Open MPI): OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, the device
 *    OMPI_COMM_WORLD_LOCAL_RANK (CREC_DEVICE overrides), the id through
 *    NCCL_COMM_ID=host:port (mpirun -x NCCL_COMM_ID=...), from which every rank
 *    derives the same id and rank 0 starts NCCL's bootstrap there;
 *  - neither: one rank on CREC_DEVICE (default 0). */
#ifndef CREC_TESTS_RANKS_H
#define CREC_TESTS_RANKS_H

#include <stddef.h>

#include "crec/crec.h"

typedef struct mr_world {
  int rank, size, device;
  const char *launcher; /* "crec-launch", "mpirun", or "none" */
  const char *id_file;  /* CREC_NCCL_ID_FILE, or NULL */
  const char *comm_id;  /* NCCL_COMM_ID, or NULL */
  const char *run_dir;  /* CREC_RUN_DIR (a directory every rank of this host sees), or NULL */
  double deadline;      /* CREC_DEADLINE, seconds since the epoch, or 0 */
} mr_world;

/* Reads the world from the environment. Returns 0, or -1 with the reason in `why`. */
int mr_world_from_env(mr_world *w, char *why, size_t why_size);

/* Returns `want` milliseconds, or less so that a wait ends 5 s before the launcher's deadline. */
int mr_wait_ms(const mr_world *w, int want);

/* Gets the communicator's NCCL unique id on every rank: rank 0 makes it and
 * writes it to the id file (atomically), the others wait for the file (at most
 * `wait_ms`); with NCCL_COMM_ID every rank derives it. Returns 0, or -1 with the
 * reason in `why` (CREC_ERR_UNSUPPORTED from crec when NCCL is missing goes to
 * `*status`, which is CREC_OK otherwise). */
int mr_share_id(const mr_world *w, int wait_ms, crec_comm_id *id, crec_status *status, char *why, size_t why_size);

/* A 64-bit FNV-1a hash of `size` bytes (to print ids and compare them across ranks). */
unsigned long long mr_hash(const void *data, size_t size);

#endif
