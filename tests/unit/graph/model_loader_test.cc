#include "graph/model_loader.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace tessera {
namespace {

namespace fs = std::filesystem;

// ---- model building helpers --------------------------------------------------------------------

void SetTensorType(onnx::ValueInfoProto& info, const std::string& name, DataType type,
                   const std::vector<std::string>& dims = {}) {
  info.set_name(name);
  auto* tensor_type = info.mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(static_cast<int32_t>(type));
  auto* shape = tensor_type->mutable_shape();
  for (const std::string& dim : dims) {
    auto* d = shape->add_dim();
    if (dim == "?") continue;
    if (std::isdigit(static_cast<unsigned char>(dim[0])))
      d->set_dim_value(std::stoll(dim));
    else
      d->set_dim_param(dim);
  }
}

onnx::NodeProto* AddNode(onnx::GraphProto& graph, const std::string& op_type, const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs, const std::string& name = "") {
  onnx::NodeProto* node = graph.add_node();
  node->set_op_type(op_type);
  node->set_name(name);
  for (const std::string& input : inputs) node->add_input(input);
  for (const std::string& output : outputs) node->add_output(output);
  return node;
}

// x (float [N,3]) -> Relu -> y
onnx::ModelProto ReluModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  auto* graph = model.mutable_graph();
  graph->set_name("main");
  SetTensorType(*graph->add_input(), "x", DataType::kFloat, {"N", "3"});
  SetTensorType(*graph->add_output(), "y", DataType::kFloat, {"N", "3"});
  AddNode(*graph, "Relu", {"x"}, {"y"}, "relu");
  return model;
}

// Adds an initializer `name` (also listed as a graph input, as older exporters do) read by an Identity.
onnx::TensorProto* AddInitializer(onnx::ModelProto& model, const std::string& name, DataType type,
                                  const std::vector<int64_t>& dims) {
  auto* graph = model.mutable_graph();
  onnx::TensorProto* tensor = graph->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(static_cast<int32_t>(type));
  for (int64_t dim : dims) tensor->add_dims(dim);
  SetTensorType(*graph->add_input(), name, type);
  AddNode(*graph, "Identity", {name}, {name + "_copy"});
  SetTensorType(*graph->add_output(), name + "_copy", type);
  return tensor;
}

std::string Bytes(const onnx::ModelProto& model) {
  std::string bytes;
  EXPECT_TRUE(model.SerializeToString(&bytes));
  return bytes;
}

std::unique_ptr<Model> Load(const onnx::ModelProto& model, const fs::path& base_dir = {}) {
  const std::string bytes = Bytes(model);
  return LoadModelFromBytes(bytes.data(), bytes.size(), base_dir, "test.onnx");
}

// Expects loading to fail with `code` and a message containing every part.
void ExpectLoadError(const onnx::ModelProto& model, const std::vector<std::string>& parts,
                     const fs::path& base_dir = {}, ErrorCode code = ErrorCode::kInvalidModel) {
  try {
    Load(model, base_dir);
    ADD_FAILURE() << "expected an error containing '" << parts.at(0) << "'";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), code) << error.what();
    for (const std::string& part : parts)
      EXPECT_NE(std::string(error.what()).find(part), std::string::npos) << error.what();
  }
}

template <typename T>
std::string RawBytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// A fresh folder per test, removed afterwards.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("tessera_loader_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "model");
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path ModelDir() const { return dir_ / "model"; }
  static void WriteFile(const fs::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  fs::path dir_;
};

// ---- metadata, inputs, outputs -----------------------------------------------------------------

TEST(ModelLoaderTest, LoadsMetadataAndValueInfos) {
  onnx::ModelProto proto = ReluModel();
  proto.set_producer_name("unit-test");
  proto.set_producer_version("1.2");
  proto.set_domain("org.example");
  proto.set_doc_string("doc");
  proto.set_model_version(5);
  auto* entry = proto.add_metadata_props();
  entry->set_key("author");
  entry->set_value("me");
  SetTensorType(*proto.mutable_graph()->add_value_info(), "unused", DataType::kInt8, {"?", "2"});

  auto model = Load(proto);
  EXPECT_EQ(model->ir_version, 8);
  EXPECT_EQ(model->producer_name, "unit-test");
  EXPECT_EQ(model->producer_version, "1.2");
  EXPECT_EQ(model->domain, "org.example");
  EXPECT_EQ(model->doc_string, "doc");
  EXPECT_EQ(model->model_version, 5);
  EXPECT_EQ(model->metadata.at("author"), "me");
  EXPECT_EQ(model->graph_name, "main");
  EXPECT_EQ(model->opsets.at(""), 17);
  EXPECT_TRUE(model->path.empty());
  const Graph& graph = *model->graph;
  ASSERT_EQ(graph.inputs.size(), 1u);
  EXPECT_EQ(graph.inputs[0].name, "x");
  EXPECT_EQ(graph.inputs[0].type, DataType::kFloat);
  EXPECT_EQ(graph.inputs[0].ShapeString(), "[N,3]");
  ASSERT_EQ(graph.outputs.size(), 1u);
  EXPECT_EQ(graph.outputs[0].name, "y");
  EXPECT_EQ(graph.value_infos.at("unused").type, DataType::kInt8);
  EXPECT_EQ(graph.value_infos.at("unused").ShapeString(), "[?,2]");
  ASSERT_EQ(graph.nodes.size(), 1u);
  EXPECT_EQ(graph.nodes[0]->Describe(), "Relu 'relu' (opset 17)");
  EXPECT_EQ(graph.opsets.at(""), 17);
}

