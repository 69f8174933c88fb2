// What the EP's kernels found by searching (a convolution's algorithm, chosen by timing candidates), by a key that
// names everything the search depended on (shapes, layout, alignment, element type, the epilogue it was timed with,
// the options that shaped the candidates). Shared by all kernels of one EP: nodes that repeat a geometry (the
// blocks of ResNet-like networks) search it once. Values are short strings a kernel writes and reads back.
// Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace tessera::cuda {

class TuningResults {
 public:
  std::optional<std::string> Find(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = results_.find(key);
    if (it == results_.end()) return std::nullopt;
    return it->second;
  }
  // Keeps the first result stored for `key` (concurrent searches of one key agree closely enough).
  void Store(const std::string& key, const std::string& value) {
    std::lock_guard<std::mutex> lock(mutex_);
    results_.emplace(key, value);
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return results_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::string> results_;
};

}  // namespace tessera::cuda
