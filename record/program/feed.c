/* Infeed and outfeed (feed.h): process-wide named queues, and the builders
 * that make a feed command out of a host temporary, a host callback and a copy.
 * No CUDA here: the host callbacks run on CUDA's host thread, or directly where
 * a test calls them. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#include "crec/feed.h"
#include "crec/inspect.h"

typedef struct feed_item {
  struct feed_item *next;
  uint64_t size;
  uint8_t data[];
} feed_item;

typedef struct feed_queue {
  struct feed_queue *next;
  char *name;
  feed_item *head, *tail;
  size_t count, capacity;
  pthread_cond_t changed;        /* a value came or went */
  crec_status error;             /* left by a feed command, reported once */
  char message[400];
} feed_queue;

static pthread_mutex_t feeds_lock = PTHREAD_MUTEX_INITIALIZER;
static feed_queue *feeds;

/* The queue named `name`, created on first use (the lock held); NULL: out of memory. */
static feed_queue *queue_of(const char *name) {
  for (feed_queue *q = feeds; q; q = q->next)
    if (strcmp(q->name, name) == 0) return q;
  feed_queue *q = crec__calloc(1, sizeof *q);
  if (!q || !(q->name = crec__strdup(name))) {
    crec__free(q);
    return NULL;
  }
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&q->changed, &a);
  pthread_condattr_destroy(&a);
  q->capacity = CREC_FEED_DEFAULT_CAPACITY;
  q->next = feeds;
  feeds = q;
  return q;
}

static struct timespec deadline_in(uint32_t ms) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  t.tv_sec += ms / 1000;
  t.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (t.tv_nsec >= 1000000000L) {
    t.tv_sec++;
    t.tv_nsec -= 1000000000L;
  }
  return t;
}

/* Waits on `q` until `ready(q)` or the deadline; true when ready (the lock held). */
static bool wait_until(feed_queue *q, bool (*ready)(const feed_queue *), uint32_t ms) {
  struct timespec until = deadline_in(ms);
  while (!ready(q))
    if (!ms || pthread_cond_timedwait(&q->changed, &feeds_lock, &until) == ETIMEDOUT) return ready(q);
  return true;
}

static bool has_room(const feed_queue *q) { return q->count < q->capacity; }
static bool has_value(const feed_queue *q) { return q->count > 0; }

/* Reports (and forgets) the error a feed command left on `q`, as `fn`'s. */
static crec_status take_error(feed_queue *q, const char *fn) {
  if (!q->error) return CREC_OK;
  crec_status s = crec__error(q->error, fn, "%s", q->message);
  q->error = CREC_OK;
  return s;
}

/* Leaves an error on `q` for the host, keeping the first until it is reported. */
static void leave_error(feed_queue *q, crec_status s, const char *message) {
  if (q->error) return;
  q->error = s;
  snprintf(q->message, sizeof q->message, "%s", message);
}

static crec_status push(feed_queue *q, const void *data, uint64_t size, uint32_t ms, const char *fn) {
  if (!wait_until(q, has_room, ms))
    return crec__error(CREC_ERR_TIMEOUT, fn, "queue '%s' stayed full (%zu values) for %" PRIu32 " ms", q->name,
                       q->count, ms);
  feed_item *it = crec__malloc(sizeof *it + size);
  if (!it) return crec__oom(fn);
  it->next = NULL;
  it->size = size;
  memcpy(it->data, data, size);
  if (q->tail) q->tail->next = it;
  else q->head = it;
  q->tail = it;
  q->count++;
  pthread_cond_broadcast(&q->changed);
  return CREC_OK;
}

/* Takes the oldest value of `q` into `data` when it has `size` bytes. */
static crec_status pop(feed_queue *q, void *data, uint64_t size, uint32_t ms, const char *fn) {
  if (!wait_until(q, has_value, ms))
    return crec__error(CREC_ERR_TIMEOUT, fn, "queue '%s' stayed empty for %" PRIu32 " ms", q->name, ms);
  feed_item *it = q->head;
  if (it->size != size)
    return crec__error(CREC_ERR_BINDING, fn, "queue '%s': its next value has %" PRIu64 " bytes, not %" PRIu64,
                       q->name, it->size, size);
  memcpy(data, it->data, size);
  q->head = it->next;
  if (!q->head) q->tail = NULL;
  q->count--;
  crec__free(it);
  pthread_cond_broadcast(&q->changed);
  return CREC_OK;
}

