// State a quantized collective keeps from one call to the next for one buffer (zccl.h's
// zcclFeedback_t and zcclReference_t): a rank's error feedback, and the reference of an
// all-gather of weight differences. Host memory; the calls that use one run in call order.
#pragma once

#include <cstddef>
#include <vector>

#include "collectives/collectives.h"
#include "common/types.h"

struct zcclComm;

struct zcclFeedback {
  zcclComm* comm;
  size_t count;  // elements of the calls' input
  zccl::DataType type;
  zccl::DataType residualType;          // float32, bfloat16 or int8
  std::vector<unsigned char> residual;  // one per input element (quant/quantize.h's Residuals)
};

struct zcclReference {
  zcclComm* comm;
  size_t sendcount;
  zccl::DataType type;
  std::vector<unsigned char> values;  // sendcount x ranks elements of type
  zccl::GatherReference gather;
};
