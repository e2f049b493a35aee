// Indexer stub of cuda_bf16.h (declarations the templates use; see sg_indexer_prelude.h).
#pragma once
struct __nv_bfloat16 { unsigned short x; };
__device__ float __bfloat162float(__nv_bfloat16);
__device__ __nv_bfloat16 __float2bfloat16_rn(float);
__device__ __nv_bfloat16 atomicAdd(__nv_bfloat16*, __nv_bfloat16);
__device__ unsigned short __bfloat16_as_ushort(__nv_bfloat16);