crec_status crec_infeed_push(const char *queue, const void *data, uint64_t size, uint32_t timeout_ms) {
  static const char fn[] = "crec_infeed_push";
  if (!queue || !data) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument '%s' is NULL", queue ? "data" : "queue");
  if (!size) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'size' is 0");
  if (size > SIZE_MAX - sizeof(feed_item))
    return crec__error(CREC_ERR_TOO_LARGE, fn, "argument 'size' (%" PRIu64 " bytes) is more than memory holds", size);
  pthread_mutex_lock(&feeds_lock);
  feed_queue *q = queue_of(queue);
  crec_status s = !q ? crec__oom(fn) : take_error(q, fn);
  if (!s) s = push(q, data, size, timeout_ms, fn);
  pthread_mutex_unlock(&feeds_lock);
  return s;
}

crec_status crec_outfeed_pop(const char *queue, void *data, uint64_t size, uint32_t timeout_ms) {
  static const char fn[] = "crec_outfeed_pop";
  if (!queue || !data) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument '%s' is NULL", queue ? "data" : "queue");
  pthread_mutex_lock(&feeds_lock);
  feed_queue *q = queue_of(queue);
  crec_status s = !q ? crec__oom(fn) : take_error(q, fn);
  if (!s) s = pop(q, data, size, timeout_ms, fn);
  pthread_mutex_unlock(&feeds_lock);
  return s;
}

crec_status crec_feed_check(const char *queue, size_t *queued) {
  static const char fn[] = "crec_feed_check";
  if (!queue) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'queue' is NULL");
  pthread_mutex_lock(&feeds_lock);
  feed_queue *q = queue_of(queue);
  crec_status s = !q ? crec__oom(fn) : take_error(q, fn);
  if (q && queued) *queued = q->count;
  pthread_mutex_unlock(&feeds_lock);
  return s;
}

crec_status crec_feed_set_capacity(const char *queue, size_t capacity) {
  static const char fn[] = "crec_feed_set_capacity";
  if (!queue) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'queue' is NULL");
  if (!capacity) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'capacity' is 0");
  pthread_mutex_lock(&feeds_lock);
  feed_queue *q = queue_of(queue);
  if (q) {
    q->capacity = capacity;
    pthread_cond_broadcast(&q->changed);
  }
  pthread_mutex_unlock(&feeds_lock);
  return q ? CREC_OK : crec__oom(fn);
}

/* ---- feed commands ---- */

typedef struct feed_state {
  char *queue;
  uint64_t bytes;
  uint32_t timeout_ms;
  char label[200];  /* "infeed 'name' (queue 'q')" */
} feed_state;

static void feed_state_free(void *user) {
  feed_state *f = user;
  crec__free(f->queue);
  crec__free(f);
}

/* The infeed's host callback: the next value into the staging buffer, or zeros. */
static void feed_in(void *user, void *const *addresses, size_t count) {
  feed_state *f = user;
  if (count < 1) return;
  pthread_mutex_lock(&feeds_lock);
  feed_queue *q = queue_of(f->queue);
  char message[400];
  bool ok = false;
  crec_status left = CREC_ERR_TIMEOUT;
  if (!q) {
    snprintf(message, sizeof message, "%s: out of memory for its queue", f->label);
  } else if (!wait_until(q, has_value, f->timeout_ms)) {
    snprintf(message, sizeof message, "%s: waited %" PRIu32 " ms for a value, and its execution went on without one "
             "(it copied zeros)", f->label, f->timeout_ms);
  } else if (q->head->size != f->bytes) {
    /* dropped: left at the head, it would stop every later execution too */
    snprintf(message, sizeof message, "%s: the next value had %" PRIu64 " bytes, not %" PRIu64 "; it was dropped, "
             "and the execution went on without it (it copied zeros)", f->label, q->head->size, f->bytes);
    feed_item *it = q->head;
    q->head = it->next;
    if (!q->head) q->tail = NULL;
    q->count--;
    crec__free(it);
    pthread_cond_broadcast(&q->changed);
    left = CREC_ERR_BINDING;
  } else {
    ok = pop(q, addresses[0], f->bytes, 0, "infeed") == CREC_OK;
  }
  if (!ok) {
    memset(addresses[0], 0, f->bytes);
    if (q) leave_error(q, left, message);
  }
  pthread_mutex_unlock(&feeds_lock);
}

/* The outfeed's host callback: the staging buffer's bytes onto the queue. */
static void feed_out(void *user, void *const *addresses, size_t count) {
  feed_state *f = user;
  if (count < 1) return;
  pthread_mutex_lock(&feeds_lock);
  feed_queue *q = queue_of(f->queue);
  crec_status s = q ? push(q, addresses[0], f->bytes, f->timeout_ms, "outfeed") : CREC_ERR_OUT_OF_MEMORY;
  if (q && s) {
    char message[400];
    if (s == CREC_ERR_TIMEOUT)
      snprintf(message, sizeof message, "%s: waited %" PRIu32 " ms for room on the queue (%zu values), and dropped "
               "this execution's value", f->label, f->timeout_ms, q->count);
    else
      snprintf(message, sizeof message, "%s: out of memory for this execution's value, which was dropped", f->label);
    leave_error(q, s, message);
  }
  pthread_mutex_unlock(&feeds_lock);
}

