// Simulated jobs (sim_comms.h).
#include "core/sim_comms.h"

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "core/comm.h"
#include "core/config.h"
#include "transport/sim/sim_transport.h"

namespace zccl {

namespace {

// The host's kernels, each call priced in the rank's virtual time by the bytes it touches over
// its family's rate on the machine: what a GPU's memory-bound kernels (or a host's cores) take.
class PricedKernels final : public Kernels {
 public:
  using Family = SimMachine::KernelFamily;

  PricedKernels(Transport* transport, const SimMachine& machine)
      : transport_(transport), machine_(machine) {}

  MemoryKind memory() const override { return inner_.memory(); }
  Status copy(void* to, const void* from, size_t bytes) override {
    charge(Family::kCopy, bytes);
    return inner_.copy(to, from, bytes);
  }
  Status zeroFloats(float* data, size_t count) override {
    charge(Family::kAccumulate, count * sizeof(float));
    return inner_.zeroFloats(data, count);
  }
  Status reduceInto(void* inout, const void* in, size_t count, DataType type, RedOp op) override {
    charge(Family::kReduce, count * elementSize(type));
    return inner_.reduceInto(inout, in, count, type, op);
  }
  Status reduceOrdered(void* out, const void* const* inputs, int numInputs, size_t count,
                       DataType type, RedOp op) override {
    charge(Family::kReduce, static_cast<size_t>(numInputs) * count * elementSize(type));
    return inner_.reduceOrdered(out, inputs, numInputs, count, type, op);
  }
  Status divideByCount(void* data, size_t count, DataType type, int divisor) override {
    charge(Family::kReduce, count * elementSize(type));
    return inner_.divideByCount(data, count, type, divisor);
  }
  Status quantize(const void* in, DataType type, size_t count, const QuantParams& params, void* out,
                  size_t capacity) override {
    charge(Family::kQuantize, count * elementSize(type));
    return inner_.quantize(in, type, count, params, out, capacity);
  }
  Status dequantize(const void* message, size_t bytes, const QuantParams& format, void* out,
                    DataType type, size_t count) override {
    charge(Family::kDequantize, count * elementSize(type));
    return inner_.dequantize(message, bytes, format, out, type, count);
  }
  Status dequantizeAccumulate(const void* message, size_t bytes, const QuantParams& format,
                              float* accumulator, size_t count) override {
    charge(Family::kDequantize, count * sizeof(float));
    return inner_.dequantizeAccumulate(message, bytes, format, accumulator, count);
  }
  Status accumulateAsFloat(const void* x, DataType type, size_t count,
                           float* accumulator) override {
    charge(Family::kAccumulate, count * sizeof(float));
    return inner_.accumulateAsFloat(x, type, count, accumulator);
  }
  Status convertToFloat(const void* x, DataType type, size_t count, float* out) override {
    charge(Family::kAccumulate, count * sizeof(float));
    return inner_.convertToFloat(x, type, count, out);
  }
  Status storeFloatAs(float* values, size_t count, int divisor, DataType type, void* out) override {
    charge(Family::kAccumulate, count * sizeof(float));
    return inner_.storeFloatAs(values, count, divisor, type, out);
  }
  Status negateFloats(float* data, size_t count) override {
    charge(Family::kAccumulate, count * sizeof(float));
    return inner_.negateFloats(data, count);
  }
  // The host's fused kernels, each priced as the passes over memory it makes.
  Status storeSumAs(const void* x, DataType type, size_t count, float* addend, void* out,
                    void* copy) override {
    charge(Family::kAccumulate, count * sizeof(float));
    return inner_.storeSumAs(x, type, count, addend, out, copy);
  }
  Status dequantizeOnto(const void* message, size_t bytes, const QuantParams& format, size_t count,
                        const SumTarget& target, float* work) override {
    charge(Family::kDequantize, count * elementSize(target.type));
    charge(Family::kAccumulate, count * sizeof(float));  // the sum in float32, as storeSumAs
    return inner_.dequantizeOnto(message, bytes, format, count, target, work);
  }
  Status quantizeWithFeedback(const void* x, DataType type, size_t count, const QuantParams& params,
                              void* message, size_t capacity, const Residuals& residual,
                              float* work) override {
    charge(Family::kAccumulate, 2 * residualBytes(residual.type, count, 0));  // read, then kept
    charge(Family::kQuantize, count * sizeof(float));
    charge(Family::kDequantize, count * sizeof(float));
    return inner_.quantizeWithFeedback(x, type, count, params, message, capacity, residual, work);
  }
  size_t pipelineElements() const override { return inner_.pipelineElements(); }