TEST(ModelLoaderTest, SequenceAndOptionalValueInfos) {
  onnx::ModelProto proto = ReluModel();
  auto* seq = proto.mutable_graph()->add_value_info();
  seq->set_name("seq");
  seq->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(
      static_cast<int32_t>(DataType::kInt64));
  auto* opt = proto.mutable_graph()->add_value_info();
  opt->set_name("opt");
  opt->mutable_type()->mutable_optional_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(
      static_cast<int32_t>(DataType::kDouble));
  auto model = Load(proto);
  const ValueInfo& seq_info = model->graph->value_infos.at("seq");
  EXPECT_EQ(seq_info.kind, ValueInfo::Kind::kSequence);
  EXPECT_EQ(seq_info.type, DataType::kInt64);
  EXPECT_FALSE(seq_info.shape.has_value());
  EXPECT_EQ(model->graph->value_infos.at("opt").kind, ValueInfo::Kind::kOptional);
  EXPECT_EQ(model->graph->value_infos.at("opt").type, DataType::kDouble);
}

// ---- initializers ------------------------------------------------------------------------------

TEST(ModelLoaderTest, InitializerFromRawData) {
  onnx::ModelProto proto = ReluModel();
  AddInitializer(proto, "w", DataType::kFloat, {2, 2})->set_raw_data(RawBytes<float>({1.5f, -2, 3, 4}));
  auto model = Load(proto);
  const Tensor& w = model->graph->initializers.at("w");
  EXPECT_EQ(w.shape(), Shape({2, 2}));
  EXPECT_EQ(w.ToVector<float>(), (std::vector<float>{1.5f, -2, 3, 4}));
  EXPECT_EQ(model->graph->inputs.size(), 1u) << "an initializer listed as input is not a model input";
  EXPECT_EQ(model->graph->TypeOf("w"), DataType::kFloat);
}

// Large raw_data (top-level initializers and Constant values: copied into pages of their own) and small raw_data
// load the same values, from bytes and from a file.
class LargeRawDataTest : public TempDirTest {};

TEST_F(LargeRawDataTest, LargeInitializersAndConstantsLoadFromBytesAndFiles) {
  std::vector<float> big(300000), small = {0.5f, -1.0f};
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 977) * 0.25f - 7.0f;
  std::vector<int64_t> indices(20000);
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int64_t>(i * 7919 % 100003);
  onnx::ModelProto proto = ReluModel();
  AddInitializer(proto, "big", DataType::kFloat, {300, 1000})->set_raw_data(RawBytes(big));
  AddInitializer(proto, "small", DataType::kFloat, {2})->set_raw_data(RawBytes(small));
  onnx::NodeProto* constant = AddNode(*proto.mutable_graph(), "Constant", {}, {"indices"}, "const");
  onnx::AttributeProto* value = constant->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(static_cast<int32_t>(DataType::kInt64));
  value->mutable_t()->add_dims(static_cast<int64_t>(indices.size()));
  value->mutable_t()->set_raw_data(RawBytes(indices));
  SetTensorType(*proto.mutable_graph()->add_output(), "indices", DataType::kInt64);
  WriteFile(ModelDir() / "large.onnx", Bytes(proto));
  for (const bool from_file : {false, true}) {
    auto model = from_file ? LoadModel(ModelDir() / "large.onnx") : Load(proto);
    const Tensor& w = model->graph->initializers.at("big");
    EXPECT_EQ(w.shape(), Shape({300, 1000}));
    EXPECT_FALSE(w.is_borrowed());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(w.raw_data()) % sizeof(float), 0u);
    EXPECT_EQ(w.ToVector<float>(), big) << (from_file ? "file" : "bytes");
    EXPECT_EQ(model->graph->initializers.at("small").ToVector<float>(), small);
    const Node* node = nullptr;
    for (const auto& n : model->graph->nodes)
      if (n->op_type == "Constant") node = n.get();
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(node->attributes.at("value").t.ToVector<int64_t>(), indices);
  }
}

