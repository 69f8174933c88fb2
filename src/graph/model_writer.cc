#include "graph/model_writer.h"

#include <onnx/onnx_pb.h>

#include <fstream>
#include <set>

#include "tessera/status.h"

namespace tessera {
namespace {

constexpr uint64_t kExternalAlignment = 4096;

class Writer {
 public:
  Writer(const std::filesystem::path& model_path, const ModelWriteOptions& options)
      : options_(options),
        model_folder_(std::filesystem::absolute(model_path.has_parent_path() ? model_path.parent_path() : ".")) {
    if (options.initializer_location || options.external_data_file.empty()) return;
    const std::filesystem::path relative(options.external_data_file);
    if (relative.is_absolute() || relative.has_root_name() || relative.filename().empty())
      Fail(ErrorCode::kInvalidArgument, "optimized model: the external initializers file '", options.external_data_file,
           "' must be a file name relative to the model's folder");
    const std::filesystem::path folder = model_path.has_parent_path() ? model_path.parent_path() : ".";
    data_path_ = folder / relative;
    data_.open(data_path_, std::ios::binary | std::ios::trunc);
    if (!data_) Fail(ErrorCode::kIo, "optimized model: cannot write external initializers file '", data_path_.string(), "'");
  }

  void Finish() {
    if (!data_.is_open()) return;
    data_.close();
    if (!data_) Fail(ErrorCode::kIo, "optimized model: writing '", data_path_.string(), "' failed");
  }

  void FillTensor(const Tensor& t, const std::string& name, onnx::TensorProto& out, bool may_go_external) {
    out.set_name(name);
    out.set_data_type(static_cast<int>(t.type()));
    for (int64_t d : t.shape().dims()) out.add_dims(d);
    if (t.type() == DataType::kString) {
      const std::string* values = t.Data<std::string>();
      for (int64_t i = 0; i < t.NumElements(); ++i) out.add_string_data(values[i]);
      return;
    }
    const size_t bytes = t.SizeInBytes();
    const char* data = static_cast<const char*>(t.raw_data());
    if (may_go_external && options_.initializer_location) {
      if (std::optional<ExternalInitializerLocation> at = AskLocation(t, name, bytes)) {
        SetExternal(out, WrittenPath(at->path), static_cast<uint64_t>(at->offset), bytes);
        return;
      }
    } else if (may_go_external && data_.is_open() && bytes >= options_.external_min_bytes && bytes > 0) {
      const uint64_t offset = (offset_ + kExternalAlignment - 1) / kExternalAlignment * kExternalAlignment;
      for (; offset_ < offset; ++offset_) data_.put('\0');
      data_.write(data, static_cast<std::streamsize>(bytes));
      SetExternal(out, options_.external_data_file, offset, bytes);
      offset_ = offset + bytes;
      return;
    }
    out.set_raw_data(data, bytes);
  }

  static void SetExternal(onnx::TensorProto& out, const std::string& location, uint64_t offset, size_t bytes) {
    out.set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [key, value] : {std::pair<const char*, std::string>{"location", location},
                                     {"offset", std::to_string(offset)}, {"length", std::to_string(bytes)}}) {
      onnx::StringStringEntryProto* entry = out.add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    }
  }

  // The caller's choice for initializer `name`, checked: a location must name a file and hold exactly its bytes.
  std::optional<ExternalInitializerLocation> AskLocation(const Tensor& t, const std::string& name, size_t bytes) {
    std::optional<ExternalInitializerLocation> original;
    if (options_.sources != nullptr) {
      auto source = options_.sources->find(name);
      if (source != options_.sources->end() && source->second.data == t.raw_data() && source->second.length == bytes)
        original = ExternalInitializerLocation{source->second.file.string(),
                                               static_cast<int64_t>(source->second.offset),
                                               static_cast<int64_t>(source->second.length)};
    }
    std::optional<ExternalInitializerLocation> at =
        options_.initializer_location(name, t, original ? &*original : nullptr);
    if (!at) return at;
    if (at->path.empty() || at->path.find('\0') != std::string::npos)
      Fail(ErrorCode::kInvalidArgument, "optimized model: the location given for initializer '", name,
           "' has an empty or malformed file path");
    if (at->offset < 0 || at->size != static_cast<int64_t>(bytes))
      Fail(ErrorCode::kInvalidArgument, "optimized model: the location given for initializer '", name, "' ('",
           at->path, "', offset ", at->offset, ", size ", at->size, ") must have a non-negative offset and size ",
           bytes, ", the initializer's bytes (", t.Describe(), ")");
    return at;
  }

  // A location as the model stores it: relative to the model's folder (ONNX's rule for external data).
  std::string WrittenPath(const std::string& path) const {
    const std::filesystem::path given(path);
    if (!given.is_absolute()) return given.generic_string();
    return given.lexically_normal().lexically_proximate(model_folder_.lexically_normal()).generic_string();
  }

