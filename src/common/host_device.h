// Functions whose arithmetic the CPU and CUDA kernels share, so that both compute the same
// bits: compiled for the device too when a CUDA file includes them.
#pragma once

#ifdef __CUDACC__
#define ZCCL_HOST_DEVICE __host__ __device__
#else
#define ZCCL_HOST_DEVICE
#endif
