// Branch-free float exp/sigmoid/tanh that compilers vectorise (libm's expf/tanhf are
// opaque calls that keep the LSTM gate loop scalar, and they dominated decision time).
// Cephes-style: exp(x) = 2^n * e^r with |r| <= ln2/2 and a degree-6 polynomial for e^r;
// about 2 ulp over the clamped range, far inside the 1e-5 parity tolerance with JAX.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace jaxcc {

inline float FastExp(float x) {
  // Clamp so 2^n stays a normal float; the sigmoid/tanh built on this saturate there anyway.
  // Written so NaN (an overflowed activation of an absurd but finite policy) becomes -87
  // instead of flowing into the float->int conversion below, which would be undefined.
  x = x > -87.0f ? x : -87.0f;
  x = x < 88.0f ? x : 88.0f;
  // n = round(x / ln2) by the 1.5*2^23 trick: adding it pushes the fraction bits out under
  // round-to-nearest, subtracting it gives the rounded value back. Branch-free and call-free
  // so the loop vectorises (std::floor is a libm call on baseline x86-64). Needs IEEE
  // semantics: never build this file with -ffast-math.
  constexpr float kRound = 12582912.0f;
  const float fx = (x * 1.44269504088896341f + kRound) - kRound;
  // ln2 split in two parts so x - n*ln2 is exact in float.
  float r = x - fx * 0.693359375f;
  r = r + fx * 2.12194440e-4f;
  const float z = r * r;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * z + r + 1.0f;
  const uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(fx) + 127) << 23;  // 1..254
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return y * scale;
}

inline float FastSigmoid(float x) { return 1.0f / (1.0f + FastExp(-x)); }

inline float FastTanh(float x) {
  // tanh(x) = sign(x) * (1 - e^{-2|x|}) / (1 + e^{-2|x|}): no overflow, no cancellation
  // beyond one ulp of 1 near zero (absolute error ~1e-7, which is what parity needs).
  const float a = std::fabs(x);
  const float e = FastExp(-2.0f * a);
  const float t = (1.0f - e) / (1.0f + e);
  return std::copysign(t, x);
}

}  // namespace jaxcc