 private:
  void charge(Family family, size_t bytes) {
    simulateKernel(*transport_, static_cast<double>(bytes) / machine_.kernelBytesPerSecond(family));
  }

  Kernels& inner_ = zccl::hostKernels();
  Transport* transport_;
  const SimMachine& machine_;
};

// GPU ranks plan with their kernels' rates, as a GPU job's device engine measures them; CPU
// ranks with this host's, which the communicator measured.
void showKernelRates(const SimMachine& machine, ClusterModel* cluster) {
  if (machine.ranksOnCpus()) return;
  using Family = SimMachine::KernelFamily;
  const double quantize = machine.kernelBytesPerSecond(Family::kQuantize);
  // The simulated kernels price a smoothed quantization as a plain one: a rotation too fast
  // to tell apart, as a device's measurement would see it.
  cluster->kernels =
      KernelRates{quantize, machine.kernelBytesPerSecond(Family::kDequantize),
                  machine.kernelBytesPerSecond(Family::kReduce), quantize * kFastestSmoothing};
}

// A job's planner prices the rendezvous of the transport it runs over; here, the machine's.
void showSendProtocol(const SimMachine& machine, ClusterModel* cluster) {
  cluster->intra.rendezvousBytes = cluster->inter.rendezvousBytes = machine.rendezvousBytes;
}

}  // namespace

NodeTopology modelledTopology(const SimMachine& machine) {
  NodeTopology links;
  links.source = "simulated: " + describeSimMachine(machine);
  // CPU ranks share a host's memory, as a job of processes on one host does.
  links.intraNode = machine.ranksOnCpus() ? LinkClass::kShm : LinkClass::kNvlink;
  links.intraNodeGBps = machine.intraGBps;
  links.interNode = machine.nicGbps >= 100 ? LinkClass::kInfiniband : LinkClass::kEthernet;
  links.interNodeGBps = machine.nicGbps / 8;
  links.interNodeRails = machine.nicsPerNode;
  applyFabricShape({machine.nodesPerLeaf, machine.oversubscription, machine.leavesPerPod,
                    machine.podOversubscription},
                   &links);
  return links;
}

Status runSimulated(const std::shared_ptr<SimFabric>& fabric, const zcclConfig* config,
                    const SimBody& body) {
  CommConfig resolved;
  ZCCL_CHECK(resolveConfig(config, &resolved));
  resolved.ranksPerNode = fabric->machine().gpusPerNode;
  resolved.timeoutSeconds = fabric->timeoutSeconds();
  resolved.tunePlans = false;  // timing candidates would time this host, not the model
  const auto links = std::make_shared<const NodeTopology>(modelledTopology(fabric->machine()));
  const int ranks = fabric->ranks();
  std::vector<Status> results(static_cast<size_t>(ranks), Status::kSuccess);
  std::vector<std::string> errors(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(ranks));
  fabric->runInOrder();
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      Status& result = results[static_cast<size_t>(r)];
      zcclComm* comm = nullptr;
      result = createComm(createSimTransport(fabric, r), resolved, Status::kSuccess, &comm, links);
      std::unique_ptr<PricedKernels> kernels;
      if (result == Status::kSuccess) {
        kernels = std::make_unique<PricedKernels>(comm->transport.get(), fabric->machine());
        showKernelRates(fabric->machine(), &comm->cluster);
        showSendProtocol(fabric->machine(), &comm->cluster);
        comm->simulatedKernels = kernels.get();
        result = static_cast<Status>(body(r, comm));
        if (result != Status::kSuccess) errors[static_cast<size_t>(r)] = zcclGetLastError(comm);
        const zcclResult_t destroyed = zcclCommDestroy(comm);
        if (result == Status::kSuccess) result = static_cast<Status>(destroyed);
      }
      if (result != Status::kSuccess && errors[static_cast<size_t>(r)].empty()) {
        errors[static_cast<size_t>(r)] = lastThreadError();
      }
      fabric->retire(r);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int r = 0; r < ranks; ++r) {
    if (results[static_cast<size_t>(r)] != Status::kSuccess) {
      return fail(results[static_cast<size_t>(r)], "simulated rank %d: %s", r,
                  errors[static_cast<size_t>(r)].c_str());
    }
  }
  return Status::kSuccess;
}

double simulatedSeconds(zcclComm_t comm) { return simulatedClock(*comm->transport); }

void simulateCompute(zcclComm_t comm, double seconds) {
  simulateCompute(*comm->transport, seconds);
}

double simulateComputeBeside(zcclComm_t comm, double from, double seconds) {
  return simulateBeside(*comm->transport, from, seconds);
}

}  // namespace zccl