  static void FillType(const ValueInfo& info, onnx::TypeProto& out) {
    if (info.kind == ValueInfo::Kind::kUnknown) return;
    onnx::TypeProto::Tensor* tensor = nullptr;
    if (info.kind == ValueInfo::Kind::kSequence)
      tensor = out.mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type();
    else if (info.kind == ValueInfo::Kind::kOptional)
      tensor = out.mutable_optional_type()->mutable_elem_type()->mutable_tensor_type();
    else
      tensor = out.mutable_tensor_type();
    if (info.type != DataType::kUndefined) tensor->set_elem_type(static_cast<int>(info.type));
    if (!info.shape) return;
    onnx::TensorShapeProto* shape = tensor->mutable_shape();
    for (const Dim& d : *info.shape) {
      onnx::TensorShapeProto::Dimension* dim = shape->add_dim();
      if (d.is_concrete()) dim->set_dim_value(d.value);
      else if (!d.symbol.empty()) dim->set_dim_param(d.symbol);
      if (!d.denotation.empty()) dim->set_denotation(d.denotation);
    }
  }

  static void FillValueInfo(const ValueInfo& info, onnx::ValueInfoProto& out) {
    out.set_name(info.name);
    FillType(info, *out.mutable_type());
  }

  void FillAttribute(const Attribute& a, onnx::AttributeProto& out) {
    using Type = Attribute::Type;
    out.set_name(a.name);
    switch (a.type) {
      case Type::kFloat: out.set_type(onnx::AttributeProto::FLOAT); out.set_f(a.f); break;
      case Type::kInt: out.set_type(onnx::AttributeProto::INT); out.set_i(a.i); break;
      case Type::kString: out.set_type(onnx::AttributeProto::STRING); out.set_s(a.s); break;
      case Type::kTensor:
        out.set_type(onnx::AttributeProto::TENSOR);
        FillTensor(a.t, "", *out.mutable_t(), false);
        break;
      case Type::kGraph:
        out.set_type(onnx::AttributeProto::GRAPH);
        FillGraph(*a.g, *out.mutable_g());
        break;
      case Type::kFloats:
        out.set_type(onnx::AttributeProto::FLOATS);
        for (float v : a.floats) out.add_floats(v);
        break;
      case Type::kInts:
        out.set_type(onnx::AttributeProto::INTS);
        for (int64_t v : a.ints) out.add_ints(v);
        break;
      case Type::kStrings:
        out.set_type(onnx::AttributeProto::STRINGS);
        for (const std::string& v : a.strings) out.add_strings(v);
        break;
      case Type::kTensors:
        out.set_type(onnx::AttributeProto::TENSORS);
        for (const Tensor& t : a.tensors) FillTensor(t, "", *out.add_tensors(), false);
        break;
      case Type::kGraphs:
        out.set_type(onnx::AttributeProto::GRAPHS);
        for (const auto& g : a.graphs) FillGraph(*g, *out.add_graphs());
        break;
      case Type::kTypeProto:
        out.set_type(onnx::AttributeProto::TYPE_PROTO);
        FillType(a.type_proto, *out.mutable_tp());
        break;
      case Type::kUndefined: break;
    }
  }

  void FillGraph(const Graph& graph, onnx::GraphProto& out) {
    out.set_name(graph.name);
    for (const auto& node : graph.nodes) {
      onnx::NodeProto* n = out.add_node();
      n->set_name(node->name);
      n->set_op_type(node->op_type);
      if (!node->domain.empty()) n->set_domain(node->domain);
      for (const std::string& input : node->inputs) n->add_input(input);
      for (const std::string& output : node->outputs) n->add_output(output);
      for (const auto& [name, attribute] : node->attributes) FillAttribute(attribute, *n->add_attribute());
    }
    for (const auto& [name, tensor] : graph.initializers) FillTensor(tensor, name, *out.add_initializer(), true);
    std::set<std::string> listed;
    for (const ValueInfo& input : graph.inputs) {
      FillValueInfo(input, *out.add_input());
      listed.insert(input.name);
    }
    for (const ValueInfo& output : graph.outputs) {
      FillValueInfo(output, *out.add_output());
      listed.insert(output.name);
    }
    for (const auto& [name, info] : graph.value_infos)
      if (!listed.count(name) && !graph.IsInitializer(name) && info.kind != ValueInfo::Kind::kUnknown &&
          info.type != DataType::kUndefined)
        FillValueInfo(info, *out.add_value_info());
  }

 private:
  const ModelWriteOptions& options_;
  std::filesystem::path model_folder_;  // absolute
  std::filesystem::path data_path_;
  std::ofstream data_;
  uint64_t offset_ = 0;
};

}  // namespace

void SaveModel(const Model& model, const Graph& graph, const std::filesystem::path& path,
               const ModelWriteOptions& options) {
  Writer writer(path, options);
  onnx::ModelProto proto;
  proto.set_ir_version(model.ir_version > 0 ? model.ir_version : 8);
  for (const auto& [domain, version] : graph.opsets) {
    onnx::OperatorSetIdProto* import = proto.add_opset_import();
    import->set_domain(domain);
    import->set_version(version);
  }
  proto.set_producer_name(model.producer_name);
  proto.set_producer_version(model.producer_version);
  proto.set_domain(model.domain);
  proto.set_model_version(model.model_version);
  proto.set_doc_string(model.doc_string);
  for (const auto& [key, value] : model.metadata) {
    onnx::StringStringEntryProto* entry = proto.add_metadata_props();
    entry->set_key(key);
    entry->set_value(value);
  }
  writer.FillGraph(graph, *proto.mutable_graph());
  writer.Finish();
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file || !proto.SerializeToOstream(&file))
    Fail(ErrorCode::kIo, "optimized model: cannot write '", path.string(), "'");
}

}  // namespace tessera
