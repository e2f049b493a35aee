// Indexer stub of cuda_fp16.h (declarations the templates use; see sg_indexer_prelude.h).
#pragma once
struct __half { unsigned short x; };
__device__ float __half2float(__half);
__device__ __half __float2half_rn(float);
__device__ __half atomicAdd(__half*, __half);
__device__ unsigned short __half_as_ushort(__half);
