#include "npy.h"

#include <array>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

namespace tessera::cli {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

struct DtypeCode {
  const char* code;  // numpy type code without the byte-order character
  DataType type;
};
constexpr std::array<DtypeCode, 12> kDtypeCodes = {{
    {"f2", DataType::kFloat16},
    {"f4", DataType::kFloat},
    {"f8", DataType::kDouble},
    {"i1", DataType::kInt8},
    {"i2", DataType::kInt16},
    {"i4", DataType::kInt32},
    {"i8", DataType::kInt64},
    {"u1", DataType::kUInt8},
    {"u2", DataType::kUInt16},
    {"u4", DataType::kUInt32},
    {"u8", DataType::kUInt64},
    {"b1", DataType::kBool},
}};

DataType TypeFromDescr(const std::string& descr, const std::filesystem::path& path) {
  // Byte order: '<' little, '|' not applicable (1-byte types), '=' native (x86 and arm64 are little).
  if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '|' || descr[0] == '=')) {
    for (const DtypeCode& c : kDtypeCodes)
      if (descr.compare(1, 2, c.code) == 0) return c.type;
  }
  Fail(ErrorCode::kInvalidArgument, path.string(), ": unsupported .npy dtype '", descr,
       "' (need a little-endian numeric or bool type)");
}

std::string DescrFromType(DataType type, const std::filesystem::path& path) {
  for (const DtypeCode& c : kDtypeCodes) {
    if (c.type != type) continue;
    const char order = SizeOf(type) == 1 ? '|' : '<';
    return std::string(1, order) + c.code;
  }
  Fail(ErrorCode::kInvalidArgument, path.string(), ": tensors of type ", DataTypeName(type),
       " cannot be written as .npy");
}

// The value text that follows `'key':` in the header dict, up to the next top-level ',' or '}'.
std::string HeaderField(const std::string& header, const std::string& key, const std::filesystem::path& path) {
  const std::string quoted = "'" + key + "'";
  size_t pos = header.find(quoted);
  if (pos == std::string::npos) Fail(ErrorCode::kInvalidArgument, path.string(), ": .npy header lacks '", key, "'");
  pos = header.find(':', pos + quoted.size());
  if (pos == std::string::npos) Fail(ErrorCode::kInvalidArgument, path.string(), ": malformed .npy header");
  ++pos;
  int depth = 0;
  size_t end = pos;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  std::string value = header.substr(pos, end - pos);
  const size_t first = value.find_first_not_of(" \t");
  const size_t last = value.find_last_not_of(" \t");
  return first == std::string::npos ? "" : value.substr(first, last - first + 1);
}

std::vector<int64_t> ParseShapeTuple(const std::string& text, const std::filesystem::path& path) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    Fail(ErrorCode::kInvalidArgument, path.string(), ": malformed .npy shape '", text, "'");
  std::vector<int64_t> dims;
  std::stringstream items(text.substr(1, text.size() - 2));
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.find_first_not_of(" \t") == std::string::npos) continue;
    try {
      size_t used = 0;
      const long long dim = std::stoll(item, &used);
      if (dim < 0) throw std::out_of_range("negative");
      dims.push_back(dim);
    } catch (const std::exception&) {
      Fail(ErrorCode::kInvalidArgument, path.string(), ": malformed .npy shape '", text, "'");
    }
  }
  return dims;
}

uint32_t ReadLittleEndian(const unsigned char* bytes, size_t count) {
  uint32_t value = 0;
  for (size_t i = 0; i < count; ++i) value |= static_cast<uint32_t>(bytes[i]) << (8 * i);
  return value;
}

std::string ReadHeader(std::ifstream& in, const std::filesystem::path& path) {
  std::array<unsigned char, 8> prefix{};
  in.read(reinterpret_cast<char*>(prefix.data()), prefix.size());
  if (!in || std::memcmp(prefix.data(), kMagic.data(), kMagic.size()) != 0)
    Fail(ErrorCode::kInvalidArgument, path.string(), ": not a .npy file (bad magic)");
  const int major = prefix[6];
  if (major < 1 || major > 3) Fail(ErrorCode::kInvalidArgument, path.string(), ": unsupported .npy version ", major);
  const size_t length_bytes = major == 1 ? 2 : 4;
  std::array<unsigned char, 4> length{};
  in.read(reinterpret_cast<char*>(length.data()), static_cast<std::streamsize>(length_bytes));
  const uint32_t header_length = ReadLittleEndian(length.data(), length_bytes);
  if (!in || header_length > (1u << 20)) Fail(ErrorCode::kInvalidArgument, path.string(), ": malformed .npy header");
  std::string header(header_length, '\0');
  in.read(header.data(), header_length);
  if (!in) Fail(ErrorCode::kIo, path.string(), ": truncated .npy header");
  return header;
}

}  // namespace

Tensor ReadNpy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail(ErrorCode::kIo, "cannot open '", path.string(), "'");
  const std::string header = ReadHeader(in, path);
  std::string descr = HeaderField(header, "descr", path);
  if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"'))
    Fail(ErrorCode::kInvalidArgument, path.string(), ": malformed .npy descr ", descr);
  descr = descr.substr(1, descr.size() - 2);
  if (HeaderField(header, "fortran_order", path) != "False")
    Fail(ErrorCode::kInvalidArgument, path.string(), ": Fortran-order arrays are not supported (save with C order)");
  const DataType type = TypeFromDescr(descr, path);
  Tensor tensor = Tensor::Allocate(type, Shape(ParseShapeTuple(HeaderField(header, "shape", path), path)));
  in.read(static_cast<char*>(tensor.raw_data()), static_cast<std::streamsize>(tensor.SizeInBytes()));
  if (!in) Fail(ErrorCode::kIo, path.string(), ": file ends before ", tensor.SizeInBytes(), " bytes of data");
  return tensor;
}

void WriteNpy(const std::filesystem::path& path, const Tensor& tensor) {
  if (!tensor.memory_info().IsHostReadable())
    Fail(ErrorCode::kInvalidArgument, "WriteNpy: ", tensor.Describe(), " is not in host memory");
  std::ostringstream dict;
  dict << "{'descr': '" << DescrFromType(tensor.type(), path) << "', 'fortran_order': False, 'shape': (";
  for (int64_t dim : tensor.shape().dims()) dict << dim << (tensor.shape().rank() == 1 ? "," : ", ");
  dict << "), }";
  std::string header = dict.str();
  // The data starts at a multiple of 64 bytes; the header ends with '\n' after space padding.
  const bool version2 = header.size() + 11 > 65535;
  const size_t prefix_bytes = version2 ? 12 : 10;
  const size_t total = (prefix_bytes + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix_bytes - header.size() - 1, ' ');
  header.push_back('\n');

  std::ofstream out(path, std::ios::binary);
  if (!out) Fail(ErrorCode::kIo, "cannot write '", path.string(), "'");
  out.write(kMagic.data(), static_cast<std::streamsize>(kMagic.size()));
  const char version[2] = {static_cast<char>(version2 ? 2 : 1), 0};
  out.write(version, 2);
  const uint32_t length = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < (version2 ? 4u : 2u); ++i) out.put(static_cast<char>((length >> (8 * i)) & 0xff));
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(tensor.raw_data()), static_cast<std::streamsize>(tensor.SizeInBytes()));
  if (!out) Fail(ErrorCode::kIo, "failed writing '", path.string(), "'");
}

}  // namespace tessera::cli
