// Package host is the backend that runs everywhere: each rank is a goroutine
// with CPU buffers and a "stream" (a worker that executes enqueued calls in
// order), and ranks exchange real data over TCP with ring, pipeline and
// pairwise algorithms. It gives the engine, the checks and the reports a
// real collective to measure on machines without a GPU.
package host
