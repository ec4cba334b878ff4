/* Diagnostics, a growable string, and whole-file reads and writes (atomic ones too). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

int crec_tool_fail(crec_tool_diag *d, const char *where, const char *fmt, ...) {
  if (!d) return -1;
  d->device_assert = false;
  d->abandoned = false;
  snprintf(d->where, sizeof d->where, "%s", where ? where : "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->message, sizeof d->message, fmt, ap);
  va_end(ap);
  return -1;
}

void crec_tool_diag_print(const crec_tool_diag *d, FILE *err) {
  /* one line, whatever the message holds */
  char line[sizeof d->message];
  snprintf(line, sizeof line, "%s", d->message);
  for (char *c = line; *c; c++)
    if (*c == '\n' || *c == '\r') *c = ' ';
  if (d->where[0]) fprintf(err, "crec: error: %s: %s\n", d->where, line);
  else fprintf(err, "crec: error: %s\n", line);
}

/* Length of a "file:line:col: " prefix at `s` (0 when there is none). */
static size_t location_prefix(const char *s) {
  const char *colon = NULL;
  /* the file part: anything up to a ':' followed by digits, ':', digits, ':' */
  for (const char *p = s; *p && *p != '\n'; p++) {
    if (*p != ':') continue;
    const char *q = p + 1;
    if (!isdigit((unsigned char)*q)) continue;
    while (isdigit((unsigned char)*q)) q++;
    if (*q != ':' || !isdigit((unsigned char)q[1])) continue;
    q++;
    while (isdigit((unsigned char)*q)) q++;
    if (*q != ':') continue;
    colon = q;
    break;
  }
  if (!colon || colon == s) return 0;
  size_t n = (size_t)(colon - s) + 1;
  while (s[n] == ' ') n++;
  return n;
}

int crec_tool_fail_library(crec_tool_diag *d, const char *fallback_where, const char *context) {
  return crec_tool_fail_message(d, fallback_where, context, crec_last_error());
}

int crec_tool_fail_message(crec_tool_diag *d, const char *fallback_where, const char *context, const char *m) {
  /* drop "crec_fn: " prefixes added by each layer of the library */
  for (;;) {
    if (strncmp(m, "crec_", 5) != 0) break;
    const char *p = m;
    while (isalnum((unsigned char)*p) || *p == '_') p++;
    if (p[0] != ':' || p[1] != ' ') break;
    m = p + 2;
  }
  if (!*m) m = "unknown failure (the library gave no message)";
  size_t loc = location_prefix(m);
  char where[sizeof d->where];
  if (loc) {
    size_t n = loc;
    while (n && (m[n - 1] == ' ' || m[n - 1] == ':')) n--;
    snprintf(where, sizeof where, "%.*s", (int)n, m);
    m += loc;
  } else {
    snprintf(where, sizeof where, "%s", fallback_where ? fallback_where : "");
  }
  if (context && *context) crec_tool_fail(d, where, "%s: %s", context, m);
  else crec_tool_fail(d, where, "%s", m);
  /* the library names the driver's error (record/runtime/driver.c) */
  if (d) d->device_assert = strstr(m, "failed: CUDA_ERROR_ASSERT") != NULL;
  return -1;
}

static int reserve(crec_tool_buf *b, size_t extra) {
  if (b->failed) return -1;
  if (b->len + extra + 1 <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1) cap *= 2;
  char *p = realloc(b->data, cap);
  if (!p) {
    b->failed = 1;
    return -1;
  }
  b->data = p;
  b->cap = cap;
  return 0;
}

