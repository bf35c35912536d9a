// SqueezeNet-style model generator.
#include "modelgen/squeezenet.h"

#include <fmt/core.h>

#include "modelgen/model_builder.h"

namespace cleave {

namespace {

ValueId fire_module(ModelBuilder& builder, const std::string& prefix, ValueId x, int64_t squeeze) {
  ValueId s = builder.relu(prefix + "_squeeze_relu",
                           builder.conv(prefix + "_squeeze", x, squeeze, 1, 1, 0));
  ValueId e1 = builder.relu(prefix + "_expand1x1_relu",
                            builder.conv(prefix + "_expand1x1", s, 4 * squeeze, 1, 1, 0));
  ValueId e3 = builder.relu(prefix + "_expand3x3_relu",
                            builder.conv(prefix + "_expand3x3", s, 4 * squeeze, 3, 1, 1));
  return builder.concat(prefix + "_concat", {e1, e3});
}

}  // namespace

Graph generate_squeezenet(const SqueezeNetOptions& options) {
  if (options.fire_modules < 0) throw Error("squeezenet: --blocks must be >= 0");
  if (options.squeeze_channels < 1 || options.stem_channels < 1 || options.height < 1 ||
      options.width < 1 || options.batch < 1 || options.classes < 1) {
    throw Error("squeezenet: channels, size, batch and classes must be positive");
  }
  ModelBuilder builder("squeezenet", options.seed);
  ValueId x = builder.input("input", {options.batch, 3, options.height, options.width});
  x = builder.relu("stem_relu", builder.conv("stem", x, options.stem_channels, 3, 1, 1));
  for (int i = 0; i < options.fire_modules; ++i) {
    x = fire_module(builder, fmt::format("fire{}", i + 1), x,
                    options.squeeze_channels * (1 + i / 2));
    const bool more_follow = i + 1 < options.fire_modules;
    if ((i == 1 || i == 3) && more_follow) {
      x = builder.max_pool(fmt::format("pool{}", i + 1), x, 3, 2, 1);
    }
  }
  x = builder.relu("classifier_relu", builder.conv("classifier", x, options.classes, 1, 1, 0));
  x = builder.global_average_pool("head_pool", x);
  x = builder.flatten("logits", x);
  builder.output(x);
  return builder.take();
}

}  // namespace cleave
