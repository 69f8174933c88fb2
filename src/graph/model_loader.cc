// ONNX protobuf -> Graph IR. Every size read from the file is checked against the data actually present
// before anything is allocated from it; every failure names the model, the element and the reason.
#include "graph/model_loader.h"

#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h (ONNX_ML=1)

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <fstream>
#include <set>
#include <system_error>
#include <unordered_map>

#include "graph/raw_data_regions.h"
#include "graph/type_inference.h"
#include "tessera/ep/kernel.h"
#include "tessera/status.h"

namespace tessera {

namespace {

static_assert(std::endian::native == std::endian::little, "raw_data is little-endian; add byte swapping here");

// IR versions before 3 have no opset imports. Newer IR versions are accepted whatever their number: what a model
// uses that Tessera lacks (an element type, a sparse initializer, an op) fails by name where it is read.
constexpr int64_t kMinIrVersion = 3;
constexpr int64_t kMinDefaultOpset = 1;  // kernels decide which versions they support
constexpr int64_t kMaxDefaultOpset = kLatestOnnxOpset;
constexpr int kMaxSubgraphDepth = 64;
// raw_data of at least this many bytes becomes the tensor's buffer without a copy, when its address is aligned
// to kAdoptedAlignment (the widest element; heap strings of this size are 16-byte aligned).
constexpr size_t kAdoptRawDataBytes = size_t{64} << 10;
constexpr uintptr_t kAdoptedAlignment = 16;

// What every part of one load needs: the name for messages, where external data lives, the imports.
struct LoadContext {
  std::string label;
  std::filesystem::path base_dir;
  std::map<std::string, int> opsets;
  const ExternalData* external = nullptr;  // what the application supplies instead of external data files
  std::shared_ptr<std::set<std::string>> external_used;  // names of `external->initializers` the model read
  // Initializers read from external data files (Model::external_sources).
  std::shared_ptr<std::map<std::string, Model::ExternalSource>> external_sources;
  // Initializers whose raw_data was left out of the parse (SeparateLargeRawData): where their bytes are in `serialized`.
  const std::unordered_map<const onnx::TensorProto*, RawDataRegion>* separated = nullptr;
  const char* serialized = nullptr;
};

template <typename... Parts>
[[noreturn]] void FailModel(const LoadContext& ctx, const Parts&... parts) {
  Fail(ErrorCode::kInvalidModel, "model '", ctx.label, "': ", parts...);
}

std::string NormalizeDomain(const std::string& domain) { return domain == "ai.onnx" ? std::string() : domain; }

// ---- tensors -----------------------------------------------------------------------------------

// Element count of `dims`, rejecting negative dims and products that overflow int64.
int64_t CountElements(const onnx::TensorProto& proto, const LoadContext& ctx, const std::string& what) {
  int64_t count = 1;
  for (int64_t dim : proto.dims()) {
    if (dim < 0) FailModel(ctx, what, " has a negative dimension (", dim, ")");
    if (__builtin_mul_overflow(count, dim, &count)) FailModel(ctx, what, " has too many elements (overflow)");
  }
  return count;
}

// Byte size of `count` elements of `type`, rejecting overflow of size_t.
size_t ByteSize(int64_t count, DataType type, const LoadContext& ctx, const std::string& what) {
  size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<size_t>(count), SizeOf(type), &bytes))
    FailModel(ctx, what, " is too large (byte size overflows)");
  return bytes;
}

void CheckValueCount(int64_t expected, int64_t actual, const LoadContext& ctx, const std::string& what,
                     const char* field) {
  if (expected != actual)
    FailModel(ctx, what, " has ", expected, " elements by its dims but ", actual, " values in ", field);
}

// Copies a typed repeated field into the tensor, converting each value with a static_cast.
template <typename Out, typename Field>
void FillFrom(Tensor& tensor, const Field& field) {
  Out* out = static_cast<Out*>(tensor.raw_data());
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<Out>(field.Get(i));
}

// 16-bit float types travel in int32_data as their bit patterns (low 16 bits).
template <typename Half>
void FillHalfFrom(Tensor& tensor, const google::protobuf::RepeatedField<int32_t>& field) {
  Half* out = static_cast<Half*>(tensor.raw_data());
  for (int i = 0; i < field.size(); ++i) out[i] = Half{static_cast<uint16_t>(field.Get(i))};
}

