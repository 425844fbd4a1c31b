// Package power reads the power draw of the GPUs a process drives, from
// NVML, while a measurement runs: the mean of NVML's power reading
// sampled at a fixed interval, as NVIDIA AIConfigurator's collector
// records it for its NCCL tables, and the mean the board's energy counter
// gives over the same window, which needs no sampling. It knows nothing
// of collectives; the profile suite starts and stops a Meter around the
// calls it wants priced in watts.
package power
