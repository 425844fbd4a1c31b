/* Reference timings for scripts/cpu-peers.sh: one MPI collective at one
 * size, timed as collbench times a sweep point (a warm-up call, a barrier,
 * back-to-back calls, wall clock divided by calls, mean over ranks), on
 * float buffers with nccl-tests' meaning of the size: all-reduce of S
 * bytes; all-gather and reduce-scatter of S bytes in all (S/n per rank);
 * all-to-all of S bytes per rank (S/n to each peer). Prints the bus
 * bandwidth in GB/s (1e9 B/s): 2(n-1)/n·S/t for all-reduce, (n-1)/n·S/t
 * for the others.
 *
 *   mpi_colls allreduce|allgather|reducescatter|alltoall BYTES ITERS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (argc != 4) {
    if (rank == 0) fprintf(stderr, "usage: mpi_colls COLLECTIVE BYTES ITERS\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const char* coll = argv[1];
  long count = atol(argv[2]) / (long)sizeof(float); /* elements in S */
  int iters = atoi(argv[3]);
  long part = count / n;
  float* in = malloc((count > 0 ? count : 1) * sizeof(float));
  float* out = malloc((count > 0 ? count : 1) * sizeof(float));
  for (long i = 0; i < count; i++) in[i] = (float)((i + rank) % 7);
  double factor = (double)(n - 1) / n;
  int which = !strcmp(coll, "allreduce") ? 0 : !strcmp(coll, "allgather") ? 1 : !strcmp(coll, "reducescatter") ? 2 : !strcmp(coll, "alltoall") ? 3 : -1;
  if (which < 0) {
    if (rank == 0) fprintf(stderr, "mpi_colls: unknown collective %s\n", coll);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (which == 0) factor *= 2;
  for (int i = -1; i < iters; i++) {
    if (i == 0) MPI_Barrier(MPI_COMM_WORLD);
    static double t0;
    if (i == 0) t0 = MPI_Wtime();
    switch (which) {
      case 0: MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
      case 1: MPI_Allgather(in, (int)part, MPI_FLOAT, out, (int)part, MPI_FLOAT, MPI_COMM_WORLD); break;
      case 2: MPI_Reduce_scatter_block(in, out, (int)part, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
      case 3: MPI_Alltoall(in, (int)part, MPI_FLOAT, out, (int)part, MPI_FLOAT, MPI_COMM_WORLD); break;
    }
    if (i == iters - 1) {
      double sec = (MPI_Wtime() - t0) / iters, sum;
      MPI_Allreduce(&sec, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      if (rank == 0) printf("%.6f\n", (double)(count * sizeof(float)) / 1e9 / (sum / n) * factor);
    }
  }
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
