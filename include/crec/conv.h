/// \file conv.h
/// Convolutions through cuDNN (opened at run time), as traced commands
/// (library.h says what that means): forward, with a bias and a ReLU fused or
/// not, and the two backward passes.
#ifndef CREC_CONV_H
#define CREC_CONV_H

#include "crec/operand.h"

#ifdef __cplusplus
extern "C" {
#endif

/// What a convolution computes. With x the input, w the filter and y the output
/// of the forward pass, y = conv(x, w):
typedef enum crec_conv_kind {
  CREC_CONV_FORWARD = 0,        ///< y = act(conv(x, w) + bias): reads x and w, writes y
  CREC_CONV_BACKWARD_DATA = 1,  ///< dx from dy and w: reads `output` (dy) and `filter`, writes `input` (dx)
  CREC_CONV_BACKWARD_FILTER = 2 ///< dw from x and dy: reads `input` and `output` (dy), writes `filter` (dw)
} crec_conv_kind;

/// Memory layouts, of x and y and of the filter alike.
typedef enum crec_conv_layout {
  CREC_CONV_NCHW = 0, ///< x, y: N, C, spatial…; the filter: K, C/groups, spatial…
  CREC_CONV_NHWC = 1  ///< x, y: N, spatial…, C; the filter: K, spatial…, C/groups
} crec_conv_layout;

/// Memory layouts of the filter.
typedef enum crec_conv_filter_layout {
  CREC_CONV_FILTER_K_FIRST = 0, ///< as `layout` says: K, C/groups, spatial… (NCHW) or K, spatial…, C/groups (NHWC)
  CREC_CONV_FILTER_HWIO = 1     ///< spatial…, C/groups, K (TensorFlow's HWIO, linalg's hwcf): crec transposes it
                                ///< into the workspace before the call (and back after a BACKWARD_FILTER)
} crec_conv_filter_layout;

/// An activation after a forward convolution (and its bias).
typedef enum crec_conv_activation {
  CREC_CONV_ACTIVATION_NONE = 0,
  CREC_CONV_ACTIVATION_RELU = 1
} crec_conv_activation;

/// How the algorithm is chosen, once per CUDA context, at record.
typedef enum crec_conv_algorithm {
  CREC_CONV_HEURISTICS = 0, ///< cuDNN's heuristics: the first algorithm whose work area fits the workspace
  CREC_CONV_SEARCH = 1      ///< each algorithm timed on scratch buffers of the shapes; the fastest that fits
} crec_conv_algorithm;

/// A convolution over packed tensors: `spatial` (2 or 3) dimensions, a batch of
/// `batch`, `in_channels` C and `out_channels` K. The output's spatial size is
/// (in + 2·padding - dilation·(filter - 1) - 1) / stride + 1 per dimension (at
/// least 1). Padding is the same on both sides of a dimension (cuDNN's).
/// Accumulation is in f32 for every element type. The header's comments name
/// the tensors as the forward pass does: `input` is x (dx for BACKWARD_DATA),
/// `filter` is w (dw for BACKWARD_FILTER), `output` is y (dy for the backward
/// passes).
typedef struct crec_conv {
  size_t struct_size;             ///< sizeof(crec_conv)
  crec_conv_kind kind;
  crec_element type;              ///< CREC_ELEMENT_F32, _F16 or _BF16: of every tensor and the bias
  crec_conv_layout layout;
  uint32_t spatial;               ///< 2 or 3
  uint64_t batch;                 ///< N, at least 1
  uint64_t in_channels;           ///< C, a multiple of groups
  uint64_t out_channels;          ///< K, a multiple of groups
  uint64_t in_size[3];            ///< x's spatial sizes
  uint64_t filter_size[3];        ///< the filter's spatial sizes
  uint64_t stride[3];             ///< per spatial dimension; 0 means 1
  uint64_t padding[3];            ///< zeros added on each side
  uint64_t dilation[3];           ///< 0 means 1
  uint64_t groups;                ///< 0 means 1; C/groups input channels per filter
  crec_range input, filter, output;
  crec_range bias;                ///< FORWARD only (buffer id 0: none): K elements
  crec_conv_activation activation;///< FORWARD only
  crec_conv_algorithm algorithm;
  uint64_t workspace_bytes;       ///< cuDNN's work area, a temporary placed in the arena; 0: 32 MiB
  crec_conv_filter_layout filter_layout;
} crec_conv;
#define CREC_CONV_INIT                                                                                         \
  {sizeof(crec_conv), CREC_CONV_FORWARD, CREC_ELEMENT_F32, CREC_CONV_NCHW, 2, 1, 0, 0, {0, 0, 0}, {0, 0, 0}, \
   {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, 0, {{0}, 0, 0}, {{0}, 0, 0}, {{0}, 0, 0}, {{0}, 0, 0},                     \
   CREC_CONV_ACTIVATION_NONE, CREC_CONV_HEURISTICS, 0, CREC_CONV_FILTER_K_FIRST}

/// The work area a convolution gets when crec_conv.workspace_bytes is 0.
#define CREC_CONV_DEFAULT_WORKSPACE (32u << 20)

/// Appends a convolution to `region` and adds its workspace, a temporary named
/// "<name>.workspace" (with a number appended if that name is taken); with an
/// HWIO filter it also holds the filter's transposed copy. `name` may
/// be NULL ("conv"). Ranges must have static sizes and lie in device memory.
/// At record, per CUDA context, crec makes cuDNN's descriptors and chooses the
/// algorithm (a record fails, naming the command, when none fits the
/// workspace); `crec dump` and crec_command_get_conv() show what was asked for.
/// A forward pass with a bias and a
/// ReLU is one fused cuDNN call (cudnnConvolutionBiasActivationForward); with
/// only one of them, a second call follows the convolution.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT
/// (unknown kind, layout, filter layout, activation or algorithm; spatial not 2 or 3; a zero
/// size, channel count or batch; channels not a multiple of groups; an output
/// smaller than one element; a range that is not the size its tensor needs; a
/// bias or activation outside FORWARD, a bias not K elements; written and read
/// tensors that overlap; a constant or host tensor written, or host memory),
/// CREC_ERR_MISALIGNED (an offset or buffer alignment below the element),
/// CREC_ERR_UNSUPPORTED (an element type other than f32, f16, bf16; a dynamic-size
/// range), CREC_ERR_TOO_LARGE (a dimension above 2^31-1, a tensor of more than
/// 2^40 elements, a workspace above 2^40 bytes), CREC_ERR_OUT_OF_MEMORY.
crec_status crec_program_add_conv(crec_program *program, crec_region region, const char *name, const crec_conv *conv,
                                  crec_command *out);

/// Reads back a convolution (with resolved ranges, strides and dilations of 1 for
/// 0, groups, and the workspace size it got). `out->struct_size` must be set.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT
/// (not a convolution, struct_size too small).
crec_status crec_command_get_conv(const crec_program *program, crec_command command, crec_conv *out);

/// The output's spatial sizes of a convolution's shape (as the builder computes
/// them) into `out` (3 entries, the unused ones 0). Returns false when the shape
/// gives no output (a size below 1) or spatial is not 2 or 3.
int crec_conv_output_size(const crec_conv *conv, uint64_t out[3]);

/// The name of a convolution kind ("forward", "backward_data",
/// "backward_filter"), or "?" for an unknown one.
const char *crec_conv_kind_name(crec_conv_kind kind);

#ifdef __cplusplus
}
#endif
#endif
