// Umbrella header for the Tessera C++ API.
#pragma once

#include "tessera/allocator.h"
#include "tessera/arena.h"
#include "tessera/data_parallel.h"
#include "tessera/data_type.h"
#include "tessera/device.h"
#include "tessera/environment.h"
#include "tessera/io_binding.h"
#include "tessera/session.h"
#include "tessera/session_options.h"
#include "tessera/shape.h"
#include "tessera/status.h"
#include "tessera/stream.h"
#include "tessera/tensor.h"
#include "tessera/generation_loop.h"
#include "tessera/tile_pipeline.h"
#include "tessera/value.h"
