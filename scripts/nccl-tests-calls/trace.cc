// The recording stand-ins declared in shim.h, and the driver that runs
// nccl-tests' own startColl over every case and prints the calls.
#include "shim.h"

int is_main_thread = 1, is_main_proc = 1, deviceImpl = 0, blocking_coll = 0, test_ncclVersion = TRACE_NCCL_CODE;

// Buffers of local GPU i start at these addresses, one 16 MiB slot each.
static const uintptr_t sendBase = 0x10000000, recvBase = 0x20000000, slot = 0x01000000;

static struct threadArgs* cur;  // the case being traced, to name pointers

// ref names p by the buffer of the calling rank it points into.
static const char* ref(const void* p, char* buf) {
  uintptr_t a = (uintptr_t)p;
  for (int i = 0; cur && i < cur->nGpus; i++) {
    uintptr_t s = (uintptr_t)cur->sendbuffs[i], r = (uintptr_t)cur->recvbuffs[i];
    if (a >= s && a < s + slot) { snprintf(buf, 40, "s%d+%#lx", i, (unsigned long)(a - s)); return buf; }
    if (a >= r && a < r + slot) { snprintf(buf, 40, "r%d+%#lx", i, (unsigned long)(a - r)); return buf; }
  }
  snprintf(buf, 40, "%#lx", (unsigned long)a);
  return buf;
}

