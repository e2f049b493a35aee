# Probe behind the baked family: one tiny SpMM (fp32, beta 0) timed three ways on a GPU, with L2
# flushed and events around each launch (medians of 20, three rounds): CSR read from global memory,
# CSR passed in the kernel parameters (__grid_constant__), and the matrix baked into the code.
# Usage: python3 tools/debug/small_floor_probe.py M.mtx:N ... (writes small_floor.cu); then
# nvcc -O3 -arch=sm_90 -std=c++20 -o sf small_floor.cu && ./sf > small_floor.json
# Result (H200): results/2026-11-27_nvidia-h200/small_floor_probe.json.
import sys, struct, random
def read_mtx(path):
    rows=cols=0; ents=[]; sym=False; pattern=False
    with open(path) as f:
        hdr=f.readline().lower(); sym=('symmetric' in hdr) or ('hermitian' in hdr) or ('skew' in hdr); pattern='pattern' in hdr
        for line in f:
            if line.startswith('%') or not line.strip(): continue
            rows,cols,n=map(int,line.split()[:3]); break
        for line in f:
            p=line.split()
            if len(p)<2 or p[0].startswith("%"): continue
            i,j=int(p[0])-1,int(p[1])-1
            v=random.uniform(-1,1)
            ents.append((i,j,v))
            if sym and i!=j: ents.append((j,i,v))
    d={}
    for i,j,v in ents: d[(i,j)]=v
    rp=[0]*(rows+1); byrow=[[] for _ in range(rows)]
    for (i,j),v in sorted(d.items()): byrow[i].append((j,v))
    col=[];val=[]
    for i in range(rows):
        for j,v in byrow[i]: col.append(j); val.append(v)
        rp[i+1]=len(col)
    return rows,cols,rp,col,val
def f32(v): return struct.unpack('<I',struct.pack('<f',v))[0]
random.seed(7)
cases=[]
for spec in sys.argv[1:]:
    path,n=spec.split(':'); cases.append((path,int(n)))
out=[]
out.append('#include <cstdio>\n#include <vector>\n#include <algorithm>\n#include <cuda_runtime.h>\n#define CK(x) do{cudaError_t e=(x); if(e!=cudaSuccess){printf("CUDA %s line %d: %s\\n",#x,__LINE__,cudaGetErrorString(e)); exit(1);}}while(0)\n')
out.append('__global__ void k_empty(float* C){ if(threadIdx.x==12345) C[0]=0; }\n')
mains=[]
for ci,(path,N) in enumerate(cases):
    rows,cols,rp,col,val=read_mtx(path)
    nnz=len(col)
    name=path.split('/')[-1].replace('.mtx','')
    P=f'c{ci}'
    out.append(f'// {name} {rows}x{cols} nnz={nnz} N={N}\n')
    out.append(f'static const int {P}_rows={rows},{P}_cols={cols},{P}_nnz={nnz},{P}_N={N};\n')
    out.append(f'static const int {P}_rp[]={{{",".join(map(str,rp))}}};\n')
    out.append(f'static const int {P}_col[]={{{",".join(map(str,col)) or "0"}}};\n')
    out.append(f'static const unsigned {P}_val[]={{{",".join(hex(f32(v)) for v in val) or "0"}}};\n')
    # global CSR: warp per row, lane over columns (N<=32: lanes>=N idle; N>32 loop)
    out.append(f'''__global__ void {P}_global(const int* __restrict__ rp,const int* __restrict__ ci,const float* __restrict__ v,const float* __restrict__ B,float* __restrict__ C){{
  int row=blockIdx.x*4+threadIdx.x/32, lane=threadIdx.x%32; if(row>={rows}) return;
  int b=rp[row], e=rp[row+1];
  for(int j=lane;j<{N};j+=32){{ float acc=0.f; for(int p=b;p<e;++p) acc=fmaf(v[p],B[ci[p]*{N}+j],acc); C[row*{N}+j]=acc; }}
}}
''')
    # param CSR (uint16 row ptr and cols when they fit)
    small = nnz<65536 and cols<65536
    it='unsigned short' if small else 'int'
    psize=(rows+1)*(2 if small else 4)+nnz*(2 if small else 4)+nnz*4
    out.append(f'// param bytes {psize}\nstruct {P}_A {{ float v[{max(nnz,1)}]; {it} ci[{max(nnz,1)}]; {it} rp[{rows+1}]; }};\n')
    out.append(f'''__global__ void {P}_param(const __grid_constant__ {P}_A A,const float* __restrict__ B,float* __restrict__ C){{
  int row=blockIdx.x*4+threadIdx.x/32, lane=threadIdx.x%32; if(row>={rows}) return;
  int b=A.rp[row], e=A.rp[row+1];
  for(int j=lane;j<{N};j+=32){{ float acc=0.f; for(int p=b;p<e;++p) acc=fmaf(A.v[p],B[A.ci[p]*{N}+j],acc); C[row*{N}+j]=acc; }}
}}
''')
    # baked: warp per row, straight-line code per row chosen by if-chain (only small)
    baked = rows<=128
    if baked:
        body=[]
        for r in range(rows):
            terms=''.join(f' acc=fmaf(__int_as_float({hex(f32(val[p]))}),B[{col[p]*N}+j],acc);' for p in range(rp[r],rp[r+1]))
            body.append(f'  {"else " if r else ""}if(row=={r}){{ for(int j=lane;j<{N};j+=32){{ float acc=0.f;{terms} C[{r*N}+j]=acc; }} }}')
        out.append(f'''__global__ void {P}_baked(const float* __restrict__ B,float* __restrict__ C){{
  int row=blockIdx.x*4+threadIdx.x/32, lane=threadIdx.x%32;
''' + '\n'.join(body) + '\n}\n')
    mains.append((P,name,rows,cols,nnz,N,psize,baked,small))
