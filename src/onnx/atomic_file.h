// Forwarder: atomic file writing now lives in support/atomic_output.h (shared by every layer).
#pragma once

#include "support/atomic_output.h"