// Large raw_data is left out of the parse and copied into pages of its own (graph/raw_data_regions.h): every element
// type, odd sizes (regions at any offset of the file), bools normalized, and a size that disagrees with the dims
// named like any other; a file cut inside a large raw_data fails as the parser reports it.
TEST_F(LargeRawDataTest, SeparatedRawDataOfEveryKindLoadsExactly) {
  std::vector<uint16_t> halves(40001);
  std::vector<int8_t> bytes(70001);
  std::vector<double> doubles(9001);
  std::string bools(70003, '\0');
  for (size_t i = 0; i < halves.size(); ++i) halves[i] = static_cast<uint16_t>(i * 40503u);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<int8_t>(i * 131u);
  for (size_t i = 0; i < doubles.size(); ++i) doubles[i] = static_cast<double>(i) / 7.0 - 300.0;
  for (size_t i = 0; i < bools.size(); ++i) bools[i] = static_cast<char>(i % 3 == 0 ? 0 : (i % 5) + 1);
  onnx::ModelProto proto = ReluModel();
  AddInitializer(proto, "tiny", DataType::kInt8, {3})->set_raw_data(std::string("\x01\x02\x03", 3));
  AddInitializer(proto, "halves", DataType::kFloat16, {40001})->set_raw_data(RawBytes(halves));
  AddInitializer(proto, "bytes", DataType::kInt8, {70001})->set_raw_data(RawBytes(bytes));
  AddInitializer(proto, "doubles", DataType::kDouble, {9001})->set_raw_data(RawBytes(doubles));
  AddInitializer(proto, "bools", DataType::kBool, {70003})->set_raw_data(bools);
  WriteFile(ModelDir() / "kinds.onnx", Bytes(proto));
  for (const bool from_file : {false, true}) {
    auto model = from_file ? LoadModel(ModelDir() / "kinds.onnx") : Load(proto);
    const auto& init = model->graph->initializers;
    const std::string where = from_file ? "file" : "bytes";
    EXPECT_EQ(std::memcmp(init.at("halves").raw_data(), halves.data(), halves.size() * 2), 0) << where;
    EXPECT_EQ(init.at("bytes").ToVector<int8_t>(), bytes) << where;
    EXPECT_EQ(init.at("doubles").ToVector<double>(), doubles) << where;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(init.at("doubles").raw_data()) % sizeof(double), 0u) << where;
    EXPECT_EQ(init.at("tiny").ToVector<int8_t>(), (std::vector<int8_t>{1, 2, 3})) << where;
    const auto* b = static_cast<const unsigned char*>(init.at("bools").raw_data());
    size_t wrong = 0;
    for (size_t i = 0; i < bools.size(); ++i) wrong += b[i] != (bools[i] != 0 ? 1 : 0);
    EXPECT_EQ(wrong, 0u) << where;
  }

  onnx::ModelProto mismatched = ReluModel();
  AddInitializer(mismatched, "w", DataType::kFloat, {300, 1000})->set_raw_data(RawBytes(std::vector<float>(299000)));
  try {
    Load(mismatched);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidModel);
    EXPECT_NE(std::string(error.what()).find("initializer 'w' needs 1200000 bytes for its dims but raw_data holds 1196000"),
              std::string::npos)
        << error.what();
  }

  const std::string whole = Bytes(proto);
  WriteFile(ModelDir() / "cut.onnx", whole.substr(0, whole.size() - 50000));  // inside the bools' raw_data
  try {
    LoadModel(ModelDir() / "cut.onnx");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidModel);
    EXPECT_NE(std::string(error.what()).find("protobuf parsing failed"), std::string::npos) << error.what();
  }
}

TEST_F(LargeRawDataTest, FolderAndEmptyFileAreClearErrors) {
  try {
    LoadModel(ModelDir());
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(error.what()).find("not a regular file"), std::string::npos) << error.what();
  }
  WriteFile(ModelDir() / "empty.onnx", "");
  try {
    LoadModel(ModelDir() / "empty.onnx");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidModel) << error.what();
    EXPECT_NE(std::string(error.what()).find("empty.onnx"), std::string::npos) << error.what();
  }
}

TEST(ModelLoaderTest, RawBoolsAreNormalized) {
  onnx::ModelProto proto = ReluModel();
  AddInitializer(proto, "b", DataType::kBool, {3})->set_raw_data(std::string("\x00\x02\x01", 3));
  auto model = Load(proto);
  const bool* values = model->graph->initializers.at("b").Data<bool>();
  EXPECT_FALSE(values[0]);
  EXPECT_TRUE(values[1]);
  EXPECT_TRUE(values[2]);
}

TEST(ModelLoaderTest, InitializersFromTypedFields) {
  onnx::ModelProto proto = ReluModel();
  auto* f = AddInitializer(proto, "f", DataType::kFloat, {2});
  f->add_float_data(0.25f);
  f->add_float_data(-1);
  auto* i8 = AddInitializer(proto, "i8", DataType::kInt8, {2});
  i8->add_int32_data(-128);
  i8->add_int32_data(127);
  auto* u16 = AddInitializer(proto, "u16", DataType::kUInt16, {1});
  u16->add_int32_data(65535);
  auto* i32 = AddInitializer(proto, "i32", DataType::kInt32, {1});
  i32->add_int32_data(-7);
  auto* b = AddInitializer(proto, "b", DataType::kBool, {2});
  b->add_int32_data(1);
  b->add_int32_data(0);
  auto* h = AddInitializer(proto, "h", DataType::kFloat16, {1});
  h->add_int32_data(0x3C00);  // 1.0
  auto* bf = AddInitializer(proto, "bf", DataType::kBFloat16, {1});
  bf->add_int32_data(0x4000);  // 2.0
  auto* i64 = AddInitializer(proto, "i64", DataType::kInt64, {1});
  i64->add_int64_data(int64_t{1} << 40);
  auto* d = AddInitializer(proto, "d", DataType::kDouble, {1});
  d->add_double_data(0.125);
  auto* u32 = AddInitializer(proto, "u32", DataType::kUInt32, {1});
  u32->add_uint64_data(4000000000u);
  auto* u64 = AddInitializer(proto, "u64", DataType::kUInt64, {1});
  u64->add_uint64_data(UINT64_MAX);
  auto* s = AddInitializer(proto, "s", DataType::kString, {2});
  s->add_string_data("hello");
  s->add_string_data("");
  auto* c = AddInitializer(proto, "c", DataType::kComplex64, {1});
  c->add_float_data(1);
  c->add_float_data(2);
  auto* scalar = AddInitializer(proto, "scalar", DataType::kInt64, {});
  scalar->add_int64_data(9);

  auto model = Load(proto);
  const auto& init = model->graph->initializers;
  EXPECT_EQ(init.at("f").ToVector<float>(), (std::vector<float>{0.25f, -1}));
  EXPECT_EQ(init.at("i8").ToVector<int8_t>(), (std::vector<int8_t>{-128, 127}));
  EXPECT_EQ(init.at("u16").ToVector<uint16_t>(), (std::vector<uint16_t>{65535}));
  EXPECT_EQ(init.at("i32").ToVector<int32_t>(), (std::vector<int32_t>{-7}));
  EXPECT_TRUE(init.at("b").Data<bool>()[0]);
  EXPECT_FALSE(init.at("b").Data<bool>()[1]);
  EXPECT_EQ(ToFloat(init.at("h").Data<Float16>()[0]), 1.0f);
  EXPECT_EQ(ToFloat(init.at("bf").Data<BFloat16>()[0]), 2.0f);
  EXPECT_EQ(init.at("i64").ToVector<int64_t>(), (std::vector<int64_t>{int64_t{1} << 40}));
  EXPECT_EQ(init.at("d").ToVector<double>(), (std::vector<double>{0.125}));
  EXPECT_EQ(init.at("u32").ToVector<uint32_t>(), (std::vector<uint32_t>{4000000000u}));
  EXPECT_EQ(init.at("u64").ToVector<uint64_t>(), (std::vector<uint64_t>{UINT64_MAX}));
  EXPECT_EQ(init.at("s").ToVector<std::string>(), (std::vector<std::string>{"hello", ""}));
  const float* complex = static_cast<const float*>(init.at("c").raw_data());
  EXPECT_EQ(complex[0], 1.0f);
  EXPECT_EQ(complex[1], 2.0f);
  EXPECT_EQ(init.at("scalar").shape().rank(), 0u);
  EXPECT_EQ(init.at("scalar").ToVector<int64_t>(), (std::vector<int64_t>{9}));
  EXPECT_EQ(model->graph->TypeOf("s_copy"), DataType::kString) << "Identity takes its input's type";
}

