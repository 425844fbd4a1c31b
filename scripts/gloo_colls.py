"""Reference timings for scripts/cpu-peers.sh: PyTorch's gloo backend on CPU
float32 tensors, timed as collbench times a sweep point (a warm-up call, a
barrier, back-to-back calls, wall clock divided by calls, mean over ranks),
with nccl-tests' meaning of each size (see mpi_colls.c). Started by
torchrun; prints one line per size: bytes and bus bandwidth in GB/s, or n/a
where gloo has no such collective (reduce-scatter).

    torchrun --nproc_per_node 4 gloo_colls.py COLLECTIVE BYTES:ITERS...
"""
import sys
import time

import torch
import torch.distributed as dist


def main():
    coll, points = sys.argv[1], [tuple(int(x) for x in p.split(":")) for p in sys.argv[2:]]
    dist.init_process_group("gloo")
    rank, n = dist.get_rank(), dist.get_world_size()
    for size, iters in points:
        count = size // 4
        part = count // n
        src = torch.arange(count, dtype=torch.float32) % 7 + rank
        factor = (n - 1) / n
        if coll == "allreduce":
            factor *= 2
            call = lambda: dist.all_reduce(src)
        elif coll == "allgather":
            outs = [torch.empty(part) for _ in range(n)]
            mine = src[:part].clone()
            call = lambda: dist.all_gather(outs, mine)
        elif coll == "alltoall":
            dst = torch.empty(part * n)
            send = src[: part * n].clone()
            call = lambda: dist.all_to_all_single(dst, send)
        else:
            if rank == 0:
                print(size, "n/a", flush=True)
            continue
        call()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            call()
        sec = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64)
        dist.all_reduce(sec)
        if rank == 0:
            print(size, "%.6f" % (size / 1e9 / (sec.item() / n) * factor), flush=True)
    dist.destroy_process_group()


main()
