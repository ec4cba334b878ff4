/* The persistent cache of lowered programs (lower.h): a second process that
 * lowers the same text with the same options reads the program back from a
 * file instead of running MLIR and compiling its kernels again.
 *
 * An entry is a program file (serialize.h) behind a small header: the key it
 * was made for, the diagnostics the lowering emitted (replayed on a hit, so a
 * warning is never lost to the cache), and a checksum over both. The key is a
 * 128-bit hash of the text, the entry name, the file name (locations name it),
 * the chip, the kind of kernel image (PTX or cubin), the crec and LLVM
 * versions, and the build of crec itself (the GNU build ids of the objects the
 * front end and libcrec are in, or those files' size and time): a front end changed and rebuilt
 * within one version lowers differently, and must not be served another's.
 *
 * Safety on a shared machine: the directory is made private (0700) and used
 * only while it is a directory of this user that nobody else can write; an
 * entry is used only when it is a regular file of this user, and it is
 * verified (magic, key, checksum, then every check of deserialization) before
 * use. A bad entry counts as rejected, is removed, and is made again. Entries
 * are written to a temporary file and renamed into place, so concurrent
 * processes never see half an entry. The least recently used entries go when
 * the directory grows past its cap. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <llvm/Config/llvm-config.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crec/serialize.h"
#include "lower_internal.h"

#define ENTRY_MAGIC "crecc\0\0\1"
#define ENTRY_SUFFIX ".crecc"
#define DEFAULT_MAX_BYTES (256ull << 20)
#define MAX_ENTRY_BYTES (1ull << 30)

static pthread_mutex_t disk_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t disk_hits, disk_misses, disk_writes, disk_evictions, disk_rejected, disk_uncacheable;

static void count(uint64_t *counter) {
  pthread_mutex_lock(&disk_lock);
  (*counter)++;
  pthread_mutex_unlock(&disk_lock);
}

void crec__lw_disk_stats(uint64_t out[6]) {
  pthread_mutex_lock(&disk_lock);
  out[0] = disk_hits, out[1] = disk_misses, out[2] = disk_writes;
  out[3] = disk_evictions, out[4] = disk_rejected, out[5] = disk_uncacheable;
  pthread_mutex_unlock(&disk_lock);
}

/* ---- hashing ---- */

typedef struct hasher {
  uint64_t a, b;
} hasher;

static void hash_bytes(hasher *h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h->a = (h->a ^ p[i]) * 0x100000001b3ull; /* FNV-1a */
    h->b = (h->b + p[i] + 1) * 0x9e3779b97f4a7c15ull;
    h->b ^= h->b >> 29;
  }
}

static void hash_str(hasher *h, const char *s) { hash_bytes(h, s ? s : "", (s ? strlen(s) : 0) + 1); }

static uint64_t checksum(const void *data, size_t n) {
  hasher h = {0xcbf29ce484222325ull, 0};
  hash_bytes(&h, data, n);
  return h.a ^ h.b;
}

/* ---- where ---- */

/* The cache directory into `dir`; false when no directory is known (no
 * CREC_CACHE_DIR, XDG_CACHE_HOME or HOME). cache_dir(): false also when the
 * cache is off (CREC_CACHE=0). */
static bool locate(char *dir, size_t size) {
  const char *d = getenv("CREC_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int n;
  if (d && d[0]) n = snprintf(dir, size, "%s", d);
  else if (xdg && xdg[0] == '/') n = snprintf(dir, size, "%s/crec", xdg);
  else if (home && home[0]) n = snprintf(dir, size, "%s/.cache/crec", home);
  else return false;
  return n > 0 && (size_t)n < size;
}

static bool cache_dir(char *dir, size_t size) {
  const char *off = getenv("CREC_CACHE");
  if (off && strcmp(off, "0") == 0) return false;
  return locate(dir, size);
}

static uint64_t max_bytes(void) {
  const char *s = getenv("CREC_CACHE_MAX_BYTES");
  if (!s || !s[0]) return DEFAULT_MAX_BYTES;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  return *end ? DEFAULT_MAX_BYTES : (uint64_t)v;
}

/* Makes `dir` (and missing parents) private to this user; true when it is a
 * directory of this user that nobody else may write. */
static bool ready_dir(char *dir) {
  for (char *s = dir + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    (void)mkdir(dir, 0700); /* an existing parent stays as it is */
    *s = '/';
  }
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) return false;
  struct stat st;
  if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) return false;
  return true;
}

