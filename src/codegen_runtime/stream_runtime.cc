// Ring buffers, built-in work functions and the command line of generated stream programs.
#include "codegen_runtime/stream_runtime.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "codegen_runtime/program_args.h"
#include "ir/graph.h"
#include "runtime/npy.h"
#include "runtime/wait_policy.h"
#include "support/atomic_output.h"

namespace cleave {

std::byte* StreamRing::peek(int64_t i) const {
  if (i < 0 || i >= count) {
    throw Error(fmt::format("channel {}: item {} asked for, {} held", name, i, count));
  }
  return data + ((head + i) % capacity) * item_bytes;
}

int64_t StreamRing::bytes(int64_t i) const {
  if (i < 0 || i >= count) {
    throw Error(fmt::format("channel {}: item {} asked for, {} held", name, i, count));
  }
  return sizes ? sizes[(head + i) % capacity] : item_bytes;
}

std::byte* StreamRing::push_slot(int64_t bytes) {
  if (count >= capacity) {
    throw Error(fmt::format("channel {}: full ({} items): the schedule overflows its buffer", name,
                            capacity));
  }
  if (bytes > item_bytes || (!sizes && bytes != item_bytes)) {
    throw Error(fmt::format("channel {}: an item of {} bytes does not fit its slots of {} bytes",
                            name, bytes, item_bytes));
  }
  const int64_t slot = (head + count) % capacity;
  if (sizes) sizes[slot] = bytes;
  ++count;
  return data + slot * item_bytes;
}

void StreamRing::pop(int64_t n) {
  if (n > count) throw Error(fmt::format("channel {}: pop {} of {} items", name, n, count));
  head = (head + n) % capacity;
  count -= n;
}

namespace {

void copy_item(const StreamRing& in, int64_t i, StreamRing& out) {
  const int64_t bytes = in.bytes(i);
  std::memcpy(out.push_slot(bytes), in.peek(i), static_cast<std::size_t>(bytes));
}

}  // namespace

void stream_identity(StreamRing& in, StreamRing& out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) copy_item(in, i, out);
  in.pop(n);
}

void stream_slice(StreamRing& in, StreamRing& out, int64_t pop, int64_t begin, int64_t push) {
  for (int64_t i = 0; i < push; ++i) copy_item(in, begin + i, out);
  in.pop(pop);
}

void stream_separator(StreamRing& in, StreamRing& out, int64_t pop, const int64_t* indices,
                      int64_t count) {
  for (int64_t i = 0; i < count; ++i) copy_item(in, indices[i], out);
  in.pop(pop);
}

void stream_concat(StreamRing& in, StreamRing& out, int64_t pop, int64_t outer) {
  // Each item is `outer` chunks; the output interleaves the popped items chunk by chunk.
  const int64_t item = in.bytes(0);
  for (int64_t i = 1; i < pop; ++i) {
    if (in.bytes(i) != item) {
      throw Error(fmt::format("channel {}: concat of items of {} and {} bytes", in.name, item,
                              in.bytes(i)));
    }
  }
  const int64_t chunk = item / outer;
  std::byte* dst = out.push_slot(item * pop);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < pop; ++i) {
      std::memcpy(dst, in.peek(i) + o * chunk, static_cast<std::size_t>(chunk));
      dst += chunk;
    }
  }
  in.pop(pop);
}

void stream_duplicate(StreamRing& in, StreamRing* const* outs, int count) {
  for (int b = 0; b < count; ++b) copy_item(in, 0, *outs[b]);
  in.pop(1);
}

void stream_round_robin_split(StreamRing& in, StreamRing* const* outs, const int64_t* weights,
                              int count) {
  int64_t next = 0;
  for (int b = 0; b < count; ++b) {
    for (int64_t i = 0; i < weights[b]; ++i) copy_item(in, next++, *outs[b]);
  }
  in.pop(next);
}

void stream_join(StreamRing* const* ins, const int64_t* weights, int count, StreamRing& out) {
  for (int b = 0; b < count; ++b) {
    for (int64_t i = 0; i < weights[b]; ++i) copy_item(*ins[b], i, out);
    ins[b]->pop(weights[b]);
  }
}

