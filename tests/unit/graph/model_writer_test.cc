// model_writer: the optimized model a session writes (SessionOptions::optimized_model_filepath) loads again and
// computes what the original does; large initializers go to an external file when asked; every attribute kind
// round-trips.
#include "graph/model_writer.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <optional>

#include "graph/model_loader.h"
#include "ops/op_tester.h"
#include "unit/graph/passes/pass_test_graph.h"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;

class ModelWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tessera_writer_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// x [1, 3, 8, 8] -> Conv (4 filters, bias) -> Relu -> y
PassTestGraph ConvRelu() {
  PassTestGraph g;
  g.Input("x", {1, 3, 8, 8}).Output("y");
  g.Floats("w", {4, 3, 3, 3}, PassTestGraph::Random(108, -0.5f, 0.5f, 1)).Floats("b", {4}, {0.1f, -0.2f, 0.3f, 0.0f});
  SetInts(g.Node("Conv", {"x", "w", "b"}, {"c"}), "pads", {1, 1, 1, 1});
  g.Node("Relu", {"c"}, {"y"});
  return g;
}

onnx::ModelProto ReadProto(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  onnx::ModelProto proto;
  EXPECT_TRUE(proto.ParseFromIstream(&file)) << path;
  return proto;
}

Tensor RunFile(const fs::path& path, const Session::NamedValues& feeds, SessionOptions options = {}) {
  Environment env;
  options.intra_op_threads = 1;
  Session session(env, path, options);
  return session.Run(feeds)[0].tensor();
}

TEST_F(ModelWriterTest, SessionsWriteTheOptimizedModelAndItRunsAgain) {
  const PassTestGraph g = ConvRelu();
  const std::string bytes = g.Serialize();
  const Session::NamedValues feeds = g.Feeds();
  for (OptimizationLevel level : {OptimizationLevel::kAll, OptimizationLevel::kExtended}) {
    SCOPED_TRACE(static_cast<int>(level));
    Environment env;
    SessionOptions options = OptionsAt(level);
    options.optimized_model_filepath = (dir_ / "optimized.onnx").string();
    Session original(env, bytes.data(), bytes.size(), options);
    const Tensor want = original.Run(feeds)[0].tensor();
    const onnx::ModelProto saved = ReadProto(dir_ / "optimized.onnx");
    std::vector<std::string> ops;
    for (const auto& node : saved.graph().node()) ops.push_back(node.domain() + "::" + node.op_type());
    if (level == OptimizationLevel::kAll)
      EXPECT_NE(std::find_if(ops.begin(), ops.end(), [](const std::string& op) { return op.rfind("ai.tessera::", 0) == 0; }),
                ops.end()) << ::testing::PrintToString(ops);
    else
      EXPECT_EQ(ops, (std::vector<std::string>{"::Conv", "::Relu"}));
    EXPECT_EQ(CompareTensors(want, RunFile(dir_ / "optimized.onnx", feeds), 0, 0), "");
  }
}

TEST_F(ModelWriterTest, LargeInitializersGoToTheExternalFileBesideTheModel) {
  const PassTestGraph g = ConvRelu();
  const std::string bytes = g.Serialize();
  fs::create_directories(dir_ / "out");
  Environment env;
  SessionOptions options = OptionsAt(OptimizationLevel::kExtended);
  options.optimized_model_filepath = (dir_ / "out" / "m.onnx").string();
  options.config["session.optimized_model_external_initializers_file_name"] = "weights.bin";
  options.config["session.optimized_model_external_initializers_min_size_in_bytes"] = "100";
  Session original(env, bytes.data(), bytes.size(), options);
  const onnx::ModelProto saved = ReadProto(dir_ / "out" / "m.onnx");
  ASSERT_TRUE(fs::exists(dir_ / "out" / "weights.bin"));
  for (const auto& init : saved.graph().initializer()) {
    if (init.name() == "w") {  // 432 bytes
      ASSERT_EQ(init.data_location(), onnx::TensorProto::EXTERNAL);
      for (const auto& entry : init.external_data())
        if (entry.key() == "offset") {
          EXPECT_EQ(std::stoll(entry.value()) % 4096, 0);
        }
    } else {  // b: 16 bytes, inline
      EXPECT_EQ(init.data_location(), onnx::TensorProto::DEFAULT) << init.name();
      EXPECT_EQ(init.raw_data().size(), 16u);
    }
  }
  const Session::NamedValues feeds = g.Feeds();
  EXPECT_EQ(CompareTensors(original.Run(feeds)[0].tensor(), RunFile(dir_ / "out" / "m.onnx", feeds), 0, 0), "");
  // A bad setting is refused, naming it.
  options.config["session.optimized_model_external_initializers_min_size_in_bytes"] = "lots";
  EXPECT_THROW(Session(env, bytes.data(), bytes.size(), options), Error);
  options.config["session.optimized_model_external_initializers_min_size_in_bytes"] = "100";
  options.config["session.optimized_model_external_initializers_file_name"] = (dir_ / "abs.bin").string();
  try {
    Session(env, bytes.data(), bytes.size(), options);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("relative to the model's folder"), std::string::npos) << e.what();
  }
}

