// The fused-activation description of the EP SDK (tessera/ep/fused_activation.h).
#pragma once

#include "tessera/ep/fused_activation.h"
