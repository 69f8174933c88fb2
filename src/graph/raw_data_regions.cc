#include "graph/raw_data_regions.h"

#include <cstdint>

namespace tessera {

namespace {

constexpr uint32_t kModelGraph = 7;         // ModelProto.graph
constexpr uint32_t kGraphNode = 1;          // GraphProto.node
constexpr uint32_t kGraphInitializer = 5;   // GraphProto.initializer
constexpr uint32_t kNodeAttribute = 5;      // NodeProto.attribute
constexpr uint32_t kAttributeTensor = 5;    // AttributeProto.t
constexpr uint32_t kTensorRawData = 9;      // TensorProto.raw_data
constexpr uint32_t kLengthDelimited = 2;

// A cursor over serialized protobuf fields; every read is bounded by `end`.
class Reader {
 public:
  Reader(const char* begin, const char* end) : at_(begin), end_(end) {}
  bool done() const { return at_ == end_; }
  const char* at() const { return at_; }

  bool Varint(uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ == end_) return false;
      const auto byte = static_cast<uint8_t>(*at_++);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }

  // One field: its number, wire type and, for length-delimited ones, the payload; [start, end) spans its bytes.
  struct Field {
    uint32_t number = 0, wire_type = 0;
    const char* payload = nullptr;
    size_t length = 0;
    const char* start = nullptr;
    const char* end = nullptr;
  };
  bool Next(Field& field) {
    field.start = at_;
    uint64_t tag = 0;
    if (!Varint(tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX) return false;
    field.number = static_cast<uint32_t>(tag >> 3);
    field.wire_type = static_cast<uint32_t>(tag & 7);
    uint64_t skipped = 0;
    switch (field.wire_type) {
      case 0:
        if (!Varint(skipped)) return false;
        break;
      case 1:
        if (!Skip(8)) return false;
        break;
      case kLengthDelimited: {
        uint64_t length = 0;
        if (!Varint(length) || length > static_cast<uint64_t>(end_ - at_)) return false;
        field.payload = at_;
        field.length = static_cast<size_t>(length);
        at_ += length;
        break;
      }
      case 5:
        if (!Skip(4)) return false;
        break;
      default:
        return false;  // groups (3, 4) and invalid wire types
    }
    field.end = at_;
    return true;
  }

 private:
  bool Skip(size_t bytes) {
    if (bytes > static_cast<size_t>(end_ - at_)) return false;
    at_ += bytes;
    return true;
  }
  const char* at_;
  const char* end_;
};

void PutVarint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

// Appends `field` with `payload` in place of its own (same tag bytes).
void PutLengthDelimited(std::string& out, const Reader::Field& field, const std::string& payload) {
  uint64_t tag = (static_cast<uint64_t>(field.number) << 3) | kLengthDelimited;
  PutVarint(out, tag);
  PutVarint(out, payload.size());
  out += payload;
}

struct Walk {
  const char* base;
  size_t min_bytes;
  size_t initializer = 0, node = 0;
  std::vector<RawDataRegion> regions;
};

// A TensorProto without its large raw_data (recorded in `walk` as `holder` says); false when irregular.
bool Tensor(Walk& walk, RawDataRegion holder, const char* begin, const char* end, std::string& out) {
  Reader reader(begin, end);
  int raw_data_fields = 0;
  Reader::Field field;
  while (!reader.done()) {
    if (!reader.Next(field)) return false;
    if (field.number == kTensorRawData && field.wire_type == kLengthDelimited) {
      if (++raw_data_fields > 1) return false;  // the last would win: not worth a special case
      if (field.length >= walk.min_bytes) {
        holder.offset = static_cast<size_t>(field.payload - walk.base);
        holder.size = field.length;
        walk.regions.push_back(holder);
        PutLengthDelimited(out, field, std::string());
        continue;
      }
    }
    out.append(field.start, field.end);
  }
  return true;
}

// An AttributeProto (the node's `attribute`-th) without its tensor's large raw_data.
bool Attribute(Walk& walk, size_t attribute, const char* begin, const char* end, std::string& out) {
  Reader reader(begin, end);
  Reader::Field field;
  int tensors = 0;
  while (!reader.done()) {
    if (!reader.Next(field)) return false;
    if (field.number == kAttributeTensor && field.wire_type == kLengthDelimited) {
      if (++tensors > 1) return false;  // two t fields would merge: not worth a special case
      std::string tensor;
      const RawDataRegion holder{RawDataRegion::Holder::kAttribute, walk.node, attribute, 0, 0};
      if (!Tensor(walk, holder, field.payload, field.payload + field.length, tensor)) return false;
      PutLengthDelimited(out, field, tensor);
      continue;
    }
    out.append(field.start, field.end);
  }
  return true;
}

bool Node(Walk& walk, const char* begin, const char* end, std::string& out) {
  Reader reader(begin, end);
  Reader::Field field;
  size_t attribute = 0;
  std::string part;
  while (!reader.done()) {
    if (!reader.Next(field)) return false;
    if (field.number == kNodeAttribute && field.wire_type == kLengthDelimited) {
      part.clear();
      if (!Attribute(walk, attribute++, field.payload, field.payload + field.length, part)) return false;
      PutLengthDelimited(out, field, part);
      continue;
    }
    out.append(field.start, field.end);
  }
  return true;
}

bool Graph(Walk& walk, const char* begin, const char* end, std::string& out) {
  Reader reader(begin, end);
  Reader::Field field;
  std::string part;
  while (!reader.done()) {
    if (!reader.Next(field)) return false;
    if (field.number == kGraphInitializer && field.wire_type == kLengthDelimited) {
      part.clear();
      const RawDataRegion holder{RawDataRegion::Holder::kInitializer, walk.initializer, 0, 0, 0};
      if (!Tensor(walk, holder, field.payload, field.payload + field.length, part)) return false;
      ++walk.initializer;
      PutLengthDelimited(out, field, part);
      continue;
    }
    if (field.number == kGraphNode && field.wire_type == kLengthDelimited) {
      part.clear();
      if (!Node(walk, field.payload, field.payload + field.length, part)) return false;
      ++walk.node;
      PutLengthDelimited(out, field, part);
      continue;
    }
    out.append(field.start, field.end);
  }
  return true;
}

}  // namespace

std::optional<ModelWithoutRawData> SeparateLargeRawData(std::span<const char> model, size_t min_bytes) {
  Walk walk{model.data(), min_bytes == 0 ? 1 : min_bytes, 0, 0, {}};
  ModelWithoutRawData result;
  Reader reader(model.data(), model.data() + model.size());
  Reader::Field field;
  std::string graph;
  while (!reader.done()) {
    if (!reader.Next(field)) return std::nullopt;
    if (field.number == kModelGraph && field.wire_type == kLengthDelimited) {
      graph.clear();
      if (!Graph(walk, field.payload, field.payload + field.length, graph)) return std::nullopt;
      PutLengthDelimited(result.bytes, field, graph);
      continue;
    }
    result.bytes.append(field.start, field.end);
  }
  if (walk.regions.empty()) return std::nullopt;
  result.regions = std::move(walk.regions);
  return result;
}

}  // namespace tessera
