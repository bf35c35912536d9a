// Conversions between float and the 16-bit float formats (IEEE binary16, bfloat16).
#pragma once

#include <cstdint>

namespace cleave {

/// IEEE binary16 with round-to-nearest-even; NaN stays NaN, overflow becomes infinity.
uint16_t float_to_half(float value);
float half_to_float(uint16_t half);
/// bfloat16 with round-to-nearest-even; NaN stays NaN.
uint16_t float_to_bfloat16(float value);
float bfloat16_to_float(uint16_t bfloat);

}  // namespace cleave
