/* What a health round's communicators cost with NCCL itself, beside
 * collbench: N ranks in this one process (several per GPU with NCCL 2.30's
 * NCCL_MULTI_RANK_GPU_ENABLE=1), paired by the circle method round after
 * round, and for every round the pairs' communicators made three ways:
 *
 *   fresh   a new world communicator (ncclCommInitRankConfig on every rank)
 *           split into the pairs (ncclCommSplit), as each wave did before;
 *   split   ncclCommSplit of the one world communicator made at the start;
 *   shared  the same with splitShare = 1 (the pairs reuse the parent's
 *           resources).
 *
 * Each new pair communicator runs one checked 1 MiB float all-reduce and a
 * checked 1 MiB send/receive between the pair, so a cheap set-up that
 * cannot run is not counted as one. Every rank's CTAs are limited to its
 * share of the GPU's SMs, as collbench does, so that ranks sharing a GPU
 * fit together. Output: one line per variant and round (milliseconds to
 * make, to destroy), then each variant's median.
 *
 * Then KEEP rounds' splits are made and kept, idle, with the device memory
 * each round's take (GPU 0's, every rank's together), and destroyed all at
 * once in one group, against one round's alone.
 *
 * Build: gcc -O2 -I$NCCL/include -I$CUDA/include nccl_regroup_cost.c \
 *          -L$NCCL/lib -lnccl -L$CUDA/lib64 -lcudart -o nccl_regroup_cost
 * Run:   NCCL_MULTI_RANK_GPU_ENABLE=1 ./nccl_regroup_cost 4 6 8 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXR 64
#define MAXKEEP 32
#define COUNT (1 << 18) /* floats: 1 MiB */

#define CK(call)                                                                      \
  do {                                                                                \
    ncclResult_t r_ = (call);                                                         \
    if (r_ != ncclSuccess) {                                                          \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_)); \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)
#define CU(call)                                                                      \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) {                                                          \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

static int n, ndev, maxCTAs;
static cudaStream_t streams[MAXR];
static float *sendb[MAXR], *recvb[MAXR];

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static ncclConfig_t config(int share) {
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  if (maxCTAs > 0) c.maxCTAs = maxCTAs;
  c.splitShare = share;
  return c;
}

static void init_world(ncclComm_t* comms) {
  ncclUniqueId id;
  CK(ncclGetUniqueId(&id));
  ncclConfig_t cfg[MAXR];
  CK(ncclGroupStart());
  for (int r = 0; r < n; r++) {
    cfg[r] = config(0);
    CU(cudaSetDevice(r % ndev));
    CK(ncclCommInitRankConfig(&comms[r], n, id, r, &cfg[r]));
  }
  CK(ncclGroupEnd());
}

/* color of rank r in round k of the circle method over n (even) ranks:
 * member n-1 stays, the others turn; the pair's index is the color. */
static int color(int r, int k) {
  int m = n - 1, pos[MAXR], who[MAXR];
  for (int i = 0; i < m; i++) who[i] = (i + k) % m;
  who[m] = m;
  for (int i = 0; i < n; i++) pos[who[i]] = i;
  int p = pos[r];
  return p < n / 2 ? p : n - 1 - p;
}

static void split(ncclComm_t* parent, ncclComm_t* out, int k, int share) {
  ncclConfig_t cfg[MAXR];
  CK(ncclGroupStart());
  for (int r = 0; r < n; r++) {
    cfg[r] = config(share);
    CU(cudaSetDevice(r % ndev));
    CK(ncclCommSplit(parent[r], color(r, k), r, &out[r], &cfg[r]));
  }
  CK(ncclGroupEnd());
}

/* destroy_sets destroys sets communicator sets of n ranks in one group. */
static void destroy_sets(ncclComm_t* comms, int sets) {
  CK(ncclGroupStart());
  for (int i = 0; i < sets * n; i++) {
    CU(cudaSetDevice(i % n % ndev));
    CK(ncclCommDestroy(comms[i]));
  }
  CK(ncclGroupEnd());
}

static void destroy(ncclComm_t* comms) { destroy_sets(comms, 1); }

/* partner is rank r's partner in round k. */
static int partner(int r, int k) {
  for (int q = 0; q < n; q++)
    if (q != r && color(q, k) == color(r, k)) return q;
  return -1;
}

/* One all-reduce on the pairs; each rank fills rank+1, so a pair's sum is
 * the two ranks' labels added. Returns the wrong elements. */