void crec_tool_buf_putn(crec_tool_buf *b, const char *s, size_t n) {
  if (reserve(b, n)) return;
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void crec_tool_buf_puts(crec_tool_buf *b, const char *s) { crec_tool_buf_putn(b, s, strlen(s)); }

void crec_tool_buf_printf(crec_tool_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->failed = 1;
    return;
  }
  if (reserve(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

/* Appends `s` with each character of `from` replaced by the string at its
 * index in `to`; when `as_hex` is not NULL (JSON), its characters and the
 * control characters are written as \uXXXX. */
static void put_escaped(crec_tool_buf *b, const char *s, const char *from, const char *const *to, const char *as_hex) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    const char *at = strchr(from, *p);
    if (at) crec_tool_buf_puts(b, to[at - from]);
    else if (as_hex && (*p < 0x20 || strchr(as_hex, *p))) crec_tool_buf_printf(b, "\\u%04x", *p);
    else crec_tool_buf_putn(b, (const char *)p, 1);
  }
}

void crec_tool_buf_json_string(crec_tool_buf *b, const char *s) {
  static const char *const to[] = {"\\\"", "\\\\", "\\n", "\\t", "\\r"};
  crec_tool_buf_putn(b, "\"", 1);
  put_escaped(b, s, "\"\\\n\t\r", to, "<>&");
  crec_tool_buf_putn(b, "\"", 1);
}

void crec_tool_buf_html(crec_tool_buf *b, const char *s) {
  static const char *const to[] = {"&lt;", "&gt;", "&amp;", "&quot;", "&#39;"};
  put_escaped(b, s, "<>&\"'", to, NULL);
}

void crec_tool_buf_free(crec_tool_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
  b->failed = 0;
}

int crec_tool_write_file(const char *path, const void *data, size_t size, crec_tool_diag *d) {
  FILE *f = fopen(path, "wb");
  if (!f) return crec_tool_fail(d, path, "cannot create the file: %s", strerror(errno));
  size_t n = size ? fwrite(data, 1, size, f) : 0;
  int err = n != size ? errno : 0;
  if (fclose(f) != 0 && !err) err = errno ? errno : EIO;
  if (n != size || err) return crec_tool_fail(d, path, "cannot write the file: %s", strerror(err ? err : EIO));
  return 0;
}

int crec_tool_read_file(const char *path, char **data, size_t *size, crec_tool_diag *d) {
  *data = NULL;
  if (size) *size = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return crec_tool_fail(d, path, "cannot open the file: %s", strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return crec_tool_fail(d, path, "not a regular file");
  }
  size_t n = (size_t)st.st_size;
  char *p = malloc(n + 1);
  if (!p) {
    fclose(f);
    return crec_tool_fail(d, path, "out of memory reading %zu bytes", n);
  }
  size_t got = n ? fread(p, 1, n, f) : 0;
  int bad = ferror(f);
  fclose(f);
  if (got != n || bad) {
    free(p);
    return crec_tool_fail(d, path, "cannot read the file: %s", bad ? strerror(errno) : "it changed size while read");
  }
  p[n] = '\0';
  *data = p;
  if (size) *size = n;
  return 0;
}

int crec_tool_write_file_atomic(const char *path, const void *data, size_t size, crec_tool_diag *d) {
  /* the temporary file sits beside the target, so the rename stays within one file system */
  const char *slash = strrchr(path, '/');
  size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
  size_t tmp_size = strlen(path) + 16;
  char *tmp = malloc(tmp_size);
  if (!tmp) return crec_tool_fail(d, path, "out of memory");
  snprintf(tmp, tmp_size, "%.*s.%s.XXXXXX", (int)dir_len, path, path + dir_len);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    int e = errno;
    crec_tool_fail(d, path, "cannot create a temporary file in '%.*s': %s", dir_len ? (int)dir_len : 1,
                   dir_len ? path : ".", strerror(e));
    free(tmp);
    return -1;
  }
  /* mkstemp makes the file 0600; give it what a new file would get */
  mode_t mask = umask(0);
  umask(mask);
  int err = fchmod(fd, 0666 & ~mask) != 0 ? errno : 0;
  for (size_t done = 0; !err && done < size;) {
    ssize_t n = write(fd, (const char *)data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) err = n < 0 ? errno : EIO;
    else done += (size_t)n;
  }
  if (close(fd) != 0 && !err) err = errno;
  if (!err && rename(tmp, path) != 0) err = errno;
  if (err) {
    unlink(tmp);
    crec_tool_fail(d, path, "cannot write the file: %s", strerror(err));
  }
  free(tmp);
  return err ? -1 : 0;
}

double crec_tool_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

double crec_tool_process_start_us(void) {
  /* field 22 of /proc/self/stat, after the command name in parentheses: the start
   * in clock ticks since boot, on the clock of CLOCK_BOOTTIME */
  FILE *f = fopen("/proc/self/stat", "r");
  if (!f) return 0;
  char line[1024];
  size_t n = fread(line, 1, sizeof line - 1, f);
  fclose(f);
  line[n] = '\0';
  const char *p = strrchr(line, ')');
  unsigned long long ticks = 0;
  for (int field = 2; p && field < 22; field++) p = strchr(p + 1, ' ');
  long hz = sysconf(_SC_CLK_TCK);
  if (!p || sscanf(p + 1, "%llu", &ticks) != 1 || hz <= 0) return 0;
  struct timespec boot;
  if (clock_gettime(CLOCK_BOOTTIME, &boot) != 0) return 0;
  double since = ((double)boot.tv_sec * 1e6 + (double)boot.tv_nsec / 1e3) - (double)ticks * 1e6 / (double)hz;
  return since >= 0 ? crec_tool_now_us() - since : 0;
}

/* ---- what an execution prints ----------------------------------------------- */

int crec_tool_capture_begin(crec_tool_capture *c, crec_tool_diag *d) {
  c->saved_fd = -1;
  c->file = NULL;
  fflush(stdout);
  const char *call = "tmpfile";
  if (!(c->file = tmpfile())) goto fail;
  call = "dup";
  if ((c->saved_fd = dup(STDOUT_FILENO)) < 0) goto fail;
  call = "dup2";
  if (dup2(fileno(c->file), STDOUT_FILENO) < 0) goto fail;
  return 0;
fail:;
  int e = errno;
  if (c->saved_fd >= 0) close(c->saved_fd);
  if (c->file) fclose(c->file);
  c->saved_fd = -1;
  c->file = NULL;
  return crec_tool_fail(d, NULL, "capturing what the program prints: %s failed: %s", call, strerror(e));
}

