// How a wait over UCX sleeps once ranks outnumber the cores: on the worker's event, not for a
// fixed pause. White-box (the communicator's own transport), under zcclrun at 2 ranks.
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

#include "core/comm.h"
#include "harness/gtest.h"
#include "transport/transport.h"

namespace zccl_harness {
namespace {

using Outcome = zccl::Transport::SleepOutcome;
using zccl::Status;

// Far beyond any wait here: a sleep that reaches it was not woken.
constexpr double kBoundSeconds = 60;
constexpr int kTag = 7;

// Sleeps on `t` until an event or the bound ends a sleep (work found first is done first).
Outcome sleepPastWork(const zccl::Transport& t, double bound) {
  Outcome outcome = Outcome::kFoundWork;
  while (outcome == Outcome::kFoundWork) outcome = t.sleepUntilActivity(bound);
  return outcome;
}

TEST(UcxWait, ASleepingWaitWakesWhenItsMessageArrives) {
  zcclComm_t comm = makeComm(zcclAlgoAuto);
  ASSERT_NE(comm, nullptr);
  zccl::Transport& t = *comm->transport;
  std::vector<int> message(1 << 16);
  zccl::Ticket ticket = 0;
  if (worldRank() == 0) {
    ASSERT_EQ(t.postRecv(message.data(), message.size() * sizeof(int), 1, kTag, &ticket),
              Status::kSuccess);
    barrier();  // the sender starts once this rank is about to sleep
    EXPECT_EQ(sleepPastWork(t, kBoundSeconds), Outcome::kWoken);
    ASSERT_EQ(t.wait(ticket), Status::kSuccess) << zccl::lastThreadError();
    for (size_t i = 0; i < message.size(); ++i) ASSERT_EQ(message[i], static_cast<int>(i) * 3);
  } else {
    barrier();
    if (worldRank() == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the receiver sleeps
      for (size_t i = 0; i < message.size(); ++i) message[i] = static_cast<int>(i) * 3;
      ASSERT_EQ(t.postSend(message.data(), message.size() * sizeof(int), 0, kTag, &ticket),
                Status::kSuccess);
      ASSERT_EQ(t.wait(ticket), Status::kSuccess) << zccl::lastThreadError();
    }
  }
  barrier();
  EXPECT_EQ(zcclCommDestroy(comm), zcclSuccess);
}

TEST(UcxWait, ASleepWithNothingToComeEndsAtItsBound) {
  zcclComm_t comm = makeComm(zcclAlgoAuto);
  ASSERT_NE(comm, nullptr);
  // An event of the engine's own (a keep-alive) may end a sleep early; nothing ends them all.
  Outcome outcome = Outcome::kWoken;
  for (int tries = 0; tries < 100 && outcome != Outcome::kBoundReached; ++tries) {
    outcome = sleepPastWork(*comm->transport, 0.01);
  }
  EXPECT_EQ(outcome, Outcome::kBoundReached);
  barrier();
  EXPECT_EQ(zcclCommDestroy(comm), zcclSuccess);
}

}  // namespace
}  // namespace zccl_harness