// Fills `tensor` (already allocated with `count` elements) from the typed field ONNX assigns to its type.
void FillFromTypedField(Tensor& tensor, const onnx::TensorProto& proto, int64_t count, const LoadContext& ctx,
                        const std::string& what) {
  // Complex values take two entries (real, imaginary) per element.
  auto check = [&](int size, int per_element, const char* field) {
    CheckValueCount(count, static_cast<int64_t>(size) / per_element, ctx, what, field);
    if (size % per_element != 0) FailModel(ctx, what, ": ", field, " holds an odd number of complex parts");
  };
  switch (tensor.type()) {
    case DataType::kFloat:
    case DataType::kComplex64:
      check(proto.float_data_size(), tensor.type() == DataType::kFloat ? 1 : 2, "float_data");
      return FillFrom<float>(tensor, proto.float_data());
    case DataType::kDouble:
    case DataType::kComplex128:
      check(proto.double_data_size(), tensor.type() == DataType::kDouble ? 1 : 2, "double_data");
      return FillFrom<double>(tensor, proto.double_data());
    case DataType::kInt64:
      check(proto.int64_data_size(), 1, "int64_data");
      return FillFrom<int64_t>(tensor, proto.int64_data());
    case DataType::kUInt32:
      check(proto.uint64_data_size(), 1, "uint64_data");
      return FillFrom<uint32_t>(tensor, proto.uint64_data());
    case DataType::kUInt64:
      check(proto.uint64_data_size(), 1, "uint64_data");
      return FillFrom<uint64_t>(tensor, proto.uint64_data());
    default:
      break;
  }
  check(proto.int32_data_size(), 1, "int32_data");
  switch (tensor.type()) {
    case DataType::kInt32: return FillFrom<int32_t>(tensor, proto.int32_data());
    case DataType::kInt16: return FillFrom<int16_t>(tensor, proto.int32_data());
    case DataType::kInt8: return FillFrom<int8_t>(tensor, proto.int32_data());
    case DataType::kUInt16: return FillFrom<uint16_t>(tensor, proto.int32_data());
    case DataType::kUInt8: return FillFrom<uint8_t>(tensor, proto.int32_data());
    case DataType::kBool: return FillFrom<bool>(tensor, proto.int32_data());
    case DataType::kFloat16: return FillHalfFrom<Float16>(tensor, proto.int32_data());
    case DataType::kBFloat16: return FillHalfFrom<BFloat16>(tensor, proto.int32_data());
    default:
      FailModel(ctx, what, " has element type ", DataTypeName(tensor.type()), ", which int32_data cannot hold");
  }
}

// Bytes other than 0 and 1 are not valid bools; map them to 0/1 before anything reads them as bool.
void NormalizeBools(Tensor& tensor) {
  auto* bytes = static_cast<unsigned char*>(tensor.raw_data());
  const size_t count = static_cast<size_t>(tensor.NumElements());
  for (size_t i = 0; i < count; ++i) bytes[i] = bytes[i] != 0;
}

// Copies little-endian bytes into the tensor.
void FillFromBytes(Tensor& tensor, const char* bytes, size_t size) {
  if (size > 0) std::memcpy(tensor.raw_data(), bytes, size);
  if (tensor.type() == DataType::kBool) NormalizeBools(tensor);
}

Tensor ReadStringTensor(const onnx::TensorProto& proto, Shape shape, int64_t count, const LoadContext& ctx,
                        const std::string& what) {
  if (proto.data_location() == onnx::TensorProto::EXTERNAL || proto.has_raw_data())
    FailModel(ctx, what, ": string tensors must store their values in string_data");
  CheckValueCount(count, proto.string_data_size(), ctx, what, "string_data");
  Tensor tensor = Tensor::Allocate(DataType::kString, std::move(shape));
  std::string* out = tensor.Data<std::string>();
  for (int i = 0; i < proto.string_data_size(); ++i) out[i] = proto.string_data(i);
  return tensor;
}

// The value of `key` in the tensor's external_data entries, or nullptr.
const std::string* ExternalDataEntry(const onnx::TensorProto& proto, const std::string& key) {
  for (const auto& entry : proto.external_data())
    if (entry.key() == key) return &entry.value();
  return nullptr;
}

uint64_t ParseExternalNumber(const std::string* text, uint64_t fallback, const LoadContext& ctx,
                             const std::string& what, const char* key) {
  if (!text) return fallback;
  uint64_t value = 0;
  const char* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, value);
  if (text->empty() || ec != std::errc() || ptr != end)
    FailModel(ctx, what, ": external data ", key, " '", *text, "' is not a non-negative integer");
  return value;
}

// True when `path` lies inside `folder` (both canonical): folder's components are a prefix of path's.
bool IsInside(const std::filesystem::path& path, const std::filesystem::path& folder) {
  auto p = path.begin();
  for (auto f = folder.begin(); f != folder.end(); ++f, ++p) {
    if (f->empty()) continue;  // trailing separator
    if (p == path.end() || *p != *f) return false;
  }
  return true;
}