/* ---- the key ---- */

/* The build of crec: the GNU build ids of the loaded objects that hold the
 * front end (libcrec-mlir.so) and the program files' code (libcrec.so), or
 * the program linked with them, found once. */
typedef struct build_search {
  uintptr_t addr;
  bool found;
  char id[160]; /* hex of the build id, or "path size mtime" */
} build_search;

static int find_build(struct dl_phdr_info *info, size_t size, void *user) {
  (void)size;
  build_search *b = user;
  bool mine = false;
  for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph->p_vaddr;
    mine = ph->p_type == PT_LOAD && b->addr >= start && b->addr < start + ph->p_memsz;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
      const unsigned char *name = p + sizeof *n, *desc = name + ((n->n_namesz + 3) & ~3u);
      if (desc + n->n_descsz > end) break;
      if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 && n->n_descsz <= 64) {
        for (size_t k = 0; k < n->n_descsz; k++) snprintf(b->id + 2 * k, 3, "%02x", desc[k]);
        b->found = true;
        return 1;
      }
      p = desc + ((n->n_descsz + 3) & ~3u);
    }
  }
  /* no build id: the file itself, by size and time */
  struct stat st;
  const char *path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe";
  if (stat(path, &st) == 0) {
    snprintf(b->id, sizeof b->id, "%s %lld %lld", path, (long long)st.st_size, (long long)st.st_mtime);
    b->found = true;
  }
  return 1;
}

static pthread_once_t build_once = PTHREAD_ONCE_INIT;
static build_search build, core_build;

static void find_build_once(void) {
  build.addr = (uintptr_t)&crec__lw_disk_key;
  dl_iterate_phdr(find_build, &build);
  /* libcrec writes and reads the program files the cache holds */
  core_build.addr = (uintptr_t)crec_program_serialize;
  dl_iterate_phdr(find_build, &core_build);
}

void crec__lw_disk_key(const lw *L, const char *text, size_t length, char key[33]) {
  hasher h = {0xcbf29ce484222325ull, 0x243f6a8885a308d3ull};
  hash_str(&h, "crec lowered program");
  hash_str(&h, CREC_VERSION_STRING);
  hash_str(&h, LLVM_VERSION_STRING);
  pthread_once(&build_once, find_build_once);
  hash_str(&h, build.found ? build.id : "unknown build");
  hash_str(&h, core_build.found ? core_build.id : "unknown build");
  hash_str(&h, L->chip);
  hash_str(&h, L->entry_name);
  hash_str(&h, L->filename);
  hash_str(&h, L->cubin ? "cubin" : "ptx");
  hash_str(&h, L->early_start ? "early start" : "in order");
  hash_bytes(&h, text, length);
  snprintf(key, 33, "%016llx%016llx", (unsigned long long)h.a, (unsigned long long)h.b);
}

bool crec__lw_disk_cacheable(const char *text, size_t length) {
  /* crec.image reads a file the key does not cover: such programs are not cached */
  static const char needle[] = "crec.image";
  size_t n = sizeof needle - 1;
  for (size_t i = 0; i + n <= length; i++)
    if (text[i] == 'c' && memcmp(text + i, needle, n) == 0) return false;
  char dir[4096];
  return cache_dir(dir, sizeof dir);
}

/* ---- an entry ---- */

/* Header: magic, key, the bytes of the diagnostics and of the program, and a
 * checksum over all that follows the header. Diagnostics are records of three
 * NUL-terminated strings: severity, location, message. */
typedef struct entry_header {
  char magic[8];
  char key[32];
  uint64_t diag_bytes, program_bytes;
  uint64_t checksum;
} entry_header;

static void entry_path(char *out, size_t size, const char *dir, const char *key) {
  snprintf(out, size, "%s/%s%s", dir, key, ENTRY_SUFFIX);
}

static bool is_entry_name(const char *name) {
  size_t len = strlen(name);
  return len == 32 + strlen(ENTRY_SUFFIX) && strcmp(name + 32, ENTRY_SUFFIX) == 0;
}

/* lstat of `path`, true when it is a regular file of this user. */
static bool own_file(const char *path, struct stat *st) {
  return lstat(path, st) == 0 && S_ISREG(st->st_mode) && st->st_uid == geteuid();
}