TEST(ModelLoaderTest, InitializerCountMismatchesAreRejected) {
  {
    onnx::ModelProto proto = ReluModel();
    AddInitializer(proto, "w", DataType::kFloat, {3})->set_raw_data(RawBytes<float>({1, 2}));
    ExpectLoadError(proto, {"test.onnx", "initializer 'w'", "12 bytes", "8"});
  }
  {
    onnx::ModelProto proto = ReluModel();
    AddInitializer(proto, "w", DataType::kFloat, {1})->add_int64_data(1);
    ExpectLoadError(proto, {"initializer 'w'", "float_data"});
  }
  {
    onnx::ModelProto proto = ReluModel();
    auto* w = AddInitializer(proto, "w", DataType::kInt32, {2});
    w->add_int32_data(1);
    w->add_int32_data(2);
    w->add_int32_data(3);
    ExpectLoadError(proto, {"initializer 'w'", "2 elements", "3 values"});
  }
  {
    onnx::ModelProto proto = ReluModel();
    AddInitializer(proto, "s", DataType::kString, {2})->add_string_data("one");
    ExpectLoadError(proto, {"initializer 's'", "string_data"});
  }
}

TEST(ModelLoaderTest, MalformedInitializersAreRejected) {
  {
    onnx::ModelProto proto = ReluModel();
    AddInitializer(proto, "w", DataType::kFloat, {2, -1});
    ExpectLoadError(proto, {"initializer 'w'", "negative"});
  }
  {
    onnx::ModelProto proto = ReluModel();
    AddInitializer(proto, "w", DataType::kFloat, {int64_t{1} << 40, int64_t{1} << 40});
    ExpectLoadError(proto, {"initializer 'w'", "overflow"});
  }
  {
    onnx::ModelProto proto = ReluModel();
    AddInitializer(proto, "w", DataType::kFloat, {int64_t{1} << 40})->set_raw_data("abcd");
    ExpectLoadError(proto, {"initializer 'w'", "raw_data"});
  }
  {
    onnx::ModelProto proto = ReluModel();
    auto* w = AddInitializer(proto, "w", DataType::kFloat, {1});
    w->add_float_data(1);
    w->mutable_segment()->set_begin(0);
    ExpectLoadError(proto, {"initializer 'w'", "segment"});
  }
  {
    onnx::ModelProto proto = ReluModel();
    proto.mutable_graph()->add_sparse_initializer()->mutable_values()->set_name("sparse");
    ExpectLoadError(proto, {"sparse initializers"});
  }
  {
    onnx::ModelProto proto = ReluModel();
    AddInitializer(proto, "w", DataType::kFloat, {1})->set_data_type(40);
    ExpectLoadError(proto, {"initializer 'w'", "element type 40"});
  }
  {
    onnx::ModelProto proto = ReluModel();
    AddInitializer(proto, "s", DataType::kString, {1})->set_raw_data("x");
    ExpectLoadError(proto, {"initializer 's'", "string_data"});
  }
}

// ---- external data -----------------------------------------------------------------------------

void SetExternal(onnx::TensorProto& tensor, const std::string& location, const std::string& offset = "",
                 const std::string& length = "") {
  tensor.set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const char* key, const std::string& value) {
    auto* entry = tensor.add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  };
  add("location", location);
  if (!offset.empty()) add("offset", offset);
  if (!length.empty()) add("length", length);
}

using ExternalDataTest = TempDirTest;

TEST_F(ExternalDataTest, ReadsAtOffsetRelativeToTheModel) {
  fs::create_directories(ModelDir() / "weights");
  WriteFile(ModelDir() / "weights" / "w.bin", "PAD!" + RawBytes<float>({1, 2, 3}));
  onnx::ModelProto proto = ReluModel();
  SetExternal(*AddInitializer(proto, "w", DataType::kFloat, {3}), "weights/w.bin", "4", "12");
  auto model = Load(proto, ModelDir());
  EXPECT_EQ(model->graph->initializers.at("w").ToVector<float>(), (std::vector<float>{1, 2, 3}));

  // Through LoadModel, the folder comes from the model's path.
  WriteFile(ModelDir() / "m.onnx", Bytes(proto));
  auto from_file = LoadModel(ModelDir() / "m.onnx");
  EXPECT_EQ(from_file->path, ModelDir() / "m.onnx");
  EXPECT_EQ(from_file->graph->initializers.at("w").ToVector<float>(), (std::vector<float>{1, 2, 3}));
}

