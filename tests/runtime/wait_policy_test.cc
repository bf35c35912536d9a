// Tests of the cleave command's default OpenMP wait policy: it never overrides the user's.
#include "runtime/wait_policy.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace cleave {
namespace {

std::vector<EnvironmentSetting> policy_for(const std::map<std::string, std::string>& environment) {
  return default_wait_policy([&](const char* name) -> const char* {
    auto found = environment.find(name);
    return found == environment.end() ? nullptr : found->second.c_str();
  });
}

TEST(WaitPolicy, BoundsTheSpinCountWhenTheUserChoseNothing) {
  std::vector<EnvironmentSetting> settings = policy_for({{"OMP_NUM_THREADS", "2"}});
  ASSERT_EQ(settings.size(), 1u);
  EXPECT_EQ(settings[0].name, "GOMP_SPINCOUNT");
  EXPECT_EQ(settings[0].value, std::to_string(kDefaultSpinCount));
  EXPECT_LT(kDefaultSpinCount, 300000);  // Below libgomp's own default, or it changes nothing.
}

TEST(WaitPolicy, LeavesAUsersWaitPolicyAlone) {
  EXPECT_TRUE(policy_for({{"OMP_WAIT_POLICY", "active"}}).empty());
  EXPECT_TRUE(policy_for({{"OMP_WAIT_POLICY", "passive"}}).empty());
}

TEST(WaitPolicy, LeavesAUsersSpinCountAlone) {
  EXPECT_TRUE(policy_for({{"GOMP_SPINCOUNT", "infinite"}}).empty());
}

TEST(WaitPolicy, CountsAnEmptyValueAsTheUsersChoice) {
  EXPECT_TRUE(policy_for({{"GOMP_SPINCOUNT", ""}}).empty());
  EXPECT_TRUE(policy_for({{"OMP_WAIT_POLICY", ""}}).empty());
}

}  // namespace
}  // namespace cleave
