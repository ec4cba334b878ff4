/// \file library.h
/// Library calls in programs, one header per subject: gemm.h (matrix products
/// through cuBLASLt), fft.h (Fourier transforms through cuFFT), cholesky.h
/// (Cholesky factorizations through cuSOLVER), conv.h (convolutions through
/// cuDNN), collective.h (collectives through NCCL, communicators,
/// failing ranks), custom.h (custom commands run by registered handlers) and
/// callback.h (host callbacks); operand.h has what they share. This header
/// includes them all.
///
/// GEMMs, FFTs, Cholesky factorizations, convolutions, collectives and traced
/// custom commands are *traced* commands: at
/// record, crec issues their work on a private stream under stream capture and
/// puts the captured graph into the exec's graph: as its kernels when the
/// capture is a chain of at most 8 kernel nodes (*inlined*; a cuBLASLt GEMM is
/// most often one kernel), else (and for collectives, and always with
/// crec_record_options.trace_child_graphs) as a child-graph node. When a
/// replay changes a buffer such a command uses, crec looks the command's new
/// buffer addresses up in a per-command cache of captured graphs (most recently
/// used first, crec_record_options.trace_cache_size entries); a hit takes that
/// capture, a miss captures the work again first, and the capture then sets the
/// inlined kernels (cuGraphExecKernelNodeSetParams, one per kernel) or replaces
/// the child graph (cuGraphExecChildGraphNodeSetParams). Replays that cycle
/// through a few address sets therefore capture nothing once each set was seen;
/// crec_exec_stats counts hits, misses, re-captures and inlined commands. A
/// capture must keep the shape of the first (the same chain of the same kernels
/// when inlined, the same topology for a child graph; the libraries choose their
/// kernels at record and keep them); when it does not, the replay fails with
/// CREC_ERR_UNSUPPORTED naming the command. What
/// record chose for each call (a convolution's algorithm, the work areas) is
/// crec_exec_library_choices() (exec.h); `crec bench` prints it.
///
/// cuBLASLt (libcublasLt.so.13), cuFFT (libcufft.so.12), cuSOLVER
/// (libcusolver.so.12), cuDNN (libcudnn.so.9) and NCCL (libnccl.so.2) are opened
/// at run time, on first
/// use: a program without such calls never needs them, and a
/// missing library gives CREC_ERR_UNSUPPORTED naming it.
///
/// Every builder here follows program.h's rules: everything is validated before
/// anything changes, failures set `*out` to the invalid handle and leave the
/// program as it was, and messages name the function, the command and the
/// offending argument.
#ifndef CREC_LIBRARY_H
#define CREC_LIBRARY_H

#include "crec/operand.h"
#include "crec/gemm.h"
#include "crec/fft.h"
#include "crec/cholesky.h"
#include "crec/conv.h"
#include "crec/collective.h"
#include "crec/custom.h"
#include "crec/callback.h"

#endif
