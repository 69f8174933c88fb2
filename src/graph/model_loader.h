// ONNX protobuf -> Graph IR.
//
// Accepts IR versions 3..10 and default-domain opsets 1..21 (kernels decide which versions they
// run); initializers from raw_data or typed fields; external data files resolved relative to the model's folder (absolute
// paths and paths that resolve outside the allowed folders are rejected: LoadModel); nodes in any order (sorted
// topologically); subgraph attributes of
// If/Loop/Scan, recursively. Everything is validated before use: a malformed or hostile file throws
// Error(kInvalidModel) whose message names the file, the node (or initializer) and the reason. It never
// crashes, reads out of bounds or allocates without a bound derived from the file size.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tessera/ep/graph.h"

namespace tessera {

// External data the application supplies instead of files (ONNX Runtime's AddExternalInitializers and
// AddExternalInitializersFromFilesInMemory): an initializer stored as external data takes the tensor given for its
// name (same type and shape, shared), else its bytes come from the buffer given for its `location`, else from the
// file. Neither needs the file to exist, and both work for models loaded from memory.
struct ExternalData {
  std::map<std::string, Tensor> initializers;                        // initializer name -> host tensor
  std::map<std::string, std::shared_ptr<const std::string>> files;  // external data location -> the file's bytes
  // Folders besides the model's own from which external data files may be read (symbolic links resolved).
  std::vector<std::filesystem::path> folders;
};

// External data files must resolve (symbolic links followed) inside the folder of `path`, the folder of the file it
// links to, or one of external.folders.
std::unique_ptr<Model> LoadModel(const std::filesystem::path& path, const ExternalData& external = {});
// `base_dir` resolves external data; empty means external data is rejected (unless `external` supplies it).
// `label` names the model in error messages.
std::unique_ptr<Model> LoadModelFromBytes(const void* data, size_t size, const std::filesystem::path& base_dir,
                                          const std::string& label = "<memory>", const ExternalData& external = {});

}  // namespace tessera