out.append('''
static float median(std::vector<float> v){ std::sort(v.begin(),v.end()); return v[v.size()/2]; }
int main(){
  void* flush; size_t fb=512u<<20; CK(cudaMalloc(&flush,fb));
  cudaStream_t s; CK(cudaStreamCreate(&s)); cudaEvent_t e0[20],e1[20]; for(int i=0;i<20;++i){CK(cudaEventCreate(&e0[i]));CK(cudaEventCreate(&e1[i]));}
  auto timeit=[&](auto launch)->float{ for(int w=0;w<3;++w){CK(cudaMemsetAsync(flush,w,fb,s)); launch(); }
    for(int i=0;i<20;++i){ CK(cudaMemsetAsync(flush,i&1,fb,s)); CK(cudaEventRecord(e0[i],s)); launch(); CK(cudaEventRecord(e1[i],s)); }
    CK(cudaStreamSynchronize(s)); CK(cudaGetLastError()); std::vector<float> t; for(int i=0;i<20;++i){float ms; CK(cudaEventElapsedTime(&ms,e0[i],e1[i])); t.push_back(ms*1000.f);} return median(t); };
  printf("[\\n");
''')
for (P,name,rows,cols,nnz,N,psize,baked,small) in mains:
    bakedline=('tb[rep]=timeit([&]{ '+P+'_baked<<<grid,128,0,s>>>(dB,dC); }); if(rep==0) check("baked");') if baked else 'tb[rep]=-1;'
    it='unsigned short' if small else 'int'
    out.append(f'''  {{
    int *drp,*dci; float *dv,*dB,*dC; CK(cudaMalloc(&drp,sizeof({P}_rp))); CK(cudaMalloc(&dci,sizeof({P}_col))); CK(cudaMalloc(&dv,sizeof({P}_val)));
    CK(cudaMemcpy(drp,{P}_rp,sizeof({P}_rp),cudaMemcpyHostToDevice)); CK(cudaMemcpy(dci,{P}_col,sizeof({P}_col),cudaMemcpyHostToDevice)); CK(cudaMemcpy(dv,{P}_val,sizeof({P}_val),cudaMemcpyHostToDevice));
    std::vector<float> hB({P}_cols*{P}_N); for(size_t i=0;i<hB.size();++i) hB[i]=0.25f+0.001f*float((i*7919)%1000);
    CK(cudaMalloc(&dB,hB.size()*4)); CK(cudaMemcpy(dB,hB.data(),hB.size()*4,cudaMemcpyHostToDevice)); CK(cudaMalloc(&dC,{P}_rows*{P}_N*4));
    static {P}_A A; for(int i=0;i<{P}_nnz;++i){{ A.v[i]=__builtin_bit_cast(float,{P}_val[i]); A.ci[i]=({it}){P}_col[i]; }} for(int i=0;i<={P}_rows;++i) A.rp[i]=({it}){P}_rp[i];
    std::vector<float> ref({P}_rows*{P}_N,0.f); for(int r=0;r<{P}_rows;++r) for(int j=0;j<{P}_N;++j){{ float acc=0; for(int p={P}_rp[r];p<{P}_rp[r+1];++p) acc=fmaf(__builtin_bit_cast(float,{P}_val[p]),hB[{P}_col[p]*{P}_N+j],acc); ref[r*{P}_N+j]=acc; }}
    int grid=({P}_rows+3)/4;
    auto check=[&](const char* what){{ std::vector<float> h({P}_rows*{P}_N); CK(cudaMemcpy(h.data(),dC,h.size()*4,cudaMemcpyDeviceToHost)); double worst=0; for(size_t i=0;i<h.size();++i) worst=std::max(worst,(double)fabsf(h[i]-ref[i])/(1e-6+fabsf(ref[i]))); if(worst>1e-4) printf("  \\"CHECK FAILED {name} %s %g\\",\\n",what,worst); CK(cudaMemset(dC,0xff,{P}_rows*{P}_N*4)); }};
    CK(cudaMemset(dC,0xff,{P}_rows*{P}_N*4));
    float tg[3],tp[3],tb[3],te[3];
    for(int rep=0;rep<3;++rep){{
      te[rep]=timeit([&]{{ k_empty<<<grid,128,0,s>>>(dC); }});
      tg[rep]=timeit([&]{{ {P}_global<<<grid,128,0,s>>>(drp,dci,dv,dB,dC); }}); if(rep==0) check("global");
      tp[rep]=timeit([&]{{ {P}_param<<<grid,128,0,s>>>(A,dB,dC); }}); if(rep==0) check("param");
      {bakedline}
    }}
    printf("  {{\\"matrix\\":\\"{name}\\",\\"rows\\":{rows},\\"nnz\\":{nnz},\\"n\\":{N},\\"param_bytes\\":{psize},\\"empty_us\\":[%.2f,%.2f,%.2f],\\"global_us\\":[%.2f,%.2f,%.2f],\\"param_us\\":[%.2f,%.2f,%.2f],\\"baked_us\\":[%.2f,%.2f,%.2f]}},\\n",te[0],te[1],te[2],tg[0],tg[1],tg[2],tp[0],tp[1],tp[2],tb[0],tb[1],tb[2]);
  }}
''')
out.append('  printf("{}]\\n"); return 0; }\n')
open('small_floor.cu','w').write(''.join(out))
