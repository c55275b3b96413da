// libFuzzer: a quantized message from the wire, as untrusted bytes. The header check must
// reject what is malformed and decoding must stay inside the message and the output.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "quant/quantize.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zccl;
  // An exact-size heap copy, so that any read past the message is caught.
  std::vector<uint8_t> message(data, data + size);
  QuantHeader header;
  if (readQuantHeader(message.data(), message.size(), &header) != Status::kSuccess) return 0;
  if (header.count > (size_t{1} << 20)) return 0;  // a valid header, but too large to decode here
  const size_t count = static_cast<size_t>(header.count);
  std::vector<float> out(count), sum(count, 0.0f);
  std::vector<uint16_t> half(count);
  dequantize(message.data(), message.size(), out.data(), DataType::kFloat32, count);
  dequantize(message.data(), message.size(), half.data(), DataType::kBfloat16, count);
  dequantizeAccumulate(message.data(), message.size(), sum.data(), count);
  // Decoded onto a reference (in place, with a copy), a batch of groups at a time.
  std::vector<uint16_t> copy(count);
  dequantizeOnto(message.data(), message.size(), count,
                 SumTarget{half.data(), DataType::kBfloat16, half.data(), copy.data()});
  dequantizeOnto(message.data(), message.size(), count,
                 SumTarget{out.data(), DataType::kFloat32, sum.data(), nullptr});
  // A count that does not match the message is an error, not a write past `out`.
  if (count > 0)
    dequantize(message.data(), message.size(), out.data(), DataType::kFloat32, count - 1);
  return 0;
}
