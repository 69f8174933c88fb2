// What the EP's kernels found by searching (a convolution's algorithm, chosen by timing candidates), by a key that
// names everything the search depended on (shapes, layout, alignment, element type, the epilogue it was timed with,
// the options that shaped the candidates). Shared by all kernels of one EP: nodes that repeat a geometry (the
// blocks of ResNet-like networks) search it once. Values are short strings a kernel writes and reads back.
//
// The tuning cache: results can be backed by a file (provider option tuning_cache_file, by default one file per
// GPU model and cuDNN version under the user's cache folder; see DefaultTuningCachePath), so that a later session,
// in this process or another, takes them instead of searching again: a search loads and times up to eight cuDNN
// engines per geometry, ~150 ms of ResNet-50's session creation on the H100. The file is text: a header line naming
// the format and `identity` (GPU, compute capability, library versions), then one `key<TAB>value` line per result,
// appended as results are found (one short write each, so concurrent processes append whole lines). A file whose
// header differs (another GPU, cuDNN or format) is started anew. A kernel validates a value before it uses it and
// searches again (replacing the value) when it no longer applies.
//
// Thread-safe.
#pragma once

#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace tessera::cuda {

class TuningResults {
 public:
  // Bumped when keys or values change meaning: files of another format are started anew.
  static constexpr int kFormat = 1;

  TuningResults() = default;
  ~TuningResults();
  TuningResults(const TuningResults&) = delete;
  TuningResults& operator=(const TuningResults&) = delete;

  // Backs the results with the file at `path` (folders created as needed): reads the results it holds when its
  // header names kFormat and `identity`, else starts it anew; Store appends new results to it. Returns false, with
  // `why` set, when the file cannot be read or written: the results then stay in memory only.
  bool AttachFile(const std::string& path, const std::string& identity, std::string* why);

  std::optional<std::string> Find(const std::string& key) const;
  // Keeps the first result stored for `key` (concurrent searches of one key agree closely enough), unless
  // `replace`: a stored value the kernel could not use.
  void Store(const std::string& key, const std::string& value, bool replace = false);
  size_t size() const;
  // How many results AttachFile read.
  size_t loaded() const;
  // The attached file's path; empty when none.
  const std::string& file_path() const { return path_; }

 private:
  void Append(const std::string& key, const std::string& value);  // mutex_ held

  mutable std::mutex mutex_;
  std::map<std::string, std::string> results_;
  std::string path_;
  std::FILE* file_ = nullptr;
  size_t loaded_ = 0;
};

// The default tuning cache file for a GPU model and library versions (`device_tag`, e.g.
// "NVIDIA H100 80GB HBM3 sm90 cuDNN 91900"): FOLDER/cuda_tuning_<tag with every character but [A-Za-z0-9.-]
// as '_'>.tsv, where FOLDER is $TESSERA_CACHE_DIR when set (set and empty: no default cache), else
// $XDG_CACHE_HOME/tessera, else $HOME/.cache/tessera. Empty when there is no such folder.
std::string DefaultTuningCachePath(const std::string& device_tag);

}  // namespace tessera::cuda
