// zcclFeedbackCreate, zcclReferenceCreate and their kin: the state quantized collectives keep
// between calls (core/call_state.h).
#include <algorithm>

#include "core/call_state.h"
#include "core/guarded.h"
#include "core/validate.h"

using zccl::Status;

namespace zccl {
namespace {

Status checkStateType(zcclDataType_t datatype) {
  ZCCL_CHECK(checkType(datatype));
  return checkQuantizableType(static_cast<DataType>(datatype), "datatype");
}

}  // namespace
}  // namespace zccl

extern "C" {

zcclResult_t zcclFeedbackCreate(zcclComm_t comm, size_t count, zcclDataType_t datatype,
                                zcclFeedback_t* feedback) {
  return zcclFeedbackCreateEx(comm, count, datatype, nullptr, feedback);
}

zcclResult_t zcclFeedbackCreateEx(zcclComm_t comm, size_t count, zcclDataType_t datatype,
                                  const zcclFeedbackOptions* options, zcclFeedback_t* feedback) {
  return zccl::guardedComm(comm, [&] {
    if (feedback == nullptr) return zccl::fail(Status::kInvalidArgument, "feedback=NULL (output)");
    *feedback = nullptr;
    ZCCL_CHECK(zccl::checkStateType(datatype));
    const zcclFeedbackOptions chosen =
        options != nullptr ? *options : zcclFeedbackOptions ZCCL_FEEDBACK_OPTIONS_INITIALIZER;
    ZCCL_CHECK(zccl::checkHeader("options", chosen.magic, chosen.size, ZCCL_FEEDBACK_OPTIONS_MAGIC,
                                 sizeof(zcclFeedbackOptions), "ZCCL_FEEDBACK_OPTIONS_INITIALIZER"));
    ZCCL_CHECK(zccl::checkType(chosen.residualType, "options.residualType"));
    const auto residualType = static_cast<zccl::DataType>(chosen.residualType);
    ZCCL_CHECK(zccl::checkResidualType(residualType, "options.residualType"));
    const size_t bytes =
        zccl::residualBytes(residualType, count, static_cast<size_t>(comm->size()));
    *feedback = new zcclFeedback{comm, count, static_cast<zccl::DataType>(datatype), residualType,
                                 std::vector<unsigned char>(bytes)};
    return Status::kSuccess;
  });
}

zcclResult_t zcclFeedbackDestroy(zcclFeedback_t feedback) {
  delete feedback;
  return zcclSuccess;
}

zcclResult_t zcclFeedbackReset(zcclFeedback_t feedback) {
  return zccl::guarded([&] {
    if (feedback == nullptr) return zccl::fail(Status::kInvalidArgument, "feedback=NULL");
    std::fill(feedback->residual.begin(), feedback->residual.end(), 0);
    return Status::kSuccess;
  });
}

zcclResult_t zcclFeedbackBytes(const zcclFeedback_t feedback, size_t* bytes) {
  return zccl::guarded([&] {
    if (feedback == nullptr || bytes == nullptr) {
      return zccl::fail(Status::kInvalidArgument, "feedback=%p bytes=%p: both are needed",
                        static_cast<const void*>(feedback), static_cast<void*>(bytes));
    }
    *bytes = feedback->residual.size();
    return Status::kSuccess;
  });
}

zcclResult_t zcclReferenceCreate(zcclComm_t comm, size_t sendcount, zcclDataType_t datatype,
                                 int resyncEvery, zcclReference_t* reference) {
  return zccl::guardedComm(comm, [&] {
    if (reference == nullptr) {
      return zccl::fail(Status::kInvalidArgument, "reference=NULL (output)");
    }
    *reference = nullptr;
    ZCCL_CHECK(zccl::checkStateType(datatype));
    if (resyncEvery < 0) {
      return zccl::fail(Status::kInvalidArgument, "resyncEvery=%d: expected >= 0", resyncEvery);
    }
    const auto type = static_cast<zccl::DataType>(datatype);
    auto made =
        new zcclReference{comm, sendcount, type,
                          std::vector<unsigned char>(sendcount * static_cast<size_t>(comm->size()) *
                                                     zccl::elementSize(type)),
                          zccl::GatherReference{}};
    made->gather = zccl::GatherReference{made->values.data(), 0, resyncEvery};
    *reference = made;
    return Status::kSuccess;
  });
}

zcclResult_t zcclReferenceDestroy(zcclReference_t reference) {
  delete reference;
  return zcclSuccess;
}

zcclResult_t zcclReferenceBytes(const zcclReference_t reference, size_t* bytes) {
  return zccl::guarded([&] {
    if (reference == nullptr || bytes == nullptr) {
      return zccl::fail(Status::kInvalidArgument, "reference=%p bytes=%p: both are needed",
                        static_cast<const void*>(reference), static_cast<void*>(bytes));
    }
    *bytes = reference->values.size();
    return Status::kSuccess;
  });
}

}  // extern "C"
