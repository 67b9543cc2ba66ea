// The weights of a merged convolution (scheduler/ios/merge.h), assembled from
// the weights of its branches.
//
// Branch b with weight [oc_b, C, kh_b, kw_b] lands in output channels
// [channel_begin, channel_end) of the merged weight [sum oc_b, C, KH, KW], its
// kernel at `kernel_offset` (row, column) and zeros around it. The merged bias
// (present when merged.attrs.has_bias) holds each branch's bias, zero for
// branches without one. Branch weights without data are materialised
// (weights.h). Pure; thread-safe.
#ifndef IOSFARM_WORKER_BACKENDS_MERGED_CONV_WEIGHTS_H_
#define IOSFARM_WORKER_BACKENDS_MERGED_CONV_WEIGHTS_H_

#include "common/status.h"
#include "graph/graph.h"
#include "graph/tensor.h"
#include "scheduler/ios/stages/stage.h"

namespace iosfarm::worker {

struct MergedConvWeights {
  graph::Tensor weight;  // [out_channels, C, KH, KW]
  graph::Tensor bias;    // [out_channels]; no shape and no data without bias
};

// InvalidArgument naming the branch when `merged` does not describe its
// branches (not a Conv, channel range or kernel offset out of place, input
// channels differ).
StatusOr<MergedConvWeights> AssembleMergedConvWeights(const graph::Graph& graph,
                                                      const scheduler::ios::MergedConv& merged);

}  // namespace iosfarm::worker

#endif  // IOSFARM_WORKER_BACKENDS_MERGED_CONV_WEIGHTS_H_
