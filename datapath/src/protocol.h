// Wire format of jaxcc's UDP data packets and ACKs.
//
// All fields are little-endian and encoded byte by byte (never by casting structs), so the
// format is independent of compiler padding and host byte order. Every datagram carries its
// own total size; the parser is strict (exact magic, version, type, zero flags, size equal to
// the datagram length) and counts what it drops, so garbage on the port is visible in the
// summaries rather than silently mixed into the measurements.
#pragma once

#include <cstddef>
#include <cstdint>

namespace jaxcc {

constexpr uint32_t kDataMagic = 0x4443584A;  // "JXCD" on the wire
constexpr uint32_t kAckMagic = 0x4143584A;   // "JXCA" on the wire
constexpr uint8_t kProtoVersion = 1;
constexpr uint8_t kTypeData = 1;
constexpr uint8_t kTypeAck = 2;
constexpr size_t kDataHeaderSize = 32;
constexpr size_t kAckSize = 64;
constexpr size_t kMaxDatagram = 65507;  // largest UDP/IPv4 payload
// UDP payload that fills a 1500-byte Ethernet MTU (1500 - 20 IP - 8 UDP); the default
// packet size, so one datagram is one link-layer frame and never fragments.
constexpr size_t kDefaultPacketSize = 1472;
// IPv4 (20 bytes, no options) + UDP (8) headers: every byte count of the sender and receiver
// is of wire (IP) bytes, a datagram's payload plus these, as the simulator counts a packet
// (1472 + 28 = its 1500-byte MSS) and as the emulated link's tbf rate is set.
constexpr size_t kIpUdpHeaderBytes = 28;
inline size_t WireBytes(size_t payload) { return payload + kIpUdpHeaderBytes; }

struct DataPacket {
  uint32_t flow_id = 0;
  uint32_t size = 0;  // total datagram size, header included
  uint64_t seq = 0;
  uint64_t send_ts_ns = 0;  // sender's CLOCK_REALTIME when the packet left the pacer
};

struct AckPacket {
  uint32_t flow_id = 0;
  uint64_t seq = 0;
  uint64_t echo_send_ts_ns = 0;
  uint64_t recv_ts_ns = 0;     // receiver's CLOCK_REALTIME at reception
  uint64_t recv_packets = 0;   // distinct data packets the receiver got from this flow
  uint64_t recv_bytes = 0;     // their bytes
  uint64_t highest_seq = 0;    // highest sequence number seen from this flow
};

enum class ParseResult { kOk, kBadLength, kBadMagic, kBadVersion, kBadType, kBadFlags, kBadSize };
const char* ParseResultName(ParseResult r);

// Counts of parse outcomes (one slot per ParseResult).
struct ParseCounters {
  uint64_t counts[7] = {0, 0, 0, 0, 0, 0, 0};
  void Add(ParseResult r) { ++counts[static_cast<int>(r)]; }
  uint64_t ok() const { return counts[0]; }
  uint64_t garbage() const;
};

// Writes the 32-byte header into buf (buf must hold pkt.size >= 32 bytes; the payload
// after the header is left as it is). Returns the header size.
size_t EncodeData(const DataPacket& pkt, uint8_t* buf);
// Parses a data datagram of len bytes.
ParseResult ParseData(const uint8_t* buf, size_t len, DataPacket* out);

size_t EncodeAck(const AckPacket& ack, uint8_t* buf);  // buf must hold kAckSize bytes
ParseResult ParseAck(const uint8_t* buf, size_t len, AckPacket* out);

}  // namespace jaxcc