/* Reads the entry at `path` whole: NULL when absent, not ours, or unreadable. */
static unsigned char *read_entry(const char *path, size_t *size, bool *present) {
  *present = false;
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return NULL;
  *present = true;
  struct stat st;
  unsigned char *buf = NULL;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_size > 0 &&
      (uint64_t)st.st_size <= MAX_ENTRY_BYTES) {
    buf = crec__malloc((size_t)st.st_size);
    size_t got = 0;
    while (buf && got < (size_t)st.st_size) {
      ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
      if (r <= 0) break;
      got += (size_t)r;
    }
    if (buf && got != (size_t)st.st_size) {
      crec__free(buf);
      buf = NULL;
    }
    *size = got;
    if (buf) (void)futimens(fd, NULL); /* a use: the least recently used entries are evicted first */
  }
  close(fd);
  return buf;
}

/* Checks an entry read whole against `key`; on success points at its parts. */
static bool parse_entry(const unsigned char *buf, size_t size, const char *key, const unsigned char **diags,
                        size_t *diag_bytes, const unsigned char **program, size_t *program_bytes) {
  entry_header h;
  if (size < sizeof h) return false;
  memcpy(&h, buf, sizeof h);
  if (memcmp(h.magic, ENTRY_MAGIC, 8) != 0 || memcmp(h.key, key, 32) != 0) return false;
  if (h.diag_bytes > size - sizeof h || h.program_bytes != size - sizeof h - h.diag_bytes) return false;
  if (checksum(buf + sizeof h, size - sizeof h) != h.checksum) return false;
  *diags = buf + sizeof h;
  *diag_bytes = (size_t)h.diag_bytes;
  *program = buf + sizeof h + h.diag_bytes;
  *program_bytes = (size_t)h.program_bytes;
  /* the diagnostics must be whole records */
  size_t strings = 0;
  for (size_t i = 0; i < *diag_bytes; i++) strings += (*diags)[i] == '\0';
  return strings % 3 == 0 && (*diag_bytes == 0 || (*diags)[*diag_bytes - 1] == '\0');
}

static void replay_diags(const lw *L, const unsigned char *d, size_t n) {
  if (!L->diagnostic) return;
  const char *p = (const char *)d, *end = p + n;
  while (p < end) {
    const char *sev = p, *loc = sev + strlen(sev) + 1, *msg = loc + strlen(loc) + 1;
    L->diagnostic(L->diagnostic_user, sev, loc, msg);
    p = msg + strlen(msg) + 1;
  }
}

bool crec__lw_disk_get(const lw *L, const char *key, crec_program **out) {
  *out = NULL;
  char dir[4096], path[4400];
  if (!cache_dir(dir, sizeof dir) || !ready_dir(dir)) return false;
  entry_path(path, sizeof path, dir, key);
  size_t size = 0;
  bool present;
  unsigned char *buf = read_entry(path, &size, &present);
  const unsigned char *diags, *program;
  size_t diag_bytes, program_bytes;
  bool hit = false;
  if (buf && parse_entry(buf, size, key, &diags, &diag_bytes, &program, &program_bytes) &&
      crec_program_deserialize(program, program_bytes, out) == CREC_OK) {
    count(&disk_hits);
    replay_diags(L, diags, diag_bytes);
    hit = true;
  } else {
    if (present) {
      /* not ours, damaged or of another format: made again (and replaced, if ours) */
      count(&disk_rejected);
      struct stat st;
      if (own_file(path, &st)) (void)unlink(path);
    }
    count(&disk_misses);
  }
  crec__free(buf);
  return hit;
}

/* An entry as the directory holds it. */
typedef struct entry_item {
  char name[40]; /* 32 hex digits and the suffix */
  struct timespec used;
  uint64_t size;
} entry_item;

/* The entries of `dir` that are this user's files (*items: the caller's,
 * crec__free), and their bytes; fewer when out of memory. */
static size_t list_entries(const char *dir, entry_item **items, uint64_t *total) {
  *items = NULL;
  *total = 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  size_t n = 0, cap = 0;
  char path[4400];
  for (struct dirent *de; (de = readdir(d));) {
    struct stat st;
    if (!is_entry_name(de->d_name)) continue;
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    if (!own_file(path, &st)) continue;
    if (n == cap && CREC__RESERVE(*items, cap, n + 1) != CREC_OK) break;
    entry_item *it = &(*items)[n++];
    memcpy(it->name, de->d_name, strlen(de->d_name) + 1); /* the length is_entry_name() checked */
    it->used = st.st_mtim;
    it->size = (uint64_t)st.st_size;
    *total += it->size;
  }
  closedir(d);
  return n;
}

