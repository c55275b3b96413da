// Every collective x every type x every op x in/out of place x counts, for each algorithm
// family, against a serial reference computed here in double precision.
//
// Inputs are small integers (scaled by 1/8 for floating point) so that every partial sum
// and product is exact in every type: any summation order gives the exact result, and the
// only rounding left is the final one of kAvg, which is allowed one unit in the last place.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "harness/gtest.h"
#include "harness/values.h"

namespace zccl_harness {
namespace {

constexpr zcclRedOp_t kOps[] = {zcclSum, zcclProd, zcclMax, zcclMin, zcclAvg};
constexpr size_t kCounts[] = {0, 1, 2, 3, 13, 1021};
const char* const kOpNames[] = {"sum", "prod", "max", "min", "avg"};
const char* const kTypeNames[] = {"int8",   "uint8",   "int32",    "uint32",  "int64",
                                  "uint64", "float16", "bfloat16", "float32", "float64"};

bool isSigned(zcclDataType_t type) {
  return type == zcclInt8 || type == zcclInt32 || type == zcclInt64 || isFloat(type);
}

// The input value of element i on rank r.
double inputValue(zcclDataType_t type, zcclRedOp_t op, int rank, size_t i) {
  const uint64_t h = mix(static_cast<uint64_t>(type) * 8 + op, static_cast<uint64_t>(rank), i);
  if (op == zcclProd) {
    if (!isSigned(type)) return static_cast<double>(1 + h % 3);
    static const double factors[] = {1, 2, -1, -2, 0.5, -0.5};
    return factors[h % (isFloat(type) ? 6 : 4)];
  }
  if (!isSigned(type)) return static_cast<double>(h % 33);
  const double integer = static_cast<double>(static_cast<int64_t>(h % 129) - 64);
  return isFloat(type) ? integer / 8 : std::trunc(integer / 4);
}

// Counts elements of `got` that differ from `expected(i)`; reports the first.
template <typename Expected>
void expectElements(zcclDataType_t type, zcclRedOp_t op, const void* got, size_t count,
                    Expected expected, const std::string& what) {
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    const double want = expected(i);
    const double have = load(type, got, i);
    const double tolerance = (op == zcclAvg && isFloat(type)) ? ulp(type, want) : 0.0;
    if (!(std::fabs(have - want) <= tolerance)) {
      if (wrong == 0) {
        ADD_FAILURE() << what << ": element " << i << " is " << have << ", expected " << want;
      }
      ++wrong;
    }
  }
  EXPECT_EQ(wrong, 0u) << what;
}

class Collectives : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    comms_ = {{"auto", makeComm(zcclAlgoAuto)},
              {"ring", makeComm(zcclAlgoRing)},
              {"direct", makeComm(zcclAlgoDirect)},
              {"native", makeComm(zcclAlgoNative)}};
  }
  static void TearDownTestSuite() {
    for (auto& c : comms_) EXPECT_EQ(zcclCommDestroy(c.comm), zcclSuccess);
  }

  // One check: a collective's arguments, less the communicator. Its text names the check in
  // failures and keys the expected results that the communicators' runs of it share.
  struct Call {
    const char* collective;
    zcclDataType_t type;
    zcclRedOp_t op;
    size_t count;
    bool inPlace;
    int root = -1;

    std::string text() const {
      return std::string(collective) + " type=" + kTypeNames[type] + " op=" + kOpNames[op] +
             " count=" + std::to_string(count) + (inPlace ? " in-place" : " out-of-place") +
             (root >= 0 ? " root=" + std::to_string(root) : "");
    }
  };

  // Every rank's inputs for (type, op), read back by the expected values: encoded once per test
  // for every communicator, as at LargeBuffers' 16 MiB computing them element by element costs
  // more than the calls.
  struct Inputs {
    zcclDataType_t type;
    std::vector<const char*> ofRank;
    double at(int rank, size_t i) const { return load(type, ofRank[rank], i); }
  };

  // Rank `rank`'s inputs for (type, op), elements [0, elements) at least.
  const std::vector<char>& inputsOf(zcclDataType_t type, zcclRedOp_t op, int rank,
                                    size_t elements) {
    auto& bytes =
        inputs_[std::string(kTypeNames[type]) + " " + kOpNames[op] + " " + std::to_string(rank)];
    const size_t es = sizeOf(type);
    const size_t have = bytes.size() / es;
    if (have < elements) {
      bytes.resize(elements * es);
      for (size_t i = have; i < elements; ++i)
        store(type, bytes.data(), i, inputValue(type, op, rank, i));
    }
    return bytes;
  }

  Inputs inputs(zcclDataType_t type, zcclRedOp_t op, size_t elements) {
    Inputs in{type, {}};
    for (int r = 0; r < n_; ++r) in.ofRank.push_back(inputsOf(type, op, r, elements).data());
    return in;
  }

  // The reduction over ranks of element `index` of every rank's input.
  double reduced(const Inputs& in, zcclRedOp_t op, size_t index) const {
    double result = in.at(0, index);
    for (int r = 1; r < n_; ++r) result = foldReference(op, result, in.at(r, index));
    if (op != zcclAvg) return result;
    return isFloat(in.type) ? result / n_ : std::trunc(result / n_);
  }

  // Fills `buffer` with rank `rank`'s inputs for elements [0, count).
  void fill(zcclDataType_t type, zcclRedOp_t op, int rank, void* buffer, size_t count) {
    if (count != 0)
      std::memcpy(buffer, inputsOf(type, op, rank, count).data(), count * sizeOf(type));
  }

  // `got` holds expected(i) for i < elements. An exact result (any but a floating-point
  // average) is compared bytewise with its encoding; a rounded one, or one that differs,
  // element by element, which names the first wrong element.
  template <typename Expected>
  void expectResult(const NamedComm& c, const Call& call, const void* got, size_t elements,
                    Expected expected) {
    const std::string text = call.text();
    if (!(call.op == zcclAvg && isFloat(call.type)) && elements != 0) {
      auto [want, added] = results_.try_emplace(text);
      if (added) {
        want->second.resize(elements * sizeOf(call.type));
        for (size_t i = 0; i < elements; ++i) store(call.type, want->second.data(), i, expected(i));
      }
      if (std::memcmp(got, want->second.data(), want->second.size()) == 0) return;
    }
    expectElements(call.type, call.op, got, elements, expected,
                   text + " algo=" + c.name + " rank=" + std::to_string(rank_));
  }

  void checkAllGather(const NamedComm& c, zcclDataType_t type, size_t count, bool inPlace) {
    const size_t es = sizeOf(type);
    std::vector<char> send(count * es + 1), recv(count * n_ * es + 1);
    void* sendPtr = inPlace ? recv.data() + rank_ * count * es : send.data();
    fill(type, zcclSum, rank_, sendPtr, count);
    ASSERT_EQ(zcclAllGather(sendPtr, recv.data(), count, type, c.comm, nullptr), zcclSuccess)
        << zcclGetLastError(c.comm);
    const Inputs in = inputs(type, zcclSum, count);
    expectResult(c, {"all-gather", type, zcclSum, count, inPlace}, recv.data(), count * n_,
                 [&](size_t i) { return in.at(int(i / count), i % count); });
  }

  void checkReduceScatter(const NamedComm& c, zcclDataType_t type, zcclRedOp_t op, size_t count,
                          bool inPlace) {
    const size_t es = sizeOf(type);
    std::vector<char> send(count * n_ * es + 1), recv(count * es + 1);
    fill(type, op, rank_, send.data(), count * n_);
    void* recvPtr = inPlace ? send.data() + rank_ * count * es : recv.data();
    ASSERT_EQ(zcclReduceScatter(send.data(), recvPtr, count, type, op, c.comm, nullptr),
              zcclSuccess)
        << zcclGetLastError(c.comm);
    const Inputs in = inputs(type, op, count * n_);
    expectResult(c, {"reduce-scatter", type, op, count, inPlace}, recvPtr, count,
                 [&](size_t i) { return reduced(in, op, rank_ * count + i); });
  }

  void checkAllReduce(const NamedComm& c, zcclDataType_t type, zcclRedOp_t op, size_t count,
                      bool inPlace) {
    const size_t es = sizeOf(type);
    std::vector<char> send(count * es + 1), recv(count * es + 1);
    fill(type, op, rank_, send.data(), count);
    void* recvPtr = inPlace ? send.data() : recv.data();
    ASSERT_EQ(zcclAllReduce(send.data(), recvPtr, count, type, op, c.comm, nullptr), zcclSuccess)
        << zcclGetLastError(c.comm);
    const Inputs in = inputs(type, op, count);
    expectResult(c, {"all-reduce", type, op, count, inPlace}, recvPtr, count,
                 [&](size_t i) { return reduced(in, op, i); });
  }

  void checkBroadcast(const NamedComm& c, zcclDataType_t type, size_t count, bool inPlace,
                      int root) {
    const size_t es = sizeOf(type);
    std::vector<char> send(count * es + 1), recv(count * es + 1);
    void* sendPtr = inPlace ? recv.data() : send.data();
    if (rank_ == root) fill(type, zcclSum, rank_, sendPtr, count);
    ASSERT_EQ(zcclBroadcast(sendPtr, recv.data(), count, type, root, c.comm, nullptr), zcclSuccess)
        << zcclGetLastError(c.comm);
    const char* rootInputs = inputsOf(type, zcclSum, root, count).data();
    expectResult(c, {"broadcast", type, zcclSum, count, inPlace, root}, recv.data(), count,
                 [&](size_t i) { return load(type, rootInputs, i); });
  }

  void checkAllToAll(const NamedComm& c, zcclDataType_t type, size_t count, bool inPlace) {
    const size_t es = sizeOf(type);
    std::vector<char> send(count * n_ * es + 1), recv(count * n_ * es + 1);
    void* sendPtr = inPlace ? recv.data() : send.data();
    fill(type, zcclSum, rank_, sendPtr, count * n_);
    ASSERT_EQ(zcclAllToAll(sendPtr, recv.data(), count, type, c.comm, nullptr), zcclSuccess)
        << zcclGetLastError(c.comm);
    // Block j of my result is block `rank_` of rank j's input.
    const Inputs in = inputs(type, zcclSum, count * n_);
    expectResult(c, {"all-to-all", type, zcclSum, count, inPlace}, recv.data(), count * n_,
                 [&](size_t i) { return in.at(int(i / count), rank_ * count + i % count); });
  }

  // recv is significant at the root only: elsewhere the test passes NULL.
  void checkReduce(const NamedComm& c, zcclDataType_t type, zcclRedOp_t op, size_t count,
                   bool inPlace, int root) {
    const size_t es = sizeOf(type);
    std::vector<char> send(count * es + 1), recv(count * es + 1);
    fill(type, op, rank_, send.data(), count);
    void* recvPtr = rank_ != root ? nullptr : inPlace ? send.data() : recv.data();
    ASSERT_EQ(zcclReduce(send.data(), recvPtr, count, type, op, root, c.comm, nullptr), zcclSuccess)
        << zcclGetLastError(c.comm);
    if (rank_ != root) return;
    const Inputs in = inputs(type, op, count);
    expectResult(c, {"reduce", type, op, count, inPlace, root}, recvPtr, count,
                 [&](size_t i) { return reduced(in, op, i); });
  }

  void checkGather(const NamedComm& c, zcclDataType_t type, size_t count, bool inPlace, int root) {
    const size_t es = sizeOf(type);
    std::vector<char> send(count * es + 1), recv(count * n_ * es + 1);
    const bool rootInPlace = inPlace && rank_ == root;
    void* sendPtr = rootInPlace ? recv.data() + rank_ * count * es : send.data();
    fill(type, zcclSum, rank_, sendPtr, count);
    void* recvPtr = rank_ == root ? recv.data() : nullptr;
    ASSERT_EQ(zcclGather(sendPtr, recvPtr, count, type, root, c.comm, nullptr), zcclSuccess)
        << zcclGetLastError(c.comm);
    if (rank_ != root) return;
    const Inputs in = inputs(type, zcclSum, count);
    expectResult(c, {"gather", type, zcclSum, count, inPlace, root}, recv.data(), count * n_,
                 [&](size_t i) { return in.at(int(i / count), i % count); });
  }

  // Rank r's block of the root's buffer holds the root's inputs [r * count, (r+1) * count).
  void checkScatter(const NamedComm& c, zcclDataType_t type, size_t count, bool inPlace, int root) {
    const size_t es = sizeOf(type);
    std::vector<char> send(count * n_ * es + 1), recv(count * es + 1);
    if (rank_ == root) fill(type, zcclSum, root, send.data(), count * n_);
    const bool rootInPlace = inPlace && rank_ == root;
    void* recvPtr = rootInPlace ? send.data() + rank_ * count * es : recv.data();
    const void* sendPtr = rank_ == root ? send.data() : nullptr;
    ASSERT_EQ(zcclScatter(sendPtr, recvPtr, count, type, root, c.comm, nullptr), zcclSuccess)
        << zcclGetLastError(c.comm);
    const char* rootInputs = inputsOf(type, zcclSum, root, count * n_).data();
    expectResult(c, {"scatter", type, zcclSum, count, inPlace, root}, recvPtr, count,
                 [&](size_t i) { return load(type, rootInputs, rank_ * count + i); });
  }

  // Encoded inputs by type, op and rank, and expected results by check; LargeBuffers empties
  // them after each type.
  std::map<std::string, std::vector<char>> inputs_;
  std::map<std::string, std::vector<char>> results_;
  static std::vector<NamedComm> comms_;
  const int rank_ = worldRank();
  const int n_ = worldSize();
};