#define REFS char b1[40], b2[40]; (void)b1; (void)b2
static ncclResult_t coll(const char* kind, const void* s, void* r, size_t n, ncclDataType_t t, int op, int root, ncclComm_t c) {
  REFS;
  printf("r%d %s s=%s r=%s n=%zu t=%d op=%d root=%d\n", c->rank, kind, ref(s, b1), ref(r, b2), n, (int)t, op, root);
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() { printf("GroupStart\n"); return ncclSuccess; }
ncclResult_t ncclGroupEnd() { printf("GroupEnd\n"); return ncclSuccess; }
ncclResult_t ncclCommCount(ncclComm_t c, int* n) { *n = c->nranks; return ncclSuccess; }
ncclResult_t ncclCommUserRank(ncclComm_t c, int* r) { *r = c->rank; return ncclSuccess; }
ncclResult_t ncclAllReduce(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c, cudaStream_t) { return coll("AllReduce", s, r, n, t, op, -1, c); }
ncclResult_t ncclBroadcast(const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t c, cudaStream_t) { return coll("Broadcast", s, r, n, t, -1, root, c); }
ncclResult_t ncclReduce(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, int root, ncclComm_t c, cudaStream_t) { return coll("Reduce", s, r, n, t, op, root, c); }
ncclResult_t ncclAllGather(const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t) { return coll("AllGather", s, r, n, t, -1, -1, c); }
ncclResult_t ncclReduceScatter(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c, cudaStream_t) { return coll("ReduceScatter", s, r, n, t, op, -1, c); }
ncclResult_t ncclAlltoAll(const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t) { return coll("AlltoAll", s, r, n, t, -1, -1, c); }
ncclResult_t ncclGather(const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t c, cudaStream_t) { return coll("Gather", s, r, n, t, -1, root, c); }
ncclResult_t ncclScatter(const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t c, cudaStream_t) { return coll("Scatter", s, r, n, t, -1, root, c); }
ncclResult_t ncclSend(const void* s, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t) {
  REFS;
  printf("r%d Send s=%s n=%zu t=%d peer=%d\n", c->rank, ref(s, b1), n, (int)t, peer);
  return ncclSuccess;
}
ncclResult_t ncclRecv(void* r, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t) {
  REFS;
  printf("r%d Recv r=%s n=%zu t=%d peer=%d\n", c->rank, ref(r, b1), n, (int)t, peer);
  return ncclSuccess;
}
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t t, ncclScalarResidence_t res, ncclComm_t c) {
  uint64_t v = 0;
  memcpy(&v, scalar, wordSize(t));
  *op = ncclNumOps;
  printf("r%d PreMulSum scalar=%#llx t=%d residence=%d\n", c->rank, (unsigned long long)v, (int)t, (int)res);
  return ncclSuccess;
}
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t c) { printf("r%d RedOpDestroy op=%d\n", c->rank, (int)op); return ncclSuccess; }
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind, cudaStream_t st) {
  REFS;
  printf("r%d Memcpy dst=%s src=%s bytes=%zu\n", st->rank, ref(dst, b1), ref(src, b2), n);
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
testResult_t testStreamSynchronize(int, cudaStream_t*, ncclComm_t*) { return testSuccess; }
void Barrier(struct threadArgs*) {}

// nccl-tests' functions, extracted by gen.sh.
#include "extracted.inc"

struct collCase { const char* name; struct testColl* test; int rooted, reduces, since; };

// trace runs one case the way nccl-tests' BenchTime issues it: the
// synchronising call (iteration 0), then iters iterations of agg calls,
// each iteration one group when agg > 1.
static void trace(const collCase& cc, int nprocs, int proc, int ngpus, ncclDataType_t t, size_t bytes, int inPlace,
                  int op, int root, int iters, int agg, size_t maxbytes) {
  int nranks = nprocs * ngpus;
  traceComm comms[16];
  ncclComm_t commp[16];
  void *sendb[16], *recvb[16];
  int gpus[16];
  ncclDevComm devComms[16];
  for (int i = 0; i < ngpus; i++) {
    comms[i] = traceComm{proc * ngpus + i, nranks};
    commp[i] = &comms[i];
    sendb[i] = (void*)(sendBase + i * slot);
    recvb[i] = (void*)(recvBase + i * slot);
    gpus[i] = i;
  }
  struct threadArgs a = {};
  a.maxbytes = maxbytes;
  a.nProcs = nprocs; a.proc = proc; a.nThreads = 1; a.thread = 0; a.nGpus = ngpus;
  a.gpus = gpus; a.sendbuffs = sendb; a.recvbuffs = recvb; a.comms = commp; a.streams = commp;
  a.devComms = devComms; a.collTest = cc.test; a.sendRegHandles = sendb; a.recvRegHandles = recvb;
  cur = &a;
  setupArgs(bytes, t, &a);
  printf("case %s nccl=%d ranks=%d procs=%d proc=%d gpus=%d type=%d bytes=%zu %s op=%d root=%d iters=%d agg=%d maxbytes=%zu\n",
         cc.name, TRACE_NCCL_CODE, nranks, nprocs, proc, ngpus, (int)t, bytes, inPlace ? "in-place" : "out-of-place", op, root,
         iters, agg, maxbytes);
  startColl(&a, t, (ncclRedOp_t)op, root, inPlace, 0);
  for (int iter = 0; iter < iters; iter++) {
    if (agg > 1) ncclGroupStart();
    for (int aiter = 0; aiter < agg; aiter++) startColl(&a, t, (ncclRedOp_t)op, root, inPlace, iter * agg + aiter);
    if (agg > 1) ncclGroupEnd();
  }
  printf("end\n");
  cur = nullptr;
}

int main() {
  AlltoAllvInit(8);
  static const collCase cases[] = {
    {"allreduce", &allReduceTest, 0, 1, 0}, {"allgather", &allGatherTest, 0, 0, 0},
    {"reducescatter", &reduceScatterTest, 0, 1, 0}, {"alltoall", &alltoAllTest, 0, 0, 22800},
    {"broadcast", &broadcastTest, 1, 0, 0}, {"reduce", &reduceTest, 1, 1, 0},
    {"sendrecv", &sendRecvTest, 0, 0, 0}, {"gather", &gatherTest, 1, 0, 22800},
    {"scatter", &scatterTest, 1, 0, 22800}, {"alltoallv", &alltoAllvTest, 0, 0, 0},
    {"hypercube", &hyperCubeTest, 0, 0, 0},
  };
  static const struct { int nprocs, proc, ngpus; } layouts[] = {{1, 0, 4}, {2, 1, 2}, {1, 0, 8}};
  static const ncclDataType_t types[] = {ncclFloat32, ncclInt8};
  static const size_t sizes[] = {0, 1000, 65540};
  const size_t maxbytes = 1 << 17;
  for (const collCase& cc : cases) {
    // An older NCCL changes only the collectives whose call arrived later.
    if (TRACE_NCCL_CODE < 22800 && !cc.since) continue;
    // Eight ranks where the peers of a rank depend on the rank count.
    int wide = !strcmp(cc.name, "hypercube") || !strcmp(cc.name, "sendrecv") || !strcmp(cc.name, "alltoallv");
    for (auto l : layouts) {
      if (l.ngpus == 8 && !wide) continue;
      for (ncclDataType_t t : types) {
        for (size_t bytes : sizes) {
          // One-byte elements change the 16-byte rounding of the shares.
          if (t != ncclFloat32 && bytes != 1000) continue;
          for (int inPlace = 0; inPlace < 2; inPlace++) {
            int op = cc.reduces ? (int)ncclSum : -1;
            int root = cc.rooted ? 1 : -1;
            trace(cc, l.nprocs, l.proc, l.ngpus, t, bytes, inPlace, op, root, 2, 1, maxbytes);
            trace(cc, l.nprocs, l.proc, l.ngpus, t, bytes, inPlace, op, root, 1, 2, maxbytes);
          }
        }
      }
    }
  }
  // PreMulSum: each rank makes its operator with its own scalar around
  // every call.
  if (TRACE_NCCL_CODE >= 22800) trace(cases[0], 1, 0, 4, ncclFloat32, 1000, 0, ncclNumOps, -1, 1, 2, maxbytes);
  return 0;
}