// The external data file for `location` (relative to the model's folder), which must resolve, symbolic links
// followed, inside the model's folder or one of the allowed folders (ExternalData::folders).
std::filesystem::path ResolveExternalPath(const std::string& location, const LoadContext& ctx,
                                          const std::string& what) {
  if (ctx.base_dir.empty())
    FailModel(ctx, what, ": external data '", location, "' cannot be resolved for a model loaded from memory");
  if (location.empty() || location.find('\0') != std::string::npos)
    FailModel(ctx, what, ": external data location is empty or malformed");
  const std::filesystem::path relative(location);
  if (relative.is_absolute() || relative.has_root_name() || relative.has_root_directory())
    FailModel(ctx, what, ": external data path '", location, "' is absolute; it must be relative to the model");
  std::error_code ec;
  const auto file = std::filesystem::weakly_canonical(ctx.base_dir / relative, ec);
  if (ec) FailModel(ctx, what, ": cannot resolve external data path '", location, "': ", ec.message());
  std::vector<std::filesystem::path> allowed = {ctx.base_dir};
  if (ctx.external != nullptr) allowed.insert(allowed.end(), ctx.external->folders.begin(), ctx.external->folders.end());
  for (const auto& folder : allowed) {
    const auto canonical = std::filesystem::weakly_canonical(folder, ec);
    if (!ec && IsInside(file, canonical)) return file;
  }
  FailModel(ctx, what, ": external data path validation failed: '", location, "' resolves to '", file.string(),
            "', outside the model's folder", allowed.size() > 1 ? " and the allowed folders" : "",
            " (SessionOptions::external_data_folders, Python's SessionOptions.whitelisted_data_folders, allow others)");
}

Tensor ReadExternalTensor(const onnx::TensorProto& proto, DataType type, Shape shape, size_t bytes,
                          const LoadContext& ctx, const std::string& what) {
  if (ctx.external != nullptr) {
    auto given = ctx.external->initializers.find(proto.name());
    if (given != ctx.external->initializers.end()) {
      if (ctx.external_used) ctx.external_used->insert(given->first);
      const Tensor& t = given->second;
      if (t.type() != type || t.shape() != shape || !t.memory_info().IsHostReadable())
        Fail(ErrorCode::kInvalidArgument, "model '", ctx.label, "': the external initializer given for ", what, " is ",
             t.Describe(), "; the model needs a host tensor of ", DataTypeName(type), " ", shape.ToString());
      return t;
    }
  }
  const std::string* location = ExternalDataEntry(proto, "location");
  if (!location) FailModel(ctx, what, ": external data has no 'location'");
  const std::string where = what + " (external data file '" + *location + "')";
  const uint64_t offset = ParseExternalNumber(ExternalDataEntry(proto, "offset"), 0, ctx, where, "offset");
  const uint64_t length = ParseExternalNumber(ExternalDataEntry(proto, "length"), bytes, ctx, where, "length");
  if (length != bytes) FailModel(ctx, where, ": length ", length, " does not match the ", bytes, " bytes needed");
  if (ctx.external != nullptr) {
    auto file = ctx.external->files.find(*location);
    if (file != ctx.external->files.end()) {
      const std::string& data = *file->second;
      if (offset > data.size() || length > data.size() - offset)
        FailModel(ctx, where, ": offset ", offset, " + length ", length, " exceeds the ", data.size(),
                  " bytes given for the file in memory");
      Tensor tensor = Tensor::Allocate(type, std::move(shape));
      std::memcpy(tensor.raw_data(), data.data() + offset, bytes);
      if (type == DataType::kBool) NormalizeBools(tensor);
      return tensor;
    }
  }
  const std::filesystem::path file = ResolveExternalPath(*location, ctx, what);
  std::error_code ec;
  const bool regular = std::filesystem::is_regular_file(file, ec);
  const uintmax_t file_size = regular ? std::filesystem::file_size(file, ec) : 0;
  if (!regular || ec) Fail(ErrorCode::kIo, "model '", ctx.label, "': ", where, ": cannot read the file");
  if (offset > file_size || length > file_size - offset)
    FailModel(ctx, where, ": offset ", offset, " + length ", length, " exceeds the file size ", file_size);
  Tensor tensor = Tensor::Allocate(type, std::move(shape));
  std::ifstream in(file, std::ios::binary);
  char* out = static_cast<char*>(tensor.raw_data());
  if (!in.seekg(static_cast<std::streamoff>(offset)) || !in.read(out, static_cast<std::streamsize>(bytes)))
    Fail(ErrorCode::kIo, "model '", ctx.label, "': ", where, ": read failed");
  if (type == DataType::kBool) NormalizeBools(tensor);
  if (ctx.external_sources)
    (*ctx.external_sources)[proto.name()] = Model::ExternalSource{std::filesystem::absolute(file, ec), offset, length,
                                                                  tensor.raw_data()};
  return tensor;
}