static crec_status add_feed(crec_program *p, crec_region region, const char *name, const crec_feed *feed,
                            crec_range range, bool in, crec_command *out, const char *fn) {
  if (out) out->id = 0;
  if (!p) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  if (!feed) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'feed' is NULL");
  if (feed->struct_size < sizeof *feed)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'feed': struct_size %zu is smaller than %zu (use CREC_FEED_INIT)", feed->struct_size,
                       sizeof *feed);
  if (!feed->queue) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'feed->queue' is NULL");
  if (!feed->queue[0]) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'feed->queue' is empty");
  const char *what = in ? "infeed" : "outfeed";
  /* unnamed: "infeed<N>", N the commands before it, so that staging buffers differ */
  char auto_name[48];
  if (!name) {
    snprintf(auto_name, sizeof auto_name, "%s%zu", what, crec_program_command_count(p));
    name = auto_name;
  }
  crec_buffer_info bi;
  crec_status s = crec_buffer_get_info(p, range.buffer, &bi);
  if (s) return crec__rethrow(s, fn);
  if (range.size == CREC_WHOLE && bi.dynamic_size)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s '%s': the whole of '%s', a dynamic-size argument: a feed "
                       "moves a fixed number of bytes",
                       what, name, bi.name);
  if (range.offset > bi.size || (range.size != CREC_WHOLE && range.size > bi.size - range.offset))
    return crec__error(CREC_ERR_OUT_OF_RANGE, fn, "%s '%s': bytes %" PRIu64 "+%" PRIu64 " of '%s', which has %" PRIu64,
                       what, name, range.offset, range.size, bi.name, bi.size);
  uint64_t bytes = range.size == CREC_WHOLE ? bi.size - range.offset : range.size;
  if (!bytes) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s '%s': an empty range", what, name);
  if (in && bi.kind == CREC_BUFFER_CONSTANT)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "infeed '%s': '%s' is a constant", name, bi.name);
  char sname[300];
  snprintf(sname, sizeof sname, "%s.staging", name);
  crec_buffer staging;
  if ((s = crec_program_add_host_temporary(p, sname, bytes, &staging))) return crec__rethrow(s, fn);
  feed_state *f = crec__calloc(1, sizeof *f);
  if (!f || !(f->queue = crec__strdup(feed->queue))) {
    crec__free(f);
    return crec__oom(fn);
  }
  f->bytes = bytes;
  f->timeout_ms = feed->timeout_ms ? feed->timeout_ms : 10000;
  snprintf(f->label, sizeof f->label, "%s '%s' (queue '%s')", what, name, feed->queue);
  crec_operand op = crec_operand_of(crec_range_of(staging, 0, bytes), in ? CREC_ACCESS_WRITE : CREC_ACCESS_READ);
  crec_host_callback cb = CREC_HOST_CALLBACK_INIT;
  cb.fn_buffers = in ? feed_in : feed_out;
  cb.user = f;
  cb.user_free = feed_state_free;
  cb.operands = &op;
  cb.num_operands = 1;
  char cname[300];
  snprintf(cname, sizeof cname, "%s.copy", name);
  crec_range stage = crec_range_of(staging, 0, bytes), user_range = crec_range_of(range.buffer, range.offset, bytes);
  crec_command host, copy;
  if (in) {
    if ((s = crec_program_add_host_callback(p, region, name, &cb, &host))) {
      feed_state_free(f);
      return crec__rethrow(s, fn);
    }
    if ((s = crec_program_add_memcpy(p, region, cname, user_range, stage, &copy))) return crec__rethrow(s, fn);
    if (out) *out = copy;
  } else {
    if ((s = crec_program_add_memcpy(p, region, cname, stage, user_range, &copy))) {
      feed_state_free(f);
      return crec__rethrow(s, fn);
    }
    if ((s = crec_program_add_host_callback(p, region, name, &cb, &host))) {
      feed_state_free(f);
      return crec__rethrow(s, fn);
    }
    if (out) *out = host;
  }
  return CREC_OK;
}

crec_status crec_program_add_infeed(crec_program *program, crec_region region, const char *name,
                                    const crec_feed *feed, crec_range dst, crec_command *out) {
  return add_feed(program, region, name, feed, dst, true, out, "crec_program_add_infeed");
}

crec_status crec_program_add_outfeed(crec_program *program, crec_region region, const char *name,
                                     const crec_feed *feed, crec_range src, crec_command *out) {
  return add_feed(program, region, name, feed, src, false, out, "crec_program_add_outfeed");
}
