#include <sched.h>
#include <stdio.h>
#include <time.h>
#include "batch.h"

#define NCCL_FAIL(name, r, d) do { st->kind = CB_FAIL_NCCL; st->code = (r); st->dev = (d); st->call = (name); \
    st->last[0] = 0; keepLast(&c->p, st, (d) >= 0 ? c->comms[d] : NULL); return CB_FAILED; } while (0)
#define CUDA_FAIL(name, r, d) do { st->kind = CB_FAIL_CUDA; st->code = (r); st->dev = (d); st->call = (name); return CB_FAILED; } while (0)
#define NCCL(name, expr, d) do { ncclResult_t r_ = (expr); if (r_ != CB_NCCL_SUCCESS) NCCL_FAIL(name, r_, d); } while (0)
#define CUDA(name, expr, d) do { CUresult r_ = (expr); if (r_ != CB_CUDA_SUCCESS) CUDA_FAIL(name, r_, d); } while (0)

// keepLast copies NCCL's last-error text into a failure just recorded,
// before any other call can replace it.
static void keepLast(const cb_procs* p, cb_status* st, ncclComm_t comm) {
  if (st->kind != CB_FAIL_NCCL || st->last[0] || !p->lastError) return;
  const char* s = p->lastError(comm);
  if (s) snprintf(st->last, sizeof st->last, "%s", s);
}

// set records the first failure of a call, with NCCL's text for it; later
// failures (of the clean-up that follows it) do not overwrite it.
static void set(const cb_procs* p, cb_status* st, int kind, int code, int d, const char* name, ncclComm_t comm) {
  if (st->kind) return;
  st->kind = kind; st->code = code; st->dev = d; st->call = name;
  keepLast(p, st, comm);
}

// TRY runs an NCCL call inside a function that owns resources: on failure
// it records the error and jumps to the function's clean-up at out.
#define TRY(name, expr, d) do { ncclResult_t r_ = (expr); if (r_ != CB_NCCL_SUCCESS) { set(p, st, CB_FAIL_NCCL, r_, d, name, comm); rc = CB_FAILED; goto out; } } while (0)
#define TRY_CU(name, expr, d) do { CUresult r_ = (expr); if (r_ != CB_CUDA_SUCCESS) { set(p, st, CB_FAIL_CUDA, r_, d, name, NULL); rc = CB_FAILED; goto out; } } while (0)

// endGroup closes a group this code opened. NCCL leaves the group on a
// failed ncclGroupEnd, so it is never called twice.
static int endGroup(const cb_procs* p, int d, cb_status* st) {
  ncclResult_t r = p->groupEnd();
  if (r != CB_NCCL_SUCCESS) { set(p, st, CB_FAIL_NCCL, r, d, "ncclGroupEnd", NULL); return CB_FAILED; }
  return CB_OK;
}

// one issues GPU d's call of a batch, as nccl-tests' startColl and RunColl
// do, including the send/receive fallbacks for all-to-all, gather and
// scatter before NCCL 2.28. Whatever fails, a group it opened is ended and
// a PreMulSum op it created is destroyed. Hypercube has its own loop.
// pointers gives GPU d's send and receive pointers for call index of a
// batch: both buffers rotated by the call's footprint (wrapping at the
// buffer) and moved by -u, and in place the rank's offsets into the
// receive buffer, as nccl-tests' startColl computes them.
static void pointers(const cb_comms* c, const cb_op* o, int d, int index, char** send, char** recv) {
  size_t shift = o->steps ? o->footprint * ((size_t)index % o->steps) : 0;
  int rank = c->ranks[d];
  char* r = (char*)c->recv[d] + shift + o->unalign;
  *send = o->inplace ? r + o->send_inplace * rank * o->elt : (char*)c->send[d] + shift + o->unalign;
  *recv = o->inplace ? r + o->recv_inplace * rank * o->elt : r;
}

