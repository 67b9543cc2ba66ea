#include "graph/onnx/onnx_tensor.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "common/strings.h"

namespace iosfarm::graph::onnx_import {
namespace {

using onnx::TensorProto;

Status TensorError(std::string_view what, std::string_view message) {
  return absl::InvalidArgumentError(StrCat(what, ": ", message));
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf / nan
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

float BFloat16ToFloat(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

float DoubleToFloat(double d) {
  constexpr double kMax = std::numeric_limits<float>::max();
  if (d > kMax) return std::numeric_limits<float>::infinity();
  if (d < -kMax) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(d);  // NaN stays NaN
}

// Bytes per element of the raw_data encoding.
int RawElementSize(int32_t data_type) {
  switch (data_type) {
    case TensorProto::BOOL:
    case TensorProto::INT8:
    case TensorProto::UINT8:
      return 1;
    case TensorProto::INT16:
    case TensorProto::UINT16:
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
      return 2;
    case TensorProto::INT32:
    case TensorProto::UINT32:
    case TensorProto::FLOAT:
      return 4;
    case TensorProto::INT64:
    case TensorProto::UINT64:
    case TensorProto::DOUBLE:
      return 8;
    default:
      return 0;
  }
}

template <typename T>
T LoadLittleEndian(const char* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));  // x86-64 and aarch64 are little-endian
  return value;
}

// Decodes one raw element of `data_type` at `p` into `out` (float or int).
Status DecodeRaw(int32_t data_type, const char* p, ConstTensor& out, int64_t i,
                 std::string_view what) {
  switch (data_type) {
    case TensorProto::FLOAT:
      out.floats[i] = LoadLittleEndian<float>(p);
      break;
    case TensorProto::DOUBLE:
      out.floats[i] = DoubleToFloat(LoadLittleEndian<double>(p));
      break;
    case TensorProto::FLOAT16:
      out.floats[i] = HalfToFloat(LoadLittleEndian<uint16_t>(p));
      break;
    case TensorProto::BFLOAT16:
      out.floats[i] = BFloat16ToFloat(LoadLittleEndian<uint16_t>(p));
      break;
    case TensorProto::BOOL:
      out.ints[i] = *p != 0 ? 1 : 0;
      break;
    case TensorProto::INT8:
      out.ints[i] = LoadLittleEndian<int8_t>(p);
      break;
    case TensorProto::UINT8:
      out.ints[i] = LoadLittleEndian<uint8_t>(p);
      break;
    case TensorProto::INT16:
      out.ints[i] = LoadLittleEndian<int16_t>(p);
      break;
    case TensorProto::UINT16:
      out.ints[i] = LoadLittleEndian<uint16_t>(p);
      break;
    case TensorProto::INT32:
      out.ints[i] = LoadLittleEndian<int32_t>(p);
      break;
    case TensorProto::UINT32:
      out.ints[i] = LoadLittleEndian<uint32_t>(p);
      break;
    case TensorProto::INT64:
      out.ints[i] = LoadLittleEndian<int64_t>(p);
      break;
    case TensorProto::UINT64: {
      const uint64_t v = LoadLittleEndian<uint64_t>(p);
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return TensorError(what, StrCat("UINT64 value ", v, " does not fit in int64"));
      }
      out.ints[i] = static_cast<int64_t>(v);
      break;
    }
    default:
      return TensorError(what, "unsupported element type");
  }
  return absl::OkStatus();
}

Status CheckCount(int64_t have, int64_t want, std::string_view field, std::string_view what) {
  if (have != want) {
    return TensorError(what, StrCat(field, " holds ", have, " values but the dimensions need ",
                                    want, " (wrong data length)"));
  }
  return absl::OkStatus();
}

// Decodes the typed (non-raw) field of `proto` into `out`.
Status DecodeTyped(const TensorProto& proto, int64_t n, ConstTensor& out, std::string_view what) {
  const int32_t type = proto.data_type();
  switch (type) {
    case TensorProto::FLOAT:
      RETURN_IF_ERROR(CheckCount(proto.float_data_size(), n, "float_data", what));
      for (int64_t i = 0; i < n; ++i) out.floats[i] = proto.float_data(static_cast<int>(i));
      return absl::OkStatus();
    case TensorProto::DOUBLE:
      RETURN_IF_ERROR(CheckCount(proto.double_data_size(), n, "double_data", what));
      for (int64_t i = 0; i < n; ++i) {
        out.floats[i] = DoubleToFloat(proto.double_data(static_cast<int>(i)));
      }
      return absl::OkStatus();
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
      RETURN_IF_ERROR(CheckCount(proto.int32_data_size(), n, "int32_data", what));
      for (int64_t i = 0; i < n; ++i) {
        const auto bits = static_cast<uint16_t>(proto.int32_data(static_cast<int>(i)) & 0xffff);
        out.floats[i] = type == TensorProto::FLOAT16 ? HalfToFloat(bits) : BFloat16ToFloat(bits);
      }
      return absl::OkStatus();
    case TensorProto::BOOL:
    case TensorProto::INT8:
    case TensorProto::UINT8:
    case TensorProto::INT16:
    case TensorProto::UINT16:
    case TensorProto::INT32:
      RETURN_IF_ERROR(CheckCount(proto.int32_data_size(), n, "int32_data", what));
      for (int64_t i = 0; i < n; ++i) {
        const int64_t v = proto.int32_data(static_cast<int>(i));
        out.ints[i] = type == TensorProto::BOOL ? (v != 0 ? 1 : 0) : v;
      }
      return absl::OkStatus();
    case TensorProto::INT64:
      RETURN_IF_ERROR(CheckCount(proto.int64_data_size(), n, "int64_data", what));
      for (int64_t i = 0; i < n; ++i) out.ints[i] = proto.int64_data(static_cast<int>(i));
      return absl::OkStatus();
    case TensorProto::UINT32:
    case TensorProto::UINT64:
      RETURN_IF_ERROR(CheckCount(proto.uint64_data_size(), n, "uint64_data", what));
      for (int64_t i = 0; i < n; ++i) {
        const uint64_t v = proto.uint64_data(static_cast<int>(i));
        if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return TensorError(what, StrCat("value ", v, " does not fit in int64"));
        }
        out.ints[i] = static_cast<int64_t>(v);
      }
      return absl::OkStatus();
    default:
      return TensorError(what, "unsupported element type");
  }
}

}  // namespace