std::vector<NamedComm> Collectives::comms_;

constexpr zcclDataType_t kTypes[] = {zcclInt8,    zcclUint8,  zcclInt32,   zcclUint32,
                                     zcclInt64,   zcclUint64, zcclFloat16, zcclBfloat16,
                                     zcclFloat32, zcclFloat64};

TEST_F(Collectives, AllGather) {
  for (const auto& c : comms_)
    for (auto type : kTypes)
      for (size_t count : kCounts)
        for (bool inPlace : {false, true}) checkAllGather(c, type, count, inPlace);
}

TEST_F(Collectives, ReduceScatter) {
  for (const auto& c : comms_)
    for (auto type : kTypes)
      for (auto op : kOps)
        for (size_t count : kCounts)
          for (bool inPlace : {false, true}) checkReduceScatter(c, type, op, count, inPlace);
}

TEST_F(Collectives, AllReduce) {
  for (const auto& c : comms_)
    for (auto type : kTypes)
      for (auto op : kOps)
        for (size_t count : kCounts)
          for (bool inPlace : {false, true}) checkAllReduce(c, type, op, count, inPlace);
}

TEST_F(Collectives, Broadcast) {
  for (const auto& c : comms_)
    for (auto type : kTypes)
      for (size_t count : kCounts)
        for (bool inPlace : {false, true})
          for (int root : {0, n_ - 1}) checkBroadcast(c, type, count, inPlace, root);
}

