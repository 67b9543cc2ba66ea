#include "graph/npy.h"

#include <cstdint>
#include <fstream>
#include <new>
#include <stdexcept>
#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

#include "common/strings.h"

namespace iosfarm::graph {
namespace {

// numpy's name for a typestring ("<i8" -> "int64"), for error messages.
std::string DtypeName(const std::string& typestring) {
  if (typestring.size() < 3) return typestring;
  const char kind = typestring[1];
  const std::string bits = std::to_string(std::atoi(typestring.c_str() + 2) * 8);
  switch (kind) {
    case 'f':
      return "float" + bits;
    case 'i':
      return "int" + bits;
    case 'u':
      return "uint" + bits;
    case 'b':
      return "bool";
    case 'c':
      return "complex" + bits;
    default:
      return typestring;
  }
}

// Row-major copy of a loaded array (C or Fortran order) as fp32.
template <typename T>
std::vector<float> RowMajorFloats(xt::detail::npy_file& file) {
  const auto loaded = std::move(file).cast<T>();
  const xt::xarray<T, xt::layout_type::row_major> row_major = loaded;
  return std::vector<float>(row_major.begin(), row_major.end());
}

}  // namespace

StatusOr<Tensor> ReadNpy(const std::string& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) return absl::NotFoundError(StrCat("cannot open '", path, "'"));
  const auto invalid = [&path](std::string_view why) {
    return absl::InvalidArgumentError(StrCat("'", path, "' is not a valid .npy array: ", why));
  };
  try {
    xt::detail::npy_file file = xt::detail::load_npy_file(stream);
    int64_t count = 1;
    for (size_t d : file.m_shape) {
      if (d > static_cast<size_t>(INT64_MAX) ||
          __builtin_mul_overflow(count, static_cast<int64_t>(d), &count)) {
        return invalid("its shape overflows 64 bits");
      }
    }
    if (!stream) return invalid("the file ends before its data does (truncated?)");
    if (stream.peek() != std::char_traits<char>::eof()) {
      return invalid("data follows the array (more bytes than its shape holds)");
    }
    const std::string& type = file.m_typestring;
    if (type.size() >= 2 && type[0] == '>') {
      return invalid("big-endian data; save it little-endian (x.astype('<f4'))");
    }
    Tensor tensor;
    for (size_t d : file.m_shape) tensor.shape.push_back(static_cast<int64_t>(d));
    if (type == "<f4") {
      tensor.data = RowMajorFloats<float>(file);
    } else if (type == "<f8") {
      tensor.data = RowMajorFloats<double>(file);
    } else {
      return absl::InvalidArgumentError(
          StrCat("'", path, "' holds ", DtypeName(type),
                 " values; iosfarm reads float32 or float64: save it with "
                 "x.astype(numpy.float32)"));
    }
    return tensor;
  } catch (const std::bad_alloc&) {
    return invalid("its header announces more data than memory holds");
  } catch (const std::exception& e) {
    return invalid(e.what());
  }
}

Status WriteNpy(const std::string& path, const Tensor& tensor) {
  if (static_cast<int64_t>(tensor.data.size()) != tensor.num_elements()) {
    return absl::InvalidArgumentError(StrCat("tensor of shape ", ShapeToString(tensor.shape),
                                             " has ", tensor.data.size(), " values"));
  }
  std::vector<size_t> shape(tensor.shape.begin(), tensor.shape.end());
  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  if (!stream) return absl::UnavailableError(StrCat("cannot write '", path, "'"));
  try {
    const auto view = xt::adapt(tensor.data.data(), tensor.data.size(), xt::no_ownership(), shape);
    xt::detail::dump_npy_stream(stream, view);
  } catch (const std::exception& e) {
    return absl::UnavailableError(StrCat("cannot write '", path, "': ", e.what()));
  }
  stream.close();
  if (!stream) return absl::UnavailableError(StrCat("cannot write '", path, "' (disk full?)"));
  return absl::OkStatus();
}

}  // namespace iosfarm::graph
