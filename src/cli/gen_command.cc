// `cleave gen`: writes seeded synthetic models (Inception, SqueezeNet, randomly wired) as ONNX.
#include <fmt/core.h>

#include <charconv>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <tuple>

#include "analysis/model_summary.h"
#include "cli/commands.h"
#include "cli/option_limits.h"
#include "ir/verify.h"
#include "modelgen/inception.h"
#include "modelgen/rwnn.h"
#include "modelgen/squeezenet.h"
#include "onnx/atomic_file.h"
#include "onnx/onnx_export.h"

namespace cleave::cli {

namespace {

// Options every generator shares; `size` is "HxW" or "N" (square).
struct CommonOptions {
  std::string output;
  uint64_t seed = 1;
  int64_t channels = 0;
  std::string size = "32x32";
  int64_t batch = 1;
  int64_t classes = 10;
};

void add_common_options(CLI::App& command, CommonOptions& options, int64_t default_channels,
                        const std::string& channels_help) {
  options.channels = default_channels;
  command.add_option("-o,--output", options.output, "ONNX file to write")
      ->required()
      ->check(path_given());
  command.add_option("--seed", options.seed, "Seed of the weights (and structure)")
      ->capture_default_str();
  command.add_option("--channels", options.channels, channels_help)->capture_default_str();
  command.add_option("--size", options.size, "Input spatial size, HxW or N")->capture_default_str();
  command.add_option("--batch", options.batch, "Batch dimension of the input")
      ->capture_default_str();
  command.add_option("--classes", options.classes, "Outputs of the classifier")
      ->capture_default_str();
}

// Parses `text` fully as a decimal number.
template <typename T>
std::optional<T> parse_number(std::string_view text) {
  T value{};
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::pair<int64_t, int64_t> parse_size(const std::string& text) {
  const std::size_t x = text.find_first_of("xX");
  auto height = parse_number<int64_t>(std::string_view(text).substr(0, x));
  auto width =
      x == std::string::npos ? height : parse_number<int64_t>(std::string_view(text).substr(x + 1));
  if (!height || !width)
    throw Error(fmt::format("--size '{}': expected HxW (e.g. 32x32) or N", text));
  return {*height, *width};
}

std::pair<int, int> parse_channel_range(const std::string& text) {
  const std::size_t dots = text.find("..");
  auto low = parse_number<int>(std::string_view(text).substr(0, dots));
  auto high =
      dots == std::string::npos ? low : parse_number<int>(std::string_view(text).substr(dots + 2));
  if (!low || !high) {
    throw Error(
        fmt::format("--channels-between '{}': expected C or LO..HI (e.g. 2 or 1..3)", text));
  }
  return {*low, *high};
}

int write_model(const Graph& graph, const std::string& kind, const std::string& path) {
  verify_graph(graph);
  export_onnx(graph, path);
  int64_t parameters = 0;
  for (ValueId id : graph.initializers()) {
    parameters += graph.value(id).initializer->element_count();
  }
  fmt::print("wrote {}: {}, {} nodes, {} parameters ({})\n", path, kind,
             format_count(static_cast<int64_t>(graph.node_count())), format_count(parameters),
             format_bytes(4 * parameters));
  return 0;
}

}  // namespace

void register_gen(CLI::App& app, CommandAction& action) {
  CLI::App* gen = app.add_subcommand("gen", "Generate a synthetic model with random weights");
  gen->require_subcommand(1);

  // Inception.
  {
    auto common = std::make_shared<CommonOptions>();
    auto options = std::make_shared<InceptionOptions>();
    CLI::App* command = gen->add_subcommand(
        "inception",
        "Stem conv, K Inception blocks (1x1 | 1x1-3x3 | 1x1-5x5 | pool-1x1, concatenated), "
        "global average pool and a Gemm classifier");
    add_common_options(*command, *common, options->channels,
                       "Channels of the stem and of each block's output (>= 4)");
    command->add_option("--blocks", options->blocks, "Number of Inception blocks")
        ->capture_default_str();
    command->add_flag("--double-3x3", options->double_3x3,
                      "Third branch as two 3x3 convs instead of one 5x5");
    command->callback([&action, common, options] {
      action = [common, options] {
        auto [height, width] = parse_size(common->size);
        options->channels = common->channels;
        options->height = height;
        options->width = width;
        options->batch = common->batch;
        options->classes = common->classes;
        options->seed = common->seed;
        return write_model(generate_inception(*options), "inception", common->output);
      };
    });
  }

  // SqueezeNet.
  {
    auto common = std::make_shared<CommonOptions>();
    auto options = std::make_shared<SqueezeNetOptions>();
    CLI::App* command = gen->add_subcommand(
        "squeezenet",
        "Stem conv, fire modules (squeeze 1x1, then expand 1x1 | 3x3 concatenated) with max "
        "pools after the 2nd and 4th, conv classifier and global average pool");
    add_common_options(*command, *common, options->squeeze_channels,
                       "Squeeze channels of the first fire modules (grows every two modules)");
    command->add_option("--blocks", options->fire_modules, "Number of fire modules")
        ->capture_default_str();
    command->add_option("--stem-channels", options->stem_channels, "Channels of the stem conv")
        ->capture_default_str();
    command->callback([&action, common, options] {
      action = [common, options] {
        auto [height, width] = parse_size(common->size);
        options->squeeze_channels = common->channels;
        options->height = height;
        options->width = width;
        options->batch = common->batch;
        options->classes = common->classes;
        options->seed = common->seed;
        return write_model(generate_squeezenet(*options), "squeezenet", common->output);
      };
    });
  }

  // Randomly wired networks.
  {
    struct RwnnCli {
      std::string graph = "er";
      std::string channels_between = "1";
      std::string dependence = "sdep";
      std::string dag_path;
    };
    auto common = std::make_shared<CommonOptions>();
    auto options = std::make_shared<RwnnOptions>();
    auto extra = std::make_shared<RwnnCli>();
    CLI::App* command = gen->add_subcommand(
        "rwnn",
        "Randomly wired network (DiviML benchmarks): M random-graph modules of N nodes chained "
        "by communication channels; each node sums its inputs, then Relu and Conv3x3");
    add_common_options(*command, *common, options->channels, "Channels of every node");
    command->add_option("--modules", options->dag.modules, "Modules stacked")
        ->capture_default_str();
    command->add_option("--nodes", options->dag.nodes_per_module, "Nodes per module")
        ->capture_default_str();
    command
        ->add_option("--graph", extra->graph,
                     "Random graph model: er (Erdos-Renyi), ws (Watts-Strogatz), "
                     "ba (Barabasi-Albert)")
        ->check(CLI::IsMember({"er", "ws", "ba"}))
        ->capture_default_str();
    command
        ->add_option("--p", options->dag.probability,
                     "ER edge probability, WS rewiring probability")
        ->capture_default_str();
    command->add_option("--k", options->dag.ws_neighbors, "WS ring neighbours per node")
        ->capture_default_str();
    command->add_option("--ba-m", options->dag.ba_attachments, "BA edges per new node")
        ->capture_default_str();
    command
        ->add_option("--channels-between", extra->channels_between,
                     "Communication channels between consecutive modules: C, or LO..HI "
                     "drawn per boundary")
        ->capture_default_str();
    command
        ->add_option("--dependence", extra->dependence,
                     "sdep: channel endpoints are the modules' sources and sinks; wdep: "
                     "endpoints are random module nodes")
        ->check(CLI::IsMember({"sdep", "wdep"}))
        ->capture_default_str();
    command->add_option("--dag", extra->dag_path,
                        "Also write the bare DAG (no weights) as JSON, for scheduling "
                        "benchmarks");
    command->callback([&action, common, options, extra] {
      action = [common, options, extra] {
        auto [height, width] = parse_size(common->size);
        options->channels = common->channels;
        options->height = height;
        options->width = width;
        options->batch = common->batch;
        options->classes = common->classes;
        options->dag.seed = common->seed;
        options->dag.model = parse_random_graph_model(extra->graph);
        options->dag.dependence = parse_channel_dependence(extra->dependence);
        std::tie(options->dag.min_channels, options->dag.max_channels) =
            parse_channel_range(extra->channels_between);
        RandomDag dag = generate_random_dag(options->dag);
        Graph graph = build_rwnn(dag, *options);
        if (!extra->dag_path.empty()) {
          require_file_target(common->output);  // Both files or neither.
          write_file_atomically(extra->dag_path, random_dag_to_json(dag).dump(1) + "\n");
        }
        return write_model(graph, "rwnn", common->output);
      };
    });
  }
}

}  // namespace cleave::cli