TEST_F(Collectives, AllToAll) {
  for (const auto& c : comms_)
    for (auto type : kTypes)
      for (size_t count : kCounts)
        for (bool inPlace : {false, true}) checkAllToAll(c, type, count, inPlace);
}

TEST_F(Collectives, Reduce) {
  for (const auto& c : comms_)
    for (auto type : kTypes)
      for (auto op : kOps)
        for (size_t count : kCounts)
          for (bool inPlace : {false, true})
            for (int root : {0, n_ - 1}) checkReduce(c, type, op, count, inPlace, root);
}

TEST_F(Collectives, Gather) {
  for (const auto& c : comms_)
    for (auto type : kTypes)
      for (size_t count : kCounts)
        for (bool inPlace : {false, true})
          for (int root : {0, n_ - 1}) checkGather(c, type, count, inPlace, root);
}

TEST_F(Collectives, Scatter) {
  for (const auto& c : comms_)
    for (auto type : kTypes)
      for (size_t count : kCounts)
        for (bool inPlace : {false, true})
          for (int root : {0, n_ - 1}) checkScatter(c, type, count, inPlace, root);
}

// At least 16 MiB per buffer, with counts that divide by nothing, for every type; zccl's
// own algorithms and the native one.
TEST_F(Collectives, LargeBuffers) {
  constexpr size_t kBytes = size_t{16} << 20;
  for (auto type : kTypes) {
    for (const auto& c : {comms_[0], comms_[3]}) {
      const size_t count = kBytes / sizeOf(type) + 1;
      const size_t perRank = count / n_ + 1;
      checkAllReduce(c, type, zcclSum, count, false);
      checkReduceScatter(c, type, zcclMax, perRank, true);
      checkAllGather(c, type, perRank, false);
      checkBroadcast(c, type, count, true, n_ - 1);
      checkAllToAll(c, type, perRank, false);
      checkReduce(c, type, zcclSum, count, false, n_ - 1);
      checkGather(c, type, perRank, true, 0);
      checkScatter(c, type, perRank, false, n_ - 1);
    }
    inputs_.clear();
    results_.clear();
  }
}