static int one(cb_comms* c, const cb_op* o, int d, int index, cb_status* st) {
  const cb_procs* p = &c->p;
  int rank = c->ranks[d], n = c->nranks;
  ncclComm_t comm = c->comms[d];
  stream_t s = c->streams[d];
  char *send, *recv;
  pointers(c, o, d, index, &send, &recv);
  size_t block = o->count * o->elt;
  int op = o->op, rc = CB_OK, created = 0, grouped = 0;
  if (o->premul) { TRY("ncclRedOpCreatePreMulSum", p->premulCreate(&op, &c->scalars[d], o->dtype, 1, comm), d); created = 1; }
  switch (o->coll) {
  case CB_ALLREDUCE: TRY("ncclAllReduce", p->allReduce(send, recv, o->count, o->dtype, op, comm, s), d); break;
  case CB_ALLGATHER: TRY("ncclAllGather", p->allGather(send, recv, o->count, o->dtype, comm, s), d); break;
  case CB_REDUCESCATTER: TRY("ncclReduceScatter", p->reduceScatter(send, recv, o->count, o->dtype, op, comm, s), d); break;
  case CB_BROADCAST: TRY("ncclBroadcast", p->broadcast(send, recv, o->count, o->dtype, o->root, comm, s), d); break;
  case CB_REDUCE: TRY("ncclReduce", p->reduce(send, recv, o->count, o->dtype, op, o->root, comm, s), d); break;
  case CB_ALLTOALL:
    if (p->alltoAll) { TRY("ncclAlltoAll", p->alltoAll(send, recv, o->count, o->dtype, comm, s), d); break; }
    TRY("ncclGroupStart", p->groupStart(), d); grouped = 1;
    for (int r = 0; r < n; r++) {
      TRY("ncclSend", p->send(send + r * block, o->count, o->dtype, r, comm, s), d);
      TRY("ncclRecv", p->recv(recv + r * block, o->count, o->dtype, r, comm, s), d);
    }
    break;
  case CB_GATHER:
    if (o->count == 0) break;
    if (p->gather) { TRY("ncclGather", p->gather(send, recv, o->count, o->dtype, o->root, comm, s), d); break; }
    TRY("ncclGroupStart", p->groupStart(), d); grouped = 1;
    TRY("ncclSend", p->send(send, o->count, o->dtype, o->root, comm, s), d);
    for (int r = 0; rank == o->root && r < n; r++)
      TRY("ncclRecv", p->recv(recv + r * block, o->count, o->dtype, r, comm, s), d);
    break;
  case CB_SCATTER:
    if (o->count == 0) break;
    if (p->scatter) { TRY("ncclScatter", p->scatter(send, recv, o->count, o->dtype, o->root, comm, s), d); break; }
    TRY("ncclGroupStart", p->groupStart(), d); grouped = 1;
    for (int r = 0; rank == o->root && r < n; r++)
      TRY("ncclSend", p->send(send + r * block, o->count, o->dtype, r, comm, s), d);
    TRY("ncclRecv", p->recv(recv, o->count, o->dtype, o->root, comm, s), d);
    break;
  case CB_SENDRECV:
    TRY("ncclGroupStart", p->groupStart(), d); grouped = 1;
    TRY("ncclSend", p->send(send, o->count, o->dtype, (rank + 1) % n, comm, s), d);
    TRY("ncclRecv", p->recv(recv, o->count, o->dtype, (rank - 1 + n) % n, comm, s), d);
    break;
  case CB_ALLTOALLV: {
    /* nccl-tests' alltoallv: grouped sends and receives of each peer's
       share, packed in rank order; empty shares are not posted. */
    int draw = c->share_draws > 1 ? index % c->share_draws : 0;
    const size_t* out = c->shares + (size_t)2 * n * (draw * c->ndev + d);
    const size_t* in = out + n;
    TRY("ncclGroupStart", p->groupStart(), d); grouped = 1;
    for (int r = 0; r < n; r++) {
      if (out[r]) { TRY("ncclSend", p->send(send, out[r] / o->elt, o->dtype, r, comm, s), d); send += out[r]; }
      if (in[r]) { TRY("ncclRecv", p->recv(recv, in[r] / o->elt, o->dtype, r, comm, s), d); recv += in[r]; }
    }
    break;
  }
  case CB_PIPELINE:
    /* A chain: the last rank sends nothing, the first receives nothing. */
    TRY("ncclGroupStart", p->groupStart(), d); grouped = 1;
    if (rank + 1 < n) TRY("ncclSend", p->send(send, o->count, o->dtype, rank + 1, comm, s), d);
    if (rank > 0) TRY("ncclRecv", p->recv(recv, o->count, o->dtype, rank - 1, comm, s), d);
    break;
  }
out:
  if (grouped && endGroup(p, d, st) != CB_OK) rc = CB_FAILED;
  if (created) {
    ncclResult_t r = p->redOpDestroy(op, comm);
    if (r != CB_NCCL_SUCCESS) { set(p, st, CB_FAIL_NCCL, r, d, "ncclRedOpDestroy", comm); rc = CB_FAILED; }
  }
  return rc;
}

static int record(cb_comms* c, int slot, cb_status* st) {
  for (int d = 0; d < c->ndev; d++)
    CUDA("cuEventRecord", c->p.eventRecord(c->events[d * c->event_cap + slot], c->streams[d]), d);
  return CB_OK;
}

