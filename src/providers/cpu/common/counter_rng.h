// Random numbers for the CPU kernels that draw them (RandomUniform/Normal, Bernoulli, Multinomial,
// Dropout in training mode).
//
// CounterRng is counter based: draw i of a stream is a hash of (key, i), so any range of a tensor can be
// filled independently and in parallel, and the same seed gives the same tensor whatever the thread
// count. SeedSource turns an op's float `seed` attribute into a fixed key (the op then returns the same
// values on every run) or, without one, hands out a fresh key per run.
#pragma once

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>

#include "tessera/ep/graph.h"

namespace tessera::cpu {

// The splitmix64 finalizer: a bijective 64-bit mix with good avalanche.
inline uint64_t Mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class CounterRng {
 public:
  explicit CounterRng(uint64_t seed) : key_(Mix64(seed ^ 0x6A09E667F3BCC909ull)) {}

  uint64_t Bits(uint64_t i) const { return Mix64(key_ + i * 0x9E3779B97F4A7C15ull); }
  // Uniform in [0, 1) with 53 random bits.
  double Uniform(uint64_t i) const { return static_cast<double>(Bits(i) >> 11) * 0x1p-53; }
  // Standard normal by Box-Muller from draws 2i and 2i + 1 (the first uniform is kept in (0, 1]).
  double Normal(uint64_t i) const {
    const double u1 = static_cast<double>((Bits(2 * i) >> 11) + 1) * 0x1p-53;
    const double u2 = Uniform(2 * i + 1);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  uint64_t key_;
};

class SeedSource {
 public:
  explicit SeedSource(const Node& node) : fixed_(node.HasAttribute("seed")), seed_(fixed_ ? Fixed(node) : Fresh()) {}

  // The key for one run: the seed attribute's, or a new one each call (safe from concurrent runs).
  uint64_t Next() const { return fixed_ ? seed_ : Mix64(seed_ + runs_.fetch_add(1, std::memory_order_relaxed)); }

 private:
  // The random ops declare `seed` a float, Dropout an int: accept either.
  static uint64_t Fixed(const Node& node) {
    const Attribute& seed = node.attributes.at("seed");
    return seed.type == Attribute::Type::kInt ? static_cast<uint64_t>(seed.i) : std::bit_cast<uint32_t>(seed.f);
  }
  static uint64_t Fresh() { return (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}(); }

  bool fixed_;
  uint64_t seed_;
  mutable std::atomic<uint64_t> runs_{0};
};

}  // namespace tessera::cpu
