// The simulated transport (sim_transport.h).
#include "transport/sim/sim_transport.h"

#include <time.h>

#include <algorithm>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "transport/ticket_book.h"

namespace zccl {
namespace {

// The thread's CPU time (precise, unlike getrusage's user time, which Linux keeps per tick).
double threadCpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

class SimTransport final : public Transport {
 public:
  SimTransport(std::shared_ptr<SimFabric> fabric, uint64_t context, std::vector<int> members,
               int me)
      : fabric_(std::move(fabric)), context_(context), members_(std::move(members)), me_(me) {
    traffic_.assign(members_.size(), PeerTraffic{});
    lastCpu_ = threadCpuSeconds();
  }

  int rank() const override { return me_; }
  int size() const override { return static_cast<int>(members_.size()); }
  int maxTag() const override { return (1 << 30) - 1; }

  Status postSend(const void* data, size_t bytes, int peer, int tag, Ticket* ticket) override {
    ZCCL_CHECK(open(peer, TicketBook::Kind::kSend, ticket));
    chargeCompute();
    if (bytes > 0) {
      auto departure = std::make_shared<SimFabric::Event>();
      fabric_->send(context_, global(me_), global(peer), tag, data, bytes, departure);
      countSend(peer, bytes, 1);
      operations_.push_back({nullptr, std::move(departure), peer, tag});
    }
    tickets_.close(*ticket, operations_.size());
    resumeCompute();
    return Status::kSuccess;
  }

  Status postRecv(void* data, size_t bytes, int peer, int tag, Ticket* ticket) override {
    ZCCL_CHECK(open(peer, TicketBook::Kind::kReceive, ticket));
    chargeCompute();
    if (bytes > 0) {
      auto receive = std::make_unique<SimFabric::Receive>();
      receive->buffer = data;
      receive->bytes = bytes;
      fabric_->post(context_, global(me_), global(peer), tag, receive.get());
      operations_.push_back({std::move(receive), nullptr, peer, tag});
    }
    tickets_.close(*ticket, operations_.size());
    resumeCompute();
    return Status::kSuccess;
  }

  Status wait(Ticket ticket) override {
    size_t first = 0, last = 0;
    ZCCL_CHECK(tickets_.range(ticket, &first, &last));
    return complete(first, last);
  }

  Status waitAll() override {
    const Status status = complete(0, operations_.size());
    if (status == Status::kSuccess) {
      operations_.clear();
      tickets_.clear();
    }
    return status;
  }

  Status split(int color, int key, std::unique_ptr<Transport>* out) override {
    const int mine[2] = {color, key};
    std::vector<int> all(2 * members_.size());
    ZCCL_CHECK(allGatherControl(mine, sizeof(mine), all.data()));
    const uint64_t round = splits_++;
    out->reset();
    if (color < 0) return Status::kSuccess;
    std::vector<std::pair<int, int>> chosen;  // (key, member)
    for (int m = 0; m < size(); ++m) {
      if (all[2 * m] == color) chosen.emplace_back(all[2 * m + 1], m);
    }
    std::sort(chosen.begin(), chosen.end());
    std::vector<int> members;
    int me = 0;
    for (const auto& [k, m] : chosen) {
      if (m == me_) me = static_cast<int>(members.size());
      members.push_back(global(m));
    }
    *out = std::make_unique<SimTransport>(fabric_, fabric_->childContext(context_, round, color),
                                          std::move(members), me);
    return Status::kSuccess;
  }

  Status allGatherControl(const void* mine, size_t bytes, void* all) override {
    ZCCL_CHECK(checkUsable());
    chargeCompute();
    const bool done =
        fabric_->exchangeControl(context_, controls_++, members_, me_, mine, bytes, all);
    resumeCompute();
    if (!done) return timedOut(fabric_->timeoutSeconds(), "a control exchange");
    return Status::kSuccess;
  }

  bool abandon() override {
    for (Operation& op : operations_) {
      if (op.receive != nullptr) {
        fabric_->cancel(context_, global(me_), global(op.peer), op.tag, op.receive.get());
      } else {
        fabric_->abandonSend(op.departure.get());
      }
    }
    operations_.clear();
    tickets_.clear();
    markBroken();
    return true;
  }

  void compute(double seconds) {
    chargeCompute();
    fabric_->advance(global(me_), seconds);
    resumeCompute();
  }

  void runKernel(double seconds) {
    chargeCompute();
    fabric_->runKernel(global(me_), seconds);
    resumeCompute();
  }