// The per-initializer location callback (ONNX Runtime's compile API): it sees where the loaded model kept its
// external data, may keep an initializer there, store it in a file of its own, or leave it inline.
TEST_F(ModelWriterTest, TheInitializerLocationCallbackPlacesEachInitializer) {
  const PassTestGraph g = ConvRelu();
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(g.Serialize()));
  // The source model keeps w in src/w.bin at offset 64.
  fs::create_directories(dir_ / "src");
  fs::create_directories(dir_ / "out");
  for (auto& init : *proto.mutable_graph()->mutable_initializer()) {
    if (init.name() != "w") continue;
    if (init.raw_data().empty()) {  // the builder writes float_data
      init.set_raw_data(std::string(reinterpret_cast<const char*>(init.float_data().data()),
                                    init.float_data_size() * sizeof(float)));
      init.clear_float_data();
    }
    std::ofstream data(dir_ / "src" / "w.bin", std::ios::binary);
    data << std::string(64, 'x') << init.raw_data();
    const std::string length = std::to_string(init.raw_data().size());
    init.clear_raw_data();
    init.set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [key, value] : {std::pair<std::string, std::string>{"location", "w.bin"}, {"offset", "64"},
                                     {"length", length}}) {
      auto* entry = init.add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    }
  }
  {
    std::ofstream file(dir_ / "src" / "m.onnx", std::ios::binary);
    ASSERT_TRUE(proto.SerializeToOstream(&file));
  }
  Environment env;
  SessionOptions options = OptionsAt(OptimizationLevel::kExtended);
  options.optimized_model_filepath = (dir_ / "out" / "reuse.onnx").string();
  std::map<std::string, std::optional<ExternalInitializerLocation>> seen;
  options.optimized_model_initializer_location = [&](const std::string& name, const Tensor& value,
                                                     const ExternalInitializerLocation* original)
      -> std::optional<ExternalInitializerLocation> {
    EXPECT_GT(value.SizeInBytes(), 0u) << name;
    seen[name] = original ? std::optional(*original) : std::nullopt;
    return original ? std::optional(*original) : std::nullopt;  // keep external data where it is
  };
  Session reused(env, dir_ / "src" / "m.onnx", options);
  ASSERT_EQ(seen.size(), 2u);
  ASSERT_TRUE(seen["w"].has_value());
  EXPECT_EQ(fs::path(seen["w"]->path), fs::weakly_canonical(dir_ / "src" / "w.bin"));
  EXPECT_EQ(seen["w"]->offset, 64);
  EXPECT_EQ(seen["w"]->size, 432);
  EXPECT_FALSE(seen["b"].has_value());
  const onnx::ModelProto reuse = ReadProto(dir_ / "out" / "reuse.onnx");
  for (const auto& init : reuse.graph().initializer()) {
    if (init.name() == "w") {
      ASSERT_EQ(init.data_location(), onnx::TensorProto::EXTERNAL);
      std::map<std::string, std::string> entries;
      for (const auto& entry : init.external_data()) entries[entry.key()] = entry.value();
      EXPECT_EQ(entries["location"], "../src/w.bin");  // relative to the written model's folder
      EXPECT_EQ(entries["offset"], "64");
      EXPECT_EQ(entries["length"], "432");
    } else {
      EXPECT_EQ(init.data_location(), onnx::TensorProto::DEFAULT) << init.name();
    }
  }
  const Session::NamedValues feeds = g.Feeds();
  const Tensor expected = reused.Run(feeds)[0].tensor();
  SessionOptions outside;
  outside.external_data_folders = {(dir_ / "src").string()};  // its data lies outside the written model's folder
  EXPECT_EQ(CompareTensors(expected, RunFile(dir_ / "out" / "reuse.onnx", feeds, outside), 0, 0), "");

  // Every initializer into a file of the callback's own, at absolute paths: written relative to the model.
  options.optimized_model_filepath = (dir_ / "out" / "own.onnx").string();
  std::ofstream own(dir_ / "out" / "own.bin", std::ios::binary);
  options.optimized_model_initializer_location = [&](const std::string&, const Tensor& value,
                                                     const ExternalInitializerLocation*) {
    const int64_t offset = own.tellp();
    own.write(static_cast<const char*>(value.raw_data()), static_cast<std::streamsize>(value.SizeInBytes()));
    return std::optional(ExternalInitializerLocation{(dir_ / "out" / "own.bin").string(), offset,
                                                     static_cast<int64_t>(value.SizeInBytes())});
  };
  Session(env, dir_ / "src" / "m.onnx", options);
  own.close();
  const onnx::ModelProto own_model = ReadProto(dir_ / "out" / "own.onnx");
  for (const auto& init : own_model.graph().initializer()) {
    ASSERT_EQ(init.data_location(), onnx::TensorProto::EXTERNAL) << init.name();
    ASSERT_GT(init.external_data_size(), 0) << init.name();
    EXPECT_EQ(init.external_data(0).value(), "own.bin");
  }
  EXPECT_EQ(CompareTensors(expected, RunFile(dir_ / "out" / "own.onnx", feeds), 0, 0), "");

  // A location that does not hold the initializer's bytes, or a callback that throws, fails creation by name.
  options.optimized_model_initializer_location = [](const std::string&, const Tensor& value,
                                                    const ExternalInitializerLocation*) {
    return std::optional(ExternalInitializerLocation{"x.bin", 0, static_cast<int64_t>(value.SizeInBytes()) + 1});
  };
  try {
    Session(env, dir_ / "src" / "m.onnx", options);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("the location given for initializer '"), std::string::npos) << e.what();
  }
  options.optimized_model_initializer_location = [](const std::string& name, const Tensor&,
                                                    const ExternalInitializerLocation*)
      -> std::optional<ExternalInitializerLocation> { throw std::runtime_error("no place for " + name); };
  EXPECT_THROW(Session(env, dir_ / "src" / "m.onnx", options), std::exception);
}

