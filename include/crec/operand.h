/// \file operand.h
/// Operands of library commands: a buffer range and how the command uses it.
#ifndef CREC_OPERAND_H
#define CREC_OPERAND_H

#include "crec/program.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A buffer range and how a command uses it. For custom commands, a range whose
/// buffer has id 0 is a hole: an unused operand slot, passed as a NULL pointer.
typedef struct crec_operand {
  crec_range range;
  crec_access access;
} crec_operand;

/// Makes an operand.
static inline crec_operand crec_operand_of(crec_range range, crec_access access) {
  crec_operand o = {range, access};
  return o;
}
/// Makes a hole: an operand slot passed to a custom handler as NULL.
static inline crec_operand crec_operand_hole(void) {
  crec_operand o = {{{0}, 0, 0}, CREC_ACCESS_READ};
  return o;
}

#ifdef __cplusplus
}
#endif
#endif
