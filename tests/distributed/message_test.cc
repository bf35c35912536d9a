// Message headers between ranks: a message matching the plan passes; each kind of mismatch is
// refused by name before its bytes could become a tensor.
#include "distributed/message.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "distributed/fault_injection.h"

namespace cleave {
namespace {

MessageExpectation expect_f32_1x4x2() {
  MessageExpectation expect;
  expect.channel = 3;
  expect.run = 7;
  expect.dtype = DataType::kFloat;
  expect.shape = {1, 4, 2};
  expect.what = "value 'x' of task 'conv'";
  return expect;
}

std::string refusal(const MessageHeader& header, std::size_t bytes) {
  try {
    check_message(header, bytes, expect_f32_1x4x2());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const std::size_t kWholeMessage = kMessagePrefixBytes + 8 * sizeof(float);

TEST(MessageTest, MatchingMessagePasses) {
  std::vector<int64_t> shape = {1, 4, 2};
  EXPECT_EQ(refusal(make_header(3, 7, DataType::kFloat, shape), kWholeMessage), "");
}

TEST(MessageTest, PayloadStaysAligned) {
  EXPECT_EQ(kMessagePrefixBytes % 64, 0u);
}

TEST(MessageTest, WrongTypeIsRefused) {
  std::vector<int64_t> shape = {1, 4, 2};
  std::string why = refusal(make_header(3, 7, DataType::kInt32, shape), kWholeMessage);
  EXPECT_NE(why.find("value 'x' of task 'conv'"), std::string::npos) << why;
  EXPECT_NE(why.find("its type is i32, the plan says f32"), std::string::npos) << why;
}

TEST(MessageTest, WrongShapeIsRefused) {
  std::vector<int64_t> shape = {1, 2, 4};
  std::string why = refusal(make_header(3, 7, DataType::kFloat, shape), kWholeMessage);
  EXPECT_NE(why.find("its shape is [1,2,4], the plan says [1,4,2]"), std::string::npos) << why;
}

TEST(MessageTest, ShortPayloadIsRefused) {
  std::vector<int64_t> shape = {1, 4, 2};
  std::string why = refusal(make_header(3, 7, DataType::kFloat, shape), kWholeMessage - 4);
  EXPECT_NE(why.find("holds " + std::to_string(kWholeMessage - 4) + " bytes"), std::string::npos)
      << why;
}

TEST(MessageTest, HeaderClaimingOtherSizeIsRefused) {
  std::vector<int64_t> shape = {1, 4, 2};
  MessageHeader header = make_header(3, 7, DataType::kFloat, shape);
  header.payload_bytes = 1 << 30;
  std::string why = refusal(header, kWholeMessage);
  EXPECT_NE(why.find("claims 1073741824 payload bytes"), std::string::npos) << why;
}

TEST(MessageTest, OtherChannelOrRunIsRefused) {
  std::vector<int64_t> shape = {1, 4, 2};
  EXPECT_NE(refusal(make_header(4, 7, DataType::kFloat, shape), kWholeMessage)
                .find("it is for channel 4"),
            std::string::npos);
  EXPECT_NE(refusal(make_header(3, 6, DataType::kFloat, shape), kWholeMessage)
                .find("it belongs to run 6"),
            std::string::npos);
}

TEST(MessageTest, GarbageWithoutHeaderIsRefused) {
  MessageHeader header;
  header.magic = 0;
  EXPECT_NE(refusal(header, kWholeMessage).find("no cleave message header"), std::string::npos);
  EXPECT_NE(refusal(header, 10).find("shorter than"), std::string::npos);
}

TEST(MessageTest, HeaderWithImpossibleRankIsRefused) {
  std::vector<int64_t> shape = {1, 4, 2};
  MessageHeader header = make_header(3, 7, DataType::kFloat, shape);
  header.rank = 99;
  EXPECT_NE(refusal(header, kWholeMessage).find("claims 99 dimensions"), std::string::npos);
}

TEST(MessageTest, TensorOfTooManyDimensionsCannotBeSent) {
  std::vector<int64_t> shape(9, 1);
  EXPECT_THROW(make_header(0, 0, DataType::kFloat, shape), Error);
}

TEST(FaultInjectionTest, MalformedVariableIsRefusedByField) {
  setenv("CLEAVE_FAULT", "rank=1,when=3,action=kill", 1);
  try {
    FaultInjection::from_environment(1);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad field 'when=3'"), std::string::npos) << e.what();
  }
  setenv("CLEAVE_FAULT", "rank=1,action=explode", 1);
  EXPECT_THROW(FaultInjection::from_environment(1), Error);
  unsetenv("CLEAVE_FAULT");
}

// Every field is read whole: "1abc" was rank 1, a trailing comma or a repeated key passed.
TEST(FaultInjectionTest, EveryFieldIsParsedStrictly) {
  const std::pair<const char*, const char*> cases[] = {
      {"rank=1abc,action=kill",
       "CLEAVE_FAULT 'rank=1abc,action=kill': rank: expected an integer "
       "from 0 to 2147483647, got '1abc'"},
      {"rank=1,run=2x,action=kill", "run: expected an integer from 0 to"},
      {"rank=1,action=kill,", "bad field ''"},
      {"rank=1,rank=0,action=kill", "rank is given twice"},
      {"run=1,action=kill", "needs rank and action"},
  };
  for (const auto& [text, message] : cases) {
    setenv("CLEAVE_FAULT", text, 1);
    try {
      FaultInjection::from_environment(1);
      ADD_FAILURE() << text << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
  unsetenv("CLEAVE_FAULT");
}

TEST(FaultInjectionTest, CorruptsOnlyTheNamedRankOnce) {
  setenv("CLEAVE_FAULT", "rank=1,run=2,action=bad-dtype", 1);
  FaultInjection other = FaultInjection::from_environment(0);
  FaultInjection named = FaultInjection::from_environment(1);
  unsetenv("CLEAVE_FAULT");
  std::vector<int64_t> shape = {2};
  MessageHeader early = make_header(0, 1, DataType::kFloat, shape);
  MessageHeader first = make_header(0, 2, DataType::kFloat, shape);
  MessageHeader second = make_header(0, 2, DataType::kFloat, shape);
  std::size_t bytes = 8;
  other.corrupt(first, bytes);
  EXPECT_EQ(first.dtype, static_cast<int32_t>(DataType::kFloat));
  named.corrupt(early, bytes);
  EXPECT_EQ(early.dtype, static_cast<int32_t>(DataType::kFloat));
  named.corrupt(first, bytes);
  named.corrupt(second, bytes);
  EXPECT_EQ(first.dtype, static_cast<int32_t>(DataType::kInt32));
  EXPECT_EQ(second.dtype, static_cast<int32_t>(DataType::kFloat));
}

// message=M lets M messages of run >= K pass before the one it corrupts.
TEST(FaultInjectionTest, MessageCountsTheMessagesLeftIntact) {
  setenv("CLEAVE_FAULT", "rank=1,run=1,action=short,message=2", 1);
  FaultInjection named = FaultInjection::from_environment(1);
  unsetenv("CLEAVE_FAULT");
  std::vector<int64_t> shape = {2};
  std::size_t cut[5] = {8, 8, 8, 8, 8};
  const int64_t runs[5] = {0, 1, 1, 2, 2};
  for (int i = 0; i < 5; ++i) {
    MessageHeader header = make_header(0, runs[i], DataType::kFloat, shape);
    named.corrupt(header, cut[i]);
  }
  EXPECT_EQ(cut[0], 8u);  // Run 0: before run 1.
  EXPECT_EQ(cut[1], 8u);
  EXPECT_EQ(cut[2], 8u);
  EXPECT_EQ(cut[3], 4u);  // The third message of run >= 1.
  EXPECT_EQ(cut[4], 8u);
  setenv("CLEAVE_FAULT", "rank=1,action=short,message=x", 1);
  EXPECT_THROW(FaultInjection::from_environment(1), Error);
  unsetenv("CLEAVE_FAULT");
}

}  // namespace
}  // namespace cleave