// A node of every attribute kind (an unknown op: the loader keeps it, no session runs it) written and read back.
TEST_F(ModelWriterTest, EveryAttributeKindRoundTrips) {
  onnx::ModelProto proto;
  proto.set_ir_version(8);
  proto.set_producer_name("writer-test");
  auto* import = proto.add_opset_import();
  import->set_version(17);
  auto* custom = proto.add_opset_import();
  custom->set_domain("test.domain");
  custom->set_version(1);
  auto* meta = proto.add_metadata_props();
  meta->set_key("k");
  meta->set_value("v");
  onnx::GraphProto* graph = proto.mutable_graph();
  graph->set_name("main");
  auto typed = [](onnx::ValueInfoProto* v, const std::string& name, const std::vector<std::string>& dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (const std::string& d : dims) {
      auto* dim = t->mutable_shape()->add_dim();
      if (std::isdigit(static_cast<unsigned char>(d[0]))) dim->set_dim_value(std::stoll(d));
      else dim->set_dim_param(d);
    }
  };
  typed(graph->add_input(), "x", {"batch", "3"});
  typed(graph->add_output(), "y", {"batch", "3"});
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type("Everything");
  node->set_domain("test.domain");
  node->set_name("all");
  node->add_input("x");
  node->add_output("y");
  auto attr = [&](const char* name, onnx::AttributeProto::AttributeType type) {
    onnx::AttributeProto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(type);
    return a;
  };
  attr("f", onnx::AttributeProto::FLOAT)->set_f(1.5f);
  attr("i", onnx::AttributeProto::INT)->set_i(-7);
  attr("s", onnx::AttributeProto::STRING)->set_s("text");
  onnx::TensorProto* t = attr("t", onnx::AttributeProto::TENSOR)->mutable_t();
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(2);
  t->add_int64_data(3);
  t->add_int64_data(-4);
  onnx::AttributeProto* floats = attr("floats", onnx::AttributeProto::FLOATS);
  floats->add_floats(0.25f);
  floats->add_floats(2.0f);
  onnx::AttributeProto* ints = attr("ints", onnx::AttributeProto::INTS);
  ints->add_ints(1);
  ints->add_ints(2);
  onnx::AttributeProto* strings = attr("strings", onnx::AttributeProto::STRINGS);
  strings->add_strings("a");
  strings->add_strings("b");
  onnx::GraphProto* body = attr("g", onnx::AttributeProto::GRAPH)->mutable_g();
  body->set_name("body");
  typed(body->add_output(), "z", {"3"});
  {  // the body reads the enclosing graph's x
    onnx::NodeProto* inner = body->add_node();
    inner->set_op_type("Identity");
    inner->add_input("x");
    inner->add_output("z");
  }
  const std::string bytes = proto.SerializeAsString();
  const std::unique_ptr<Model> model = LoadModelFromBytes(bytes.data(), bytes.size(), {}, "m");
  SaveModel(*model, *model->graph, dir_ / "round.onnx");
  const std::unique_ptr<Model> again = LoadModel(dir_ / "round.onnx");
  EXPECT_EQ(again->producer_name, "writer-test");
  EXPECT_EQ(again->metadata.at("k"), "v");
  EXPECT_EQ(again->graph->inputs.at(0).ShapeString(), "[batch,3]");
  ASSERT_EQ(again->graph->nodes.size(), 1u);
  const Node& n = *again->graph->nodes[0];
  EXPECT_EQ(n.domain, "test.domain");
  EXPECT_FLOAT_EQ(n.GetFloat("f"), 1.5f);
  EXPECT_EQ(n.GetInt("i"), -7);
  EXPECT_EQ(n.GetString("s"), "text");
  EXPECT_EQ(n.attributes.at("t").t.ToVector<int64_t>(), (std::vector<int64_t>{3, -4}));
  EXPECT_EQ(n.attributes.at("floats").floats, (std::vector<float>{0.25f, 2.0f}));
  EXPECT_EQ(n.GetInts("ints"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(n.GetStrings("strings"), (std::vector<std::string>{"a", "b"}));
  ASSERT_NE(n.attributes.at("g").g, nullptr);
  EXPECT_EQ(n.attributes.at("g").g->nodes.at(0)->op_type, "Identity");
}

}  // namespace
}  // namespace tessera::test
