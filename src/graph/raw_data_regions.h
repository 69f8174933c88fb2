// Where the large raw_data of a serialized ModelProto's top-level tensors lie, found by walking the protobuf wire
// format along ModelProto.graph (7) -> GraphProto.initializer (5) -> TensorProto.raw_data (9), and GraphProto.node (1)
// -> NodeProto.attribute (5) -> AttributeProto.t (5) -> TensorProto.raw_data (9) (Constant values) only.
//
// Parsing a model copies every raw_data into a string the parser allocates: for a model of hundreds of megabytes the
// page faults of those fresh strings are most of the load. The loader parses the model without those bytes instead
// and copies each region into memory it maps populated (model_loader.cc).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tessera {

struct RawDataRegion {
  enum class Holder { kInitializer, kAttribute };
  Holder holder = Holder::kInitializer;
  // The parsed GraphProto's initializer, or node, of that index (repeated graph fields merged in order), and for an
  // attribute its index in the node.
  size_t index = 0;
  size_t attribute = 0;
  size_t offset = 0;  // of the bytes in the serialized model
  size_t size = 0;
};

struct ModelWithoutRawData {
  std::string bytes;                   // the model with each region's raw_data field present but empty
  std::vector<RawDataRegion> regions;  // in the order of the serialized model
};

// nullopt when no such tensor holds raw_data of at least `min_bytes`, or when the wire format along those paths is
// irregular (a truncated field, a group, a tensor with raw_data twice, an attribute with t twice): the caller then
// parses `model` as it is, which reports what is wrong.
std::optional<ModelWithoutRawData> SeparateLargeRawData(std::span<const char> model, size_t min_bytes);

}  // namespace tessera
