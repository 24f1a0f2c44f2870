// libFuzzer target: the packet parsers accept only well-formed datagrams and re-encode
// exactly what they parsed (parse -> encode -> identical bytes for the header).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  jaxcc::DataPacket d;
  if (jaxcc::ParseData(data, size, &d) == jaxcc::ParseResult::kOk) {
    std::vector<uint8_t> b(size);
    jaxcc::EncodeData(d, b.data());
    if (std::memcmp(b.data(), data, jaxcc::kDataHeaderSize) != 0) std::abort();
  }
  jaxcc::AckPacket a;
  if (jaxcc::ParseAck(data, size, &a) == jaxcc::ParseResult::kOk) {
    uint8_t b[jaxcc::kAckSize];
    jaxcc::EncodeAck(a, b);
    if (std::memcmp(b, data, jaxcc::kAckSize) != 0) std::abort();
  }
  return 0;
}
