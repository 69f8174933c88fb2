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

// What a message's rewrite does with one of its fields.
enum class Step { kCopy, kDone, kIrregular };

// Writes the message in [begin, end) to `out` field by field: `rewrite(field, out)` sees each length-delimited field
// first and either appends it itself (kDone), leaves it to be copied as it is (kCopy) or stops the walk (kIrregular).
// False when the message is irregular.
template <typename Rewrite>
bool Message(const char* begin, const char* end, std::string& out, Rewrite&& rewrite) {
  Reader reader(begin, end);
  Reader::Field field;
  while (!reader.done()) {
    if (!reader.Next(field)) return false;
    const Step step = field.wire_type == kLengthDelimited ? rewrite(field, out) : Step::kCopy;
    if (step == Step::kIrregular) return false;
    if (step == Step::kCopy) out.append(field.start, field.end);
  }
  return true;
}

// Appends `field`, a message, rewritten by `inner(begin, end, out)`.
template <typename Inner>
Step Nested(const Reader::Field& field, std::string& out, Inner&& inner) {
  std::string part;
  if (!inner(field.payload, field.payload + field.length, part)) return Step::kIrregular;
  PutLengthDelimited(out, field, part);
  return Step::kDone;
}

// A TensorProto without its large raw_data (recorded in `walk` as `holder` says).
bool Tensor(Walk& walk, RawDataRegion holder, const char* begin, const char* end, std::string& out) {
  int raw_data_fields = 0;
  return Message(begin, end, out, [&](const Reader::Field& field, std::string& to) {
    if (field.number != kTensorRawData) return Step::kCopy;
    if (++raw_data_fields > 1) return Step::kIrregular;  // the last would win: not worth a special case
    if (field.length < walk.min_bytes) return Step::kCopy;
    holder.offset = static_cast<size_t>(field.payload - walk.base);
    holder.size = field.length;
    walk.regions.push_back(holder);
    PutLengthDelimited(to, field, std::string());
    return Step::kDone;
  });
}

// An AttributeProto (the node's `attribute`-th) without its tensor's large raw_data.
bool Attribute(Walk& walk, size_t attribute, const char* begin, const char* end, std::string& out) {
  int tensors = 0;
  return Message(begin, end, out, [&](const Reader::Field& field, std::string& to) {
    if (field.number != kAttributeTensor) return Step::kCopy;
    if (++tensors > 1) return Step::kIrregular;  // two t fields would merge: not worth a special case
    const RawDataRegion holder{RawDataRegion::Holder::kAttribute, walk.node, attribute, 0, 0};
    return Nested(field, to, [&](const char* b, const char* e, std::string& o) {
      return Tensor(walk, holder, b, e, o);
    });
  });
}

bool Node(Walk& walk, const char* begin, const char* end, std::string& out) {
  size_t attribute = 0;
  return Message(begin, end, out, [&](const Reader::Field& field, std::string& to) {
    if (field.number != kNodeAttribute) return Step::kCopy;
    const size_t index = attribute++;
    return Nested(field, to, [&](const char* b, const char* e, std::string& o) {
      return Attribute(walk, index, b, e, o);
    });
  });
}

bool Graph(Walk& walk, const char* begin, const char* end, std::string& out) {
  return Message(begin, end, out, [&](const Reader::Field& field, std::string& to) {
    if (field.number == kGraphInitializer) {
      const RawDataRegion holder{RawDataRegion::Holder::kInitializer, walk.initializer++, 0, 0, 0};
      return Nested(field, to, [&](const char* b, const char* e, std::string& o) {
        return Tensor(walk, holder, b, e, o);
      });
    }
    if (field.number == kGraphNode) {
      const Step step = Nested(field, to, [&](const char* b, const char* e, std::string& o) {
        return Node(walk, b, e, o);
      });
      ++walk.node;
      return step;
    }
    return Step::kCopy;
  });
}

}  // namespace

std::optional<ModelWithoutRawData> SeparateLargeRawData(std::span<const char> model, size_t min_bytes) {
  Walk walk{model.data(), min_bytes == 0 ? 1 : min_bytes, 0, 0, {}};
  ModelWithoutRawData result;
  const bool regular = Message(model.data(), model.data() + model.size(), result.bytes,
                               [&](const Reader::Field& field, std::string& to) {
                                 if (field.number != kModelGraph) return Step::kCopy;
                                 return Nested(field, to, [&](const char* b, const char* e, std::string& o) {
                                   return Graph(walk, b, e, o);
                                 });
                               });
  if (!regular) return std::nullopt;
  if (walk.regions.empty()) return std::nullopt;
  result.regions = std::move(walk.regions);
  return result;
}

}  // namespace tessera