static long check(ncclComm_t* comms, int k) {
  static float host[COUNT];
  CK(ncclGroupStart());
  for (int r = 0; r < n; r++) {
    CU(cudaSetDevice(r % ndev));
    CK(ncclAllReduce(sendb[r], recvb[r], COUNT, ncclFloat, ncclSum, comms[r], streams[r]));
  }
  CK(ncclGroupEnd());
  long wrong = 0;
  for (int r = 0; r < n; r++) {
    CU(cudaSetDevice(r % ndev));
    CU(cudaStreamSynchronize(streams[r]));
    CU(cudaMemcpy(host, recvb[r], sizeof(host), cudaMemcpyDeviceToHost));
    for (int i = 0; i < COUNT; i++)
      if (host[i] != (float)(r + 1 + partner(r, k) + 1)) wrong++;
  }
  /* Then each rank sends its own buffer to its partner (rank 0 of the
   * pair communicator is the lower global rank: the key). */
  CK(ncclGroupStart());
  for (int r = 0; r < n; r++) {
    CU(cudaSetDevice(r % ndev));
    int peer = partner(r, k) < r ? 0 : 1;
    CK(ncclSend(sendb[r], COUNT, ncclFloat, peer, comms[r], streams[r]));
    CK(ncclRecv(recvb[r], COUNT, ncclFloat, peer, comms[r], streams[r]));
  }
  CK(ncclGroupEnd());
  for (int r = 0; r < n; r++) {
    CU(cudaSetDevice(r % ndev));
    CU(cudaStreamSynchronize(streams[r]));
    CU(cudaMemcpy(host, recvb[r], sizeof(host), cudaMemcpyDeviceToHost));
    for (int i = 0; i < COUNT; i++)
      if (host[i] != (float)(partner(r, k) + 1)) wrong++;
  }
  return wrong;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median(double* v, int m) {
  qsort(v, m, sizeof(double), cmp);
  return m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
}

int main(int argc, char** argv) {
  n = argc > 1 ? atoi(argv[1]) : 4;
  int rounds = argc > 2 ? atoi(argv[2]) : 3;
  int keep = argc > 3 ? atoi(argv[3]) : 8;
  if (n < 2 || n > MAXR || n % 2 || rounds < 1 || keep < 1 || keep > MAXKEEP) {
    fprintf(stderr, "usage: nccl_regroup_cost RANKS(even, 2-%d) ROUNDS [KEEP(1-%d)]\n", MAXR, MAXKEEP);
    return 2;
  }
  CU(cudaGetDeviceCount(&ndev));
  int sms;
  CU(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  int perGPU = (n + ndev - 1) / ndev;
  maxCTAs = perGPU > 1 ? (sms - 4) / perGPU : 0;
  if (maxCTAs > 64) maxCTAs = 64;
  int v;
  CK(ncclGetVersion(&v));
  printf("# NCCL %d, %d rank(s) on %d GPU(s), maxCTAs %d, %d round(s)\n", v, n, ndev, maxCTAs, rounds);
  for (int r = 0; r < n; r++) {
    CU(cudaSetDevice(r % ndev));
    CU(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
    CU(cudaMalloc((void**)&sendb[r], COUNT * sizeof(float)));
    CU(cudaMalloc((void**)&recvb[r], COUNT * sizeof(float)));
    float* h = malloc(COUNT * sizeof(float));
    for (int i = 0; i < COUNT; i++) h[i] = (float)(r + 1);
    CU(cudaMemcpy(sendb[r], h, COUNT * sizeof(float), cudaMemcpyHostToDevice));
    free(h);
  }
  ncclComm_t world[MAXR], fresh[MAXR], pairs[MAXR];
  double t0 = now_ms();
  init_world(world);
  printf("world init %.1f ms\n", now_ms() - t0);

  const char* names[3] = {"fresh", "split", "shared"};
  double make[3][256], gone[3][256];
  long wrong = 0;
  if (rounds > 256) rounds = 256;
  for (int k = 0; k < rounds; k++) {
    int round = k % (n - 1);
    for (int w = 0; w < 3; w++) {
      double a = now_ms();
      if (w == 0) {
        init_world(fresh);
        split(fresh, pairs, round, 0);
      } else {
        split(world, pairs, round, w == 2);
      }
      make[w][k] = now_ms() - a;
      wrong += check(pairs, round);
      a = now_ms();
      destroy(pairs);
      if (w == 0) destroy(fresh);
      gone[w][k] = now_ms() - a;
      printf("%-6s round %d make %.1f ms destroy %.1f ms\n", names[w], k, make[w][k], gone[w][k]);
      fflush(stdout);
    }
  }
  for (int w = 0; w < 3; w++)
    printf("median %-6s make %.1f ms destroy %.1f ms\n", names[w], median(make[w], rounds), median(gone[w], rounds));

  /* KEEP rounds' splits made, used and kept idle, then destroyed at once. */
  static ncclComm_t kept[MAXKEEP * MAXR];
  size_t freeBefore, freeNow, total;
  CU(cudaSetDevice(0));
  CU(cudaMemGetInfo(&freeBefore, &total));
  for (int k = 0; k < keep; k++) {
    split(world, &kept[k * n], k % (n - 1), 0);
    wrong += check(&kept[k * n], k % (n - 1));
    CU(cudaSetDevice(0));
    CU(cudaMemGetInfo(&freeNow, &total));
    printf("kept %d round(s): %.1f MiB of GPU 0 taken\n", k + 1, (double)(freeBefore - freeNow) / (1 << 20));
  }
  double a = now_ms();
  destroy_sets(kept, keep);
  printf("destroy %d kept round(s) in one group: %.1f ms\n", keep, now_ms() - a);
  printf("wrong %ld\n", wrong);
  destroy(world);
  return wrong != 0;
}
