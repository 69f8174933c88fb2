#include "providers/cuda/tuning_results.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace tessera::cuda {

namespace {

std::string Header(const std::string& identity) {
  return "# tessera CUDA tuning results, format " + std::to_string(TuningResults::kFormat) + "\t" + identity;
}

// Keys and values are one line each and hold no tab (the separator).
bool Storable(const std::string& text) { return text.find_first_of("\t\n\r") == std::string::npos; }

}  // namespace

TuningResults::~TuningResults() {
  if (file_ != nullptr) std::fclose(file_);
}

bool TuningResults::AttachFile(const std::string& path, const std::string& identity, std::string* why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (file_ != nullptr) {
    *why = "results are already backed by " + path_;
    return false;
  }
  const std::filesystem::path file(path);
  std::error_code error;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), error);
  if (error) {
    *why = "cannot create the folder " + file.parent_path().string() + ": " + error.message();
    return false;
  }
  const std::string header = Header(identity);
  bool same_header = false;
  std::map<std::string, std::string> read;
  if (std::ifstream in(file); in) {
    std::string line;
    same_header = std::getline(in, line) && line == header;
    while (same_header && std::getline(in, line)) {
      const size_t tab = line.find('\t');
      if (tab == std::string::npos || tab == 0) continue;  // a line cut short by a crash: ignored
      read[line.substr(0, tab)] = line.substr(tab + 1);      // the last line for a key wins
    }
  }
  file_ = std::fopen(path.c_str(), same_header ? "a" : "w");
  if (file_ == nullptr) {
    *why = "cannot open " + path + " for writing";
    return false;
  }
  if (!same_header && (std::fprintf(file_, "%s\n", header.c_str()) < 0 || std::fflush(file_) != 0)) {
    std::fclose(file_);
    file_ = nullptr;
    *why = "cannot write " + path;
    return false;
  }
  path_ = path;
  loaded_ = read.size();
  for (auto& [key, value] : read) results_.insert_or_assign(key, std::move(value));
  return true;
}

std::optional<std::string> TuningResults::Find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = results_.find(key);
  if (it == results_.end()) return std::nullopt;
  return it->second;
}

void TuningResults::Store(const std::string& key, const std::string& value, bool replace) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = results_.emplace(key, value);
  if (!inserted) {
    if (!replace || it->second == value) return;
    it->second = value;
  }
  Append(key, value);
}

void TuningResults::Append(const std::string& key, const std::string& value) {
  if (file_ == nullptr || !Storable(key) || !Storable(value)) return;
  const std::string line = key + "\t" + value + "\n";
  // One write per line (the stream's buffer holds it whole), appended at the end even when another process
  // appended since (mode "a").
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    std::fclose(file_);
    file_ = nullptr;  // a full disk or the like: results stay in memory
  }
}

size_t TuningResults::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return results_.size();
}

size_t TuningResults::loaded() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return loaded_;
}

std::string DefaultTuningCachePath(const std::string& device_tag) {
  std::filesystem::path folder;
  if (const char* dir = std::getenv("TESSERA_CACHE_DIR"); dir != nullptr) {
    if (*dir == '\0') return "";
    folder = dir;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    folder = std::filesystem::path(xdg) / "tessera";
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    folder = std::filesystem::path(home) / ".cache" / "tessera";
  } else {
    return "";
  }
  std::string name = "cuda_tuning_" + device_tag + ".tsv";
  for (char& c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) c = '_';
  return (folder / name).string();
}

}  // namespace tessera::cuda