void crec_tool_capture_end(crec_tool_capture *c, char **text, size_t *size) {
  *text = NULL;
  *size = 0;
  fflush(stdout);
  if (c->saved_fd >= 0) {
    dup2(c->saved_fd, STDOUT_FILENO);
    close(c->saved_fd);
    c->saved_fd = -1;
  }
  if (!c->file) return;
  /* descriptor 1 wrote through its own offset: the file's end is what was printed */
  long n = fseek(c->file, 0, SEEK_END) == 0 ? ftell(c->file) : -1;
  char *t = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (t) {
    rewind(c->file);
    if (fread(t, 1, (size_t)n, c->file) == (size_t)n) {
      t[n] = '\0';
      *text = t;
      *size = (size_t)n;
    } else {
      free(t);
    }
  }
  fclose(c->file);
  c->file = NULL;
}

typedef struct out_line {
  const char *s;
  size_t n;
} out_line;

/* The lines of `t` (the last one may lack its newline); NULL when memory ran out. */
static out_line *split_lines(const char *t, size_t n, size_t *count) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += t[i] == '\n';
  k += n && t[n - 1] != '\n';
  out_line *v = malloc((k ? k : 1) * sizeof *v);
  if (!v) return NULL;
  size_t j = 0, start = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i < n && t[i] != '\n') continue;
    if (i > start || i < n) v[j++] = (out_line){t + start, i - start};
    start = i + 1;
  }
  *count = j;
  return v;
}

static int line_cmp(const void *x, const void *y) {
  const out_line *a = x, *b = y;
  int c = memcmp(a->s, b->s, a->n < b->n ? a->n : b->n);
  return c ? c : (a->n > b->n) - (a->n < b->n);
}

/* Writes at most 60 bytes of the line (NULL: there is none), printable ASCII
 * or escaped, in quotes: up to 246 bytes with its NUL, so `size` is 256. */
enum { QUOTED_LINE = 256 };
static void quote_line(char *out, size_t size, const out_line *l) {
  if (!l) {
    snprintf(out, size, "nothing (no such line)");
    return;
  }
  size_t o = 0;
  out[o++] = '\'';
  for (size_t i = 0; i < l->n && i < 60; i++) {
    unsigned char ch = (unsigned char)l->s[i];
    if (ch >= 0x20 && ch < 0x7f) out[o++] = (char)ch;
    else o += (size_t)snprintf(out + o, size - o, "\\x%02x", ch);
  }
  if (l->n > 60) out[o++] = '.', out[o++] = '.', out[o++] = '.';
  out[o++] = '\'';
  out[o] = '\0';
}

/* A copy of `t` with the address after each "base@ = " (what printMemref*
 * prints first: where the memref lives) replaced by "?"; NULL when memory ran out. */
static char *mask_addresses(const char *t, size_t n, size_t *out_n) {
  static const char key[] = "base@ = ";
  const size_t kl = sizeof key - 1;
  char *m = malloc(n + 1);
  if (!m) return NULL;
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    if (n - i >= kl && !memcmp(t + i, key, kl)) {
      memcpy(m + o, key, kl), o += kl, i += kl;
      size_t j = i;
      while (j < n && t[j] != ' ' && t[j] != '\n') j++;
      if (j > i) m[o++] = '?';
      i = j;
    } else {
      m[o++] = t[i++];
    }
  }
  m[o] = '\0';
  *out_n = o;
  return m;
}

int crec_tool_compare_output(const char *a0, size_t na0, const char *b0, size_t nb0, char *why, size_t why_size) {
  if (why_size) why[0] = '\0';
  if (na0 == nb0 && !memcmp(a0, b0, na0)) return 0;
  size_t na = 0, nb = 0, ka = 0, kb = 0;
  char *a = mask_addresses(a0, na0, &na), *b = mask_addresses(b0, nb0, &nb);
  out_line *la = a ? split_lines(a, na, &ka) : NULL, *lb = b ? split_lines(b, nb, &kb) : NULL;
  int r = -1;
  if (!la || !lb) {
    snprintf(why, why_size, "the printed text differs (out of memory to say where)");
    goto done;
  }
  if (na == nb && !memcmp(a, b, na)) {
    r = 0;
    goto done;
  }
  /* the first line that differs, in printed order */
  size_t at = 0;
  while (at < ka && at < kb && !line_cmp(&la[at], &lb[at])) at++;
  char qa[QUOTED_LINE], qb[QUOTED_LINE];
  quote_line(qa, sizeof qa, at < ka ? &la[at] : NULL);
  quote_line(qb, sizeof qb, at < kb ? &lb[at] : NULL);
  snprintf(why, why_size, "line %zu: %s against %s (%zu lines against %zu)", at + 1, qa, qb, ka, kb);
  if (ka == kb && na == nb) {
    qsort(la, ka, sizeof *la, line_cmp);
    qsort(lb, kb, sizeof *lb, line_cmp);
    size_t i = 0;
    while (i < ka && !line_cmp(&la[i], &lb[i])) i++;
    if (i == ka) {
      r = 1;
      if (why_size) why[0] = '\0';
    }
  }
done:
  free(la);
  free(lb);
  free(a);
  free(b);
  return r;
}
