#include "protocol.h"

namespace jaxcc {
namespace {

void Put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
void Put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void Put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint16_t Get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t Get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t Get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Layout shared by both packet types:
//   0 magic u32 | 4 version u8 | 5 type u8 | 6 flags u16 (must be 0) | 8 flow id u32 | 12 size u32
void PutCommon(uint8_t* b, uint32_t magic, uint8_t type, uint32_t flow, uint32_t size) {
  Put32(b, magic);
  b[4] = kProtoVersion;
  b[5] = type;
  Put16(b + 6, 0);
  Put32(b + 8, flow);
  Put32(b + 12, size);
}

ParseResult CheckCommon(const uint8_t* b, size_t len, uint32_t magic, uint8_t type) {
  if (Get32(b) != magic) return ParseResult::kBadMagic;
  if (b[4] != kProtoVersion) return ParseResult::kBadVersion;
  if (b[5] != type) return ParseResult::kBadType;
  if (Get16(b + 6) != 0) return ParseResult::kBadFlags;
  if (Get32(b + 12) != len) return ParseResult::kBadSize;
  return ParseResult::kOk;
}

}  // namespace

const char* ParseResultName(ParseResult r) {
  switch (r) {
    case ParseResult::kOk: return "ok";
    case ParseResult::kBadLength: return "bad_length";
    case ParseResult::kBadMagic: return "bad_magic";
    case ParseResult::kBadVersion: return "bad_version";
    case ParseResult::kBadType: return "bad_type";
    case ParseResult::kBadFlags: return "bad_flags";
    case ParseResult::kBadSize: return "bad_size";
  }
  return "unknown";
}

uint64_t ParseCounters::garbage() const {
  uint64_t g = 0;
  for (int i = 1; i < 7; ++i) g += counts[i];
  return g;
}

size_t EncodeData(const DataPacket& pkt, uint8_t* buf) {
  PutCommon(buf, kDataMagic, kTypeData, pkt.flow_id, pkt.size);
  Put64(buf + 16, pkt.seq);
  Put64(buf + 24, pkt.send_ts_ns);
  return kDataHeaderSize;
}

ParseResult ParseData(const uint8_t* buf, size_t len, DataPacket* out) {
  if (buf == nullptr || len < kDataHeaderSize || len > kMaxDatagram) return ParseResult::kBadLength;
  ParseResult r = CheckCommon(buf, len, kDataMagic, kTypeData);
  if (r != ParseResult::kOk) return r;
  out->flow_id = Get32(buf + 8);
  out->size = Get32(buf + 12);
  out->seq = Get64(buf + 16);
  out->send_ts_ns = Get64(buf + 24);
  return ParseResult::kOk;
}

// ACK layout after the common part:
//   16 seq | 24 echoed send ts | 32 receive ts | 40 recv packets | 48 recv bytes | 56 highest seq
size_t EncodeAck(const AckPacket& ack, uint8_t* buf) {
  PutCommon(buf, kAckMagic, kTypeAck, ack.flow_id, kAckSize);
  Put64(buf + 16, ack.seq);
  Put64(buf + 24, ack.echo_send_ts_ns);
  Put64(buf + 32, ack.recv_ts_ns);
  Put64(buf + 40, ack.recv_packets);
  Put64(buf + 48, ack.recv_bytes);
  Put64(buf + 56, ack.highest_seq);
  return kAckSize;
}

ParseResult ParseAck(const uint8_t* buf, size_t len, AckPacket* out) {
  if (buf == nullptr || len != kAckSize) return ParseResult::kBadLength;
  ParseResult r = CheckCommon(buf, len, kAckMagic, kTypeAck);
  if (r != ParseResult::kOk) return r;
  out->flow_id = Get32(buf + 8);
  out->seq = Get64(buf + 16);
  out->echo_send_ts_ns = Get64(buf + 24);
  out->recv_ts_ns = Get64(buf + 32);
  out->recv_packets = Get64(buf + 40);
  out->recv_bytes = Get64(buf + 48);
  out->highest_seq = Get64(buf + 56);
  return ParseResult::kOk;
}

}  // namespace jaxcc
