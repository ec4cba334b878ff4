/// \file crec.h
/// crec: record lowered GPU programs into CUDA graphs once, replay them many times.
/// Includes every public header.
#ifndef CREC_CREC_H
#define CREC_CREC_H

#include "crec/status.h"
#include "crec/program.h"
#include "crec/inspect.h"
#include "crec/plan.h"
#include "crec/dump.h"
#include "crec/profile.h"
#include "crec/serialize.h"
#include "crec/device.h"
#include "crec/library.h"
#include "crec/exec.h"
#include "crec/capture.h"
#include "crec/feed.h"
#include "crec/lower.h"
#include "crec/xla.h"

#endif
