/* The warnings crec_program_validate() finds, kept in the program until it is
 * freed (crec_program_warning_count(), crec_program_get_warning()).
 *
 * A program is validated by every record, plan, dump and eager run, often from
 * several threads at once, so its entry is read and replaced under one lock:
 * the warnings are found once per version of the program (its command count:
 * commands are only ever appended, and nothing else changes what is read or
 * written), and a version's entry is never replaced while it is current, so
 * the messages handed out stay valid for concurrent readers. */
#include <pthread.h>
#include <string.h>

#include "access.h"

typedef struct crec__warnings {
  size_t version;           /* num_commands when the warnings were found */
  crec_warning_info *items; /* messages point into `text` */
  size_t count;
  char *text;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Under the lock. */
static entry *find(const crec_program *p) { return p->warnings; }

static void free_entry(entry *e) {
  if (!e) return;
  crec__free(e->items);
  crec__free(e->text);
  crec__free(e);
}

/* Collects warnings while they are found: messages go into one text, NUL-separated. */
typedef struct collect {
  const crec_program *p;
  crec_warning_info *items;
  size_t count, cap;
  size_t *offsets; /* of each message in `text` (it moves while it grows) */
  size_t cap_offsets;
  crec__text text;
  bool failed;
} collect;

static bool on_read(void *user, const crec__undefined_read *r) {
  collect *c = user;
  char msg[1024];
  crec__undefined_message(c->p, r, msg, sizeof msg);
  if (CREC__RESERVE(c->items, c->cap, c->count + 1) != CREC_OK ||
      CREC__RESERVE(c->offsets, c->cap_offsets, c->count + 1) != CREC_OK) {
    c->failed = true;
    return true;
  }
  c->offsets[c->count] = c->text.len;
  crec__text_putn(&c->text, msg, strlen(msg) + 1);
  crec_warning_info *w = &c->items[c->count++];
  w->command.id = crec__handle(c->p, r->command);
  w->range = r->range;
  w->access = r->access;
  w->message = NULL;
  return true;
}

crec_status crec__warnings_update(const crec_program *p, const char *fn) {
  pthread_mutex_lock(&lock);
  entry *old = find(p);
  bool current = old && old->version == p->num_commands;
  pthread_mutex_unlock(&lock);
  if (current) return CREC_OK;
  /* found without the lock held: other programs' validations need not wait */
  collect c = {0};
  c.p = p;
  entry *e = crec__calloc(1, sizeof *e);
  crec_status s = e ? crec__undefined_reads(p, on_read, &c) : CREC_ERR_OUT_OF_MEMORY;
  if (!s && (c.failed || c.text.failed)) s = CREC_ERR_OUT_OF_MEMORY;
  if (s) {
    crec__free(c.items);
    crec__free(c.offsets);
    crec__free(c.text.data);
    crec__free(e);
    return crec__oom(fn);
  }
  for (size_t i = 0; i < c.count; i++) c.items[i].message = c.text.data + c.offsets[i];
  crec__free(c.offsets);
  e->version = p->num_commands;
  e->items = c.items;
  e->count = c.count;
  e->text = c.text.data;
  pthread_mutex_lock(&lock);
  old = find(p);
  if (old && old->version == e->version) {
    /* another thread found the same warnings meanwhile: keep the entry readers may hold */
    pthread_mutex_unlock(&lock);
    free_entry(e);
    return CREC_OK;
  }
  if (old) {
    /* the program changed since: nobody may read it concurrently with that change */
    crec_warning_info *items = old->items;
    char *text = old->text;
    old->version = e->version;
    old->items = e->items;
    old->count = e->count;
    old->text = e->text;
    e->items = items;
    e->text = text;
  } else {
    ((crec_program *)p)->warnings = e; /* not part of the program's value: found from it */
    e = NULL;
  }
  pthread_mutex_unlock(&lock);
  free_entry(e);
  return CREC_OK;
}

void crec__warnings_forget(crec_program *p) {
  pthread_mutex_lock(&lock);
  entry *e = p->warnings;
  p->warnings = NULL;
  pthread_mutex_unlock(&lock);
  free_entry(e);
}

size_t crec_program_warning_count(const crec_program *program) {
  if (!program) return 0;
  pthread_mutex_lock(&lock);
  const entry *e = find(program);
  size_t n = e && e->version == program->num_commands ? e->count : 0;
  pthread_mutex_unlock(&lock);
  return n;
}

crec_status crec_program_get_warning(const crec_program *program, size_t index, crec_warning_info *out) {
  static const char fn[] = "crec_program_get_warning";
  if (out) memset(out, 0, sizeof *out);
  if (!program) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  pthread_mutex_lock(&lock);
  const entry *e = find(program);
  size_t n = e && e->version == program->num_commands ? e->count : 0;
  if (index < n) *out = e->items[index];
  pthread_mutex_unlock(&lock);
  if (index >= n)
    return crec__error(CREC_ERR_OUT_OF_RANGE, fn, "argument 'index': %zu, but the program has %zu warnings", index, n);
  return CREC_OK;
}
