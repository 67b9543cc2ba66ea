// Memory layouts of activations in the cpu backend.
//
// Every value has one storage layout, a pure function of its shape and the
// backend's ActivationLayout, so that stages built separately (Build) agree
// with whole schedules (RunSchedule). The layout applies to 4-D tensors
// [N, C, H, W] (everything else is plain row-major):
//  - kChannelsLast: NHWC, what oneDNN 2.6's brgemm convolutions read and
//    write on AVX-512 CPUs;
//  - kBlocked8 / kBlocked16: nChw8c / nChw16c for tensors with at least 8 /
//    16 channels (channels zero-padded to a multiple of the block), what its
//    older jit convolutions use (AVX2);
//  - kPlain: NCHW.
// DetectActivationLayout asks oneDNN which one its convolutions prefer on
// this CPU. All fp32.
#ifndef IOSFARM_WORKER_BACKENDS_CPU_LAYOUT_H_
#define IOSFARM_WORKER_BACKENDS_CPU_LAYOUT_H_

#include <cstdint>
#include <string_view>

#include <oneapi/dnnl/dnnl.hpp>

#include "graph/tensor.h"

namespace iosfarm::worker::cpu {

dnnl::memory::dims ToDims(const graph::Shape& shape);

enum class ActivationLayout { kPlain, kChannelsLast, kBlocked8, kBlocked16 };

// "plain", "nhwc", "nChw8c", "nChw16c".
std::string_view ActivationLayoutName(ActivationLayout layout);

// Plain row-major fp32 descriptor of `shape`.
dnnl::memory::desc PlainDesc(const graph::Shape& shape);

// The storage descriptor of a value of `shape` (see above).
dnnl::memory::desc StorageDesc(const graph::Shape& shape, ActivationLayout layout);

// True when `desc` is the plain row-major layout of its dims.
bool IsPlain(const dnnl::memory::desc& desc);

// The layout oneDNN's convolutions choose on `engine` for a typical 3x3
// convolution (kPlain when it is none of the others). Creates (and discards)
// one convolution primitive descriptor.
ActivationLayout DetectActivationLayout(const dnnl::engine& engine);

// True when CopyChannels can read or write `desc`: 4-D, strided or with one
// inner block over the channels.
bool IsChannelCopyable(const dnnl::memory::desc& desc);

// True when `desc` pads its channels up to a block (nChw8c/nChw16c with C
// not a multiple of the block).
bool HasChannelPadding(const dnnl::memory::desc& desc);

// Zeroes the padding channels of a channel-blocked 4-D memory (oneDNN
// expects zeros there). No-op without padding.
void ZeroChannelPadding(const dnnl::memory& memory);

// Copies channels [src_begin, src_begin + count) of the 4-D tensor `src`
// into channels [dst_begin, dst_begin + count) of `dst`; both strided (NCHW,
// NHWC, ...) or channel-blocked (IsChannelCopyable), with equal N, H, W. Leaves every other channel of `dst`
// (and its zero padding) untouched. Runs on the calling thread's OpenMP team.
void CopyChannels(const dnnl::memory& src, int64_t src_begin, const dnnl::memory& dst,
                  int64_t dst_begin, int64_t count);

}  // namespace iosfarm::worker::cpu

#endif  // IOSFARM_WORKER_BACKENDS_CPU_LAYOUT_H_
