// Package bench is the measurement engine: collective definitions (byte
// accounting, bus-bandwidth factor, expected results), size sweeps, the
// nccl-tests timing loop, verification and per-iteration statistics. It drives
// any Backend; it neither prints nor knows how results are rendered.
package bench
