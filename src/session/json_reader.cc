#include "session/json_reader.h"

#include <cstdlib>

#include "tessera/status.h"

namespace tessera {

namespace {

constexpr int kMaxDepth = 256;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  JsonValue Document() {
    JsonValue value = Value(0);
    SkipSpace();
    if (pos_ != text_.size()) Error("unexpected text after the value");
    return value;
  }

 private:
  [[noreturn]] void Error(const char* what) const {
    Fail(ErrorCode::kInvalidArgument, "invalid JSON at byte ", pos_, ": ", what);
  }

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  char Peek() {
    SkipSpace();
    if (pos_ >= text_.size()) Error("unexpected end");
    return text_[pos_];
  }

  void Expect(char c) {
    if (Peek() != c) Error("unexpected character");
    ++pos_;
  }

  bool Literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  JsonValue Value(int depth) {
    if (depth > kMaxDepth) Error("nested too deeply");
    JsonValue v;
    const char c = Peek();
    if (c == '{') {
      Object(v, depth);
    } else if (c == '[') {
      Array(v, depth);
    } else if (c == '"') {
      v.kind = JsonValue::Kind::kString;
      v.string = String();
    } else if (Literal("true")) {
      v.kind = JsonValue::Kind::kBool;
      v.boolean = true;
    } else if (Literal("false")) {
      v.kind = JsonValue::Kind::kBool;
    } else if (Literal("null")) {
      v.kind = JsonValue::Kind::kNull;
    } else {
      v.kind = JsonValue::Kind::kNumber;
      v.number = Number();
    }
    return v;
  }

  void Object(JsonValue& v, int depth) {
    v.kind = JsonValue::Kind::kObject;
    Expect('{');
    if (Peek() == '}') {
      ++pos_;
      return;
    }
    for (;;) {
      if (Peek() != '"') Error("expected a member name");
      v.keys.push_back(String());
      Expect(':');
      v.items.push_back(Value(depth + 1));
      if (Peek() == '}') break;
      Expect(',');
    }
    ++pos_;
  }

  void Array(JsonValue& v, int depth) {
    v.kind = JsonValue::Kind::kArray;
    Expect('[');
    if (Peek() == ']') {
      ++pos_;
      return;
    }
    for (;;) {
      v.items.push_back(Value(depth + 1));
      if (Peek() == ']') break;
      Expect(',');
    }
    ++pos_;
  }

  double Number() {
    const size_t start = pos_;
    if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
    auto digits = [&] {
      const size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      if (pos_ == from) Error("expected a digit");
    };
    digits();
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      digits();
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      digits();
    }
    return std::strtod(std::string(text_.substr(start, pos_ - start)).c_str(), nullptr);
  }

  unsigned Hex4() {
    if (pos_ + 4 > text_.size()) Error("short \\u escape");
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[pos_++];
      code <<= 4;
      if (h >= '0' && h <= '9') code |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f') code |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') code |= static_cast<unsigned>(h - 'A' + 10);
      else Error("bad \\u escape");
    }
    return code;
  }

  static void AppendUtf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  void Escape(std::string& out) {
    if (pos_ >= text_.size()) Error("unterminated string");
    const char e = text_[pos_++];
    switch (e) {
      case '"': case '\\': case '/': out += e; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        unsigned code = Hex4();
        if (code >= 0xD800 && code < 0xDC00 && Literal("\\u")) {
          const unsigned low = Hex4();
          if (low < 0xDC00 || low >= 0xE000) Error("bad surrogate pair");
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        }
        AppendUtf8(out, code);
        break;
      }
      default: Error("bad escape");
    }
  }

  std::string String() {
    ++pos_;  // the opening quote
    std::string out;
    for (;;) {
      if (pos_ >= text_.size()) Error("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) Error("control character in a string");
      if (c == '\\')
        Escape(out);
      else
        out += c;
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

const JsonValue* JsonValue::Find(const std::string& key) const {
  if (kind != Kind::kObject) return nullptr;
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == key) return &items[i];
  return nullptr;
}

std::string JsonValue::StringOr(const std::string& key, const std::string& fallback) const {
  const JsonValue* v = Find(key);
  return v != nullptr && v->kind == Kind::kString ? v->string : fallback;
}

double JsonValue::NumberOr(const std::string& key, double fallback) const {
  const JsonValue* v = Find(key);
  return v != nullptr && v->kind == Kind::kNumber ? v->number : fallback;
}

JsonValue ParseJson(std::string_view text) { return Parser(text).Document(); }

}  // namespace tessera
