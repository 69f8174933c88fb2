// Model inputs for `tessera run` and `tessera bench`: from --input NAME=FILE.npy, else deterministic
// random values.
//
// Symbolic dimensions take the value given for their symbol (--dim batch=4) and 1 otherwise; unknown
// dimensions are 1. Values: floating point uniform in [-1, 1); integers (input_ids, indices, ...)
// uniform in [0, 100); bools 50/50; strings "tessera". Sequence inputs get one tensor; optional inputs
// get a tensor. An input of unknown rank or element type throws kInvalidArgument asking for --input.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cli_args.h"
#include "tessera/tessera.h"

namespace tessera::cli {

using DimOverrides = std::map<std::string, int64_t>;

Shape ConcreteShape(const ValueInfo& info, const DimOverrides& dims);
Value RandomValue(const ValueInfo& info, const DimOverrides& dims, uint32_t seed);
// --dim SYMBOL=VALUE options; throws UsageError for a malformed one.
DimOverrides ParseDimOverrides(const ParsedArgs& args);
// One value per session input, in input order: --input files, others random from --seed (default 0,
// input i uses seed + i). Throws UsageError for an --input that names no model input.
Session::NamedValues BuildFeeds(const Session& session, const ParsedArgs& args);

}  // namespace tessera::cli
