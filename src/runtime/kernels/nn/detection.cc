// Detection post-processing: NonMaxSuppression, whose output length follows the scores.
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <numeric>

#include "runtime/kernels/registration.h"
#include "runtime/kernels/tensor/common.h"

namespace cleave {

namespace {

struct Corners {
  float x1, y1, x2, y2;
};

// Boxes are [y1, x1, y2, x2] with either diagonal (center_point_box 0) or
// [x_center, y_center, width, height] (1).
Corners corners(const float* box, bool center_point) {
  if (center_point) {
    const float half_w = box[2] / 2, half_h = box[3] / 2;
    return {box[0] - half_w, box[1] - half_h, box[0] + half_w, box[1] + half_h};
  }
  return {std::min(box[1], box[3]), std::min(box[0], box[2]), std::max(box[1], box[3]),
          std::max(box[0], box[2])};
}

// Suppressed when the intersection over union is above the threshold; a box of no area
// suppresses nothing, as in ONNX Runtime.
bool suppresses(const Corners& a, const Corners& b, float iou_threshold) {
  const float area_a = (a.x2 - a.x1) * (a.y2 - a.y1);
  const float area_b = (b.x2 - b.x1) * (b.y2 - b.y1);
  if (area_a <= 0 || area_b <= 0) return false;
  const float width = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  const float height = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  if (width <= 0 || height <= 0) return false;
  const float intersection = width * height;
  const float union_area = area_a + area_b - intersection;
  if (union_area <= 0) return false;
  return intersection / union_area > iou_threshold;
}

float optional_float(const KernelContext& context, std::size_t index, float fallback) {
  if (!context.has_input(index) || context.input(index).element_count() == 0) return fallback;
  return static_cast<float>(shape::real_input(context, index, "threshold").at(0));
}

std::unique_ptr<Kernel> create_nms(const KernelContext& context) {
  const Tensor& boxes = context.input(0);
  const Tensor& scores = context.input(1);
  if (boxes.rank() != 3 || boxes.dim(2) != 4 || scores.rank() != 3 ||
      scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1)) {
    throw Error(fmt::format(
        "{}: expected boxes [batches, boxes, 4] and scores [batches, classes, boxes], got {} "
        "and {}",
        context.where(), boxes.describe(), scores.describe()));
  }
  const int64_t max_per_class =
      context.has_input(2) && context.input(2).element_count() > 0
          ? shape::scalar_int_input(context, 2, "max_output_boxes_per_class")
          : 0;
  const float iou_threshold = optional_float(context, 3, 0.0f);
  const bool has_score_threshold = context.has_input(4) && context.input(4).element_count() > 0;
  const float score_threshold = optional_float(context, 4, 0.0f);
  const bool center_point = context.node.int_attribute("center_point_box", 0) != 0;
  const int64_t batches = boxes.dim(0), count = boxes.dim(1), classes = scores.dim(1);
  const float* box_data = boxes.data<float>();
  const float* score_data = scores.data<float>();
  std::vector<std::array<int64_t, 3>> selected;
  std::vector<int64_t> order;
  std::vector<Corners> kept;
  for (int64_t b = 0; b < batches && max_per_class > 0; ++b) {
    for (int64_t c = 0; c < classes; ++c) {
      const float* class_scores = score_data + (b * classes + c) * count;
      order.clear();
      for (int64_t i = 0; i < count; ++i) {
        if (!has_score_threshold || class_scores[i] > score_threshold) order.push_back(i);
      }
      // Highest score first; equal scores keep the lower box index first.
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t x, int64_t y) { return class_scores[x] > class_scores[y]; });
      kept.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
        const Corners box = corners(box_data + (b * count + i) * 4, center_point);
        const bool suppressed = std::any_of(kept.begin(), kept.end(), [&](const Corners& k) {
          return suppresses(k, box, iou_threshold);
        });
        if (suppressed) continue;
        kept.push_back(box);
        selected.push_back({b, c, i});
      }
    }
  }
  Tensor result = Tensor::allocate(DataType::kInt64, {static_cast<int64_t>(selected.size()), 3});
  for (std::size_t s = 0; s < selected.size(); ++s)
    std::copy(selected[s].begin(), selected[s].end(), result.data<int64_t>() + 3 * s);
  return std::make_unique<shape::ComputedKernel>(std::vector<Tensor>{std::move(result)});
}

}  // namespace

void register_detection_kernels(KernelRegistry& registry) {
  shape::add_kernel(registry, "NonMaxSuppression", create_nms, {DataType::kFloat});
}

}  // namespace cleave