// Point-to-point in a group: a ring exchange plus a message to self.
TEST_F(Collectives, SendRecvRing) {
  for (auto type : kTypes) {
    for (size_t count : kCounts) {
      const size_t es = sizeOf(type);
      std::vector<char> out(count * es + 1), fromPrev(count * es + 1), fromSelf(count * es + 1);
      fill(type, zcclSum, rank_, out.data(), count);
      const int next = (rank_ + 1) % n_;
      const int prev = (rank_ + n_ - 1) % n_;
      zcclComm_t comm = comms_[0].comm;
      ASSERT_EQ(zcclGroupStart(), zcclSuccess);
      ASSERT_EQ(zcclSend(out.data(), count, type, next, comm, nullptr), zcclSuccess);
      ASSERT_EQ(zcclRecv(fromPrev.data(), count, type, prev, comm, nullptr), zcclSuccess);
      ASSERT_EQ(zcclSend(out.data(), count, type, rank_, comm, nullptr), zcclSuccess);
      ASSERT_EQ(zcclRecv(fromSelf.data(), count, type, rank_, comm, nullptr), zcclSuccess);
      ASSERT_EQ(zcclGroupEnd(), zcclSuccess) << zcclGetLastError(comm);
      const std::string what =
          std::string("send/recv type=") + kTypeNames[type] + " count=" + std::to_string(count);
      expectElements(
          type, zcclSum, fromPrev.data(), count,
          [&](size_t i) { return inputValue(type, zcclSum, prev, i); }, what);
      expectElements(
          type, zcclSum, fromSelf.data(), count,
          [&](size_t i) { return inputValue(type, zcclSum, rank_, i); }, what + " self");
    }
  }
}