TEST_F(ExternalDataTest, AbsolutePathIsRejected) {
  WriteFile(ModelDir() / "w.bin", RawBytes<float>({1}));
  onnx::ModelProto proto = ReluModel();
  SetExternal(*AddInitializer(proto, "w", DataType::kFloat, {1}), (ModelDir() / "w.bin").string());
  ExpectLoadError(proto, {"initializer 'w'", "absolute"}, ModelDir());
}

TEST_F(ExternalDataTest, ParentDirectoryEscapeIsRejected) {
  WriteFile(dir_ / "secret.bin", RawBytes<float>({1}));
  onnx::ModelProto proto = ReluModel();
  SetExternal(*AddInitializer(proto, "w", DataType::kFloat, {1}), "../secret.bin");
  ExpectLoadError(proto, {"initializer 'w'", "external data path validation failed", "outside the model's folder"},
                  ModelDir());
}

TEST_F(ExternalDataTest, ParentDirectoriesInsideTheFolderAreRead) {
  fs::create_directories(ModelDir() / "sub");
  WriteFile(ModelDir() / "w.bin", RawBytes<float>({5}));
  onnx::ModelProto proto = ReluModel();
  SetExternal(*AddInitializer(proto, "w", DataType::kFloat, {1}), "sub/../w.bin");
  EXPECT_EQ(Load(proto, ModelDir())->graph->initializers.at("w").ToVector<float>(), std::vector<float>{5});
}

// ONNX Runtime's whitelisted_data_folders: a model in model/ reading ../data/w.bin.
TEST_F(ExternalDataTest, AllowedFoldersAreRead) {
  fs::create_directories(dir_ / "data");
  WriteFile(dir_ / "data" / "w.bin", RawBytes<float>({7, 8}));
  onnx::ModelProto proto = ReluModel();
  SetExternal(*AddInitializer(proto, "w", DataType::kFloat, {2}), "../data/w.bin");
  ExpectLoadError(proto, {"initializer 'w'", "external data path validation failed"}, ModelDir());
  ExternalData allowed;
  allowed.folders = {dir_ / "data"};
  const std::string bytes = Bytes(proto);
  auto model = LoadModelFromBytes(bytes.data(), bytes.size(), ModelDir(), "m", allowed);
  EXPECT_EQ(model->graph->initializers.at("w").ToVector<float>(), (std::vector<float>{7, 8}));
}

// Hugging Face's hub cache: snapshots/v/model.onnx and snapshots/v/w.bin link to blobs/<hash>; the data resolves
// beside the file the model's path links to.
TEST_F(ExternalDataTest, ALinkedModelReadsDataBesideTheFileItLinksTo) {
  fs::create_directories(dir_ / "blobs");
  fs::create_directories(dir_ / "snapshots" / "v");
  WriteFile(dir_ / "blobs" / "data_hash", RawBytes<float>({1, 2, 3}));
  onnx::ModelProto proto = ReluModel();
  SetExternal(*AddInitializer(proto, "w", DataType::kFloat, {3}), "w.bin");
  WriteFile(dir_ / "blobs" / "model_hash", Bytes(proto));
  fs::create_symlink(dir_ / "blobs" / "model_hash", dir_ / "snapshots" / "v" / "model.onnx");
  fs::create_symlink(dir_ / "blobs" / "data_hash", dir_ / "snapshots" / "v" / "w.bin");
  auto model = LoadModel(dir_ / "snapshots" / "v" / "model.onnx");
  EXPECT_EQ(model->graph->initializers.at("w").ToVector<float>(), (std::vector<float>{1, 2, 3}));
  // Data that is neither in the model's folder nor beside the linked file stays refused.
  fs::create_directories(dir_ / "elsewhere");
  fs::rename(dir_ / "blobs" / "data_hash", dir_ / "elsewhere" / "data_hash");
  fs::remove(dir_ / "snapshots" / "v" / "w.bin");
  fs::create_symlink(dir_ / "elsewhere" / "data_hash", dir_ / "snapshots" / "v" / "w.bin");
  try {
    LoadModel(dir_ / "snapshots" / "v" / "model.onnx");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("external data path validation failed"), std::string::npos) << e.what();
  }
}

TEST_F(ExternalDataTest, SymlinkLeavingTheFolderIsRejected) {
  WriteFile(dir_ / "secret.bin", RawBytes<float>({1}));
  fs::create_symlink(dir_ / "secret.bin", ModelDir() / "link.bin");
  onnx::ModelProto proto = ReluModel();
  SetExternal(*AddInitializer(proto, "w", DataType::kFloat, {1}), "link.bin");
  ExpectLoadError(proto, {"initializer 'w'", "outside"}, ModelDir());
}

TEST_F(ExternalDataTest, RangeAndLengthAreChecked) {
  WriteFile(ModelDir() / "w.bin", RawBytes<float>({1, 2}));
  {
    onnx::ModelProto proto = ReluModel();
    SetExternal(*AddInitializer(proto, "w", DataType::kFloat, {2}), "w.bin", "4");
    ExpectLoadError(proto, {"initializer 'w'", "w.bin", "exceeds"}, ModelDir());
  }
  {
    onnx::ModelProto proto = ReluModel();
    SetExternal(*AddInitializer(proto, "w", DataType::kFloat, {2}), "w.bin", "18446744073709551615", "8");
    ExpectLoadError(proto, {"initializer 'w'", "exceeds"}, ModelDir());
  }
  {
    onnx::ModelProto proto = ReluModel();
    SetExternal(*AddInitializer(proto, "w", DataType::kFloat, {1}), "w.bin", "0", "8");
    ExpectLoadError(proto, {"initializer 'w'", "length 8"}, ModelDir());
  }
  {
    onnx::ModelProto proto = ReluModel();
    SetExternal(*AddInitializer(proto, "w", DataType::kFloat, {1}), "w.bin", "-4");
    ExpectLoadError(proto, {"initializer 'w'", "offset"}, ModelDir());
  }
}