// A host tensor of `bytes` copied from `from`, in memory mapped for it and populated in one call: writing a model's
// weights into freshly allocated pages one page fault at a time costs several times the copy itself.
Tensor CopyIntoPopulatedPages(DataType type, Shape shape, const char* from, size_t bytes) {
  void* pages = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (pages == MAP_FAILED) {  // the usual allocation (and its error) instead
    Tensor tensor = Tensor::Allocate(type, std::move(shape));
    FillFromBytes(tensor, from, bytes);
    return tensor;
  }
  std::memcpy(pages, from, bytes);
  std::shared_ptr<void> owner(pages, [bytes](void* p) { ::munmap(p, bytes); });
  Tensor tensor = Tensor::Share(type, std::move(shape), std::move(owner), pages, bytes, MemoryInfo::Host());
  if (type == DataType::kBool) NormalizeBools(tensor);
  return tensor;
}

// A host tensor from a TensorProto; `what` names it ("initializer 'w'") in messages.
Tensor ReadTensor(onnx::TensorProto& proto, const LoadContext& ctx, const std::string& what) {
  if (!IsKnownDataType(proto.data_type()))
    FailModel(ctx, what, " has unsupported element type ", proto.data_type());
  if (proto.has_segment()) FailModel(ctx, what, " is segmented; tensor segments are not supported");
  const auto type = static_cast<DataType>(proto.data_type());
  const int64_t count = CountElements(proto, ctx, what);
  Shape shape(std::vector<int64_t>(proto.dims().begin(), proto.dims().end()));
  if (type == DataType::kString) return ReadStringTensor(proto, std::move(shape), count, ctx, what);
  const size_t bytes = ByteSize(count, type, ctx, what);
  if (proto.data_location() == onnx::TensorProto::EXTERNAL)
    return ReadExternalTensor(proto, type, std::move(shape), bytes, ctx, what);
  if (proto.has_raw_data() && ctx.separated != nullptr) {
    if (auto region = ctx.separated->find(&proto); region != ctx.separated->end()) {
      if (region->second.size != bytes)
        FailModel(ctx, what, " needs ", bytes, " bytes for its dims but raw_data holds ", region->second.size);
      return CopyIntoPopulatedPages(type, std::move(shape), ctx.serialized + region->second.offset, bytes);
    }
  }
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != bytes)
      FailModel(ctx, what, " needs ", bytes, " bytes for its dims but raw_data holds ", proto.raw_data().size());
    if (bytes >= kAdoptRawDataBytes && type != DataType::kBool &&
        reinterpret_cast<uintptr_t>(proto.raw_data().data()) % kAdoptedAlignment == 0) {
      // Large weights keep the parsed bytes: the tensor takes over the string's buffer instead of copying it
      // (for a model of hundreds of megabytes, the copy and the fresh pages it touches are most of the load).
      auto owner = std::make_shared<std::string>(std::move(*proto.mutable_raw_data()));
      void* data = owner->data();
      return Tensor::Share(type, std::move(shape), std::move(owner), data, bytes, MemoryInfo::Host());
    }
    Tensor tensor = Tensor::Allocate(type, std::move(shape));
    FillFromBytes(tensor, proto.raw_data().data(), bytes);
    return tensor;
  }
  // Typed fields: the count check inside happens before any value is written.
  const int64_t available = int64_t{proto.float_data_size()} + proto.int32_data_size() + proto.int64_data_size() +
                            proto.double_data_size() + proto.uint64_data_size();
  if (count > available) FailModel(ctx, what, " has ", count, " elements by its dims but only ", available, " values");
  Tensor tensor = Tensor::Allocate(type, std::move(shape));
  FillFromTypedField(tensor, proto, count, ctx, what);
  return tensor;
}

// ---- value infos -------------------------------------------------------------------------------

DataType ElementType(int32_t onnx_type, const LoadContext& ctx, const std::string& what) {
  if (onnx_type == 0) return DataType::kUndefined;
  if (!IsKnownDataType(onnx_type)) FailModel(ctx, what, " has unsupported element type ", onnx_type);
  return static_cast<DataType>(onnx_type);
}

