// Parsing prelude for the template indexer: just enough CUDA declarations for Clang to parse
// templates/*.cuh as plain C++17. Clang 14 cannot parse the CUDA 13 headers in CUDA mode (its
// runtime wrapper needs texture<> and texture_fetch_functions.h, which CUDA 12 removed; with
// -nocudainc, cuda_fp16.hpp needs NVCC-internal builtins), so the indexer reads the helpers'
// signatures against these stubs. NVRTC compiles the same files against the real headers.
#pragma once

// __device__ becomes an annotation so that the indexer can check every helper is device code.
#define __device__ __attribute__((annotate("sg_device")))
#define __host__
#define __global__ __attribute__((annotate("sg_global")))
#define __shared__
#define __forceinline__ inline
#define __restrict__ __restrict

struct uint2 { unsigned x, y; };
struct uint4 { unsigned x, y, z, w; };
struct sg_dim3 { unsigned x, y, z; };
extern const sg_dim3 threadIdx, blockIdx, blockDim, gridDim;

__device__ float fmaf(float, float, float);
__device__ void __syncthreads();
__device__ void __syncwarp(unsigned = 0xffffffffu);
__device__ int __ffs(int);
__device__ int __popc(unsigned);
__device__ unsigned __ballot_sync(unsigned, int);
__device__ unsigned __reduce_add_sync(unsigned, unsigned);
__device__ unsigned __vcmpne2(unsigned, unsigned);  // sg_twell.cuh's row pack
template <class T> __device__ T __shfl_sync(unsigned, T, int, int = 32);
template <class T> __device__ T __shfl_up_sync(unsigned, T, unsigned, int = 32);
template <class T> __device__ T __shfl_down_sync(unsigned, T, unsigned, int = 32);
template <class T> __device__ T __shfl_xor_sync(unsigned, T, int, int = 32);
__device__ float atomicAdd(float*, float);
// sg_macko.cuh: streaming loads and vector construction.
template <class T> __device__ T __ldcs(const T*);
__device__ uint2 make_uint2(unsigned, unsigned);
__device__ uint4 make_uint4(unsigned, unsigned, unsigned, unsigned);
// sg_macko.cuh, staged B: read-only loads, fp32 vectors, byte permutes and 4-way dot products.
struct float4 { float x, y, z, w; };
__device__ float4 make_float4(float, float, float, float);
template <class T> __device__ T __ldg(const T*);
__device__ unsigned __byte_perm(unsigned, unsigned, unsigned);
__device__ unsigned __dp4a(unsigned, unsigned, unsigned);
// sg_bitmap_tc.cuh: shared-memory addresses for cp.async / ldmatrix.
__device__ unsigned long long __cvta_generic_to_shared(const void*);
__device__ void __threadfence();
__device__ unsigned atomicAdd(unsigned*, unsigned);
__device__ float atomicExch(float*, float);
template <class T> __device__ T __ldcg(const T*);
// sg_slide.cuh: quantization and accumulator bit moves.
__device__ float fminf(float, float);
__device__ float fmaxf(float, float);
__device__ float fabsf(float);
__device__ int __float2int_rn(float);
__device__ float __int_as_float(int);
__device__ int __float_as_int(float);
// sg_twell.cuh: fp32 pairs, sizes and the integer minimum.
struct float2 { float x, y; };
__device__ float2 make_float2(float, float);
typedef decltype(sizeof(0)) size_t;
__device__ int min(int, int);
__device__ int max(int, int);
__device__ int atomicAdd(int*, int);
__device__ int atomicCAS(int*, int, int);
__device__ int atomicExch(int*, int);
__device__ unsigned long long atomicExch(unsigned long long*, unsigned long long);
// sg_slide.cuh, the lift: unsigned maxima, block votes, bit moves and unfused fp32 arithmetic.
__device__ unsigned max(unsigned, unsigned);
__device__ int __syncthreads_or(int);
__device__ unsigned __float_as_uint(float);
__device__ float __uint_as_float(unsigned);
__device__ float __fmul_rn(float, float);
__device__ float __fadd_rn(float, float);
