// MPI start-up settings: the TCP eager limit cleave raises before MPI_Init, unless the user set it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "distributed/mpi_session.h"

namespace cleave {
namespace {

constexpr const char* kEagerLimit = "OMPI_MCA_btl_tcp_eager_limit";

class PreferEagerMessagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : names_) {
      if (const char* value = std::getenv(name)) saved_[name] = value;
      unsetenv(name);
    }
  }
  void TearDown() override {
    for (const char* name : names_) {
      unsetenv(name);
      if (saved_.count(name)) setenv(name, saved_[name].c_str(), 1);
    }
  }

  const char* names_[3] = {kEagerLimit, "OMPI_MCA_btl_tcp_rndv_eager_limit",
                           "OMPI_MCA_btl_tcp_max_send_size"};
  std::map<std::string, std::string> saved_;
};

TEST_F(PreferEagerMessagesTest, RaisesTheTcpLimitsWhenTheUserSetNone) {
  prefer_eager_messages();
  for (const char* name : names_) {
    ASSERT_NE(std::getenv(name), nullptr) << name;
    EXPECT_EQ(std::string(std::getenv(name)), std::to_string(kEagerMessageBytes)) << name;
  }
}

TEST_F(PreferEagerMessagesTest, LeavesALimitTheUserSetAlone) {
  setenv(kEagerLimit, "65536", 1);
  prefer_eager_messages();
  EXPECT_EQ(std::string(std::getenv(kEagerLimit)), "65536");
}

}  // namespace
}  // namespace cleave