  double runBeside(double from, double seconds) {
    chargeCompute();
    const double done = fabric_->runBeside(global(me_), from, seconds);
    resumeCompute();
    return done;
  }

  double clock() {
    chargeCompute();
    const double now = fabric_->clock(global(me_));
    resumeCompute();
    return now;
  }

 private:
  struct Operation {
    std::unique_ptr<SimFabric::Receive> receive;  // a receive's
    std::shared_ptr<SimFabric::Event> departure;  // a send's (the fabric may complete it later)
    int peer;
    int tag;
    SimFabric::Event& event() const { return receive != nullptr ? *receive : *departure; }
  };

  int global(int member) const { return members_[static_cast<size_t>(member)]; }

  Status open(int peer, TicketBook::Kind kind, Ticket* ticket) {
    return tickets_.open(*this, peer, kind, operations_.size(), ticket);
  }

  // The CPU time this thread spent since the transport last returned is the rank's compute.
  // (A call queued on the communicator's own thread starts counting there afresh.)
  void chargeCompute() {
    if (!countsCpu_) return;
    const double now = threadCpuSeconds();
    if (std::this_thread::get_id() == cpuThread_) {
      fabric_->advance(global(me_), (now - lastCpu_) * fabric_->machine().computeScale);
    }
    lastCpu_ = now;
    cpuThread_ = std::this_thread::get_id();
  }
  void resumeCompute() {
    if (!countsCpu_) return;
    lastCpu_ = threadCpuSeconds();
    cpuThread_ = std::this_thread::get_id();
  }

  Status complete(size_t first, size_t last) {
    ZCCL_CHECK(checkUsable());
    chargeCompute();
    double finished = 0;  // the latest of its operations; the clock moves on to it
    for (size_t i = first; i < last; ++i) {
      Operation& op = operations_[i];
      if (!fabric_->waitFor(global(me_), op.event(), [&] { return abortRequested(); })) {
        const std::string pending = tickets_.pendingWork(
            *this, first, last, [&](size_t j) { return !operations_[j].event().done; });
        abandon();
        resumeCompute();
        if (abortRequested()) {
          return fail(Status::kRemoteError, "rank %d: the communicator was aborted while waiting",
                      peerRank(me_));
        }
        return timedOut(fabric_->timeoutSeconds(), pending);
      }
      if (op.receive != nullptr && op.receive->truncated) {
        abandon();
        resumeCompute();
        return fail(Status::kInvalidUsage,
                    "simulated transport, with rank %d: a peer sent more bytes than this rank "
                    "expected, so the ranks' calls do not match",
                    peerRank(op.peer));
      }
      finished = std::max(finished, op.event().at);
    }
    fabric_->advanceTo(global(me_), finished);
    resumeCompute();
    return Status::kSuccess;
  }

  std::shared_ptr<SimFabric> fabric_;
  const uint64_t context_;
  const std::vector<int> members_;  // global ranks
  const int me_;
  TicketBook tickets_;
  std::vector<Operation> operations_;
  uint64_t splits_ = 0;
  uint64_t controls_ = 0;
  const bool countsCpu_ = fabric_->machine().computeScale != 0;
  double lastCpu_ = 0;
  std::thread::id cpuThread_ = std::this_thread::get_id();
};

}  // namespace

std::unique_ptr<Transport> createSimTransport(std::shared_ptr<SimFabric> fabric, int rank) {
  std::vector<int> members(static_cast<size_t>(fabric->ranks()));
  for (int r = 0; r < fabric->ranks(); ++r) members[static_cast<size_t>(r)] = r;
  return std::make_unique<SimTransport>(std::move(fabric), 0, std::move(members), rank);
}

double simulatedClock(Transport& transport) {
  auto* sim = dynamic_cast<SimTransport*>(&transport);
  return sim != nullptr ? sim->clock() : -1;
}

void simulateCompute(Transport& transport, double seconds) {
  auto* sim = dynamic_cast<SimTransport*>(&transport);
  if (sim != nullptr) sim->compute(seconds);
}

void simulateKernel(Transport& transport, double seconds) {
  auto* sim = dynamic_cast<SimTransport*>(&transport);
  if (sim != nullptr) sim->runKernel(seconds);
}

double simulateBeside(Transport& transport, double from, double seconds) {
  auto* sim = dynamic_cast<SimTransport*>(&transport);
  return sim != nullptr ? sim->runBeside(from, seconds) : -1;
}

}  // namespace zccl
