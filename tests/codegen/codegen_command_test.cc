// `cleave codegen --lang pytorch`: the generated module runs and matches cleave; bad input is
// refused.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "codegen_fixture.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

double max_abs_difference(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const auto x = a.to_double_vector(), y = b.to_double_vector();
  double worst = x.size() == y.size() ? 0 : INFINITY;
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i)
    worst = std::max(worst, std::abs(x[i] - y[i]));
  return worst;
}

class CodegenCommand : public CodegenFixture {
 protected:
  void SetUp() override {
    CodegenFixture::SetUp();
    write_model(kTwoBranchModel, path("m.onnx"));
    save_default_input("m.onnx", path("x.npy"));
    ASSERT_EQ(cleave("run m.onnx --input x=x.npy --output-dir ref").exit_code, 0);
    ASSERT_EQ(cleave("plan m.onnx --strategy lc --workers 2 --costs static -o plan.json").exit_code,
              0);
  }
};

TEST_F(CodegenCommand, PytorchWorkersAndSequentialTwinMatchCleave) {
  CommandOutput generated = cleave("codegen m.onnx --plan plan.json --lang pytorch -o py");
  ASSERT_EQ(generated.exit_code, 0) << generated.text;
  const std::string model = read_text_file(path("py/model.py"));
  // Ramiel's form: one method per worker, queues between them, the sequential forward.
  EXPECT_NE(model.find("def worker_0(self, inputs, ch):"), std::string::npos);
  EXPECT_NE(model.find("def worker_1(self, inputs, ch):"), std::string::npos);
  EXPECT_NE(model.find("ch.put("), std::string::npos);
  EXPECT_NE(model.find("ch.get("), std::string::npos);
  EXPECT_NE(model.find("def forward(self, x):"), std::string::npos);
  EXPECT_NE(model.find("conv2d("), std::string::npos);
  const Tensor reference = read_npy(path("ref/out.npy"));
  for (const std::string mode : {"", " --sequential", " --processes"}) {
    fs::remove_all(path("out"));
    CommandOutput run =
        shell("/usr/bin/python3 py/run.py --input x=x.npy --output-dir out --repeat 2" + mode);
    ASSERT_EQ(run.exit_code, 0) << mode << "\n" << run.text;
    EXPECT_NE(run.text.find("latency    min"), std::string::npos) << run.text;
    EXPECT_LT(max_abs_difference(read_npy(path("out/out.npy")), reference), 1e-5) << mode;
  }
}

TEST_F(CodegenCommand, APlanForAnotherModelIsRefusedAndNothingIsWritten) {
  write_model(
      std::string(kTwoBranchModel).replace(std::string(kTwoBranchModel).find("Sigmoid"), 7, "Tanh"),
      path("other.onnx"));
  for (const std::string lang : {"pytorch", "cpp"}) {
    CommandOutput result = cleave("codegen other.onnx --plan plan.json --lang " + lang + " -o py");
    EXPECT_EQ(result.exit_code, 1) << lang;
    EXPECT_NE(result.text.find("another model"), std::string::npos) << result.text;
    EXPECT_FALSE(fs::exists(path("py"))) << lang;
  }
}

TEST_F(CodegenCommand, AnOpWithoutPytorchMappingNamesTheNodeAndWritesNothing) {
  write_model(R"(graph main [ai.onnx=17] (%x: f32[1,4,8,8]) {
  %n = "norm1" LRN[size=3](%x)
  %y = Relu(%n)
  return %y
})",
              path("lrn.onnx"));
  CommandOutput result = cleave("codegen lrn.onnx --lang pytorch -o py");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.text.find("norm1"), std::string::npos) << result.text;
  EXPECT_NE(result.text.find("LRN"), std::string::npos) << result.text;
  EXPECT_FALSE(fs::exists(path("py")));
  for (const auto& entry : fs::directory_iterator(folder_))
    EXPECT_EQ(entry.path().filename().string().find(".py."), std::string::npos);
}

TEST_F(CodegenCommand, ANonEmptyOutputFolderIsKeptUnlessForced) {
  fs::create_directories(path("py"));
  { std::ofstream(path("py/mine.txt")) << "keep"; }
  CommandOutput refused = cleave("codegen m.onnx --lang pytorch -o py");
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.text.find("--force"), std::string::npos) << refused.text;
  EXPECT_TRUE(fs::exists(path("py/mine.txt")));
  ASSERT_EQ(cleave("codegen m.onnx --lang pytorch -o py --force").exit_code, 0);
  EXPECT_FALSE(fs::exists(path("py/mine.txt")));
  EXPECT_TRUE(fs::exists(path("py/run.py")));
}

