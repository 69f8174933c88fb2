// The application's own CUDA kernels of examples/cuda_pre_post (no Tessera headers: plain CUDA C++).
#include "kernels.h"

#include <cmath>

namespace {

// The "decoder": writes an interleaved 8-bit RGB image (HWC), as a video decoder or a renderer would.
__global__ void RenderRgb(uint8_t* rgb, int height, int width, int frame) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= height * width * 3) return;
  const int c = i % 3, x = (i / 3) % width, y = i / (3 * width);
  rgb[i] = static_cast<uint8_t>((x * (c + 1) + y * (3 - c) + frame * 37) & 0xFF);
}

// Pre-processing: HWC uint8 -> NCHW float, scaled to [0, 1] and normalized per channel (ImageNet's statistics).
__global__ void Normalize(const uint8_t* rgb, float* nchw, int height, int width) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= height * width * 3) return;
  const float mean[3] = {0.485f, 0.456f, 0.406f}, stddev[3] = {0.229f, 0.224f, 0.225f};
  const int c = i / (height * width), pixel = i % (height * width);
  nchw[i] = (rgb[pixel * 3 + c] / 255.0f - mean[c]) / stddev[c];
}

// Post-processing: the class with the highest score, per batch row (one block per row).
__global__ void Argmax(const float* scores, int classes, int64_t* best) {
  __shared__ float top[256];
  __shared__ int at[256];
  float value = -INFINITY;
  int index = 0;
  for (int k = threadIdx.x; k < classes; k += blockDim.x) {
    const float v = scores[blockIdx.x * classes + k];
    if (v > value) value = v, index = k;
  }
  top[threadIdx.x] = value;
  at[threadIdx.x] = index;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride && (top[threadIdx.x + stride] > top[threadIdx.x] ||
                                 (top[threadIdx.x + stride] == top[threadIdx.x] && at[threadIdx.x + stride] < at[threadIdx.x]))) {
      top[threadIdx.x] = top[threadIdx.x + stride];
      at[threadIdx.x] = at[threadIdx.x + stride];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) best[blockIdx.x] = at[0];
}

int Blocks(int n) { return (n + 255) / 256; }

}  // namespace

void LaunchRenderRgb(uint8_t* rgb, int height, int width, int frame, cudaStream_t stream) {
  RenderRgb<<<Blocks(height * width * 3), 256, 0, stream>>>(rgb, height, width, frame);
}

void LaunchNormalize(const uint8_t* rgb, float* nchw, int height, int width, cudaStream_t stream) {
  Normalize<<<Blocks(height * width * 3), 256, 0, stream>>>(rgb, nchw, height, width);
}

void LaunchArgmax(const float* scores, int classes, int64_t* best, cudaStream_t stream) {
  Argmax<<<1, 256, 0, stream>>>(scores, classes, best);
}