std::vector<Dim> ConvertShape(const onnx::TensorShapeProto& proto) {
  std::vector<Dim> dims;
  dims.reserve(proto.dim_size());
  for (const auto& dim : proto.dim()) {
    Dim out;
    if (dim.has_dim_value() && dim.dim_value() >= 0) out.value = dim.dim_value();
    if (dim.has_dim_param()) out.symbol = dim.dim_param();
    if (dim.has_denotation()) out.denotation = dim.denotation();
    dims.push_back(std::move(out));
  }
  return dims;
}

// Kind, element type and shape from a TypeProto (protobuf's parse depth limit bounds the recursion).
void ConvertType(const onnx::TypeProto& proto, ValueInfo& info, const LoadContext& ctx, const std::string& what) {
  if (proto.has_tensor_type()) {
    info.kind = ValueInfo::Kind::kTensor;
    info.type = ElementType(proto.tensor_type().elem_type(), ctx, what);
    if (proto.tensor_type().has_shape()) info.shape = ConvertShape(proto.tensor_type().shape());
  } else if (proto.has_sequence_type() || proto.has_optional_type()) {
    const bool sequence = proto.has_sequence_type();
    const auto& inner = sequence ? proto.sequence_type().elem_type() : proto.optional_type().elem_type();
    ValueInfo element;
    ConvertType(inner, element, ctx, what);
    info.kind = sequence ? ValueInfo::Kind::kSequence : ValueInfo::Kind::kOptional;
    info.type = element.type;
  } else {
    info.kind = ValueInfo::Kind::kUnknown;  // maps, sparse tensors, opaque: kernels decide
  }
}

ValueInfo ConvertValueInfo(const onnx::ValueInfoProto& proto, const LoadContext& ctx, const char* role) {
  if (proto.name().empty()) FailModel(ctx, "a graph ", role, " has no name");
  ValueInfo info;
  info.name = proto.name();
  if (proto.has_type())
    ConvertType(proto.type(), info, ctx, std::string(role) + " '" + proto.name() + "'");
  else
    info.kind = ValueInfo::Kind::kUnknown;
  return info;
}

// ---- graphs and nodes --------------------------------------------------------------------------

std::shared_ptr<Graph> LoadSubgraph(onnx::GraphProto& proto, const LoadContext& ctx, const Graph& parent,
                                    int depth);

void ConvertAttributeValue(onnx::AttributeProto& proto, Attribute& out, const LoadContext& ctx,
                           const Graph& graph, const std::string& what, int depth) {
  using Proto = onnx::AttributeProto;
  switch (proto.type()) {
    case Proto::FLOAT:
      out.type = Attribute::Type::kFloat;
      out.f = proto.f();
      return;
    case Proto::INT:
      out.type = Attribute::Type::kInt;
      out.i = proto.i();
      return;
    case Proto::STRING:
      out.type = Attribute::Type::kString;
      out.s = proto.s();
      return;
    case Proto::TENSOR:
      out.type = Attribute::Type::kTensor;
      out.t = ReadTensor(*proto.mutable_t(), ctx, what);
      return;
    case Proto::GRAPH:
      out.type = Attribute::Type::kGraph;
      out.g = LoadSubgraph(*proto.mutable_g(), ctx, graph, depth);
      return;
    case Proto::FLOATS:
      out.type = Attribute::Type::kFloats;
      out.floats.assign(proto.floats().begin(), proto.floats().end());
      return;
    case Proto::INTS:
      out.type = Attribute::Type::kInts;
      out.ints.assign(proto.ints().begin(), proto.ints().end());
      return;
    case Proto::STRINGS:
      out.type = Attribute::Type::kStrings;
      out.strings.assign(proto.strings().begin(), proto.strings().end());
      return;
    case Proto::TENSORS:
      out.type = Attribute::Type::kTensors;
      for (auto& tensor : *proto.mutable_tensors()) out.tensors.push_back(ReadTensor(tensor, ctx, what));
      return;
    case Proto::GRAPHS:
      out.type = Attribute::Type::kGraphs;
      for (auto& subgraph : *proto.mutable_graphs()) out.graphs.push_back(LoadSubgraph(subgraph, ctx, graph, depth));
      return;
    case Proto::TYPE_PROTO:
      out.type = Attribute::Type::kTypeProto;
      ConvertType(proto.tp(), out.type_proto, ctx, what);
      return;
    case Proto::UNDEFINED: FailModel(ctx, what, " has no type");
    default: FailModel(ctx, what, " has type ", Proto::AttributeType_Name(proto.type()), ", which is not supported");
  }
}