TEST_F(CodegenCommand, RankSourcesPostReceivesFirstAndSendAsSoonAsAValueExists) {
  CommandOutput generated =
      cleave("codegen m.onnx --plan plan.json --lang cpp --ranks --layouts blocked -o gen");
  ASSERT_EQ(generated.exit_code, 0) << generated.text;
  EXPECT_NE(generated.text.find("on 2 rank(s)"), std::string::npos) << generated.text;
  const std::string rank0 = read_text_file(path("gen/rank_0.cc"));
  const std::string rank1 = read_text_file(path("gen/rank_1.cc"));
  EXPECT_FALSE(fs::exists(path("gen/worker_0.cc")));
  // Rank 0 holds the input: rank 1 receives it (posted before its first step) and sends its
  // branch back.
  const std::size_t receive = rank1.find("MPI_Irecv(p.message(");
  const std::size_t first_step = rank1.find("p.step(");
  ASSERT_NE(receive, std::string::npos) << rank1;
  EXPECT_LT(receive, first_step) << rank1;
  EXPECT_LT(rank1.find("p.wait_receive("), first_step) << rank1;
  EXPECT_NE(rank1.find("MPI_Isend(p.message("), std::string::npos) << rank1;
  EXPECT_NE(rank0.find("MPI_Isend(p.message(0), p.pack(0), MPI_BYTE, /*to=*/1, /*tag=*/0"),
            std::string::npos)
      << rank0;
  // Every send completes within its run.
  EXPECT_NE(rank0.find("p.wait_send(0);"), std::string::npos) << rank0;
  const std::string cmake = read_text_file(path("gen/CMakeLists.txt"));
  EXPECT_NE(cmake.find("find_package(MPI REQUIRED COMPONENTS CXX)"), std::string::npos);
  EXPECT_NE(read_text_file(path("gen/README.md")).find("mpirun -np 2"), std::string::npos);
}

TEST_F(CodegenCommand, TheWrittenPlanRecordsTheConvolutionFamilyOfTheGeneratedCode) {
  // `cleave run --plan gen/plan.json` then runs the generated family instead of measuring one.
  for (const std::string family : {"channels-last", "blocked"}) {
    CommandOutput generated = cleave("codegen m.onnx --plan plan.json --lang cpp --layouts " +
                                     family + " -o gen-" + family);
    ASSERT_EQ(generated.exit_code, 0) << generated.text;
    const nlohmann::json written =
        nlohmann::json::parse(read_text_file(path("gen-" + family + "/plan.json")));
    EXPECT_EQ(written.value("convolution_family", ""), family) << family;
  }
}

// Two ranks with 100 us links at 1 GB/s.
std::string write_two_rank_machine(const std::string& file) {
  std::ofstream(file) << R"({"devices": [{"name": "rank0"}, {"name": "rank1"}],
    "bandwidth": [[0, 1e9], [1e9, 0]], "latency": [[0, 1e-4], [1e-4, 0]]})";
  return file;
}

// The generated program's plan carries the one simulator's prediction for the machine file's
// ranks: the same as `cleave plan --machine`'s for the same plan, with rank 0's hand-out of `x`
// to the other branch's rank priced (that branch starts only once `x` can have arrived).
TEST_F(CodegenCommand, RankPlanRecordsThePlanCommandsPredictionWithTheHandOut) {
  const std::string machine = write_two_rank_machine(path("two.json"));
  CommandOutput planned =
      cleave("plan m.onnx --strategy lc --costs static --json --machine " + machine);
  ASSERT_EQ(planned.exit_code, 0) << planned.text;
  const nlohmann::json plan = nlohmann::json::parse(planned.text);
  CommandOutput generated = cleave(
      "codegen m.onnx --plan auto --strategy lc --costs static --lang cpp --ranks "
      "--layouts blocked --json -o gen --machine " +
      machine);
  ASSERT_EQ(generated.exit_code, 0) << generated.text;
  const nlohmann::json report = nlohmann::json::parse(generated.text);
  const nlohmann::json written = nlohmann::json::parse(read_text_file(path("gen/plan.json")));
  EXPECT_EQ(written["order"], plan["order"]);
  EXPECT_DOUBLE_EQ(written["makespan"].get<double>(), plan["makespan"].get<double>());
  EXPECT_DOUBLE_EQ(report["predicted_seconds"].get<double>(), plan["makespan"].get<double>());
  std::map<std::string, nlohmann::json> task_of;
  for (const auto& task : written["task_graph"]["tasks"]) task_of[task["name"]] = task;
  int handed_out = 0;
  for (const auto& placed : written["tasks"]) {
    const nlohmann::json& task = task_of[placed["task"].get<std::string>()];
    if (placed["worker"] != "rank1" || !task.contains("model_inputs")) continue;
    for (const auto& input : task["model_inputs"]) {
      ++handed_out;
      EXPECT_GE(placed["start"].get<double>(), 1e-4 + input["bytes"].get<double>() / 1e9)
          << task["name"];
    }
  }
  EXPECT_GT(handed_out, 0) << "lc puts a branch reading x on rank 1";
}

