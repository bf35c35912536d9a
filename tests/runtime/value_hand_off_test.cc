// The in-process value hand-off: ready per run, time-outs, stops, and wake-ups across threads.
#include "runtime/value_hand_off.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace cleave {
namespace {

std::vector<Tensor> one_tensor() {
  return {Tensor::allocate(DataType::kFloat, {4})};
}

TEST(InProcessHandOff, APublishedValueIsReadInPlace) {
  InProcessHandOff hand_off(2);
  const std::vector<Tensor> outputs = one_tensor();
  hand_off.begin_run(1);
  hand_off.publish(1, 1, outputs);
  const std::vector<Tensor>* read = nullptr;
  EXPECT_EQ(hand_off.await(1, 1, 1.0, &read), ValueHandOff::Wait::kReady);
  EXPECT_EQ(read, &outputs);
}

TEST(InProcessHandOff, AValueOfAnEarlierRunIsNotReadyInTheNextOne) {
  InProcessHandOff hand_off(1);
  const std::vector<Tensor> outputs = one_tensor();
  hand_off.publish(0, 1, outputs);
  hand_off.begin_run(2);
  const std::vector<Tensor>* read = nullptr;
  EXPECT_EQ(hand_off.await(0, 2, 0.01, &read), ValueHandOff::Wait::kTimedOut);
  EXPECT_EQ(read, nullptr);
}

TEST(InProcessHandOff, StopWakesASleepingReaderUntilTheNextRun) {
  InProcessHandOff hand_off(1);
  hand_off.begin_run(1);
  ValueHandOff::Wait result = ValueHandOff::Wait::kReady;
  std::thread reader([&] {
    const std::vector<Tensor>* read = nullptr;
    result = hand_off.await(0, 1, 30.0, &read);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  hand_off.stop();
  reader.join();
  EXPECT_EQ(result, ValueHandOff::Wait::kStopped);
  const std::vector<Tensor> outputs = one_tensor();
  hand_off.begin_run(2);
  hand_off.publish(0, 2, outputs);
  const std::vector<Tensor>* read = nullptr;
  EXPECT_EQ(hand_off.await(0, 2, 1.0, &read), ValueHandOff::Wait::kReady);
}

// The reader sleeps (20 ms is far past the spin); publishing must wake it long before its
// 30 s deadline.
TEST(InProcessHandOff, PublishingWakesASleepingReader) {
  InProcessHandOff hand_off(3);
  hand_off.begin_run(1);
  const std::vector<Tensor> outputs = one_tensor();
  ValueHandOff::Wait result = ValueHandOff::Wait::kStopped;
  const std::vector<Tensor>* read = nullptr;
  const auto start = std::chrono::steady_clock::now();
  std::thread reader([&] { result = hand_off.await(2, 1, 30.0, &read); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  hand_off.publish(2, 1, outputs);
  reader.join();
  EXPECT_EQ(result, ValueHandOff::Wait::kReady);
  EXPECT_EQ(read, &outputs);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
}

}  // namespace
}  // namespace cleave
