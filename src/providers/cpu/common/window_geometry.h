// Sliding-window geometry for the CPU kernels: the EP SDK's (tessera/ep/window_geometry.h).
#pragma once

#include "tessera/ep/window_geometry.h"

namespace tessera::cpu {

using tessera::ReadWindowAttributes;
using tessera::ResolveWindow;
using tessera::WindowAttributes;
using tessera::WindowGeometry;

}  // namespace tessera::cpu
