// harness drives a tuner plugin the way NCCL drives it, so that the tests
// can hold tuner.Parse and tuner.Apply to the plugin's compiled code.
//
//   harness PLUGIN MODE NRANKS NNODES < queries
//
// MODE "nccl" passes the cost table as NCCL does (src/enqueue.cc: a
// float[7][3] cast to float**); "rows" passes a pointer per algorithm,
// as the example plugin's own unit test does. NCCL_TUNER_CONFIG_FILE
// names the file, as for NCCL. Each query line is
//   COLLECTIVE BYTES PIPEOPS REGBUFF IGNORED
// with COLLECTIVE one of NCCL's ncclFunc_t values (0 broadcast … 4
// allreduce), IGNORED "-" or algorithm/protocol pairs like "4/2,0/0"
// that NCCL marked unusable (-1.0). Each answer line is
//   ALGORITHM PROTOCOL CHANNELS
// the pair whose cost became 0 ("-" "-" when none did) and the channels.
// The plugin's log lines while it loads its file go to standard error.
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NALGO 7
#define NPROTO 3

typedef int result_t;
typedef void (*logger_t)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

// The head every tuner plugin struct from v2 on shares: a name, then
// init, getCollInfo and finalize (v3–v6 take the same getCollInfo).
typedef struct {
  const char* name;
  result_t (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, logger_t log, void* nvlDomainInfo,
                   void* constants);
  result_t (*getCollInfo)(void* ctx, int collType, size_t nBytes, int numPipeOps, float** collCostTable, int numAlgo,
                          int numProto, int regBuff, int* nChannels);
  result_t (*finalize)(void* ctx);
} tuner_t;

// initializing: the plugin's log lines are kept while it loads its file
// (the count of rows it loaded among them), not for every call after.
static int initializing = 1;

static void logger(int level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  (void)flags;
  (void)file;
  (void)line;
  if (!initializing) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "log %d: ", level);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static const char* algos[NALGO] = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
static const char* protos[NPROTO] = {"ll", "ll128", "simple"};

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: harness PLUGIN nccl|rows NRANKS NNODES < queries\n");
    return 2;
  }
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "harness: %s\n", dlerror());
    return 2;
  }
  tuner_t* t = dlsym(h, "ncclTunerPlugin_v6");
  if (!t) t = dlsym(h, "ncclTunerPlugin_v5");
  if (!t) {
    fprintf(stderr, "harness: %s exports neither ncclTunerPlugin_v6 nor ncclTunerPlugin_v5\n", argv[1]);
    return 2;
  }
  int contiguous = strcmp(argv[2], "nccl") == 0;
  void* ctx = NULL;
  if (t->init(&ctx, 0, strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10), logger, NULL, NULL) != 0) {
    fprintf(stderr, "harness: init failed\n");
    return 1;
  }
  initializing = 0;
  char line[512];
  while (fgets(line, sizeof line, stdin)) {
    int coll, pipeOps, regBuff;
    unsigned long long bytes;
    char ignored[256];
    if (sscanf(line, "%d %llu %d %d %255s", &coll, &bytes, &pipeOps, &regBuff, ignored) != 5) {
      fprintf(stderr, "harness: bad query %s", line);
      return 2;
    }
    float table[NALGO][NPROTO];
    float* rows[NALGO];
    for (int a = 0; a < NALGO; a++) {
      rows[a] = table[a];
      for (int p = 0; p < NPROTO; p++) table[a][p] = 1.0f;
    }
    if (strcmp(ignored, "-") != 0) {
      for (char* pair = strtok(ignored, ","); pair; pair = strtok(NULL, ",")) {
        int a, p;
        if (sscanf(pair, "%d/%d", &a, &p) == 2 && a >= 0 && a < NALGO && p >= 0 && p < NPROTO) table[a][p] = -1.0f;
      }
    }
    int channels = 0;
    float** arg = contiguous ? (float**)table : rows;
    if (t->getCollInfo(ctx, coll, (size_t)bytes, pipeOps, arg, NALGO, NPROTO, regBuff, &channels) != 0) {
      printf("error error %d\n", channels);
      continue;
    }
    const char *ca = "-", *cp = "-";
    for (int a = 0; a < NALGO; a++)
      for (int p = 0; p < NPROTO; p++)
        if (table[a][p] == 0.0f) ca = algos[a], cp = protos[p];
    printf("%s %s %d\n", ca, cp, channels);
    fflush(stdout);
  }
  t->finalize(ctx);
  return 0;
}