std::string_view ConstKindName(ConstKind kind) {
  switch (kind) {
    case ConstKind::kFloat:
      return "float";
    case ConstKind::kInt:
      return "int";
    case ConstKind::kBool:
      return "bool";
  }
  return "?";
}

ConstTensor MakeIntTensor(std::vector<int64_t> dims, std::vector<int64_t> values) {
  ConstTensor t;
  t.kind = ConstKind::kInt;
  t.dims = std::move(dims);
  t.ints = std::move(values);
  return t;
}

ConstTensor MakeFloatTensor(std::vector<int64_t> dims, std::vector<float> values) {
  ConstTensor t;
  t.kind = ConstKind::kFloat;
  t.dims = std::move(dims);
  t.floats = std::move(values);
  return t;
}

ConstTensor MakeZeroTensor(ConstKind kind, std::vector<int64_t> dims, int64_t count) {
  ConstTensor t;
  t.kind = kind;
  t.dims = std::move(dims);
  if (kind == ConstKind::kFloat) {
    t.floats.assign(static_cast<size_t>(count), 0.0f);
  } else {
    t.ints.assign(static_cast<size_t>(count), 0);
  }
  return t;
}

StatusOr<int64_t> CheckedElementCount(const std::vector<int64_t>& dims, int64_t max_elements,
                                      std::string_view what) {
  // The product of the non-zero dimensions is bounded too, so that any
  // partial product of an empty tensor's dimensions is safe to compute.
  if (static_cast<int64_t>(dims.size()) > kMaxRank) {
    return TensorError(what, StrCat("rank ", dims.size(), " exceeds the limit of ", kMaxRank));
  }
  int64_t count = 1;
  bool empty = false;
  for (int64_t d : dims) {
    if (d < 0) return TensorError(what, StrCat("negative dimension ", d));
    if (d == 0) {
      empty = true;
      continue;
    }
    if (d > max_elements / count) {
      return TensorError(what, StrCat("dimensions ", ShapeToString(dims), " exceed the limit of ",
                                      max_elements, " elements"));
    }
    count *= d;
  }
  return empty ? 0 : count;
}

std::string OnnxDataTypeName(int32_t data_type) {
  if (TensorProto::DataType_IsValid(data_type)) {
    return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(data_type));
  }
  return StrCat("type ", data_type);
}

