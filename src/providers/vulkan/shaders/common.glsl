// Shared by every shader of the Vulkan EP. Tensors are reached through buffer device addresses in push constants;
// T is the element type of the variant (float, or float16_t when compiled with TYPE_F16); arithmetic is in float.
#extension GL_EXT_buffer_reference : require
#ifdef TYPE_F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#define T float16_t
layout(buffer_reference, std430, buffer_reference_align = 2) buffer TBuf { float16_t v[]; };
#else
#define T float
layout(buffer_reference, std430, buffer_reference_align = 4) buffer TBuf { float v[]; };
#endif
layout(buffer_reference, std430, buffer_reference_align = 4) buffer FBuf { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer IBuf { int v[]; };

#define LOAD(buf, i) float((buf).v[i])
#define STORE(buf, i, x) (buf).v[i] = T(x)

// The flat index of this invocation over a 2-D grid of 1-D workgroups (grids wider than 65535 groups).
uint FlatIndex() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}

// a / b correctly rounded: GPU drivers may implement '/' with a reciprocal (up to 2.5 ulp off, SPIR-V's allowance),
// which moves values that the next op rounds (Round, a nearest Resize, a quantization) across a boundary. One
// residual step with fma corrects the quotient.
float Div(float a, float b) {
  float q = a / b;
  if (isinf(q) || isnan(q) || q == 0.0) return q;
  precise float r = fma(-q, b, a);
  return q + r / b;
}

// erf with |error| < 1.5e-7 (Abramowitz and Stegun 7.1.26).
float Erf(float x) {
  float s = sign(x);
  float a = abs(x);
  float t = 1.0 / (1.0 + 0.3275911 * a);
  float y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t *
                      exp(-a * a);
  return s * y;
}

// Activation codes shared by the unary shader and the epilogues of convolutions and matrix products
// (vulkan_kernels.h, enum class Activation).
float Activate(float x, uint op, float a, float b) {
  switch (op) {
    case 0u: return x;
    case 1u: return max(x, 0.0);
    case 2u: return 1.0 / (1.0 + exp(-x));
    case 3u: return tanh(clamp(x, -15.0, 15.0));
    case 4u: return x >= 0.0 ? x : a * x;
    case 5u: return min(max(x, a), b);
    case 6u: return clamp(a * x + b, 0.0, 1.0);
    case 7u: return x * clamp(x / 6.0 + 0.5, 0.0, 1.0);
    case 8u: return 0.5 * x * (1.0 + Erf(x * 0.70710678118654752));
    case 9u: return 0.5 * x * (1.0 + tanh(clamp(0.7978845608028654 * (x + 0.044715 * x * x * x), -15.0, 15.0)));
    case 10u: return exp(x);
    case 11u: return log(x);
    case 12u: return sqrt(x);
    case 13u: return -x;
    case 14u: return abs(x);
    case 15u: return Erf(x);
    case 16u: return 1.0 / x;
    case 17u: return floor(x);
    case 18u: return ceil(x);
    case 19u: return x >= 0.0 ? x : a * (exp(x) - 1.0);
    case 20u: return x > 20.0 ? x : log(1.0 + exp(x));
    case 21u: return x / (1.0 + abs(x));
    case 22u: return sin(x);
    case 23u: return cos(x);
    case 24u: return roundEven(x);
    case 25u: return sign(x);
    case 26u: return x >= 0.0 ? b * x : b * a * (exp(x) - 1.0);  // Selu: a = alpha, b = gamma
    case 27u: return x / (1.0 + exp(-a * x));                    // Swish: a = alpha
    default: return x;
  }
}
