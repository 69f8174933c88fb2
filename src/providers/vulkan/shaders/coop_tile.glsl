// The product of one 64 x 64 output tile over a TILE_K-deep slice, shared by matmul.comp and conv2d.comp (workgroups
// of 16 x 16 invocations). The shader stages the slice with PUT_A(kk, r, v) (A: 64 rows x TILE_K deep) and
// PUT_B(kb, c, v) (B: TILE_K deep x 64 columns), then TILE_PRODUCT(acc, tx, ty) adds it to the tile; after the last
// slice TILE_END(acc, tx, ty) leaves in acc[i][j] the sum of output (row0 + ty + 16 i, col0 + tx + 16 j). Slices are
// 16 deep (plain: 8.3 KB of shared memory, within the 16 KB every Vulkan device has; COOP: 22.3 KB, on devices with
// at least 24 KB, vulkan_device.cc); the shaders load each slice into registers (kPerInvocation values of A
// and of B per invocation, all loads issued before any is used) while the slice before it is multiplied, so that a
// product pays about one global-memory latency per slice, not one per element staged.
//
// Plain: each invocation keeps its 4 x 4 outputs in registers (float FMAs).
// COOP (float16 variants on devices with VK_NV_cooperative_matrix; vulkan_device.h): the slice is staged as float16
// and the eight subgroups of 32 each multiply one 16-row block of A by two 16-column blocks of B on 16 x 16 x 16
// cooperative matrices with float accumulators (the GPU's matrix units); TILE_END stores the accumulators to shared
// memory, from which each invocation reads its 4 x 4 outputs for the shader's epilogue. Values are staged exactly
// (they are float16 already); sums are float, as in the plain path, in another order.
// Slices are 16 deep on both paths: on an H200, cooperative slices of 32 and 64 (fewer, larger steps) measured
// slower (BERT-base fp16 3.26 / 3.88 / 4.25 ms recorded; bench/results/gpu-2026-11-27-session21/).
#define TILE_K 16u
// Elements of A and of B each invocation stages per slice (64 x TILE_K over 256 invocations).
const uint kPerInvocation = 64u * TILE_K / 256u;
#ifdef COOP
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
// Row strides of the staged tiles in elements (multiples of 8: 16-byte aligned rows for the matrix loads; the
// padding spreads rows over the shared-memory banks).
const uint kStrideA = TILE_K + 8u, kStrideB = 72u, kStrideC = 68u;
shared float16_t As[64 * kStrideA];      // row-major: 64 rows x TILE_K deep
shared float16_t Bs[TILE_K * kStrideB];  // row-major: TILE_K deep x 64 columns
shared float Cs[64 * kStrideC];          // the finished tile (22.3 KB in all)
#define PUT_A(kk, r, v) As[(r) * kStrideA + (kk)] = float16_t(v)
#define PUT_B(kb, c, v) Bs[(kb) * kStrideB + (c)] = float16_t(v)
fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> coop_acc0, coop_acc1;
// Subgroup s: rows 16 (s / 2) .. + 16, columns 32 (s % 2) .. + 32.
#define TILE_BEGIN()                                                   \
  coop_acc0 = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);           \
  coop_acc1 = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0)
#define TILE_PRODUCT(acc, tx, ty)                                                        \
  {                                                                                      \
    uint sg = gl_SubgroupID;                                                             \
    for (uint ks = 0u; ks < TILE_K; ks += 16u) {                                         \
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa, fb0, fb1;                             \
      coopMatLoadNV(fa, As, (sg / 2u) * 16u * kStrideA + ks, kStrideA, false);           \
      coopMatLoadNV(fb0, Bs, ks * kStrideB + (sg % 2u) * 32u, kStrideB, false);          \
      coopMatLoadNV(fb1, Bs, ks * kStrideB + (sg % 2u) * 32u + 16u, kStrideB, false);    \
      coop_acc0 = coopMatMulAddNV(fa, fb0, coop_acc0);                                   \
      coop_acc1 = coopMatMulAddNV(fa, fb1, coop_acc1);                                   \
    }                                                                                    \
  }
#define TILE_END(acc, tx, ty)                                                                    \
  {                                                                                              \
    uint sg = gl_SubgroupID;                                                                     \
    uint at = (sg / 2u) * 16u * kStrideC + (sg % 2u) * 32u;                                      \
    coopMatStoreNV(coop_acc0, Cs, at, kStrideC, false);                                          \
    coopMatStoreNV(coop_acc1, Cs, at + 16u, kStrideC, false);                                    \
    barrier();                                                                                   \
    for (int i = 0; i < 4; ++i)                                                                  \
      for (int j = 0; j < 4; ++j) acc[i][j] = Cs[((ty) + 16u * uint(i)) * kStrideC + (tx) + 16u * uint(j)]; \
  }
#else
shared float As[TILE_K][65];  // one column of padding: the transposing stores hit distinct banks (8.3 KB in all)
shared float Bs[TILE_K][64];
#define PUT_A(kk, r, v) As[kk][r] = (v)
#define PUT_B(kb, c, v) Bs[kb][c] = (v)
#define TILE_BEGIN()
#define TILE_PRODUCT(acc, tx, ty)                                                    \
  for (uint kk = 0; kk < TILE_K; ++kk) {                                             \
    float av[4], bv[4];                                                              \
    for (int i = 0; i < 4; ++i) av[i] = As[kk][(ty) + 16 * i];                       \
    for (int j = 0; j < 4; ++j) bv[j] = Bs[kk][(tx) + 16 * j];                       \
    for (int i = 0; i < 4; ++i) for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j]; \
  }
#define TILE_END(acc, tx, ty)
#endif