// Without a machine file the ranks' messages are priced all the same, with a split's default
// links (1 Gbit/s, 100 us a message), and the plan says so: lc's branch on rank 1 waits for x
// and rank 0 for its output, which the same plan on threads does not.
TEST_F(CodegenCommand, RankPlanWithoutAMachinePricesTheHandOffsWithTheSplitsLinks) {
  CommandOutput planned = cleave("plan m.onnx --strategy lc --workers 2 --costs static --json");
  ASSERT_EQ(planned.exit_code, 0) << planned.text;
  const nlohmann::json threads = nlohmann::json::parse(planned.text);
  CommandOutput generated = cleave(
      "codegen m.onnx --plan auto --strategy lc --workers 2 --costs static --lang cpp --ranks "
      "--layouts blocked --json -o gen");
  ASSERT_EQ(generated.exit_code, 0) << generated.text;
  const nlohmann::json report = nlohmann::json::parse(generated.text);
  const nlohmann::json written = nlohmann::json::parse(read_text_file(path("gen/plan.json")));
  ASSERT_TRUE(written["notes"].contains("link_model")) << written["notes"].dump();
  EXPECT_NE(written["notes"]["link_model"].get<std::string>().find("1.25e+08 bytes/s"),
            std::string::npos)
      << written["notes"]["link_model"];
  EXPECT_EQ(written["task_graph"]["devices"].size(), 2u);
  // At least one message of 100 us more than on threads, where a hand-off costs 2 us.
  EXPECT_GT(report["predicted_seconds"].get<double>(), threads["makespan"].get<double>() + 1e-4);
  EXPECT_DOUBLE_EQ(report["predicted_seconds"].get<double>(), written["makespan"].get<double>());
}

TEST_F(CodegenCommand, MachineWithoutRanksAndAutoOrABadMachineFileAreRefused) {
  const std::string machine = write_two_rank_machine(path("two.json"));
  for (const std::string& arguments :
       {"--plan auto --lang cpp --machine " + machine,
        "--plan plan.json --lang cpp --ranks --machine " + machine}) {
    CommandOutput result = cleave("codegen m.onnx " + arguments + " -o gen");
    EXPECT_EQ(result.exit_code, 1) << arguments;
    EXPECT_NE(result.text.find("--machine takes --ranks and --plan auto"), std::string::npos)
        << result.text;
    EXPECT_FALSE(fs::exists(path("gen"))) << arguments;
  }
  std::ofstream(path("bad.json")) << R"({"devices": []})";
  CommandOutput bad = cleave("codegen m.onnx --plan auto --lang cpp --ranks --machine " +
                             path("bad.json") + " -o gen");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.text.find("bad.json"), std::string::npos) << bad.text;
  EXPECT_FALSE(fs::exists(path("gen")));
}

TEST_F(CodegenCommand, RanksWithoutAPlanOrWithPytorchAreRefusedAndWriteNothing) {
  for (const std::string arguments :
       {"--lang cpp --ranks", "--plan plan.json --lang pytorch --ranks"}) {
    CommandOutput result = cleave("codegen m.onnx " + arguments + " -o gen");
    EXPECT_EQ(result.exit_code, 1) << arguments;
    EXPECT_NE(result.text.find("--ranks"), std::string::npos) << result.text;
    EXPECT_FALSE(fs::exists(path("gen"))) << arguments;
  }
}