StreamModelFilter::StreamModelFilter(const StaticProgramTables& tables,
                                     const std::string& weights_path)
    : program_(tables, weights_path) {
  for (int i = 0; i < tables.graph_input_count; ++i) {
    inputs_.emplace_back(static_cast<std::size_t>(tables.values[tables.graph_inputs[i]].bytes));
    input_pointers_.push_back(inputs_.back().data());
  }
  for (int i = 0; i < tables.graph_output_count; ++i) {
    outputs_.emplace_back(static_cast<std::size_t>(tables.values[tables.graph_outputs[i]].bytes));
    output_pointers_.push_back(outputs_.back().data());
  }
}

void StreamModelFilter::fire(StreamRing& in, StreamRing& out, int64_t pop, int64_t peek,
                             int64_t push) {
  const int64_t per_input = peek / static_cast<int64_t>(inputs_.size());
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    std::byte* dst = inputs_[i].data();
    const int64_t item = static_cast<int64_t>(inputs_[i].size()) / per_input;
    for (int64_t k = 0; k < per_input; ++k) {
      const int64_t index = static_cast<int64_t>(i) * per_input + k;
      if (item * per_input != static_cast<int64_t>(inputs_[i].size()) || in.bytes(index) != item) {
        throw Error(fmt::format(
            "channel {}: item {} of {} bytes does not fill its share of a model input of {} "
            "bytes ({} items)",
            in.name, index, in.bytes(index), inputs_[i].size(), per_input));
      }
      std::memcpy(dst, in.peek(index), static_cast<std::size_t>(item));
      dst += item;
    }
  }
  program_.run(input_pointers_.data(), output_pointers_.data());
  const int64_t per_output = push / static_cast<int64_t>(outputs_.size());
  for (const std::vector<std::byte>& output : outputs_) {
    const int64_t item = static_cast<int64_t>(output.size()) / per_output;
    if (item * per_output != static_cast<int64_t>(output.size())) {
      throw Error(fmt::format("channel {}: a model output of {} bytes is not {} equal items",
                              out.name, output.size(), per_output));
    }
    for (int64_t k = 0; k < per_output; ++k) {
      std::memcpy(out.push_slot(item), output.data() + k * item, static_cast<std::size_t>(item));
    }
  }
  in.pop(pop);
}

namespace {

struct StreamOptions {
  std::string input;
  std::string output_dir;
  int64_t items = 0;
  int repeat = 1;
  bool json = false;
};

StreamOptions parse(int argc, char** argv, bool& help) {
  StreamOptions o;
  ProgramArgs args(argc, argv);
  while (args.next()) {
    const std::string& arg = args.option();
    if (args.is_help()) {
      help = true;
    } else if (arg == "--input") {
      const std::string spec = args.value();
      const auto equals = spec.find('=');
      o.input = equals == std::string::npos ? spec : spec.substr(equals + 1);
    } else if (arg == "--output-dir") {
      o.output_dir = args.value();
    } else if (arg == "--items") {
      o.items = args.integer(1);
    } else if (arg == "--repeat") {
      o.repeat = static_cast<int>(args.integer(1));
    } else if (arg == "--json") {
      o.json = true;
    } else {
      args.unknown();
    }
  }
  if (!help && o.input.empty()) throw Error("give the input items: --input NAME=F.npy");
  return o;
}

// One pass of the whole input through the program; returns the output items' bytes.
std::vector<std::byte> run_once(const StreamProgramTables& t,
                                const std::vector<const std::byte*>& items, int64_t& outputs) {
  std::vector<std::byte> result;
  outputs = 0;
  for (int r = 0; r < t.ring_count; ++r) t.rings[r]->head = t.rings[r]->count = 0;
  const auto total = static_cast<int64_t>(items.size());
  int64_t next = 0;
  const auto feed = [&](int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(t.input->push_slot(), items[static_cast<std::size_t>(next++)],
                  static_cast<std::size_t>(t.input->item_bytes));
    }
  };
  const auto collect = [&] {
    while (t.output->count > 0) {
      const std::byte* item = t.output->peek(0);
      result.insert(result.end(), item, item + t.output->item_bytes);
      t.output->pop(1);
      ++outputs;
    }
  };
  if (total >= t.input_for_init) {
    feed(t.input_for_init);
    t.init();
    collect();
    while (total - next >= t.input_per_iteration) {
      feed(t.input_per_iteration);
      t.steady_state();
      collect();
    }
  }
  // What is left (less than an iteration): fire whatever can, as `cleave stream run` does.
  for (;;) {
    while (next < total && t.input->room() > 0) feed(1);
    const bool fired = t.drain();
    collect();
    if (!fired && (next >= total || t.input->room() == 0)) break;
  }
  return result;
}

}  // namespace

