// Model inputs for `tessera run` and `tessera bench`: from --input NAME=FILE.npy, else deterministic
// random values.
//
// Shapes of random inputs: a whole shape per input (--shape x=1x3x640x640) wins; otherwise symbolic
// dimensions take the value given for their symbol (--dim batch=4) and 1 when none is given, and
// unknown dimensions are 1. Values: floating point uniform in [-1, 1); integers (input_ids, indices,
// ...) uniform in [0, 100); bools 50/50; strings "tessera". Sequence inputs get one tensor; optional
// inputs get a tensor. An input of unknown rank or element type throws kInvalidArgument asking for
// --input or --shape.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cli_args.h"
#include "tessera/tessera.h"

namespace tessera::cli {

struct ShapeChoices {
  std::map<std::string, int64_t> dims;  // symbol -> value
  std::map<std::string, Shape> shapes;  // input name -> whole shape
};

Shape ConcreteShape(const ValueInfo& info, const ShapeChoices& choices);
Value RandomValue(const ValueInfo& info, const ShapeChoices& choices, uint32_t seed);
// --dim SYMBOL=VALUE and --shape NAME=D1xD2x...; throws UsageError for a malformed one.
ShapeChoices ParseShapeChoices(const ParsedArgs& args);
// One value per session input, in input order: --input files, others random from --seed (default 0;
// input i uses seed + i). Choices from the command line override `defaults`. Throws UsageError for an
// --input or --shape that names no model input.
Session::NamedValues BuildFeeds(const Session& session, const ParsedArgs& args, const ShapeChoices& defaults = {});

}  // namespace tessera::cli