StatusOr<ConstKind> KindOfDataType(int32_t data_type, std::string_view what) {
  switch (data_type) {
    case TensorProto::FLOAT:
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
    case TensorProto::DOUBLE:
      return ConstKind::kFloat;
    case TensorProto::INT8:
    case TensorProto::UINT8:
    case TensorProto::INT16:
    case TensorProto::UINT16:
    case TensorProto::INT32:
    case TensorProto::UINT32:
    case TensorProto::INT64:
    case TensorProto::UINT64:
      return ConstKind::kInt;
    case TensorProto::BOOL:
      return ConstKind::kBool;
    default:
      return TensorError(what, StrCat("unsupported element type ", OnnxDataTypeName(data_type)));
  }
}

StatusOr<ConstTensor> ConstTensorFromProto(const TensorProto& proto, int64_t max_elements,
                                           std::string_view what) {
  if (proto.data_location() == TensorProto::EXTERNAL || proto.external_data_size() > 0) {
    return TensorError(what, "stores its data in an external file, which is not supported");
  }
  if (proto.has_segment()) return TensorError(what, "segmented tensors are not supported");
  ASSIGN_OR_RETURN(ConstKind kind, KindOfDataType(proto.data_type(), what));
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  ASSIGN_OR_RETURN(int64_t n, CheckedElementCount(dims, max_elements, what));
  if (proto.has_raw_data()) {
    // Check the length before allocating anything.
    const int64_t size = RawElementSize(proto.data_type());
    const int64_t bytes = static_cast<int64_t>(proto.raw_data().size());
    if (size == 0 || n > std::numeric_limits<int64_t>::max() / 8 || bytes != n * size) {
      return TensorError(what, StrCat("raw_data has ", bytes, " bytes but ", ShapeToString(dims),
                                      " ", OnnxDataTypeName(proto.data_type()), " needs ", n * size,
                                      " (wrong data length)"));
    }
    ConstTensor out = MakeZeroTensor(kind, std::move(dims), n);
    const char* p = proto.raw_data().data();
    for (int64_t i = 0; i < n; ++i) {
      RETURN_IF_ERROR(DecodeRaw(proto.data_type(), p + i * size, out, i, what));
    }
    return out;
  }
  // Typed fields: DecodeTyped checks the field length before reading; the
  // element count is bounded by max_elements, and a matching typed field
  // already holds that many values in memory.
  ConstTensor out;
  out.kind = kind;
  out.dims = std::move(dims);
  int64_t stored = 0;
  switch (proto.data_type()) {
    case TensorProto::FLOAT:
      stored = proto.float_data_size();
      break;
    case TensorProto::DOUBLE:
      stored = proto.double_data_size();
      break;
    case TensorProto::INT64:
      stored = proto.int64_data_size();
      break;
    case TensorProto::UINT32:
    case TensorProto::UINT64:
      stored = proto.uint64_data_size();
      break;
    default:
      stored = proto.int32_data_size();
      break;
  }
  if (stored != n) {
    return TensorError(what, StrCat("holds ", stored, " values but dimensions ",
                                    ShapeToString(out.dims), " need ", n, " (wrong data length)"));
  }
  if (kind == ConstKind::kFloat) {
    out.floats.resize(static_cast<size_t>(n));
  } else {
    out.ints.resize(static_cast<size_t>(n));
  }
  RETURN_IF_ERROR(DecodeTyped(proto, n, out, what));
  return out;
}

StatusOr<std::vector<int64_t>> ToIntList(const ConstTensor& tensor, std::string_view what) {
  if (tensor.kind == ConstKind::kFloat) {
    return TensorError(what, "must be an integer tensor, got float");
  }
  if (tensor.rank() > 1) {
    return TensorError(what,
                       StrCat("must be a scalar or 1-D, got shape ", ShapeToString(tensor.dims)));
  }
  return tensor.ints;
}

StatusOr<double> ToScalar(const ConstTensor& tensor, std::string_view what) {
  if (tensor.num_elements() != 1) {
    return TensorError(
        what, StrCat("must hold exactly one value, got shape ", ShapeToString(tensor.dims)));
  }
  return tensor.AsDouble(0);
}

StatusOr<Tensor> ToIrTensor(const ConstTensor& tensor, std::string_view what) {
  Tensor out;
  out.shape = tensor.dims.empty() ? Shape{1} : tensor.dims;
  for (int64_t d : out.shape) {
    if (d < 1) {
      return TensorError(
          what, StrCat("has shape ", ShapeToString(tensor.dims), " with a zero dimension"));
    }
  }
  if (tensor.is_float()) {
    out.data = tensor.floats;
  } else {
    out.data.reserve(tensor.ints.size());
    for (int64_t v : tensor.ints) out.data.push_back(static_cast<float>(v));
  }
  return out;
}

}  // namespace iosfarm::graph::onnx_import
