package host

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/setting"
)

// computeStream is a local rank's second stream: it runs the overlap
// experiment's compute, a float32 matrix multiply spread over goroutines
// or a large copy, one batch at a time, timing each batch on itself.
type computeStream struct {
	work    chan int
	elapsed time.Duration // of the last batch
}

// workload holds one rank's operands.
type workload struct {
	w       bench.Workload
	a, b, c []float32
	src     []byte
	dst     []byte
}

// SetWorkload implements bench.Computer.
func (c *Comm) SetWorkload(w bench.Workload) error {
	switch {
	case w.Kind == bench.GEMM && w.Type != numeric.Float32:
		return setting.Errorf("the host backend multiplies float32 matrices (got %s); use {DataType} float", w.Type)
	case w.Kind == bench.Copy && w.Bytes <= 0:
		return fmt.Errorf("copy size must be positive (got %d)", w.Bytes)
	}
	if err := fitMemory(float64(w.Footprint())*float64(len(c.ranks)), fmt.Sprintf("%s on %d ranks", w, len(c.ranks)), ""); err != nil {
		return err
	}
	c.computing.Wait() // the previous workload's runs are done
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.streams == nil {
		for range c.ranks {
			s := &computeStream{work: make(chan int, 4)}
			c.streams = append(c.streams, s)
		}
		for i, s := range c.streams {
			go c.computeLoop(i, s)
		}
	}
	c.loads = make([]*workload, len(c.ranks))
	for i := range c.loads {
		l := &workload{w: w}
		if w.Kind == bench.Copy {
			l.src, l.dst = make([]byte, w.Bytes), make([]byte, w.Bytes)
		} else {
			l.a, l.b, l.c = make([]float32, w.M*w.K), make([]float32, w.K*w.N), make([]float32, w.M*w.N)
			for j := range l.a {
				l.a[j] = float32(j%7) * 0.25
			}
			for j := range l.b {
				l.b[j] = float32(j%5) * 0.5
			}
		}
		c.loads[i] = l
	}
	return nil
}

// EnqueueCompute implements bench.Computer.
// The sends happen outside c.mu, which the compute loops take for every
// batch: a queue that is full waits for its loop, never blocks it.
func (c *Comm) EnqueueCompute(n int) error {
	c.queues.RLock()
	defer c.queues.RUnlock()
	c.mu.Lock()
	switch {
	case c.loads == nil:
		c.mu.Unlock()
		return fmt.Errorf("no workload set")
	case c.aborted || c.closed:
		c.mu.Unlock()
		return fmt.Errorf("communicator was aborted")
	}
	streams := c.streams
	c.mu.Unlock()
	c.computing.Add(len(streams))
	for _, s := range streams {
		s.work <- n
	}
	return nil
}

// WaitCompute implements bench.Computer.
func (c *Comm) WaitCompute(ctx context.Context) ([]time.Duration, error) {
	done := make(chan struct{})
	go func() { c.computing.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]time.Duration, len(c.streams))
	for i, s := range c.streams {
		out[i] = s.elapsed
	}
	return out, nil
}

// computeLoop runs rank i's compute batches in order.
func (c *Comm) computeLoop(i int, s *computeStream) {
	workers := max(1, runtime.GOMAXPROCS(0)/max(len(c.ranks), 1))
	for n := range s.work {
		c.mu.Lock()
		l := c.loads[i]
		c.mu.Unlock()
		start := time.Now()
		for r := 0; r < n; r++ {
			l.run(workers)
		}
		c.mu.Lock()
		s.elapsed = time.Since(start)
		c.mu.Unlock()
		c.computing.Done()
	}
}

// run is one run of the workload.
func (l *workload) run(workers int) {
	if l.w.Kind == bench.Copy {
		copy(l.dst, l.src)
		return
	}
	m, n, k := l.w.M, l.w.N, l.w.K
	var wg sync.WaitGroup
	rows := (m + workers - 1) / workers
	for lo := 0; lo < m; lo += rows {
		hi := min(lo+rows, m)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				out := l.c[i*n : (i+1)*n]
				clear(out)
				for p := 0; p < k; p++ {
					a := l.a[i*k+p]
					row := l.b[p*n : (p+1)*n]
					for j, b := range row {
						out[j] += a * b
					}
				}
			}
		}()
	}
	wg.Wait()
}
