// .npy files (NumPy's array format) as model inputs and outputs: read and
// written with xtensor's xnpy.
//
// ReadNpy accepts float32 and float64 arrays (float64 is narrowed to fp32,
// the precision iosfarm runs at), C or Fortran order, and returns row-major
// data. Errors name the file: NotFound when it cannot be opened;
// InvalidArgument for a file that is not a .npy array, a truncated one, or
// another dtype ("'x.npy' holds int64 values; iosfarm reads float32 or
// float64: save it with x.astype(numpy.float32)"). WriteNpy writes float32
// in C order; Unavailable when the file cannot be written. Thread-safe.
#ifndef IOSFARM_GRAPH_NPY_H_
#define IOSFARM_GRAPH_NPY_H_

#include <string>

#include "common/status.h"
#include "graph/tensor.h"

namespace iosfarm::graph {

StatusOr<Tensor> ReadNpy(const std::string& path);

Status WriteNpy(const std::string& path, const Tensor& tensor);

}  // namespace iosfarm::graph

#endif  // IOSFARM_GRAPH_NPY_H_