// call issues one call on every local GPU, grouped when there are several.
static int call(cb_comms* c, const cb_op* o, int index, cb_status* st) {
  int rc = CB_OK;
  if (c->ndev > 1) NCCL("ncclGroupStart", c->p.groupStart(), -1);
  for (int d = 0; rc == CB_OK && d < c->ndev; d++)
    if (one(c, o, d, index, st) != CB_OK) rc = CB_FAILED;
  if (c->ndev > 1 && endGroup(&c->p, -1, st) != CB_OK) rc = CB_FAILED;
  return rc;
}

// hypercube issues call index of nccl-tests' hypercube all-gather on every
// local GPU: each rank's own block copied into place (where in place has
// it already), then, per dimension, one group in which every local rank
// swaps the blocks gathered so far with rank^mask. nccl-tests nests each
// dimension's group inside its group over the local GPUs (and -m's), where
// NCCL merges them into one and a rank may pass on blocks it has not
// received yet; one group per dimension keeps the dimensions in order on
// every GPU's stream. Each rank's calls, in their order, are nccl-tests'.
static int hypercube(cb_comms* c, const cb_op* o, int index, cb_status* st) {
  const cb_procs* p = &c->p;
  size_t block = o->count * o->elt;
  char *send, *recv;
  for (int d = 0; d < c->ndev; d++) {
    pointers(c, o, d, index, &send, &recv);
    char* own = recv + c->ranks[d] * block;
    if (own != send) CUDA("cuMemcpyDtoDAsync", p->memcpyD2D((uintptr_t)own, (uintptr_t)send, block, c->streams[d]), d);
  }
  for (int mask = 1; mask < c->nranks; mask <<= 1) {
    int rc = CB_OK;
    NCCL("ncclGroupStart", p->groupStart(), -1);
    for (int d = 0; rc == CB_OK && d < c->ndev; d++) {
      int rank = c->ranks[d], mine = rank & ~(mask - 1);
      ncclComm_t comm = c->comms[d];
      pointers(c, o, d, index, &send, &recv);
      ncclResult_t r = p->send(recv + mine * block, o->count * mask, o->dtype, rank ^ mask, comm, c->streams[d]);
      if (r == CB_NCCL_SUCCESS) r = p->recv(recv + (mine ^ mask) * block, o->count * mask, o->dtype, rank ^ mask, comm, c->streams[d]);
      else { set(p, st, CB_FAIL_NCCL, r, d, "ncclSend", comm); rc = CB_FAILED; break; }
      if (r != CB_NCCL_SUCCESS) { set(p, st, CB_FAIL_NCCL, r, d, "ncclRecv", comm); rc = CB_FAILED; }
    }
    if (endGroup(p, -1, st) != CB_OK) rc = CB_FAILED;
    if (rc != CB_OK) return CB_FAILED;
  }
  return CB_OK;
}

// cb_enqueue issues a batch. On a failure it stops, ends every group it
// opened and reports the first failed call; the caller aborts the
// communicators before it destroys them.
int cb_enqueue(cb_comms* c, const cb_op* o, cb_status* st) {
  for (int it = 0; it < o->iters; it++) {
    int rc = CB_OK;
    if (o->coll == CB_HYPERCUBE) {
      /* Its dimensions must not share a group, so -m's calls do not. */
      if (o->record && record(c, it, st) != CB_OK) return CB_FAILED;
      for (int a = 0; a < o->agg; a++)
        if (hypercube(c, o, o->first_iter + it * o->agg + a, st) != CB_OK) return CB_FAILED;
      continue;
    }
    if (o->agg > 1) NCCL("ncclGroupStart", c->p.groupStart(), -1);
    if (o->record && record(c, it, st) != CB_OK) rc = CB_FAILED;
    for (int a = 0; rc == CB_OK && a < o->agg; a++)
      if (call(c, o, o->first_iter + it * o->agg + a, st) != CB_OK) rc = CB_FAILED;
    if (o->agg > 1 && endGroup(&c->p, -1, st) != CB_OK) rc = CB_FAILED;
    if (rc != CB_OK) return CB_FAILED;
  }
  if (o->record && record(c, o->iters, st) != CB_OK) return CB_FAILED;
  return CB_OK;
}

// cb_simulate asks NCCL what one call of the batch would take, without
// running it: the call on every local GPU inside one group, closed by
// ncclGroupSimulateEnd instead of ncclGroupEnd. *us is NCCL's estimate in
// µs, or negative when NCCL gives none. version is the loaded NCCL's code.
int cb_simulate(cb_comms* c, const cb_op* o, unsigned int version, float* us, cb_status* st) {
  const cb_procs* p = &c->p;
  *us = -1.0f;
  NCCL("ncclGroupStart", p->groupStart(), -1);
  int rc = CB_OK;
  for (int d = 0; rc == CB_OK && d < c->ndev; d++)
    if (one(c, o, d, o->first_iter, st) != CB_OK) rc = CB_FAILED;
  cb_sim_info info = { sizeof(cb_sim_info), CB_SIM_MAGIC, version, -1.0f };
  ncclResult_t r = p->groupSimulateEnd(&info);
  if (r != CB_NCCL_SUCCESS) { set(p, st, CB_FAIL_NCCL, r, -1, "ncclGroupSimulateEnd", NULL); return CB_FAILED; }
  if (rc != CB_OK) return CB_FAILED;
  *us = info.estimatedTime;
  return CB_OK;
}

