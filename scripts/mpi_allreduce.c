/* Reference timing for scripts/host-vs-mpi.sh: MPI_Allreduce of a float
 * buffer, timed as collbench times a sweep point (back-to-back calls after
 * a barrier, wall clock divided by calls, mean over ranks), printing bus
 * bandwidth in GB/s (1e9 B/s) with the all-reduce factor 2(n-1)/n. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  long bytes = argc > 1 ? atol(argv[1]) : 64L << 20;
  int iters = argc > 2 ? atoi(argv[2]) : 20;
  long count = bytes / sizeof(float);
  float* in = malloc(count * sizeof(float));
  float* out = malloc(count * sizeof(float));
  for (long i = 0; i < count; i++) in[i] = (float)((i + rank) % 7);
  MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); /* warm-up */
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; i++) MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double sec = (MPI_Wtime() - t0) / iters, sum;
  MPI_Allreduce(&sec, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  sec = sum / n;
  if (rank == 0) {
    double algbw = (double)(count * sizeof(float)) / 1e9 / sec;
    printf("%.4f\n", algbw * 2.0 * (n - 1) / n);
  }
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