// ONNX Runtime's AddExternalInitializers / AddExternalInitializersFromFilesInMemory: data the application supplies
// instead of the files, also for models loaded from memory (no folder).
TEST_F(ExternalDataTest, ApplicationSuppliedTensorsAndFileContentsReplaceTheFiles) {
  onnx::ModelProto proto = ReluModel();
  SetExternal(*AddInitializer(proto, "w", DataType::kFloat, {2}), "absent.bin", "4", "8");
  SetExternal(*AddInitializer(proto, "v", DataType::kFloat, {1}), "other.bin");
  const std::string bytes = Bytes(proto);
  ExternalData external;
  external.initializers["v"] = Tensor::FromVector<float>(Shape{1}, {7});
  external.files["absent.bin"] = std::make_shared<const std::string>("PAD!" + RawBytes<float>({1, 2}));
  auto model = LoadModelFromBytes(bytes.data(), bytes.size(), {}, "<memory>", external);
  EXPECT_EQ(model->graph->initializers.at("w").ToVector<float>(), (std::vector<float>{1, 2}));
  EXPECT_EQ(model->graph->initializers.at("v").ToVector<float>(), (std::vector<float>{7}));
  // A tensor of another shape, and file contents too short for offset + length, name the initializer.
  external.initializers["v"] = Tensor::FromVector<float>(Shape{2}, {7, 8});
  try {
    LoadModelFromBytes(bytes.data(), bytes.size(), {}, "<memory>", external);
    ADD_FAILURE() << "a mismatched external initializer loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("initializer 'v'"), std::string::npos) << e.what();
  }
  external.initializers["v"] = Tensor::FromVector<float>(Shape{1}, {7});
  external.initializers["not_external"] = Tensor::FromVector<float>(Shape{1}, {7});
  try {
    LoadModelFromBytes(bytes.data(), bytes.size(), {}, "<memory>", external);
    ADD_FAILURE() << "an unused external initializer was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'not_external'"), std::string::npos) << e.what();
  }
  external.initializers.erase("not_external");
  external.files["absent.bin"] = std::make_shared<const std::string>("PAD!" + RawBytes<float>({1}));
  try {
    LoadModelFromBytes(bytes.data(), bytes.size(), {}, "<memory>", external);
    ADD_FAILURE() << "short file contents loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds"), std::string::npos) << e.what();
  }
}

TEST_F(ExternalDataTest, MissingFileAndMissingBaseDir) {
  onnx::ModelProto proto = ReluModel();
  SetExternal(*AddInitializer(proto, "w", DataType::kFloat, {1}), "absent.bin");
  ExpectLoadError(proto, {"initializer 'w'", "absent.bin"}, ModelDir(), ErrorCode::kIo);
  ExpectLoadError(proto, {"initializer 'w'", "memory"});
}

TEST_F(ExternalDataTest, UnreadableModelFileIsAnIoError) {
  try {
    LoadModel(ModelDir() / "missing.onnx");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(error.what()).find("missing.onnx"), std::string::npos);
  }
}

// ---- graph structure ---------------------------------------------------------------------------

TEST(ModelLoaderTest, UnsortedNodesAreSortedAndNamed) {
  onnx::ModelProto proto = ReluModel();
  auto* graph = proto.mutable_graph();
  graph->clear_node();
  AddNode(*graph, "Relu", {"b"}, {"y"});
  AddNode(*graph, "Neg", {"a"}, {"b"});
  AddNode(*graph, "Abs", {"x"}, {"a"});
  auto model = Load(proto);
  std::vector<std::string> names;
  for (const auto& node : model->graph->nodes) names.push_back(node->name);
  EXPECT_EQ(names, (std::vector<std::string>{"Abs_2", "Neg_1", "Relu_0"}));
  EXPECT_EQ(model->graph->TypeOf("b"), DataType::kFloat);
}

TEST(ModelLoaderTest, CycleIsRejected) {
  onnx::ModelProto proto = ReluModel();
  auto* graph = proto.mutable_graph();
  graph->clear_node();
  AddNode(*graph, "Add", {"x", "q"}, {"p"}, "add");
  AddNode(*graph, "Neg", {"p"}, {"q"}, "neg");
  AddNode(*graph, "Relu", {"q"}, {"y"}, "relu");
  ExpectLoadError(proto, {"test.onnx", "cycle"});
}

TEST(ModelLoaderTest, MissingInputIsRejected) {
  onnx::ModelProto proto = ReluModel();
  proto.mutable_graph()->mutable_node(0)->set_input(0, "ghost");
  ExpectLoadError(proto, {"test.onnx", "Relu 'relu'", "'ghost'"});
}

TEST(ModelLoaderTest, DuplicateProducersAreRejected) {
  onnx::ModelProto proto = ReluModel();
  AddNode(*proto.mutable_graph(), "Neg", {"x"}, {"y"}, "second");
  ExpectLoadError(proto, {"Neg 'second'", "'y'"});
}

