// GridSample (4-D): bilinear, nearest and bicubic sampling with zeros, border or reflection
// padding.
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "runtime/kernels/registration.h"
#include "runtime/kernels/tensor/common.h"

namespace cleave {

namespace {

enum class SampleMode { kBilinear, kNearest, kBicubic };
enum class Padding { kZeros, kBorder, kReflection };

struct GridGeometry {
  int64_t batch = 0, channels = 0, height = 0, width = 0, out_height = 0, out_width = 0;
  SampleMode mode = SampleMode::kBilinear;
  Padding padding = Padding::kZeros;
  bool align_corners = false;
};

// Folds a coordinate back into [low, high] as a mirror would (repeatedly).
double reflect(double x, double low, double high) {
  double range = high - low;
  if (range <= 0) return low;
  if (x < low) {
    double distance = low - x;
    auto flips = static_cast<int64_t>(distance / range);
    double rest = distance - static_cast<double>(flips) * range;
    return flips % 2 == 0 ? low + rest : high - rest;
  }
  if (x > high) {
    double distance = x - high;
    auto flips = static_cast<int64_t>(distance / range);
    double rest = distance - static_cast<double>(flips) * range;
    return flips % 2 == 0 ? high - rest : low + rest;
  }
  return x;
}

// Cubic convolution weights (A = -0.75, as PyTorch and ONNX Runtime use) at distance t.
std::array<double, 4> cubic_weights(double t) {
  constexpr double a = -0.75;
  t = std::abs(t);
  return {((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
          ((a + 2) * t - (a + 3)) * t * t + 1,
          ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
          ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a};
}

// Samples one channel plane at the pixel coordinates (x, y).
template <typename T>
class PlaneSampler {
 public:
  PlaneSampler(const GridGeometry& g, const T* plane) : g_(g), plane_(plane) {
    double half = g.align_corners ? 0.0 : 0.5;
    low_x_ = -half;
    low_y_ = -half;
    high_x_ = static_cast<double>(g.width - 1) + half;
    high_y_ = static_cast<double>(g.height - 1) + half;
  }

  double sample(double x, double y) const {
    if (g_.mode == SampleMode::kNearest) {
      x = std::nearbyint(x);
      y = std::nearbyint(y);
    }
    if (x < low_x_ || x > high_x_ || y < low_y_ || y > high_y_) {
      if (g_.padding == Padding::kBorder) {
        x = std::clamp(x, 0.0, static_cast<double>(g_.width - 1));
        y = std::clamp(y, 0.0, static_cast<double>(g_.height - 1));
      } else if (g_.padding == Padding::kReflection) {
        x = reflect(x, low_x_, high_x_);
        y = reflect(y, low_y_, high_y_);
      }
    }
    if (g_.mode == SampleMode::kNearest) {
      return pixel(static_cast<int64_t>(y), static_cast<int64_t>(x));
    }
    if (g_.mode == SampleMode::kBilinear) {
      double x1 = std::floor(x), y1 = std::floor(y);
      auto c = static_cast<int64_t>(x1), r = static_cast<int64_t>(y1);
      double dx = x - x1, dy = y - y1;
      return (1 - dy) * ((1 - dx) * pixel(r, c) + dx * pixel(r, c + 1)) +
             dy * ((1 - dx) * pixel(r + 1, c) + dx * pixel(r + 1, c + 1));
    }
    double x0 = std::floor(x) - 1, y0 = std::floor(y) - 1;
    std::array<double, 4> wx = cubic_weights(x - x0 - 1), wy = cubic_weights(y - y0 - 1);
    double result = 0;
    for (int64_t i = 0; i < 4; ++i) {
      double row = 0;
      for (int64_t j = 0; j < 4; ++j) {
        row += wx[j] * pixel(static_cast<int64_t>(y0) + i, static_cast<int64_t>(x0) + j);
      }
      result += wy[i] * row;
    }
    return result;
  }

 private:
  // A pixel by integer position; outside the plane it follows the padding mode.
  double pixel(int64_t r, int64_t c) const {
    if (g_.padding == Padding::kBorder) {
      r = std::clamp<int64_t>(r, 0, g_.height - 1);
      c = std::clamp<int64_t>(c, 0, g_.width - 1);
    } else if (g_.padding == Padding::kReflection) {
      c = static_cast<int64_t>(reflect(static_cast<double>(c), low_x_, high_x_));
      r = static_cast<int64_t>(reflect(static_cast<double>(r), low_y_, high_y_));
    }
    if (r < 0 || r >= g_.height || c < 0 || c >= g_.width) return 0.0;
    return static_cast<double>(plane_[r * g_.width + c]);
  }

  const GridGeometry& g_;
  const T* plane_;
  double low_x_, low_y_, high_x_, high_y_;
};

GridGeometry grid_geometry(const KernelContext& context) {
  const Tensor& x = context.input(0);
  const Tensor& grid = context.input(1);
  if (x.rank() != 4 || grid.rank() != 4 || grid.dim(0) != x.dim(0) || grid.dim(3) != 2) {
    throw UnsupportedError(
        fmt::format("{}: supports an input [N, C, H, W] and a grid [N, H_out, W_out, 2], got {} "
                    "and {}",
                    context.where(), x.describe(), grid.describe()));
  }
  if (grid.dtype() != x.dtype()) {
    throw Error(fmt::format("{}: the grid {} should have the input's type {}", context.where(),
                            grid.describe(), dtype_name(x.dtype())));
  }
  GridGeometry g{x.dim(0), x.dim(1), x.dim(2), x.dim(3), grid.dim(1), grid.dim(2)};
  std::string mode = context.node.string_attribute("mode", "bilinear");
  if (mode == "nearest") {
    g.mode = SampleMode::kNearest;
  } else if (mode == "bicubic" || mode == "cubic") {
    g.mode = SampleMode::kBicubic;
  } else if (mode != "bilinear" && mode != "linear") {
    throw Error(fmt::format("{}: mode should be bilinear, nearest or bicubic, is '{}'",
                            context.where(), mode));
  }
  std::string padding = context.node.string_attribute("padding_mode", "zeros");
  if (padding == "border") {
    g.padding = Padding::kBorder;
  } else if (padding == "reflection") {
    g.padding = Padding::kReflection;
  } else if (padding != "zeros") {
    throw Error(fmt::format("{}: padding_mode should be zeros, border or reflection, is '{}'",
                            context.where(), padding));
  }
  g.align_corners = context.node.int_attribute("align_corners", 0) != 0;
  return g;
}

template <typename T>
void grid_sample(const GridGeometry& g, const T* input, const T* grid, T* output) {
  // Grid coordinates in [-1, 1] to pixel positions.
  auto pixel_position = [&](double normalized, int64_t length) {
    return g.align_corners ? (normalized + 1) / 2 * static_cast<double>(length - 1)
                           : ((normalized + 1) * static_cast<double>(length) - 1) / 2;
  };
  int64_t points = g.out_height * g.out_width;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t c = 0; c < g.channels; ++c) {
      PlaneSampler<T> sampler(g, input + (n * g.channels + c) * g.height * g.width);
      T* target = output + (n * g.channels + c) * points;
      for (int64_t p = 0; p < points; ++p) {
        const T* xy = grid + (n * points + p) * 2;
        target[p] = static_cast<T>(
            sampler.sample(pixel_position(xy[0], g.width), pixel_position(xy[1], g.height)));
      }
    }
  }
}

std::unique_ptr<Kernel> create_grid_sample(const KernelContext& context) {
  GridGeometry g = grid_geometry(context);
  DataType type = context.input(0).dtype();
  std::vector<int64_t> shape = {g.batch, g.channels, g.out_height, g.out_width};
  return shape::make_kernel(
      context, {OutputSpec{type, shape, std::nullopt, -1}},
      [g, type](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        if (type == DataType::kDouble) {
          grid_sample(g, inputs[0]->data<double>(), inputs[1]->data<double>(),
                      outputs[0]->data<double>());
        } else {
          grid_sample(g, inputs[0]->data<float>(), inputs[1]->data<float>(),
                      outputs[0]->data<float>());
        }
      });
}

struct RoiGeometry {
  int64_t channels = 0, height = 0, width = 0, rois = 0, out_height = 1, out_width = 1;
  int64_t sampling_ratio = 0;
  double spatial_scale = 1, offset = 0.5;
  bool average = true;
};

// One bilinear sample of a plane as Caffe2's (and ONNX Runtime's) RoiAlign takes it: the four
// corners it reads and their weights, or none outside [-1, size]. They are the same for every
// channel of an RoI, so they are found once per RoI (ONNX Runtime's pre_calc).
struct SampleTaps {
  std::array<int64_t, 4> offsets{};
  std::array<double, 4> weights{};
  bool inside = false;
};

SampleTaps roi_taps(const RoiGeometry& g, double y, double x) {
  SampleTaps taps;
  if (y < -1.0 || y > static_cast<double>(g.height) || x < -1.0 ||
      x > static_cast<double>(g.width)) {
    return taps;
  }
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  auto y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x);
  int64_t y_high = y_low + 1, x_high = x_low + 1;
  if (y_low >= g.height - 1) y = static_cast<double>(y_high = y_low = g.height - 1);
  if (x_low >= g.width - 1) x = static_cast<double>(x_high = x_low = g.width - 1);
  double ly = y - static_cast<double>(y_low), lx = x - static_cast<double>(x_low);
  double hy = 1 - ly, hx = 1 - lx;
  taps.offsets = {y_low * g.width + x_low, y_low * g.width + x_high, y_high * g.width + x_low,
                  y_high * g.width + x_high};
  taps.weights = {hy * hx, hy * lx, ly * hx, ly * lx};
  taps.inside = true;
  return taps;
}

// The taps of every sample of RoI `box`, bin by bin (row-major), grid_h x grid_w per bin.
template <typename T>
std::vector<SampleTaps> roi_bin_taps(const RoiGeometry& g, const T* box, int64_t& grid_h,
                                     int64_t& grid_w) {
  double start_x = box[0] * g.spatial_scale - g.offset,
         start_y = box[1] * g.spatial_scale - g.offset;
  double width = box[2] * g.spatial_scale - g.offset - start_x;
  double height = box[3] * g.spatial_scale - g.offset - start_y;
  if (g.offset == 0) {  // output_half_pixel: legacy boxes of at least one pixel.
    width = std::max(width, 1.0);
    height = std::max(height, 1.0);
  }
  double bin_h = height / static_cast<double>(g.out_height);
  double bin_w = width / static_cast<double>(g.out_width);
  grid_h = g.sampling_ratio > 0 ? g.sampling_ratio : static_cast<int64_t>(std::ceil(bin_h));
  grid_w = g.sampling_ratio > 0 ? g.sampling_ratio : static_cast<int64_t>(std::ceil(bin_w));
  std::vector<SampleTaps> taps;
  if (grid_h > 0 && grid_w > 0)
    taps.reserve(static_cast<std::size_t>(g.out_height * g.out_width * grid_h * grid_w));
  for (int64_t ph = 0; ph < g.out_height; ++ph) {
    for (int64_t pw = 0; pw < g.out_width; ++pw) {
      for (int64_t iy = 0; iy < grid_h; ++iy) {
        double y = start_y + static_cast<double>(ph) * bin_h +
                   (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
        for (int64_t ix = 0; ix < grid_w; ++ix) {
          double x = start_x + static_cast<double>(pw) * bin_w +
                     (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
          taps.push_back(roi_taps(g, y, x));
        }
      }
    }
  }
  return taps;
}

template <typename T>
void roi_align(const RoiGeometry& g, const T* input, const T* rois,
               const std::vector<int64_t>& batch_indices, int64_t batch, T* output) {
  for (int64_t r = 0; r < g.rois; ++r) {
    if (batch_indices[r] < 0 || batch_indices[r] >= batch) {
      throw Error(fmt::format("batch index {} of RoI {} is outside the batch of {}",
                              batch_indices[r], r, batch));
    }
    int64_t grid_h = 0, grid_w = 0;
    const std::vector<SampleTaps> taps = roi_bin_taps(g, rois + r * 4, grid_h, grid_w);
    // Bins of no height or width take no samples (and read no taps).
    const auto samples = static_cast<std::size_t>(grid_h > 0 && grid_w > 0 ? grid_h * grid_w : 0);
    const auto bins = static_cast<std::size_t>(g.out_height * g.out_width);
    double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
    for (int64_t c = 0; c < g.channels; ++c) {
      const T* plane = input + (batch_indices[r] * g.channels + c) * g.height * g.width;
      T* target = output + (r * g.channels + c) * g.out_height * g.out_width;
      for (std::size_t bin = 0; bin < bins; ++bin) {
        double value = 0;
        bool first = true;
        for (std::size_t s = bin * samples; s < (bin + 1) * samples; ++s) {
          const SampleTaps& tap = taps[s];
          std::array<double, 4> corners = {0, 0, 0, 0};
          if (tap.inside) {
            for (int j = 0; j < 4; ++j) corners[j] = tap.weights[j] * plane[tap.offsets[j]];
          }
          if (g.average) {
            value += corners[0] + corners[1] + corners[2] + corners[3];
          } else {
            // ONNX Runtime's max mode: the largest weighted corner of every sample.
            double largest = *std::max_element(corners.begin(), corners.end());
            value = first ? largest : std::max(value, largest);
            first = false;
          }
        }
        target[bin] = static_cast<T>(g.average ? value / count : value);
      }
    }
  }
}

std::unique_ptr<Kernel> create_roi_align(const KernelContext& context) {
  const Tensor& x = context.input(0);
  const Tensor& rois = context.input(1);
  const Tensor& indices = context.input(2);
  if (x.rank() != 4 || rois.rank() != 2 || rois.dim(1) != 4 || rois.dtype() != x.dtype() ||
      indices.shape() != std::vector<int64_t>{rois.dim(0)}) {
    throw Error(fmt::format(
        "{}: expected X [N, C, H, W], rois [R, 4] of X's type and batch_indices [R], got {}, {} "
        "and {}",
        context.where(), x.describe(), rois.describe(), indices.describe()));
  }
  RoiGeometry g{x.dim(1), x.dim(2), x.dim(3), rois.dim(0)};
  g.out_height = context.node.int_attribute("output_height", 1);
  g.out_width = context.node.int_attribute("output_width", 1);
  g.sampling_ratio = context.node.int_attribute("sampling_ratio", 0);
  g.spatial_scale = context.node.float_attribute("spatial_scale", 1.0f);
  std::string mode = context.node.string_attribute("mode", "avg");
  std::string transform = context.node.string_attribute(
      "coordinate_transformation_mode", context.opset >= 16 ? "half_pixel" : "output_half_pixel");
  if ((mode != "avg" && mode != "max") ||
      (transform != "half_pixel" && transform != "output_half_pixel") || g.out_height < 1 ||
      g.out_width < 1 || g.sampling_ratio < 0) {
    throw Error(
        fmt::format("{}: mode '{}', coordinate_transformation_mode '{}', output {}x{} or "
                    "sampling_ratio {} is invalid",
                    context.where(), mode, transform, g.out_height, g.out_width, g.sampling_ratio));
  }
  g.average = mode == "avg";
  g.offset = transform == "half_pixel" ? 0.5 : 0.0;
  DataType type = x.dtype();
  int64_t batch = x.dim(0);
  std::string where = context.where();
  std::vector<int64_t> shape = {g.rois, g.channels, g.out_height, g.out_width};
  return shape::make_kernel(
      context, {OutputSpec{type, shape, std::nullopt, -1}},
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        std::vector<int64_t> batch_indices = inputs[2]->to_int64_vector();
        try {
          if (type == DataType::kDouble) {
            roi_align(g, inputs[0]->data<double>(), inputs[1]->data<double>(), batch_indices, batch,
                      outputs[0]->data<double>());
          } else {
            roi_align(g, inputs[0]->data<float>(), inputs[1]->data<float>(), batch_indices, batch,
                      outputs[0]->data<float>());
          }
        } catch (const Error& e) {
          throw Error(fmt::format("{}: {}", where, e.what()));
        }
      });
}

}  // namespace

void register_sampling_kernels(KernelRegistry& registry) {
  shape::add_kernel(registry, "GridSample", create_grid_sample,
                    {DataType::kFloat, DataType::kDouble});
  shape::add_kernel(registry, "RoiAlign", create_roi_align, {DataType::kFloat, DataType::kDouble});
}

}  // namespace cleave