// Receives from any source: rank 0 takes every other rank's messages in whatever order they
// come; each names its sender and its place in that sender's sequence, which must agree with
// the source reported and arrive in the order sent.
TEST_F(Collectives, RecvFromAnyNamesEachSenderInItsOrder) {
  constexpr int kPerSender = 3;
  constexpr size_t kCount = 1021;
  zcclComm_t comm = comms_[0].comm;
  std::vector<int32_t> message(kCount);
  if (rank_ != 0) {
    for (int k = 0; k < kPerSender; ++k) {
      for (size_t i = 0; i < kCount; ++i) message[i] = rank_ * 1000 + k + static_cast<int32_t>(i);
      ASSERT_EQ(zcclSend(message.data(), kCount, zcclInt32, 0, comm, nullptr), zcclSuccess)
          << zcclGetLastError(comm);
    }
    return;
  }
  std::vector<int> nextFrom(static_cast<size_t>(n_), 0);
  for (int m = 0; m < (n_ - 1) * kPerSender; ++m) {
    int source = -1;
    ASSERT_EQ(zcclRecvFromAny(message.data(), kCount, zcclInt32, &source, comm), zcclSuccess)
        << zcclGetLastError(comm);
    ASSERT_TRUE(source > 0 && source < n_) << "source " << source;
    const int k = nextFrom[static_cast<size_t>(source)]++;
    size_t wrong = 0;
    for (size_t i = 0; i < kCount; ++i) {
      wrong += message[i] != source * 1000 + k + static_cast<int32_t>(i) ? 1 : 0;
    }
    EXPECT_EQ(wrong, 0u) << "message " << k << " said to come from rank " << source;
  }
  for (int r = 1; r < n_; ++r) EXPECT_EQ(nextFrom[static_cast<size_t>(r)], kPerSender);
}

}  // namespace
}  // namespace zccl_harness
