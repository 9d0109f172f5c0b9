#include "tools/npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "runtime/kernels/portable/util/copy.h"
#include "runtime/platform/loaders.h"

namespace ember::tools {
namespace {

struct DtypeCode {
  const char* descr;
  ScalarType type;
};
constexpr DtypeCode kCodes[] = {
    {"|u1", ScalarType::Byte},  {"|i1", ScalarType::Char},   {"<i2", ScalarType::Short},
    {"<i4", ScalarType::Int},   {"<i8", ScalarType::Long},   {"<f2", ScalarType::Half},
    {"<f4", ScalarType::Float}, {"<f8", ScalarType::Double}, {"|b1", ScalarType::Bool},
    {"<u1", ScalarType::Byte},  {"<i1", ScalarType::Char},   {"<b1", ScalarType::Bool},
};

// The value of `key` in the header dict: the text after "'key':" up to the next top-level comma.
std::string dict_value(const std::string& header, const std::string& key) {
  const size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) return {};
  size_t p = header.find(':', at);
  if (p == std::string::npos) return {};
  ++p;
  while (p < header.size() && header[p] == ' ') ++p;
  size_t end = p;
  if (end < header.size() && header[end] == '(') {
    end = header.find(')', end);
    return end == std::string::npos ? std::string() : header.substr(p, end - p + 1);
  }
  while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  return header.substr(p, end - p);
}

}  // namespace

Result<NpyArray> read_npy(const std::string& path) {
  Result<size_t> size = regular_file_size(path.c_str());  // no directory, FIFO or device
  if (!size.ok()) return size.error();
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK(in.good(), Error::AccessFailed, "cannot read '%s': %s", path.c_str(),
              std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  EMBER_CHECK(bytes.size() >= 10 && std::memcmp(bytes.data(), "\x93NUMPY", 6) == 0,
              Error::InvalidArgument, "'%s' is not a NumPy .npy file", path.c_str());
  const uint8_t major = bytes[6];
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = bytes[8] | (bytes[9] << 8);
    header_start = 10;
  } else {
    EMBER_CHECK(bytes.size() >= 12 && (major == 2 || major == 3), Error::InvalidArgument,
                "'%s': unsupported .npy version %u", path.c_str(), major);
    header_len =
        bytes[8] | (bytes[9] << 8) | (bytes[10] << 16) | (static_cast<size_t>(bytes[11]) << 24);
    header_start = 12;
  }
  EMBER_CHECK(header_start + header_len <= bytes.size(), Error::InvalidArgument,
              "'%s': truncated .npy header", path.c_str());
  const std::string header(bytes.begin() + static_cast<long>(header_start),
                           bytes.begin() + static_cast<long>(header_start + header_len));
  const std::string descr = dict_value(header, "descr");
  EMBER_CHECK(dict_value(header, "fortran_order").find("False") != std::string::npos,
              Error::InvalidArgument,
              "'%s': Fortran-order arrays are not supported; save with "
              "np.ascontiguousarray",
              path.c_str());
  NpyArray out{ScalarType::Float, {}, {}};
  bool known = false;
  for (const DtypeCode& c : kCodes) {
    if (descr == std::string("'") + c.descr + "'") {
      out.dtype = c.type;
      known = true;
    }
  }
  EMBER_CHECK(known, Error::InvalidArgument, "'%s': dtype %s is not supported", path.c_str(),
              descr.c_str());
  const std::string shape = dict_value(header, "shape");
  EMBER_CHECK(shape.size() >= 2 && shape.front() == '(' && shape.back() == ')',
              Error::InvalidArgument, "'%s': cannot read the shape %s", path.c_str(),
              shape.c_str());
  std::stringstream dims(shape.substr(1, shape.size() - 2));
  std::string item;
  while (std::getline(dims, item, ',')) {
    if (item.find_first_not_of(' ') == std::string::npos) continue;
    const long long v = std::atoll(item.c_str());
    EMBER_CHECK(v >= 0 && v <= INT32_MAX, Error::InvalidArgument, "'%s': dimension %s",
                path.c_str(), item.c_str());
    out.shape.push_back(static_cast<int32_t>(v));
  }
  Result<size_t> nbytes = checked_nbytes(out.dtype, out.shape);
  if (!nbytes.ok()) return nbytes.error();
  const size_t data_start = header_start + header_len;
  EMBER_CHECK(bytes.size() - data_start == *nbytes, Error::InvalidArgument,
              "'%s': holds %zu data bytes, its shape needs %zu", path.c_str(),
              bytes.size() - data_start, *nbytes);
  out.data.assign(bytes.begin() + static_cast<long>(data_start), bytes.end());
  return out;
}

