/// \file feed.h
/// Infeed and outfeed (XLA's): host-side queues that a program reads from and
/// writes to in stream order. An infeed command takes the next value pushed to
/// its queue and copies it into device memory; an outfeed command copies device
/// memory out and queues it for the host to pop. Each is a host callback over a
/// page-locked staging buffer (a host temporary named `<command>.staging`) and a
/// copy, so it runs in every execution (replays and eager runs) in program order
/// among the program's host callbacks, and the hazards on its range order it
/// against the kernels around it. Queues are process-wide, named, and
/// thread-safe, with a bounded capacity.
///
/// A host node cannot fail a graph: a feed command that waits past its deadline,
/// or finds a value of another size (which it drops), lets its execution go on
/// without the value (an infeed then copies zeros) and leaves an error on its
/// queue. The next
/// crec_infeed_push(), crec_outfeed_pop() or crec_feed_check() of that queue
/// returns it (CREC_ERR_TIMEOUT or CREC_ERR_BINDING, naming the command), once.
///
/// Limits: feed commands cannot be recorded inside while, if or switch regions
/// (host callbacks cannot: crec_record() refuses them; eager runs take them), and
/// programs with feed commands cannot be serialized (host callbacks cannot).
#ifndef CREC_FEED_H
#define CREC_FEED_H

#include "crec/callback.h"
#include "crec/program.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A feed command's queue and how long it waits.
typedef struct crec_feed {
  size_t struct_size;   ///< sizeof(crec_feed)
  const char *queue;    ///< the queue's name (copied); created on first use
  uint32_t timeout_ms;  ///< how long the host node waits for a value (infeed) or for room (outfeed); 0: 10000
} crec_feed;
#define CREC_FEED_INIT {sizeof(crec_feed), NULL, 0}

/// The capacity a queue gets when it is created (values queued at most).
#define CREC_FEED_DEFAULT_CAPACITY 64

/// Appends an infeed: at each execution, the next value pushed to `feed->queue`
/// (exactly `dst`'s bytes) lands in `dst`. Adds a host temporary
/// `<name>.staging`, a host callback that pops into it, and a copy from it to
/// `dst`; `*out` (may be NULL) receives the copy, after which `dst` holds the
/// value. `name` may be NULL: "infeed<N>", N the number of commands before it.
/// `dst` needs a static size.
/// Errors: CREC_ERR_NULL_POINTER (program, feed, feed->queue), CREC_ERR_INVALID_ARGUMENT
/// (struct_size, an empty queue name, an empty or dynamic range), CREC_ERR_INVALID_HANDLE,
/// CREC_ERR_OUT_OF_RANGE, CREC_ERR_DUPLICATE_NAME (the staging buffer's name), and those of
/// crec_program_add_host_temporary(), crec_program_add_host_callback() and
/// crec_program_add_memcpy(). On failure `*out` is the null handle, and the program may
/// hold the staging buffer and, when the second of the two commands could not be added
/// (out of memory, or the program's last command slot taken), the first.
crec_status crec_program_add_infeed(crec_program *program, crec_region region, const char *name,
                                    const crec_feed *feed, crec_range dst, crec_command *out);

/// Appends an outfeed: at each execution, `src`'s bytes are copied out and
/// queued on `feed->queue` for crec_outfeed_pop(). Adds a host temporary
/// `<name>.staging`, a copy into it, and a host callback that queues it; `*out`
/// (may be NULL) receives the callback. `name` may be NULL ("outfeed<N>").
/// Errors: as crec_program_add_infeed().
crec_status crec_program_add_outfeed(crec_program *program, crec_region region, const char *name,
                                     const crec_feed *feed, crec_range src, crec_command *out);

/// Queues a copy of `size` bytes at `data` on infeed queue `queue`, waiting up to
/// `timeout_ms` for room (0: do not wait). Thread-safe.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (size 0), CREC_ERR_TOO_LARGE,
/// CREC_ERR_TIMEOUT (the queue stayed full), CREC_ERR_OUT_OF_MEMORY, and an error a
/// feed command left on the queue (reported once, before anything is queued).
crec_status crec_infeed_push(const char *queue, const void *data, uint64_t size, uint32_t timeout_ms);

/// Takes the oldest value of outfeed queue `queue` into `data` (`size` bytes, which
/// must be the value's size), waiting up to `timeout_ms` for one (0: do not wait).
/// Thread-safe. Errors: CREC_ERR_NULL_POINTER, CREC_ERR_TIMEOUT (the queue stayed
/// empty), CREC_ERR_BINDING (the value has another size: it stays queued), and an error
/// a feed command left on the queue (reported once, before anything is taken).
crec_status crec_outfeed_pop(const char *queue, void *data, uint64_t size, uint32_t timeout_ms);

/// Returns, once, the error a feed command left on `queue` (CREC_OK when none),
/// and the number of values queued now in `*queued` (may be NULL).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_TIMEOUT, CREC_ERR_BINDING.
crec_status crec_feed_check(const char *queue, size_t *queued);

/// Sets the capacity of `queue` (creating it): pushes wait while it holds that many
/// values. Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (0).
crec_status crec_feed_set_capacity(const char *queue, size_t capacity);

#ifdef __cplusplus
}
#endif
#endif
