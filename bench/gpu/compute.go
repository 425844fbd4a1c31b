package gpu

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/cuda"
)

// compute is one GPU's side of the overlap experiment: a second stream at
// the default priority, a cuBLAS handle on it, the operands, and the
// events that time a batch on that stream.
type compute struct {
	stream     *cuda.Stream
	blas       *cuda.BLAS
	a, b, c    cuda.DevicePtr // GEMM A, B, C; a copy's source and destination are a and b
	start, end *cuda.Event
}

// blasTypes are the GEMM element types and their cudaDataType.
var blasTypes = map[numeric.DataType]int{
	numeric.Float32: cuda.BLASFloat32, numeric.Float16: cuda.BLASFloat16, numeric.Bfloat16: cuda.BLASBfloat16,
}

// SetWorkload implements bench.Computer: cuBLAS is loaded for a GEMM, and
// every GPU gets its compute stream and the operands, filled with a
// non-zero pattern.
func (c *Comm) SetWorkload(w bench.Workload) error {
	if w.Kind == bench.GEMM {
		if _, ok := blasTypes[w.Type]; !ok {
			return fmt.Errorf("GEMMs run in float, half or bfloat16 (got %s)", w.Type)
		}
		if _, err := cuda.LoadBLAS(""); err != nil {
			return fmt.Errorf("the GEMM needs cuBLAS: %w", err)
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, g := range c.gpus {
		if err := g.ctx.SetCurrent(); err != nil {
			return err
		}
		if g.work == nil {
			g.work = &compute{}
			if err := g.work.open(); err != nil {
				return fmt.Errorf("GPU %d: %w", g.info.Ordinal, err)
			}
		}
		if err := g.work.load(w); err != nil {
			return fmt.Errorf("GPU %d: %s: %w", g.info.Ordinal, w, err)
		}
	}
	c.workload = w
	return nil
}

func (k *compute) open() error {
	var err error
	if k.stream, err = cuda.NewStream(cuda.StreamNonBlocking); err != nil {
		return err
	}
	if k.start, err = cuda.NewEvent(cuda.EventDefault); err != nil {
		return err
	}
	k.end, err = cuda.NewEvent(cuda.EventDefault)
	return err
}

// load replaces the operands with w's.
func (k *compute) load(w bench.Workload) error {
	if err := k.freeOperands(); err != nil {
		return err
	}
	sizes := []int64{w.Bytes, w.Bytes}
	if w.Kind == bench.GEMM {
		if k.blas == nil {
			var err error
			if k.blas, err = cuda.NewBLAS(); err != nil {
				return err
			}
			if err := k.blas.SetStream(k.stream); err != nil {
				return err
			}
		}
		elt := int64(w.Type.Size())
		sizes = []int64{elt * int64(w.M) * int64(w.K), elt * int64(w.K) * int64(w.N), elt * int64(w.M) * int64(w.N)}
	}
	ptrs := []*cuda.DevicePtr{&k.a, &k.b, &k.c}
	for i, n := range sizes {
		p, err := cuda.MemAlloc(n)
		if err != nil {
			return err
		}
		*ptrs[i] = p
		if err := cuda.Memset(p, 0x3c, n); err != nil {
			return err
		}
	}
	return nil
}

// EnqueueCompute implements bench.Computer: n GEMMs or copies between two
// events on every compute stream.
func (c *Comm) EnqueueCompute(n int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w := c.workload
	for _, g := range c.gpus {
		k := g.work
		if k == nil {
			return fmt.Errorf("no workload set")
		}
		if err := g.ctx.SetCurrent(); err != nil {
			return err
		}
		if err := k.start.Record(k.stream); err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			var err error
			if w.Kind == bench.Copy {
				err = cuda.CopyAsync(k.b, k.a, w.Bytes, k.stream)
			} else {
				err = k.blas.Gemm(w.M, w.N, w.K, k.a, k.b, k.c, blasTypes[w.Type])
			}
			if err != nil {
				return err
			}
		}
		if err := k.end.Record(k.stream); err != nil {
			return err
		}
	}
	return nil
}

// WaitCompute implements bench.Computer: the compute streams are polled
// until idle, and each batch is timed by its events.
func (c *Comm) WaitCompute(ctx context.Context) ([]time.Duration, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	out := make([]time.Duration, len(c.gpus))
	for i, g := range c.gpus {
		if err := g.ctx.SetCurrent(); err != nil {
			return nil, err
		}
		for {
			done, err := g.work.stream.Query()
			if err != nil {
				return nil, err
			}
			if done {
				break
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			time.Sleep(20 * time.Microsecond)
		}
		d, err := cuda.Elapsed(g.work.start, g.work.end)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

func (k *compute) freeOperands() error {
	var first error
	for _, p := range []*cuda.DevicePtr{&k.a, &k.b, &k.c} {
		if *p != 0 {
			if err := cuda.MemFree(*p); err != nil && first == nil {
				first = err
			}
			*p = 0
		}
	}
	return first
}

// release frees everything; the context is current.
func (k *compute) release() error {
	first := k.freeOperands()
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	if k.blas != nil {
		keep(k.blas.Destroy())
	}
	for _, e := range []*cuda.Event{k.start, k.end} {
		if e != nil {
			keep(e.Destroy())
		}
	}
	if k.stream != nil {
		keep(k.stream.Destroy())
	}
	return first
}
