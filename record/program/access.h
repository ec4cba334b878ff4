/* What commands read and write: the byte ranges a command touches itself
 * (deps.c, which builds the dependency analysis on them), and the reads of
 * temporary bytes that nothing wrote before (undefined.c, which warnings.c
 * keeps for crec_program_validate() and the front end reports with locations). */
#ifndef CREC_RECORD_ACCESS_H
#define CREC_RECORD_ACCESS_H

#include "internal.h"

/* The slot of a control-flow command's predicate (while, if) or index (switch). */
#define CREC__SLOT_PREDICATE UINT32_MAX

/* Receives one range a command touches and how. `slot` says where the range
 * comes from: a launch's argument index, a library command's operand index
 * (crec_command_get_operand()), 0 for a memcpy's source and 1 for its
 * destination, 0 for a memset's destination, or CREC__SLOT_PREDICATE. */
typedef crec_status (*crec__range_fn)(void *user, crec_range range, crec_access access, uint32_t slot);

/* Calls `fn` for each range command `c` touches itself (not through its
 * regions: a control-flow command gives only its predicate), in the order
 * above; stops at, and returns, the first status that is not CREC_OK. */
crec_status crec__command_ranges(const crec__command *c, crec__range_fn fn, void *user);

/* A read of temporary bytes that no command could have written before it. */
typedef struct crec__undefined_read {
  uint32_t command;   /* command index */
  uint32_t slot;      /* as for crec__range_fn */
  crec_range range;   /* what the command reads (its size resolved) */
  crec_access access; /* CREC_ACCESS_READ, or CREC_ACCESS_READ_WRITE: the command accumulates into it */
} crec__undefined_read;

/* Receives one undefined read; returns true when it reported it, so that later
 * reads of those bytes are not reported again (false: it chose to ignore it). */
typedef bool (*crec__undefined_fn)(void *user, const crec__undefined_read *read);

/* Finds the reads of undefined bytes of `p`, calling `fn` for each in program
 * order (the rule is at the top of undefined.c).
 * Errors: CREC_ERR_OUT_OF_MEMORY (nothing is reported to the thread's last error). */
crec_status crec__undefined_reads(const crec_program *p, crec__undefined_fn fn, void *user);

/* What the command does to the bytes, for messages: "reads", "accumulates into",
 * "reads and writes", "reads its condition from" or "reads its index from". */
const char *crec__undefined_verb(const crec_program *p, const crec__undefined_read *read);
/* The bytes read, for messages: "'tmp'" for the whole buffer, else
 * "bytes [64, 128) of 'tmp'". */
void crec__undefined_what(const crec_program *p, const crec__undefined_read *read, char *buf, size_t size);
/* The C API's message: "command 3 ('mm') accumulates into 'tmp', which nothing
 * wrote before: its bytes are undefined (zero it first with crec_program_add_memset)". */
void crec__undefined_message(const crec_program *p, const crec__undefined_read *read, char *buf, size_t size);

/* Finds and keeps the warnings of `p` as it is now, unless they are kept already
 * (warnings.c; crec_program_validate() calls it). Errors: CREC_ERR_OUT_OF_MEMORY. */
crec_status crec__warnings_update(const crec_program *p, const char *fn);
/* Drops what warnings.c keeps for `p` (when the program is freed). */
void crec__warnings_forget(crec_program *p);

#endif
