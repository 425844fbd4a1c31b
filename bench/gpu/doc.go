// Package gpu is the nccl backend: one NCCL communicator per local GPU,
// initialised in one group, with buffers from ncclMemAlloc where NCCL has
// it and non-blocking streams, driven by a small C loop that enqueues a
// whole timed batch per call (batch.c) so the numbers match nccl-tests'.
package gpu