Attribute ConvertAttribute(onnx::AttributeProto& proto, const LoadContext& ctx, const Graph& graph,
                           const Node& node, int depth) {
  const std::string what = node.Describe() + ": attribute '" + proto.name() + "'";
  if (proto.name().empty()) FailModel(ctx, node.Describe(), ": an attribute has no name");
  if (!proto.ref_attr_name().empty())
    FailModel(ctx, what, " refers to function attribute '", proto.ref_attr_name(),
              "'; attribute references are only valid inside functions");
  Attribute attribute;
  attribute.name = proto.name();
  ConvertAttributeValue(proto, attribute, ctx, graph, what, depth);
  return attribute;
}

std::unique_ptr<Node> ConvertNode(onnx::NodeProto& proto, size_t index, const LoadContext& ctx,
                                  const Graph& graph, int depth) {
  if (proto.op_type().empty()) FailModel(ctx, "graph '", graph.name, "': node ", index, " has no op_type");
  auto node = std::make_unique<Node>();
  node->op_type = proto.op_type();
  node->name = proto.name().empty() ? proto.op_type() + "_" + std::to_string(index) : proto.name();
  node->domain = NormalizeDomain(proto.domain());
  auto opset = ctx.opsets.find(node->domain);
  if (opset == ctx.opsets.end())
    FailModel(ctx, node->Describe(), ": the model does not import an opset for domain '", node->domain, "'");
  node->opset = opset->second;
  node->inputs.assign(proto.input().begin(), proto.input().end());
  node->outputs.assign(proto.output().begin(), proto.output().end());
  for (auto& attribute_proto : *proto.mutable_attribute()) {
    Attribute attribute = ConvertAttribute(attribute_proto, ctx, graph, *node, depth);
    const std::string key = attribute.name;
    if (!node->attributes.emplace(key, std::move(attribute)).second)
      FailModel(ctx, node->Describe(), ": attribute '", key, "' appears twice");
  }
  return node;
}

void LoadInitializers(onnx::GraphProto& proto, const LoadContext& ctx, Graph& graph) {
  if (proto.sparse_initializer_size() > 0)
    FailModel(ctx, "graph '", graph.name, "' has sparse initializers, which are not supported");
  for (auto& tensor_proto : *proto.mutable_initializer()) {
    const std::string what = "initializer '" + tensor_proto.name() + "'";
    if (tensor_proto.name().empty()) FailModel(ctx, "graph '", graph.name, "': an initializer has no name");
    if (graph.initializers.count(tensor_proto.name())) FailModel(ctx, what, " appears twice");
    Tensor tensor = ReadTensor(tensor_proto, ctx, what);
    ValueInfo info;
    info.name = tensor_proto.name();
    info.type = tensor.type();
    info.shape.emplace();
    for (int64_t dim : tensor.shape().dims()) info.shape->push_back(Dim{dim, {}, {}});
    graph.value_infos[info.name] = std::move(info);
    graph.initializers.emplace(tensor_proto.name(), std::move(tensor));
  }
}

// Graph inputs (initializers excluded: they are constants), outputs and annotated intermediates.
void LoadValueInfos(const onnx::GraphProto& proto, const LoadContext& ctx, Graph& graph) {
  std::set<std::string> input_names;
  for (const auto& input_proto : proto.input()) {
    ValueInfo info = ConvertValueInfo(input_proto, ctx, "input");
    if (graph.IsInitializer(info.name)) continue;
    if (!input_names.insert(info.name).second)
      FailModel(ctx, "graph '", graph.name, "': input '", info.name, "' appears twice");
    graph.value_infos[info.name] = info;
    graph.inputs.push_back(std::move(info));
  }
  for (const auto& output_proto : proto.output()) {
    ValueInfo info = ConvertValueInfo(output_proto, ctx, "output");
    if (info.type != DataType::kUndefined || !graph.value_infos.count(info.name)) graph.value_infos[info.name] = info;
    graph.outputs.push_back(std::move(info));
  }
  for (const auto& value_proto : proto.value_info()) {
    ValueInfo info = ConvertValueInfo(value_proto, ctx, "value_info");
    auto existing = graph.value_infos.find(info.name);
    if (existing == graph.value_infos.end() || existing->second.type == DataType::kUndefined)
      graph.value_infos[info.name] = std::move(info);
  }
}

