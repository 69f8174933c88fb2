// Graph IR -> ONNX protobuf file: the optimized model a session writes (SessionOptions::optimized_model_filepath,
// ONNX Runtime's optimized_model_filepath), loadable again by LoadModel.
//
// The file holds the graph as the session optimized it: at optimization level all it contains Tessera's own ops
// (domain ai.tessera: FusedConv, FusedMatMul, SkipLayerNormalization, the channel-inner layout, ...) chosen for the
// session's EPs, which only Tessera (with EPs that have those kernels) loads; at level extended or below, standard
// ops only. Initializers go inline, or (options.external_data_file set) those of at least
// options.external_min_bytes bytes into that file, beside the model, each at a 4 KiB-aligned offset; or where
// options.initializer_location says.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "tessera/ep/graph.h"
#include "tessera/session_options.h"

namespace tessera {

struct ModelWriteOptions {
  std::string external_data_file;  // relative to the model's folder; empty: every initializer inline
  size_t external_min_bytes = 1024;
  // When set, chooses each graph initializer's place instead (SessionOptions::optimized_model_initializer_location,
  // whose contract this follows); `sources` says where the loaded model kept its external ones.
  std::function<std::optional<ExternalInitializerLocation>(const std::string&, const Tensor&,
                                                           const ExternalInitializerLocation*)>
      initializer_location;
  const std::map<std::string, Model::ExternalSource>* sources = nullptr;
};

// Writes `model`'s metadata with `graph` (which may differ from model.graph: an optimized copy) to `path`; throws
// kIo naming the file when it cannot be written, kInvalidArgument for a bad external data file name.
void SaveModel(const Model& model, const Graph& graph, const std::filesystem::path& path,
               const ModelWriteOptions& options = {});

}  // namespace tessera