int cb_capture(cb_comms* c, const cb_op* o, void** execs, cb_status* st) {
  for (int d = 0; d < c->ndev; d++) execs[d] = NULL;
  for (int d = 0; d < c->ndev; d++)
    CUDA("cuStreamBeginCapture", c->p.beginCapture(c->streams[d], 1 /* thread-local */), d);
  cb_op plain = *o;
  plain.record = 0;
  cb_status enq = {0};
  int rc = cb_enqueue(c, &plain, &enq);
  void* graphs[c->ndev];
  for (int d = 0; d < c->ndev; d++) {
    graphs[d] = NULL;
    CUresult r = c->p.endCapture(c->streams[d], &graphs[d]);
    if (r != CB_CUDA_SUCCESS && rc == CB_OK) { st->kind = CB_FAIL_CUDA; st->code = r; st->dev = d; st->call = "cuStreamEndCapture"; rc = CB_FAILED; }
  }
  if (enq.kind) *st = enq;
  for (int d = 0; rc == CB_OK && d < c->ndev; d++) {
    CUresult r = c->p.ctxSetCurrent(c->ctxs[d]);
    if (r == CB_CUDA_SUCCESS) r = c->p.graphInstantiate(&execs[d], graphs[d], 0);
    if (r != CB_CUDA_SUCCESS) { st->kind = CB_FAIL_CUDA; st->code = r; st->dev = d; st->call = "cuGraphInstantiate"; rc = CB_FAILED; }
  }
  for (int d = 0; d < c->ndev; d++)
    if (graphs[d]) c->p.graphDestroy(graphs[d]);
  if (rc != CB_OK) cb_graph_free(c, execs);
  return rc;
}

int cb_graph_launch(cb_comms* c, void** execs, int launches, cb_status* st) {
  for (int l = 0; l < launches; l++)
    for (int d = 0; d < c->ndev; d++)
      CUDA("cuGraphLaunch", c->p.graphLaunch(execs[d], c->streams[d]), d);
  return CB_OK;
}

void cb_graph_free(cb_comms* c, void** execs) {
  for (int d = 0; d < c->ndev; d++) {
    if (execs[d]) c->p.graphExecDestroy(execs[d]);
    execs[d] = NULL;
  }
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

// cb_wait polls every stream and communicator as nccl-tests' completeColl
// does, yielding the CPU between rounds. It returns CB_OK when all streams
// are idle, CB_BUSY when they are still busy after spin_ns (so Go can
// check for cancellation), CB_FAILED on a CUDA or asynchronous NCCL error.
int cb_wait(cb_comms* c, int64_t spin_ns, cb_status* st) {
  int64_t deadline = now_ns() + spin_ns;
  for (;;) {
    int busy = 0;
    for (int d = 0; d < c->ndev; d++) {
      CUresult r = c->p.streamQuery(c->streams[d]);
      if (r == CB_CUDA_SUCCESS) continue;
      if (r != CB_CUDA_NOT_READY) CUDA_FAIL("cuStreamQuery", r, d);
      busy = 1;
      if (c->p.asyncError) {
        ncclResult_t ar = CB_NCCL_SUCCESS;
        NCCL("ncclCommGetAsyncError", c->p.asyncError(c->comms[d], &ar), d);
        if (ar != CB_NCCL_SUCCESS && ar != CB_NCCL_IN_PROGRESS) NCCL_FAIL("ncclCommGetAsyncError", ar, d);
      }
    }
    if (!busy) return CB_OK;
    if (now_ns() > deadline) return CB_BUSY;
    sched_yield();
  }
}

// cb_busy sets busy[d] for every GPU whose stream still has work, as
// cuStreamQuery says; it returns CB_FAILED on any other CUDA error.
int cb_busy(cb_comms* c, int* busy, cb_status* st) {
  for (int d = 0; d < c->ndev; d++) {
    CUresult r = c->p.streamQuery(c->streams[d]);
    busy[d] = r == CB_CUDA_NOT_READY;
    if (r != CB_CUDA_SUCCESS && !busy[d]) CUDA_FAIL("cuStreamQuery", r, d);
  }
  return CB_OK;
}