TEST_F(CodegenCommand, SamplesOtherThanThePlansBatchOrWithoutCppAreRefused) {
  ASSERT_EQ(cleave("plan m.onnx --strategy data-parallel --samples 2 --costs static -o dp.json")
                .exit_code,
            0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--plan plan.json --lang cpp --samples 2",
       "plan.json runs 1 sample(s) at a time (strategy lc), not the 2 of --samples; give "
       "--samples 1"},
      {"--plan plan.json --lang cpp --ranks --samples 2", "plan.json runs 1 sample(s)"},
      {"--plan dp.json --lang cpp --ranks", "dp.json runs 2 sample(s) at a time"},
      {"--plan dp.json --lang cpp --ranks --samples 3", "not the 3 of --samples; give --samples 2"},
      {"--plan dp.json --lang cpp", "dp.json runs 2 sample(s) at a time"},
      {"--plan dp.json --lang pytorch --samples 2", "generated PyTorch runs one sample a run"},
      {"--lang cpp --samples 2", "--samples takes a --plan"}};
  for (const auto& [arguments, expected] : cases) {
    CommandOutput result = cleave("codegen m.onnx " + arguments + " -o gen");
    EXPECT_EQ(result.exit_code, 1) << arguments;
    EXPECT_NE(result.text.find(expected), std::string::npos) << arguments << "\n" << result.text;
    EXPECT_FALSE(fs::exists(path("gen"))) << arguments;
  }
}

// A hypercluster interleaves samples on a worker, which no generated loop runs: refused naming
// the plan file and the plans to make instead, on threads and on ranks.
TEST_F(CodegenCommand, AHyperclusterPlanOfSeveralSamplesIsRefusedByFile) {
  ASSERT_EQ(
      cleave("plan m.onnx --strategy hypercluster --samples 2 --costs static -o hc.json").exit_code,
      0);
  for (const std::string ranks : {"", " --ranks"}) {
    CommandOutput result =
        cleave("codegen m.onnx --plan hc.json --lang cpp --samples 2" + ranks + " -o gen");
    EXPECT_EQ(result.exit_code, 1) << result.text;
    EXPECT_NE(result.text.find("hc.json"), std::string::npos) << result.text;
    EXPECT_NE(result.text.find("--strategy pipeline"), std::string::npos) << result.text;
    EXPECT_FALSE(fs::exists(path("gen")));
  }
}

// --plan auto for a stream of samples on this host's worker threads: the one auto plans them
// (the plan's batch) and each worker's source loops over its samples.
TEST_F(CodegenCommand, AutoPlansTheStreamOfSamplesForWorkerThreads) {
  CommandOutput generated = cleave(
      "codegen m.onnx --plan auto --costs static --lang cpp --samples 4 --layouts blocked --json "
      "-o gen");
  ASSERT_EQ(generated.exit_code, 0) << generated.text;
  const nlohmann::json report = nlohmann::json::parse(generated.text);
  EXPECT_EQ(report["samples"], 4);
  EXPECT_EQ(nlohmann::json::parse(read_text_file(path("gen/plan.json")))["batch"], 4);
  EXPECT_NE(read_text_file(path("gen/worker_0.cc")).find("for (int k = 0; k < "),
            std::string::npos);
  EXPECT_NE(read_text_file(path("gen/main.cc")).find("sample_stream_main"), std::string::npos);
}

// --plan auto for a stream of samples on a machine file's ranks: the plan streams them (its
// batch), and each rank's source runs them one after another.
TEST_F(CodegenCommand, AutoPlansTheStreamOfSamplesForTheRanks) {
  const std::string machine = write_two_rank_machine(path("two.json"));
  for (const std::string strategy : {"auto", "pipeline"}) {
    const std::string folder = "gen-" + strategy;
    CommandOutput generated =
        cleave("codegen m.onnx --plan auto --strategy " + strategy +
               " --costs static --lang cpp --ranks --samples 4 --layouts blocked --json -o " +
               folder + " --machine " + machine);
    ASSERT_EQ(generated.exit_code, 0) << generated.text;
    const nlohmann::json report = nlohmann::json::parse(generated.text);
    EXPECT_EQ(report["samples"], 4);
    const nlohmann::json written =
        nlohmann::json::parse(read_text_file(path(folder + "/plan.json")));
    EXPECT_EQ(written["batch"], 4) << strategy;
    if (strategy == "pipeline") {
      EXPECT_EQ(written["strategy"], "pipeline");
    }
    // Each rank loops over its samples: pipelined stages all four, data-parallel two each.
    const std::string ranks =
        read_text_file(path(folder + "/rank_0.cc")) + read_text_file(path(folder + "/rank_1.cc"));
    EXPECT_NE(ranks.find("for (int k = 0; k < "), std::string::npos) << ranks;
    EXPECT_NE(read_text_file(path(folder + "/README.md")).find("--samples 4"), std::string::npos);
  }
}

}  // namespace
}  // namespace cleave