int stream_program_main(const StreamProgramTables& t, int argc, char** argv) {
  // The same bounded OpenMP spin as the cleave command: with libgomp's default, a 2-thread run
  // collapses whenever another process holds a core (docs/results/load.md).
  apply_default_wait_policy(argv);
  const std::string name = argc > 0 ? std::filesystem::path(argv[0]).filename().string() : "stream";
  try {
    bool help = false;
    const StreamOptions o = parse(argc, argv, help);
    if (help) {
      fmt::print(
          "usage: {} --input NAME=F.npy [--items N] [--output-dir D] [--repeat R] [--json]\n"
          "Feeds the items of F.npy (its leading axis) through stream program {} with the\n"
          "static schedule; --items repeats them to N items; --output-dir writes output.npy.\n",
          name, t.name);
      return 0;
    }
    const Tensor all = read_npy(o.input);
    const std::vector<int64_t> dims(t.input_dims, t.input_dims + t.input_rank);
    // Items need the right type and size; their shape is the model's business, as in
    // `cleave stream run`.
    if (all.rank() == 0 || all.dim(0) == 0 || static_cast<int>(all.dtype()) != t.input_dtype ||
        static_cast<int64_t>(all.byte_size()) != all.dim(0) * t.input->item_bytes) {
      throw Error(fmt::format(
          "{}: holds {}; expected items of {}[{}] along a leading axis", o.input, all.describe(),
          dtype_name(static_cast<DataType>(t.input_dtype)), fmt::join(dims, ",")));
    }
    const auto* base = static_cast<const std::byte*>(all.raw());
    const int64_t count = o.items > 0 ? o.items : all.dim(0);
    std::vector<const std::byte*> items;
    for (int64_t i = 0; i < count; ++i)
      items.push_back(base + (i % all.dim(0)) * t.input->item_bytes);
    t.start(std::filesystem::read_symlink("/proc/self/exe").parent_path().string());
    std::vector<std::byte> result;
    int64_t outputs = 0;
    std::vector<double> seconds;
    for (int r = 0; r < o.repeat; ++r) {
      const auto start = std::chrono::steady_clock::now();
      result = run_once(t, items, outputs);
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    if (!o.output_dir.empty() && outputs > 0) {
      std::vector<int64_t> shape(t.output_dims, t.output_dims + t.output_rank);
      shape.insert(shape.begin(), outputs);
      Tensor stacked = Tensor::allocate(static_cast<DataType>(t.output_dtype), shape);
      std::memcpy(stacked.raw(), result.data(), result.size());
      AtomicFolder folder(o.output_dir, {FolderRules::Existing::kMerge, {}});
      write_npy(folder.staging_path("output.npy"), stacked);
      folder.commit();
    }
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[seconds.size() / 2];
    if (o.json) {
      const nlohmann::ordered_json report = {{"items", count},
                                             {"outputs", outputs},
                                             {"seconds_min", seconds.front()},
                                             {"seconds_median", median},
                                             {"items_per_second", count / median}};
      fmt::print("{}\n", report.dump(2));
    } else {
      fmt::print("{}: {} items in, {} items out in {:.4f} s (median of {})\n", t.name, count,
                 outputs, median, seconds.size());
      fmt::print("throughput {:.1f} items/s\n", count / median);
    }
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: error: {}\n", name, e.what());
    return 1;
  }
}

}  // namespace cleave
