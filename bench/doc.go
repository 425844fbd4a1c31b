// Package bench is the measurement engine: collective definitions as one
// data table (ID, aliases, byte accounting, bus-bandwidth factor, expected
// results), size sweeps, the nccl-tests timing loop, verification and
// per-iteration statistics, the compute-communication overlap experiment
// and the profile suite under a time budget. It drives any Backend; it
// neither prints nor knows how results are rendered. Options are values:
// Validate returns them as run, and the engine never writes into its
// caller's structs.
package bench