void LoadGraph(onnx::GraphProto& proto, const LoadContext& ctx, Graph& graph, int depth) {
  if (depth > kMaxSubgraphDepth)
    FailModel(ctx, "subgraphs are nested more than ", kMaxSubgraphDepth, " levels deep");
  graph.name = proto.name();
  graph.opsets = ctx.opsets;
  LoadInitializers(proto, ctx, graph);
  LoadValueInfos(proto, ctx, graph);
  std::set<std::string> produced;
  graph.nodes.reserve(proto.node_size());
  for (int i = 0; i < proto.node_size(); ++i) {
    std::unique_ptr<Node> node = ConvertNode(*proto.mutable_node(i), static_cast<size_t>(i), ctx, graph, depth);
    for (const std::string& output : node->outputs)
      if (!output.empty() && !produced.insert(output).second)
        FailModel(ctx, node->Describe(), ": output '", output, "' is already produced by another node");
    graph.nodes.push_back(std::move(node));
  }
}

std::shared_ptr<Graph> LoadSubgraph(onnx::GraphProto& proto, const LoadContext& ctx, const Graph& parent,
                                    int depth) {
  auto graph = std::make_shared<Graph>();
  graph->parent = &parent;
  LoadGraph(proto, ctx, *graph, depth + 1);
  return graph;
}

// Sorts `graph` and, with the names visible to them, every nested subgraph.
void SortRecursively(Graph& graph, const std::set<std::string>& outer_scope) {
  graph.TopologicalSort(outer_scope);
  std::set<std::string> inner_scope;
  bool scope_built = false;
  for (auto& node : graph.nodes) {
    for (auto& [key, attribute] : node->attributes) {
      std::vector<Graph*> subgraphs;
      if (attribute.g) subgraphs.push_back(attribute.g.get());
      for (auto& subgraph : attribute.graphs) subgraphs.push_back(subgraph.get());
      if (subgraphs.empty()) continue;
      if (!scope_built) {
        inner_scope = outer_scope;
        for (const ValueInfo& input : graph.inputs) inner_scope.insert(input.name);
        for (const auto& [name, tensor] : graph.initializers) inner_scope.insert(name);
        for (const auto& other : graph.nodes) inner_scope.insert(other->outputs.begin(), other->outputs.end());
        scope_built = true;
      }
      for (Graph* subgraph : subgraphs) SortRecursively(*subgraph, inner_scope);
    }
  }
}

// ---- model -------------------------------------------------------------------------------------

std::map<std::string, int> LoadOpsets(const onnx::ModelProto& proto, const LoadContext& ctx) {
  std::map<std::string, int> opsets;
  for (const auto& import : proto.opset_import()) {
    const std::string domain = NormalizeDomain(import.domain());
    const int64_t version = import.version();
    if (domain.empty() && (version < kMinDefaultOpset || version > kMaxDefaultOpset))
      FailModel(ctx, "default-domain opset ", version, " is not supported (supported: ", kMinDefaultOpset, "..",
                kMaxDefaultOpset, ")");
    if (version < 1 || version > INT_MAX) FailModel(ctx, "opset ", version, " for domain '", domain, "' is invalid");
    auto [it, inserted] = opsets.emplace(domain, static_cast<int>(version));
    if (!inserted && it->second != version)
      FailModel(ctx, "domain '", domain, "' is imported twice, with opsets ", it->second, " and ", version);
  }
  return opsets;
}

std::unique_ptr<Model> ConvertModel(onnx::ModelProto& proto, const LoadContext& base_ctx) {
  if (proto.ir_version() < kMinIrVersion)
    FailModel(base_ctx, "IR version ", proto.ir_version(), " is not supported (supported: ", kMinIrVersion,
              " and newer)");
  if (!proto.has_graph()) FailModel(base_ctx, "the model has no graph");
  LoadContext ctx = base_ctx;
  ctx.opsets = LoadOpsets(proto, ctx);

  auto model = std::make_unique<Model>();
  model->ir_version = proto.ir_version();
  model->opsets = ctx.opsets;
  model->producer_name = proto.producer_name();
  model->producer_version = proto.producer_version();
  model->domain = proto.domain();
  model->doc_string = proto.doc_string();
  model->model_version = proto.model_version();
  for (const auto& entry : proto.metadata_props()) model->metadata[entry.key()] = entry.value();
  model->graph_name = proto.graph().name();
  model->graph = std::make_unique<Graph>();
  LoadGraph(*proto.mutable_graph(), ctx, *model->graph, 0);
  try {
    SortRecursively(*model->graph, {});
    InferElementTypes(*model->graph);
  } catch (const Error& error) {
    if (error.code() != ErrorCode::kInvalidModel) throw;
    FailModel(ctx, error.what());
  }
  return model;
}

}  // namespace

