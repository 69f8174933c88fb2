// The application's CUDA kernels of this example: a "decoder" writing an RGB frame, normalization into the model's
// input, and an argmax over the model's scores. Each launch is queued on `stream` and returns at once.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

// An interleaved 8-bit RGB image [height, width, 3], different for every frame (a decoder or a renderer).
void LaunchRenderRgb(uint8_t* rgb, int height, int width, int frame, cudaStream_t stream);
// HWC uint8 -> NCHW float in [0, 1], normalized per channel with ImageNet's mean and standard deviation.
void LaunchNormalize(const uint8_t* rgb, float* nchw, int height, int width, cudaStream_t stream);
// best[0] = the index of the largest of scores[0..classes) (the first on ties).
void LaunchArgmax(const float* scores, int classes, int64_t* best, cudaStream_t stream);
