// Detection post-processing: NonMaxSuppression, whose output length follows the scores.
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "runtime/cpu_isa.h"
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

float area_of(const Corners& box) {
  return (box.x2 - box.x1) * (box.y2 - box.y1);
}

// The boxes a class kept so far, one array per coordinate, so that comparing a candidate with
// all of them runs over vector lanes.
struct KeptBoxes {
  std::vector<float> x1, y1, x2, y2, area;

  std::size_t size() const { return area.size(); }
  void clear() {
    for (std::vector<float>* column : {&x1, &y1, &x2, &y2, &area}) column->clear();
  }
  void insert(std::size_t at, const Corners& box, float box_area) {
    const auto put = [at](std::vector<float>& column, float value) {
      column.insert(column.begin() + static_cast<std::ptrdiff_t>(at), value);
    };
    put(x1, box.x1);
    put(y1, box.y1);
    put(x2, box.x2);
    put(y2, box.y2);
    put(area, box_area);
  }
};

// Kept box k suppresses `box` when their intersection over union is above the threshold; a
// box of no area suppresses nothing, as in ONNX Runtime. Every term is computed and combined
// without branches, so that a block of boxes compiles to vector code.
[[gnu::always_inline]] inline int suppresses(const KeptBoxes& kept, std::size_t k,
                                             const Corners& box, float box_area,
                                             float iou_threshold) {
  const float width = std::min(kept.x2[k], box.x2) - std::max(kept.x1[k], box.x1);
  const float height = std::min(kept.y2[k], box.y2) - std::max(kept.y1[k], box.y1);
  const float intersection = width * height;
  const float union_area = kept.area[k] + box_area - intersection;
  return static_cast<int>(kept.area[k] > 0) & static_cast<int>(width > 0) &
         static_cast<int>(height > 0) & static_cast<int>(union_area > 0) &
         static_cast<int>(intersection / union_area > iou_threshold);
}

// Whether any kept box suppresses `box` (of positive area): blocks of 16 boxes, stopping after
// the first block with a hit. Inlined into one caller per instruction set, which vectorises it.
[[gnu::always_inline]] inline bool any_suppresses_in(const KeptBoxes& kept, std::size_t first,
                                                     std::size_t last, const Corners& box,
                                                     float box_area, float iou_threshold) {
  constexpr std::size_t kBlock = 16;
  std::size_t k = first;
  for (; k + kBlock <= last; k += kBlock) {
    int hits = 0;
    for (std::size_t j = k; j < k + kBlock; ++j)
      hits |= suppresses(kept, j, box, box_area, iou_threshold);
    if (hits) return true;
  }
  int hits = 0;
  for (; k < last; ++k) hits |= suppresses(kept, k, box, box_area, iou_threshold);
  return hits != 0;
}

__attribute__((target("avx512f,avx512vl,avx512dq,avx2,fma"))) bool any_suppresses_avx512(
    const KeptBoxes& kept, std::size_t first, std::size_t last, const Corners& box, float box_area,
    float iou_threshold) {
  return any_suppresses_in(kept, first, last, box, box_area, iou_threshold);
}

__attribute__((target("avx2,fma"))) bool any_suppresses_avx2(const KeptBoxes& kept,
                                                             std::size_t first, std::size_t last,
                                                             const Corners& box, float box_area,
                                                             float iou_threshold) {
  return any_suppresses_in(kept, first, last, box, box_area, iou_threshold);
}

bool any_suppresses_baseline(const KeptBoxes& kept, std::size_t first, std::size_t last,
                             const Corners& box, float box_area, float iou_threshold) {
  return any_suppresses_in(kept, first, last, box, box_area, iou_threshold);
}

// Whether any of kept boxes [first, last) suppresses a box (of positive area).
using SuppressionCheck = bool (*)(const KeptBoxes&, std::size_t, std::size_t, const Corners&, float,
                                  float);

SuppressionCheck suppression_check() {
  // One switch (ONEDNN_MAX_CPU_ISA) caps these loops and oneDNN's kernels alike.
  switch (vector_isa()) {
    case VectorIsa::kAvx512:
      return any_suppresses_avx512;
    case VectorIsa::kAvx2:
      return any_suppresses_avx2;
    case VectorIsa::kBaseline:
      break;
  }
  return any_suppresses_baseline;
}

// The boxes one class kept: those with finite x coordinates in order of x1, so that a candidate
// is compared only with the ones whose x1 lets them reach it (batched NMS offsets each class
// by the image size, so the others are most of them), and any others always.
class KeptClass {
 public:
  std::size_t size() const { return ordered_.size() + others_.size(); }
  void clear() {
    ordered_.clear();
    others_.clear();
    widest_ = 0;
  }

  void add(const Corners& box, float box_area) {
    if (!std::isfinite(box.x1) || !std::isfinite(box.x2)) {
      others_.insert(others_.size(), box, box_area);
      return;
    }
    const auto at = std::upper_bound(ordered_.x1.begin(), ordered_.x1.end(), box.x1);
    ordered_.insert(static_cast<std::size_t>(at - ordered_.x1.begin()), box, box_area);
    widest_ = std::max(widest_, static_cast<double>(box.x2) - static_cast<double>(box.x1));
  }

  bool suppresses(const Corners& box, float box_area, float iou_threshold,
                  SuppressionCheck check) const {
    std::size_t first = 0, last = ordered_.size();
    if (std::isfinite(box.x1) && std::isfinite(box.x2)) {
      // A kept box overlaps along x only where its x1 < box.x2 and its x2 > box.x1; its x2
      // is at most widest_ past its x1, and the margin covers rounding.
      const double reach = static_cast<double>(box.x1) - 2 * widest_ - 1;
      const auto begin = ordered_.x1.begin(), end = ordered_.x1.end();
      const auto low = std::partition_point(
          begin, end, [&](float x) { return static_cast<double>(x) <= reach; });
      const auto high = std::partition_point(low, end, [&](float x) { return x < box.x2; });
      first = static_cast<std::size_t>(low - begin);
      last = static_cast<std::size_t>(high - begin);
    }
    return check(ordered_, first, last, box, box_area, iou_threshold) ||
           check(others_, 0, others_.size(), box, box_area, iou_threshold);
  }

 private:
  KeptBoxes ordered_, others_;
  double widest_ = 0;
};

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
  KeptClass kept;
  static const SuppressionCheck check = suppression_check();
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
        const float box_area = area_of(box);
        if (box_area > 0 && kept.suppresses(box, box_area, iou_threshold, check)) continue;
        kept.add(box, box_area);
        selected.push_back({b, c, i});
      }
    }
  }
  // Every row is one selected box's.
  Tensor result =
      Tensor::allocate_uninitialised(DataType::kInt64, {static_cast<int64_t>(selected.size()), 3});
  for (std::size_t s = 0; s < selected.size(); ++s)
    std::copy(selected[s].begin(), selected[s].end(), result.data<int64_t>() + 3 * s);
  return std::make_unique<shape::ComputedKernel>(std::vector<Tensor>{std::move(result)});
}

}  // namespace

void register_detection_kernels(KernelRegistry& registry) {
  shape::add_kernel(registry, "NonMaxSuppression", create_nms, {DataType::kFloat});
}

}  // namespace cleave
