// Resize's coordinate transform and nearest rounding, shared by the kernel and the spatial split.
#pragma once

#include <cmath>
#include <cstdint>

namespace cleave {

/// ONNX Resize's coordinate_transformation_mode.
enum class ResizeTransform {
  kHalfPixel,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize
};

/// ONNX Resize's nearest_mode; kSimple is how Upsample and Resize-10 rounded: truncate when
/// enlarging, ceil when shrinking.
enum class ResizeRounding { kSimple, kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

/// One axis as the coordinate formulas see it. `resized_length` is their length_resized: the
/// ONNX reference takes in × scale there, before rounding down, when scales are given.
struct ResizeAxisCoordinates {
  int64_t in = 0;
  float scale = 1.0f;
  float resized_length = 0.0f;
  float roi_start = 0.0f, roi_end = 1.0f;  ///< tf_crop_and_resize's box.
};

/// Input coordinate of output coordinate x, in the float arithmetic ONNX Runtime uses. The
/// spatial split must pick exactly the rows the kernel reads, so both call this one function.
inline float resize_source_coordinate(ResizeTransform transform, float x,
                                      const ResizeAxisCoordinates& axis) {
  const auto in = static_cast<float>(axis.in);
  const float out = axis.resized_length;
  switch (transform) {
    case ResizeTransform::kAsymmetric:
      return x / axis.scale;
    case ResizeTransform::kPytorchHalfPixel:
      return out > 1 ? (x + 0.5f) / axis.scale - 0.5f : 0.0f;
    case ResizeTransform::kTfHalfPixelForNn:
      return (x + 0.5f) / axis.scale;
    case ResizeTransform::kAlignCorners:
      return out == 1 ? 0.0f : x * (in - 1) / (out - 1);
    case ResizeTransform::kTfCropAndResize:
      return static_cast<float>(out > 1 ? axis.roi_start * (in - 1) +
                                              (x * (axis.roi_end - axis.roi_start) * (in - 1)) /
                                                  (out - 1)
                                        : 0.5 * (axis.roi_start + axis.roi_end) * (in - 1));
    case ResizeTransform::kHalfPixel:
      break;
  }
  return (x + 0.5f) / axis.scale - 0.5f;
}

/// The input index nearest interpolation takes for coordinate x.
inline int64_t resize_nearest_index(ResizeRounding rounding, float x, bool shrinking) {
  switch (rounding) {
    case ResizeRounding::kSimple:
      return shrinking ? static_cast<int64_t>(std::ceil(x)) : static_cast<int64_t>(x);
    case ResizeRounding::kRoundPreferCeil:
      return static_cast<int64_t>(std::round(x));
    case ResizeRounding::kFloor:
      return static_cast<int64_t>(std::floor(x));
    case ResizeRounding::kCeil:
      return static_cast<int64_t>(std::ceil(x));
    case ResizeRounding::kRoundPreferFloor:
      break;
  }
  if (x == static_cast<float>(static_cast<int64_t>(x)) + 0.5f) {
    return static_cast<int64_t>(std::floor(x));
  }
  return static_cast<int64_t>(std::round(x));
}

}  // namespace cleave