static bool older(const struct timespec *a, const struct timespec *b) {
  return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* Removes the least recently used entries until the directory holds at most `cap` bytes. */
static void evict(const char *dir, uint64_t cap) {
  entry_item *items;
  uint64_t total;
  size_t n = list_entries(dir, &items, &total);
  char path[4400];
  while (total > cap && n) {
    size_t lru = 0;
    for (size_t i = 1; i < n; i++)
      if (older(&items[i].used, &items[lru].used)) lru = i;
    snprintf(path, sizeof path, "%s/%s", dir, items[lru].name);
    if (unlink(path) == 0) count(&disk_evictions);
    total -= items[lru].size;
    items[lru] = items[--n];
  }
  crec__free(items);
}

void crec__lw_disk_put(const char *key, const crec_program *p, const crec__text *diags) {
  char dir[4096], path[4400], tmp[4500];
  if (!cache_dir(dir, sizeof dir) || !ready_dir(dir) || diags->failed) return;
  void *bytes = NULL;
  size_t size = 0;
  if (crec_program_serialize(p, &bytes, &size) != CREC_OK) {
    /* host functions, for one, cannot be written to a file (serialize.h) */
    count(&disk_uncacheable);
    return;
  }
  entry_header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, ENTRY_MAGIC, 8);
  memcpy(h.key, key, 32);
  h.diag_bytes = diags->len;
  h.program_bytes = size;
  crec__text body = {0};
  crec__text_putn(&body, diags->data ? diags->data : "", diags->len);
  crec__text_putn(&body, bytes, size);
  crec_free(bytes);
  if (body.failed) {
    crec__free(body.data);
    return;
  }
  h.checksum = checksum(body.data, body.len);
  static unsigned counter;
  snprintf(tmp, sizeof tmp, "%s/.tmp.%ld.%u.%s", dir, (long)getpid(), __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED),
           key);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  bool ok = fd >= 0;
  if (ok) {
    ok = write(fd, &h, sizeof h) == (ssize_t)sizeof h && write(fd, body.data, body.len) == (ssize_t)body.len;
    ok = close(fd) == 0 && ok;
  }
  crec__free(body.data);
  entry_path(path, sizeof path, dir, key);
  if (ok && rename(tmp, path) == 0) {
    count(&disk_writes);
    evict(dir, max_bytes());
  } else if (fd >= 0) {
    (void)unlink(tmp);
  }
}

/* ---- the public side ---- */

crec_status crec__lw_lower_disk_cache_get_info(crec_lower_disk_cache_info *out) {
  static const char fn[] = "crec_lower_disk_cache_get_info";
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  crec_lower_disk_cache_info info = CREC_LOWER_DISK_CACHE_INFO_INIT;
  crec_status s = crec__give_struct(out, &info, sizeof info, sizeof info, fn, "argument 'out'",
                                    "CREC_LOWER_DISK_CACHE_INFO_INIT");
  if (s) return s;
  info.max_bytes = max_bytes();
  if (!locate(info.dir, sizeof info.dir)) info.dir[0] = '\0';
  char dir[sizeof info.dir];
  if (cache_dir(dir, sizeof dir) && (info.enabled = ready_dir(dir))) {
    entry_item *items;
    info.entries = list_entries(dir, &items, &info.bytes);
    crec__free(items);
  }
  return crec__give_struct(out, &info, sizeof info, sizeof info, fn, "argument 'out'", "CREC_LOWER_DISK_CACHE_INFO_INIT");
}

crec_status crec__lw_lower_disk_cache_clear(uint64_t *removed) {
  static const char fn[] = "crec_lower_disk_cache_clear";
  if (removed) *removed = 0;
  char dir[4096], path[4400];
  if (!cache_dir(dir, sizeof dir)) return CREC_OK;
  struct stat st;
  if (lstat(dir, &st) != 0) return CREC_OK; /* nothing was ever cached */
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
    return crec__error(CREC_ERR_IO, fn, "%s is not a directory of this user: nothing removed", dir);
  DIR *d = opendir(dir);
  if (!d) return crec__error(CREC_ERR_IO, fn, "%s: cannot open: %s", dir, strerror(errno));
  for (struct dirent *de; (de = readdir(d));) {
    bool entry = is_entry_name(de->d_name);
    if (!entry && strncmp(de->d_name, ".tmp.", 5) != 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    if (own_file(path, &st) && unlink(path) == 0 && removed && entry) (*removed)++;
  }
  closedir(d);
  return CREC_OK;
}