std::unique_ptr<Model> LoadModelFromBytes(const void* data, size_t size, const std::filesystem::path& base_dir,
                                          const std::string& label, const ExternalData& external) {
  LoadContext ctx{label, base_dir, {}, &external, std::make_shared<std::set<std::string>>(),
                  std::make_shared<std::map<std::string, Model::ExternalSource>>()};
  if (size > static_cast<size_t>(INT_MAX))
    FailModel(ctx, "the model is ", size,
              " bytes; protobuf models must be under 2 GiB (store weights as external data)");
  onnx::ModelProto proto;
  // Large raw_data stays out of the parse; ReadTensor copies it from `data` into populated pages. A model whose
  // wire format the walk finds irregular is parsed whole (and reported by the parser).
  std::unordered_map<const onnx::TensorProto*, RawDataRegion> separated;
  if (std::optional<ModelWithoutRawData> rest =
          SeparateLargeRawData({static_cast<const char*>(data), size}, kAdoptRawDataBytes)) {
    bool parsed = proto.ParseFromArray(rest->bytes.data(), static_cast<int>(rest->bytes.size()));
    const onnx::GraphProto& graph = proto.graph();
    for (const RawDataRegion& region : rest->regions) {
      const onnx::TensorProto* tensor = nullptr;
      if (!parsed) break;
      if (region.holder == RawDataRegion::Holder::kInitializer) {
        if (region.index < static_cast<size_t>(graph.initializer_size()))
          tensor = &graph.initializer(static_cast<int>(region.index));
      } else if (region.index < static_cast<size_t>(graph.node_size()) &&
                 region.attribute < static_cast<size_t>(graph.node(static_cast<int>(region.index)).attribute_size())) {
        tensor = &graph.node(static_cast<int>(region.index)).attribute(static_cast<int>(region.attribute)).t();
      }
      parsed = tensor != nullptr;
      if (parsed) separated[tensor] = region;
    }
    if (parsed) {
      ctx.separated = &separated;
      ctx.serialized = static_cast<const char*>(data);
    } else {
      separated.clear();
      proto.Clear();
    }
  }
  if (ctx.separated == nullptr && !proto.ParseFromArray(data, static_cast<int>(size)))
    FailModel(ctx, "not a valid ONNX model (protobuf parsing failed)");
  std::unique_ptr<Model> model = ConvertModel(proto, ctx);
  for (const auto& [name, tensor] : external.initializers)
    if (!ctx.external_used->contains(name))
      Fail(ErrorCode::kInvalidArgument, "model '", label, "': the external initializer '", name,
           "' given in the session options is not an initializer the model stores as external data");
  model->external_sources = std::move(*ctx.external_sources);
  return model;
}

namespace {

// A read-only mapping of a whole file: the parser reads the page cache directly, with no copy of the file into
// freshly allocated memory.
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) Fail(ErrorCode::kIo, "cannot read model '", path.string(), "': ", std::strerror(errno));
    struct stat info{};
    if (::fstat(fd, &info) != 0) {
      const int error = errno;
      ::close(fd);
      Fail(ErrorCode::kIo, "cannot read model '", path.string(), "': ", std::strerror(error));
    }
    size_ = static_cast<size_t>(info.st_size);
    if (size_ > static_cast<size_t>(INT_MAX)) {
      ::close(fd);
      Fail(ErrorCode::kInvalidModel, "model '", path.string(), "' is ", size_,
           " bytes; protobuf models must be under 2 GiB (store weights as external data)");
    }
    if (size_ > 0) {
      // Populated: the loader reads every page (the parse, and the copies of large raw_data), and one call maps them
      // all sooner than a fault per 64 KB.
      void* mapped = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      if (mapped == MAP_FAILED) {
        const int error = errno;
        ::close(fd);
        Fail(ErrorCode::kIo, "cannot map model '", path.string(), "': ", std::strerror(error));
      }
      ::madvise(mapped, size_, MADV_SEQUENTIAL);
      data_ = mapped;
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(data_, size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const void* data() const { return data_ != nullptr ? data_ : ""; }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

std::unique_ptr<Model> LoadModel(const std::filesystem::path& path, const ExternalData& external) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    Fail(ErrorCode::kIo, "cannot read model '", path.string(), "': ",
         ec ? ec.message() : (std::filesystem::exists(path, ec) ? "not a regular file" : "No such file or directory"));
  const MappedFile file(path);
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  // A model reached through a symbolic link (Hugging Face's hub cache links snapshots/<version>/model.onnx to
  // blobs/<hash>) may keep its data beside the file it links to.
  ExternalData with_real_folder = external;
  const std::filesystem::path real = std::filesystem::weakly_canonical(path, ec);
  if (!ec) with_real_folder.folders.push_back(real.parent_path());
  auto model = LoadModelFromBytes(file.data(), file.size(), folder, path.string(), with_real_folder);
  model->path = path;
  return model;
}

}  // namespace tessera