TEST(ModelLoaderTest, OpsetAndIrVersionLimits) {
  for (int64_t version : {3, 10, 11, 14, 20}) {  // a newer IR version alone is no reason to refuse a model
    onnx::ModelProto proto = ReluModel();
    proto.set_ir_version(version);
    EXPECT_NO_THROW(Load(proto)) << version;
  }
  for (int64_t version : {0, 2}) {
    onnx::ModelProto proto = ReluModel();
    proto.set_ir_version(version);
    ExpectLoadError(proto, {"IR version " + std::to_string(version)});
  }
  for (int64_t opset : {0, 29}) {  // up to 28 (kLatestOnnxOpset) loads
    onnx::ModelProto proto = ReluModel();
    proto.mutable_opset_import(0)->set_version(opset);
    ExpectLoadError(proto, {"opset " + std::to_string(opset), "supported: 1..28"});
  }
  for (int64_t opset : {22, 23, 24, 25, 26, 27, 28}) {
    onnx::ModelProto proto = ReluModel();
    proto.mutable_opset_import(0)->set_version(opset);
    EXPECT_EQ(Load(proto)->graph->nodes[0]->opset, opset);
  }
  {  // legacy opsets load; kernels decide what they support
    onnx::ModelProto proto = ReluModel();
    proto.mutable_opset_import(0)->set_version(1);
    EXPECT_EQ(Load(proto)->graph->nodes[0]->opset, 1);
  }
  onnx::ModelProto proto = ReluModel();
  proto.mutable_opset_import(0)->set_domain("ai.onnx");
  proto.mutable_opset_import(0)->set_version(7);
  EXPECT_EQ(Load(proto)->graph->nodes[0]->opset, 7);
}

TEST(ModelLoaderTest, CustomDomainsAreKeptAndMustBeImported) {
  onnx::ModelProto proto = ReluModel();
  proto.mutable_graph()->mutable_node(0)->set_domain("com.example");
  ExpectLoadError(proto, {"com.example", "opset"});
  auto* import = proto.add_opset_import();
  import->set_domain("com.example");
  import->set_version(3);
  auto model = Load(proto);
  EXPECT_EQ(model->graph->nodes[0]->domain, "com.example");
  EXPECT_EQ(model->graph->nodes[0]->opset, 3);
}

TEST(ModelLoaderTest, AttributesOfEveryType) {
  onnx::ModelProto proto = ReluModel();
  auto* node = proto.mutable_graph()->mutable_node(0);
  auto add = [&](const char* name, onnx::AttributeProto::AttributeType type) {
    auto* attribute = node->add_attribute();
    attribute->set_name(name);
    attribute->set_type(type);
    return attribute;
  };
  add("f", onnx::AttributeProto::FLOAT)->set_f(0.5f);
  add("i", onnx::AttributeProto::INT)->set_i(-3);
  add("s", onnx::AttributeProto::STRING)->set_s("text");
  auto* floats = add("fs", onnx::AttributeProto::FLOATS);
  floats->add_floats(1);
  floats->add_floats(2);
  auto* ints = add("is", onnx::AttributeProto::INTS);
  ints->add_ints(4);
  add("ss", onnx::AttributeProto::STRINGS)->add_strings("a");
  auto* t = add("t", onnx::AttributeProto::TENSOR)->mutable_t();
  t->set_data_type(static_cast<int32_t>(DataType::kInt64));
  t->add_int64_data(11);
  auto* ts = add("ts", onnx::AttributeProto::TENSORS)->add_tensors();
  ts->set_data_type(static_cast<int32_t>(DataType::kFloat));
  ts->add_dims(1);
  ts->add_float_data(3);
  add("tp", onnx::AttributeProto::TYPE_PROTO)->mutable_tp()->mutable_tensor_type()->set_elem_type(
      static_cast<int32_t>(DataType::kUInt8));

  auto model = Load(proto);
  const Node& loaded = *model->graph->nodes[0];
  EXPECT_FLOAT_EQ(loaded.GetFloat("f"), 0.5f);
  EXPECT_EQ(loaded.GetInt("i"), -3);
  EXPECT_EQ(loaded.GetString("s"), "text");
  EXPECT_EQ(loaded.GetFloats("fs"), (std::vector<float>{1, 2}));
  EXPECT_EQ(loaded.GetInts("is"), (std::vector<int64_t>{4}));
  EXPECT_EQ(loaded.GetStrings("ss"), (std::vector<std::string>{"a"}));
  EXPECT_EQ(loaded.GetTensor("t").ToVector<int64_t>(), (std::vector<int64_t>{11}));
  ASSERT_EQ(loaded.attributes.at("ts").tensors.size(), 1u);
  EXPECT_EQ(loaded.attributes.at("ts").tensors[0].ToVector<float>(), (std::vector<float>{3}));
  EXPECT_EQ(loaded.attributes.at("tp").type_proto.type, DataType::kUInt8);
}

TEST(ModelLoaderTest, AttributeProblemsNameTheNode) {
  {
    onnx::ModelProto proto = ReluModel();
    auto* attribute = proto.mutable_graph()->mutable_node(0)->add_attribute();
    attribute->set_name("alpha");
    attribute->set_ref_attr_name("outer_alpha");
    attribute->set_type(onnx::AttributeProto::FLOAT);
    ExpectLoadError(proto, {"Relu 'relu'", "'alpha'", "outer_alpha", "functions"});
  }
  {
    onnx::ModelProto proto = ReluModel();
    proto.mutable_graph()->mutable_node(0)->add_attribute()->set_name("untyped");
    ExpectLoadError(proto, {"Relu 'relu'", "'untyped'", "no type"});
  }
  {
    onnx::ModelProto proto = ReluModel();
    auto* attribute = proto.mutable_graph()->mutable_node(0)->add_attribute();
    attribute->set_name("sparse");
    attribute->set_type(onnx::AttributeProto::SPARSE_TENSOR);
    ExpectLoadError(proto, {"Relu 'relu'", "SPARSE_TENSOR"});
  }
}

