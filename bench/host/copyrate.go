package host

import "time"

// CopyRate measures how fast this machine copies memory, in GB/s (10⁹
// B/s): the best of five copies of 64 MiB, after one to fault the pages
// in. It bounds what the host backend can reach between ranks of one
// machine, which move data by copies.
func CopyRate() float64 {
	const n = 64 << 20
	src, dst := make([]byte, n), make([]byte, n)
	for i := range src {
		src[i] = byte(i)
	}
	copy(dst, src)
	best := time.Duration(1<<63 - 1)
	for i := 0; i < 5; i++ {
		start := time.Now()
		copy(dst, src)
		if d := time.Since(start); d < best {
			best = d
		}
	}
	if best <= 0 {
		return 0
	}
	return float64(n) / best.Seconds() / 1e9
}
