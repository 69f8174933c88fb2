#include "graph/raw_data_regions.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>

namespace tessera {
namespace {

onnx::TensorProto* AddRaw(onnx::ModelProto& model, const std::string& name, size_t bytes, char fill) {
  onnx::TensorProto* t = model.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(2);  // uint8
  t->add_dims(static_cast<int64_t>(bytes));
  std::string raw(bytes, fill);
  for (size_t i = 0; i < bytes; i += 97) raw[i] = static_cast<char>(i);
  t->set_raw_data(raw);
  return t;
}

onnx::ModelProto Model() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("raw data regions test");
  model.mutable_graph()->set_name("g");
  AddRaw(model, "small", 100, 'a');
  AddRaw(model, "large", 70000, 'b');
  model.mutable_graph()->add_node()->set_op_type("Identity");
  AddRaw(model, "larger", 200003, 'c');
  onnx::NodeProto* constant = model.mutable_graph()->add_node();
  constant->set_op_type("Constant");
  constant->add_attribute()->set_name("unused");
  onnx::AttributeProto* value = constant->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(2);
  value->mutable_t()->add_dims(80001);
  value->mutable_t()->set_raw_data(std::string(80001, 'd'));
  model.add_opset_import()->set_version(17);
  return model;
}

// The regions hold exactly the large raw_data's bytes (initializers and a Constant's value), and the rest parses to
// the same model with those emptied.
TEST(RawDataRegionsTest, FindsLargeRawDataAndTheRestParsesToTheSameModel) {
  const onnx::ModelProto model = Model();
  const std::string bytes = model.SerializeAsString();
  const auto separated = SeparateLargeRawData(bytes, 65536);
  ASSERT_TRUE(separated.has_value());
  // In the order of the serialized model: GraphProto's nodes (field 1) before its initializers (field 5).
  ASSERT_EQ(separated->regions.size(), 3u);
  const RawDataRegion& in_node = separated->regions[0];
  EXPECT_EQ(in_node.holder, RawDataRegion::Holder::kAttribute);
  EXPECT_EQ(in_node.index, 1u);
  EXPECT_EQ(in_node.attribute, 1u);
  EXPECT_TRUE(bytes.substr(in_node.offset, in_node.size) == model.graph().node(1).attribute(1).t().raw_data());
  for (size_t k = 1; k < 3; ++k) {
    const RawDataRegion& r = separated->regions[k];
    EXPECT_EQ(r.holder, RawDataRegion::Holder::kInitializer);
    EXPECT_EQ(r.index, k);
    EXPECT_TRUE(bytes.substr(r.offset, r.size) == model.graph().initializer(static_cast<int>(r.index)).raw_data());
  }
  onnx::ModelProto rest;
  ASSERT_TRUE(rest.ParseFromString(separated->bytes));
  EXPECT_LT(separated->bytes.size(), 1000u);
  onnx::ModelProto expected = model;
  expected.mutable_graph()->mutable_initializer(1)->set_raw_data("");
  expected.mutable_graph()->mutable_initializer(2)->set_raw_data("");
  expected.mutable_graph()->mutable_node(1)->mutable_attribute(1)->mutable_t()->set_raw_data("");
  EXPECT_EQ(rest.SerializeAsString(), expected.SerializeAsString());
  EXPECT_TRUE(rest.graph().initializer(1).has_raw_data());
}

TEST(RawDataRegionsTest, NothingLargeOrIrregularWireFormatGivesNothing) {
  const std::string bytes = Model().SerializeAsString();
  EXPECT_FALSE(SeparateLargeRawData(bytes, 1 << 20).has_value()) << "no raw_data that large";
  for (size_t cut : {bytes.size() - 1, bytes.size() / 2, size_t{3}})
    EXPECT_FALSE(SeparateLargeRawData(std::string_view(bytes).substr(0, cut), 65536).has_value()) << "cut at " << cut;
  // A group (wire type 3) at the top level, and a tensor with raw_data twice.
  EXPECT_FALSE(SeparateLargeRawData(bytes + std::string("\x0b", 1), 65536).has_value());
  // A second raw_data field in the one initializer, by hand: graph(7) { initializer(5) { raw_data(9) twice } }.
  auto field = [](int number, const std::string& payload) {
    std::string out(1, static_cast<char>((number << 3) | 2));
    for (uint64_t v = payload.size();; v >>= 7) {
      out.push_back(static_cast<char>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0)));
      if (v < 0x80) break;
    }
    return out + payload;
  };
  const std::string raw = field(9, std::string(70000, 'x'));
  const std::string m = field(7, field(5, raw + raw));
  onnx::ModelProto parsed;
  ASSERT_TRUE(parsed.ParseFromString(m)) << "the hand-made model is valid protobuf";
  EXPECT_FALSE(SeparateLargeRawData(m, 65536).has_value());
  // An attribute with t twice (node(1) { attribute(5) { t(5) x2 } }).
  const std::string t = field(5, raw);
  onnx::ModelProto parsed_attribute;
  ASSERT_TRUE(parsed_attribute.ParseFromString(field(7, field(1, field(5, t + t)))));
  EXPECT_FALSE(SeparateLargeRawData(field(7, field(1, field(5, t + t))), 65536).has_value());
  EXPECT_TRUE(SeparateLargeRawData(field(7, field(1, field(5, t))), 65536).has_value());
  EXPECT_TRUE(SeparateLargeRawData(field(7, field(5, raw)), 65536).has_value()) << "the same with raw_data once";
}

}  // namespace
}  // namespace tessera
