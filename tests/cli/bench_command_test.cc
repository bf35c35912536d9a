// `cleave bench`: the report's fields, the bitwise check across workers, and refused options.
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <string>

#include "command_fixture.h"

namespace cleave {
namespace {

class BenchCommandTest : public DemoModelFixture {
 protected:
  nlohmann::json bench_json(const std::string& options) {
    CommandResult result =
        cleave("bench " + model_ + " --costs static --warmup 0 --repeat 2 --json " + options);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return nlohmann::json::parse(result.out);
  }
};

TEST_F(BenchCommandTest, ReportsTheGraphTheClustersAndEveryVariant) {
  nlohmann::json report = bench_json("--strategy lc");
  EXPECT_EQ(report["strategy"], "lc");
  EXPECT_GT(report["nodes"].get<int>(), 0);
  EXPECT_GT(report["parallelism"].get<double>(), 1.0);  // Inception blocks have branches.
  EXPECT_GE(report["clusters_before_merge"].get<int>(), report["clusters_after_merge"].get<int>());
  for (const char* field : {"sequential_1_thread_ms", "sequential_intra_op_ms", "parallel_ms",
                            "predicted_ms", "plan_ms"}) {
    EXPECT_GT(report[field].get<double>(), 0) << field;
  }
  EXPECT_TRUE(report["bitwise_equal"].get<bool>());
  EXPECT_EQ(report["bitwise_checked"], nlohmann::json::array({"lc"}));
}

// The sequential plan runs on one worker, so its check alone would never hand a value between
// workers: the lc plan on two workers is checked as well.
TEST_F(BenchCommandTest, ASequentialChoiceAlsoChecksTheLcPlanAcrossWorkers) {
  nlohmann::json report = bench_json("--strategy sequential");
  EXPECT_EQ(report["strategy"], "sequential");
  EXPECT_TRUE(report["bitwise_equal"].get<bool>());
  EXPECT_EQ(report["bitwise_checked"], nlohmann::json::array({"sequential", "lc on 2 workers"}));

  CommandResult text =
      cleave("bench " + model_ + " --costs static --warmup 0 --repeat 1 --strategy sequential");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("bitwise equal to the sequential run (sequential, lc on 2 workers)"),
            std::string::npos)
      << text.out;
}

TEST_F(BenchCommandTest, AnUnknownStrategyIsRefusedWithTheChoices) {
  CommandResult result = cleave("bench " + model_ + " --costs static --strategy fastest");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("fastest"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("switched-hypercluster"), std::string::npos) << result.err;
  EXPECT_TRUE(result.out.empty()) << result.out;
}

TEST_F(BenchCommandTest, AMissingModelIsNamed) {
  CommandResult result = cleave("bench " + path("absent.onnx"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("absent.onnx"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace cleave
