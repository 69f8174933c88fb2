// A small JSON reader for the files Tessera writes itself (profiles): RFC 8259 values into a tree.
// Numbers are doubles; \u escapes outside ASCII are decoded to UTF-8 (surrogate pairs included).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera {

class JsonValue {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> items;  // array elements, or object values (parallel to `keys`)
  std::vector<std::string> keys;  // object keys, in file order

  bool is_object() const { return kind == Kind::kObject; }
  bool is_array() const { return kind == Kind::kArray; }
  // The member `key` of an object; nullptr when absent or when this is not an object.
  const JsonValue* Find(const std::string& key) const;
  // The member's string / number, or `fallback` when absent or of another kind.
  std::string StringOr(const std::string& key, const std::string& fallback = "") const;
  double NumberOr(const std::string& key, double fallback = 0) const;
};

// Throws Error(kInvalidArgument) naming the byte offset of the first syntax error.
JsonValue ParseJson(std::string_view text);

}  // namespace tessera
