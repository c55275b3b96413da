// The rendezvous through a framework's key-value store (PyTorch hands c10d's): every rank
// writes its contribution under a key of its own and reads everyone's once all are there.
// Each rank also claims its number with a random token, so that two ranks claiming the same
// one are told so instead of mixing their data.
#include <random>

#include "bootstrap/bootstrap.h"

namespace zccl {
namespace {

class StoreBootstrap final : public Bootstrap {
 public:
  StoreBootstrap(KeyValueStore* store, std::string prefix, int rank, int nranks, double timeout)
      : store_(store),
        prefix_(std::move(prefix)),
        rank_(rank),
        nranks_(nranks),
        timeout_(timeout) {}

  int rank() const override { return rank_; }
  int size() const override { return nranks_; }

  // Round 0: who is here, with how many ranks in mind and which token.
  Status introduce() {
    std::random_device device;
    const std::string token = std::to_string(device()) + "-" + std::to_string(device());
    const std::string mine = std::to_string(nranks_) + " " + token;
    std::vector<std::string> all;
    ZCCL_CHECK(exchange("hello", mine, &all));
    if (all[static_cast<size_t>(rank_)] != mine) {
      return fail(Status::kInvalidUsage,
                  "rank %d was claimed twice through the store (prefix %s): another process "
                  "uses the same rank number",
                  rank_, prefix_.c_str());
    }
    for (int r = 0; r < nranks_; ++r) {
      const std::string& theirs = all[static_cast<size_t>(r)];
      const std::string size = theirs.substr(0, theirs.find(' '));
      if (size != std::to_string(nranks_)) {
        return fail(Status::kInvalidUsage, "nranks differ: rank %d says %s, rank %d says %d", r,
                    size.c_str(), rank_, nranks_);
      }
    }
    return Status::kSuccess;
  }

  Status allGather(const void* mine, size_t bytes, void* all) override {
    std::vector<std::string> values;
    ZCCL_CHECK(exchange(std::to_string(round_++),
                        std::string(static_cast<const char*>(mine), bytes), &values));
    for (int r = 0; r < nranks_; ++r) {
      const std::string& value = values[static_cast<size_t>(r)];
      if (value.size() != bytes) {
        return fail(Status::kInvalidUsage,
                    "bootstrap: rank %d contributed %zu bytes to an exchange where rank %d "
                    "contributed %zu",
                    r, value.size(), rank_, bytes);
      }
      std::copy(value.begin(), value.end(), static_cast<char*>(all) + r * bytes);
    }
    return Status::kSuccess;
  }

 private:
  std::string key(const std::string& round, int rank) const {
    return prefix_ + "/" + round + "/" + std::to_string(rank);
  }

  Status exchange(const std::string& round, const std::string& mine,
                  std::vector<std::string>* all) {
    ZCCL_CHECK(store_->set(key(round, rank_), mine));
    std::vector<std::string> keys;
    for (int r = 0; r < nranks_; ++r) keys.push_back(key(round, r));
    const Status waited = store_->wait(keys, timeout_);
    if (waited == Status::kTimeout) {
      std::string missing;
      for (int r = 0; r < nranks_; ++r) {
        std::string value;
        if (store_->wait({keys[static_cast<size_t>(r)]}, 0.001) != Status::kSuccess) {
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        }
      }
      return fail(Status::kTimeout,
                  "rank(s) %s of %d did not arrive in the store (prefix %s) within %g s "
                  "(ZCCL_BOOTSTRAP_TIMEOUT_S / ZCCL_TIMEOUT_S)",
                  missing.c_str(), nranks_, prefix_.c_str(), timeout_);
    }
    ZCCL_CHECK(waited);
    all->resize(static_cast<size_t>(nranks_));
    for (int r = 0; r < nranks_; ++r)
      ZCCL_CHECK(store_->get(keys[static_cast<size_t>(r)], &(*all)[r]));
    return Status::kSuccess;
  }

  KeyValueStore* store_;
  std::string prefix_;
  int rank_;
  int nranks_;
  double timeout_;
  int round_ = 0;
};

}  // namespace

Status storeBootstrap(KeyValueStore* store, const std::string& prefix, int rank, int nranks,
                      double timeoutSeconds, std::unique_ptr<Bootstrap>* out) {
  if (nranks <= 0) return fail(Status::kInvalidArgument, "nranks=%d: expected > 0", nranks);
  if (rank < 0 || rank >= nranks) {
    return fail(Status::kInvalidArgument, "rank=%d: outside [0, nranks=%d)", rank, nranks);
  }
  auto bootstrap = std::make_unique<StoreBootstrap>(store, prefix, rank, nranks, timeoutSeconds);
  ZCCL_CHECK(bootstrap->introduce());
  *out = std::move(bootstrap);
  return Status::kSuccess;
}

}  // namespace zccl