// cond ? (x + outer) : -x, with both branches reading x from the enclosing graph.
onnx::ModelProto IfModel() {
  onnx::ModelProto proto = ReluModel();
  auto* graph = proto.mutable_graph();
  graph->clear_node();
  graph->clear_output();
  SetTensorType(*graph->add_input(), "cond", DataType::kBool);
  SetTensorType(*graph->add_output(), "y", DataType::kUndefined);
  auto* if_node = AddNode(*graph, "If", {"cond"}, {"y"}, "choose");
  AddNode(*graph, "Abs", {"x"}, {"outer"}, "abs");  // after its reader in the file
  auto* then_attribute = if_node->add_attribute();
  then_attribute->set_name("then_branch");
  then_attribute->set_type(onnx::AttributeProto::GRAPH);
  auto* then_graph = then_attribute->mutable_g();
  then_graph->set_name("then");
  AddNode(*then_graph, "Add", {"x", "outer"}, {"then_y"});
  then_graph->add_output()->set_name("then_y");
  auto* else_attribute = if_node->add_attribute();
  else_attribute->set_name("else_branch");
  else_attribute->set_type(onnx::AttributeProto::GRAPH);
  auto* else_graph = else_attribute->mutable_g();
  else_graph->set_name("else");
  AddNode(*else_graph, "Neg", {"x"}, {"else_y"});
  else_graph->add_output()->set_name("else_y");
  return proto;
}

TEST(ModelLoaderTest, IfSubgraphsLoadWithParentAndTypes) {
  auto model = Load(IfModel());
  const Graph& graph = *model->graph;
  ASSERT_EQ(graph.nodes.size(), 2u);
  EXPECT_EQ(graph.nodes[0]->name, "abs");
  const Node& if_node = *graph.nodes[1];
  const Graph& then_graph = if_node.GetGraph("then_branch");
  EXPECT_EQ(then_graph.name, "then");
  EXPECT_EQ(then_graph.parent, &graph);
  EXPECT_EQ(then_graph.opsets.at(""), 17);
  EXPECT_EQ(then_graph.TypeOf("then_y"), DataType::kFloat);
  EXPECT_EQ(if_node.GetGraph("else_branch").outputs[0].type, DataType::kFloat);
  EXPECT_EQ(graph.TypeOf("y"), DataType::kFloat);
  EXPECT_EQ(graph.outputs[0].type, DataType::kFloat);
}

TEST(ModelLoaderTest, SubgraphReadingAnUndefinedValueIsRejected) {
  onnx::ModelProto proto = IfModel();
  proto.mutable_graph()->mutable_node(0)->mutable_attribute(1)->mutable_g()->mutable_node(0)->set_input(0, "ghost");
  ExpectLoadError(proto, {"test.onnx", "'ghost'"});
}

TEST(ModelLoaderTest, DeepSubgraphNestingFailsCleanly) {
  onnx::ModelProto proto = ReluModel();
  onnx::GraphProto* graph = proto.mutable_graph();
  for (int depth = 0; depth < 80; ++depth) {
    auto* attribute = AddNode(*graph, "If", {"x"}, {"nested_" + std::to_string(depth)})->add_attribute();
    attribute->set_name("then_branch");
    attribute->set_type(onnx::AttributeProto::GRAPH);
    graph = attribute->mutable_g();
  }
  EXPECT_THROW(Load(proto), Error);
}

// ---- hostile bytes -----------------------------------------------------------------------------

TEST(ModelLoaderTest, TruncatedModelsFailCleanly) {
  onnx::ModelProto proto = IfModel();
  AddInitializer(proto, "w", DataType::kFloat, {2})->set_raw_data(RawBytes<float>({1, 2}));
  const std::string bytes = Bytes(proto);
  size_t loaded = 0;
  for (size_t size = 0; size < bytes.size(); ++size) {
    try {
      LoadModelFromBytes(bytes.data(), size, {}, "truncated");
      ++loaded;
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::kInvalidModel) << error.what();
    }
  }
  EXPECT_LT(loaded, bytes.size() / 2);
  EXPECT_NO_THROW(LoadModelFromBytes(bytes.data(), bytes.size(), {}, "whole"));
}

TEST(ModelLoaderTest, GarbageBytesFailCleanly) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::string bytes(static_cast<size_t>(random() % 512), '\0');
    for (char& c : bytes) c = static_cast<char>(random());
    try {
      LoadModelFromBytes(bytes.data(), bytes.size(), {}, "garbage");
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::kInvalidModel) << error.what();
    }
  }
  try {
    LoadModelFromBytes("\xff\xff\xff", 3, {}, "garbage.onnx");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("garbage.onnx"), std::string::npos);
  }
}

// ---- the ONNX backend test models ----------------------------------------------------------------

// Every model of the ONNX backend test data is valid and must load.
TEST(ModelLoaderTest, AllOnnxTestDataModelsLoad) {
  const fs::path root = "/usr/share/libonnx-testdata/data";
  if (!fs::exists(root)) GTEST_SKIP() << root << " is not installed";
  size_t loaded = 0;
  for (const auto& suite : fs::directory_iterator(root)) {
    for (const auto& test : fs::directory_iterator(suite.path())) {
      const fs::path model = test.path() / "model.onnx";
      if (!fs::exists(model)) continue;
      EXPECT_NO_THROW(LoadModel(model)) << model;
      ++loaded;
    }
  }
  EXPECT_GT(loaded, 1000u);
}

}  // namespace
}  // namespace tessera
