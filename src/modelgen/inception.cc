// Inception-style model generator.
#include "modelgen/inception.h"

#include <fmt/core.h>

#include <algorithm>

#include "modelgen/model_builder.h"

namespace cleave {

namespace {

void check_options(const InceptionOptions& options) {
  if (options.blocks < 0) throw Error("inception: --blocks must be >= 0");
  if (options.channels < 4) throw Error("inception: --channels must be >= 4 (four branches)");
  if (options.height < 1 || options.width < 1 || options.batch < 1 || options.classes < 1) {
    throw Error("inception: size, batch and classes must be positive");
  }
}

ValueId inception_block(ModelBuilder& builder, const std::string& prefix, ValueId x,
                        const InceptionOptions& options) {
  const int64_t branch = options.channels / 4;
  const int64_t last_branch = options.channels - 3 * branch;
  const int64_t reduce = std::max<int64_t>(1, options.channels / 4);
  auto conv_relu = [&](const std::string& name, ValueId in, int64_t out, int64_t kernel) {
    return builder.relu(name + "_relu", builder.conv(name, in, out, kernel, 1, kernel / 2));
  };

  ValueId b1 = conv_relu(prefix + "_b1_1x1", x, branch, 1);

  ValueId b2 = conv_relu(prefix + "_b2_reduce", x, reduce, 1);
  b2 = conv_relu(prefix + "_b2_3x3", b2, branch, 3);

  ValueId b3 = conv_relu(prefix + "_b3_reduce", x, reduce, 1);
  if (options.double_3x3) {
    b3 = conv_relu(prefix + "_b3_3x3a", b3, branch, 3);
    b3 = conv_relu(prefix + "_b3_3x3b", b3, branch, 3);
  } else {
    b3 = conv_relu(prefix + "_b3_5x5", b3, branch, 5);
  }

  ValueId b4 = builder.max_pool(prefix + "_b4_pool", x, 3, 1, 1);
  b4 = conv_relu(prefix + "_b4_1x1", b4, last_branch, 1);

  return builder.concat(prefix + "_concat", {b1, b2, b3, b4});
}

}  // namespace

Graph generate_inception(const InceptionOptions& options) {
  check_options(options);
  ModelBuilder builder("inception", options.seed);
  ValueId x = builder.input("input", {options.batch, 3, options.height, options.width});
  x = builder.relu("stem_relu", builder.conv("stem", x, options.channels, 3, 1, 1));
  for (int b = 0; b < options.blocks; ++b) {
    x = inception_block(builder, fmt::format("block{}", b + 1), x, options);
  }
  x = builder.global_average_pool("head_pool", x);
  x = builder.flatten("head_flatten", x);
  x = builder.gemm("logits", x, options.classes);
  builder.output(x);
  return builder.take();
}

}  // namespace cleave
