#include "ranks.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Reads integer variable `name` into `*out` when set. Returns 1 when set and
 * valid, 0 when unset, -1 (with `why`) when not an integer >= `min`. */
static int env_int(const char *name, int min, int *out, char *why, size_t why_size) {
  const char *v = getenv(name);
  if (!v || !v[0]) return 0;
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || *end || x < min || x > 1 << 20) {
    snprintf(why, why_size, "%s='%s' is not a whole number of at least %d", name, v, min);
    return -1;
  }
  *out = (int)x;
  return 1;
}

static const char *env_str(const char *name) {
  const char *v = getenv(name);
  return v && v[0] ? v : NULL;
}

int mr_world_from_env(mr_world *w, char *why, size_t why_size) {
  memset(w, 0, sizeof *w);
  if (why_size) why[0] = '\0';
  w->size = 1;
  w->launcher = "none";
  int local = 0, have_local = 0, r;
  if ((r = env_int("CREC_RANK", 0, &w->rank, why, why_size)) < 0) return -1;
  if (r) {
    w->launcher = "crec-launch";
    if (env_int("CREC_WORLD_SIZE", 1, &w->size, why, why_size) <= 0) {
      if (!why[0]) snprintf(why, why_size, "CREC_RANK is set but CREC_WORLD_SIZE is not");
      return -1;
    }
    if ((have_local = env_int("CREC_LOCAL_RANK", 0, &local, why, why_size)) < 0) return -1;
  } else if ((r = env_int("OMPI_COMM_WORLD_RANK", 0, &w->rank, why, why_size)) != 0) {
    if (r < 0) return -1;
    w->launcher = "mpirun";
    if (env_int("OMPI_COMM_WORLD_SIZE", 1, &w->size, why, why_size) <= 0) {
      if (!why[0]) snprintf(why, why_size, "OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not");
      return -1;
    }
    if ((have_local = env_int("OMPI_COMM_WORLD_LOCAL_RANK", 0, &local, why, why_size)) < 0) return -1;
  }
  if (w->rank >= w->size) {
    snprintf(why, why_size, "rank %d is not below the world size %d", w->rank, w->size);
    return -1;
  }
  w->device = have_local ? local : w->launcher[0] == 'n' ? 0 : w->rank;
  if ((r = env_int("CREC_DEVICE", 0, &w->device, why, why_size)) < 0) return -1;
  w->id_file = env_str("CREC_NCCL_ID_FILE");
  w->comm_id = env_str("NCCL_COMM_ID");
  w->run_dir = env_str("CREC_RUN_DIR");
  const char *d = env_str("CREC_DEADLINE");
  if (d) w->deadline = strtod(d, NULL);
  if (w->size > 1 && !w->id_file && !w->comm_id) {
    snprintf(why, why_size,
             "%d ranks, but neither CREC_NCCL_ID_FILE nor NCCL_COMM_ID says how to share the NCCL unique id: start the "
             "ranks with tools/crec-launch, or give mpirun -x NCCL_COMM_ID=<host of rank 0>:<free port>",
             w->size);
    return -1;
  }
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int mr_wait_ms(const mr_world *w, int want) {
  if (w->deadline <= 0) return want;
  double left = (w->deadline - now_s() - 5) * 1000;
  if (left < 1000) left = 1000;
  return left < want ? (int)left : want;
}

unsigned long long mr_hash(const void *data, size_t size) {
  const unsigned char *p = data;
  unsigned long long h = 1469598103934665603ull;
  for (size_t i = 0; i < size; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/* Writes the id where the other ranks look, in one rename so that nobody reads half of it. */
static int write_id(const char *path, const crec_comm_id *id, char *why, size_t why_size) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || write(fd, id->bytes, sizeof id->bytes) != (ssize_t)sizeof id->bytes || close(fd) != 0 ||
      rename(tmp, path) != 0) {
    snprintf(why, why_size, "rank 0 cannot write the NCCL unique id to %s: %s", path, strerror(errno));
    if (fd >= 0) unlink(tmp);
    return -1;
  }
  return 0;
}

static int read_id(const mr_world *w, int wait_ms, crec_comm_id *id, char *why, size_t why_size) {
  double end = now_s() + wait_ms / 1000.0;
  for (;;) {
    int fd = open(w->id_file, O_RDONLY);
    if (fd >= 0) {
      ssize_t n = read(fd, id->bytes, sizeof id->bytes);
      close(fd);
      if (n == (ssize_t)sizeof id->bytes) return 0;
      snprintf(why, why_size, "rank %d: %s holds %zd bytes, not an NCCL unique id of %zu", w->rank, w->id_file, n,
               sizeof id->bytes);
      return -1;
    }
    if (errno != ENOENT) {
      snprintf(why, why_size, "rank %d: cannot read %s: %s", w->rank, w->id_file, strerror(errno));
      return -1;
    }
    if (now_s() > end) {
      snprintf(why, why_size, "rank %d: no NCCL unique id in %s after %d ms (did rank 0 start, and get an id?)",
               w->rank, w->id_file, wait_ms);
      return -1;
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

int mr_share_id(const mr_world *w, int wait_ms, crec_comm_id *id, crec_status *status, char *why, size_t why_size) {
  *status = CREC_OK;
  memset(id, 0, sizeof *id);
  /* NCCL_COMM_ID: ncclGetUniqueId derives the same id on every rank */
  if (w->rank == 0 || w->comm_id || !w->id_file) {
    crec_status s = crec_comm_get_unique_id(id);
    if (s) {
      *status = s;
      snprintf(why, why_size, "rank %d: %s", w->rank, crec_last_error());
      return -1;
    }
    if (w->rank == 0 && w->id_file && !w->comm_id) return write_id(w->id_file, id, why, why_size);
    return 0;
  }
  return read_id(w, wait_ms, id, why, why_size);
}
