#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "protocol.h"

using namespace jaxcc;

TEST(Protocol, DataRoundTrip) {
  std::vector<uint8_t> buf(1472, 0xAB);
  DataPacket p;
  p.flow_id = 7;
  p.size = 1472;
  p.seq = 0x0102030405060708ull;
  p.send_ts_ns = 1763795000123456789ull;
  EncodeData(p, buf.data());
  EXPECT_EQ(buf[0], 'J');
  EXPECT_EQ(buf[1], 'X');
  EXPECT_EQ(buf[2], 'C');
  EXPECT_EQ(buf[3], 'D');
  EXPECT_EQ(buf[16], 0x08);  // little-endian seq
  DataPacket q;
  ASSERT_EQ(ParseData(buf.data(), buf.size(), &q), ParseResult::kOk);
  EXPECT_EQ(q.flow_id, 7u);
  EXPECT_EQ(q.size, 1472u);
  EXPECT_EQ(q.seq, p.seq);
  EXPECT_EQ(q.send_ts_ns, p.send_ts_ns);
}

TEST(Protocol, AckRoundTrip) {
  uint8_t buf[kAckSize];
  AckPacket a;
  a.flow_id = 3;
  a.seq = 99;
  a.echo_send_ts_ns = 111;
  a.recv_ts_ns = 222;
  a.recv_packets = 98;
  a.recv_bytes = 98 * 1472;
  a.highest_seq = 99;
  EXPECT_EQ(EncodeAck(a, buf), kAckSize);
  AckPacket b;
  ASSERT_EQ(ParseAck(buf, kAckSize, &b), ParseResult::kOk);
  EXPECT_EQ(b.flow_id, 3u);
  EXPECT_EQ(b.seq, 99u);
  EXPECT_EQ(b.echo_send_ts_ns, 111u);
  EXPECT_EQ(b.recv_ts_ns, 222u);
  EXPECT_EQ(b.recv_packets, 98u);
  EXPECT_EQ(b.recv_bytes, 98u * 1472);
  EXPECT_EQ(b.highest_seq, 99u);
}

TEST(Protocol, StrictRejections) {
  std::vector<uint8_t> buf(100, 0);
  DataPacket p;
  p.size = 100;
  EncodeData(p, buf.data());
  DataPacket q;
  EXPECT_EQ(ParseData(buf.data(), 31, &q), ParseResult::kBadLength);
  EXPECT_EQ(ParseData(nullptr, 100, &q), ParseResult::kBadLength);
  EXPECT_EQ(ParseData(buf.data(), 99, &q), ParseResult::kBadSize);  // size field disagrees
  auto b = buf;
  b[0] ^= 1;
  EXPECT_EQ(ParseData(b.data(), 100, &q), ParseResult::kBadMagic);
  b = buf;
  b[4] = 2;
  EXPECT_EQ(ParseData(b.data(), 100, &q), ParseResult::kBadVersion);
  b = buf;
  b[5] = kTypeAck;
  EXPECT_EQ(ParseData(b.data(), 100, &q), ParseResult::kBadType);
  b = buf;
  b[7] = 1;
  EXPECT_EQ(ParseData(b.data(), 100, &q), ParseResult::kBadFlags);
  // A data packet is not an ACK and vice versa.
  AckPacket a;
  uint8_t ab[kAckSize];
  EncodeAck(a, ab);
  EXPECT_NE(ParseData(ab, kAckSize, &q), ParseResult::kOk);
  std::vector<uint8_t> d64(64, 0);
  p.size = 64;
  EncodeData(p, d64.data());
  EXPECT_EQ(ParseAck(d64.data(), 64, &a), ParseResult::kBadMagic);
  EXPECT_EQ(ParseAck(ab, kAckSize - 1, &a), ParseResult::kBadLength);
}

TEST(Protocol, RandomGarbageCountedNeverAccepted) {
  std::mt19937_64 rng(42);
  ParseCounters pc;
  std::vector<uint8_t> buf(2000);
  for (int i = 0; i < 200000; ++i) {
    const size_t len = rng() % buf.size();
    for (size_t k = 0; k < len; ++k) buf[k] = static_cast<uint8_t>(rng());
    DataPacket q;
    pc.Add(ParseData(buf.data(), len, &q));
    AckPacket a;
    pc.Add(ParseAck(buf.data(), len, &a));
  }
  EXPECT_EQ(pc.ok(), 0u);
  EXPECT_EQ(pc.garbage(), 400000u);
}

TEST(Protocol, SingleBitFlipsOfHeaderRejected) {
  uint8_t ab[kAckSize];
  AckPacket a;
  a.seq = 5;
  EncodeAck(a, ab);
  // Flipping any bit of the fixed part (magic, version, type, flags, size) must be caught.
  for (int bit = 0; bit < 16 * 8; ++bit) {
    if (bit >= 64 && bit < 96) continue;  // flow id: any value is legal
    uint8_t b[kAckSize];
    std::copy(ab, ab + kAckSize, b);
    b[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    AckPacket out;
    EXPECT_NE(ParseAck(b, kAckSize, &out), ParseResult::kOk) << "bit " << bit;
  }
}