Error write_npy(const std::string& path, const Tensor& t) {
  const bool bf16 = t.dtype() == ScalarType::BFloat16;
  const ScalarType file_type = bf16 ? ScalarType::Float : t.dtype();
  const char* descr = nullptr;
  for (const DtypeCode& c : kCodes) {
    if (c.type == file_type && descr == nullptr) descr = c.descr;
  }
  EMBER_CHECK(descr != nullptr, Error::NotSupported, "cannot write dtype %s to .npy",
              to_string(t.dtype()));
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (";
  for (int d = 0; d < t.dim(); ++d)
    header += std::to_string(t.size(d)) + (t.dim() == 1 ? "," : d + 1 < t.dim() ? ", " : "");
  header += "), }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';

  // Gather in C order from the tensor's strides.
  const size_t elem = t.element_size();
  std::vector<uint8_t> data(static_cast<size_t>(t.numel()) * (bf16 ? 4 : elem));
  int64_t idx[kMaxRank] = {};
  const auto* src = static_cast<const uint8_t*>(t.data());
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t offset = 0;
    for (int d = 0; d < t.dim(); ++d) offset += idx[d] * t.stride(d);
    if (bf16) {
      BFloat16 v;
      std::memcpy(&v.bits, src + offset * 2, 2);
      const float f = v;
      std::memcpy(data.data() + i * 4, &f, 4);
    } else {
      std::memcpy(data.data() + static_cast<size_t>(i) * elem,
                  src + static_cast<size_t>(offset) * elem, elem);
    }
    for (int d = t.dim() - 1; d >= 0; --d) {
      if (++idx[d] < t.size(d)) break;
      idx[d] = 0;
    }
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  EMBER_CHECK(f != nullptr, Error::AccessFailed, "cannot write '%s'", path.c_str());
  const uint8_t magic[10] = {0x93,
                             'N',
                             'U',
                             'M',
                             'P',
                             'Y',
                             1,
                             0,
                             static_cast<uint8_t>(header.size() & 0xff),
                             static_cast<uint8_t>(header.size() >> 8)};
  bool ok = std::fwrite(magic, 1, 10, f) == 10;
  ok = ok && std::fwrite(header.data(), 1, header.size(), f) == header.size();
  // An empty array has no bytes (and its data() may be null, which fwrite must not get).
  ok = ok && (data.empty() || std::fwrite(data.data(), 1, data.size(), f) == data.size());
  ok = std::fclose(f) == 0 && ok;
  EMBER_CHECK(ok, Error::AccessFailed, "writing '%s' failed", path.c_str());
  return Error::Ok;
}

Result<OwnedTensor> npy_in_layout(const NpyArray& a, std::span<const uint8_t> dim_order) {
  // An array of another rank keeps C order: the method's own check then names the input.
  std::vector<uint8_t> order;
  if (dim_order.size() == a.shape.size()) order.assign(dim_order.begin(), dim_order.end());
  Result<OwnedTensor> t = OwnedTensor::zeros(a.dtype, a.shape, std::move(order));
  if (!t.ok()) return t.error();
  // The array is only read: its C-order tensor is the source of the copy.
  Result<Tensor> src = Tensor::make(a.dtype, a.shape, {}, const_cast<uint8_t*>(a.data.data()));
  if (!src.ok()) return src.error();
  copy_tensor(*src, t->tensor());
  return t;
}

}  // namespace ember::tools
